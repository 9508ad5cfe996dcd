"""`torchport programs`: which programs of a project run where once ported, on a fixture project of several
programs sharing a library (tests/fixtures/projects/mixed)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchport.cli import app
from torchport.codemods.analysis.lacks import blocker
from torchport.codemods.analysis.requirements import OFF_CUDA, requirements

MIXED = Path(__file__).parent / "fixtures" / "projects" / "mixed"


def _programs(folder: Path = MIXED) -> dict[str, dict]:
    """`torchport programs` of ``folder`` as JSON, by path."""
    done = CliRunner().invoke(app, ["programs", str(folder), "--no-cache", "--format", "json"])
    assert done.exit_code == 0, done.output
    return {p["path"]: p for p in json.loads(done.stdout)["programs"]}


def _migrated(folder: Path) -> dict[str, dict]:
    """The JSON report of a dry run of ``folder``, by path."""
    done = CliRunner().invoke(app, ["migrate", str(folder), "--no-cache", "--format", "json"])
    return {f["path"]: f for f in json.loads(done.stdout)["files"]}


def test_each_entry_point_is_a_program_of_its_kind() -> None:
    found = _programs()
    assert {path: p["kind"] for path, p in found.items()} == {
        "fast.py": "script", "gated.py": "script", "sample.py": "script", "train.py": "script",
        "lib/evaluate.py": "console-script",  # named by [project.scripts]
        "tests/test_model.py": "test",
        "lib/unused.py": "library",  # no entry point reaches it
    }


def test_where_each_program_runs_and_why_not() -> None:
    found = _programs()
    assert found["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"] and found["train.py"]["blockers"] == []
    assert found["fast.py"]["runs_on"] == ["cuda"]
    assert found["fast.py"]["blockers"] == [
        {"target": target, "reason": "imports triton (GPU kernels)", "path": "kernels/fused.py", "line": 1,
         "via": "fast.py:5"} for target in OFF_CUDA]  # the entry point's import that leads there
    assert found["gated.py"]["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in found["gated.py"]["blockers"]} == {("gated.py", 7)}
    # float64 numpy arrays made into tensors: MPS lacks float64, so on a Mac it keeps the CPU
    assert found["sample.py"]["runs_on"] == ["cuda", "xpu", "cpu"]
    assert [(b["target"], b["path"], b["line"]) for b in found["sample.py"]["blockers"]] == [
        ("mps", "lib/schedule.py", 8)]


def test_rewrites_are_counted_over_what_a_program_reaches() -> None:
    found = _programs()
    # train.py, lib/model.py and lib/__init__.py, which `from lib.model import Net` runs first
    assert found["train.py"]["rewrites"] == 2 and found["train.py"]["modules"] == 3
    assert found["sample.py"]["rewrites"] == 0  # its device choice is kept CUDA-or-CPU (the float64 schedule)


def test_concise_is_one_line_per_program() -> None:
    done = CliRunner().invoke(app, ["programs", str(MIXED), "--no-cache", "--format", "concise"])
    assert done.exit_code == 0
    lines = done.stdout.splitlines()
    assert len(lines) == 7
    assert "fast.py: script: runs on cuda; not mps, xpu, cpu: imports triton (GPU kernels) (kernels/fused.py:1, " \
           "imported at fast.py:5); 0 rewrite(s)" in lines  # a program that runs only on CUDA is left as written


def test_a_guarded_import_blocks_nothing() -> None:
    source = "try:\n    import apex\nexcept ImportError:\n    apex = None\nimport flash_attn\n"
    assert [(r.reason, r.line) for r in requirements(ast.parse(source), source)] == [
        ("imports flash_attn, a CUDA-only library", 5)]


@pytest.mark.parametrize("statement", [
    "from pointnet2_ops import pointnet2_utils",  # Real3D-AD's M3DM/models.py: CUDAExtension alone
    "from knn_cuda import KNN", "import tinycudann as tcnn", "from simple_knn._C import distCUDA2",
    "from mamba_ssm import Mamba",
    "import cudf", "import cugraph.centrality", "from dask_cuda import LocalCUDACluster",  # RAPIDS (rdf2vecgpu)
    "import flashinfer"])  # FlashGAT's SparseAttention benchmark
def test_an_extension_built_for_cuda_alone_blocks_its_importers(statement: str) -> None:
    source = f"import torch\n{statement}\n"
    assert [r.line for r in requirements(ast.parse(source), source)] == [2]


def test_a_cuda_gate_counts_only_in_the_entry_point() -> None:
    source = "import sys\nimport torch\nif torch.cuda.device_count() < 2:\n    sys.exit(1)\n"
    tree = ast.parse(source)
    assert requirements(tree, source) == []
    assert [r.line for r in requirements(tree, source, entry=True)] == [3]


def test_an_entry_point_that_does_not_parse_runs_nowhere_and_says_where(tmp_path: Path) -> None:
    bad = "import torch\n\nif __name__ == '__main__':\n    x = 1\n        y = torch.zeros(x)\n"
    (tmp_path / "bench.py").write_text(bad)
    program = _programs(tmp_path)["bench.py"]
    assert program["runs_on"] == []
    assert {(b["line"], b["reason"].split(":")[0]) for b in program["blockers"]} == {
        (5, "does not parse (5")}  # CPython's line and message, where no rewrite was tried
    assert "unexpected indent" in program["blockers"][0]["reason"]


def test_standard_input_is_refused() -> None:
    done = CliRunner().invoke(app, ["programs", "-"])
    assert done.exit_code == 2 and "holds no project" in done.output


def test_a_process_group_is_no_blocker() -> None:
    # on a Mac the runtime picks the CPU once a process group exists (gloo carries no MPS tensors)
    source = "import torch.distributed as dist\ndist.init_process_group('gloo')\n"
    assert requirements(ast.parse(source), source) == []


def test_float64_numpy_arrays_block_mps_only_where_they_reach_a_device() -> None:
    table = "import numpy as np\nimport torch\nDTYPES = {6: np.float64}\nitem = torch.from_numpy(a).long()\n"
    assert blocker(table) is None
    moved = table + "x = torch.from_numpy(b).to(device)\n"
    assert blocker(moved) == (3, "float64 numpy arrays made into tensors")
    # cleanrl's copy of stable-baselines3's buffers: a docstring and a dtype test name float64, no array holds it
    cast = ('import numpy as np\nimport torch as th\n\n\ndef cast(dtype):\n'
            '    """Cast `np.float64` to `np.float32`."""\n'
            '    if dtype == np.float64:\n        return np.float32\n    return dtype\n\n\n'
            'def to_torch(array, device):\n    return th.tensor(array, device=device)\n')
    assert blocker(cast) is None
    assert blocker(cast.replace("return np.float32", "return np.float64")) == (
        8, "float64 numpy arrays made into tensors")


@pytest.mark.parametrize(("move", "blocked"), [
    ("sig = sig.cuda()", True), ("sig = sig.to(device)", True), ("sig = sig.to(torch.float32).cuda()", False),
    ("sig = sig.to(device, dtype=torch.float32)", False), ("sig = torch.ones(2).cuda()", False)])
def test_a_float64_array_named_on_its_way_to_the_device_blocks_mps(move: str, blocked: bool) -> None:
    """PyTorch-Wavelet-Toolbox's test: `np.linspace` makes float64, scipy's `chirp` keeps it, `torch.from_numpy`
    makes a float64 tensor of it, and a later statement moves that tensor."""
    source = ("import numpy as np\nimport torch\nfrom scipy import signal\n\n\ndef test_cwt(device):\n"
              "    t = np.linspace(-1, 1, 400, endpoint=False)\n    sig = signal.chirp(t, f0=0, f1=20, t1=1)\n"
              f"    sig = torch.from_numpy(sig)\n    if torch.cuda.is_available():\n        {move}\n")
    assert blocker(source) == ((11, "float64 numpy arrays made into tensors") if blocked else None)


def test_data_moved_where_a_flag_read_from_a_tensor_says_cuda_keeps_the_cpu_or_cuda() -> None:
    """Deep-RL Hands-On's kfac: ``is_cuda = a.is_cuda``, a new tensor on the CPU, ``if is_cuda: a = a.cuda()``."""
    source = ("import torch\n\n\ndef cov(a):\n    is_cuda = a.is_cuda\n    a = torch.ones(a.size(0), 1)\n"
              "    if is_cuda:\n        a = a.cuda()\n    return a\n")
    assert blocker(source) == (7, "data moved only where other data is on CUDA (`.is_cuda`)")


@pytest.mark.parametrize(("tested", "found"), [
    ("next(self.buffers())", None),  # MusicDiffusion's Denoiser: TP024 writes `next(self.buffers()).device.type`
    ("self.first()", (6, "a device chosen CUDA only where other data is on CUDA (`.is_cuda`)")),
])
def test_a_choice_by_where_the_first_weight_is_follows_it(tested: str, found: object) -> None:
    source = ("import torch\n\n\nclass D(torch.nn.Module):\n    def sample(self, n):\n"
              f"        device = 'cuda' if {tested}.is_cuda else 'cpu'\n        return torch.randn(n, device=device)\n")
    assert blocker(source) == found


@pytest.mark.parametrize(("test", "move", "found"), [
    # madgrad's tests: from one CUDA device to another, which off CUDA has nothing to do
    ("y.is_cuda and bias.is_cuda and y.get_device() != bias.get_device()", "y.cuda(bias.get_device())", None),
    ("y.is_cuda and bias.is_cuda", "y.to(bias.device)", None),
    ("bias.is_cuda", "weight.cuda(bias.get_device())",
     (6, "data moved only where other data is on CUDA (`.is_cuda`)")),
    ("weight.is_cuda and bias.is_cuda", "x.cuda(bias.get_device())",
     (6, "data moved only where other data is on CUDA (`.is_cuda`)")),
    # UnOpticalFlow's warp_flow: to the tested data's CUDA device by its index, which TP024 follows anywhere
    ("bias.is_cuda", "y.to(bias.get_device())", None),
])
def test_data_moved_between_cuda_devices_splits_nothing_off_cuda(test: str, move: str, found: object) -> None:
    source = (f"import torch\n\n\ndef fn(weight, bias, x):\n    y = weight.mv(x)\n    if {test}:\n"
              f"        y = {move}\n    return y + bias\n")
    assert blocker(source) == found


@pytest.mark.parametrize(("test", "found"), [
    ("tensor.is_cuda", (7, "a device chosen CUDA only where other data is on CUDA (`.is_cuda`)")),
    ("not tensor.is_cuda", None),  # negated: chosen where data is not on CUDA, to no split
])
def test_a_device_taken_from_data_only_where_it_is_on_cuda_keeps_the_cpu_or_cuda(test: str, found: object) -> None:
    """latent_ode's ``get_device``: the CPU, unless ``tensor.is_cuda``: then ``tensor.get_device()``. On an Intel
    GPU or a Mac new tensors go to the CPU beside data on the accelerator."""
    source = ("import torch\n\n\ndef noise(tensor):\n    device = torch.device('cpu')\n\n"
              f"    if {test}:\n        device = tensor.get_device()\n"
              "    return torch.randn(2, device=device) * tensor\n")
    assert blocker(source) == found


def test_a_flag_read_negated_moves_data_not_on_cuda_and_splits_nothing() -> None:
    """Bayesian-Neural-Networks' ``to_variable``: ``if not v.is_cuda and cuda: v = v.cuda()``."""
    source = ("import torch\n\n\ndef to_variable(var=(), cuda=True):\n    out = []\n    for v in var:\n"
              "        if not v.is_cuda and cuda:\n            v = v.cuda()\n        out.append(v)\n    return out\n")
    assert blocker(source) is None


def test_a_cpu_default_type_wherever_the_device_is_not_cuda_keeps_the_cpu_or_cuda() -> None:
    """tapqir's ``Model.to``: CUDA's default types for "cuda", the CPU's in the last arm, which "mps" and "xpu" reach;
    that reason wins over the float64 beside it (it keeps an Intel GPU off too)."""
    from torchport.codemods.analysis.lacks import blockers

    source = ("import torch\n\n\ndef to(device, dtype='double'):\n    x = torch.zeros(2, dtype=torch.float64).cuda()\n"
              "    if device == 'cuda' and dtype == 'double':\n"
              "        torch.set_default_tensor_type(torch.cuda.DoubleTensor)\n"
              "    elif device == 'cpu' and dtype == 'double':\n"
              "        torch.set_default_tensor_type(torch.DoubleTensor)\n"
              "    else:\n        torch.set_default_tensor_type(torch.FloatTensor)\n")
    assert (11, "a CPU default tensor type set wherever the device is not CUDA") in blockers(source)
    assert blocker(source.replace("torch.FloatTensor)", "torch.cuda.FloatTensor)")) == (5, "float64")


def test_numpy_of_a_tensor_not_on_cuda_keeps_the_cpu_or_cuda() -> None:
    """robomimic's to_numpy: ``if t.is_cuda: t.cpu().numpy(); torch.cuda.synchronize() else: t.numpy()``: an MPS
    or XPU tensor takes the CPU's arm, and `.numpy()` raises there; one that moves to the CPU first does not. Where
    the arm under the test only copies to the host, TP007 ports the test (``t.device.type != "cpu"``): no blocker."""
    source = ("def f(t):\n    if t.is_cuda:\n        torch.cuda.synchronize()\n"
              "        return t.detach().cpu().numpy()\n    else:\n        return t.detach().numpy()\n")
    assert blocker(source) == (6, "`.numpy()` of a tensor where it is not on CUDA (a CPU tensor's alone)")
    assert blocker(source.replace("t.detach().numpy()", "t.detach().cpu().numpy()")) is None
    assert blocker(source.replace("        torch.cuda.synchronize()\n", "")) is None
    # cellseg_models' _to_ndarray: copied to the CPU only where it is on CUDA, then made an array
    copied = ("def f(t):\n    if t.is_cuda:\n        t = t.cpu()\n        torch.cuda.empty_cache()\n\n"
              "    return t.numpy().astype('uint8')\n")
    assert blocker(copied) == (6, "`.numpy()` of a tensor where it is not on CUDA (a CPU tensor's alone)")
    assert blocker(copied.replace("        torch.cuda.empty_cache()\n", "")) is None
    assert blocker(copied.replace("\n\n    return", "\n    t = t.cpu()\n    return")) is None


def test_a_model_shared_with_other_processes_keeps_the_cpu_or_cuda(tmp_path: Path) -> None:
    """Deep-RL Hands-On's A3C: the net is moved, `share_memory()`'d and handed to spawned processes, which
    torch.multiprocessing does for CPU and CUDA storage alone: on a Mac or an Intel GPU the program keeps the CPU."""
    (tmp_path / "a3c.py").write_text(
        "import torch\nimport torch.multiprocessing as mp\n\n\ndef work(net):\n    print(net.weight.sum())\n\n\n"
        "if __name__ == '__main__':\n    net = torch.nn.Linear(2, 2).cuda()\n    net.share_memory()\n"
        "    mp.Process(target=work, args=(net,)).start()\n")
    program = _programs(tmp_path)["a3c.py"]
    assert program["runs_on"] == ["cuda", "cpu"]
    assert {(b["target"], b["line"]) for b in program["blockers"]} == {("mps", 11), ("xpu", 11)}
    assert "torch.multiprocessing does for the CPU and CUDA alone" in program["blockers"][0]["reason"]


@pytest.mark.parametrize(("dtype", "blocked"), [
    ("torch.float64", True), ("th.double", True), ("args.double", False), ("np.float64", False)])
def test_only_torchs_wide_dtypes_reaching_the_device_block_mps(dtype: str, blocked: bool) -> None:
    """Deep-RL Hands-On's ``calc_loss(..., device=device, double=args.double)``: the double-DQN flag is no dtype."""
    source = ("import numpy as np\nimport torch\nimport torch as th\n\n\ndef step(x, device, args):\n"
              f"    return calc_loss(x.to(device), dtype={dtype}, double={dtype})\n")
    assert (blocker(source) is not None) is blocked


@pytest.mark.parametrize(("made", "blocked"), [
    ("np.concatenate([np.zeros((1, 2)), np.ones((1, 3))], axis=1)", True),
    ("np.concatenate([np.zeros((1, 2), dtype=np.float32), np.ones((1, 3))], axis=1)", False),
    ("np.ones((1, 3), dtype=np.float32)", False)])
def test_a_list_of_float64_arrays_made_into_a_tensor_on_the_device_blocks_mps(made: str, blocked: bool) -> None:
    """decision-transformer's ``get_batch``: a list of numpy masks (float64 by default), concatenated, made into a
    tensor and moved without a dtype."""
    source = ("import numpy as np\nimport torch\n\n\ndef get_batch(device):\n    mask = []\n"
              f"    for _ in range(4):\n        mask.append({made})\n"
              "    mask = torch.from_numpy(np.concatenate(mask, axis=0)).to(device=device)\n    return mask\n")
    assert blocker(source) == ((9, "float64 numpy arrays made into tensors") if blocked else None)


def test_rewards_a_gymnasium_environment_gives_are_float64_where_they_reach_a_device() -> None:
    """cleanrl's PPO: ``torch.tensor(reward).to(device)`` of a vector environment's rewards (float64 arrays)."""
    ppo = ("import gymnasium as gym\nimport torch\n\nenvs = gym.vector.SyncVectorEnv([])\n"
           "obs, reward, terminations, truncations, infos = envs.step(action)\n"
           "rewards = torch.tensor(reward).to(device).view(-1)\n")
    assert blocker(ppo) == (6, "float64 numpy arrays made into tensors")
    assert blocker(ppo.replace("import gymnasium as gym", "import myenvs as gym")) is None  # not known to be float64
    assert blocker(ppo.replace("torch.tensor(reward)", "torch.tensor(reward, dtype=torch.float32)")) is None


def test_what_mps_lacks_in_a_branch_for_some_data_blocks_nothing() -> None:
    """skorch's ``to_tensor`` makes a sparse tensor only for sparse input: that comes with the caller's data."""
    dispatch = ("import torch\nfrom scipy import sparse\n\n\ndef to_tensor(X, device):\n"
                "    if sparse.issparse(X):\n        return torch.sparse_coo_tensor(X.nonzero(), X.data).to(device)\n"
                "    return torch.as_tensor(X, device=device)\n")
    assert blocker(dispatch) is None
    always = dispatch.replace("    if sparse.issparse(X):\n        return", "    return")
    assert blocker(always) == (6, "sparse tensors")
    # microxcaling's quantizer: `A_is_sparse = A.is_sparse`, then `if A_is_sparse:` is the same branch on data
    aliased = ("import torch\n\n\ndef quantize(A):\n    A_is_sparse = A.is_sparse\n    out = A.round()\n"
               "    if A_is_sparse:\n        out = torch.sparse_coo_tensor(A.indices(), out, A.size())\n"
               "    return out\n")
    assert blocker(aliased) is None
    assert blocker(aliased.replace("A_is_sparse = A.is_sparse", "A_is_sparse = True")) == (8, "sparse tensors")


def test_migrate_leaves_whole_what_only_cuda_only_programs_reach(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["migrate", str(MIXED), "--no-cache", "--format", "json"])
    assert done.exit_code == 0, done.output
    files = {f["path"]: f for f in json.loads(done.stdout)["files"]}  # relative to the folder given
    fast = files["fast.py"]
    assert not fast["changed"] and fast["rewrites"] == []
    assert [(d["code"], d["line"]) for d in fast["diagnostics"]] == [("TP110", 9)]
    message = fast["diagnostics"][0]["message"]
    assert message.startswith("1 rewrite(s) not made: [R07 cuda-only-library] only programs that run only on CUDA "
                              "reach this file (")
    assert "fast.py: imports triton (GPU kernels) (" in message and "kernels/fused.py:1, imported at " in message
    # the portable programs and the library they share are ported
    assert files["train.py"]["changed"] and files["lib/unused.py"]["changed"]


def test_the_cheap_prefilter_sees_every_cuda_only_requirement() -> None:
    from torchport.codemods.analysis.requirements import (
        CUDA_ONLY_APIS,
        CUDA_ONLY_MODULES,
        KERNEL_MODULES,
        cuda_only_import,
    )
    from torchport.model.torch_facts import CUDA_LIBRARIES, CUDA_LIBRARY_OPTIONS
    from torchport.pipeline.programs import CUDA_ONLY_TEXT

    # a library whose import works anywhere (pynvml) needs CUDA where its calls run: its name is the text
    imports = [f"import {n}" for n in (*CUDA_ONLY_MODULES, *KERNEL_MODULES, "fused_adam_cuda")
               if n not in CUDA_LIBRARIES or CUDA_LIBRARIES[n].loads]
    uses = ["load_inline", "cpp_extension", 'importlib.import_module("fused_adam_cuda")', "pynvml.nvmlInit()",
            *(f"from_pretrained(name, {option}={value!r})" for option, value in CUDA_LIBRARY_OPTIONS),
            *(f"torch.cuda.{n.rsplit('.', 1)[-1]}" for code in ("TP201", "TP202") for n in CUDA_ONLY_APIS[code])]
    assert [text for text in (*imports, *uses) if not CUDA_ONLY_TEXT.search(text)] == []
    assert all(cuda_only_import(text.split()[1]) for text in imports)  # what the text finds, the analysis names


@pytest.mark.parametrize(("build", "cuda"), [
    ("load('ops', ['ops.cpp', 'kernel.cu'])", True),
    ("load('ops', [os.path.join(here, 'ops.cpp'), os.path.join(here, 'ops.cc')])", False),  # a compiler, no GPU
    ("load('ops', sources)", None),  # cannot tell: taken as CUDA's
    ("load('ops', ['ops.cpp'], with_cuda=True)", True),
    ("load_inline('ops', cpp_sources=src)", False),
    ("load_inline('ops', src, cuda_src)", True),
])
def test_an_extension_build_needs_cuda_only_with_cuda_sources(build: str, cuda: bool | None) -> None:
    """semseg's psamask: a CPU build from C++ sources needs no GPU, but its ops take CPU tensors alone (MPS lacks
    them); the CUDA build under `if torch.cuda.is_available():` is skipped off CUDA already."""
    from torchport.codemods.analysis.requirements import extension_builds

    source = f"import os\nimport torch\nfrom torch.utils.cpp_extension import load, load_inline\n\nops = {build}\n"
    assert [found for _, found in extension_builds(ast.parse(source))] == [cuda]
    needs = requirements(ast.parse(source), source)
    assert bool(needs) is (cuda is not False)
    assert (blocker(source) == (5, "a C++ extension built for the CPU alone")) is (cuda is False)
    guarded = "import torch\nfrom torch.utils.cpp_extension import load\n\nif torch.cuda.is_available():\n" \
              "    gpu = load('g', ['g.cu'])\n"
    assert requirements(ast.parse(guarded), guarded) == []


def test_the_program_model_names_the_targets_as_the_analysis_does() -> None:
    from torchport.pipeline import programs

    assert programs.OFF_CUDA == OFF_CUDA  # a copy, so that a warm run imports no analysis


def test_migrate_says_where_each_program_it_changes_runs() -> None:
    done = CliRunner().invoke(app, ["migrate", str(MIXED), "--no-cache"])
    assert done.exit_code == 0, done.output
    lines = done.stderr.splitlines() if done.stderr_bytes is not None else done.output.splitlines()
    start = lines.index("programs changed: 3")
    assert lines[start + 1:start + 4] == [
        "  lib/evaluate.py (console-script): runs on cuda, mps, xpu, cpu; 1 rewrite(s)",
        "  tests/test_model.py (test): runs on cuda, mps, xpu, cpu; 2 rewrite(s)",
        "  train.py (script): runs on cuda, mps, xpu, cpu; 2 rewrite(s)",
    ]


def test_a_program_that_calls_a_projects_cuda_gate_runs_only_on_cuda(tmp_path: Path) -> None:
    """dino's `utils.init_distributed_mode(args)` exits without a GPU: every program that calls it runs only on CUDA
    and is left whole; recognised from what the gate does, not from its name."""
    (tmp_path / "helpers.py").write_text(
        "import sys\nimport torch\n\n\ndef setup(args):\n    if torch.cuda.is_available():\n"
        "        args.gpu = 0\n    else:\n        print('no GPU')\n        sys.exit(1)\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport helpers\n\n\ndef main(args):\n    helpers.setup(args)\n"
        "    return torch.ones(2).cuda()\n\n\nif __name__ == '__main__':\n    main(None)\n")
    train = _programs(tmp_path)["train.py"]
    assert train["runs_on"] == ["cuda"]
    assert {k: train["blockers"][0][k] for k in ("reason", "path", "line")} == {  # where it exits, the call named
        "reason": "stops unless CUDA is there (`helpers.setup`, called at train.py:6)",
        "path": "helpers.py", "line": 10}
    files = _migrated(tmp_path)
    assert not files["train.py"]["changed"]
    assert "[R03 cuda-gate] `main` calls helpers.setup(), which stops or fails without CUDA" in \
        files["train.py"]["diagnostics"][0]["message"]  # the function that calls it, as the rules see it


def test_kinds_follow_what_a_module_does(tmp_path: Path) -> None:
    """A deprecated re-export that only warns does no work; torch.hub's hubconf.py is loaded into its caller (a
    library); an imported `engine_test.py` is an engine, not a test module."""
    (tmp_path / "shim.py").write_text("import warnings\nfrom impl import *  # noqa\n"
                                      "warnings.warn('moved to impl', DeprecationWarning)\n")
    (tmp_path / "impl.py").write_text("import torch\n\n\ndef build():\n    return torch.ones(2).cuda()\n")
    (tmp_path / "hubconf.py").write_text("dependencies = ['torch']\nfrom impl import build\n")
    (tmp_path / "engine_test.py").write_text("import torch\n\n\ndef test_loop(model):\n    return model.cuda()\n")
    (tmp_path / "main_test.py").write_text("from engine_test import test_loop\n\nif __name__ == '__main__':\n"
                                           "    test_loop(None)\n")
    # a test module another takes a helper from (opacus's multigpu_gradcheck_test.py) stays a test module
    (tmp_path / "grad_test.py").write_text("import torch\n\n\ndef setup():\n    return torch.ones(1)\n\n\n"
                                           "def test_grad():\n    assert setup().cuda().sum() == 1\n")
    (tmp_path / "precision_test.py").write_text("from grad_test import setup\n\n\ndef test_half():\n"
                                                "    assert setup().half().sum() == 1\n")
    kinds = {path: p["kind"] for path, p in _programs(tmp_path).items()}
    assert kinds == {"hubconf.py": "library", "main_test.py": "script", "grad_test.py": "test",
                     "precision_test.py": "test"}


def test_a_script_that_exits_unless_another_modules_predicate_answers_runs_only_on_cuda(tmp_path: Path) -> None:
    """pytorch/examples' tensor parallel scripts: `if not verify_min_gpu_count(min_gpus=2): sys.exit()`, the
    predicate defined in log_utils.py; recognised from what it returns, not from its name."""
    (tmp_path / "log_utils.py").write_text(
        "import torch\n\n\ndef zebra(n=2):\n    ok = torch.cuda.is_available()\n"
        "    return ok and torch.cuda.device_count() >= n\n")
    (tmp_path / "tp_example.py").write_text(
        "import sys\nimport torch\nfrom log_utils import zebra\n\nif not zebra(n=4):\n    sys.exit()\n"
        "x = torch.ones(2).cuda()\nprint(x)\n")
    script = _programs(tmp_path)["tp_example.py"]
    assert script["runs_on"] == ["cuda"] and script["blockers"][0]["line"] == 5
    file = _migrated(tmp_path)["tp_example.py"]
    assert not file["changed"] and "[R06 cuda-only-program]" in file["diagnostics"][0]["message"]


