"""`torchport.model.checkpoints`: where a repository's checkpoint was saved, read without unpickling it, and the
`map_location` its `torch.load` would get left out where the file holds CPU tensors."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import torch

from torchport.model.checkpoints import loaded_file, saved_on
from torchport.model.evaluate import imported
from torchport.pipeline import runner
from torchport.pipeline.files import discover


def _cuda_saved(path: Path, legacy: bool) -> None:
    """A checkpoint whose storage records ``cuda:0``, as `torch.save` on a GPU writes it (this machine has none):
    the CPU tensor's location is rewritten in the pickle."""
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=not legacy)
    data = path.read_bytes()
    marker, swapped = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"  # BINUNICODE, as torch pickles
    assert marker in data
    if legacy:
        path.write_bytes(data.replace(marker, swapped))
    else:
        import zipfile

        with zipfile.ZipFile(path) as archive:
            members = {n: archive.read(n) for n in archive.namelist()}
        with zipfile.ZipFile(path, "w") as archive:
            for name, content in members.items():
                archive.writestr(name, content.replace(marker, swapped) if name.endswith("data.pkl") else content)


def test_the_device_a_checkpoint_was_saved_on_is_read_without_unpickling(tmp_path: Path) -> None:
    for legacy in (False, True):
        cpu, cuda = tmp_path / f"cpu{legacy}.pt", tmp_path / f"cuda{legacy}.pt"
        torch.save({"w": torch.ones(2)}, cpu, _use_new_zipfile_serialization=not legacy)
        _cuda_saved(cuda, legacy)
        assert saved_on(cpu) == {"cpu"}
        assert saved_on(cuda) == {"cuda"}
    torch.save([1, 2, 3], tmp_path / "ints.pt")
    assert saved_on(tmp_path / "ints.pt") == frozenset()  # no tensor: nothing to map
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    assert saved_on(tmp_path / "notes.txt") is None


def test_the_file_a_load_names_is_found_from_the_modules_folder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pnet.pt").write_bytes(b"x")
    source = ("import os\nimport torch\n\n\ndef load():\n"
              "    path = os.path.join(os.path.dirname(__file__), 'data', 'pnet.pt')\n"
              "    return torch.load(path), torch.load('data/pnet.pt'), torch.load(os.path.join(root, 'x.pt'))\n")
    tree = ast.parse(source)
    function = tree.body[2]
    calls = [n for n in ast.walk(function) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "load"]
    assert [loaded_file(c, function, tmp_path, imported(tree)) for c in calls] == [
        tmp_path / "data" / "pnet.pt", tmp_path / "data" / "pnet.pt", None]


def test_a_load_of_the_repositorys_cpu_checkpoint_gets_no_map_location(tmp_path: Path) -> None:
    """facenet-pytorch's MTCNN loads `data/pnet.pt`, saved from CPU tensors: the same on every backend, left (R20).
    A checkpoint of the repository saved on a GPU gets its map."""
    (tmp_path / "data").mkdir()
    torch.save({"w": torch.ones(2)}, tmp_path / "data" / "pnet.pt")
    _cuda_saved(tmp_path / "data" / "gpu.pt", legacy=False)
    source = ("import os\n\nimport torch\n\n\ndef pnet(name):\n    x = torch.ones(2).cuda()\n"
              "    path = os.path.join(os.path.dirname(__file__), 'data', name)\n    return torch.load(path), x\n")
    (tmp_path / "nets.py").write_text(source.replace("name)\n", "'pnet.pt')\n"))
    (tmp_path / "gpu.py").write_text(source.replace("name)\n", "'gpu.pt')\n"))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        results = {r.path.name: r for r in runner.run(list(discover([tmp_path])), jobs=1)}
    finally:
        os.chdir(cwd)
    nets, gpu = results["nets.py"], results["gpu.py"]
    assert "torch.load(path)," in nets.migrated and ".to(tp.device())" in nets.migrated
    assert any("[R20 saved-here]" in d.message and "`pnet.pt`" in d.message for d in nets.diagnostics)
    assert "torch.load(path, map_location=tp.map_location())" in gpu.migrated
