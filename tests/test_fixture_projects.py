"""Whole projects ported with a plain `--apply`, then run: a DDP research template that asserts CUDA trains under
torchrun on the CPU, and a float64 diffusion sampler runs on the CPU and stays there on a (simulated) Mac.
The projects are under tests/fixtures/projects/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import forkrun
import pytest
from typer.testing import CliRunner

from torchport.cli import app

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TORCHPORT_DEVICE": ""}
# Runs a script as if on a Mac: MPS reported available (nothing on this machine can run MPS kernels, so a tensor
# sent there fails).
ON_A_MAC = ("import runpy, sys, torch\ntorch.backends.mps.is_available = lambda: True\n"
            "sys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")


_TEARDOWN_ABORT = "terminate called without an active exception"


def _ported(name: str, tmp_path: Path, *options: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(PROJECTS / name, folder)
    _apply(folder, *options)
    return folder


def _ported_with(name: str, tmp_path: Path, path: str, old: str, new: str) -> Path:
    """Project ``name`` with ``old`` replaced by ``new`` in its file ``path``, ported with a plain ``--apply``."""
    folder = tmp_path / f"{name}-edited"
    shutil.copytree(PROJECTS / name, folder)
    (folder / path).write_text((folder / path).read_text().replace(old, new))
    _apply(folder)
    return folder


def _left_whole(name: str, tmp_path: Path, entry: str, where: tuple[str, int]) -> None:
    """Project ``name`` ported with a plain ``--apply`` leaves ``entry`` byte-identical, and `torchport programs`
    says it runs on CUDA alone, blocked at ``where`` (path, line) on every other target."""
    folder = _ported(name, tmp_path)
    assert (folder / entry).read_text() == (PROJECTS / name / entry).read_text()
    done = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    program = next(p for p in json.loads(done.stdout)["programs"] if p["path"] == entry)
    assert program["runs_on"] == ["cuda"]
    assert {(b["target"], b["path"], b["line"]) for b in program["blockers"]} == {
        (target, *where) for target in ("mps", "xpu", "cpu")}


def _apply(folder: Path, *options: str) -> str:
    """`torchport migrate . --apply` run in ``folder``; what it printed."""
    cwd = os.getcwd()
    os.chdir(folder)  # paths in the report (and in tp.avoid_mps's reason) are relative to where the run starts
    try:
        done = CliRunner().invoke(app, ["migrate", ".", "--apply", "--no-cache", *options])
    finally:
        os.chdir(cwd)
    assert done.exit_code == 0, done.output
    return done.output


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``folder``, forked from a process that imported torch (torchrun's workers start afresh)."""
    return forkrun.run(list(args), cwd=folder, env=ENV, timeout=120)


def test_a_ddp_template_that_asserts_cuda_trains_under_torchrun_on_the_cpu(tmp_path: Path) -> None:
    folder = _ported("ddp_template", tmp_path)
    train = (folder / "train.py").read_text()
    assert "assert torch.cuda.is_available()" not in train  # it only stopped the program off CUDA
    assert 'backend=tp.distributed_backend()' in train and 'tp.set_device(device)' in train
    assert 'device = tp.device_str(f"cuda:{ddp_local_rank}")' in train
    done = _run(folder, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "train.py")
    steps = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert len(steps) == 5 and steps[-1].startswith("step 4: loss"), done.stderr[-3000:]  # rank 0 alone prints
    # torch 2.13's gloo group sometimes aborts in its own teardown, after the program's last line ran (about 1 run
    # in 12 here: "terminate called without an active exception"); any other failure fails the test
    assert done.returncode == 0 or _TEARDOWN_ABORT in done.stderr, done.stderr[-3000:]


def test_a_float64_sampler_runs_on_the_cpu_and_stays_there_on_a_mac(tmp_path: Path) -> None:
    folder = _ported("sampler", tmp_path)
    sample = (folder / "sample.py").read_text()
    assert 'tp.avoid_mps("float64 numpy arrays made into tensors, diffusion/schedule.py:9")' in sample
    assert (folder / "diffusion" / "schedule.py").read_text() == \
        (PROJECTS / "sampler" / "diffusion" / "schedule.py").read_text()
    here = _run(folder, "sample.py")
    assert here.returncode == 0, here.stderr[-3000:]
    (folder / "mac.py").write_text(ON_A_MAC)
    mac = _run(folder, "mac.py", "sample.py")
    assert mac.returncode == 0, mac.stderr[-3000:]
    assert mac.stdout.split()[0] == "cpu" and mac.stdout == here.stdout


def test_without_the_entry_point_call_the_sampler_goes_to_mps_on_a_mac(tmp_path: Path) -> None:
    folder = _ported("sampler", tmp_path, "--ignore", "TP019")
    assert "avoid_mps" not in (folder / "sample.py").read_text()
    (folder / "mac.py").write_text(ON_A_MAC)
    mac = _run(folder, "mac.py", "sample.py")
    assert mac.returncode != 0 and "mps" in mac.stderr.lower()


def test_an_agent_picked_by_its_own_flag_trains_on_the_cpu_and_may_use_mps(tmp_path: Path) -> None:
    """The availability idiom with the program's flag keeps the flag (TP005), a mask that follows its weight to
    CUDA follows it anywhere (TP024), a CUDA seed after torch.manual_seed stays (R11)."""
    folder = _ported("rl_agent", tmp_path)
    train, drop = (folder / "train.py").read_text(), (folder / "weight_drop.py").read_text()
    assert 'device = torch.device(tp.available_device_str() if args.cuda else "cpu")' in train
    assert "torch.cuda.manual_seed_all(seed)" in train and "avoid_mps" not in train
    assert "mask = mask.to(raw_w.device)" in drop and "torchport" not in drop  # plain PyTorch
    done = _run(folder, "train.py")
    assert done.returncode == 0 and done.stdout.split()[0] == "cpu", done.stderr[-3000:]
    programs = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--format", "json"])
    assert {p["path"]: p["runs_on"] for p in json.loads(programs.stdout)["programs"]}["train.py"] == [
        "cuda", "mps", "xpu", "cpu"]


@pytest.mark.parametrize("name", ["ddp_template", "sampler", "rl_agent"])
def test_a_second_run_changes_nothing(name: str, tmp_path: Path) -> None:
    folder = _ported(name, tmp_path)
    before = {p: p.read_bytes() for p in folder.rglob("*.py")}
    again = CliRunner().invoke(app, ["migrate", str(folder), "--no-cache"])
    assert again.exit_code == 0 and "0 file(s) would change, 0 rewrite(s)" in again.output, again.output
    assert {p: p.read_bytes() for p in folder.rglob("*.py")} == before


def test_a_suite_gated_by_the_projects_own_cuda_gates_is_left_as_it_is(tmp_path: Path) -> None:
    """`RunIf(min_cuda_gpus=1)`, a skipif mark and a module's `pytestmark`, defined in the project: recognised by
    what their definitions do (they ask CUDA and skip), whatever their names."""
    folder = _ported("gated_suite", tmp_path)
    for path in (PROJECTS / "gated_suite").rglob("*.py"):
        assert (folder / path.relative_to(PROJECTS / "gated_suite")).read_bytes() == path.read_bytes(), path.name
    done = CliRunner().invoke(app, ["migrate", str(folder), "--no-cache", "--format", "json"])
    notes = [d["message"] for f in json.loads(done.stdout)["files"] for d in f["diagnostics"] if d["code"] == "TP110"]
    assert sum("a CUDA gate of this project" in n for n in notes) == 8, notes


