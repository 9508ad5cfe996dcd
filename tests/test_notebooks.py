"""Notebooks: code cells migrated as one module and written back cell by cell; magics, outputs, execution
counts, metadata and the JSON layout kept; a second run changes nothing."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbformat import v4
from rich.console import Console
from typer.testing import CliRunner

from torchport.cli import app
from torchport.pipeline.runner import run_bytes
from torchport.report.console import print_diff

CELLS = [
    ("markdown", "# Train on `cuda`"),
    ("code", "!pip install torch\n%matplotlib inline"),
    ("code", "import torch\nimport numpy as np"),
    ("code", "%%time\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.zeros(2, device='cuda')"),
    ("code", "%%bash\necho cuda > /dev/null"),
    ("code", "files = !ls\ny = x.cuda()  # after a shell line\n%time z = x.cuda()"),
    ("code", "torch.cuda?"),
]


def _notebook(path: Path, indent: int = 1) -> str:
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, (kind, source) in enumerate(CELLS):
        cell = v4.new_markdown_cell(source) if kind == "markdown" else v4.new_code_cell(source, execution_count=i)
        if kind == "code":
            cell.outputs = [v4.new_output("stream", name="stdout", text=f"cuda out {i}\n")]
            cell.metadata["tags"] = ["keep"]
        nb.cells.append(cell)
    for cell in nb.cells:  # nbformat gives each cell a random id: fix them, so the test is the same every run
        cell["id"] = f"cell-{nb.cells.index(cell)}"
    text = json.dumps(nb, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


@pytest.mark.parametrize("indent", [1, 2])
def test_notebook_is_migrated_cell_by_cell_and_everything_else_is_kept(tmp_path: Path, indent: int) -> None:
    path = tmp_path / "train.ipynb"
    before_text = _notebook(path, indent)
    runner = CliRunner()
    dry = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert dry.exit_code == 0 and f"+++ b/{path}\n" in dry.stdout and ":cell_" not in dry.stdout  # a patch of the file
    assert dry.stdout.count("\n+ ") == 3
    assert '"source": "%%time\\nmodel = torch.nn.Linear(2, 2).to(tp.device())' in dry.stdout
    assert f"{path}:cell_4:2:9: TP001 [*]" in dry.stderr  # the line in its cell; %%time is line 1
    assert f"{path}:cell_6:2:5: TP001 [*]" in dry.stderr
    assert path.read_text() == before_text
    assert runner.invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"]).exit_code == 0

    after_text = path.read_text(encoding="utf-8")
    after = nbformat.reads(after_text, as_version=nbformat.NO_CONVERT)
    nbformat.validate(after)
    before = json.loads(before_text)
    sources = ["".join(c["source"]) for c in json.loads(after_text)["cells"]]
    assert sources[1] == CELLS[1][1] and sources[4] == CELLS[4][1] and sources[6] == CELLS[6][1]
    assert sources[2] == "import torch\nfrom torchport import runtime as tp\nimport numpy as np"
    assert sources[3] == ("%%time\nmodel = torch.nn.Linear(2, 2).to(tp.device())\n"
                          "x = torch.zeros(2, device=tp.device())")
    assert sources[5] == "files = !ls\ny = x.to(tp.device())  # after a shell line\n%time z = x.cuda()"
    for old, new in zip(before["cells"], json.loads(after_text)["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    assert json.loads(after_text)["metadata"] == before["metadata"]
    changed = [b for a, b in zip(before_text.splitlines(), after_text.splitlines()) if a != b]
    assert len(before_text.splitlines()) == len(after_text.splitlines())  # sources stored as one string each
    assert len(changed) == 3 and all(line.lstrip().startswith('"source": ') for line in changed)
    assert after_text.splitlines()[1] == " " * indent + '"nbformat": 4,'  # the indent kept

    again = runner.invoke(app, ["migrate", str(tmp_path), "--check", "--no-cache"])
    assert again.exit_code == 0 and path.read_text(encoding="utf-8") == after_text


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo), *args],
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_the_dry_run_diff_is_a_patch_git_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _notebook(repo / "train.ipynb")
    lines = {"cells": [{"cell_type": "code", "execution_count": None, "id": "a", "metadata": {}, "outputs": [],
                        "source": ["import torch\n", "x = torch.ones(2).cuda()\n", "print(x)"]}],
             "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "sub").mkdir()
    (repo / "sub" / "lines.ipynb").write_text(json.dumps(lines, indent=2))  # no newline at its end
    (repo / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    applied = tmp_path / "applied"
    shutil.copytree(repo, applied)
    monkeypatch.chdir(repo)
    dry = CliRunner().invoke(app, ["migrate", ".", "--no-cache"])
    assert dry.exit_code == 0, dry.stderr
    (tmp_path / "port.patch").write_text(dry.stdout)
    _git(repo, "apply", "--check", str(tmp_path / "port.patch"))
    _git(repo, "apply", str(tmp_path / "port.patch"))
    assert CliRunner().invoke(app, ["migrate", str(applied), "--apply", "--no-cache"]).exit_code == 0
    changed = ["sub/lines.ipynb", "train.ipynb", "train.py"]
    assert sorted(_git(repo, "diff", "--name-only").split()) == changed
    for name in changed:
        assert (repo / name).read_bytes() == (applied / name).read_bytes(), name


def test_a_terminal_shows_a_notebooks_diff_per_cell(tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    _notebook(path)
    result = run_bytes(path.read_bytes(), path, str(path))
    shown = io.StringIO()
    print_diff(Console(file=shown, force_terminal=True, width=200, color_system=None), result)
    assert f"+++ b/{path}:cell_4" in shown.getvalue() and f"+++ b/{path}:cell_6" in shown.getvalue()


def test_notebooks_count_in_statistics_and_json(tmp_path: Path) -> None:
    _notebook(tmp_path / "train.ipynb")
    stats = CliRunner().invoke(app, ["migrate", str(tmp_path), "--statistics", "--no-cache"])
    assert any(line.startswith("3\t0\t0\t100.0%\t") and line.endswith("train.ipynb")
               for line in stats.stdout.splitlines())
    report = json.loads(CliRunner().invoke(app, ["migrate", str(tmp_path), "--format", "json", "--no-cache"]).stdout)
    (entry,) = report["files"]
    assert entry["path"] == "train.ipynb" and {r["cell"] for r in entry["rewrites"]} == {4, 6}


def test_notebook_from_stdin_and_a_broken_notebook(tmp_path: Path) -> None:
    text = _notebook(tmp_path / "nb.ipynb")
    result = CliRunner().invoke(app, ["migrate", "-", "--stdin-filename", "nb.ipynb"], input=text)
    assert result.exit_code == 0 and "tp.device()" in "".join(json.loads(result.stdout)["cells"][3]["source"])
    (tmp_path / "nb.ipynb").write_text("{not json")
    broken = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert broken.exit_code == 2 and "nb.ipynb:1:1: error: not a valid notebook" in broken.stderr


def test_notebooks_can_be_excluded(tmp_path: Path) -> None:
    _notebook(tmp_path / "train.ipynb")
    result = CliRunner().invoke(app, ["migrate", str(tmp_path), "--exclude", "*.ipynb", "--no-cache"])
    assert "0 file(s) scanned" in result.stderr


def _applied(folder: Path, cells: list) -> list[str]:
    """The sources of ``cells`` after a plain ``--apply`` of a notebook made of them in ``folder``."""
    nb = v4.new_notebook()
    nb.cells = cells
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"  # nbformat's ids are random: fixed, so the test is the same every run
    path = folder / "notebook.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    assert CliRunner().invoke(app, ["migrate", str(folder), "--apply", "--no-cache"]).exit_code == 0
    return [cell.source for cell in nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT).cells]


def test_a_notebook_with_sparse_tensors_keeps_off_mps(tmp_path: Path) -> None:
    """A notebook is a program: one that builds sparse tensors on the device gets `tp.avoid_mps`, in the cell of its
    `import torch` (its first cells install packages), naming the cell of the blocker."""
    cells = _applied(tmp_path, [v4.new_code_cell(source) for source in (
        "!pip install torch", "import torch\nimport numpy as np", "DEVICE = 'cuda'",
        "adj = torch.sparse_coo_tensor(i, v, (4, 4)).to(DEVICE)")])
    assert cells[0] == "!pip install torch"
    assert 'tp.avoid_mps("sparse tensors, cell 4, line 1")' in cells[1]
    assert cells[1].index("from torchport import runtime as tp") < cells[1].index("tp.avoid_mps(")
    assert cells[2] == "DEVICE = tp.device_str()"


def test_the_runtime_import_goes_with_torchs_import(tmp_path: Path) -> None:
    """Leading imports in an earlier cell (condacolab's, whose install() restarts the kernel): the runtime is imported
    in the cell of `import torch`, and the earlier cell is left exactly as it was."""
    code = ("!nvcc --version", "!pip install -q condacolab", "import condacolab\n\n\ncondacolab.install()",
            "import torch", "x = torch.ones(2).cuda()")
    cells = _applied(tmp_path, [v4.new_markdown_cell("Check the `cuda` version"), *map(v4.new_code_cell, code)])
    assert cells[1:4] == ["!nvcc --version", "!pip install -q condacolab",
                          "import condacolab\n\n\ncondacolab.install()"]
    assert cells[4] == "import torch\nfrom torchport import runtime as tp"
    assert cells[5] == "x = torch.ones(2).to(tp.device())"


def test_an_added_runtime_import_moves_to_torchs_import_from_any_cell() -> None:
    """Wherever the import was added (after the leading imports: here a cell that restarts the kernel), it moves to
    just after the notebook's first `import torch`."""
    from torchport.pipeline.notebooks import _move_runtime_import

    before = {0: (1, "pass\n"), 2: (3, "import condacolab\ncondacolab.install()\n"), 4: (6, "import torch\n")}
    after = {0: (1, "pass\n"), 2: (3, "import condacolab\nfrom torchport import runtime as tp\ncondacolab.install()\n"),
             4: (7, "import torch\n")}
    _move_runtime_import(before, after)
    assert after[2][1] == "import condacolab\ncondacolab.install()\n"
    assert after[4][1] == "import torch\nfrom torchport import runtime as tp\n"


def test_the_runtime_import_goes_above_a_use_that_precedes_torchs_import_in_its_cell() -> None:
    """Handwriting-Transformers' demo: `tp.avoid_mps(...)` goes above an import that picks the device when
    imported, which comes before the cell's `import torch`; moved after `import torch`, the runtime's import would
    follow its first use (NameError, CUDA included): it goes just above that use."""
    from torchport.pipeline.notebooks import _move_runtime_import

    before = {0: (1, "!pip install x\n"), 1: (2, "import os\nfrom data import loader\nimport torch\n")}
    after = {0: (1, "from torchport import runtime as tp\n!pip install x\n"),
             1: (3, "import os\ntp.avoid_mps('float64, data.py:3')\nfrom data import loader\nimport torch\n")}
    _move_runtime_import(before, after)
    assert after[0][1] == "!pip install x\n"
    assert after[1][1] == ("import os\nfrom torchport import runtime as tp\ntp.avoid_mps('float64, data.py:3')\n"
                           "from data import loader\nimport torch\n")


def test_the_runtime_import_goes_to_the_first_cell_that_uses_it_where_that_comes_before_torch(tmp_path: Path) -> None:
    """A cell that builds a model through the project's code uses the runtime before any `import torch`: the import
    goes there, or the notebook raises NameError in that cell, CUDA included."""
    cells = _applied(tmp_path, [v4.new_code_cell(source) for source in (
        "!pip install x", "from mylib import build\nmodel = build().cuda()",
        "import torch\nx = torch.ones(2).cuda()\nprint(model(x))")])
    assert cells == ["!pip install x", "from torchport import runtime as tp\nfrom mylib import build\n"
                     "model = build().to(tp.device())",
                     "import torch\nx = torch.ones(2).to(tp.device())\nprint(model(x))"]


def test_the_runtime_import_stays_in_its_cell_where_that_cell_uses_it_before_torch(tmp_path: Path) -> None:
    """adversarial-attacks-pytorch: the first cell imports the project's helpers, then sets `device = "cuda"`; torch
    is imported two cells later. Moved there, the import would come after its first use: NameError, CUDA
    included."""
    cells = _applied(tmp_path, [v4.new_code_cell(source) for source in (
        "from mylib import load_model\n\ndevice = \"cuda\"", "model = load_model().to(device)",
        "import torch\nx = torch.ones(2).to(device)\nprint(model(x))")])
    assert cells[0] == "from mylib import load_model\nfrom torchport import runtime as tp\n\ndevice = tp.device_str()"
    assert cells[2] == "import torch\nx = torch.ones(2).to(device)\nprint(model(x))"


def test_a_cuda_only_note_names_its_guard_by_cell(tmp_path: Path) -> None:
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("import torch"), v4.new_code_cell("x = 1\nif torch.cuda.is_available():\n"
                                                                     "    torch.cuda.set_device(0)")]
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"c{index}"
    nbformat.write(nb, tmp_path / "nb.ipynb")
    result = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert ("nb.ipynb:cell_2:3:5: TP110 left as written (TP010 would apply): [R01 cuda-only] this code runs only on "
            "CUDA (under the CUDA guard at cell 2, line 2)") in result.stderr