def test_every_blocker_is_shown_whole_and_a_notebooks_by_cell(tmp_path: Path) -> None:
    import nbformat
    from nbformat import v4

    (tmp_path / "main.py").write_text("import torch\nimport a\nimport b\n\nif __name__ == '__main__':\n"
                                      "    x = torch.ones(2).cuda() + a.f()\n")
    (tmp_path / "a.py").write_text("import torch\n\n\ndef f():\n    return torch.ones(2, dtype=torch.float64).cuda()\n")
    (tmp_path / "b.py").write_text("import triton\n")
    nb = v4.new_notebook()
    nb.cells = [v4.new_markdown_cell("# CUDA"), v4.new_code_cell("import torch\nimport triton"),
                v4.new_code_cell("x = torch.zeros(2).cuda()")]
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"c{index}"
    nbformat.write(nb, tmp_path / "nb.ipynb")
    concise = CliRunner().invoke(app, ["programs", str(tmp_path), "--no-cache"]).stdout.splitlines()
    assert concise == [  # both of main.py's MPS blockers, not the first alone
        "main.py: script: runs on cuda; not mps: uses float64, which MPS lacks: on a Mac it runs on the CPU (a.py:5, "
        "imported at main.py:2); not mps, xpu, cpu: imports triton (GPU kernels) (b.py:1, imported at main.py:3); "
        "0 rewrite(s)",
        "nb.ipynb: notebook: runs on cuda; not mps, xpu, cpu: imports triton (GPU kernels) (nb.ipynb:cell_2:2); "
        "0 rewrite(s)"]
    table = CliRunner().invoke(app, ["programs", str(tmp_path), "--no-cache", "--format", "full"]).stdout
    assert len(table.splitlines()) == 2 + 2 + 1  # piped, nothing folded: header, rule, main.py's two lines, nb's one
    for reason in ("mps: uses float64, which MPS lacks: on a Mac it runs on the CPU (a.py:5, imported at main.py:2)",
                   "mps, xpu, cpu: imports triton (GPU kernels) (b.py:1, imported at main.py:3)",
                   "mps, xpu, cpu: imports triton (GPU kernels) (nb.ipynb:cell_2:2)"):
        assert reason in table
    found = _programs(tmp_path)
    assert {(b["cell"], b["line"]) for b in found["nb.ipynb"]["blockers"]} == {(2, 2)}
    assert all("cell" not in b for b in found["main.py"]["blockers"])


def test_a_unittest_class_gated_by_a_projects_skip_decorator_is_a_cuda_only_test(tmp_path: Path) -> None:
    """tnt's `skip_if_not_gpu = unittest.skipUnless(torch.cuda.is_available(), ...)` in a helper module: a test
    file whose tests it skips is a program (a `TestCase` whose name does not start with "test") that runs only
    on CUDA, the gate named where it skips."""
    (tmp_path / "helpers.py").write_text(
        "import unittest\nimport torch\n\nskip_if_not_gpu = unittest.skipUnless(torch.cuda.is_available(), 'GPU')\n")
    (tmp_path / "test_timer_gpu.py").write_text(
        "import unittest\nimport torch\nfrom helpers import skip_if_not_gpu\n\n\n"
        "class TimerGPUTest(unittest.TestCase):\n    @skip_if_not_gpu\n    def test_sync(self):\n"
        "        torch.ones(2, device='cuda')\n        torch.cuda.synchronize()\n")
    test = _programs(tmp_path)["test_timer_gpu.py"]
    assert test["runs_on"] == ["cuda"]
    assert [(b["target"], b["line"]) for b in test["blockers"]] == [("mps", 7), ("xpu", 7), ("cpu", 7)]
    assert "`skip_if_not_gpu` skips it without CUDA" in test["blockers"][0]["reason"]


# PatchTST's shape: the entry point sets `args.use_gpu` from CUDA, another module picks its device by it
_PATCHTST = {
    "run.py": "import argparse\nimport torch\nfrom exp import Exp\n\nparser = argparse.ArgumentParser()\n"
              "parser.add_argument('--use_gpu', type=bool, default=True)\nargs = parser.parse_args()\n"
              "args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False\n"
              "print(Exp(args).train())\n",
    "exp.py": "import torch\nfrom layers import pick\n\n\nclass Exp:\n    def __init__(self, args):\n"
              "        self.args = args\n        if self.args.use_gpu:\n"
              "            self.device = torch.device('cuda:0')\n        else:\n"
              "            self.device = torch.device('cpu')\n\n    def train(self):\n"
              "        return pick(torch.ones(4, device=self.device))\n",
    "layers.py": "import torch\n\n\ndef pick(x):\n    index = torch.arange(4).cuda()\n"
                 "    return torch.gather(x, 0, index)\n",
}


def test_a_flag_the_entry_point_sets_from_cuda_moves_with_the_device_it_guards_in_another_module(
        tmp_path: Path) -> None:
    """PatchTST: `args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False` in the script,
    read as `self.args.use_gpu` in another module around a CUDA device: the check and the device are ported
    together, with the module that moves data to the runtime's device, and the program runs everywhere."""
    _write(tmp_path, _PATCHTST)
    files = _migrated(tmp_path)
    assert files["exp.py"]["changed"] and files["layers.py"]["changed"] and files["run.py"]["changed"]
    run = _programs(tmp_path)["run.py"]
    assert run["runs_on"] == ["cuda", "mps", "xpu", "cpu"] and not run["blockers"]


def test_a_flag_the_entry_point_also_prints_decides_other_modules_and_their_choice_is_kept(tmp_path: Path) -> None:
    """The same where the script prints the flag too, a read no port follows: false without CUDA, the CUDA device
    behind it is left as written (dead off CUDA), and a module that moves data to the runtime's device beside that
    kept CUDA-or-CPU choice would split the program's tensors on a Mac, so the program keeps the CPU there."""
    printed = _PATCHTST["run.py"].replace("print(Exp", "print(args.use_gpu)\nprint(Exp")
    _write(tmp_path, {**_PATCHTST, "run.py": printed})
    files = _migrated(tmp_path)
    assert not files["exp.py"]["changed"]
    assert files["layers.py"]["changed"]
    run = _programs(tmp_path)["run.py"]
    assert run["runs_on"] == ["cuda", "cpu"]  # on an Intel GPU as on a Mac: `tp.keep_cuda_or_cpu`
    assert [(b["target"], b["path"], b["line"]) for b in run["blockers"]] == [
        ("mps", "exp.py", 9), ("xpu", "exp.py", 9)]


def test_a_script_another_script_imports_keeps_the_cpu_on_a_mac_for_both(tmp_path: Path) -> None:
    """SGC's TextSGC: `train.py` parses its command line at import and keeps its `args.cuda` choice beside data it
    moves; `tuning.py` imports it. The call goes into train.py (it runs for both programs), both programs say so,
    and the place is shown once from the root, though both live in a folder."""
    folder = tmp_path / "downstream"
    folder.mkdir()
    (folder / "train.py").write_text(
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--no-cuda', action='store_true')\nargs = parser.parse_args()\n"
        "args.cuda = not args.no_cuda and torch.cuda.is_available()\n\n\ndef train(model, x):\n"
        "    return model(x.cuda())\n\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(2, 2)\n"
        "    if args.cuda: model.cuda()\n    print(train(model, torch.ones(2)))\n")
    (folder / "tuning.py").write_text(
        "import torch\nfrom train import train\n\nif __name__ == '__main__':\n"
        "    print(train(torch.nn.Linear(2, 2), torch.ones(2)))\n")
    files = _migrated(tmp_path)
    assert "TP019" in {r["code"] for r in files["downstream/train.py"]["rewrites"]}  # tp.keep_cuda_or_cpu(...)
    assert not any(r["code"] == "TP019" for r in files["downstream/tuning.py"]["rewrites"])
    found = _programs(tmp_path)
    for entry in ("downstream/train.py", "downstream/tuning.py"):
        assert found[entry]["runs_on"] == ["cuda", "cpu"], entry  # an Intel GPU keeps the CPU too
        assert [(b["target"], b["path"], b["line"]) for b in found[entry]["blockers"]] == [
            ("mps", "downstream/train.py", 16), ("xpu", "downstream/train.py", 16)], entry


def test_an_unchanged_script_that_calls_a_function_stuck_without_cuda_runs_only_on_cuda(tmp_path: Path) -> None:
    """PatchTST's pretraining script calls `set_device()` at import, which subscripts what
    `get_available_cuda()` returns: None without CUDA. The script itself has nothing to port, yet it runs only on
    CUDA, and a script that has something to port after that call is left whole."""
    (tmp_path / "basics.py").write_text(
        "import torch\n\n\ndef get_available_cuda():\n    if not torch.cuda.is_available():\n        return\n"
        "    return list(range(torch.cuda.device_count()))\n\n\ndef set_device():\n"
        "    device_ids = get_available_cuda()\n    torch.cuda.set_device(device_ids[0])\n")
    (tmp_path / "pretrain.py").write_text("import torch\nfrom basics import set_device\n\nset_device()\n"
                                          "print(torch.ones(2).sum())\n")
    (tmp_path / "finetune.py").write_text("import torch\nfrom basics import set_device\n\nset_device()\n"
                                          "print(torch.ones(2, device='cuda').sum())\n")
    found = _programs(tmp_path)
    assert found["pretrain.py"]["runs_on"] == ["cuda"] and found["finetune.py"]["runs_on"] == ["cuda"]
    assert [b["line"] for b in found["pretrain.py"]["blockers"]] == [4, 4, 4]
    assert not _migrated(tmp_path)["finetune.py"]["changed"]


@pytest.mark.parametrize(("source", "kept"), [
    ('if torch.cuda.is_available():\n    device = torch.device("cuda:0")\n', True),
    ("if args.use_gpu:\n    x = x.cuda()\n", True),  # a flag every assignment sets from a CUDA query
    ("y = torch.ones(2, device='cuda') if torch.cuda.is_available() else None\n", True),
    ("x = x.cuda()\n", False),  # no choice: a path that still fails off CUDA
    ('def f(device):\n    """device -- torch.device(\'cuda:0\') if gpu_ids else cpu"""\n', False),  # CUT's docstring
    ('if torch.cuda.is_available():\n    device = tp.device("cuda:0")\n', False),  # pfrl's agents, ported
])
def test_a_device_choice_kept_as_written_is_told_from_a_port_and_from_a_failing_path(source: str, kept: bool) -> None:
    from torchport.pipeline.programs import _kept_placement
    from torchport.results import FileResult

    result = FileResult(Path("m.py"), "m.py", original=source, migrated=source)
    assert (_kept_placement(result, {"use_gpu"}) is not None) is kept


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _applied(root: Path, files: dict[str, str]) -> Path:
    """``root`` with ``files`` written and then migrated in place (``--apply``)."""
    _write(root, files)
    done = CliRunner().invoke(app, ["migrate", str(root), "--no-cache", "--apply"])
    assert done.exit_code == 0, done.output
    return root


def test_an_extension_built_where_its_prebuilt_import_fails_needs_cuda_on_every_arm(tmp_path: Path) -> None:
    """torch-ngp: ``try: import _raymarching`` / ``except ImportError: from .backend import _backend`` (which builds
    the CUDA extension), reached from every arm of the script's ``if opt.ff: ... else: ...`` imports."""
    _write(tmp_path, {
        "raymarching/__init__.py": "from .raymarching import march\n",
        "raymarching/raymarching.py": "try:\n    import _raymarching as _backend\nexcept ImportError:\n"
                                      "    from .backend import _backend\n\n\ndef march(x):\n    return x\n",
        "raymarching/backend.py": "from torch.utils.cpp_extension import load\n\n"
                                  "_backend = load(name='_raymarching', sources=['raymarching.cu'])\n",
        "nerf/network.py": "import raymarching\n",
        "nerf/network_ff.py": "import raymarching\n",
        "main.py": "import argparse\n\nimport torch\n\nif __name__ == '__main__':\n"
                   "    opt = argparse.ArgumentParser().parse_args()\n    if opt.ff:\n"
                   "        from nerf.network_ff import Net\n    else:\n        from nerf.network import Net\n"
                   "    x = torch.ones(2).cuda()\n",
    })
    main = _programs(tmp_path)["main.py"]
    assert main["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in main["blockers"]} == {("raymarching/backend.py", 3)}
    (tmp_path / "nerf/network_ff.py").write_text("import torch\n")  # one arm runs without it: no way to know
    assert "cpu" in _programs(tmp_path)["main.py"]["runs_on"]
    # that program may reach the module, but the module itself needs CUDA whenever it is imported: left whole
    (tmp_path / "raymarching/raymarching.py").write_text(
        (tmp_path / "raymarching/raymarching.py").read_text().replace("return x", "return x.cuda()"))
    ported = _migrated(tmp_path)
    assert not ported["raymarching/raymarching.py"]["changed"]
    message = ported["raymarching/raymarching.py"]["diagnostics"][0]["message"]
    assert "it needs CUDA whenever it is imported (builds a CUDA extension, " in message
    assert "raymarching/backend.py:3); it is left as written" in message
    assert ported["main.py"]["changed"]


def test_a_cuda_branch_of_a_chain_that_picks_mps_first_keeps_no_program_off_mps(tmp_path: Path) -> None:
    """accelerate's ``default_device``: ``if is_mps_available(): ... elif torch.cuda.is_available(): return
    torch.device("cuda")``: a choice among several backends, not a CUDA-or-CPU one kept beside ported moves."""
    _write(tmp_path, {
        "state.py": "import torch\n\n\ndef is_mps_available():\n    return torch.backends.mps.is_available()\n\n\n"
                    "def default_device():\n    if is_mps_available():\n        return torch.device('mps')\n"
                    "    elif torch.cuda.is_available():\n        return torch.device('cuda')\n"
                    "    return torch.device('cpu')\n",
        "train.py": "import torch\n\nfrom state import default_device\n\nif __name__ == '__main__':\n"
                    "    device = default_device()\n    x = torch.ones(2).cuda()\n",
    })
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


@pytest.mark.parametrize(("otherwise", "split"), [
    ("else:\n    args.device = 'cpu'\n", True),  # off CUDA the model stays on the CPU, the trainer moves to MPS
    ("", False),
])
def test_a_choice_kept_cpu_in_one_module_splits_data_another_moves(tmp_path: Path, otherwise: str,
                                                                   split: bool) -> None:
    """AGCRN: Run.py keeps `if torch.cuda.is_available(): ... else: args.device = 'cpu'` (its model goes to
    args.device) while the trainer's `output.cuda()` goes to the runtime's device: on a Mac the program keeps the
    CPU, or model and output would be on two devices."""
    _write(tmp_path, {
        "trainer.py": "import torch\n\n\ndef step(model, x, label):\n    return (model(x).cuda() - label).sum()\n",
        "run.py": "import argparse\n\nimport torch\n\nfrom trainer import step\n\nparser = argparse.ArgumentParser()\n"
                  "parser.add_argument('--device', default='cuda:0')\nargs = parser.parse_args()\n"
                  f"if torch.cuda.is_available():\n    torch.cuda.set_device(int(args.device[5]))\n{otherwise}"
                  "model = torch.nn.Linear(2, 2).to(args.device)\nprint(step(model, torch.ones(2), 1))\n",
    })
    assert ("mps" not in _programs(tmp_path)["run.py"]["runs_on"]) is split


def test_a_move_in_a_function_the_program_never_names_splits_nothing(tmp_path: Path) -> None:
    """Wav2Lip's wav2lip_train.py imports the discriminator module whose `perceptual_forward` moves data to the
    runtime's device, but only hq_wav2lip_train.py calls it: its CUDA-or-CPU choice splits nothing."""
    choice = ("import torch\n\nfrom disc import {name}\n\nuse_cuda = torch.cuda.is_available()\n"
              "print('use_cuda: {{}}'.format(use_cuda))\ndevice = torch.device('cuda' if use_cuda else 'cpu')\n"
              "model = torch.nn.Linear(2, 2).to(device)\nprint({name}(model(torch.ones(2))))\n")
    _write(tmp_path, {
        "disc.py": "import torch\n\n\ndef perceptual_forward(x):\n    return x.cuda()\n\n\n"
                   "def plain(x):\n    return x\n\n\nclass Reader:\n    def cuda(self):\n"
                   "        self.net = torch.nn.Linear(2, 2).cuda()\n",
        "train.py": choice.format(name="plain"),
        "hq_train.py": choice.format(name="perceptual_forward"),
        # DrQA's predict.py: `if args.cuda: predictor.cuda()`; off CUDA the port calls no `cuda` method
        "predict.py": choice.format(name="plain") + "reader = Reader()\nif use_cuda:\n    reader.cuda()\n",
    })
    (tmp_path / "predict.py").write_text((tmp_path / "predict.py").read_text().replace(
        "from disc import plain", "from disc import Reader, plain"))
    found = _programs(tmp_path)
    assert "mps" not in found["hq_train.py"]["runs_on"]
    assert found["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert found["predict.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


@pytest.mark.parametrize(("name", "test", "gets_it"), [
    ("test_MSMT.py", "", True),  # Person_reID: an evaluation script named like a test, none of its own
    ("test_model.py", "\n\ndef test_it():\n    assert True\n", False),  # pytest runs it with other modules
    # FairMOT's test_det.py: its `__main__` block calls its own `test_det(opt, ...)`, a script pytest never runs
    ("test_det.py", "\n\ndef test_det(opt):\n    return opt\n\n\nif __name__ == '__main__':\n    test_det(1)\n", True),
])
def test_a_script_named_like_a_test_gets_avoid_mps_unless_it_has_tests(tmp_path: Path, name: str, test: str,
                                                                       gets_it: bool) -> None:
    _write(tmp_path, {
        "model.py": "import torch\n\n\ndef features(x):\n    return x.cuda().sum()\n",
        name: "import torch\n\nfrom model import features\n\nuse_gpu = torch.cuda.is_available()\n"
              "print('gpu:', use_gpu)\n"  # a flag read as a value: it stays CUDA's, and so does the choice
              "net = torch.nn.Linear(2, 2)\nif use_gpu:\n    net = net.cuda()\n"
              f"if __name__ == '__main__':\n    print(features(net(torch.ones(2))))\n{test}",
    })
    rewrites = {r["code"] for r in _migrated(tmp_path)[name]["rewrites"]}
    assert ("TP019" in rewrites) is gets_it


def test_a_cuda_named_module_of_the_project_is_no_compiled_extension(tmp_path: Path) -> None:
    """torchquad's `utils/enable_cuda.py` is Python: its `*_cuda` name is what a CUDAExtension gets, but a module of
    the project with that name is no compiled extension. `pointnet2_cuda`, which no file of the project is, is."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "enable_cuda.py").write_text("def enable_cuda():\n    return None\n")
    (tmp_path / "test_utils.py").write_text("from pkg.enable_cuda import enable_cuda\n\n\ndef test_it():\n"
                                            "    enable_cuda()\n")
    (tmp_path / "train.py").write_text("import pointnet2_cuda\n\nif __name__ == '__main__':\n    print(1)\n")
    found = _programs(tmp_path)
    assert found["test_utils.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert found["train.py"]["runs_on"] == ["cuda"]
    assert found["train.py"]["blockers"][0]["reason"] == "imports pointnet2_cuda, a compiled CUDA extension"


@pytest.mark.parametrize(("build", "cuda_only"), [
    ("CUDAExtension('lie_backends', ['ops.cpp', 'ops.cu'])", True),
    ("CUDAExtension(name='lie_backends', sources=['ops.cu'])", True),
    ("Extension('lie_backends', ['kernel.cu', 'ops.pyx'])", True),  # human-pose-estimation's gpu_nms
    ("CppExtension('lie_backends', ['ops.cpp'])", False),
    ("Extension('lie_backends', ['ops.pyx'])", False),
])
def test_an_extension_the_project_builds_for_cuda_alone_needs_cuda(tmp_path: Path, build: str, cuda_only: bool) -> None:
    """lietorch's setup.py builds `lietorch_backends` with CUDAExtension and nothing else: without nvcc it does not
    build, so every program importing it needs CUDA and the modules only those reach are left as written. Built
    with CppExtension, or from no `.cu` source, it builds for the CPU."""
    _write(tmp_path, {
        "setup.py": "from setuptools import Extension, setup\nfrom torch.utils.cpp_extension import BuildExtension, "
                    f"CppExtension, CUDAExtension\n\nsetup(name='lie', ext_modules=[{build}],\n"
                    "      cmdclass={'build_ext': BuildExtension})\n",
        "lie/__init__.py": "from .ops import exp\n",
        "lie/ops.py": "import lie_backends\n\n\ndef exp(x):\n    return lie_backends.exp(x)\n",
        "main.py": "import torch\n\nfrom lie import exp\n\nif __name__ == '__main__':\n"
                   "    print(exp(torch.ones(2).cuda()))\n",
    })
    main = _programs(tmp_path)["main.py"]
    assert (main["runs_on"] == ["cuda"]) is cuda_only
    assert any(b["reason"] == "imports lie_backends, an extension the project builds for CUDA alone (nvcc)"
               and (b["path"], b["line"]) == ("lie/ops.py", 1) for b in main["blockers"]) is cuda_only
    assert _migrated(tmp_path)["main.py"]["changed"] is not cuda_only


@pytest.mark.parametrize("given", ["'net_msg'", "args.net"])
def test_a_module_imported_by_a_known_name_is_part_of_the_program(tmp_path: Path, given: str) -> None:
    """Pointnet2: `importlib.import_module(args.net)`, `--net` defaulting to 'net_msg', whose model imports the
    compiled extension: the program needs CUDA, and its blocker is where the module imports it."""
    (tmp_path / "net_msg.py").write_text("import pointnet2_cuda\n\n\ndef get_model():\n    return None\n")
    (tmp_path / "train.py").write_text(
        "import argparse\nimport importlib\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--net', type=str, default='net_msg')\nargs = parser.parse_args()\n\n"
        f"if __name__ == '__main__':\n    MODEL = importlib.import_module({given})\n    model = MODEL.get_model()\n")
    found = _programs(tmp_path)
    assert found["train.py"]["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"], b.get("via")) for b in found["train.py"]["blockers"]} == {
        ("net_msg.py", 1, "train.py:9")}


def test_a_blocker_shows_each_import_that_leads_to_it(tmp_path: Path) -> None:
    """pointMLP: main.py imports `models`, whose `__init__` imports `pointmlp`, which imports the CUDA-only
    extension: the report names every hop, so a maintainer finds the project's own line that needs CUDA."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("from .pointmlp import Net\n")
    (tmp_path / "models" / "pointmlp.py").write_text("import torch\n\nimport triton\n\n\nclass Net:\n    pass\n")
    (tmp_path / "main.py").write_text("import torch\nimport models\n\nif __name__ == '__main__':\n"
                                      "    print(models.Net(), torch.ones(1).cuda())\n")
    train = _programs(tmp_path)["main.py"]
    assert train["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"], b["via"], tuple(b["chain"])) for b in train["blockers"]} == {
        ("models/pointmlp.py", 3, "main.py:2", ("main.py:2", "models/__init__.py:1"))}
    done = CliRunner().invoke(app, ["programs", str(tmp_path), "--no-cache", "--format", "concise"])
    assert "(models/pointmlp.py:3, imported at main.py:2 → models/__init__.py:1)" in done.stdout


def test_what_a_test_function_names_runs(tmp_path: Path) -> None:
    """piq's test_fid.py names `FID` only inside its tests, which pytest runs: the float64 in `FID` blocks MPS."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .fid import FID\n")
    (tmp_path / "pkg" / "fid.py").write_text("import torch\n\n\nclass FID:\n    def __call__(self, x):\n"
                                             "        return x.to(dtype=torch.float64).mean()\n")
    (tmp_path / "test_fid.py").write_text("import torch\nfrom pkg import FID\n\n\ndef test_fid():\n"
                                          "    assert FID()(torch.ones(2).cuda()) == 1\n")
    found = _programs(tmp_path)
    assert found["test_fid.py"]["runs_on"] == ["cuda", "xpu", "cpu"]
    assert [(b["path"], b["line"]) for b in found["test_fid.py"]["blockers"]] == [("pkg/fid.py", 6)]


@pytest.mark.parametrize(("lookup", "blocked"), [
    ("models.__dict__[args.arch]", True),  # the ImageNet example's lookup: any model of the module may run
    ("getattr(models, args.arch)", True),
    ("vars(models)[args.arch]", True),
    ("models.small", False),  # only `small` runs: its float64 neighbour does not
])
def test_a_module_looked_up_by_a_computed_name_may_run_any_of_its_names(tmp_path: Path, lookup: str,
                                                                         blocked: bool) -> None:
    """mar's `mar.__dict__[args.model](...)`: whichever model the option names is built; one of them makes a
    float64 schedule on the device, so on a Mac the program keeps the CPU."""
    (tmp_path / "models.py").write_text(
        "import numpy as np\nimport torch\n\n\ndef small():\n    return torch.nn.Linear(2, 2)\n\n\n"
        "def diffusion(t):\n    betas = np.linspace(0, 1, 10, dtype=np.float64)\n"
        "    return torch.from_numpy(betas).to(device=t.device)[t].float()\n")
    (tmp_path / "main.py").write_text(
        "import argparse\n\nimport torch\n\nimport models\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--arch', default='small')\nargs = parser.parse_args()\n"
        f"model = {lookup}()\nmodel.cuda()\n")
    main = _programs(tmp_path)["main.py"]
    assert main["runs_on"] == (["cuda", "xpu", "cpu"] if blocked else ["cuda", "mps", "xpu", "cpu"])


@pytest.mark.parametrize(("check", "blocked"), [
    ("if 'cpu' not in device and 'cuda' not in device:\n            raise ValueError", True),  # face_alignment
    ("if device not in ('cpu', 'cuda'):\n            raise ValueError(device)", True),
    ("if 'cuda' in device and not torch.cuda.is_available():\n            raise ValueError", False),
    ("if device == 'tpu':\n            raise ValueError", False),  # MPS passes
])
def test_a_device_check_that_takes_only_the_cpu_and_cuda_blocks_mps(check: str, blocked: bool) -> None:
    """Wav2Lip's vendored face_alignment: `FaceDetector.__init__(self, device, ...)` raises for a device that is
    neither the CPU nor CUDA: given MPS's device, the program stops there."""
    source = (f"import torch\n\n\nclass FaceDetector:\n    def __init__(self, device, verbose):\n        {check}\n"
              "        self.device = device\n")
    assert blocker(source) == ((7, "a device check that takes only the CPU and CUDA") if blocked else None)


@pytest.mark.parametrize(("arms", "blocked"), [
    ("elif 'cpu' == str(self.device):\n                pass\n            else:\n"
     "                raise ValueError(device)", True),
    ("else:\n                pass", False),  # every device passes
])
def test_a_device_check_in_one_arm_of_an_option_blocks_mps(arms: str, blocked: bool) -> None:
    """simple-HRNet's `SimpleHRNet.__init__`: unless TensorRT is on, `if 'cuda' in str(self.device): ...` / `elif
    'cpu' == str(self.device): ...` / `else: raise ValueError('Wrong device name.')`: MPS's device raises on the
    path the default takes, where the CPU's and CUDA's never do."""
    source = ("import torch\n\n\nclass Net:\n    def __init__(self, device, trt=False):\n        self.device = device\n"
              "        if not trt:\n            if 'cuda' in str(self.device):\n                pass\n"
              f"            {arms}\n"
              "        else:\n            self.model = None\n")
    assert (blocker(source) is not None) is blocked


@pytest.mark.parametrize(("detector", "blocked"), [("'sfd'", True), ("'dlib'", False)])
def test_what_a_function_the_program_runs_imports_when_it_runs_counts_for_mps(tmp_path: Path, detector: str,
                                                                             blocked: bool) -> None:
    """Wav2Lip's face_alignment: `FaceAlignment.__init__` imports `'face_detection.detection.' + face_detector`
    (`'sfd'` by default), whose base `FaceDetector` raises for a device that is neither the CPU nor CUDA: the
    program keeps the CPU on a Mac and on an Intel GPU, and gets `tp.keep_cuda_or_cpu`."""
    _write(tmp_path, {
        "face_detection/__init__.py": "from .api import FaceAlignment\n",
        "face_detection/api.py": "class FaceAlignment:\n"
                                 f"    def __init__(self, device='cuda', face_detector={detector}):\n"
                                 "        module = __import__('face_detection.detection.' + face_detector, globals(), "
                                 "locals(), [face_detector], 0)\n"
                                 "        self.detector = module.FaceDetector(device=device)\n",
        "face_detection/detection/__init__.py": "",
        "face_detection/detection/core.py": "class FaceDetector:\n    def __init__(self, device):\n"
                                            "        if 'cpu' not in device and 'cuda' not in device:\n"
                                            "            raise ValueError(device)\n",
        "face_detection/detection/sfd.py": "from .core import FaceDetector\n",
        "face_detection/detection/dlib.py": "class FaceDetector:\n    def __init__(self, device):\n"
                                            "        self.device = device\n",
        "inference.py": "import torch\n\nimport face_detection\n\n\ndef detect(device):\n"
                        "    return face_detection.FaceAlignment(device=device)\n\n\nif __name__ == '__main__':\n"
                        "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n    detect(device)\n"
                        "    print(torch.ones(2).cuda())\n",
    })
    found = _programs(tmp_path)["inference.py"]
    assert ("mps" not in found["runs_on"]) is blocked
    if blocked:
        assert [(b["target"], b["path"], b["line"]) for b in found["blockers"]] == [
            (target, "face_detection/detection/core.py", 4) for target in ("mps", "xpu")]
    assert ("TP019" in {r["code"] for r in _migrated(tmp_path)["inference.py"]["rewrites"]}) is blocked