def test_a_blocker_a_script_imports_only_lazily_keeps_it_off_nothing(tmp_path: Path) -> None:
    """diffusers-style lazy packages: a module the package imports only under `if TYPE_CHECKING:` (or in a function)
    is not certainly run, so its float64 gives no `tp.avoid_mps` (the verdict still names nothing); the same module
    imported at the package's top level does."""
    def project(name: str, imports: str) -> Path:
        folder = tmp_path / name
        (folder / "pkg").mkdir(parents=True)
        (folder / "pkg" / "__init__.py").write_text(imports)
        (folder / "pkg" / "wide.py").write_text(
            "import torch\n\n\n\nTABLE = torch.zeros(4, dtype=torch.float64, device='cuda')\n")
        (folder / "train.py").write_text(
            "import torch\nimport pkg\n\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda().sum())\n")
        done = CliRunner().invoke(app, ["migrate", str(folder), "--apply", "--no-cache"])
        assert done.exit_code == 0, done.output
        return folder

    lazy = project("lazy", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import wide\n")
    assert "tp.avoid_mps" not in (lazy / "train.py").read_text()
    eager = project("eager", "from . import wide\n")
    assert 'tp.avoid_mps("float64, pkg/wide.py:5")' in (eager / "train.py").read_text()


def test_a_library_module_with_a_demo_main_block_gets_no_avoid_mps(tmp_path: Path) -> None:
    """DeepSpeed's data_analyzer.py: a module other modules import, with a `__main__` demo. A `tp.avoid_mps` at its
    top would run in every program that imports it, whatever that program does: it goes first in the demo's block,
    where it runs only when the module is the program."""
    (tmp_path / "wide.py").write_text("import torch\n\n\n\n"
                                      "TABLE = torch.zeros(4, dtype=torch.float64, device='cuda')\n")
    (tmp_path / "analyzer.py").write_text(
        "import torch\nimport wide\n\n\ndef run(x):\n    return x.cuda()\n\n\nif __name__ == '__main__':\n"
        "    print(run(torch.ones(2)))\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport analyzer\n\nif __name__ == '__main__':\n    print(analyzer.run(torch.ones(2).cuda()))\n")
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"])
    assert done.exit_code == 0, done.output
    analyzer = (tmp_path / "analyzer.py").read_text()
    assert analyzer.index("tp.avoid_mps(") > analyzer.index("if __name__ == '__main__':")
    assert "tp.avoid_mps(" in (tmp_path / "train.py").read_text()  # the program that runs it says so


@pytest.mark.parametrize(("setup", "reason"), [
    # guided-diffusion's dist_util.setup_dist(): a group always (gloo without CUDA): the runtime would pick the CPU of
    # a Mac once it exists, but a device taken before it would stay MPS (RIFE's `device = tp.device()` at import)
    ("def setup():\n    if dist.is_initialized():\n        return\n    dist.init_process_group('gloo')\n",
     "a process group, which takes no MPS tensors, sample.py:1"),
    # mae's init_distributed_mode(): returns first when not launched distributed, so a Mac may still pick MPS
    ("def setup():\n    if 'RANK' not in os.environ:\n        return\n    dist.init_process_group('gloo')\n",
     "float64 numpy arrays made into tensors, schedule.py:6"),
])
def test_a_program_that_always_makes_a_process_group_keeps_the_cpu_on_a_mac_from_the_start(
        tmp_path: Path, setup: str, reason: str) -> None:
    (tmp_path / "dist_util.py").write_text("import os\nimport torch.distributed as dist\n\n\n" + setup)
    (tmp_path / "schedule.py").write_text(
        "import numpy as np\nimport torch\n\n\ndef table(t):\n    betas = np.linspace(0, 1, 4, dtype=np.float64)\n"
        "    return torch.from_numpy(betas).to(device=t.device)\n")
    (tmp_path / "sample.py").write_text(
        "import torch\nimport dist_util\nimport schedule\n\n\ndef main():\n    dist_util.setup()\n"
        "    print(schedule.table(torch.ones(2).cuda()))\n\n\nif __name__ == '__main__':\n    main()\n")
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"])
    assert done.exit_code == 0, done.output
    assert f'tp.avoid_mps("{reason}")' in (tmp_path / "sample.py").read_text()


def test_a_package_module_with_a_demo_main_block_gets_no_avoid_mps(tmp_path: Path) -> None:
    """DeepSpeed's data_analyzer.py: nothing in the project imports it, but it is a module of a package its users
    import; its `__main__` block is a demo."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "wide.py").write_text("import torch\n\n\ndef table():\n"
                                              "    return torch.zeros(4, dtype=torch.float64, device='cuda')\n")
    (tmp_path / "pkg" / "analyzer.py").write_text(
        "import torch\nfrom pkg import wide\n\n\ndef run(x):\n    return x.cuda()\n\n\nif __name__ == '__main__':\n"
        "    print(run(torch.ones(2)))\n")
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"])
    assert done.exit_code == 0, done.output
    assert "x.to(tp.device())" in (tmp_path / "pkg" / "analyzer.py").read_text()
    assert "avoid_mps" not in (tmp_path / "pkg" / "analyzer.py").read_text()


def test_a_ddp_branch_that_would_be_half_ported_is_left_whole_with_its_blocker(tmp_path: Path) -> None:
    """The DDP branch keeps its device string (the module picks MPS itself, R13): porting its assert and backend
    would only move the failure off CUDA, so the file stays byte-identical and the stop is said once."""
    folder = _ported("ddp_half", tmp_path)
    assert (folder / "train.py").read_text() == (PROJECTS / "ddp_half" / "train.py").read_text()
    done = CliRunner().invoke(app, ["migrate", str(folder), "--output-format", "concise", "--no-cache"])
    assert "train.py:9:1: TP110 [R19 half-port] left as written: off CUDA the path still stops at line 22" \
        in done.output
    assert _run(folder, "train.py").returncode == 0  # without torchrun it picks the CPU, as before


def test_a_ddp_wrap_on_the_flag_of_a_held_ddp_branch_stays_beside_a_port_that_runs(tmp_path: Path) -> None:
    """The second ``if ddp:`` takes the branch of the first (the evaluation narrows the flag), whose assert stays:
    its DDP line is held, read apart from the next line, which every path runs (its memory query, quiet off CUDA,
    stays as written: R24)."""
    folder = _ported("ddp_twice", tmp_path)
    text = (folder / "train.py").read_text()
    assert "    model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])\n" in text
    assert 'print(f"peak {torch.cuda.max_memory_allocated()}")' in text
    assert 'assert torch.cuda.is_available(), "need CUDA for DDP"' in text
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and ran.stdout.startswith("peak 0"), ran.stderr[-2000:]


def test_a_default_every_call_of_the_project_passes_stays(tmp_path: Path) -> None:
    folder = _ported("passed_default", tmp_path)
    text = (folder / "evaluation.py").read_text()
    assert 'def evaluate(model, device="cuda"):' in text  # train.py passes it
    assert "def warm_up(model, device=tp.device_str()):" in text  # train.py leaves it out
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and "torch.Size([1, 2])" in ran.stdout, ran.stderr[-2000:]


def test_a_default_every_call_passes_stays_under_a_grad_mode_decorator(tmp_path: Path) -> None:
    """EXplorativeDT's `@torch.no_grad()` over `vec_evaluate_episode_rtg`: a decorator that only sets autograd's
    mode registers the function nowhere, so the calls of the project are all its calls; one that may register it
    (`@register`) leaves the default to the callers it cannot see."""
    folder = _ported_with("passed_default", tmp_path, "evaluation.py", "def evaluate(",
                          "@torch.no_grad()\ndef evaluate(")
    assert '@torch.no_grad()\ndef evaluate(model, device="cuda"):' in (folder / "evaluation.py").read_text()
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and "torch.Size([1, 2])" in ran.stdout, ran.stderr[-2000:]
    folder = _ported_with("passed_default", tmp_path / "registered", "evaluation.py", "def evaluate(",
                          "def register(f):\n    return f\n\n\n@register\ndef evaluate(")
    assert "def evaluate(model, device=tp.device_str()):" in (folder / "evaluation.py").read_text()


def test_streams_only_for_parameters_on_cuda_stay_and_the_program_runs(tmp_path: Path) -> None:
    """`all(g["params"][0].device.type == "cuda" for g in groups)` and `any(p.is_cuda for p in ...)` are false
    for every item off CUDA: the streams and the sync under them never run there, so optim.py stays as written."""
    folder = _ported("streams_for_cuda_data", tmp_path)
    assert (folder / "optim.py").read_text() == (PROJECTS / "streams_for_cuda_data" / "optim.py").read_text()
    assert "device = tp.available_device_str()" in (folder / "train.py").read_text()
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and "on cpu" in ran.stdout, ran.stderr[-2000:]


def test_a_module_a_test_fakes_cuda_for_is_ported_only_with_that_test(tmp_path: Path) -> None:
    folder = _ported("faked", tmp_path)
    assert (folder / "pkg" / "sel.py").read_text() == (PROJECTS / "faked" / "pkg" / "sel.py").read_text()
    # no plugin of this environment is loaded (hypothesis alone costs a CPU-second); the project needs none
    done = forkrun.run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=folder,
                       env={**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, timeout=120)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:]


def test_a_module_a_test_fakes_cuda_for_through_its_package_is_ported_only_with_that_test(tmp_path: Path) -> None:
    """ezflow's test_engine: `from ezflow.engine import DistributedTrainer`, which `ezflow/engine/__init__.py`
    re-exports from `trainer.py`: the faked calls are that module's."""
    folder = tmp_path / "faked"
    shutil.copytree(PROJECTS / "faked", folder)
    (folder / "pkg" / "__init__.py").write_text("from .sel import pick, to_device\n")
    test = folder / "tests" / "test_sel.py"
    test.write_text(test.read_text().replace("from pkg import sel\n", "from pkg import pick, to_device\n")
                    .replace("sel.pick()", "pick()").replace("sel.to_device(x)", "to_device(x)"))
    _apply(folder)
    assert (folder / "pkg" / "sel.py").read_text() == (PROJECTS / "faked" / "pkg" / "sel.py").read_text()
    done = forkrun.run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=folder,
                       env={**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, timeout=120)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:]