def test_a_notebook_no_usual_layout_writes_keeps_its_other_bytes(tmp_path: Path) -> None:
    """Colab writes `"text": [ ]` and upper-case escapes (`\\u001B`) that json.dumps would not: only the lines of
    the changed cells' sources change, outputs and metadata stay byte for byte."""
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell("import torch\nmodel = torch.nn.Linear(2, 2).cuda()",
                                       outputs=[v4.new_output("stream", name="stdout", text="\u001b[K done\n")]),
                      v4.new_markdown_cell("")]
    raw = json.dumps(notebook, indent=1, ensure_ascii=True) + "\n"
    raw = raw.replace("\\u001b", "\\u001B").replace('"source": ""', '"source": [ ]')
    path = tmp_path / "colab.ipynb"
    path.write_text(raw)
    done = CliRunner().invoke(app, ["migrate", str(path), "--apply", "--no-cache"])
    assert done.exit_code == 0, done.output
    before, after = raw.splitlines(), path.read_text().splitlines()
    changed = [line for line in after if line not in before]
    assert changed and all("torchport" in line or "tp.device()" in line for line in changed), changed
    assert any('"source": [ ]' in line for line in after)
    assert any("\\u001B[K done" in line for line in after)


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_a_notebook_written_on_one_line_stays_on_one_line(tmp_path: Path, separators: tuple[str, str]) -> None:
    """YOLOv1-PyTorch's notebooks: Colab's compact JSON (no indent, no spaces); maxjcohen/transformer's exported
    ones: `json.dump`'s own (one line, spaces after separators). Written back the same, only the changed cell's
    source differs, not as hundreds of indented lines."""
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell("import torch\nmodel = torch.nn.Linear(2, 2).cuda()"),
                      v4.new_markdown_cell("Dévice")]
    raw = json.dumps(notebook, separators=separators, ensure_ascii=False)
    path = tmp_path / "colab.ipynb"
    path.write_text(raw, encoding="utf-8")
    done = CliRunner().invoke(app, ["migrate", str(path), "--apply", "--no-cache"])
    assert done.exit_code == 0, done.output
    after = path.read_text(encoding="utf-8")
    assert "\n" not in after and '"Dévice"' in after
    cells = json.loads(after)["cells"]
    expected = json.loads(raw)
    expected["cells"][0]["source"] = cells[0]["source"]
    assert "tp.device()" in "".join(cells[0]["source"])
    assert after == json.dumps(expected, separators=separators, ensure_ascii=False)