@pytest.mark.parametrize(("table", "blocked"), [
    ('{"cpu": isotonic_cpu, "cuda": isotonic_cuda}', True),
    ('{"cpu": isotonic_cpu, "cuda": isotonic_cuda, "mps": isotonic_mps}', False),
    ('{"cpu": isotonic_cpu, "gpu": isotonic_cuda}', False),  # not keyed by device type
])
def test_kernels_looked_up_by_device_type_without_mps_block_mps(table: str, blocked: bool) -> None:
    """torchsort: `isotonic_l2 = {"cpu": ..., "cuda": ...}`, then `isotonic_l2[s.device.type](s)`: a KeyError for a
    tensor on MPS."""
    source = f"import torch\n\nisotonic = {table}\n\n\ndef solve(s):\n    return isotonic[s.device.type](s)\n"
    assert blocker(source) == ((7, "kernels looked up by device type, none of them for MPS") if blocked else None)


@pytest.mark.parametrize("imported", ["from torchsummary import summary", "import torchsummary as ts"])
def test_torchsummary_makes_its_inputs_on_cuda_or_the_cpu(imported: str) -> None:
    """yolov4's summary.py: `summary(model, (3, 416, 416))` makes `torch.cuda.FloatTensor` inputs where CUDA is
    there, else CPU ones: a model on MPS gets CPU inputs."""
    call = "summary" if imported.startswith("from") else "ts.summary"
    source = f"import torch\n{imported}\n\nmodel = Net().to(device)\n{call}(model, (3, 416, 416))\n"
    assert blocker(source) == (5, f"`{call}`, which makes its inputs on CUDA or the CPU alone")
    assert blocker(source.replace(imported, "from mylib import summary")) is None


def test_what_mps_lacks_blocks_nothing_in_a_program_that_never_names_cuda(tmp_path: Path) -> None:
    """Laplace's test_matrix: float64 by default, and nothing it runs names CUDA: no port moves its data, so on a
    Mac it runs as it always did. The same test beside a module that moves data to CUDA keeps the CPU there."""
    _write(tmp_path, {
        "kron.py": "import torch\n\n\ndef kron(a, b):\n    return torch.kron(a, b)\n",
        "test_matrix.py": "import torch\n\nfrom kron import kron\n\ntorch.set_default_dtype(torch.double)\n\n\n"
                          "def test_kron():\n    assert kron(torch.ones(2), torch.ones(2)).sum() == 4\n",
    })
    assert _programs(tmp_path)["test_matrix.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    (tmp_path / "kron.py").write_text("import torch\n\n\ndef kron(a, b):\n    return torch.kron(a, b).cuda()\n")
    assert _programs(tmp_path)["test_matrix.py"]["runs_on"] == ["cuda", "xpu", "cpu"]


@pytest.mark.parametrize(("launch", "makes_group"), [
    ("    if n_gpus > 1:\n        init_distributed(0, n_gpus)\n", False),  # WaveGrad: more than one GPU only
    ("    init_distributed(0, n_gpus)\n", True),
    ("    mp.spawn(init_distributed, args=(n_gpus,), nprocs=n_gpus)\n", True),  # handed to what always runs
    # distributed-training-pytorch: torchrun's group, else SLURM's: every arm makes one
    ("    if n_gpus:\n        dist.init_process_group('nccl')\n    else:\n"
     "        dist.init_process_group('gloo')\n", True),
    ("    if n_gpus:\n        dist.init_process_group('nccl')\n    else:\n        pass\n", False),
])
def test_a_process_group_made_by_a_helper_counts_where_the_helper_always_runs(
        tmp_path: Path, launch: str, makes_group: bool) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n\n\n"
        "def init_distributed(rank, n_gpus):\n    dist.init_process_group(backend='gloo', world_size=n_gpus, "
        "rank=rank)\n\n\ndef run(n_gpus):\n" + launch + "    print(torch.ones(2).cuda())\n\n\n"
        "if __name__ == '__main__':\n    run(torch.cuda.device_count())\n")
    reasons = [b["reason"] for b in _programs(tmp_path)["train.py"]["blockers"]]
    assert any("process group" in r for r in reasons) is makes_group, reasons


LLAMA_DEVICE = """\
import argparse

import torch


def main(args):
    if args.device:
        device = args.device
    else:
        device = "cpu"
        if torch.cuda.is_available():
            device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    assert device_type in {"cuda"}, "GPU required"
    return torch.zeros(2, device=device)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default=DEFAULT)
    main(parser.parse_args())
"""


@pytest.mark.parametrize("default, runs_off_cuda", [
    ('""', False),  # llm.c's train_llama3: autodetected, then "GPU required" off CUDA
    ('"cpu"', True),  # given the CPU by default, it runs there
])
def test_a_program_is_judged_with_its_command_line_defaults(tmp_path: Path, default: str,
                                                            runs_off_cuda: bool) -> None:
    (tmp_path / "train.py").write_text(LLAMA_DEVICE.replace("DEFAULT", default))
    script = _programs(tmp_path)["train.py"]
    assert script["runs_on"] == (["cuda", "mps", "xpu", "cpu"] if runs_off_cuda else ["cuda"]), script
    if not runs_off_cuda:
        blocker = script["blockers"][0]
        assert blocker["line"] == 14 and "line 14: an assert fails" in blocker["reason"], blocker  # where it stops


def test_a_move_in_an_imported_modules_main_block_gives_its_importers_no_avoid_mps(tmp_path: Path) -> None:
    """learn2learn's resnet12.py moves a model to CUDA in its own `__main__` demo; the examples that import the
    package keep their CUDA-or-CPU choice and never run that demo, so on a Mac nothing of theirs meets MPS."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("from lib.nets import Net\n")
    (tmp_path / "lib" / "nets.py").write_text(
        "import torch\n\n\nclass Net(torch.nn.Linear):\n    pass\n\n\nif __name__ == '__main__':\n"
        "    print(Net(2, 2).to('cuda')(torch.ones(1, 2).to('cuda')))\n")
    (tmp_path / "example.py").write_text(
        "import torch\nimport lib\n\n\ndef main(cuda=True):\n    device = torch.device('cpu')\n"
        "    if cuda and torch.cuda.device_count():\n        device = torch.device('cuda')\n"
        "    print(lib.Net(2, 2).to(device)(torch.ones(1, 2, device=device)))\n\n\nif __name__ == '__main__':\n"
        "    main()\n")
    files = _migrated(tmp_path)
    assert files["lib/nets.py"]["changed"] and not files["example.py"]["changed"], files["example.py"]


def test_of_several_modules_with_one_dotted_name_an_import_means_the_one_beside_it(tmp_path: Path) -> None:
    """RWKV-LM: each RWKV-v*/ folder has its own `src` package; `from src.model import GPT` in RWKV-v4/train.py
    is RWKV-v4/src/model.py (a CUDA extension), not another version's."""
    for version, body in (("v1", "import torch\n\nGPT = torch.nn.Linear\n"),
                          ("v4", "from torch.utils.cpp_extension import load\n\n"
                                 "wkv = load(name='wkv', sources=['cuda/wkv_op.cpp', 'cuda/wkv_cuda.cu'])\n")):
        (tmp_path / version / "src").mkdir(parents=True)
        (tmp_path / version / "src" / "__init__.py").write_text("")
        (tmp_path / version / "src" / "model.py").write_text(body)
        (tmp_path / version / "train.py").write_text("from src.model import *\n\nprint('ok')\n")
    found = _programs(tmp_path)
    assert found["v1/train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"], found["v1/train.py"]
    assert found["v4/train.py"]["runs_on"] == ["cuda"], found["v4/train.py"]


@pytest.mark.parametrize(("made", "found"), [
    ("torch.tensor(0.5, dtype=float, requires_grad=True, device=dvc)", (3, "float64")),  # DRL-Pytorch's SAC
    ("torch.zeros(2, dtype=complex, device=dvc)", (3, "complex128")),
    ("torch.tensor(0.5, dtype=float)", None),  # made on the CPU, never moved
    ("np.array([0.5], dtype=float)", None),  # numpy's, not made into a tensor here
    ("torch.tensor(0.5, dtype=float32, device=dvc)", None),
])
def test_pythons_float_as_a_torch_dtype_is_float64(made: str, found: tuple[int, str] | None) -> None:
    assert blocker(f"import numpy as np\nimport torch\nlog_alpha = {made}\n") == found


@pytest.mark.parametrize(("imported", "moved", "found"), [
    ("from torch import float64", "rand(2).to(DEVICE, DTYPE)", (4, "float64")),  # curvlinops' examples
    ("from torch import complex128 as WIDE", "rand(2).to(DEVICE, WIDE)", (6, "complex128")),
    ("from torch import float32 as float64", "rand(2).to(DEVICE, float64)", None),  # the name, not the dtype
    ("from numpy import float64", "rand(2).to(DEVICE)", None),
])
def test_a_dtype_imported_from_torch_by_name_is_that_dtype(imported: str, moved: str,
                                                         found: tuple[int, str] | None) -> None:
    source = f"from torch import device, rand\n{imported}\n\nDTYPE = float64\nDEVICE = device('cuda')\nx = {moved}\n"
    assert blocker(source) == found


@pytest.mark.parametrize(("otherwise", "cuda_only"), [
    ("        raise NotImplementedError('Cuda is not available')\n", True),  # yolact's DCNv2
    ("        pass\n", False),
])
def test_a_build_script_that_stops_without_cuda_builds_a_cuda_only_extension(otherwise: str, cuda_only: bool) -> None:
    from torchport.codemods.analysis.requirements import cuda_extensions

    source = ("import torch\nfrom torch.utils.cpp_extension import CppExtension, CUDAExtension\n\n\n"
              "def get_extensions():\n    extension = CppExtension\n    if torch.cuda.is_available():\n"
              f"        extension = CUDAExtension\n    else:\n{otherwise}"
              "    return [extension('_ext', ['a.cpp'])]\n\n\n"
              "ext_modules = get_extensions()\n")
    assert cuda_extensions(ast.parse(source)) == (frozenset({"_ext"}) if cuda_only else frozenset())


@pytest.mark.parametrize(("named", "built"), [
    ("name='{}.{}'.format(module, name)", "sfl.sigmoid_focal_loss_cuda"),  # SOLO's (mmdetection v1's) helper
    ("name=f'{module}.{name}'", "sfl.sigmoid_focal_loss_cuda"),
    ("name=module + '.' + name", "sfl.sigmoid_focal_loss_cuda"),
    ("name=lookup(name)", None),  # a name no string arithmetic gives: not guessed
])
def test_an_extension_a_helper_makes_of_its_arguments_is_built(named: str, built: str | None) -> None:
    from torchport.codemods.analysis.requirements import _built_extensions

    source = ("from torch.utils.cpp_extension import CUDAExtension\n\n\n"
              "def make_cuda_ext(name, module, sources):\n"
              f"    return CUDAExtension({named}, sources=sources)\n\n\n"
              "exts = [make_cuda_ext(name='sigmoid_focal_loss_cuda', module='sfl', sources=['a.cu'])]\n")
    assert _built_extensions(ast.parse(source)) == ({built: {"cuda"}} if built else {})


@pytest.mark.parametrize(("include", "cuda_only"), [
    ("#include <c10/cuda/CUDAStream.h>\n", True),  # FOTS's rroi_align_cuda.cpp: glue for CUDA kernels alone
    ("#include <cuda_runtime.h>\n", True),
    ("#ifdef WITH_CUDA\n#include <ATen/cuda/CUDAContext.h>\n#endif\n", False),  # maskrcnn-benchmark's
    ("#include <torch/extension.h>\n", False),
])
def test_a_cpp_fallback_whose_sources_include_cuda_headers_builds_for_cuda_alone(tmp_path: Path, include: str,
                                                                                 cuda_only: bool) -> None:
    """FOTS's rroi_align: `CppExtension` with the `.cpp` files where CUDA is missing, `CUDAExtension` with the `.cu`
    ones where it is; the `.cpp` includes CUDA's headers, so no build works without the toolkit."""
    from torchport.codemods.analysis.requirements import cuda_extensions, sources_need_cuda

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ops.cpp").write_text(f"#include <torch/extension.h>\n{include}int f() {{ return 0; }}\n")
    source = ("import glob\nimport torch\nfrom torch.utils.cpp_extension import CppExtension, CUDAExtension\n\n"
              "sources = glob.glob('src/*.cpp')\nextension = CppExtension\nif torch.cuda.is_available():\n"
              "    extension = CUDAExtension\n    sources += glob.glob('src/*.cu')\n"
              "ext_modules = [extension('rotated_roi', sources)]\n")
    assert cuda_extensions(ast.parse(source)) == frozenset()
    needs = sources_need_cuda(tmp_path)
    assert needs is cuda_only
    assert cuda_extensions(ast.parse(source), needs) == (frozenset({"rotated_roi"}) if cuda_only else frozenset())
    # a plain CppExtension beside it builds its own sources, wherever they are
    both = source.replace("ext_modules = [", "ext_modules = [CppExtension('cpu_ops', ['../cpu/ops.cpp']), ")
    assert cuda_extensions(ast.parse(both), needs) == (frozenset({"rotated_roi"}) if cuda_only else frozenset())


def test_a_cached_run_sees_a_cpp_source_that_changed(tmp_path: Path) -> None:
    """Whether the C++ fallback builds without CUDA reads the C++ sources: a warm run whose sources changed decides
    again."""
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "ops.cpp"
    source.write_text("#include <torch/extension.h>\nint f() { return 0; }\n")
    _write(tmp_path, {
        "build.py": "import glob\nimport torch\nfrom torch.utils.cpp_extension import CppExtension, CUDAExtension\n\n"
                    "extension = CUDAExtension if torch.cuda.is_available() else CppExtension\n"
                    "ext_modules = [extension('rotated_roi', glob.glob('src/*.cpp'))]\n",
        "main.py": "import torch\nimport rotated_roi\n\nx = torch.ones(2).cuda()\nprint(rotated_roi.f(x))\n",
    })

    def runs_on() -> list[str]:
        done = CliRunner().invoke(app, ["programs", str(tmp_path), "--output-format", "json"])
        return next(p for p in json.loads(done.stdout)["programs"] if p["path"] == "main.py")["runs_on"]

    assert "cpu" in runs_on()
    source.write_text("#include <torch/extension.h>\n#include <c10/cuda/CUDAStream.h>\nint f() { return 0; }\n")
    assert runs_on() == ["cuda"]


@pytest.mark.parametrize(("build", "cuda_only"), [
    ("if torch.cuda.is_available():\n    with_cuda = True\nelse:\n    raise ValueError('CUDA is not available')\n"
     "ffi = create_extension('_ext.dcn_v2', headers=[], sources=['src/dcn_v2.c'], with_cuda=with_cuda)\n", True),
    ("ffi = create_extension('_ext.dcn_v2', headers=[], sources=[], with_cuda=True)\n", True),
    ("with_cuda = torch.cuda.is_available()\n"
     "ffi = create_extension('_ext.roi_pool', headers=[], sources=['src/roi_pool.c'], with_cuda=with_cuda)\n",
     False),  # faster-rcnn's roi_pooling: C sources of its own on the CPU
])
def test_a_torch_ffi_extension_is_built_for_cuda_alone_where_its_build_needs_cuda(build: str, cuda_only: bool) -> None:
    """CenterNet's DCNv2 (torch < 1.0): `torch.utils.ffi.create_extension`, its build script raising without CUDA."""
    from torchport.codemods.analysis.requirements import cuda_extensions

    source = f"import torch\nfrom torch.utils.ffi import create_extension\n\nwith_cuda = False\n{build}"
    built = cuda_extensions(ast.parse(source))
    assert bool(built) is cuda_only and built <= {"dcn_v2"}


def test_a_folder_a_module_puts_on_sys_path_is_where_its_importers_find_modules(tmp_path: Path) -> None:
    """Detectron's `_init_paths.py` adds `lib` beside it to sys.path; `from models.model import ...` in the
    scripts there is `lib/models/model.py`, whose import of a CUDA-only library blocks them."""
    _write(tmp_path, {
        "src/_init_paths.py": "import os.path as osp\nimport sys\n\n\ndef add_path(path):\n"
                              "    if path not in sys.path:\n        sys.path.insert(0, path)\n\n\n"
                              "this_dir = osp.dirname(__file__)\nlib_path = osp.join(this_dir, 'lib')\n"
                              "add_path(lib_path)\n",
        "src/lib/models/__init__.py": "",
        "src/lib/models/model.py": "import torch\nimport triton\n\n\ndef create_model():\n"
                                   "    return torch.nn.Linear(2, 2)\n",
        "src/main.py": "import _init_paths\n\nimport torch\nfrom models.model import create_model\n\n"
                       "if __name__ == '__main__':\n    create_model().cuda()\n",
    })
    main = _programs(tmp_path)["src/main.py"]
    assert main["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"], b["via"]) for b in main["blockers"]} == {("src/lib/models/model.py", 2,
                                                                             "src/main.py:4")}


@pytest.mark.parametrize(("decorator", "blocked"), [
    ("@ARCH_REGISTRY.register()", True),  # pyiqa's metrics, built by name from the registry
    ("@ARCH_REGISTRY.register_module", True),
    ("", False),  # nothing names the class: it never runs
])
def test_what_a_registry_holds_may_run_where_the_registry_is_used(tmp_path: Path, decorator: str,
                                                                 blocked: bool) -> None:
    _write(tmp_path, {
        "registry.py": "class Registry(dict):\n    def register(self, obj=None):\n        return lambda o: o\n"
                       "    register_module = register\n\n\nARCH_REGISTRY = Registry()\n",
        "niqe.py": f"import torch\n\nfrom registry import ARCH_REGISTRY\n\n\n{decorator}\nclass NIQE:\n"
                   "    def __call__(self, x):\n        return x.to(torch.float64).mean()\n",
        "metric.py": "import torch\n\nimport niqe  # noqa\nfrom registry import ARCH_REGISTRY\n\n\n"
                     "def create_metric(name):\n    return ARCH_REGISTRY[name]()\n",
        "main.py": "import sys\n\nimport torch\n\nfrom metric import create_metric\n\n"
                   "if __name__ == '__main__':\n    print(create_metric(sys.argv[1])(torch.ones(2).cuda()))\n",
    })
    assert _programs(tmp_path)["main.py"]["runs_on"] == (["cuda", "xpu", "cpu"] if blocked
                                                         else ["cuda", "mps", "xpu", "cpu"])


@pytest.mark.parametrize(("picks", "gets_it"), [
    ("device = torch.device('cuda' if torch.cuda.is_available() else 'mps' if torch.backends.mps.is_available() "
     "else 'cpu')", False),  # XMem's interactive demo: its own choice puts the data on MPS
    ("device = torch.device('cuda')", True),
])
def test_a_script_that_picks_mps_itself_gets_no_avoid_mps(tmp_path: Path, picks: str, gets_it: bool) -> None:
    _write(tmp_path, {
        "model/ops.py": "import torch\nimport torch.nn.functional as F\n\n\ndef down(x):\n"
                        "    return F.interpolate(x, scale_factor=0.5, mode='area') + torch.ones(1).cuda()\n",
        "demo.py": f"import torch\n\nfrom model.ops import down\n\n{picks}\nx = torch.ones(1, 1, 4, 4)\n"
                   "print(down(x.to(device)))\n",
    })
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache", "--diff"])
    assert ("tp.avoid_mps(" in done.stdout) is gets_it, done.stdout


@pytest.mark.parametrize(("call", "mps"), [
    ("train(model)", True),  # siren's `training.train(..., double_precision=False)`: no script asks for float64
    ("train(model, double_precision=False)", True),
    ("train(model, double_precision=True)", False),
    ("train(model, True)", False),
    ("train(model, **options)", False),
])
def test_float64_under_a_flag_off_by_default_counts_only_where_a_call_turns_it_on(tmp_path: Path, call: str,
                                                                                  mps: bool) -> None:
    _write(tmp_path, {
        "training.py": "import torch\n\n\ndef train(model, double_precision=False):\n"
                       "    x = torch.ones(2).cuda()\n    if double_precision:\n        x = x.double()\n"
                       "    return model(x)\n",
        "train_img.py": f"import torch\n\nimport training\n\nif __name__ == '__main__':\n    options = {{}}\n"
                        f"    model = torch.nn.Identity()\n    training.{call}\n",
    })
    assert ("mps" in _programs(tmp_path)["train_img.py"]["runs_on"]) is mps


def test_a_relative_import_of_an_extension_built_for_cuda_alone_needs_cuda() -> None:
    """human-pose-estimation's lib/nms/nms.py: `from .gpu_nms import gpu_nms`, built beside it from `.cu` sources."""
    source = "from .cpu_nms import cpu_nms\nfrom .gpu_nms import gpu_nms\n"
    found = requirements(ast.parse(source), source, extensions=frozenset({"gpu_nms"}))
    assert [(n.line, n.reason) for n in found] == [
        (2, "imports gpu_nms, an extension the project builds for CUDA alone (nvcc)")]
    assert requirements(ast.parse(source), source) == []


@pytest.mark.parametrize(("setup", "first"), [
    ("", True),  # reid-strong-baseline's tools/train.py: a package of the repository, run as a script
    # installed: a module others may import, whose `main()` only its `__main__` block calls: the call goes there
    ("from setuptools import setup\n\nsetup(name='tools', packages=['tools', 'lib'])\n", False),
])
def test_a_script_in_a_package_no_metadata_installs_gets_avoid_mps(tmp_path: Path, setup: str, first: bool) -> None:
    _write(tmp_path, {  # the blocker in another module: the project pass decides the call
        "lib/__init__.py": "",
        "lib/data.py": "import torch\n\n\ndef make():\n    return torch.zeros(2, dtype=torch.float64).cuda()\n",
        "tools/__init__.py": "",
        "tools/train.py": "import torch\n\nfrom lib.data import make\n\n\ndef main():\n"
                          "    print(make() + torch.ones(2).cuda())\n\n\nif __name__ == '__main__':\n    main()\n",
        # Wave-U-Net's trainer/trainer.py: top-level work, no `__main__`, loaded by name from a config: no program
        "tools/worker.py": "import torch\n\nfrom lib.data import make\n\ntorch.set_num_threads(1)\n\n\nclass Worker:\n"
                           "    def run(self):\n        return make() + torch.ones(2).cuda()\n",
        **({"setup.py": setup} if setup else {}),
    })
    migrated = _migrated(tmp_path)
    assert "TP019" in {r["code"] for r in migrated["tools/train.py"]["rewrites"]}
    assert "TP019" not in {r["code"] for r in migrated["tools/worker.py"]["rewrites"]}
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert ("\n+tp.avoid_mps(" in done.output) is first, done.output  # after the imports
    assert (" if __name__ == '__main__':\n+    tp.avoid_mps(" in done.output) is not first, done.output


def test_a_program_that_calls_functional_data_parallel_runs_only_on_cuda_and_is_left_whole(tmp_path: Path) -> None:
    """Dual-Path-RNN's trainer: `torch.nn.parallel.data_parallel(model, x, device_ids=self.gpuid)` raises on the CPU
    ("device type could not be determined") and has no scatter to MPS: ported around it, the trainer would set up
    its device and then stop there. Its program runs only on CUDA, and the files only it reaches stay as written."""
    trainer = ("import torch\nfrom torch.nn.parallel import data_parallel\n\n\nclass Trainer:\n"
               "    def __init__(self, model, gpuid):\n        self.gpuid = gpuid\n"
               "        self.device = torch.device('cuda:{}'.format(gpuid[0]))\n"
               "        self.model = model.to(self.device)\n\n    def step(self, x):\n"
               "        x = x.to(self.device)\n"
               "        return torch.nn.parallel.data_parallel(self.model, x, device_ids=self.gpuid)\n")
    _write(tmp_path, {
        "trainer.py": trainer,
        "train.py": "import torch\nfrom trainer import Trainer\n\nif __name__ == '__main__':\n"
                    "    print(Trainer(torch.nn.Linear(2, 2), [0]).step(torch.ones(2)))\n",
    })
    run = _programs(tmp_path)["train.py"]
    assert run["runs_on"] == ["cuda"]
    assert {(b["target"], b["path"], b["line"]) for b in run["blockers"]} == {
        (target, "trainer.py", 13) for target in ("mps", "xpu", "cpu")}
    assert not _migrated(tmp_path)["trainer.py"]["changed"]


def test_an_extension_import_whose_handler_raises_unless_its_setup_runs_is_required(tmp_path: Path) -> None:
    """votenet's pointnet2_utils: `try: import pointnet2._ext` / `except ImportError: if not getattr(builtins,
    "__POINTNET2_SETUP__", False): raise ImportError(...)`: the handler raises again except while the package's own
    setup.py imports it, so the CUDA extension is no optional import, and its programs run only on CUDA."""
    _write(tmp_path, {
        "pointnet2/setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
                              "setup(name='pointnet2', ext_modules=[CUDAExtension(name='pointnet2._ext', "
                              "sources=['src/fps.cu'])])\n",
        "pointnet2/utils.py": "import builtins\n\ntry:\n    import pointnet2._ext as _ext\nexcept ImportError:\n"
                              "    if not getattr(builtins, '__POINTNET2_SETUP__', False):\n"
                              "        raise ImportError('build the extension first')\n\n\n"
                              "def fps(x, n):\n    return _ext.furthest_point_sampling(x, n)\n",
        "train.py": "import torch\nfrom pointnet2.utils import fps\n\nif __name__ == '__main__':\n"
                    "    print(fps(torch.rand(1, 8, 3).cuda(), 4))\n",
    })
    run = _programs(tmp_path)["train.py"]
    assert run["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in run["blockers"]} == {("pointnet2/utils.py", 4)}
    assert not _migrated(tmp_path)["train.py"]["changed"]


@pytest.mark.parametrize(("setting", "cuda_only"), [("'1'", True), ("'0'", False), (None, False)])
def test_a_kernel_build_an_environment_variable_decides_counts_where_the_entry_point_sets_it(
        tmp_path: Path, setting: str | None, cuda_only: bool) -> None:
    """ChatRWKV's model.py: `if os.environ.get('RWKV_CUDA_ON') == '1':` around its CUDA kernel build; chat.py sets
    it to '0' before it imports the model, benchmark.py to '1'. Evaluated with what the entry point sets (unset, the
    `get` is None): only the program that sets '1' builds CUDA kernels."""
    entry = "import os\n" + (f"os.environ['RWKV_CUDA_ON'] = {setting}\n" if setting else "") + \
        "import torch\nfrom model import RWKV\n\nif __name__ == '__main__':\n    print(RWKV().cuda())\n"
    _write(tmp_path, {
        "model.py": "import os\nimport torch\n\nif os.environ.get('RWKV_CUDA_ON') == '1':\n"
                    "    from torch.utils.cpp_extension import load\n"
                    "    load(name='wkv', sources=['cuda/wrapper.cpp', 'cuda/operators.cu'])\n\n\n"
                    "class RWKV(torch.nn.Module):\n    pass\n",
        "chat.py": entry,
    })
    run = _programs(tmp_path)["chat.py"]
    assert (run["runs_on"] == ["cuda"]) is cuda_only
    assert _migrated(tmp_path)["chat.py"]["changed"] is not cuda_only


def test_a_placement_in_a_method_nothing_calls_is_no_choice_the_program_keeps(tmp_path: Path) -> None:
    """SCINet's Exp_Basic: `_acquire_device` picks `torch.device('cuda:{}')` behind `self.args.use_gpu` (a flag
    another script sets from CUDA), but its only call is commented out: no choice kept CUDA-or-CPU, so the program
    keeps MPS and XPU."""
    _write(tmp_path, {
        "exp.py": "import torch\n\n\nclass Exp:\n    def __init__(self, args):\n        self.args = args\n"
                  "        # self.device = self._acquire_device()\n"
                  "        self.model = torch.nn.Linear(2, 2).cuda()\n\n"
                  "    def _acquire_device(self):\n        if self.args.use_gpu:\n"
                  "            return torch.device('cuda:{}'.format(self.args.gpu))\n"
                  "        return torch.device('cpu')\n\n"
                  "    def train(self):\n        return self.model(torch.ones(2).cuda())\n",
        "run_a.py": "import argparse\nimport torch\nfrom exp import Exp\n\nparser = argparse.ArgumentParser()\n"
                    "parser.add_argument('--use_gpu', type=bool, default=True)\nargs = parser.parse_args()\n"
                    "args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False\n"
                    "print(Exp(args).train())\n",
        "run_b.py": "import argparse\nfrom exp import Exp\n\nparser = argparse.ArgumentParser()\n"
                    "parser.add_argument('--use_gpu', type=bool, default=True)\nargs = parser.parse_args()\n"
                    "print(Exp(args).train())\n",
    })
    found = _programs(tmp_path)
    for entry in ("run_a.py", "run_b.py"):
        assert found[entry]["runs_on"] == ["cuda", "mps", "xpu", "cpu"], entry


_HESSIAN = ("import torch\n\n\nclass hessian:\n    \"\"\"The hessian of a model.\"\"\"\n\n"
            "    def __init__(self, model, data, cuda=True):\n        self.device = 'cuda' if cuda else 'cpu'\n"
            "        self.data = data\n        if self.device == 'cuda':\n            self.data = self.data.cuda()\n")
# its choice in a method `__init__` calls
_REFRESHED = _HESSIAN.replace("        if self.device == 'cuda':", "        self.refresh()\n\n    def refresh(self):\n"
                              "        if self.device == 'cuda':")


@pytest.mark.parametrize("library", [_HESSIAN, _REFRESHED])
@pytest.mark.parametrize(("made", "kept"), [("", False), ("comp = hessian(model, loss)\n", True)])
def test_a_class_a_program_imports_but_never_makes_keeps_no_choice_for_it(tmp_path: Path, library: str, made: str,
                                                                          kept: bool) -> None:
    """HEQuant's training scripts import PyHessian's `hessian`, whose `__init__` places its batch `if self.device ==
    'cuda'`, and never make one (a docstring naming "the hessian" is no use): the program keeps MPS and XPU. So with
    the choice in a method of the class (AIPolicy's SpanSingleNERDataset.refresh)."""
    _write(tmp_path, {
        "hess.py": library,
        "train.py": "import torch\nfrom hess import hessian  # hessian computation\n\n"
                    "model = torch.nn.Linear(2, 2).cuda()\nloss = model(torch.ones(2).cuda())\n" + made,
    })
    found = _programs(tmp_path)["train.py"]
    assert (found["runs_on"] == ["cuda", "cpu"]) is kept, found
    assert (found["runs_on"] == ["cuda", "mps", "xpu", "cpu"]) is not kept, found


@pytest.mark.parametrize("made", ["import hess\ncomp = getattr(hess, name)(model, loss)\n",  # made by a computed name
                                  "comp = torch.load('h.pt')\ncomp.refresh()\n"])  # unpickled, its method called
def test_a_class_made_by_a_computed_name_or_a_method_called_by_name_keeps_its_choice(tmp_path: Path,
                                                                                    made: str) -> None:
    _write(tmp_path, {
        "hess.py": _REFRESHED,
        "train.py": "import torch\nfrom hess import hessian\n\nname = 'hessian'\n"
                    "model = torch.nn.Linear(2, 2).cuda()\nloss = model(torch.ones(2).cuda())\n" + made,
    })
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "cpu"]