def test_a_module_a_test_monkeypatches_torch_cuda_for_is_ported_only_with_that_test(tmp_path: Path) -> None:
    """Liger-Kernel's test_utils: ``monkeypatch.setattr(torch.cuda, "get_device_capability", ...)`` passes on any
    machine while the module asks torch.cuda; ported to the runtime, it would fail off CUDA."""
    folder = _ported("faked_monkeypatch", tmp_path)
    assert (folder / "pkg" / "arch.py").read_text() == (PROJECTS / "faked_monkeypatch" / "pkg" / "arch.py").read_text()
    done = forkrun.run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=folder,
                       env={**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, timeout=120)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:]


def test_ddp_ids_in_a_module_that_never_names_cuda_move_with_the_program(tmp_path: Path) -> None:
    folder = _ported("unnamed_ddp", tmp_path)
    assert "device_ids=tp.ddp_device_ids([device])" in (folder / "pkg" / "wrap.py").read_text()


@pytest.mark.slow  # torchrun with 2 processes (10 s); the DDP template above trains under torchrun in the default run
def test_ddp_ids_in_a_module_that_never_names_cuda_train_under_torchrun(tmp_path: Path) -> None:
    folder = _ported("unnamed_ddp", tmp_path)
    done = _run(folder, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "train.py")
    steps = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert len(steps) == 3, done.stderr[-3000:]
    assert done.returncode == 0 or _TEARDOWN_ABORT in done.stderr, done.stderr[-3000:]


def test_moves_decided_by_data_on_cuda_stay_and_the_program_keeps_the_cpu_on_a_mac(tmp_path: Path) -> None:
    """`x.cuda() if self.is_cuda() else x` and `if self.use_gpu:` (set from `torch.cuda.is_available()` in
    `__init__`) never run off CUDA: evaluated, they stay as written, while the unconditional move beside them is
    ported. On MPS the model would leave its inputs behind, so the script keeps the CPU on a Mac."""
    original = (PROJECTS / "gated_by_data" / "models.py").read_text().splitlines()
    folder = _ported("gated_by_data", tmp_path)
    models = (folder / "models.py").read_text().splitlines()
    for line in (15, 29):  # the moves decided by `.is_cuda` and by the class's `self.use_gpu`
        assert original[line - 1] in models, original[line - 1]
    assert "        lengths = torch.ones(batch.shape[0], 1).to(tp.device())" in models
    train = (folder / "train.py").read_text()
    # the first of the placements kept CUDA-or-CPU that would meet the moved data on MPS or XPU (its port held:
    # no path off CUDA takes the arm that moves)
    assert 'tp.keep_cuda_or_cpu("a device choice kept CUDA-or-CPU beside data moved to the picked device, ' \
           'models.py:15")' in train
    for args in (("train.py",), ("-c", ON_A_MAC, "train.py")):
        done = _run(folder, *args)
        assert done.returncode == 0 and "encoded (2, 3) cpu" in done.stdout, done.stderr[-2000:]