def test_an_import_the_port_removes_keeps_the_cell_it_was_in(tmp_path: Path) -> None:
    """transformers-tutorials: a cell's only import (`from torch import cuda`) left unused by the port; the cell,
    and the comment above the import, stay (it was written nowhere: the cells no longer lined up)."""
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell("import torch"),
                      v4.new_code_cell("# Setting up the device\n\nfrom torch import cuda\n"
                                       "device = 'cuda' if cuda.is_available() else 'cpu'"),
                      v4.new_code_cell("x = torch.ones(2).to(device)")]
    path = tmp_path / "tutorial.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    done = CliRunner().invoke(app, ["migrate", str(path), "--apply", "--no-cache"])
    assert done.exit_code == 0 and "failed" in done.output and " 0 failed" in done.output, done.output
    cells = json.loads(path.read_text())["cells"]
    assert len(cells) == 3 and "".join(cells[1]["source"]).startswith("# Setting up the device")
    assert "cuda" not in "".join(cells[1]["source"]).replace("# Setting", "")


def test_an_import_added_at_the_end_of_a_cell_leaves_no_blank_line(tmp_path: Path) -> None:
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell("import torch\nfrom denoiser import Denoiser"),
                      v4.new_code_cell("model = torch.nn.Linear(2, 2).cuda()")]
    path = tmp_path / "inference.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    done = CliRunner().invoke(app, ["migrate", str(path), "--apply", "--no-cache"])
    assert done.exit_code == 0, done.output
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[0]["source"]) == ("import torch\nfrom denoiser import Denoiser\n"
                                           "from torchport import runtime as tp")