def test_tests_that_import_a_cuda_extension_in_their_bodies_run_only_on_cuda(tmp_path: Path) -> None:
    """mish-cuda's test_mish.py: each test starts with `from mish_cuda import mish_forward`, a package whose
    `__init__` imports the `_C` extension setup.py builds with nvcc alone: pytest runs every test, so none runs off
    CUDA. A method another module of the program calls counts too; one only its own module names does not."""
    _write(tmp_path, {
        "setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
                    "setup(name='mish_cuda', ext_modules=[CUDAExtension('mish_cuda._C', ['csrc/mish_kernel.cu'])])\n",
        "mish_cuda/__init__.py": "import torch\nfrom ._C import mish_forward\n",
        "test_mish.py": "import torch\n\n\ndef test_forward():\n    from mish_cuda import mish_forward\n"
                        "    assert mish_forward(torch.ones(2).cuda()).shape == (2,)\n",
        "sparse.py": "import torch\n\n\nclass Matrix:\n    def __init__(self, x):\n        self.x = x\n\n"
                     "    def matmul_(self, y):\n        import block_native\n"
                     "        return block_native.mm(self.x, y)\n\n"
                     "    def emulated(self, y):\n        return self.x @ y\n",
        "setup_native.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
                           "setup(name='native', ext_modules=[CUDAExtension('block_native', ['native/mm.cu'])])\n",
        "test_native.py": "import torch\nfrom sparse import Matrix\n\n\ndef test_mm():\n"
                          "    assert Matrix(torch.ones(2, 2).cuda()).matmul_(torch.ones(2, 2).cuda()).sum() == 8\n",
        "test_emulated.py": "import torch\nfrom sparse import Matrix\n\n\ndef test_mm():\n"
                            "    assert Matrix(torch.ones(2, 2).cuda()).emulated(torch.ones(2, 2).cuda()).sum() == 8\n",
    })
    found = _programs(tmp_path)
    assert found["test_mish.py"]["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in found["test_mish.py"]["blockers"]} == {("test_mish.py", 5)}
    assert found["test_native.py"]["runs_on"] == ["cuda"]
    assert found["test_emulated.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_demo_main_block_of_an_imported_module_gets_the_call_first_in_it(tmp_path: Path) -> None:
    """deep_gcns' architecture.py: a model module train.py imports, with a `__main__` demo that moves a model to the
    device; the model calls torch_cluster's `knn_graph` (kernels for the CPU and CUDA alone). At its top the call
    would run in every program importing it: it goes first in the demo block, and train.py gets its own. A module
    that imports `knn_graph` and never calls it needs nothing."""
    _applied(tmp_path, {
        "edge.py": "import torch\nfrom torch_cluster import knn_graph\n\n\ndef knn(x, k):\n"
                   "    return knn_graph(x, k)\n",
        "dense_edge.py": "import torch\nfrom torch_cluster import knn_graph\n\n\ndef knn(x, k):\n"
                         "    return torch.cdist(x, x).topk(k).indices\n",
        "arch.py": "import torch\nfrom edge import knn\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
                   "        return knn(x, 2)\n\n\nif __name__ == '__main__':\n    x = torch.rand(8, 3).cuda()\n"
                   "    print(Net().cuda()(x))\n",
        "train.py": "import torch\nfrom arch import Net\n\nmodel = Net().cuda()\n"
                    "print(model(torch.rand(8, 3).cuda()))\n",
        "dense.py": "import torch\nfrom dense_edge import knn\n\nprint(knn(torch.rand(8, 3).cuda(), 2))\n",
    })
    arch = (tmp_path / "arch.py").read_text()
    call = "tp.keep_cuda_or_cpu(\"a compiled extension's kernels (`torch_cluster.knn_graph`: the CPU's and CUDA's " \
           "alone), edge.py:6\")"
    assert f"if __name__ == '__main__':\n    {call}\n    x = torch.rand(8, 3).to(tp.device())\n" in arch
    assert call in (tmp_path / "train.py").read_text().splitlines()
    assert "keep_cuda_or_cpu" not in (tmp_path / "dense.py").read_text()
    again = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache", "--check"])
    assert again.exit_code == 0, again.output  # a second run changes nothing
    found = _programs(tmp_path)
    assert found["dense.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert found["arch.py"]["runs_on"] == found["train.py"]["runs_on"] == ["cuda", "cpu"]


def test_a_demo_main_function_only_the_main_block_calls_gets_the_call_in_the_block(tmp_path: Path) -> None:
    """myria3d's pyg_randla_net.py: the demo's device choice is in a `main()` only its `__main__` block calls, and
    its test calls torch_scatter (kernels for the CPU and CUDA alone). Its model's `.cuda()` becomes the runtime's
    device, so the call goes first in the block, and there too where another module calls the same `main` (P-tuning-v2's
    dense_retriever.py): the block runs only where the module is the program."""
    demo = ("import torch\nfrom torch_scatter import scatter\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n        return x * 2\n\n\ndef main():\n"
            "    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "    model = Net().cuda()\n\n"
            "    def test():\n        out = model(torch.rand(8, 3).to(device))\n"
            "        return scatter(out, torch.zeros(8, dtype=torch.long, device=device), dim=0, reduce='max')\n\n"
            "    print(test())\n\n\nif __name__ == '__main__':\n    main()\n")
    _applied(tmp_path, {"arch.py": demo, "train.py": "import torch\nfrom arch import Net\n\nmodel = Net().cuda()\n"
                                                     "print(model(torch.rand(8, 3).cuda()))\n"})
    call = "tp.keep_cuda_or_cpu(\"a compiled extension's kernels (`torch_scatter.scatter`: the CPU's and CUDA's " \
           "alone), arch.py:16\")"
    arch = (tmp_path / "arch.py").read_text()
    assert "    model = Net().to(tp.device())\n" in arch
    # the choice already picks what the runtime's would where every program keeps CUDA-or-CPU: it stays
    assert "    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n" in arch
    assert f"if __name__ == '__main__':\n    {call}\n    main()\n" in arch
    again = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache", "--check"])
    assert again.exit_code == 0, again.output  # a second run changes nothing
    shared = tmp_path / "shared"
    shared.mkdir()
    _applied(shared, {"arch.py": demo, "run.py": "from arch import main\n\nmain()\n"})
    assert f"if __name__ == '__main__':\n    {call}\n    main()\n" in (shared / "arch.py").read_text()
    assert "tp.keep_cuda_or_cpu(" in (shared / "run.py").read_text()


def test_the_call_goes_above_an_import_whose_availability_choice_picks_the_device(tmp_path: Path) -> None:
    """VAR's dist.py: `__device = 'cuda' if torch.cuda.is_available() else 'cpu'` at its top level becomes the
    runtime's choice, made when train.py imports it: `tp.avoid_mps` must come before that import, or the pick is
    already MPS's. A float64 buffer the model registers goes wherever the model goes."""
    _applied(tmp_path, {
        "dist.py": "import torch\n\n__device = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
                   "def get_device():\n    return __device\n",
        "model.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.register_buffer('betas', torch.linspace(0.1, 0.2, 10).double())\n",
        "train.py": "import torch\n\nimport dist\nfrom model import Net\n\nif __name__ == '__main__':\n"
                    "    net = Net().to(dist.get_device())\n    print(net.betas.sum().cuda())\n",
    })
    train = (tmp_path / "train.py").read_text()
    assert 'tp.avoid_mps("float64, model.py:7")\n\nimport dist\n' in train, train


def test_a_flag_another_script_sets_false_is_still_a_flag_cuda_decides(tmp_path: Path) -> None:
    """LTSF-Linear: run_longExp.py sets `args.use_gpu` from `torch.cuda.is_available()`, run_stat.py sets it to
    `False`: false without CUDA either way, so `if self.args.use_gpu: torch.device('cuda:...')` is a choice kept
    CUDA-or-CPU beside the moves the port makes, and the program keeps the CPU on a Mac and an Intel GPU."""
    _write(tmp_path, {**_PATCHTST, "run_stat.py": "import argparse\nfrom exp import Exp\n\nparser = "
                      "argparse.ArgumentParser()\nargs = parser.parse_args()\nargs.use_gpu = False\n"
                      "print(Exp(args).train())\n"})
    assert _programs(tmp_path)["run.py"]["runs_on"] == ["cuda", "cpu"]


def test_a_flag_copied_from_another_object_is_still_the_flag_cuda_decides(tmp_path: Path) -> None:
    """KGE_pytorch: Config sets `self.usegpu = torch.cuda.is_available()` and copies it, `self.modelparam.usegpu =
    self.usegpu`; the models move data `if self.config.usegpu:`. The copy is false wherever its source is: the
    guarded moves stay as written (off CUDA they never run), where they were ported for nothing."""
    _write(tmp_path, {
        "config.py": "import types\n\nimport torch\n\n\nclass Config:\n    def __init__(self):\n"
                     "        self.usegpu = torch.cuda.is_available()\n"
                     "        self.modelparam = types.SimpleNamespace()\n"
                     "        self.modelparam.usegpu = self.usegpu\n",
        "model.py": "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, config):\n"
                    "        super().__init__()\n        self.config = config\n\n    def forward(self, x):\n"
                    "        if self.config.usegpu:\n            x = x.cuda()\n        return x * 2\n",
        "train.py": "import torch\n\nfrom config import Config\nfrom model import Model\n\n"
                    "config = Config()\nprint(Model(config.modelparam)(torch.ones(2)))\n",
    })
    assert not _migrated(tmp_path)["model.py"]["changed"]
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_flag_an_option_sets_is_no_copy_of_the_flag_a_query_sets(tmp_path: Path) -> None:
    """A config class sets `self.use_gpu = torch.cuda.is_available()`; the model sets `self.use_gpu =
    opt.use_gpu` from an option (on by default). That is no copy: the model's `.cuda()` under it is ported."""
    _write(tmp_path, {
        "config.py": "import torch\n\n\nclass Config:\n    def __init__(self):\n"
                     "        self.use_gpu = torch.cuda.is_available()\n",
        "model.py": "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, opt):\n"
                    "        super().__init__()\n        self.use_gpu = opt.use_gpu\n\n    def forward(self, x):\n"
                    "        if self.use_gpu:\n            x = x.cuda()\n        return x * 2\n",
        "train.py": "import argparse\n\nimport torch\n\nfrom config import Config\nfrom model import Model\n\n"
                    "parser = argparse.ArgumentParser()\nparser.add_argument('--use_gpu', type=int, default=1)\n"
                    "opt = parser.parse_args()\nConfig()\nprint(Model(opt)(torch.ones(2)))\n",
    })
    assert _migrated(tmp_path)["model.py"]["changed"]


def test_data_placed_only_where_a_device_string_names_cuda_is_a_choice_kept(tmp_path: Path) -> None:
    """ChatRWKV: chat.py's `args.RUN_DEVICE = "cuda"` becomes the runtime's device string, but model_run.py moves
    its weights only `if 'cuda' in args.RUN_DEVICE:` and makes its state with `device=self.RUN_DEVICE`: on MPS the
    weights would stay on the CPU beside a state on MPS. The program keeps CUDA or the CPU."""
    _applied(tmp_path, {
        "model_run.py": "import torch\n\n\nclass RNN:\n    def __init__(self, args):\n"
                        "        self.dev = args.RUN_DEVICE\n        self.w = torch.ones(2)\n"
                        "        if 'cuda' in args.RUN_DEVICE:\n"
                        "            self.w = self.w.to(self.dev)\n\n    def forward(self):\n"
                        "        return self.w + torch.zeros(2, device=self.dev)\n",
        "chat.py": "import types\nfrom model_run import RNN\n\nargs = types.SimpleNamespace()\n"
                   "args.RUN_DEVICE = 'cuda'\nprint(RNN(args).forward())\n",
    })
    assert 'tp.keep_cuda_or_cpu("a device choice kept CUDA-or-CPU beside data moved to the picked device, ' \
           'model_run.py:8")' in (tmp_path / "chat.py").read_text()


def test_a_choice_kept_in_a_class_the_program_never_makes_keeps_nothing(tmp_path: Path) -> None:
    """BackdoorBox: `core/__init__.py` imports every attack, BAAT's among them, whose `HairEditor` keeps its choice
    CUDA-or-CPU; BadNets' script makes only `BadNets`, which moves its data to the runtime's device: it keeps MPS. A
    script that makes the editor keeps CUDA or the CPU."""
    _applied(tmp_path, {
        "core/__init__.py": "from .editor import BAAT\nfrom .badnets import BadNets\n",
        "core/editor.py": "import torch\n\n\nclass Editor:\n    def __init__(self, args):\n"
                          "        self.dev = args.RUN_DEVICE\n        self.w = torch.ones(2)\n"
                          "        if 'cuda' in args.RUN_DEVICE:\n"
                          "            self.w = self.w.to(self.dev)\n\n    def forward(self):\n"
                          "        return self.w + torch.zeros(2, device=self.dev)\n\n\n"
                          "class BAAT:\n    def __init__(self, args):\n        self.editor = Editor(args)\n\n"
                          "    def run(self):\n        return self.editor.forward()\n",
        "core/badnets.py": "import torch\n\n\nclass BadNets:\n    def run(self):\n"
                           "        return torch.ones(2).cuda() * 2\n",
        "attack_badnets.py": "import core\n\nprint(core.BadNets().run())\n",
        "attack_editor.py": "import types\n\nimport core\n\nargs = types.SimpleNamespace()\n"
                            "args.RUN_DEVICE = 'cuda'\nprint(core.BAAT(args).run(), core.BadNets().run())\n",
    })
    assert "tp.keep_cuda_or_cpu" not in (tmp_path / "attack_badnets.py").read_text()
    assert 'tp.keep_cuda_or_cpu("a device choice kept CUDA-or-CPU beside data moved to the picked device, ' \
           'core/editor.py:8")' in (tmp_path / "attack_editor.py").read_text()


@pytest.mark.parametrize("again", [True, False])
def test_a_multi_gpu_branch_whose_data_is_placed_again_keeps_no_choice(tmp_path: Path, again: bool) -> None:
    """Medical-Transformer: `if torch.cuda.device_count() > 1: model = nn.DataParallel(model).cuda()`, then
    `model.to(device)` with `device` ported: the model goes where the program's data goes, on a Mac MPS. Without
    the second placement the branch is the model's only one: MPS would split it from its inputs."""
    after = "model.to(device)\n" if again else ""
    _write(tmp_path, {"train.py": "import torch\nfrom torch import nn\n\ndevice = torch.device('cuda')\n"
                                  "model = nn.Linear(4, 2)\nif torch.cuda.device_count() > 1:\n"
                                  "    model = nn.DataParallel(model, device_ids=[0, 1]).cuda()\n" + after +
                                  "print(model(torch.ones(3, 4).to(device)))\n"})
    assert (_programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]) is again


def test_a_kernel_chosen_by_where_a_tensor_is_is_no_choice_kept(tmp_path: Path) -> None:
    """glow-tts's stft.py: `if magnitude.device.type == "cuda":` picks a kernel for data already on CUDA and moves
    what it makes to that data's device: no device string names CUDA there, and the ported program keeps MPS."""
    _applied(tmp_path, {
        "stft.py": "import torch\n\n\ndef inverse(magnitude):\n    if magnitude.device.type == 'cuda':\n"
                   "        window = torch.ones(2).to(magnitude.device)\n        return magnitude * window\n"
                   "    return magnitude\n",
        "init.py": "import torch\nfrom stft import inverse\n\nprint(inverse(torch.ones(2).cuda()))\n",
    })
    assert "keep_cuda_or_cpu" not in (tmp_path / "init.py").read_text()
    assert _programs(tmp_path)["init.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_data_placed_either_way_by_a_test_of_the_device_name_is_no_choice_kept(tmp_path: Path) -> None:
    """nanoGPT's train.py: `if device_type == 'cuda':` pins the batch before it moves it, `else:` moves it alone:
    the data goes to the device on both arms, so the port keeps MPS and XPU."""
    _applied(tmp_path, {
        "train.py": "import torch\n\ndevice = 'cuda'\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n\n\n"
                    "def get_batch():\n    x = torch.ones(2, 2)\n    if device_type == 'cuda':\n"
                    "        x = x.pin_memory().to(device, non_blocking=True)\n    else:\n        x = x.to(device)\n"
                    "    return x\n\n\nif __name__ == '__main__':\n    print(get_batch().sum())\n",
    })
    assert "keep_cuda_or_cpu" not in (tmp_path / "train.py").read_text()
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_program_whose_data_never_reaches_the_runtimes_device_gets_no_call(tmp_path: Path) -> None:
    """deep_gcns' ogbg_mol: the script keeps its own CUDA-or-CPU choice (its layers call torch_scatter: CPU and
    CUDA kernels only) and imports only `save_ckpt` from a module whose loader (another script's) moves data:
    nothing of the program goes to the runtime's device, so it runs where it ran and a `tp.keep_cuda_or_cpu`
    would change nothing. Where it calls the loader, the call goes in."""
    sources = {
        "layers.py": "import torch\nimport torch_scatter\n\n\nclass Agg(torch.nn.Module):\n"
                     "    def forward(self, x, index):\n        return torch_scatter.scatter(x, index, reduce='min')\n",
        "ckpt.py": "import torch\n\n\ndef save_ckpt(model, path):\n    torch.save(model.state_dict(), path)\n\n\n"
                   "def load_state(path):\n    return {k: v.cuda() for k, v in torch.load(path).items()}\n",
        "evaluate.py": "from ckpt import load_state\n\nif __name__ == '__main__':\n    print(load_state('m.pt'))\n",
        "main.py": "import torch\nfrom layers import Agg\nfrom ckpt import save_ckpt\n\n"
                   "if __name__ == '__main__':\n"
                   "    device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')\n"
                   "    x = torch.ones(4).to(device)\n    print(Agg()(x, torch.zeros(4, dtype=torch.long)))\n"
                   "    save_ckpt(torch.nn.Linear(2, 2), 'm.pt')\n",
    }
    _write(tmp_path, sources)
    files = _migrated(tmp_path)
    assert files["ckpt.py"]["changed"] and not files["main.py"]["changed"], files["main.py"]
    calling = tmp_path / "calling"
    _write(calling, {**sources, "main.py": sources["main.py"].replace("save_ckpt", "load_state").replace(
        "load_state(torch.nn.Linear(2, 2), 'm.pt')", "load_state('m.pt')")})
    files = _migrated(calling)
    assert "TP019" in {r["code"] for r in files["main.py"]["rewrites"]}


def test_a_program_reported_off_mps_gets_the_call_that_keeps_it_there(tmp_path: Path) -> None:
    """torch-rechub's RQ-VAE: `d = d.double()` in a function the program runs, on a tensor that may be on the
    device. `programs` reports the program off MPS, so the port keeps it on the CPU of a Mac (`tp.avoid_mps`), as
    the report says: a port that sent it to MPS would stop at the float64 there."""
    _write(tmp_path, {
        "ops.py": "import torch\n\n\ndef sinkhorn(d):\n    d = d.double()\n    return d / d.sum()\n",
        "main.py": "import torch\nfrom ops import sinkhorn\n\nif __name__ == '__main__':\n"
                   "    print(sinkhorn(torch.ones(4).cuda()))\n",
    })
    program = _programs(tmp_path)["main.py"]
    assert "mps" not in program["runs_on"] and ("mps", "ops.py", 5) in {
        (b["target"], b["path"], b["line"]) for b in program["blockers"]}
    main = _migrated(tmp_path)["main.py"]
    assert "TP019" in {r["code"] for r in main["rewrites"]}


def test_a_library_reached_through_a_path_folder_of_packages_and_an_import_alias_counts(tmp_path: Path) -> None:
    """FairMOT's layout (JLA): `_init_paths.py` puts `src/lib` (packages only, no module of its own) on `sys.path`;
    `models/model.py` binds `get_pose_net as get_dla_dcn` and calls the alias; the network makes a DCNv2 layer
    (CPU and CUDA kernels alone). The program keeps the CPU of a Mac and of an Intel GPU."""
    _write(tmp_path, {
        "src/_init_paths.py": "import os.path as osp\nimport sys\n\nthis_dir = osp.dirname(__file__)\n"
                              "sys.path.insert(0, osp.join(this_dir, 'lib'))\n",
        "src/train.py": "import _init_paths\nimport torch\nfrom models.model import create_model\n\n"
                        "if __name__ == '__main__':\n    model = create_model().cuda()\n"
                        "    print(model(torch.ones(2, 2).cuda()))\n",
        "src/lib/models/__init__.py": "",
        "src/lib/models/model.py": "from .networks.dcn import get_pose_net as get_dla_dcn\n\n\n"
                                   "def create_model():\n    return get_dla_dcn()\n",
        "src/lib/models/networks/__init__.py": "",
        "src/lib/models/networks/dcn.py": "import torch\nfrom dcn_v2 import DCN\n\n\nclass Deform(torch.nn.Module):\n"
                                          "    def __init__(self):\n        super().__init__()\n"
                                          "        self.conv = DCN(2, 2)\n\n\ndef get_pose_net():\n"
                                          "    return Deform()\n",
    })
    program = _programs(tmp_path)["src/train.py"]
    assert program["runs_on"] == ["cuda", "cpu"], program
    assert {(b["target"], b["path"], b["line"]) for b in program["blockers"]} == {
        ("mps", "src/lib/models/networks/dcn.py", 8), ("xpu", "src/lib/models/networks/dcn.py", 8)}


def test_pytorch3d_rasterizers_keep_the_cpu_of_a_mac_and_its_transforms_do_not(tmp_path: Path) -> None:
    """PIFu's colab_util renders with pytorch3d.renderer (rasterizer kernels for the CPU and CUDA alone);
    pytorch3d.transforms is plain torch."""
    _write(tmp_path, {
        "render.py": "import torch\nfrom pytorch3d.renderer import MeshRasterizer\n\nif __name__ == '__main__':\n"
                     "    print(MeshRasterizer()(torch.ones(2).cuda()))\n",
        "rotate.py": "import torch\nfrom pytorch3d.transforms import matrix_to_quaternion\n\n"
                     "if __name__ == '__main__':\n    print(matrix_to_quaternion(torch.eye(3).cuda()))\n",
        # Point-Cloud-Completion's chamfer loss: pytorch3d.ops' knn_points, kernels for the CPU and CUDA alone
        "complete.py": "import torch\nfrom pytorch3d.ops.knn import knn_points\n\nif __name__ == '__main__':\n"
                       "    x = torch.ones(1, 4, 3).cuda()\n    print(knn_points(x, x))\n",
    })
    found = _programs(tmp_path)
    assert found["render.py"]["runs_on"] == found["complete.py"]["runs_on"] == ["cuda", "cpu"]
    assert ("mps", "render.py", 5) in {(b["target"], b["path"], b["line"]) for b in found["render.py"]["blockers"]}
    assert found["rotate.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_program_importing_a_module_that_does_not_parse_is_left_whole(tmp_path: Path) -> None:
    """CCT: models/model.py imports utils/losses.py, whose tabs and spaces Python 3 refuses (TabError), so every
    program importing it stops before any device is used: its files are left as written, and said so once; a
    program that does not import it is ported."""
    _write(tmp_path, {
        "utils/losses.py": "def f(x):\n\tif x:\n\t\treturn 1\n        return 2\n",
        "model.py": "import torch\nfrom utils import losses\n\n\ndef go(x):\n    return x.cuda()\n",
        "train.py": "import torch\nfrom model import go\n\nif __name__ == '__main__':\n"
                    "    print(go(torch.ones(2).cuda()))\n",
        "other.py": "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n",
    })
    found = _programs(tmp_path)
    assert found["train.py"]["runs_on"] == []
    assert ("cpu", "utils/losses.py", 4) in {(b["target"], b["path"], b["line"]) for b in found["train.py"]["blockers"]}
    assert found["other.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    report = _migrated(tmp_path)
    assert {path for path, f in report.items() if f["changed"]} == {"other.py"}, report
    assert "R25 runs-nowhere" in report["model.py"]["diagnostics"][0]["message"]


PYKEEN_UTILS = """import torch


def resolve_device(device=None):
    if device is None or device == "gpu":
        device = "cuda"
    if isinstance(device, str):
        device = torch.device(device)
    if not torch.cuda.is_available() and device.type == "cuda":
        device = torch.device("cpu")
    return device
"""


def test_only_a_fallback_for_a_cuda_device_asks_for_cuda() -> None:
    """`asks_for_cuda` reads the negated query with the CUDA test; a choice asked of a CUDA device that is there
    (`is_available() and args.device == "cuda"`) is still a choice."""
    import ast

    from torchport.model.evaluate import asks_for_cuda as _asks_for_cuda

    def test(code: str) -> ast.expr:
        return ast.parse(code, mode="eval").body

    assert _asks_for_cuda(test('not torch.cuda.is_available() and device.type == "cuda"'))
    assert not _asks_for_cuda(test('torch.cuda.is_available() and args.device == "cuda"'))
    assert not _asks_for_cuda(test("not torch.cuda.is_available()"))


def test_a_fallback_for_a_device_that_is_cuda_already_keeps_no_choice(tmp_path: Path) -> None:
    """pykeen's resolve_device: `if not torch.cuda.is_available() and device.type == "cuda": device = cpu` changes
    only a device that is CUDA's; once `"cuda"` is the runtime's pick, a Mac's MPS never meets it. No program keeps
    CUDA-or-CPU for it (57 `tp.keep_cuda_or_cpu` calls in pykeen's scripts)."""
    root = _applied(tmp_path, {
        "utils.py": PYKEEN_UTILS,
        "train.py": "import torch\nfrom utils import resolve_device\n\nif __name__ == '__main__':\n"
                    "    print(torch.ones(2).to(resolve_device()))\n",
    })
    assert '        device = tp.device_str()\n' in (root / "utils.py").read_text()
    assert "tp.keep_cuda_or_cpu" not in (root / "train.py").read_text()
    assert "torch.cuda.is_available() and device.type == \"cuda\"" in (root / "utils.py").read_text()


LIGHTNING = """import argparse

import pytorch_lightning as pl
import torch


def main():
    args = argparse.ArgumentParser().parse_args()
{branches}    model = torch.nn.Linear(2, 2).cuda()
    if args.model_name == "IterE":
        trainer = pl.Trainer(gpus={gpus}, reload_dataloaders_every_n_epochs=1)
    else:
        trainer = pl.Trainer(gpus={gpus})
    trainer.fit(model)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("branches", [0, 8])
def test_a_lightning_trainer_given_gpus_needs_cuda(tmp_path: Path, branches: int) -> None:
    """NeuralKG's main.py: `pl.Trainer.from_argparse_args(args, gpus="0,")` in both arms of an `if`, after enough
    undecided branches that the evaluation merges paths: Lightning asks CUDA for the GPUs, so the program runs on
    CUDA alone and is left whole. `gpus=0` asks for none."""
    ifs = "".join(f"    if args.flag{i}:\n        print({i})\n" for i in range(branches))
    _write(tmp_path, {"main.py": LIGHTNING.format(branches=ifs, gpus='"0,"'),
                      "cpu.py": LIGHTNING.format(branches=ifs, gpus="0")})
    found = _programs(tmp_path)
    assert found["main.py"]["runs_on"] == ["cuda"], found["main.py"]
    assert ("cpu", "main.py", 11 + 2 * branches) in {(b["target"], b["path"], b["line"])
                                                     for b in found["main.py"]["blockers"]}
    assert found["cpu.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"], found["cpu.py"]
    report = _migrated(tmp_path)
    assert {path for path, f in report.items() if f["changed"]} == {"cpu.py"}, report


def test_a_cuda_call_on_an_object_of_a_class_that_moves_itself_is_its_own(tmp_path: Path) -> None:
    """DeepRule's test_chart.py: `nnet = NetworkFactory(db)`, then `nnet.cuda()`: the project class's own `cuda()`,
    whose body the port moves to the runtime's device. The call is no CUDA need of the program."""
    _write(tmp_path, {
        "nnet/__init__.py": "",
        "nnet/factory.py": "import torch\n\n\nclass NetworkFactory:\n    def __init__(self):\n"
                           "        self.model = torch.nn.Linear(2, 2)\n\n    def cuda(self):\n"
                           "        self.model.cuda()\n",
        "test_chart.py": "import torch\nfrom nnet.factory import NetworkFactory\n\n\ndef test():\n"
                         "    nnet = NetworkFactory()\n    nnet.cuda()\n    return nnet\n\n\n"
                         "if __name__ == '__main__':\n    test()\n",
    })
    assert _programs(tmp_path)["test_chart.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_warp_ctc_keeps_the_cpu_of_a_mac(tmp_path: Path) -> None:
    """ocr.pytorch's train_warp_ctc.py: warpctc_pytorch's CTCLoss runs `cpu_ctc` on any tensor not on CUDA."""
    _write(tmp_path, {
        "train.py": "import torch\nfrom warpctc_pytorch import CTCLoss\n\nif __name__ == '__main__':\n"
                    "    print(CTCLoss()(torch.ones(2).cuda()))\n",
    })
    program = _programs(tmp_path)["train.py"]
    assert program["runs_on"] == ["cuda", "cpu"], program
    assert ("mps", "train.py", 5) in {(b["target"], b["path"], b["line"]) for b in program["blockers"]}


ALPACA = """import fire
import torch
from transformers import LlamaForCausalLM


def train(base_model: str = "decapoda/llama-7b"):
    model = LlamaForCausalLM.from_pretrained(
        base_model,
        load_in_8bit=LOAD,
        torch_dtype=torch.float16,
    )
    model.cuda()


if __name__ == "__main__":
    fire.Fire(train)
"""


@pytest.mark.parametrize("option, runs_off_cuda, why", [
    ("load_in_8bit=True", False, "loads through bitsandbytes (`load_in_8bit=True`)"),
    ("load_in_8bit=False", True, ""),
    # distributed-training-guide: transformers attends with flash_attn, which installs only with CUDA
    ("attn_implementation='flash_attention_2'", False, "loads through flash_attn"),
    ("attn_implementation='sdpa'", True, ""),
])
def test_a_model_loaded_through_a_cuda_only_library_needs_cuda(tmp_path: Path, option: str, runs_off_cuda: bool,
                                                                why: str) -> None:
    # alpaca-lora's finetune.py: `load_in_8bit=True` quantizes with bitsandbytes, a CUDA-only library
    (tmp_path / "finetune.py").write_text(ALPACA.replace("load_in_8bit=LOAD", option))
    script = _programs(tmp_path)["finetune.py"]
    assert script["runs_on"] == (["cuda", "mps", "xpu", "cpu"] if runs_off_cuda else ["cuda"]), script
    if not runs_off_cuda:
        assert {(b["target"], b["line"]) for b in script["blockers"]} == {(t, 9) for t in ("mps", "xpu", "cpu")}
        assert why in script["blockers"][0]["reason"]


@pytest.mark.parametrize("guard, runs_off_cuda", [("torch.cuda.is_available()", True), ("fused", False)])
def test_a_cuda_library_imported_by_a_function_called_only_on_cuda_is_no_requirement(
        tmp_path: Path, guard: str, runs_off_cuda: bool) -> None:
    # Adan's optimizer: `if torch.cuda.is_available(): _fused_adan_multi_tensor(...)`, the function that imports
    # its CUDA extension; off CUDA the step takes the other arm
    _write(tmp_path, {
        "adan.py": "import torch\n\n\ndef _fused(p):\n    import flash_attn\n    return p\n\n\n"
                   "def step(p, fused=True):\n"
                   f"    if {guard}:\n        return _fused(p)\n    return p * 2\n",
        "train.py": "import torch\nfrom adan import step\n\nif __name__ == '__main__':\n"
                    "    print(step(torch.ones(2).cuda()))\n",
    })
    script = _programs(tmp_path)["train.py"]
    assert script["runs_on"] == (["cuda", "mps", "xpu", "cpu"] if runs_off_cuda else ["cuda"]), script


@pytest.mark.parametrize("backend, runs_off_cuda", [("cupy", False), ("torch", True)])
def test_neurons_on_the_cupy_backend_need_cuda(tmp_path: Path, backend: str, runs_off_cuda: bool) -> None:
    # spikformer: spikingjelly's `MultiStepLIFNode(..., backend='cupy')` runs CuPy kernels, CUDA's alone
    _write(tmp_path, {
        "model.py": "import torch.nn as nn\nfrom spikingjelly.clock_driven.neuron import MultiStepLIFNode\n\n\n"
                    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    f"        self.lif = MultiStepLIFNode(tau=2.0, backend='{backend}')\n",
        "train.py": "import torch\nfrom model import Net\n\nif __name__ == '__main__':\n"
                    "    net = Net().cuda()\n    x = torch.ones(2).cuda()\n",
    })
    script = _programs(tmp_path)["train.py"]
    assert script["runs_on"] == (["cuda", "mps", "xpu", "cpu"] if runs_off_cuda else ["cuda"]), script
    if not runs_off_cuda:
        assert {(b["target"], b["path"], b["line"]) for b in script["blockers"]} == {
            (t, "model.py", 8) for t in ("mps", "xpu", "cpu")}
        assert "loads through CuPy (`backend='cupy'`)" in script["blockers"][0]["reason"]


NVML = """import torch
from pynvml import nvmlDeviceGetHandleByIndex, nvmlInit


def log_gpu_memory_metadata() -> None:
    gpus_num = torch.cuda.device_count()
GUARD    nvmlInit()
    for num in range(gpus_num):
        print(nvmlDeviceGetHandleByIndex(num))
"""


@pytest.mark.parametrize("guard, runs_off_cuda", [
    ("    if gpus_num == 0:\n        return\n", True),  # yet-another-lightning-hydra-template's env_utils.py
    ("", False),
])
def test_nvml_imports_anywhere_and_its_calls_need_cuda(tmp_path: Path, guard: str, runs_off_cuda: bool) -> None:
    (tmp_path / "env_utils.py").write_text(NVML.replace("GUARD", guard))
    (tmp_path / "train.py").write_text("import torch\nfrom env_utils import log_gpu_memory_metadata\n\n"
                                       "if __name__ == '__main__':\n    log_gpu_memory_metadata()\n"
                                       "    print(torch.ones(2).cuda())\n")
    script = _programs(tmp_path)["train.py"]
    assert script["runs_on"] == (["cuda", "mps", "xpu", "cpu"] if runs_off_cuda else ["cuda"]), script


@pytest.mark.parametrize("made, blocked", [
    ("torch.tensor(np.log(p) - np.log(1.0 - p))", True),  # residual-flows' iResBlock: numpy's float64 scalars
    ("torch.tensor(np.log(p) - np.log(1.0 - p), dtype=torch.float32)", False),
    ("torch.tensor(p)", False),  # a Python float: torch's default dtype
])
def test_a_parameter_made_of_numpy_scalars_is_float64(tmp_path: Path, made: str, blocked: bool) -> None:
    (tmp_path / "block.py").write_text(
        "import numpy as np\nimport torch\n\n\nclass Block(torch.nn.Module):\n    def __init__(self, p=0.5):\n"
        f"        super().__init__()\n        self.geom_p = torch.nn.Parameter({made})\n")
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom block import Block\n\nif __name__ == '__main__':\n"
        "    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    print(Block().to(device).geom_p)\n")
    script = _programs(tmp_path)["train.py"]
    assert ("mps" not in script["runs_on"]) == blocked, script
    if blocked:
        assert {(b["target"], b["path"], b["line"]) for b in script["blockers"]} == {("mps", "block.py", 8)}
    # the port keeps a Mac on the CPU where `programs` says MPS cannot run it: it holds the choice CUDA-or-CPU, or
    # makes it the runtime's and writes `tp.avoid_mps` (residual-flows' train_toy.py, with no `.cuda()` to port)
    codes = {d["code"] for d in _migrated(tmp_path)["train.py"]["rewrites"]}
    assert ("TP005" not in codes or "TP019" in codes) if blocked else ("TP005" in codes and "TP019" not in codes)


@pytest.mark.parametrize("handler, cuda_only", [
    ('    print("Importing exception")\n', True),  # torch-radon: nothing bound in its place
    ("    from radon import cpu_kernels as radon_cuda\n", False),  # a fallback
])
def test_a_name_only_a_failing_cuda_import_binds_needs_cuda_where_read(tmp_path: Path, handler: str,
                                                                       cuda_only: bool) -> None:
    (tmp_path / "radon").mkdir()
    (tmp_path / "radon" / "cpu_kernels.py").write_text("def TextureCache(n):\n    return n\n")
    (tmp_path / "radon" / "__init__.py").write_text(
        f"import torch\n\ntry:\n    import radon_cuda\nexcept Exception as e:\n{handler}\n\n"
        "class Radon:\n    def __init__(self, n):\n        self.cache = radon_cuda.TextureCache(n)\n")
    (tmp_path / "fbp.py").write_text("import torch\nfrom radon import Radon\n\nradon = Radon(8)\n"
                                     "print(torch.ones(2).cuda())\n")
    script = _programs(tmp_path)["fbp.py"]
    assert script["runs_on"] == (["cuda"] if cuda_only else ["cuda", "mps", "xpu", "cpu"]), script


@pytest.mark.parametrize("top, script", [
    ("x = torch.ones(2).cuda()\n", True),  # a move of data at the top level is work, with no call statement
    ("device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n", False),  # a setting others read
])
def test_a_module_that_moves_data_at_its_top_level_is_a_script(tmp_path: Path, top: str, script: bool) -> None:
    (tmp_path / "run.py").write_text("import torch\n\n" + top)
    assert ("run.py" in _programs(tmp_path)) is script


def test_a_legacy_double_tensor_moved_to_the_device_blocks_mps(tmp_path: Path) -> None:
    # torch-radon's test_shearlet: `torch.DoubleTensor(x).to(device)` is float64 on the device
    (tmp_path / "test_shearlet.py").write_text(
        "import numpy as np\nimport torch\n\n\ndef test_shearlet():\n    device = torch.device('cuda')\n"
        "    dx = torch.DoubleTensor(np.ones((4, 4))).to(device)\n    assert dx.sum() == 16\n")
    test = _programs(tmp_path)["test_shearlet.py"]
    assert "mps" not in test["runs_on"] and ("mps", 7) in {(b["target"], b["line"]) for b in test["blockers"]}, test


def test_a_sync_batchnorm_another_module_builds_blocks_the_cpu_and_mps_where_the_script_makes_a_group(
        tmp_path: Path) -> None:
    """MagFace: `trainer_dist.py` makes the process group, `models.build()` converts the model to SyncBatchNorm,
    which trains on CUDA or XPU input alone: not on the CPU, nor on a Mac."""
    _write(tmp_path, {
        "models.py": "import torch\n\n\ndef build():\n    model = torch.nn.Sequential(torch.nn.BatchNorm1d(2))\n"
                     "    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(model).cuda()\n",
        "train.py": "import torch\nimport torch.distributed as dist\n\nimport models\n\n\ndef main():\n"
                    "    dist.init_process_group('nccl')\n    model = models.build()\n\n\n"
                    "if __name__ == '__main__':\n    main()\n",
        "infer.py": "import models\n\nprint(models.build())\n",
    })
    found = _programs(tmp_path)
    assert found["train.py"]["runs_on"] == ["cuda", "xpu"]
    assert found["infer.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]  # no group: plain batch norm


_CPU_ONLY_FALLBACK = {
    "op/__init__.py": "",
    "op/fused_act_cpu.py": (
        "import torch\nfrom torch.nn import functional as F\n\n\n"
        "def fused_leaky_relu(input, bias):\n"
        "    if input.device.type == \"cpu\":\n"
        "        return F.leaky_relu(input + bias.view(1, -1, 1, 1), negative_slope=0.2)\n"
        "    else:\n"
        "        return FusedLeakyReLUFunction.apply(input.contiguous(), bias)\n"),
    "model.py": (
        "import torch\n\nif torch.cuda.is_available():\n    from op.fused_act import fused_leaky_relu\n"
        "else:\n    from op.fused_act_cpu import fused_leaky_relu\n\n\n"
        "def act(x, bias):\n    return fused_leaky_relu(x, bias)\n"),
    "predict.py": (
        "import torch\nfrom model import act\n\ndevice = \"cuda\"\nif __name__ == \"__main__\":\n"
        "    print(act(torch.randn(1, 3, 4, 4, device=device), torch.zeros(3, device=device)).shape)\n"),
}


def test_a_fallback_for_cpu_tensors_alone_keeps_the_program_cuda_or_cpu(tmp_path: Path) -> None:
    # JoJoGAN: off CUDA, model.py imports the CPU variant of its op, whose other devices reach an unbound name
    found = _programs(_write(tmp_path, _CPU_ONLY_FALLBACK))["predict.py"]
    assert found["runs_on"] == ["cuda", "cpu"]
    assert {(b["target"], b["path"], b["line"]) for b in found["blockers"]} == {
        ("mps", "op/fused_act_cpu.py", 9), ("xpu", "op/fused_act_cpu.py", 9)}
    migrated = (tmp_path / "predict.py").read_text()
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache", "--apply"])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "predict.py").read_text() != migrated
    assert 'tp.keep_cuda_or_cpu("a fallback for CPU tensors alone' in (tmp_path / "predict.py").read_text()


def test_a_fallback_whose_other_branch_is_bound_blocks_nothing(tmp_path: Path) -> None:
    files = dict(_CPU_ONLY_FALLBACK)
    files["op/fused_act_cpu.py"] = files["op/fused_act_cpu.py"].replace(
        "import torch\n", "import torch\nfrom op.kernels import FusedLeakyReLUFunction\n", 1)
    files["op/kernels.py"] = "class FusedLeakyReLUFunction:\n    pass\n"  # (an import of a missing module runs nowhere)
    found = _programs(_write(tmp_path, files))["predict.py"]
    assert found["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_notebook_whose_program_mps_cannot_run_gets_the_call_too(tmp_path: Path) -> None:
    # JoJoGAN's stylize.ipynb: one kernel runs its cells, a program as a script is
    import nbformat
    from nbformat import v4

    files = {name: text for name, text in _CPU_ONLY_FALLBACK.items() if name != "predict.py"}
    book = v4.new_notebook(cells=[v4.new_code_cell("import torch\nfrom model import act"), v4.new_code_cell(
        "device = 'cuda'\nprint(act(torch.randn(1, 3, 4, 4, device=device), torch.zeros(3, device=device)).shape)")])
    files["stylize.ipynb"] = nbformat.writes(book)
    _applied(tmp_path, files)
    cells = [c.source for c in nbformat.read(tmp_path / "stylize.ipynb", as_version=4).cells]
    assert 'tp.keep_cuda_or_cpu("a fallback for CPU tensors alone' in cells[0]
    assert "device = tp.device_str()" in cells[1]


def test_a_module_that_does_not_parse_still_leads_to_what_it_imports(tmp_path: Path) -> None:
    # ABWIM4KBRD: JointModel.py holds Python 2's `.cuda(async=True)`; its `import layers` reaches cupy all the same
    _write(tmp_path, {
        "kernels.py": "import torch\nfrom cupy.cuda import function\n",
        "layers.py": "import torch\nimport kernels\n",
        "model.py": "import torch\nimport layers\n\n\ndef step(x):\n    return x.cuda(async=True)\n",
        "train.py": "import torch\nfrom model import step\n\nif __name__ == '__main__':\n    step(torch.zeros(1))\n",
    })
    found = _programs(tmp_path)["train.py"]
    assert found["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in found["blockers"]} == {("kernels.py", 2)}


def test_a_package_dir_of_a_build_script_names_the_package_its_folder_holds(tmp_path: Path) -> None:
    # haste: `package_dir={'haste_pytorch': 'frameworks/pytorch'}`, whose gru.py imports the CUDA-built extension
    _write(tmp_path, {
        "setup.py": ("from setuptools import setup\nfrom torch.utils import cpp_extension\n\n"
                     "extension = cpp_extension.CUDAExtension('haste_lib', sources=['frameworks/pytorch/gru.cu'])\n"
                     "setup(name='haste', packages=['haste'], package_dir={'haste': 'frameworks/pytorch'},\n"
                     "      ext_modules=[extension])\n"),
        "frameworks/pytorch/__init__.py": "from .gru import GRU\n",
        "frameworks/pytorch/gru.py": ("import haste_lib as LIB\nimport torch\n\n\n"
                                      "class GRU(torch.nn.Module):\n    pass\n"),
        "validation/check.py": "import torch\nimport haste\n\nif __name__ == '__main__':\n    print(haste.GRU())\n",
    })
    found = _programs(tmp_path)["validation/check.py"]
    assert found["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in found["blockers"]} == {("frameworks/pytorch/gru.py", 1)}


@pytest.mark.parametrize(("kernel", "runs_on"), [
    # torch-householder: ATen's operators alone, which dispatch on every device
    ("torch::Tensor f(torch::Tensor x) { return at::bmm(x, x); }\n", ["cuda", "mps", "xpu", "cpu"]),
    # semseg's psamask: a kernel of its own reads the CPU's memory
    ("torch::Tensor f(torch::Tensor x) { float* p = x.data_ptr<float>(); return x; }\n", ["cuda", "cpu"]),
])
def test_a_cpu_extension_of_aten_operators_alone_runs_on_every_device(
        tmp_path: Path, kernel: str, runs_on: list[str]) -> None:
    _write(tmp_path, {
        "ops/householder.cpp": "#include <torch/extension.h>\n" + kernel,
        "ops/__init__.py": ("import os\nfrom torch.utils.cpp_extension import load\n\n"
                            "ops = load(name='hh',\n"
                            "           sources=[os.path.join(os.path.dirname(__file__), 'householder.cpp')])\n"),
        "run.py": ("import torch\nfrom ops import ops\n\nif __name__ == '__main__':\n"
                   "    print(ops.f(torch.ones(2, 2, 2).cuda()))\n"),
    })
    assert _programs(tmp_path)["run.py"]["runs_on"] == runs_on


def test_a_script_that_does_not_parse_runs_nowhere_and_its_modules_stay_as_written(tmp_path: Path) -> None:
    # manifold_mixup's supervised/main.py: Python 2's `.cuda(async=True)`; only it reaches models.py
    _write(tmp_path, {
        "models.py": "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n",
        "main.py": ("import torch\nfrom models import build\n\n\ndef step(x):\n    return x.cuda(async=True)\n\n\n"
                    "if __name__ == '__main__':\n    step(build())\n"),
    })
    found = _programs(tmp_path)["main.py"]
    assert found["runs_on"] == [] and {b["line"] for b in found["blockers"]} == {6}
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert "[R25 runs-nowhere] only programs that run on no device reach this file" in done.output
    assert "+++" not in done.output


@pytest.mark.parametrize(("files", "entry", "above"), [
    # Bag-of-Tricks-for-AT: train_cifar.py's own DataParallel gives it the call; `from utils import *` picks the
    # device when imported, so the call goes above that import (below it, utils' device is MPS already)
    ({"utils.py": ("import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
                   "def batches(xs):\n    return [x.to(device) for x in xs]\n"),
      "train.py": ("import torch\nimport torch.nn as nn\n\nfrom utils import *\n\n\nif __name__ == '__main__':\n"
                   "    model = nn.DataParallel(nn.Linear(2, 2)).cuda()\n"
                   "    print([model(x) for x in batches([torch.ones(1, 2)])])\n")}, "train.py", "from utils import *"),
    # P-tuning-v2's batch_dense_retrieval_colbert.py imports `colbert.parameters` (DEVICE picked at import) first
    # through a module of its own, lines before its own `from colbert.parameters import DEVICE`
    ({"params.py": "import torch\n\nDEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
      "loaders.py": "import torch\nfrom params import DEVICE\n\n\ndef load(x):\n    return x.to(DEVICE)\n",
      "run.py": ("import torch\nimport torch.nn as nn\n\nfrom loaders import load\nfrom params import DEVICE\n\n\n"
                 "if __name__ == '__main__':\n    model = nn.DataParallel(nn.Linear(2, 2)).cuda()\n"
                 "    print(model(load(torch.ones(1, 2))), DEVICE)\n")}, "run.py", "from loaders import load"),
])
def test_the_call_goes_above_the_first_import_that_loads_a_module_picking_the_device(
        tmp_path: Path, files: dict[str, str], entry: str, above: str) -> None:
    _applied(tmp_path, files)
    lines = (tmp_path / entry).read_text().splitlines()
    call = next(i for i, line in enumerate(lines) if line.startswith("tp.avoid_mps("))
    assert call < lines.index(above)


def test_a_flag_an_object_keeps_itself_is_no_tensors_place(tmp_path: Path) -> None:
    # self-supervised-depth-completion's Intrinsics: `self.is_cuda = True` in its own `cuda()`, then
    # `if self.is_cuda: new.cuda()`: the port moves both to the runtime's device, no data splits
    _write(tmp_path, {
        "intrinsics.py": ("import torch\n\n\nclass Intrinsics:\n    def __init__(self):\n"
                          "        self.x = torch.zeros(2)\n        self.is_cuda = False\n\n"
                          "    def cuda(self):\n        self.x = self.x.cuda()\n        self.is_cuda = True\n"
                          "        return self\n\n    def scale(self):\n        new = Intrinsics()\n"
                          "        if self.is_cuda:\n            new.cuda()\n        return new\n"),
        "main.py": ("import torch\nfrom intrinsics import Intrinsics\n\nif __name__ == '__main__':\n"
                    "    k = Intrinsics().cuda().scale()\n    print(k.x + torch.ones(2).cuda())\n"),
    })
    assert _programs(tmp_path)["main.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_choice_made_by_names_derived_from_the_cuda_count_counts_the_accelerator(tmp_path: Path) -> None:
    # BiLSTM-CRF-NER (pytorch-template's prepare_device): its ids are emptied where `torch.cuda.device_count()` is
    # 0, so, the count kept, its device would stay the CPU off CUDA while the script sends its data to the config's
    # device, which the port makes the runtime's: the count becomes the accelerator's, and the two stay together
    _applied(tmp_path, {
        "utils.py": ("import torch\n\n\ndef prepare_device(ids):\n    n_gpu = torch.cuda.device_count()\n"
                     "    if n_gpu == 0:\n        ids = []\n"
                     "    return torch.device('cuda:%d' % ids[0] if len(ids) > 0 else 'cpu')\n"),
        "train.py": ("import torch\nfrom utils import prepare_device\n\nconfig = {'n_gpus': [0]}\n\n"
                     "if __name__ == '__main__':\n"
                     "    device = 'cuda:%d' % config['n_gpus'][0] if len(config['n_gpus']) else 'cpu'\n"
                     "    model = torch.nn.Linear(2, 2).to(prepare_device(config['n_gpus']))\n"
                     "    print(model(torch.ones(1, 2, device=device)))\n"),
    })
    assert "n_gpu = tp.device_count()" in (tmp_path / "utils.py").read_text()
    assert "keep_cuda_or_cpu" not in (tmp_path / "train.py").read_text()
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]



def test_a_parameter_default_picks_the_device_on_import() -> None:
    # CLAM's `def initiate_model(args, ckpt_path, device=tp.device_str())`: the default is computed on import, so
    # a `tp.keep_cuda_or_cpu` call must go above the import that leads there; a move in a body runs later
    from torchport.pipeline.programs import _picks_on_import
    from torchport.results import FileResult

    text = "def initiate_model(width,\n                   device='cuda'):\n    return width.to('cuda')\n"
    default, body = (FileResult(path=Path("m.py"), display="m.py", original=text, facts={"moves": [line]})
                     for line in (2, 3))
    assert _picks_on_import(default) and not _picks_on_import(body)


@pytest.mark.parametrize("choice", ['"cuda:%s" % args.gpu_ids[0]', 'f"cuda:{args.gpu_ids[0]}"'])
def test_a_formatted_cuda_choice_kept_beside_a_ported_move_keeps_the_program_on_cuda_or_cpu(
        tmp_path: Path, choice: str) -> None:
    # BIT_CD/ChangeFormer: `init_net` moves the model to `gpu_ids[0]` (ported), while the trainer keeps
    # `torch.device("cuda:%s" % ids[0] if torch.cuda.is_available() and len(ids) > 0 else "cpu")` for the data
    files = {
        "networks.py": "def init_net(net, gpu_ids):\n    net.cuda(gpu_ids[0])\n    return net\n",
        "m.py": "import torch\nfrom networks import init_net\n\n\nclass Trainer:\n    def __init__(self, args, net):\n"
                "        net = init_net(net, args.gpu_ids)\n"
                f"        self.device = torch.device({choice} if torch.cuda.is_available() and len(args.gpu_ids) > 0"
                " else 'cpu')\n        self.net = net\n\n    def step(self, x):\n"
                "        return self.net(x.to(self.device))\n\n"
                "    def rate(self, steps):\n        imps = steps / 2  # iterations per second\n"
                "        return imps\n",
        "main.py": "import torch\nfrom m import Trainer\n\nif __name__ == '__main__':\n"
                   "    class A:\n        gpu_ids = [0]\n"
                   "    print(Trainer(A(), torch.nn.Linear(2, 2)).step(torch.ones(2)))\n",
    }
    script = _programs(_write(tmp_path, files))["main.py"]
    assert script["runs_on"] == ["cuda", "cpu"], script
    _applied(tmp_path, files)
    assert "tp.keep_cuda_or_cpu(" in (tmp_path / "main.py").read_text()


def test_a_float64_tensor_made_of_a_numpy_value_keeps_the_program_off_mps(tmp_path: Path) -> None:
    # online-dt: `torch.tensor(np.log(init_temperature))` in the model, a float64 no text of the run names
    _applied(tmp_path, {
        "model.py": "import numpy as np\nimport torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
                    "    def __init__(self):\n        super().__init__()\n"
                    "        self.temperature = torch.tensor(np.log(0.1))\n",
        "main.py": "import argparse\n\nfrom model import Net\n\nparser = argparse.ArgumentParser()\n"
                   "parser.add_argument('--device', default='cuda')\n\nif __name__ == '__main__':\n"
                   "    args = parser.parse_args()\n    net = Net().to(args.device)\n",
    })
    assert 'tp.avoid_mps("float64, model.py:9")' in (tmp_path / "main.py").read_text()


def test_a_query_flag_handed_from_function_to_function_guards_cuda_only_code(tmp_path: Path) -> None:
    """SimCTG: ``cuda_available = torch.cuda.is_available()`` in the script, handed to ``model_training``, which
    hands its parameter on to ``eval_model``: ``if cuda_available:`` in either runs only on CUDA, so its ``.cuda()``
    stays (a rewrite would change nothing anywhere)."""
    trainer = ("import torch\n\n\ndef eval_model(model, cuda_available, device):\n    x = torch.zeros(2)\n"
               "    if cuda_available:\n        x = x.cuda(device)\n    return model(x)\n\n\n"
               "def model_training(model, cuda_available, device):\n    x = torch.ones(2)\n    if cuda_available:\n"
               "        x = x.cuda(device)\n    model(x)\n    return eval_model(model, cuda_available, device)\n")
    _applied(tmp_path, {"trainer.py": trainer, "train.py": (
        "import torch\n\nif __name__ == '__main__':\n    cuda_available = torch.cuda.is_available()\n"
        "    from trainer import model_training\n    model_training(torch.nn.Linear(2, 2), cuda_available, 0)\n")})
    assert (tmp_path / "trainer.py").read_text() == trainer


def test_a_cuda_only_layer_built_by_classes_in_other_modules_keeps_the_script_on_cuda(tmp_path: Path) -> None:
    """Mamba-UNet: SS2D's forward reads `selective_scan_fn`, which only mamba_ssm's import binds (`except: pass`);
    VSSM builds its layers in a loop over their count; MambaUnet, in another module, builds a VSSM; the script
    builds a MambaUnet. Each step needs CUDA, so the script runs on CUDA alone."""
    _write(tmp_path, {
        "layers.py": ("import torch.nn as nn\ntry:\n    from mamba_ssm import selective_scan_fn\nexcept:\n"
                      "    pass\n\n\nclass Scan(nn.Module):\n    def forward(self, x):\n"
                      "        return selective_scan_fn(x)\n"),
        "blocks.py": ("import torch.nn as nn\nfrom layers import Scan\n\n\nclass Block(nn.Module):\n"
                      "    def __init__(self, depth=4):\n        super().__init__()\n"
                      "        self.layers = nn.ModuleList()\n        for i in range(depth):\n"
                      "            self.layers.append(Scan())\n"),
        "net.py": ("import torch.nn as nn\nfrom blocks import Block\n\n\nclass Net(nn.Module):\n"
                   "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n"),
        "train.py": ("import torch\nfrom net import Net\n\nif __name__ == '__main__':\n    model = Net().cuda()\n"
                     "    print(model(torch.zeros(2).cuda()))\n"),
    })
    program = _programs(tmp_path)["train.py"]
    assert program["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"]) for b in program["blockers"]} == {("train.py", 5)}


def test_console_scripts_are_read_from_setup_py_and_setup_cfg_too(tmp_path: Path) -> None:
    """tapqir declares its console scripts in setup.py's ``entry_points``: its ``main`` module is a program
    wherever the command runs, so a call that keeps it off MPS goes at its top, not in its ``__main__`` block."""
    from torchport.pipeline.programs import _console_scripts

    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='t', entry_points={\n"
                                       "    'console_scripts': ['tapqir=tapqir.main:app', 'gui = tapqir.gui:app'],\n"
                                       "})\n")
    (tmp_path / "setup.cfg").write_text("[options.entry_points]\nconsole_scripts =\n    tool = pkg.cli:main\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n[project.scripts]\nrun = "pkg.run:main"\n')
    assert _console_scripts(tmp_path) == {"tapqir.main", "tapqir.gui", "pkg.cli", "pkg.run"}


def test_a_definition_whose_name_the_program_imports_from_elsewhere_does_not_run(tmp_path: Path) -> None:
    """DeblurGANv2: util/metrics.py's `SSIM` moves data only where other data is on CUDA (`.is_cuda`), but the
    trainer imports `PSNR` alone from it and its `SSIM` from skimage; a label names 'SSIM' as a string. No program
    runs util/metrics.py's `SSIM`: nothing keeps the trainer off MPS. A program that imports it does."""
    metrics = ("import torch\n\n\ndef SSIM(a, b):\n    window = torch.ones(1)\n    w = window\n    if a.is_cuda:\n"
               "        w = window.cuda(a.get_device())\n    return (a * w - b).mean()\n\n\n"
               "def PSNR(a, b):\n    return (a - b).pow(2).mean()\n")
    _write(tmp_path, {
        "util/__init__.py": "",
        "util/metrics.py": metrics,
        "models.py": "from skimage.metrics import structural_similarity as SSIM\nfrom util.metrics import PSNR\n\n\n"
                     "def scores(a, b):\n    return PSNR(a, b), SSIM(a, b)\n",
        "labels.py": "NAMES = ('PSNR', 'SSIM')\n",
        "train.py": "import torch\n\nimport labels\nfrom models import scores\n\nif __name__ == '__main__':\n"
                    "    x = torch.ones(2).cuda()\n    print(labels.NAMES, scores(x, x))\n",
        "check.py": "import torch\n\nfrom util.metrics import SSIM\n\nif __name__ == '__main__':\n"
                    "    x = torch.ones(2).cuda()\n    print(SSIM(x, x))\n",
    })
    found = _programs(tmp_path)
    assert found["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert "mps" not in found["check.py"]["runs_on"]


@pytest.mark.parametrize(("use", "kept"), [
    ("    model.load_state_dict(state, strict=False)\n    return model\n", False),
    ("    return state\n", True),  # the loaded tensors themselves are used where the load put them
])
def test_a_checkpoint_mapped_to_cuda_or_the_cpu_and_copied_into_a_model_places_nothing(
        tmp_path: Path, use: str, kept: bool) -> None:
    """SiamMask's load_pretrain: `map_location=lambda storage, loc: storage` without CUDA, `storage.cuda(device)`
    with it; `load_state_dict` copies the tensors into the model's own, wherever they are: no choice is kept that
    the model's data could meet."""
    _write(tmp_path, {
        "load_helper.py": "import torch\n\n\ndef load_pretrain(model, path):\n"
                          "    if not torch.cuda.is_available():\n"
                          "        state = torch.load(path, map_location=lambda storage, loc: storage)\n"
                          "    else:\n        device = torch.cuda.current_device()\n"
                          "        state = torch.load(path, map_location=lambda storage, loc: storage.cuda(device))\n"
                          + use,
        "train.py": "import torch\n\nfrom load_helper import load_pretrain\n\nif __name__ == '__main__':\n"
                    "    model = load_pretrain(torch.nn.Linear(2, 2), 'w.pth')\n    model = model.cuda()\n"
                    "    print(model(torch.ones(2).cuda()))\n",
    })
    assert ("mps" in _programs(tmp_path)["train.py"]["runs_on"]) is not kept


@pytest.mark.parametrize(("given", "ported"), [
    ("args.use_cuda and torch.cuda.is_available()", False),  # false without CUDA, at every call
    ("args.use_cuda", True),  # the user's flag alone: CUDA asked for on any machine
])
def test_a_cuda_flag_handed_through_a_package_to_a_class_keeps_its_branch(tmp_path: Path, given: str,
                                                                          ported: bool) -> None:
    """deep_sort: `use_cuda = args.use_cuda and torch.cuda.is_available()`, handed to `build_detector(cfg,
    use_cuda)` in an unchanged package `__init__`, which makes `MMDet(..., use_cuda=use_cuda)` (re-exported from
    another module): `"cuda" if use_cuda else "cpu"` there picks CUDA only where CUDA is, a port changes nothing."""
    _write(tmp_path, {
        "det/__init__.py": "from .model import Det\n\n\ndef build(use_cuda):\n    return Det(2, use_cuda=use_cuda)\n",
        "det/model.py": "import torch\n\n\nclass Det:\n    def __init__(self, width, use_cuda=True):\n"
                        "        self.device = 'cuda' if use_cuda else 'cpu'\n"
                        "        self.net = torch.nn.Linear(width, width).to(self.device)\n",
        "main.py": "import argparse\n\nimport torch\n\nfrom det import build\n\nif __name__ == '__main__':\n"
                   "    parser = argparse.ArgumentParser()\n    parser.add_argument('--cpu', dest='use_cuda', "
                   "action='store_false', default=True)\n    args = parser.parse_args()\n"
                   f"    use_cuda = {given}\n    print(build(use_cuda).device)\n",
    })
    assert _migrated(tmp_path)["det/model.py"]["changed"] is ported


def test_test_modules_fed_to_a_cpu_only_extension_keep_the_cpu_only_where_every_one_is(tmp_path: Path) -> None:
    """QPyTorch's tests feed a C++ extension built for the CPU alone: one pytest process runs them all, so the call
    that keeps a Mac (and an Intel GPU) on the CPU goes into each, and only where every test module that moves
    data to the runtime's device needs it."""
    ops = "import torch\nfrom torch.utils.cpp_extension import load\n\nops = load('ops', ['ops.cpp'])\n\n\n" \
          "def quantize(x):\n    return ops.quantize(x)\n"
    test = "import torch\nfrom quant import quantize\n\n\ndef test_{0}():\n" \
           "    assert quantize(torch.ones(2, device='cuda')).shape == (2,)\n"
    call = 'tp.keep_cuda_or_cpu("a C++ extension built for the CPU alone, ../quant.py:4")'  # from tests/
    _applied(tmp_path / "all", {"quant.py": ops, "tests/test_a.py": test.format("a"),
                                "tests/test_b.py": test.format("b")})
    for name in ("test_a.py", "test_b.py"):
        assert call in (tmp_path / "all" / "tests" / name).read_text()
    plain = "import torch\n\n\ndef test_c():\n    assert torch.ones(2, device='cuda').sum() == 2\n"
    _applied(tmp_path / "mixed", {"quant.py": ops, "tests/test_a.py": test.format("a"), "tests/test_c.py": plain})
    assert "keep_cuda_or_cpu" not in (tmp_path / "mixed" / "tests" / "test_a.py").read_text()
    assert "tp.device()" in (tmp_path / "mixed" / "tests" / "test_c.py").read_text()


def test_a_call_whose_program_changes_nothing_else_is_dropped_after_the_last_step(tmp_path: Path) -> None:
    """DDSP-SVC: the steps after the MPS pass left every move of the scripts' programs as written, so the
    `tp.keep_cuda_or_cpu`/`tp.avoid_mps` calls were all the port still made: they ask a runtime nothing else asks."""
    from torchport.pipeline.programs import lone_keeps
    from torchport.results import FileResult

    def result(name: str, text: str, migrated: str, rewrites: dict[str, int]) -> FileResult:
        (tmp_path / name).write_text(text)
        return FileResult(tmp_path / name, name, text, migrated, rewrites=rewrites)

    script = "import torch\nimport model\n\nif __name__ == '__main__':\n    print(model.f())\n"
    results = [result("main.py", script, script + "#", {"TP019": 1}),
               result("model.py", "import torch\n\n\ndef f():\n    return 1\n", "import torch\n\n\ndef f():\n"
                      "    return 1\n", {})]
    avoids = {0: "float64, model.py:5"}
    assert lone_keeps(results, avoids) == set()  # an avoid_mps answers what MPS lacks: kept while the run goes on
    assert lone_keeps(results, avoids, every=True) == {0}
    results[1].migrated = results[1].original + "x = tp.device()\n"  # a module it reaches asks the runtime
    assert lone_keeps(results, avoids, every=True) == set()


def test_a_call_whose_program_runs_no_change_of_the_modules_it_reaches_is_dropped(tmp_path: Path) -> None:
    """dgl-ke's kvclient: it imports a module whose trainer is ported, but runs none of that: its keep answers
    nothing. A program that names the ported function keeps the call."""
    from torchport.pipeline.programs import lone_keeps
    from torchport.results import FileResult

    model = "import torch\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return torch.ones(1).cuda()\n"
    ported = model.replace(".cuda()", ".to(tp.device())").replace("import torch\n", "import torch\n"
                                                                    "from torchport import runtime as tp\n")
    for called, kept in (("f", True), ("g", False)):
        script = f"import torch\nimport model\n\nif __name__ == '__main__':\n    print(model.{called}())\n"
        results = [FileResult(tmp_path / "main.py", "main.py", script, script + "#", rewrites={"TP019": 1}),
                   FileResult(tmp_path / "model.py", "model.py", model, ported, rewrites={"TP001": 1})]
        for r in results:
            r.path.write_text(r.original or "")
        assert lone_keeps(results, {0: "float64, model.py:9"}, every=True) == ({0} if kept else set()), called


def test_a_device_setting_made_on_import_is_the_programs_choice(tmp_path: Path) -> None:
    """FCOS's `_C.MODEL.DEVICE = "cuda"` in its config defaults, read by a demo's predictor that moves its data
    there: ported to the runtime's pick, the demo's program lacks MPS's float64 and keeps the CPU on a Mac."""
    _applied(tmp_path, {
        "config.py": 'class Node:\n    pass\n\n\ncfg = Node()\ncfg.DEVICE = "cuda"\n',
        "predictor.py": "import torch\nfrom config import cfg\n\n\ndef run():\n"
                        "    x = torch.ones(2, dtype=torch.float64)\n    return x.to(cfg.DEVICE)\n",
        "demo.py": "from config import cfg\nfrom predictor import run\n\nif __name__ == '__main__':\n"
                   "    print(run())\n",
    })
    assert 'cfg.DEVICE = tp.device_str()' in (tmp_path / "config.py").read_text()
    assert 'tp.avoid_mps("float64, predictor.py:6")' in (tmp_path / "demo.py").read_text()


@pytest.mark.parametrize(("base", "call", "runs_on_mps"), [
    ("nn.Module", "", True),  # MedicalZooPytorch's DenseVoxelNet.test(): nothing calls it
    ("nn.Module", "\n    net.test()", False),
    ("pl.LightningModule", "", False),  # a framework's base calls hooks no code names: they count
])
def test_what_mps_lacks_in_a_method_counts_where_a_program_names_the_method(
        tmp_path: Path, base: str, call: str, runs_on_mps: bool) -> None:
    _write(tmp_path, {
        "net.py": ("import torch\nimport torch.nn as nn\nimport pytorch_lightning as pl\n"
                   "from torchsummary import summary\n\n\n"
                   f"class Net({base}):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.fc = nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n"
                   "    def test(self):\n        summary(self, (2,))\n"),
        "main.py": ("import torch\nfrom net import Net\n\nif __name__ == '__main__':\n    net = Net().cuda()\n"
                    f"    print(net(torch.ones(1, 2).cuda())){call}\n"),
    })
    assert ("mps" in _programs(tmp_path)["main.py"]["runs_on"]) is runs_on_mps


def test_a_choice_held_because_no_path_off_cuda_takes_its_cuda_arm_keeps_the_program_cuda_or_cpu(
        tmp_path: Path) -> None:
    """focal_calibration's train.py: `cuda = False`, `if torch.cuda.is_available() and args.gpu: cuda = True`,
    `device = torch.device("cuda" if cuda else "cpu")` (here the flag also picks a CUDA tensor type, so the guard
    stays CUDA's and the choice's port is held: off CUDA the arm never runs), while
    `net.cuda()` under the user's `--gpu` option is ported. The batches go to `device`, the CPU off CUDA: on a Mac
    the model would be on MPS and its inputs on the CPU, so the program keeps the CPU there."""
    script = ("import argparse\n\nimport torch\n\n\ndef train(net, device):\n    x = torch.ones(1, 2).to(device)\n"
              "    return net(x)\n\n\nif __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
              "    parser.add_argument('--gpu', default=True)\n    args = parser.parse_args()\n    cuda = False\n"
              "    if torch.cuda.is_available() and args.gpu:\n        cuda = True\n"
              "    device = torch.device('cuda' if cuda else 'cpu')\n    net = torch.nn.Linear(2, 2)\n"
              "    kind = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
              "    if args.gpu is True:\n        net.cuda()\n    train(net, device)\n")
    _applied(tmp_path, {"train.py": script})
    ported = (tmp_path / "train.py").read_text()
    assert "tp.keep_cuda_or_cpu(\"a device choice kept CUDA-or-CPU beside data moved to the picked device, " \
           "train.py:16\")" in ported and "net.to(tp.device())" in ported
    assert "device = torch.device('cuda' if cuda else 'cpu')" in ported


def test_a_held_choice_nothing_reads_keeps_nothing() -> None:
    """focal_calibration's evaluate.py binds `device = torch.device("cuda" if cuda else "cpu")` and never reads it
    (`torch.device` itself is no read of it): held, it keeps no program CUDA-or-CPU; a placement that picks its
    other arm off CUDA does; a statement that never runs off CUDA (T2M-GPT's `except:` fallback) places nothing."""
    import ast

    from torchport.pipeline.engine import _read_where_bound

    tree = ast.parse("import torch\ndevice = torch.device('cuda' if cuda else 'cpu')\nnet = torch.nn.Linear(2, 2)\n"
                     "net.cuda() if cuda else net\nother = torch.device('cuda' if cuda else 'cpu')\nprint(other)\n"
                     "try:\n    x = f()\nexcept Exception:\n    x = torch.ones(1).cuda()\n")
    assert _read_where_bound(tree, {2, 4, 5, 10}) == {4, 5}
    # a choice bound with others (a tuple) is read by any of them; an annotated one unread keeps nothing
    tree = ast.parse("dev, amp = ('cuda', True) if cuda else ('cpu', False)\nprint(amp)\n"
                     "device: str = 'cuda' if cuda else 'cpu'\n")
    assert _read_where_bound(tree, {1, 3}) == {1}


def test_a_module_that_constructs_a_picker_when_imported_gets_the_keep_above_its_import(tmp_path: Path) -> None:
    """Text2Video-Zero's app.py: `from model import Model` imports utils.py, whose `apply_midas = MidasDetector()`
    runs `__init__`, which moves its network to the runtime's device: the pick happens on import, so the
    `tp.keep_cuda_or_cpu` call (a choice kept CUDA-or-CPU elsewhere in the program) goes above that import."""
    _applied(tmp_path, {
        "detector.py": ("import torch\n\n\nclass Detector:\n    def __init__(self):\n"
                        "        self.net = torch.nn.Linear(2, 2).cuda()\n"),
        "utils.py": "from detector import Detector\n\napply_detector = Detector()\n",
        "app.py": ("import torch\n\nfrom utils import apply_detector\n\n\nif __name__ == '__main__':\n"
                   "    device = 'cuda' if torch.cuda.is_available() and torch.cuda.device_count() > 1 else 'cpu'\n"
                   "    x = torch.ones(1, 2).to(device)\n    print(apply_detector.net(x.cuda()))\n"),
    })
    app = (tmp_path / "app.py").read_text()
    assert "keep_cuda_or_cpu" in app
    assert app.index("tp.keep_cuda_or_cpu(") < app.index("from utils import apply_detector"), app


def test_a_class_whose_construction_moves_nothing_does_not_pick_on_import(tmp_path: Path) -> None:
    """`apply_detector = Detector()` where only `Detector.run` moves data (not `__init__`), or a detector made in a
    module-level lambda: importing it picks nothing, and the call stays after the imports."""
    from torchport.pipeline.programs import _calls_a_picker
    from torchport.pipeline.project import Project
    from torchport.results import FileResult

    detector = ("import torch\n\n\nclass Detector:\n    def __init__(self):\n        self.net = None\n\n"
                "    def run(self, x):\n        return x.to('cuda')\n")
    results = [FileResult(path=tmp_path / name, display=name, original=text, migrated=text + "#", facts=facts)
               for name, text, facts in (
                   ("detector.py", detector, {"moves": [9]}),
                   ("utils.py", "from detector import Detector\n\napply_detector = Detector()\n", {}),
                   ("lazy.py", "from detector import Detector\n\nmake = lambda: Detector()\n", {}))]
    project = Project(results)
    assert not _calls_a_picker(project, 1) and not _calls_a_picker(project, 2)
    moved_in_init = detector.replace("self.net = None", "self.net = torch.nn.Linear(2, 2).to('cuda')")
    results[0] = FileResult(path=tmp_path / "detector.py", display="detector.py", original=moved_in_init,
                            migrated=moved_in_init + "#", facts={"moves": [6]})
    project = Project(results)
    assert _calls_a_picker(project, 1) and not _calls_a_picker(project, 2)


def test_a_predicate_evaluated_false_off_cuda_gates_through_a_package_that_hands_it_on(tmp_path: Path) -> None:
    """falkon: ``decide_cuda()`` returns constants (``if not torch.cuda.is_available(): return False``), false on
    every path without CUDA; its package's ``__init__.py`` hands it on, a test's ``skipif(not decide_cuda())`` and a
    class's ``if self.use_cuda:`` read it. What only CUDA runs stays as written; the rest is ported."""
    switches = ("import warnings\nimport torch\n\n\ndef decide_cuda(opt=None):\n"
                "    if opt is not None and opt.use_cpu:\n        return False\n"
                "    if not torch.cuda.is_available():\n        warnings.warn('no CUDA')\n"
                "        return False\n    return True\n")
    model = ("import torch\nfrom lib.utils import decide_cuda\n\n\nclass Model:\n    def __init__(self, opt=None):\n"
             "        self.use_cuda = decide_cuda(opt)\n        if self.use_cuda:\n            torch.cuda.init()\n")
    test = ("import pytest\nimport torch\nfrom lib.model import Model\nfrom lib.utils import decide_cuda\n\n\n"
            "@pytest.mark.skipif(not decide_cuda(), reason='No GPU found.')\ndef test_large():\n"
            "    assert torch.ones(2).cuda().sum() == 2\n\n\ndef test_small():\n    Model()\n"
            "    assert torch.ones(2, device='cuda').sum() == 2\n")
    _applied(tmp_path, {"lib/__init__.py": "", "lib/utils/__init__.py": "from .switches import decide_cuda\n",
                        "lib/utils/switches.py": switches, "lib/model.py": model, "tests/test_ops.py": test})
    assert (tmp_path / "lib/model.py").read_text() == model
    ported = (tmp_path / "tests/test_ops.py").read_text()
    assert "torch.ones(2).cuda().sum()" in ported and "device='cuda'" not in ported, ported


_ORPHAN = "import torch\n\n\ndef load(path):\n    return torch.load(path).cuda()\n"
_SCRIPT = "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n"


@pytest.mark.parametrize(("others", "left"), [
    ({}, True),  # a backup nothing imports or names
    ({"configs/run.yaml": "target: models.backup.load\n"}, False),  # looked up by name from a config
    ({"run.sh": "python -m models.backup\n"}, False),
    ({"notes.md": "see models/backup.py\n"}, False),
    ({"README.md": "```\nmodels\n\u251c\u2500\u2500 backup.py\n\u2514\u2500\u2500 net.py\n```\n"}, True),  # LLaMADemo's
    # layout drawing lists the file; it runs nothing
    # physics_informed: `models/tfno.py` imports it, but nothing reaches or names tfno.py in turn
    ({"models/tfno.py": "from .backup import load\n\n\ndef build(path):\n    return load(path)\n"}, True),
    ({"models/tfno.py": "from .backup import load\n\n\ndef build(path):\n    return load(path)\n",
      "run.sh": "python -m models.tfno\n"}, False),
    # CTM's p2vclips.py: a device picked at its top is no work that makes it a script
    ({"models/backup.py": "import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
                          "\n\ndef load(path):\n    return torch.load(path).to(device)\n"}, True),
    # GSM's loss_gsm_v2.py reads its config when imported: no script, so nothing runs it
    ({"models/backup.py": "import torch\nimport yaml\n\nwith open('config.yaml') as f:\n"
                          "    config = yaml.safe_load(f)\n\n\ndef load(path):\n"
                          "    return torch.load(path).cuda()\n"}, True),
    ({"models/backup.py": "import torch\n\nwith torch.no_grad():\n    print(torch.ones(2).cuda())\n"}, False),
    # GSM: `from utils.transformer import` names utils/transformer.py, not gsm_lib/transformer.py
    ({"utils/backup.py": _ORPHAN, "train.py": "import torch\nfrom utils.backup import load\n\nif __name__ == "
                                              "'__main__':\n    print(load('x'), torch.ones(2).cuda())\n"}, True),
    ({"train.py": "import argparse\nimport torch\n\nif __name__ == '__main__':\n"
                  "    opt = argparse.ArgumentParser().parse_args()\n    print(vars(opt), torch.ones(2).cuda())\n"},
     True),  # `vars(opt)` looks up no definition
    ({"train.py": "import torch\nfrom models.backup import load\n\nif __name__ == '__main__':\n"
                  "    print(load('x'), torch.ones(2).cuda())\n"}, False),  # a program imports it
    ({"pyproject.toml": "[project]\nname = 'models'\nversion = '1'\n", "models/__init__.py": ""}, False),  # installed
    # APSNet: `importlib.import_module(args.model)` looks a module up whole, by a name the command line gives
    ({"train.py": "import argparse\nimport importlib\nimport torch\n\nif __name__ == '__main__':\n"
                  "    args = argparse.ArgumentParser().parse_args()\n    importlib.import_module(args.model)\n"
                  "    print(torch.ones(2).cuda())\n"}, True),
    # APSNet: its own `def eval(args)` is no builtin that runs code
    ({"train.py": "import torch\n\n\ndef eval(args):\n    return args\n\n\nif __name__ == '__main__':\n"
                  "    print(eval(1), torch.ones(2).cuda())\n"}, True),
    ({"setup.py": "exec(open('version.py').read())\n"}, True),  # runs one file, whose words name what it runs
    # APSNet: a variable `model` names no `model.py`; a string may
    ({"train.py": "import torch\n\nif __name__ == '__main__':\n    backup = torch.ones(2).cuda()\n    print(backup)\n"},
     True),
    ({"train.py": "import os\nimport torch\n\nif __name__ == '__main__':\n    os.system('python models/backup.py')\n"
                  "    print(torch.ones(2).cuda())\n"}, False),
    # PerClusterQuantization's HAWQ models: `getattr(features, f"stage{i}")` finds what is loaded already
    ({"train.py": "import torch\n\nif __name__ == '__main__':\n    x = torch.nn.Module()\n"
                  "    print(getattr(x, f'stage{1}', None), torch.ones(2).cuda())\n"}, True),
    # CycleGAN's `importlib.import_module("models." + name + "_model")`: any module may run
    ({"train.py": "import importlib\nimport sys\nimport torch\n\nif __name__ == '__main__':\n"
                  "    importlib.import_module('models.' + sys.argv[1])\n    print(torch.ones(2).cuda())\n"}, False),
    # Few-shot-Framework's `eval(args.model_class + '_fit_handle')`: a name of the module's own, which imports nothing
    ({"train.py": "import sys\nimport torch\n\n\ndef proto_fit_handle():\n    return 1\n\n\n"
                  "if __name__ == '__main__':\n    print(eval(sys.argv[1] + '_fit_handle')(), torch.ones(2).cuda())\n"},
     True),
    # the same `eval` of code a string holds whole may import anything
    ({"train.py": "import sys\nimport torch\n\nif __name__ == '__main__':\n"
                  "    print(eval(sys.argv[1] + '.load()'), torch.ones(2).cuda())\n"}, False),
])
def test_a_module_no_program_reaches_and_no_file_names_is_left(tmp_path: Path, others: dict[str, str],
                                                                 left: bool) -> None:
    _applied(tmp_path, {"models/backup.py": _ORPHAN, "train.py": _SCRIPT, **others})
    assert ((tmp_path / "models/backup.py").read_text() == others.get("models/backup.py", _ORPHAN)) is left
    assert "tp.device()" in (tmp_path / "train.py").read_text()


def test_a_module_the_user_names_is_ported_whether_a_program_reaches_it_or_not(tmp_path: Path) -> None:
    _write(tmp_path, {"backup.py": _ORPHAN, "train.py": _SCRIPT})
    done = CliRunner().invoke(app, ["migrate", str(tmp_path / "backup.py"), str(tmp_path / "train.py"), "--no-cache",
                                    "--apply"])
    assert done.exit_code == 0, done.output
    assert "tp.device()" in (tmp_path / "backup.py").read_text()
    folder = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert "[R27 unreached]" not in folder.stdout + folder.stderr  # ported already
    (tmp_path / "backup.py").write_text(_ORPHAN)
    folder = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert "backup.py:5:1: TP110 2 rewrite(s) not made: [R27 unreached]" in folder.stdout + folder.stderr


def test_an_extension_built_in_place_beside_its_build_script_is_the_projects_compiled_one(tmp_path: Path) -> None:
    """graph-rcnn: ``lib/rcnn/setup.py`` builds ``_C`` (C++ kernels, CUDA ones where CUDA is) in place, and
    ``from lib.rcnn import _C`` calls it; ``lib`` is no package. Its kernels are the CPU's and CUDA's alone."""
    _write(tmp_path, {
        "lib/rcnn/__init__.py": "",
        "lib/rcnn/setup.py": "import torch\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import "
                             "CppExtension, CUDAExtension\n\nextension = CUDAExtension if torch.cuda.is_available() "
                             "else CppExtension\nsetup(name='rcnn', ext_modules=[extension('_C', ['vision.cpp'])])\n",
        "lib/rcnn/roi_align.py": "from lib.rcnn import _C\n\n\ndef roi_align(x, boxes):\n"
                                 "    return _C.roi_align_forward(x, boxes)\n",
        "main.py": "import torch\nfrom lib.rcnn.roi_align import roi_align\n\nif __name__ == '__main__':\n"
                   "    x = torch.ones(1, 3, 8, 8).cuda()\n    print(roi_align(x, torch.zeros(1, 5).cuda()))\n",
    })
    main = _programs(tmp_path)["main.py"]
    assert main["runs_on"] == ["cuda", "cpu"], main
    assert any("compiled extension's kernels (`lib.rcnn._C`" in b["reason"] for b in main["blockers"]), main


def test_a_build_script_that_makes_an_extension_for_cuda_alone_is_left(tmp_path: Path) -> None:
    """DCVC's inference kernels: the script reads the GPU's capability for nvcc's ``-arch``; off CUDA it stops with
    CUDA's error, ported it would go on to fail in nvcc."""
    setup = ("import torch\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, "
             "CUDAExtension\n\nmajor, minor = torch.cuda.get_device_capability(0)\nsetup(name='kernels', ext_modules="
             "[CUDAExtension('kernels_cuda', ['k.cu'], extra_compile_args={'nvcc': [f'-arch=sm_{major}{minor}']})],"
             " cmdclass={'build_ext': BuildExtension})\n")
    _applied(tmp_path, {"ext/setup.py": setup, "train.py": _SCRIPT})
    assert (tmp_path / "ext/setup.py").read_text() == setup
    assert "tp.device()" in (tmp_path / "train.py").read_text()


def test_a_config_added_after_a_cached_run_names_the_module_it_left(tmp_path: Path, monkeypatch) -> None:
    """The decision reads files outside the run (configs, scripts, docs): its cache key holds them."""
    monkeypatch.setenv("TORCHPORT_CACHE_DIR", str(tmp_path / "cache"))
    _write(tmp_path, {"models/backup.py": _ORPHAN, "train.py": _SCRIPT})
    first = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    assert "[R27 unreached]" in first.stdout + first.stderr
    (tmp_path / "run.yaml").write_text("target: models.backup.load\n")
    again = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    assert "[R27 unreached]" not in again.stdout + again.stderr, again.stdout


def test_a_wrapper_made_under_an_option_of_another_modules_command_line_needs_cuda_to_scatter(tmp_path: Path) -> None:
    """Real-time-GesRec: ``if not opt.no_cuda: model = model.cuda(); model = nn.DataParallel(model)`` in model.py,
    whose options opts.py defines; the loop never moves its inputs (the scatter did). On MPS the wrapper is the
    module on the device, called with CPU inputs: a Mac keeps the CPU. A branch on a tensor's attribute
    (``if x.is_sparse:``) stays a branch on data."""
    _write(tmp_path, {
        "opts.py": "import argparse\n\n\ndef parse_opts():\n    p = argparse.ArgumentParser()\n"
                   "    p.add_argument('--no_cuda', action='store_true')\n    return p.parse_args()\n",
        "model.py": "import torch\nfrom torch import nn\n\n\ndef generate_model(opt):\n    model = nn.Linear(2, 2)\n"
                    "    if not opt.no_cuda:\n        model = model.cuda()\n"
                    "        model = nn.DataParallel(model, device_ids=None)\n    return model\n",
        "main.py": "import torch\nfrom model import generate_model\nfrom opts import parse_opts\n\n"
                   "if __name__ == '__main__':\n    opt = parse_opts()\n    model = generate_model(opt)\n"
                   "    print(model(torch.ones(3, 2)))\n",
    })
    main = _programs(tmp_path)["main.py"]
    assert "mps" not in main["runs_on"] and "cpu" in main["runs_on"], main
    assert any("DataParallel" in b["reason"] and b["path"] == "model.py" for b in main["blockers"]), main


def test_importing_a_module_of_a_package_runs_the_packages_init(tmp_path: Path) -> None:
    """visualDet3D: `from pkg.sub.registry import X` runs `pkg/__init__.py` and `pkg/sub/__init__.py` first; the
    latter imports a module whose import-time test orders `torch.version.cuda` (None without CUDA) against a string,
    a TypeError off CUDA. A sibling script importing a module of a plain folder (no `__init__.py`) runs nothing more."""
    _write(tmp_path, {
        "pkg/__init__.py": "", "pkg/sub/__init__.py": "from .ops import Op\n",
        "pkg/sub/ops.py": "import torch\n\nif (torch.version.cuda < '10.0') or torch.__version__ < '1.3':\n"
                          "    Op = None\nelse:\n    Op = object\n",
        "pkg/sub/registry.py": "X = 1\n",
        "plain/registry.py": "X = 1\n",
        "train.py": "import torch\nfrom pkg.sub.registry import X\n\nif __name__ == '__main__':\n"
                    "    print(X, torch.ones(1).cuda())\n",
        "other.py": "import torch\nfrom plain.registry import X\n\nif __name__ == '__main__':\n"
                    "    print(X, torch.ones(1).cuda())\n",
    })
    found = _programs(tmp_path)
    assert found["train.py"]["runs_on"] == ["cuda"]
    assert {(b["path"], b["line"], tuple(b["chain"])) for b in found["train.py"]["blockers"]} == {
        ("pkg/sub/ops.py", 3, ("train.py:2", "pkg/sub/__init__.py:1"))}
    assert found["other.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    # a package imported by name runs the __init__ of the package above it too
    (tmp_path / "pkg" / "__init__.py").write_text("import cupy\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "sub.py").write_text("import torch\nimport pkg.sub\n\nprint(torch.ones(1).cuda())\n")
    assert {(b["path"], b["line"]) for b in _programs(tmp_path)["sub.py"]["blockers"]} == {("pkg/__init__.py", 1)}


@pytest.mark.parametrize(("source", "blocked"), [
    ("if torch.version.cuda < '10.0':\n    pass\n", True),
    ("if not torch.version.cuda >= '11':\n    pass\n", True),
    ("if torch.version.cuda and torch.version.cuda < '10.0':\n    pass\n", False),
    ("if torch.version.cuda is None or torch.version.cuda < '10.0':\n    pass\n", False),
    ("if torch.version.cuda is not None and torch.version.cuda < '10.0':\n    pass\n", False),
    ("if torch.version.cuda == '10.0':\n    pass\n", False),
    ("if torch.cuda.is_available() and torch.version.cuda < '10.0':\n    pass\n", False),
    ("def f():\n    if torch.version.cuda < '10.0':\n        pass\n", False),
    ("from numba import cuda\n\n\n@cuda.jit('(float32[:], int32)', device=True)\ndef f(a, n):\n    pass\n", True),
    ("from numba import cuda\n\n\n@cuda.jit\ndef f(a, n):\n    pass\n", False),
    ("from numba import cuda\n\n\n@cuda.jit(device=True)\ndef f(a, n):\n    pass\n", False),
])
def test_what_a_module_does_when_imported_is_evaluated_off_cuda(source: str, blocked: bool) -> None:
    """visualDet3D's deform_conv orders `torch.version.cuda` against a string at import (a TypeError without CUDA)
    and its rotate_iou compiles numba kernels with signatures at import (eagerly, for CUDA); a lazy `@cuda.jit` or
    a test that short-circuits on `torch.version.cuda` first needs nothing."""
    text = "import torch\n" + source
    found = [r for r in requirements(ast.parse(text), text) if r.targets == OFF_CUDA]
    assert bool(found) is blocked, found


@pytest.mark.parametrize(("call", "compiled"), [
    ("scatter_add(x, index)", False), ("scatter_mean(x, index)", False), ("scatter(x, index)", False),
    ("scatter(x, index, reduce='mean')", False), ("scatter(x, index, reduce='max')", True),
    ("scatter(x, index, reduce=how)", True), ("scatter_max(x, index)", True),
    ("torch_scatter.scatter_sum(x, index)", False), ("torch_scatter.scatter_min(x, index)", True),
])
def test_a_function_of_a_compiled_library_written_in_torch_runs_anywhere(tmp_path: Path, call: str,
                                                                         compiled: bool) -> None:
    """3D-EMGP's EGNN calls torch_scatter's `scatter_add` and `scatter_mean`, which torch_scatter writes with
    `scatter_add_`: they run on MPS. Its `scatter_min`/`scatter_max` and a `scatter` reducing by min, max or
    an unknown reduction call the library's CPU and CUDA kernels."""
    _write(tmp_path, {"train.py": "import torch\nimport torch_scatter\nfrom torch_scatter import scatter, scatter_add, "
                                  "scatter_mean, scatter_max\n\nhow = 'sum'\n\nif __name__ == '__main__':\n"
                                  "    x = torch.ones(4).cuda()\n    index = torch.zeros(4, dtype=torch.long).cuda()\n"
                                  f"    print({call})\n"})
    runs_on = _programs(tmp_path)["train.py"]["runs_on"]
    assert runs_on == (["cuda", "cpu"] if compiled else ["cuda", "mps", "xpu", "cpu"])


def test_a_legacy_constructor_under_a_cuda_default_tensor_type_keeps_the_cpu_or_cuda() -> None:
    """nerf-pytorch: `torch.set_default_tensor_type('torch.cuda.FloatTensor')`, then `torch.Tensor(imgs[i])`: off CUDA
    the runtime sets the default device, which legacy constructors ignore: their tensors stay on the CPU."""
    source = ("import torch\n\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\n\n\ndef batch(imgs, i):\n"
              "    return torch.Tensor(imgs[i]), torch.zeros(3)\n")
    assert blocker(source) == (7, "a legacy constructor (`torch.Tensor(x)`) under a CUDA default tensor type")
    assert blocker(source.replace("torch.Tensor(imgs[i])", "torch.tensor(imgs[i])")) is None
    assert blocker(source.replace("'torch.cuda.FloatTensor'", "'torch.FloatTensor'")) is None
    assert blocker(source.replace("torch.Tensor(imgs[i])", "torch.Tensor(imgs[i]).to('cuda')")) is None  # placed
    setting = "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n"
    in_main = source.replace(setting, f"if __name__ == '__main__':\n    {setting}")
    assert blocker(in_main) == (8, "a legacy constructor (`torch.Tensor(x)`) under a CUDA default tensor type")


@pytest.mark.parametrize(("made", "blocked"), [
    ("np.exp(-k * np.arange(n))", True), ("np.exp(-0.01 * np.arange(n))", True),
    ("np.exp(-k * np.arange(n, dtype=np.float32))", False), ("np.exp(-j * np.arange(n))", False),
])
def test_a_float_times_integers_is_float64(made: str, blocked: bool) -> None:
    """act's temporal aggregation: `k = 0.01`, `w = np.exp(-k * np.arange(n))` (a Python float times integers is
    float64), `w = w / w.sum()`, then `torch.from_numpy(w).cuda()`; an integer scale or a float32 arange is not."""
    source = (f"import numpy as np\nimport torch\n\n\ndef weights(n):\n    k = 0.01\n    j = 2\n    w = {made}\n"
              "    w = w / w.sum()\n    return torch.from_numpy(w).cuda().unsqueeze(dim=1)\n")
    assert (blocker(source) is not None) is blocked, blocker(source)


def test_a_process_group_whose_backend_may_be_nccl_keeps_the_cuda_assert_before_it(tmp_path: Path) -> None:
    """NaturalSpeech2's distributed.py: `assert torch.cuda.is_available()`, then `init_process_group(backend=
    dist_backend or 'nccl')`, the caller giving 'nccl': off CUDA the path still stops at the process group, so the
    assert stays (a port would trade the author's message for NCCL's) and the program is left whole."""
    _write(tmp_path, {
        "distributed.py": "import torch\nimport torch.distributed as dist\n\n\ndef init_distributed(rank, backend):\n"
                          "    assert torch.cuda.is_available(), 'Distributed mode requires CUDA.'\n"
                          "    torch.cuda.set_device(rank % torch.cuda.device_count())\n"
                          "    dist.init_process_group(backend=backend or 'nccl')\n",
        "train.py": "import torch\nfrom distributed import init_distributed\n\nif __name__ == '__main__':\n"
                    "    init_distributed(0, 'nccl')\n    print(torch.ones(2).cuda())\n"})
    files = _migrated(tmp_path)
    assert not files["distributed.py"]["changed"] and not files["train.py"]["changed"]
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda"]
    # a choice of backends the evaluation cannot settle is no fallback to NCCL
    (tmp_path / "distributed.py").write_text((tmp_path / "distributed.py").read_text().replace(
        "backend=backend or 'nccl'", "backend='gloo' if sys.platform == 'darwin' else 'nccl'").replace(
        "import torch\n", "import sys\nimport torch\n", 1))
    assert _programs(tmp_path)["train.py"]["runs_on"] != ["cuda"]


def test_a_name_a_project_module_does_not_define_makes_its_importer_run_nowhere(tmp_path: Path) -> None:
    """super-image's examples: `from super_image.data import EvalDataset, TrainAugmentDataset`, a class the package
    does not define: an ImportError on every device, so the program is left whole. A submodule, a name bound under
    `try`, and a module that binds names at run time (`globals()`) are no such case."""
    _write(tmp_path, {
        "pkg/__init__.py": "", "pkg/data/__init__.py": "from .sets import EvalDataset\n\ntry:\n    import numpy\n"
                                                         "except ImportError:\n    numpy = None\n",
        "pkg/data/sets.py": "class EvalDataset:\n    pass\n", "pkg/data/extra.py": "",
        "pkg/loose.py": "globals()['Made'] = 1\n",
        "broken.py": "import torch\nfrom pkg.data import EvalDataset, TrainDataset\n\nif __name__ == '__main__':\n"
                     "    print(torch.ones(1).cuda())\n",
        "fine.py": "import torch\nfrom pkg.data import EvalDataset, extra, numpy\nfrom pkg.loose import Made\n\n"
                   "if __name__ == '__main__':\n    print(torch.ones(1).cuda())\n",
        # a lazy loader's `__getattr__`, a fallback that may never run, a package beside a stale module of its name
        "lazy/__init__.py": "import lazy_loader as lazy\n\n__getattr__, __dir__, __all__ = lazy.attach(__name__, {})\n",
        "model.py": "class OldNet:\n    pass\n", "model/__init__.py": "class Net:\n    pass\n",
        "also_fine.py": "import torch\nfrom lazy import Net\nfrom model import Net as Model\n\ntry:\n"
                        "    from pkg.data import EvalDataset\nexcept ImportError:\n    from pkg.data import Gone\n\n"
                        "if __name__ == '__main__':\n    print(torch.ones(1).cuda())\n",
    })
    found = _programs(tmp_path)
    assert found["broken.py"]["runs_on"] == []
    assert {(b["target"], b["path"], b["line"]) for b in found["broken.py"]["blockers"]} == {
        (t, "broken.py", 2) for t in ("mps", "xpu", "cpu")}
    assert found["fine.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert found["also_fine.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert not _migrated(tmp_path)["broken.py"]["changed"]



@pytest.mark.parametrize("used", [True, False])
def test_a_notebook_that_uses_a_name_its_project_module_does_not_define_runs_nowhere(tmp_path: Path,
                                                                                    used: bool) -> None:
    """FNO_torch's examples: `from FNO import FNO2d, get_dataloader`, names `FNO.py` no longer defines, then a model
    built of `FNO2d` in a later cell: the import cell fails and every cell using the name after it. A stale name
    no cell reads fails its import cell alone: the notebook's other cells still run."""
    import nbformat
    from nbformat import v4

    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("import torch\nfrom FNO import FNOnd, FNO2d"),
                v4.new_code_cell("model = " + ("FNO2d" if used else "FNOnd") + "().cuda()")]
    nbformat.write(nb, tmp_path / "nb.ipynb")
    (tmp_path / "FNO.py").write_text("import torch\n\n\nclass FNOnd(torch.nn.Module):\n    pass\n")
    found = _programs(tmp_path)["nb.ipynb"]
    assert (found["runs_on"] == []) is used
    assert (found["runs_on"] == ["cuda", "mps", "xpu", "cpu"]) is not used


@pytest.mark.parametrize("notebook", [False, True])
def test_a_module_a_function_of_the_program_imports_when_it_runs_counts(tmp_path: Path, notebook: bool) -> None:
    """improved's notebooks: `def train(rank, gpu, args):` imports the discriminator, whose ops build their kernels
    from `.cu` sources when imported; the notebook calls it through `init_processes(0, 1, train, args)`: it runs on
    CUDA alone, as the training scripts that import it at their top do."""
    import nbformat
    from nbformat import v4

    code = ("import torch\n\n\ndef train(rank):\n    from models import Net\n"
            "    return Net()(torch.ones(2).cuda())\n\n\ndef launch(fn):\n    return fn(0)\n")
    _write(tmp_path, {
        "ops.py": "from torch.utils.cpp_extension import load\n\nfused = load('fused', sources=['fused_kernel.cu'])\n",
        "models.py": "import torch\nfrom ops import fused\n\n\nclass Net(torch.nn.Module):\n    pass\n",
        **({} if notebook else {"train.py": code + "\n\nif __name__ == '__main__':\n    launch(train)\n"}),
    })
    if notebook:
        nb = v4.new_notebook()
        nb.cells = [v4.new_code_cell(code), v4.new_code_cell("launch(train)")]
        nbformat.write(nb, tmp_path / "train.ipynb")
    found = _programs(tmp_path)["train.ipynb" if notebook else "train.py"]
    assert found["runs_on"] == ["cuda"], found


def test_a_choice_written_as_if_else_statements_kept_cuda_or_cpu_keeps_its_programs_there(tmp_path: Path) -> None:
    """beta-recsys: `get_device()` picks `"cpu"` where GPUtil lists no GPU, else `"cuda:" + str(gpu_id)` (held: no
    path off CUDA runs it), while the model moves its paddings to `"cuda"` (ported): a program making both keeps
    CUDA-or-CPU, or on a Mac and an Intel GPU its model and paddings would sit on two devices."""
    _write(tmp_path, {
        "engine.py": "import GPUtil\n\n\ndef get_device():\n    gpu_ids = GPUtil.getAvailable(limit=3)\n"
                     "    if len(gpu_ids) < 1:\n        device_str = 'cpu'\n    else:\n"
                     "        device_str = 'cuda:' + str(gpu_ids[0])\n    return device_str\n",
        "model.py": "import torch\n\n\nclass Attention(torch.nn.Module):\n    def forward(self, weights):\n"
                    "        paddings = (torch.ones(weights.shape) * -1.0).to('cuda')\n"
                    "        return torch.where(weights > 0, weights, paddings)\n",
        "train.py": "import torch\n\nfrom engine import get_device\nfrom model import Attention\n\n"
                    "device = get_device()\nprint(Attention().to(device)(torch.randn(2, 2).to(device)))\n",
    })
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "cpu"]
    assert "TP019" in {r["code"] for r in _migrated(tmp_path)["train.py"]["rewrites"]}


_SHADOWED = ("import torch\nimport torch.nn as nn\n\n{before}"
             "device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nprint(f\"Using device: {{device}}\")\n"
             "{between}device = \"cpu\"\nmodel = nn.Linear(2, 2).to(device)\n"
             "print(model(torch.ones(1, 2).to(device)))\n")


@pytest.mark.parametrize(("before", "between", "left"), [
    ("", "", True),  # AI_Action_Recognition's notebook: printed, then set again before anything places with it
    ("def train():\n    return nn.Linear(2, 2).to(device)\n\n\n", "model = train()\n", False),  # a call reads it
    ("", "model = nn.Linear(2, 2).to(device)\n", False),  # placed before it is set again
    ("def train():\n    if True:\n        return 1\n\n\n", "", True),  # a block nested in a function, read after
])
def test_a_device_only_printed_before_it_is_set_again_stays(tmp_path: Path, before: str, between: str,
                                                            left: bool) -> None:
    text = _SHADOWED.format(before=before, between=between)
    _applied(tmp_path, {"demo.py": text})
    assert ((tmp_path / "demo.py").read_text() == text) is left
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert ("`device` is only written into text before it is set again" in done.stdout + done.stderr) is left


@pytest.mark.parametrize(("read", "keyed"), [
    ('mem["allocated_bytes.all.current"]', True),  # distributed-training-guide: no counter without CUDA
    ('mem.get("allocated_bytes.all.current", 0)', False),
    ("len(mem)", False),
    ('torch.cuda.memory_stats()["allocated_bytes.all.peak"]', True),
])
def test_a_counter_read_from_cudas_memory_stats_is_read_through_the_runtime(tmp_path: Path, read: str,
                                                                             keyed: bool) -> None:
    """Off CUDA torch's `memory_stats()` is empty: a counter read by its key raises KeyError there, so the program
    stops, unless the port reads it through the runtime, whose counters read 0."""
    source = ("import torch\n\n\ndef stats():\n    mem = torch.cuda.memory_stats()\n    return " + read
              + "\n\n\ndef main():\n    x = torch.ones(2).cuda()\n    print(x, stats())\n\n\n"
              "if __name__ == '__main__':\n    main()\n")
    (tmp_path / "train.py").write_text(source)
    assert "cpu" in _programs(tmp_path)["train.py"]["runs_on"]
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache", "--ignore", "TP012"])
    assert ("holds no counters without CUDA" in done.stdout + done.stderr) is keyed, done.stdout
    _applied(tmp_path, {"train.py": source})
    assert ("tp.memory_stats()" in (tmp_path / "train.py").read_text()) is keyed


_TRAIN_ON_CUDA = ("import GPUtil\nimport torch\nimport torch.distributed as dist\n\n\ndef build_model():\n"
                  "    return torch.nn.Linear(2, 2)\n\n\ndef worker(rank):\n"
                  "    model = build_model().cuda()\n    print(rank, model(torch.ones(1, 2).cuda()))"
                  "\n\n\ndef main():\n    dist.init_process_group('nccl')\n    gpus = GPUtil.getGPUs()\n"
                  "    print(gpus[0].name)\n    worker(0)\n\n\n"
                  "if __name__ == '__main__':\n    main()\n")


@pytest.mark.parametrize(("imported", "left"), [
    ("build_model", True),  # m3m: the evaluation script imports helpers of the DDP trainer, which stops off CUDA
    ("build_model, worker", False),  # it runs the trainer's worker too
])
def test_a_module_whose_changed_code_only_cuda_only_programs_run_is_left(tmp_path: Path, imported: str,
                                                                        left: bool) -> None:
    evaluate = (f"import torch\nfrom train import {imported}\n\nif __name__ == '__main__':\n"
                "    print(build_model().to('cuda' if torch.cuda.is_available() else 'cpu'))\n"
                + ("    worker(1)\n" if "worker" in imported else ""))
    _write(tmp_path, {"train.py": _TRAIN_ON_CUDA, "evaluate.py": evaluate})
    # the trainer's process group, which its port would have kept off MPS, is none of the evaluation's
    assert "mps" in _programs(tmp_path)["evaluate.py"]["runs_on"]
    _applied(tmp_path, {"train.py": _TRAIN_ON_CUDA, "evaluate.py": evaluate})
    assert ((tmp_path / "train.py").read_text() == _TRAIN_ON_CUDA) is left
    assert "tp." in (tmp_path / "evaluate.py").read_text()


def test_a_placement_named_in_a_warnings_text_is_no_placement(tmp_path: Path) -> None:
    """pytorch_SSD's trainer warns `'call "model.cuda()"'` under a kept CUDA guard: the text places nothing, so
    the programs that use the trainer keep MPS."""
    _write(tmp_path, {
        "trainer.py": "import logging\nimport torch\n\n\nclass Trainer:\n    def __init__(self, model):\n"
                      "        self.model = model\n        if torch.cuda.is_available():\n"
                      "            if not 'cuda' in model.device.type:\n"
                      "                logging.warning('To use CUDA, call \"model.cuda()\"')\n\n"
                      "    def step(self, x):\n        return self.model(x)\n",
        "train.py": "import torch\nfrom trainer import Trainer\n\nif __name__ == '__main__':\n"
                    "    model = torch.nn.Linear(2, 2).cuda()\n"
                    "    print(Trainer(model).step(torch.ones(1, 2).cuda()))\n",
    })
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


_POINTNET = ("import torch\n\n\nclass Encoder(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n\n"
             "def regularizer(x):\n    return x + torch.eye(3).cuda()\n")


@pytest.mark.parametrize(("reconstruction", "left"), [
    ("from pointnet import Encoder\n", True),  # imports the copy beside it, and not the regularizer
    ("import pointnet\n", False),  # `pointnet.regularizer` is any module's
])
def test_a_definition_one_copy_of_a_module_uses_leaves_the_other_copy_unused(tmp_path: Path, reconstruction: str,
                                                                            left: bool) -> None:
    """APSNet keeps three copies of ``pointnet.py``; only the classification program imports its
    ``regularizer``, from the copy beside it: the reconstruction copy's stays as written."""
    use = "pointnet.regularizer(Encoder()(x))" if reconstruction == "import pointnet\n" else "Encoder()(x)"
    _applied(tmp_path, {
        "classification/pointnet.py": _POINTNET, "reconstruction/pointnet.py": _POINTNET,
        "classification/train.py": "import torch\nfrom pointnet import Encoder, regularizer\n\nif __name__ == "
                                   "'__main__':\n    print(regularizer(Encoder()(torch.ones(3).cuda())))\n",
        "reconstruction/train.py": f"import torch\n{reconstruction}from pointnet import Encoder\n\nif __name__ == "
                                   f"'__main__':\n    x = torch.ones(3).cuda()\n    print({use})\n",
    })
    assert "torch.eye(3).to(tp.device())" in (tmp_path / "classification/pointnet.py").read_text()
    assert ((tmp_path / "reconstruction/pointnet.py").read_text() == _POINTNET) is left
    assert "torch.ones(3).to(tp.device())" in (tmp_path / "reconstruction/train.py").read_text()


def test_a_module_of_settings_alone_is_read_by_its_path_not_left_unreached(tmp_path: Path) -> None:
    """FAST-MRI's ``configs/unet.py`` holds ``device='cuda'`` and nothing else that runs: ``Config.fromfile(
    args.cfg)`` reads it by a path the command line gives. A device picked beside definitions is no such setting."""
    _write(tmp_path, {"configs/unet.py": "model = dict(name='unet')\ndevice='cuda'\ndevices = [device]\n",
                      "train.py": _SCRIPT})
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert "[R27 unreached]" not in done.stdout + done.stderr, done.stdout


def test_a_module_that_never_names_cuda_is_ported_with_the_program_that_takes_a_device_to_it(tmp_path: Path) -> None:
    """InsightFace: ``face_verify.py`` names no CUDA and changes nothing itself; it takes the device ``config.py``
    picks to ``Learner.py``, whose ``torch.load`` of the GPU-trained checkpoint needs a ``map_location`` there."""
    _applied(tmp_path, {
        "config.py": "import torch\n\n\ndef get_config():\n"
                     "    return {'device': torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')}\n",
        "learner.py": "import torch\n\n\nclass Learner:\n    def __init__(self, conf):\n"
                      "        self.model = torch.nn.Linear(2, 2).to(conf['device'])\n\n"
                      "    def load_state(self, path):\n        self.model.load_state_dict(torch.load(path))\n",
        "verify.py": "from config import get_config\nfrom learner import Learner\n\nif __name__ == '__main__':\n"
                     "    conf = get_config()\n    learner = Learner(conf)\n    if conf['device'].type == 'cpu':\n"
                     "        learner.load_state('model_cpu_final.pth')\n    else:\n"
                     "        learner.load_state('model_final.pth')\n",
    })
    assert "torch.load(path, map_location=tp.map_location())" in (tmp_path / "learner.py").read_text()


@pytest.mark.parametrize("wrapped_where", ["on CUDA alone", "everywhere"])
def test_a_wrapper_made_on_cuda_alone_and_unwrapped_off_the_cpu_keeps_the_program_cuda_or_cpu(
        tmp_path: Path, wrapped_where: str) -> None:
    """pro_gan_pytorch: ``if device == torch.device("cuda"): self.gen = DataParallel(self.gen)``, and on saving
    ``... if self.device == torch.device("cpu") else self.gen.module...``: on MPS or an XPU neither test holds and
    the model has no ``.module``. The program keeps its CUDA-or-CPU choice; one that wraps on every device ports."""
    wrap = "if device == torch.device('cuda'):\n            " if wrapped_where == "on CUDA alone" else ""
    _write(tmp_path, {
        "gan.py": "import torch\nfrom torch.nn import DataParallel\n\n\nclass ProGAN:\n"
                  "    def __init__(self, gen, device=torch.device('cpu')):\n        self.gen = gen.to(device)\n"
                  f"        self.device = device\n        {wrap}self.gen = DataParallel(self.gen)\n\n"
                  "    def save_info(self):\n"
                  "        return self.gen.state_dict() if self.device == torch.device('cpu') "
                  "else self.gen.module.state_dict()\n",
        "train.py": "import torch\nfrom gan import ProGAN\n\nif __name__ == '__main__':\n"
                    "    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
                    "    print(ProGAN(torch.nn.Linear(2, 2), device=device).save_info())\n",
    })
    train = _programs(tmp_path)["train.py"]
    assert (train["runs_on"] == ["cuda", "cpu"]) is (wrapped_where == "on CUDA alone"), train


def test_a_flag_bound_to_a_cuda_query_twice_still_gates_the_functions_it_is_passed_to(tmp_path: Path) -> None:
    """siamese-triplet: each notebook asks ``cuda = torch.cuda.is_available()`` (one in two cells) and passes it to
    ``fit(..., cuda)``, whose ``if cuda: data = data.cuda()`` then runs only on CUDA: nothing is ported."""
    files = {
        "trainer.py": "def fit(data, model, cuda):\n    if cuda:\n        data = data.cuda()\n    return model(data)\n",
        "run.py": "import torch\nfrom trainer import fit\n\ncuda = torch.cuda.is_available()\n"
                  "model = torch.nn.Linear(2, 2)\ncuda = torch.cuda.is_available()\nif cuda:\n    model.cuda()\n"
                  "print(fit(torch.ones(2), model, cuda))\n",
    }
    _applied(tmp_path, files)
    assert {name: (tmp_path / name).read_text() for name in files} == files


_GATHER = ("import torch\n\n__all__ = ['all_gather', 'load']\n\n\ndef all_gather(x):\n"
           "    return x + torch.ones(1).cuda()\n\n\ndef load(path):\n    return torch.load(path).cuda()\n")


@pytest.mark.parametrize(("train", "left"), [
    # DIST_KD: `__all__` exports it, torch's `dist.all_gather` and a docstring's "all_gather" name another
    ("import torch\nimport torch.distributed as dist\nfrom utils import *\n\n\ndef gather(x):\n"
     "    \"\"\"Performs all_gather.\"\"\"\n    dist.all_gather([x], x)\n    torch.distributed.all_gather([x], x)\n\n\n"
     "if __name__ == '__main__':\n    print(load('w.pt'), gather(torch.ones(2).cuda()))\n", True),
    ("import torch\nfrom utils import *\n\nif __name__ == '__main__':\n"
     "    print(load('w.pt'), all_gather(torch.ones(2).cuda()))\n", False),  # star-imported and called
    # DIST_KD's train_kd.py imports `CriterionMiniBatchCrossImagePair` and never makes one
    ("import torch\nfrom utils import all_gather, load\n\nif __name__ == '__main__':\n"
     "    print(load('w.pt'), torch.ones(2).cuda())\n", True),
    ("import torch\nimport utils\n\nif __name__ == '__main__':\n"
     "    print(utils.load('w.pt'), utils.all_gather(torch.ones(2).cuda()))\n", False),  # the module's
])
def test_a_definition_only_exported_or_named_by_torch_is_unused(tmp_path: Path, train: str, left: bool) -> None:
    _applied(tmp_path, {"utils.py": _GATHER, "train.py": train})
    ported = (tmp_path / "utils.py").read_text()
    assert "torch.load(path).cuda()" not in ported
    assert ("x + torch.ones(1).cuda()" in ported) is left


def test_a_standard_library_import_in_a_package_of_the_same_name_is_the_standard_librarys(tmp_path: Path) -> None:
    """pathpyG's `from io import BytesIO` in its own package `pathpyG/io`: Python gives the standard library's
    module (a script's folder comes first only for a file of that name beside it), so it is no import of a name
    the package lacks, and the programs that import it run everywhere. A script beside its own `queue.py` imports
    that one: a name it lacks stops it everywhere."""
    _write(tmp_path, {
        "graphs/__init__.py": "from graphs import io\n",
        "graphs/io/__init__.py": "from graphs.io.reader import read\n",
        "graphs/io/reader.py": "from io import BytesIO\n\n\ndef read(data):\n    return BytesIO(data)\n",
        "train.py": "import torch\n\nimport graphs\n\nx = torch.ones(2).cuda()\nprint(graphs.io.read(b'1'), x)\n",
        "tools/queue.py": "def dump(x):\n    return x\n",
        "tools/export.py": "import torch\nfrom queue import Queue\n\nprint(Queue(), torch.ones(2).cuda())\n",
    })
    found = _programs(tmp_path)
    assert found["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert found["tools/export.py"]["runs_on"] == []


def test_a_device_dispatched_on_among_cpu_and_cuda_alone_keeps_its_program_cuda_or_cpu(tmp_path: Path) -> None:
    """rl3's `DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'`, then `if DEVICE == 'cpu': THREADS = 4 elif
    DEVICE == 'cuda': THREADS = 1` read after: MPS's "mps" takes no arm, a NameError; RFQI's `--device` default
    "cuda" checked with `if args.device not in ['cpu', 'cuda']: raise`: "mps" raises. Both keep CUDA-or-CPU, as
    the originals ran; a chain with an `else`, or whose names nothing reads after it, keeps nothing."""
    _write(tmp_path, {
        "dqn.py": ("import torch\n\nDEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
                   "if DEVICE == 'cpu':\n    THREADS = 4\nelif DEVICE == 'cuda':\n    THREADS = 1\n"
                   "torch.set_num_threads(THREADS)\nnet = torch.nn.Linear(2, 2).to(DEVICE)\n"
                   "print(net(torch.ones(2, device=DEVICE)))\n"),
        "train.py": ("import argparse\n\nimport torch\n\nif __name__ == '__main__':\n"
                     "    parser = argparse.ArgumentParser()\n    parser.add_argument('--device', default='cuda')\n"
                     "    args = parser.parse_args()\n    if args.device not in ['cpu', 'cuda', 'cuda:0']:\n"
                     "        raise NotImplementedError(args.device)\n"
                     "    print(torch.nn.Linear(2, 2).to(args.device)(torch.ones(2, device=args.device)))\n"),
        "play.py": ("import torch\n\nDEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
                    "if DEVICE == 'cpu':\n    print('slow')\nelif DEVICE == 'cuda':\n    print('fast')\n"
                    "print(torch.ones(2).cuda())\n"),
    })
    found = _programs(tmp_path)
    _applied(tmp_path, {})
    assert found["dqn.py"]["runs_on"] == ["cuda", "cpu"] and found["train.py"]["runs_on"] == ["cuda", "cpu"]
    assert {(b["target"], b["line"]) for b in found["dqn.py"]["blockers"]} == {("mps", 4), ("xpu", 4)}
    assert {(b["target"], b["line"]) for b in found["train.py"]["blockers"]} == {("mps", 9), ("xpu", 9)}
    assert "DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'" in (tmp_path / "dqn.py").read_text()
    assert "tp.keep_cuda_or_cpu('a device check that takes only the CPU and CUDA, line 9')" in (
        tmp_path / "train.py").read_text()
    assert found["play.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_float64_weights_of_a_sampler_stay_on_the_cpu(tmp_path: Path) -> None:
    """fast-reid's ImbalancedDatasetSampler keeps `torch.DoubleTensor` weights for `torch.multinomial`: a sampler of
    `torch.utils.data` gives the loader indices, so the float64 never reaches a device and the training script may
    use MPS. The same tensor in a class that is no sampler, which the script moves, keeps a Mac on the CPU."""
    sampler = ("import torch\nfrom torch.utils.data.sampler import Sampler\n\n\nclass Balanced(Sampler):\n"
               "    def __init__(self, n):\n        self.weights = torch.DoubleTensor([1.0] * n)\n\n"
               "    def __iter__(self):\n"
               "        return iter(torch.multinomial(self.weights, len(self.weights)).tolist())\n")
    script = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
              "from samplers import Balanced\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(4, 2).cuda()\n"
              "    data = TensorDataset(torch.randn(8, 4))\n"
              "    for (x,) in DataLoader(data, batch_size=2, sampler=Balanced(8)):\n        print(model(x.cuda()))\n")
    _write(tmp_path / "a", {"samplers.py": sampler, "train.py": script})
    _write(tmp_path / "b", {"samplers.py": sampler.replace("(Sampler)", "(object)"), "train.py": script})
    assert _programs(tmp_path / "a")["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert "mps" not in _programs(tmp_path / "b")["train.py"]["runs_on"]


def test_a_lightning_trainer_given_the_gpu_accelerator_runs_on_cuda_and_mps(tmp_path: Path) -> None:
    """midi-model's `pl.Trainer(accelerator="gpu", ...)`: Lightning (1.7 on) gives "gpu" CUDA's or MPS's
    accelerator, so a Mac runs it on MPS; a CPU-only machine and an Intel GPU have neither."""
    _write(tmp_path, {"train.py": "import lightning as pl\nimport torch\n\nif __name__ == '__main__':\n"
                                  "    print(torch.cuda.is_available())\n"
                                  "    trainer = pl.Trainer(accelerator='gpu', devices=1)\n"
                                  "    trainer.fit(torch.nn.Linear(2, 2))\n"})
    found = _programs(tmp_path)["train.py"]
    assert found["runs_on"] == ["cuda", "mps"], found
    assert {b["target"] for b in found["blockers"]} == {"cpu", "xpu"}
    assert "asks for a GPU: CUDA or MPS" in found["blockers"][0]["reason"]


def test_a_float64_cast_of_a_tensor_made_on_the_cpu_and_never_moved_stays_there(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """AudioClassfication's dataset keeps `self.samples_weight = torch.zeros(n).double()` for the training script's
    WeightedRandomSampler: made on the CPU and never moved, so the script may use MPS. Where the dataset moves it to
    the device, a Mac keeps the CPU."""
    data = ("import torch\nfrom torch.utils.data import Dataset\n\n\nclass Clips(Dataset):\n"
            "    def __init__(self, n):\n        self.x = torch.randn(n, 4)\n"
            "        self.samples_weight = torch.zeros(n).double()\n        for i in range(n):\n"
            "            self.samples_weight[i] = 1.0 + i % 2\n\n    def __len__(self):\n"
            "        return len(self.x)\n\n    def __getitem__(self, i):\n        return self.x[i]\n")
    script = ("import torch\nfrom torch.utils.data import DataLoader, WeightedRandomSampler\n\n"
              "from data import Clips\n\nif __name__ == '__main__':\n    data = Clips(8)\n"
              "    model = torch.nn.Linear(4, 2).cuda()\n"
              "    for x in DataLoader(data, sampler=WeightedRandomSampler(data.samples_weight, 8)):\n"
              "        print(model(x.cuda()))\n")
    _write(tmp_path / "a", {"data.py": data, "train.py": script})
    moved = data.replace("return self.x[i]", "return self.x[i], self.samples_weight.cuda()")
    _write(tmp_path / "b", {"data.py": moved, "train.py": script})
    monkeypatch.chdir(tmp_path / "a")  # run from the project, as its scripts run
    assert _programs(Path("."))["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    monkeypatch.chdir(tmp_path / "b")
    assert "mps" not in _programs(Path("."))["train.py"]["runs_on"]


def test_a_module_a_setup_script_builds_is_no_module_the_project_lacks(tmp_path: Path) -> None:
    """ffcv's `from ._libffcv import ...`: no file of that name in the repository, but setup.py builds it
    (`Extension('ffcv._libffcv', sources=[...])`, a plain C extension): its programs run where they ran. Without
    the setup script the module is missing, and they run nowhere."""
    files = {"fastio/__init__.py": "", "fastio/reader.py": "from ._libio import read\n",
             "train.py": "import torch\n\nfrom fastio.reader import read\n\nprint(read, torch.ones(2).cuda())\n"}
    _write(tmp_path / "a", {**files, "setup.py": "from setuptools import Extension, setup\n\n"
                                                 "setup(name='fastio', ext_modules=[Extension('fastio._libio', "
                                                 "sources=['libio/io.cpp'])])\n"})
    _write(tmp_path / "b", files)
    assert _programs(tmp_path / "a")["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert _programs(tmp_path / "b")["train.py"]["runs_on"] == []


def test_data_moved_if_other_data_is_on_cuda_then_put_beside_it_splits_nothing() -> None:
    """Dacon_LGAI's SSIM loss: `if img1.is_cuda: window = window.cuda(img1.get_device())`, then `window =
    window.type_as(img1)`, which puts the window beside the image on every device: no reason to keep a Mac (or an
    Intel GPU) on the CPU. Without the second line, TP024 writes `window.to(img1.device)`, which does the same; a move
    to another name than the one moved leaves the window on the CPU beside an image on MPS."""
    ssim = ("import torch\n\n\ndef window_for(img1, window):\n    if img1.is_cuda:\n"
            "        window = window.cuda(img1.get_device())\n    window = window.type_as(img1)\n    return window\n")
    assert blocker(ssim) is None
    assert blocker(ssim.replace("window.type_as(img1)", "window.to(img1.device)")) is None
    assert blocker(ssim.replace("    window = window.type_as(img1)\n", "")) is None
    found = blocker(ssim.replace("    window = window.type_as(img1)\n", "").replace(
        "        window = window.cuda(", "        moved = window.cuda("))
    assert found is not None and found[0] == 5 and found[1].startswith("data moved only where other data is on CUDA")


def test_an_import_of_a_package_not_beside_the_script_is_no_module_the_project_lacks(tmp_path: Path) -> None:
    """CompressGNN's `experiment/sample/sample.py` imports `dgl.dataloading`: the pip package, not the project's
    `model/dgl/` (a package of its own: `model/` holds no `__init__.py`), which lies nowhere Python looks from the
    script; nothing says it is missing."""
    _write(tmp_path, {"model/dgl/__init__.py": "",
                      "experiment/sample/sample.py": "import torch\nimport dgl.dataloading\n\n"
                                                     "print(dgl.dataloading, torch.ones(2).cuda())\n"})
    assert _programs(tmp_path)["experiment/sample/sample.py"]["runs_on"] != []
    # 3D-EMGP: `data/qm9/dataset.py` imports `data.qm9.utils` from the root its script runs in, beside a package
    # `data/qm9/data/` of its own: a module a script imports is found from the script's folder, not its own
    _write(tmp_path / "emgp", {"data/__init__.py": "", "data/qm9/__init__.py": "", "data/qm9/data/__init__.py": "",
                               "data/qm9/utils.py": "def f():\n    return 1\n",
                               "data/qm9/dataset.py": "from data.qm9.utils import f\n",
                               "train.py": "import torch\n\nfrom data.qm9.dataset import f\n\n"
                                           "print(f(), torch.ones(2).cuda())\n"})
    assert _programs(tmp_path / "emgp")["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_name_a_setup_py_extension_builds_in_place_is_no_stale_import(tmp_path: Path) -> None:
    """ffcv's `from ffcv import _libffcv` where setup.py builds `Extension('ffcv._libffcv', ...)`, a plain C
    extension: no ImportError on every device, so the program runs where its port does."""
    _write(tmp_path, {
        "setup.py": "from setuptools import Extension, setup\n\n"
                    "setup(name='fast', ext_modules=[Extension('fast._libfast', sources=['lib.c'])])\n",
        "fast/__init__.py": "",
        "fast/reader.py": "from fast import _libfast\n\n\ndef read(n):\n    return _libfast.read(n)\n",
        "train.py": "import torch\nfrom fast.reader import read\n\nx = torch.zeros(read(3)).cuda()\nprint(x)\n",
    })
    found = _programs(tmp_path)["train.py"]
    assert set(found["runs_on"]) == {"cuda", "mps", "xpu", "cpu"}, found


def test_a_packaged_script_that_picks_its_device_at_its_top_gets_the_call_above_that_pick(tmp_path: Path) -> None:
    """torchsparsegradutils' benchmarks/sparse_mm_rand.py: a script of an installable package that nothing imports,
    with `device = torch.device("cuda")` at its top and float64 in its benchmark: in its `__main__` block the call
    would come after the runtime picked MPS."""
    bench = ("import torch\n\ndevice = torch.device(\"cuda\")\nDTYPES = [torch.float32, torch.float64]\n\n\n"
             "def run():\n    for dtype in DTYPES:\n        x = torch.ones(3, dtype=dtype, device=device)\n"
             "        print(x.sum())\n\n\nif __name__ == \"__main__\":\n    run()\n")
    root = _applied(tmp_path, {"pyproject.toml": "[project]\nname = \"pkg\"\nversion = \"0\"\n",
                               "pkg/__init__.py": "", "pkg/benchmarks/__init__.py": "",
                               "pkg/benchmarks/bench.py": bench})
    lines = (root / "pkg/benchmarks/bench.py").read_text().splitlines()
    call = next(i for i, line in enumerate(lines) if "avoid_mps(" in line)
    assert call < next(i for i, line in enumerate(lines) if line.startswith("device =")), lines


def test_where_data_is_passed_as_a_flag_to_a_method_that_moves_other_data_keeps_a_mac_on_the_cpu(
        tmp_path: Path) -> None:
    """crnn-pytorch: `self.init_hidden(n, next(self.parameters()).is_cuda)`, whose `if gpu: h0 = h0.cuda()` leaves
    the hidden state on the CPU where the model is on MPS."""
    model = ("import torch\nfrom torch import nn\n\n\nclass CRNN(nn.Module):\n"
             "    def __init__(self):\n        super().__init__()\n        self.rnn = nn.GRU(4, 4)\n\n"
             "    def forward(self, x):\n"
             "        hidden = self.init_hidden(x.size(1), next(self.parameters()).is_cuda)\n"
             "        return self.rnn(x, hidden)[0]\n\n"
             "    def init_hidden(self, batch_size, gpu=False):\n        h0 = torch.zeros(1, batch_size, 4)\n"
             "        if gpu:\n            h0 = h0.cuda()\n        return h0\n")
    script = ("import torch\nfrom model import CRNN\n\nnet = CRNN().cuda()\nx = torch.zeros(2, 3, 4).cuda()\n"
              "print(net(x))\n")
    found = _programs(_write(tmp_path, {"model.py": model, "train.py": script}))["train.py"]
    assert set(found["runs_on"]) == {"cuda", "cpu"}, found
    assert any(b["path"] == "model.py" and b["line"] == 11 for b in found["blockers"]), found


def test_an_import_through_a_namespace_package_still_runs_the_packages_above_it(tmp_path: Path) -> None:
    """SimLVSeg's model scripts: `from simlvseg.model.utils.carafe3d import CARAFE3D`, where `utils` has no
    `__init__.py`: Python still runs `simlvseg/__init__.py`, which imports mamba_ssm's CUDA kernels."""
    found = _programs(_write(tmp_path, {
        "pkg/__init__.py": "from pkg.fast import kernel\n",
        "pkg/fast.py": "import triton\n\n\ndef kernel():\n    return triton\n",
        "pkg/utils/helper.py": "def double(x):\n    return 2 * x\n",
        "pkg/net.py": "import torch\nfrom pkg.utils.helper import double\n\n\nif __name__ == \"__main__\":\n"
                      "    print(double(torch.ones(2).cuda()))\n",
    }))["pkg/net.py"]
    assert found["runs_on"] == ["cuda"], found


def test_a_flag_handed_to_a_class_through_its_package_and_on_from_its_init_keeps_its_branches(
        tmp_path: Path) -> None:
    """torch_seq2rec: `lib.GRU4REC(..., use_cuda=args.cuda)` (a class `lib/__init__.py` imports from
    `lib/model.py`), and `Trainer.__init__` handing its own `use_cuda` to `lib.Evaluation`: off CUDA each
    `torch.device('cuda' if use_cuda else 'cpu')` picks the CPU, as `args.cuda = torch.cuda.is_available()` does, so
    rewriting them changes nothing."""
    choice = "        self.device = torch.device('cuda' if use_cuda else 'cpu')\n"
    files = {
        "lib/__init__.py": "from .model import Net\nfrom .evaluation import Evaluation\nfrom .trainer import Trainer\n",
        "lib/model.py": f"import torch\n\n\nclass Net(torch.nn.Linear):\n    def __init__(self, use_cuda=False):\n"
                        f"        super().__init__(2, 2)\n{choice}",
        "lib/evaluation.py": f"import torch\n\n\nclass Evaluation:\n    def __init__(self, model, use_cuda):\n{choice}",
        "lib/trainer.py": f"import torch\nimport lib\n\n\nclass Trainer:\n    def __init__(self, model, use_cuda):\n"
                          f"        self.evaluation = lib.Evaluation(model, use_cuda)\n{choice}",
        "main.py": "import argparse\nimport torch\nimport lib\n\nargs = argparse.Namespace()\n"
                   "args.cuda = torch.cuda.is_available()\n\nif __name__ == \"__main__\":\n"
                   "    model = lib.Net(use_cuda=args.cuda)\n    trainer = lib.Trainer(model, use_cuda=args.cuda)\n"
                   "    print(model(torch.zeros(1, 2).to(model.device)))\n",
    }
    found = _migrated(_write(tmp_path, files))
    assert not any(found[name]["changed"] for name in ("lib/model.py", "lib/evaluation.py", "lib/trainer.py")), found


def test_a_relative_import_of_a_submodule_named_as_its_package_binds_that_submodule(tmp_path: Path) -> None:
    """consistency_vqa: `from . import models` in core/models/model_factory.py (core/ has no `__init__.py`) imports
    core/models/models.py, a submodule of the package, not a name its `__init__` lacks: the program runs."""
    _write(tmp_path, {
        "core/models/__init__.py": "",
        "core/models/models.py": "import torch\n\n\nclass Net(torch.nn.Linear):\n    pass\n",
        "core/models/model_factory.py": "from . import models\n\n\ndef get(n):\n    return models.Net(n, n)\n",
        "train.py": "import torch\nfrom core.models import model_factory\n\nif __name__ == '__main__':\n"
                    "    print(model_factory.get(2).cuda()(torch.ones(2).cuda()))\n",
    })
    assert _programs(tmp_path)["train.py"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]


def test_a_call_its_project_refuses_counts_only_where_it_settles_the_program(tmp_path: Path) -> None:
    """MusicDiffusion: a call of a project class or function with arguments its signature refuses, made before the
    program's work, is a TypeError on every device. Not where a decorator, a spread or a base outside the project
    may take the arguments, nor after the work began, nor in a notebook cell whose result no later line reads."""
    import nbformat
    from nbformat import v4

    _write(tmp_path, {
        "nets.py": "import functools\n\nimport torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\n"
                   "class Plain:\n    pass\n\n\ndef build(depth, width):\n    return Net()\n\n\n"
                   "@functools.lru_cache\ndef cached(depth):\n    return Net()\n",
        "stale.py": "import torch\nfrom nets import build\n\nmodel = build(3)\nprint(torch.ones(1).cuda())\n",
        "plain.py": "import torch\nimport nets\n\nnets.Plain(1)\nprint(torch.ones(1).cuda())\n",
        "fine.py": "import torch\nfrom nets import Net, build, cached\n\nargs = (3, 4)\nnet = Net(4)\n"
                   "model = build(*args)\ncached(1, 2)\nfor _ in range(2):\n    print(torch.ones(1).cuda())\n"
                   "build(1)\n",
    })
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("import torch\nfrom nets import build"), v4.new_code_cell("build(3)"),
                v4.new_code_cell("print(torch.ones(1).cuda())")]
    nbformat.write(nb, tmp_path / "alone.ipynb")
    found = _programs(tmp_path)
    assert found["stale.py"]["runs_on"] == found["plain.py"]["runs_on"] == []
    assert {(b["target"], b["line"]) for b in found["stale.py"]["blockers"]} == {
        (t, 4) for t in ("mps", "xpu", "cpu")}
    assert "missing a required argument: 'width'" in found["stale.py"]["blockers"][0]["reason"]
    assert "(too many positional arguments)" in found["plain.py"]["blockers"][0]["reason"]
    assert found["fine.py"]["runs_on"] == found["alone.ipynb"]["runs_on"] == ["cuda", "mps", "xpu", "cpu"]
    assert not _migrated(tmp_path)["stale.py"]["changed"]


@pytest.mark.parametrize("imported", [True, False])
def test_a_default_of_a_script_function_another_module_calls_without_it_is_ported(tmp_path: Path,
                                                                                 imported: bool) -> None:
    """FlashGAT's graphiler/utils/setup.py: `def setup(device='cuda:0')`, with a `__main__` block of its own, is
    star-imported by its package, and the examples call `setup()`: the default is reached, so it is ported with the
    assert beside it. A script no module imports keeps a default no call of its own leaves (R09)."""
    _write(tmp_path, {
        "pkg/__init__.py": "from .setup import *\n" if imported else "",
        "pkg/setup.py": "import torch\n\n\ndef setup(device='cuda:0'):\n    assert torch.cuda.is_available()\n"
                        "    return torch.device(device)\n\n\nif __name__ == '__main__':\n"
                        "    print(setup('cuda:0'))\n",
        "run.py": ("from pkg import setup\n\nprint(setup())\n" if imported else "print(1)\n"),
    })
    setup = _migrated(tmp_path)["pkg/setup.py"]
    assert setup["changed"]
    codes = {r["code"] for r in setup["rewrites"]}
    assert ("TP003" in codes) is imported
    assert any("every call of this script function passes `device`" in d["message"]
               for d in setup["diagnostics"]) is not imported


@pytest.mark.parametrize("lookup", [False, True])
def test_a_method_no_text_of_the_project_names_is_left_as_written(tmp_path: Path, lookup: bool) -> None:
    """HistoDOI's helper_unet.py: `Trainer.train_schp` is named by no module, notebook or config of the project:
    nothing runs it, so its `.cuda()` stays (R19, once) while `Trainer.train` is ported. A method of a class whose
    base is another library's (Lightning calls `training_step` by its name) is ported, and so is every method of a
    project that finds attributes by computed names (`getattr(trainer, "train_" + mode)`)."""
    _write(tmp_path, {
        "helper.py": "import torch\nimport lightning as pl\n\n\nclass Trainer(object):\n"
                     "    def train(self, x):\n        return x.cuda()\n\n"
                     "    def train_schp(self, x):\n        return x.cuda() * 2\n\n\n"
                     "class Lit(pl.LightningModule):\n    def training_step(self, batch, i):\n"
                     "        return batch.cuda()\n",
        "main.py": "import torch\nfrom helper import Lit, Trainer\n\nif __name__ == '__main__':\n"
                   + ("    print(getattr(Trainer(), 'train' + '')(torch.ones(2)), Lit)\n" if lookup else
                      "    print(Trainer().train(torch.ones(2)), Lit)\n"),
    })
    helper = _migrated(tmp_path)["helper.py"]
    lines = {r["line"] for r in helper["rewrites"]}
    assert {7, 15} <= lines
    assert (10 in lines) is lookup
    assert any("nothing in the project runs `Trainer.train_schp`" in d["message"]
               for d in helper["diagnostics"]) is not lookup