def test_a_module_only_programs_whose_port_still_stops_reach_is_left_whole(tmp_path: Path) -> None:
    """UniMatch: every script sets its rank's GPU with `rank % num_gpus`, a count the helper also prints, so it stays
    CUDA's (a division by 0 off CUDA, ported or not; a count read only as a divisor would be the runtime's process
    count), and the process-group helper's backend, which only they reach, is left as written with that reason:
    nothing of the program changes."""
    (tmp_path / "dist_helper.py").write_text(
        "import os\nimport torch\nimport torch.distributed as dist\n\n\ndef setup_distributed(backend='nccl'):\n"
        "    num_gpus = torch.cuda.device_count()\n    print('GPUs:', num_gpus)\n    rank = int(os.environ['RANK'])\n"
        "    torch.cuda.set_device(rank % num_gpus)\n    dist.init_process_group(backend=backend)\n    return rank\n")
    (tmp_path / "backbone.py").write_text(
        "import torch\n\n\ndef load(path):\n    return torch.load(path)\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom backbone import load\nfrom dist_helper import setup_distributed\n\n\ndef main():\n"
        "    rank = setup_distributed()\n    state = load('ckpt.pth')\n    model = torch.nn.Linear(2, 2).cuda()\n\n\n"
        "if __name__ == '__main__':\n    main()\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the program is named from where the run starts
    try:
        done = CliRunner().invoke(app, ["migrate", ".", "--no-cache", "--output-format", "concise"])
    finally:
        os.chdir(cwd)
    assert "0 file(s) would change" in done.output, done.output
    assert "dist_helper.py:6:1: TP110 1 rewrite(s) not made: [R07 cuda-only-library] only programs that run only on " \
           "CUDA reach this file (train.py: stops there once ported" in done.output, done.output


def test_what_a_test_module_calls_runs(tmp_path: Path) -> None:
    """pytest runs a test module's functions, so a definition only a test calls runs (verify's own project: its
    `make` was left as "nothing in the project runs `make`")."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "mod.py").write_text("import torch\n\n\ndef make():\n    return torch.ones(2).cuda() * 2\n")
    (tmp_path / "tests" / "test_mod.py").write_text("import mod\n\n\ndef test_make():\n"
                                                    "    assert mod.make().sum().item() == 4\n")
    _apply(tmp_path)
    assert "torch.ones(2).to(tp.device())" in (tmp_path / "mod.py").read_text()


@pytest.mark.parametrize("variant", ["script repo", "installable", "looked up by name", "looked up, named nowhere",
                                     "looked up by a built name", "looked up in globals() by a built name",
                                     "helper under no_grad"])
def test_definitions_nothing_in_a_script_repo_runs_are_left_and_said_once(tmp_path: Path, variant: str) -> None:
    """A research repo's old model and its helper, named only in a comment, are left as written with one note; the
    script still runs on the CPU. A package users install gets every definition ported; so does a project that looks
    definitions up by a name it is given (the command line's) in a module of its own, or imports a module by name
    where a text of the project names the definition (a comment here), or builds the name from parts."""
    folder = tmp_path / "unused_defs"
    shutil.copytree(PROJECTS / "unused_defs", folder)
    if variant == "installable":
        (folder / "pyproject.toml").write_text('[project]\nname = "models"\nversion = "0.1"\n')
    elif variant == "helper under no_grad":  # a decorator that only sets autograd's mode registers nothing
        model_file = folder / "model.py"
        model_file.write_text(model_file.read_text().replace("def old_sample(", "@torch.no_grad()\ndef old_sample("))
    elif variant.startswith("looked up"):
        given = "sys.argv[1]" if variant in ("looked up by name", "looked up, named nowhere") else "sys.argv[1] + 'Net'"
        train = folder / "train.py"
        looked = f"    other = getattr(model_module, {given}) if sys.argv[1:] else 0\n" if "globals" not in variant \
            else f"    other = globals()[{given}] if sys.argv[1:] else 0\n"
        train.write_text(train.read_text().replace("    x = sample(8)\n", "    x = sample(8)\n"
                                                   "    builder = getattr(model_module, 'Net')\n" + looked)
                         .replace("import torch\n", "import sys\n\nimport torch\n\nimport model as model_module\n"))
        if variant == "looked up, named nowhere":  # a module imported by its name: no project module looked in
            train.write_text(train.read_text().replace("    # model = OldNet(); train_old(model)\n", "").replace(
                "getattr(model_module, sys.argv[1])", "getattr(importlib.import_module('model'), sys.argv[1])")
                .replace("import sys\n", "import importlib\nimport sys\n"))
    output = _apply(folder)
    model = (folder / "model.py").read_text()
    assert "return torch.randn(n, 4).to(tp.device())\n" in model  # `sample` runs
    left = variant in ("script repo", "looked up, named nowhere", "helper under no_grad")
    assert ("nn.Linear(4, 2).cuda()" in model) is left and ("return torch.randn(n, 4).cuda()" in model) is left
    assert (output.count("nothing in the project runs `OldNet`, `old_sample`") == 1) is left
    ported = {p.name: p.read_text() for p in folder.glob("*.py")}
    assert "0 file(s) changed" in _apply(folder)  # a module ported already is read as any other: idempotent
    assert {p.name: p.read_text() for p in folder.glob("*.py")} == ported
    if left:
        ran = _run(folder, "train.py")
        assert ran.returncode == 0 and "torch.Size([8, 2])" in ran.stdout, ran.stderr[-2000:]


@pytest.mark.parametrize(("project", "module", "moved", "mac", "program", "printed"), [
    # NRI: `mask.cuda()` under `if x.is_cuda:` would become `mask.to(x.device)`, the same everywhere
    ("flag_followers", "modules.py", "mask = mask.to(x.device)",
     "from modules import encode\n\nprint(encode(torch.ones(2, 2, device='mps')))\n", "train.py", "True"),
    # distributed-continual-learning: the learner's CUDA autocast wraps CPU tensors off CUDA, where it disabled itself
    ("flag_held_amp", "learner.py", "torch.amp.autocast(",
     "from learner import Learner\n\nprint(Learner(torch.nn.Linear(4, 2).cuda(), True).step(torch.ones(1, 4)))\n",
     "main.py", "torch.float32"),
])
@pytest.mark.parametrize("moves", [False, True])
def test_what_follows_data_stays_where_every_program_keeps_it_on_cuda_or_the_cpu(
        tmp_path: Path, project: str, module: str, moved: str, mac: str, program: str, printed: str,
        moves: bool) -> None:
    """A module only flag-held scripts reach (`args.cuda = ... torch.cuda.is_available()` stays: off CUDA their data
    stays on the CPU) keeps what follows that data as written, said once: a move to another tensor's device, a CUDA
    autocast. Where a second program sends data to the runtime's device (MPS on a Mac), the rewrite is made."""
    folder = tmp_path / project
    shutil.copytree(PROJECTS / project, folder)
    if moves:
        (folder / "mac.py").write_text("import torch\n\n" + mac)
    output = _apply(folder)
    text = (folder / module).read_text()
    assert (text == (PROJECTS / project / module).read_text()) is not moves
    assert (moved in text) is moves
    assert output.count("keeps its data on CUDA or the CPU") == (0 if moves else 1)
    for other in (PROJECTS / project).glob("*.py"):
        if other.name != module:
            assert (folder / other.name).read_text() == other.read_text()
    ran = _run(folder, program)
    assert ran.returncode == 0 and ran.stdout.strip() == printed, ran.stderr[-2000:]


def test_device_values_nothing_reads_are_left_and_the_program_still_runs(tmp_path: Path) -> None:
    """FastSpeech: `model.py` picks `device` at import and nothing reads it; `train.py`'s `main` picks a second
    device it never uses. Both stay as written (R10); the device `train.py` imports from `model.py`, and its own,
    are ported, and the program runs on the CPU."""
    folder = _ported("unread_device", tmp_path)
    model, train = (folder / "model.py").read_text(), (folder / "train.py").read_text()
    assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in model
    assert "used = tp.available_device()" in model
    assert "    device = tp.available_device()\n" in train
    assert '    spare = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in train
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and "torch.Size([2, 2])" in ran.stdout, ran.stderr[-2000:]


def test_a_device_read_only_under_cuda_guards_is_left_as_written(tmp_path: Path) -> None:
    """SimCTG: `device = torch.device("cuda")` is read only under `if cuda_available:`, in the script and in the
    function it hands it to (which only the script calls): off CUDA nothing reads it, so its port changes nothing."""
    folder = _ported("guarded_reads", tmp_path)
    assert (folder / "train.py").read_text() == (PROJECTS / "guarded_reads" / "train.py").read_text()
    done = CliRunner().invoke(app, ["migrate", str(folder), "--check", "--no-cache"])
    assert "`device` is read only where CUDA runs" in done.stdout
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and "evaluated float" in ran.stdout, ran.stderr[-2000:]


def test_a_device_a_script_hands_to_a_function_another_module_imports_is_ported(tmp_path: Path) -> None:
    """The same script, its `evaluate` imported by another module: what that importer passes is unknown, so the
    parameter's read under `if cuda_available:` may run off CUDA, and the device is ported."""
    folder = tmp_path / "guarded_reads_imported"
    shutil.copytree(PROJECTS / "guarded_reads", folder)
    (folder / "bench.py").write_text("from train import evaluate\n")
    _apply(folder)
    assert 'device = tp.device()' in (folder / "train.py").read_text()


def test_an_object_whose_class_moves_itself_keeps_its_own_cuda_in_a_function_it_is_passed_to(tmp_path: Path) -> None:
    """mt-dnn's `extract_encoding(model, ...)`, handed an `MTDNNModel` (its own `cuda()`, no `to()`): `model.cuda()`
    there is the wrapper's; `.to()` would raise AttributeError on CUDA."""
    folder = _ported("own_cuda_function", tmp_path)
    assert "    model.cuda()\n" in (folder / "lib" / "encode.py").read_text()
    ran = _run(folder, "main.py")
    assert ran.returncode == 0 and "built Wrapper" in ran.stdout, ran.stderr[-2000:]


def test_a_program_that_stops_off_cuda_in_the_original_too_is_left_whole(tmp_path: Path) -> None:
    """bayesian-torch's ImageNet scripts: `ngpus_per_node` is bound only under `if torch.cuda.is_available():` and
    read after it, a NameError off CUDA before and after any port: nothing is rewritten, the stop is reported
    where it happens."""
    original = PROJECTS / "unbound_off_cuda" / "train.py"
    folder = _ported("unbound_off_cuda", tmp_path)
    assert (folder / "train.py").read_text() == original.read_text()
    done = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    train = next(p for p in json.loads(done.stdout)["programs"] if p["path"] == "train.py")
    assert train["runs_on"] == ["cuda"]
    assert {(b["target"], b["line"]) for b in train["blockers"]} == {("mps", 15), ("xpu", 15), ("cpu", 15)}
    assert "`ngpus_per_node` is bound only where a device query is true" in train["blockers"][0]["reason"]


def test_an_object_whose_class_moves_itself_keeps_its_own_cuda_where_a_caller_passed_it(tmp_path: Path) -> None:
    # XLM's GLUE(embedder, ...): `self.embedder = copy.deepcopy(self._embedder)` holds a SentenceEmbedder, whose
    # own `cuda()` (ported inside) has no `.to()`: `.to(tp.device())` there would raise AttributeError on CUDA too
    folder = _ported("own_cuda_passed", tmp_path)
    task = (folder / "lib" / "task.py").read_text()
    assert "        self.embedder.cuda()\n" in task and "x = torch.ones(2, self.width).to(tp.device())" in task
    assert "self.model.to(tp.device())" in (folder / "lib" / "embedder.py").read_text()
    done = _run(folder, "main.py")
    assert done.returncode == 0 and "result True" in done.stdout, done.stderr


def test_a_project_extension_with_cpu_and_cuda_kernels_keeps_a_mac_on_the_cpu(tmp_path: Path) -> None:
    # chamferdist: `CppExtension`, or `CUDAExtension` where nvcc is; its kernels are the CPU's and CUDA's, so a
    # tensor on MPS (or an XPU) meets none, and the CPU's would read its memory as the host's
    folder = _ported("cpu_cuda_extension", tmp_path)
    example = (folder / "example.py").read_text()
    assert "tp.keep_cuda_or_cpu(\"a compiled extension's kernels (`knn._C`: the CPU's and CUDA's alone), " \
           "knn/search.py:3\")" in example and "torch.rand(8, 3).to(tp.device())" in example
    done = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    program = next(p for p in json.loads(done.stdout)["programs"] if p["path"] == "example.py")
    assert program["runs_on"] == ["cuda", "cpu"]
    assert {(b["target"], b["path"], b["line"]) for b in program["blockers"]} == {
        ("mps", "knn/search.py", 3), ("xpu", "knn/search.py", 3)}


def test_a_batch_moved_only_where_cuda_is_keeps_a_mac_on_the_cpu(tmp_path: Path) -> None:
    # reid-strong-baseline: the config's device becomes the runtime's, but `img.to(device) if
    # torch.cuda.device_count() >= 1 else img` leaves batches on the CPU off CUDA: on MPS the model and its inputs
    # would be on two devices, so the program keeps the CPU on a Mac (and on an Intel GPU)
    folder = _ported("kept_data_move", tmp_path)
    train = (folder / "train.py").read_text()
    # above `import defaults`, whose config default picks the runtime's device when imported
    assert 'tp.keep_cuda_or_cpu("a device choice kept CUDA-or-CPU beside data moved to the picked device, '\
           'trainer.py:7")' \
        "\n\nimport defaults\n" in train
    assert (folder / "trainer.py").read_text() == (PROJECTS / "kept_data_move" / "trainer.py").read_text()
    done = _run(folder, "train.py")
    assert done.returncode == 0 and "sum True" in done.stdout, done.stderr
    on_a_mac = _run(folder, "-c", ON_A_MAC, "train.py")
    assert on_a_mac.returncode == 0 and "sum True" in on_a_mac.stdout, on_a_mac.stderr


def test_mixed_precision_only_programs_kept_cuda_or_cpu_reach_stays_cudas(tmp_path: Path) -> None:
    # LTSF-Linear: on CUDA or the CPU, CUDA's autocast and scaler already run as moved ones would (on, off)
    folder = _ported("kept_amp", tmp_path)
    assert "tp.keep_cuda_or_cpu(" in (folder / "train.py").read_text()
    assert (folder / "trainer.py").read_text() == (PROJECTS / "kept_amp" / "trainer.py").read_text()
    done = CliRunner().invoke(app, ["migrate", str(folder), "--dry-run", "--no-cache", "--output-format", "json"])
    notes = [d for f in json.loads(done.stdout)["files"] if f["path"].endswith("trainer.py")
             for d in f["diagnostics"] if "[R13 held-choice]" in d["message"]]
    assert [(d["line"], d["message"].split("(")[1][:5]) for d in notes] == [(8, "TP021"), (9, "TP020")], notes
    done = _run(folder, "train.py")
    assert done.returncode == 0 and "loss torch.float32" in done.stdout, done.stderr
    on_a_mac = _run(folder, "-c", ON_A_MAC, "train.py")
    assert on_a_mac.returncode == 0 and "loss torch.float32" in on_a_mac.stdout, on_a_mac.stderr


def test_mixed_precision_a_program_moves_to_the_accelerator_moves_with_it(tmp_path: Path) -> None:
    folder = _ported_with("kept_amp", tmp_path, "trainer.py", " if torch.cuda.device_count() >= 1 else img", "")
    trainer = folder / "trainer.py"
    assert "tp.keep_cuda_or_cpu(" not in (folder / "train.py").read_text()
    assert "torch.amp.autocast(tp.device_type()" in trainer.read_text()
    assert "torch.amp.GradScaler(tp.device_type()" in trainer.read_text()


def test_a_cuda_only_library_a_class_imports_when_the_default_makes_it_leaves_the_program_whole(
        tmp_path: Path) -> None:
    # consistency_models: `AttentionBlock(attention_type="flash")` makes a layer whose `__init__` imports flash_attn
    _left_whole("flash_by_default", tmp_path, "sample.py", ("blocks.py", 8))


def test_the_same_library_behind_a_default_that_turns_it_off_is_ported_and_runs(tmp_path: Path) -> None:
    folder = _ported_with("flash_by_default", tmp_path, "blocks.py", 'attention_type="flash"',
                          'attention_type="legacy"')
    assert "AttentionBlock(4).to(tp.device())" in (folder / "sample.py").read_text()
    done = _run(folder, "sample.py")
    assert done.returncode == 0 and "sum 2.0" in done.stdout, done.stderr  # softmax rows sum to 1


def test_mixed_precision_only_a_cuda_device_option_reaches_stays_cudas(tmp_path: Path) -> None:
    # minimind: `device_type = "cuda" if "cuda" in args.device else "cpu"` on the ported default names no CUDA off it
    folder = tmp_path / "amp_for_a_cuda_option"
    shutil.copytree(PROJECTS / "amp_for_a_cuda_option", folder)
    output = _apply(folder)
    assert "train.py:17:1: TP110 [R12 moves-together] left as written: a GradScaler moves with its autocast" \
        in output, output
    train = (folder / "train.py").read_text()
    assert 'default=tp.available_device_str(0))' in train
    assert "else torch.cuda.amp.autocast(dtype=dtype)\n" in train
    assert 'scaler = torch.cuda.amp.GradScaler(enabled=(args.dtype == "float16"))\n' in train
    assert "0 file(s) changed" in _apply(folder)  # a second run changes nothing
    done = _run(folder, "train.py")
    assert done.returncode == 0 and "loss torch.float32" in done.stdout, done.stderr


def test_mixed_precision_a_device_option_any_accelerator_passes_moves_the_autocast(tmp_path: Path) -> None:
    folder = _ported_with("amp_for_a_cuda_option", tmp_path, "train.py", '"cuda" in args.device',
                          'args.device != "cpu"')
    train = (folder / "train.py").read_text()
    assert "torch.amp.autocast(tp.device_type()" in train and "torch.amp.GradScaler(tp.device_type()" in train


def test_an_extension_a_function_imports_when_it_runs_leaves_the_program_whole(tmp_path: Path) -> None:
    _left_whole("deferred_extension", tmp_path, "tool/train.py", ("lib/ops/functions.py", 2))


def test_a_model_a_function_imports_that_needs_no_extension_is_ported(tmp_path: Path) -> None:
    folder = tmp_path / "deferred_extension"
    shutil.copytree(PROJECTS / "deferred_extension", folder)
    net = folder / "model" / "net.py"
    net.write_text(net.read_text().replace("from lib.ops import functions\n", "").replace("functions.group(x)",
                                                                                         "x * 2"))
    _apply(folder)
    train = (folder / "tool" / "train.py").read_text()
    assert "model = Model().to(tp.device())" in train
    done = _run(folder, "-c", "import runpy, sys; sys.path.insert(0, '.'); "
                "runpy.run_path('tool/train.py', run_name='__main__')")  # the README runs it from the root
    assert done.returncode == 0 and "tensor([2., 2.])" in done.stdout, done.stderr


def test_a_storage_another_module_hands_to_a_helper_is_moved_by_keyword(tmp_path: Path) -> None:
    folder = _ported("storage_handed", tmp_path)
    assert "    return args.to(device=tp.device())\n" in (folder / "core" / "util.py").read_text()
    assert "weights = set_gpu(torch.ones(2))" in (folder / "train.py").read_text()
    assert "0 file(s) changed" in _apply(folder)  # a second run changes nothing
    done = _run(folder, "train.py")  # `storage.to(tp.device())` raised a TypeError on every backend
    assert done.returncode == 0 and "loaded 2.0" in done.stdout, done.stderr


def test_a_program_that_imports_what_torch_lacks_is_left_whole_and_its_neighbour_ported(tmp_path: Path) -> None:
    """old_torch: train.py reaches data.py, which imports PyTorch 0.4's private ``_DataLoaderIter``: it runs on no
    device, so both stay byte-identical, with R25 and the import's line. evaluate.py's ``torch._six`` import has an
    ``except ImportError`` way around it: it is ported and runs on the CPU."""
    folder = _ported("old_torch", tmp_path)
    for name in ("train.py", "data.py"):
        assert (folder / name).read_text() == (PROJECTS / "old_torch" / name).read_text()
    assert (folder / "evaluate.py").read_text() != (PROJECTS / "old_torch" / "evaluate.py").read_text()
    assert _run(folder, "evaluate.py").returncode == 0
    done = CliRunner().invoke(app, ["migrate", str(folder), "--output-format", "concise", "--no-cache"])
    assert "data.py:7:1: TP110 1 rewrite(s) not made: [R25 runs-nowhere]" in done.output
    listed = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    found = {p["path"]: p for p in json.loads(listed.stdout)["programs"]}
    assert found["train.py"]["runs_on"] == []
    assert {(b["target"], b["path"], b["line"]) for b in found["train.py"]["blockers"]} == {
        (target, "data.py", 3) for target in ("mps", "xpu", "cpu")}
    assert found["evaluate.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_an_exit_without_cuda_goes_where_the_rest_of_the_program_ports(tmp_path: Path) -> None:
    """exit_gate (PC-DARTS): train.py's `if not torch.cuda.is_available(): logging.info(...); sys.exit(1)` goes
    (TP009, as an assert would) and the program trains on the CPU; bench.py's exit guards CUDA graphs, which nothing
    off CUDA has: it stays byte-identical. A second --apply changes nothing."""
    folder = _ported("exit_gate", tmp_path)
    assert "is_available" not in (folder / "train.py").read_text()
    assert (folder / "bench.py").read_text() == (PROJECTS / "exit_gate" / "bench.py").read_text()
    done = _run(folder, "train.py")
    assert done.returncode == 0 and done.stdout.startswith("loss "), done.stderr
    again = CliRunner().invoke(app, ["migrate", str(folder), "--no-cache"])
    assert again.exit_code == 0 and "0 file(s) would change, 0 rewrite(s)" in again.output, again.output


def test_modules_whose_main_block_runs_nothing_are_left_with_the_cuda_only_scripts_that_import_them(
        tmp_path: Path) -> None:
    """TorchSSL: every training script raises unless CUDA is there, and its models end with `if __name__ ==
    "__main__": pass`, which runs nothing: no program reaches them off CUDA, so they are left as written."""
    folder = tmp_path / "gated_trainer"
    shutil.copytree(PROJECTS / "gated_trainer", folder)
    output = _apply(folder)
    for path in ("train.py", "models/net.py"):
        assert (folder / path).read_text() == (PROJECTS / "gated_trainer" / path).read_text(), path
    assert "only programs that run only on CUDA reach this file" in output


def test_a_fixture_only_cuda_gated_tests_request_is_left_and_one_an_ungated_test_requests_is_ported(
        tmp_path: Path) -> None:
    """Sock: `data_cuda` is requested only by a test its `@needs_cuda` mark (from `from .marks import *`) skips off
    CUDA, so pytest makes it only on CUDA: left; `data_any`, which an ungated test requests, is ported."""
    folder = _ported("gated_fixture", tmp_path)
    test = (folder / "tests" / "test_copy.py").read_text()
    assert 'return torch.rand(4, device="cuda")' in test
    assert "return torch.rand(4).to(tp.device())" in test
    marks = "tests/marks.py"
    assert (folder / marks).read_text() == (PROJECTS / "gated_fixture" / marks).read_text()


def test_float64_arrays_a_helper_returns_in_a_tuple_keep_the_choice_of_the_device_cuda_or_the_cpu(
        tmp_path: Path) -> None:
    """torch_ransac3d: `make_points` returns a float64 numpy array in a tuple; the caller moves a tensor of it to the
    device through `.abs()` before its cast. MPS lacks float64, so the CUDA-or-CPU choice stays, as written."""
    folder = tmp_path / "float64_returned"
    shutil.copytree(PROJECTS / "float64_returned", folder)
    output = _apply(folder)
    assert (folder / "check.py").read_text() == (PROJECTS / "float64_returned" / "check.py").read_text()
    assert "check.py:16 uses float64 numpy arrays made into tensors" in output


def test_a_dataset_giving_float64_keeps_its_programs_choice(tmp_path: Path) -> None:
    """Transfer-Learning-Library's ImageRegression parses float64 targets that its DataLoader batches as float64
    tensors; the training script moves them to the device before its cast. MPS lacks float64, so the script's
    CUDA-or-CPU choice stays as written; a script whose dataset gives float32 and integers is ported."""
    folder = tmp_path / "dataset_float64"
    shutil.copytree(PROJECTS / "dataset_float64", folder)
    output = _apply(folder)
    assert (folder / "train.py").read_text() == (PROJECTS / "dataset_float64" / "train.py").read_text()
    assert "data/regression.py:15 uses float64 numpy arrays a dataset gives" in output
    assert "device = tp.available_device()" in (folder / "classify.py").read_text()
    assert "device = tp.available_device()" in (folder / "train_cast.py").read_text()  # cast before it moves
    for script, printed in (("train.py", "total 9.0"), ("classify.py", "seen 4"), ("train_cast.py", "total 9.0")):
        done = _run(folder, script)
        assert done.returncode == 0 and printed in done.stdout, done.stderr
    on_a_mac = _run(folder, "-c", ON_A_MAC, "train.py")  # the CPU, as written
    assert on_a_mac.returncode == 0 and "total 9.0" in on_a_mac.stdout, on_a_mac.stderr


def test_a_module_linked_to_a_held_choice_that_stops_on_the_cpu_is_ported(tmp_path: Path) -> None:
    """frankmocap: the demo's choice stays CUDA-or-CPU (its renderer needs what MPS lacks); body_mocap_api keeps a
    choice of its own and a `.cuda()` that runs wherever it runs. Held with the demo, that `.cuda()` stopped the
    program on the CPU; its moves are ported, and the entry point keeps CUDA-or-CPU."""
    folder = _ported("held_link_stops", tmp_path)
    assert "        return out.to(tp.device())\n" in (folder / "api.py").read_text()
    assert "tp.keep_cuda_or_cpu(" in (folder / "demo.py").read_text()
    done = _run(folder, "demo.py")
    assert done.returncode == 0 and "rendered 0.0" in done.stdout, done.stderr
    on_a_mac = _run(folder, "-c", ON_A_MAC, "demo.py")
    assert on_a_mac.returncode == 0 and "rendered 0.0" in on_a_mac.stdout, on_a_mac.stderr


def test_an_object_a_registry_passes_keeps_its_own_cuda(tmp_path: Path) -> None:
    # pymarl2: `le_REGISTRY[args.learner](mac, ...)` hands QLearner a BasicMAC, whose own `cuda()` has no `.to()`;
    # `self.mac.to(tp.device())` in QLearner.cuda would raise AttributeError on CUDA
    folder = _ported("own_cuda_registry", tmp_path)
    learner = (folder / "learners" / "q.py").read_text()
    assert "        self.mac.cuda()\n        self.target_mac.cuda()\n" in learner
    done = _run(folder, "main.py")
    assert done.returncode == 0 and "result True" in done.stdout, done.stderr


def test_a_program_whose_library_picks_the_device_keeps_the_cpu_on_a_mac(tmp_path: Path) -> None:
    # DuoRec's run_seq.py names no CUDA: recbole's config picks the device, its data loader makes float64 batches,
    # its trainer moves them. Ported, the config picks MPS on a Mac: the entry point keeps the program on the CPU
    folder = _ported("chosen_in_library", tmp_path)
    assert 'tp.avoid_mps("float64, lib/data.py:5")' in (folder / "run.py").read_text()
    done = _run(folder, "run.py")
    assert done.returncode == 0 and "total 12.0" in done.stdout, done.stderr
    on_a_mac = _run(folder, "-c", ON_A_MAC, "run.py")
    assert on_a_mac.returncode == 0 and "total 12.0" in on_a_mac.stdout, on_a_mac.stderr


def test_a_module_only_data_parallel_places_keeps_the_cpu_on_a_mac(tmp_path: Path) -> None:
    # generative-inpainting's test_single.py: on CUDA `DataParallel(netG, device_ids=...)` moves netG to its first
    # GPU; on MPS it calls netG where it is (the CPU) with the inputs the port moves to MPS
    folder = _ported("wrapper_places", tmp_path)
    assert 'tp.avoid_mps("DataParallel, which places its module only on CUDA, test_single.py:12")' in (
        folder / "test_single.py").read_text()
    assert "avoid_mps" not in (folder / "own.py").read_text()  # Mover places its own layer
    assert "avoid_mps" not in (folder / "made.py").read_text()  # models.make moves what it makes
    assert "avoid_mps" not in (folder / "moved_inside.py").read_text()  # the module it wraps is moved
    for args in (("test_single.py",), ("-c", ON_A_MAC, "test_single.py"), ("made.py",), ("moved_inside.py",)):
        done = _run(folder, *args)
        assert done.returncode == 0 and "out (2, 2)" in done.stdout, done.stderr


def test_a_script_that_keeps_its_choice_cuda_or_cpu_keeps_a_librarys_choice_so(tmp_path: Path) -> None:
    # learning3d's examples: `if not torch.cuda.is_available(): args.device = 'cpu'` keeps the script's choice
    # CUDA-or-CPU, so the library function's own `"cuda" if available else "cpu"` that it runs stays so too (on MPS
    # their tensors would be on two devices); another script that ports its moves gets `tp.keep_cuda_or_cpu`. The
    # script is named like a test, but its `test_one_epoch` takes what `main` passes: `main`'s device reaches it
    folder = _ported("kept_beside_library_choice", tmp_path)
    original = PROJECTS / "kept_beside_library_choice"
    for same in ("test_model.py", "lib/ops.py"):
        assert (folder / same).read_text() == (original / same).read_text()
    assert "tp.keep_cuda_or_cpu(" in (folder / "train.py").read_text()
    for args in (("test_model.py",), ("-c", ON_A_MAC, "test_model.py")):
        done = _run(folder, *args)
        assert done.returncode == 0 and "total 12.0" in done.stdout, done.stderr
    for args in (("train.py",), ("-c", ON_A_MAC, "train.py")):
        done = _run(folder, *args)
        assert done.returncode == 0 and "train 12.0" in done.stdout, done.stderr


def test_a_device_option_the_script_chooses_among_types_itself_defaults_to_the_runtimes(tmp_path: Path) -> None:
    # nnU-Net v2's run_training (U-Mamba): `-device` defaults to 'cuda' and the script maps 'cpu', 'cuda' and 'mps'
    # to devices itself. Its default becomes the runtime's device type (the one choice the script then makes);
    # the CUDA arm stays the script's own, and the original on the CPU failed with the default
    original = PROJECTS / "device_option_among_types" / "train.py"
    assert _run(original.parent, "train.py").returncode != 0
    folder = _ported("device_option_among_types", tmp_path)
    train = (folder / "train.py").read_text()
    assert "default=tp.device_type()," in train and "device = torch.device('cuda')" in train
    done = _run(folder, "train.py")
    assert done.returncode == 0 and "sum 2.0 cpu" in done.stdout, done.stderr
    chosen = _run(folder, "train.py", "-device", "cpu")
    assert chosen.returncode == 0 and "sum 2.0 cpu" in chosen.stdout, chosen.stderr


def test_a_device_only_compared_and_written_into_text_is_a_label_and_stays(tmp_path: Path) -> None:
    """torchsparse's setup.py: `device = "cuda"` picks the extension's sources and type by comparisons and file
    names; ported, a build forced for CUDA on a machine without one would build for the CPU. It stays, said once
    (R10), and so does the one train.py's `describe` only prints; the device `main` places data with is ported and
    the program runs."""
    folder = _ported("label_device", tmp_path)
    assert (folder / "setup.py").read_text() == (PROJECTS / "label_device" / "setup.py").read_text()
    train = (folder / "train.py").read_text()
    assert '    device = "cuda"  # a label' in train and "    device = tp.device_str()\n" in train
    done = CliRunner().invoke(app, ["migrate", str(folder), "--check", "--no-cache"])
    assert "`device` is only compared and written into text" in done.stdout
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and "torch.Size([1, 2])" in ran.stdout, ran.stderr[-2000:]


def test_flags_an_object_keeps_from_its_maker_gate_its_moves_and_nothing_changes(tmp_path: Path) -> None:
    """Bayesian-Neural-Networks: `Net(cuda=use_cuda)` after `use_cuda = torch.cuda.is_available()`; the object keeps
    it (`self.cuda = cuda`) and hands it to `to_variable`, reached through two star imports, whose `if not
    v.is_cuda and cuda:` moves data that is not on CUDA (no split on a Mac). Off CUDA none of it runs: the port
    changes no file, adds no `tp.keep_cuda_or_cpu`, and both programs run on the CPU and on a Mac. So does a
    notebook's own copy of the class, made in the module that defines it."""
    folder = _ported("flag_kept_by_object", tmp_path)
    for path in (PROJECTS / "flag_kept_by_object").rglob("*.py"):
        assert (folder / path.relative_to(PROJECTS / "flag_kept_by_object")).read_text() == path.read_text(), path
    (folder / "mac.py").write_text(ON_A_MAC)
    for script, said in (("train.py", "fit torch.Size([1, 2]) 6"), ("notebook_like.py", "own torch.Size([1, 2])")):
        for args in ((script,), ("mac.py", script)):
            ran = _run(folder, *args)
            assert ran.returncode == 0 and said in ran.stdout, ran.stderr[-2000:]


def test_a_flag_a_base_class_sets_from_a_cuda_query_gates_its_subclasses_in_other_modules(tmp_path: Path) -> None:
    """deep-person-reid's `Engine`: `self.use_gpu = torch.cuda.is_available() and use_gpu`, read by subclasses in
    other modules under `if self.use_gpu:`. Every assignment of `.use_gpu` in the project is false off CUDA, so
    those moves never run there and stay as written."""
    (tmp_path / "engine.py").write_text("import torch\n\n\nclass Engine:\n    def __init__(self, use_gpu=True):\n"
                                        "        self.use_gpu = torch.cuda.is_available() and use_gpu\n")
    softmax = ("from engine import Engine\n\n\nclass Softmax(Engine):\n    def run(self, x):\n"
               "        if self.use_gpu:\n            x = x.cuda()\n        return x * 2\n")
    (tmp_path / "softmax.py").write_text(softmax)
    (tmp_path / "main.py").write_text("import torch\n\nfrom softmax import Softmax\n\nif __name__ == \"__main__\":\n"
                                      "    print('ran', Softmax().run(torch.ones(2)).sum().item())\n")
    _apply(tmp_path)
    assert (tmp_path / "softmax.py").read_text() == softmax
    ran = _run(tmp_path, "main.py")
    assert ran.returncode == 0 and "ran 4.0" in ran.stdout, ran.stderr[-2000:]


def test_indexing_gputils_list_of_gpus_stops_off_cuda_while_its_report_does_not(tmp_path: Path) -> None:
    """gputil (dgNN): `GPUtil.getGPUs()` is an empty list without NVIDIA's driver, so bench.py's
    `GPUtil.getGPUs()[args.gpu]` raises there and the program is left whole; monitor.py only prints the report and
    iterates the list, which work anywhere: it is ported."""
    _left_whole("gputil", tmp_path, "bench.py", ("bench.py", 16))
    monitor = (tmp_path / "gputil" / "monitor.py").read_text()
    assert ".cuda()" not in monitor and "tp.device()" in monitor


def test_a_data_parallel_wrapper_handed_to_a_function_that_moves_its_inputs_may_use_mps(tmp_path: Path) -> None:
    """data_parallel_handed (Dacon_LGAI): main.py wraps its model in DataParallel and hands it to `validate` of
    run/test.py, which moves each batch with `.cuda()` before calling it: off CUDA the wrapper calls the module with
    inputs already beside it, so a Mac may use MPS (no `tp.avoid_mps`), and it runs on the CPU. Where `validate`
    calls it with a batch straight from the loader, DataParallel's scatter was what moved it: a Mac keeps the CPU."""
    folder = _ported("data_parallel_handed", tmp_path)
    assert "avoid_mps" not in (folder / "main.py").read_text()
    listed = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    assert json.loads(listed.stdout)["programs"][0]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    ran = _run(folder, "main.py")
    assert ran.returncode == 0 and ran.stdout.startswith("score "), ran.stderr[-2000:]
    unmoved = _ported_with("data_parallel_handed", tmp_path, "run/test.py", "batch = batch.float().cuda()",
                           "batch = batch.float()")
    said = 'tp.avoid_mps("DataParallel, which moves its inputs only on CUDA, main.py:8")'
    assert said in (unmoved / "main.py").read_text()


def _reports(folder: Path) -> tuple[str, dict[str, dict]]:
    """What a concise dry run of ``folder`` prints, and its programs (`torchport programs`, JSON) by path."""
    done = CliRunner().invoke(app, ["migrate", str(folder), "--output-format", "concise", "--no-cache"])
    listed = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    return done.output, {p["path"]: p for p in json.loads(listed.stdout)["programs"]}


def test_a_program_that_imports_a_module_its_project_lacks_is_left_whole(tmp_path: Path) -> None:
    """missing_module (pytorch-models): detect.py imports `mylib.detr` and evaluate.py reaches
    `from .backbones.resnet import ResNet` in mylib/heads.py, modules the repository never committed: an ImportError
    on every device, so they and heads.py stay byte-identical with R25 and the line. train.py imports only what is
    there: it and mylib/models.py are ported, and it trains on the CPU."""
    folder = _ported("missing_module", tmp_path)
    for name in ("detect.py", "evaluate.py", "mylib/heads.py"):
        assert (folder / name).read_text() == (PROJECTS / "missing_module" / name).read_text()
    assert "tp.device()" in (folder / "mylib/models.py").read_text()
    output, found = _reports(folder)
    assert "mylib/heads.py:9:1: TP110 1 rewrite(s) not made: [R25 runs-nowhere]" in output
    assert found["detect.py"]["runs_on"] == [] and found["evaluate.py"]["runs_on"] == []
    assert {(b["target"], b["path"], b["line"]) for b in found["evaluate.py"]["blockers"]} == {
        (target, "mylib/heads.py", 3) for target in ("mps", "xpu", "cpu")}
    assert found["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and ran.stdout.startswith("loss "), ran.stderr[-2000:]


def test_a_program_that_reads_a_name_nothing_binds_before_its_work_is_left_whole(tmp_path: Path) -> None:
    """unbound_name (PhySTNet): evaluate.py builds its loader from `dataset_test`, which nothing binds, right after
    loading its checkpoint: a NameError on every device, so it and eval_config.py, which only it reaches, stay
    byte-identical with R25 and the line. train.py reads an unbound name only after its training loop: it is
    ported and trains on the CPU, then stops where the original stopped on CUDA."""
    folder = _ported("unbound_name", tmp_path)
    for name in ("evaluate.py", "eval_config.py"):
        assert (folder / name).read_text() == (PROJECTS / "unbound_name" / name).read_text()
    assert "tp.device()" in (folder / "train.py").read_text()
    output, found = _reports(folder)
    assert "eval_config.py:9:1: TP110 1 rewrite(s) not made: [R25 runs-nowhere]" in output
    assert found["evaluate.py"]["runs_on"] == []
    assert {(b["target"], b["path"], b["line"]) for b in found["evaluate.py"]["blockers"]} == {
        (target, "evaluate.py", 8) for target in ("mps", "xpu", "cpu")}
    assert found["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    ran = _run(folder, "train.py")
    assert ran.stdout.startswith("loss ") and "NameError: name 'plot_curves'" in ran.stderr, ran.stderr[-2000:]


def test_a_program_that_calls_its_project_with_arguments_it_refuses_is_left_whole(tmp_path: Path) -> None:
    """stale_call (MusicDiffusion): generate.ipynb builds `Denoiser` with the arguments of an older signature and
    sample.py a `Noiser` whose inherited `__init__` takes one: a TypeError on every device before either does
    anything, so both stay byte-identical with R25 and the line. demo.ipynb and train.py build the current class:
    they are ported, and train.py runs on the CPU."""
    folder = _ported("stale_call", tmp_path)
    for name in ("generate.ipynb", "sample.py", "networks.py"):
        assert (folder / name).read_bytes() == (PROJECTS / "stale_call" / name).read_bytes()
    assert "tp.device()" in (folder / "train.py").read_text() and "tp.device()" in (folder / "demo.ipynb").read_text()
    output, found = _reports(folder)
    assert "sample.py:8:1: TP110 2 rewrite(s) not made: [R25 runs-nowhere]" in output
    assert found["generate.ipynb"]["runs_on"] == [] and found["sample.py"]["runs_on"] == []
    assert {(b["target"], b["path"], b["line"]) for b in found["sample.py"]["blockers"]} == {
        (target, "sample.py", 7) for target in ("mps", "xpu", "cpu")}
    assert "calls `Noiser` with arguments its signature refuses (too many positional arguments)" in found[
        "sample.py"]["blockers"][0]["reason"]
    assert found["train.py"]["runs_on"] == found["demo.ipynb"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    ran = _run(folder, "train.py")
    assert ran.returncode == 0 and ran.stdout.startswith("loss "), ran.stderr[-2000:]


def test_an_options_flag_of_cuda_read_in_another_module_moves_with_the_accelerator(tmp_path: Path) -> None:
    """flag_across_modules (the Informer family): the script keeps `args.use_gpu` true only where CUDA is, and the
    base experiment picks `cuda:{gpu}` under it in another module. Every read of the flag guards code the runtime
    ports whole, so the check that sets it and the device it guards are ported together: the CPU runs it, and a
    Mac picks MPS (here, with no MPS kernels, the model's move there in the base class fails)."""
    folder = _ported("flag_across_modules", tmp_path)
    assert "args.use_gpu = True if tp.is_available() and args.use_gpu else False" in (folder / "run.py").read_text()
    assert "device = tp.device('cuda:{}'.format(self.args.gpu))" in (folder / "exp" / "exp_basic.py").read_text()
    assert (folder / "exp" / "exp_main.py").read_text() == \
        (PROJECTS / "flag_across_modules" / "exp" / "exp_main.py").read_text()
    here = _run(folder, "run.py")
    assert here.returncode == 0 and "device cpu" in here.stdout and "output (2, 4) cpu" in here.stdout, here.stderr
    on_a_mac = _run(folder, "-c", ON_A_MAC, "run.py")
    assert "Use GPU" in on_a_mac.stdout and on_a_mac.returncode != 0 and "'MPS' backend" in on_a_mac.stderr, \
        on_a_mac.stdout + on_a_mac.stderr[-2000:]
    programs = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--output-format", "json"])
    assert {p["path"]: p["runs_on"] for p in json.loads(programs.stdout)["programs"]}["run.py"] == [
        "cuda", "mps", "xpu", "cpu"]


def test_an_options_flag_of_a_program_mps_cannot_run_keeps_the_cpu_on_a_mac(tmp_path: Path) -> None:
    """The same project whose experiment makes float64 (`.double()`): its flag stays CUDA's (the project holds the
    choice), so a Mac runs it on the CPU instead of putting float64 on MPS."""
    folder = _ported_with("flag_across_modules", tmp_path, "exp/exp_main.py", "y = self.model(x)",
                          "y = self.model(x).double()")
    on_a_mac = _run(folder, "-c", ON_A_MAC, "run.py")
    assert on_a_mac.returncode == 0 and "device cpu" in on_a_mac.stdout, on_a_mac.stdout + on_a_mac.stderr[-2000:]


def test_an_options_flag_also_read_elsewhere_stays_cudas(tmp_path: Path) -> None:
    """The same project where the script also prints the flag: a read the port cannot follow keeps the flag
    CUDA's alone, and what it guards in the other module stays as written (no path off CUDA runs it)."""
    folder = _ported_with("flag_across_modules", tmp_path, "run.py", "exp = Exp_Main(args)",
                          "print(args.use_gpu)\nexp = Exp_Main(args)")
    assert "torch.cuda.is_available() and args.use_gpu" in (folder / "run.py").read_text()
    assert (folder / "exp" / "exp_basic.py").read_text() == \
        (PROJECTS / "flag_across_modules" / "exp" / "exp_basic.py").read_text()