def test_a_cell_ending_in_blank_lines_and_an_empty_last_cell_are_ported(tmp_path: Path) -> None:
    """POMO's Inference notebook: a cell that ends in blank lines and a line of spaces, then an empty cell. LibCST
    drops blank lines above a last line of blanks (and above a comment after one), so the joined module did not
    come back byte for byte and the whole notebook was refused."""
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [v4.new_code_cell("import torch\nx = torch.ones(2).cuda()\n\n\n    "), v4.new_code_cell("")]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    path = tmp_path / "infer.ipynb"
    path.write_text(nbformat.writes(nb))
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"])
    assert done.exit_code == 0 and "does not reproduce" not in done.output, done.output
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert cells == ["import torch\nfrom torchport import runtime as tp\n\nx = torch.ones(2).to(tp.device())\n\n\n    ",
                     ""]


def test_a_cell_magic_stays_on_its_cells_first_line(tmp_path: Path) -> None:
    """AQLM's notebook never imports torch in a cell of its own: the runtime's import goes to the top of the first
    cell that uses it, here one opened by ``%%capture``, which IPython reads only on a cell's first line; and a
    moved import leaves no blank line above a cell magic."""
    nb = v4.new_notebook()
    nb.cells.append(v4.new_code_cell("%%capture\n!pip install aqlm\nimport torch"))
    nb.cells.append(v4.new_code_cell("%%capture\nout = model(x.cuda())"))
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"
    path = tmp_path / "demo.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    assert CliRunner().invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"]).exit_code == 0
    sources = ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    assert sources == ["%%capture\n!pip install aqlm\nimport torch\nfrom torchport import runtime as tp",
                       "%%capture\nout = model(x.to(tp.device()))"]
    assert CliRunner().invoke(app, ["migrate", str(tmp_path), "--check", "--no-cache"]).exit_code == 0  # idempotent
    bare = v4.new_notebook()  # no cell imports torch: the import opens the first cell that uses it, below its magic
    bare.cells.append(v4.new_code_cell("%%capture\nout = model(x.cuda())"))
    bare.cells[0]["id"] = "cell-0"
    other = tmp_path / "bare" / "demo.ipynb"
    other.parent.mkdir()
    other.write_text(json.dumps(bare, indent=1) + "\n", encoding="utf-8")
    assert CliRunner().invoke(app, ["migrate", str(other.parent), "--apply", "--no-cache"]).exit_code == 0
    assert "".join(json.loads(other.read_text(encoding="utf-8"))["cells"][0]["source"]) == (
        "%%capture\nfrom torchport import runtime as tp\n\nout = model(x.to(tp.device()))")
    assert CliRunner().invoke(app, ["migrate", str(other.parent), "--check", "--no-cache"]).exit_code == 0


def test_a_notebook_apply_cannot_write_back_fails_the_dry_run_and_check_too(tmp_path: Path) -> None:
    """PyEPO's `08 kNN Robust Losses.ipynb`: a markdown cell with `outputs`, which nbformat's schema refuses. `--apply`
    cannot write it back; the dry run and `--check` say so with the same error instead of a diff that never lands,
    and a second run after `--apply` is as the first."""
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell("import torch\nmodel = torch.nn.Linear(2, 2).cuda()"),
                      v4.new_markdown_cell("text")]
    data = json.loads(json.dumps(notebook))
    data["cells"][1]["outputs"] = []
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(data, indent=1))
    before = path.read_text()
    runs = [CliRunner().invoke(app, ["migrate", str(tmp_path), *given, "--no-cache"])
            for given in ([], ["--check"], ["--apply"], ["--check"])]
    for done in runs:
        assert "cannot write: the notebook is not valid as read" in done.stderr, done.stderr
        assert "would change" not in done.stderr or " 0 file(s) would change" in done.stderr, done.stderr
    assert path.read_text() == before and runs[0].stdout == ""
