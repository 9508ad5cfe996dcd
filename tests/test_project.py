"""The project-level pass (`torchport.pipeline.project`): device choices other files decide stay CUDA-or-CPU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchport.codemods.analysis.lacks import blocker
from torchport.pipeline import cache as cache_module
from torchport.pipeline import runner
from torchport.pipeline.files import discover

IDIOM = 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
GUARD = "import torch\n\n\ndef build(v):\n    if torch.cuda.is_available():\n        v = v.cuda()\n    return v\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _run(root: Path, cache: cache_module.Cache | None = None) -> dict[str, object]:
    results = runner.run(list(discover([root])), jobs=1, cache=cache)
    return {r.path.relative_to(root).as_posix(): r for r in results}


def test_float64_in_a_function_the_program_never_names_blocks_nothing(tmp_path: Path) -> None:
    """piq: its package imports fid.py, whose FID casts to float64, into every program; one that never names FID
    never runs the cast, and may use MPS. One that names it (through a method that calls the cast) keeps the CPU."""
    _tree(tmp_path, {
        "pkg/__init__.py": "from .fid import FID\nfrom .psnr import psnr\n",
        "pkg/fid.py": "import torch\n\n\ndef _stats(x):\n    return x.double().mean()\n\n\nclass FID:\n"
                      "    def __call__(self, x):\n        return _stats(x)\n",
        "pkg/psnr.py": "import torch\n\n\ndef psnr(x):\n    return x.mean()\n",
        "uses_psnr.py": "import pkg\n" + IDIOM + "print(pkg.psnr(torch.ones(2, device=device)))\n",
        "uses_fid.py": "import pkg\n" + IDIOM + "print(pkg.FID()(torch.ones(2, device=device)))\n",
    })
    found = _run(tmp_path)
    assert found["uses_psnr.py"].hold is None and "tp.available_device_str()" in found["uses_psnr.py"].migrated
    assert found["uses_fid.py"].hold is not None and "pkg/fid.py:5 uses float64" in found["uses_fid.py"].hold


def test_float64_named_only_by_code_the_program_never_runs_blocks_nothing(tmp_path: Path) -> None:
    """ptwt: its package imports both transforms and its packets module into every program; packets' method names
    the sparse float64 transform, but a script calling the convolution transform never runs that method. A set of
    the dtypes it supports is no float64 tensor either."""
    _tree(tmp_path, {
        "pkg/__init__.py": "from .conv import wavedec\nfrom .matmul import MatrixWavedec\n"
                           "from .packets import Packet\n",
        "pkg/constants.py": "import torch\n\nSUPPORTED_DTYPES = {torch.float32, torch.float64}\n",
        "pkg/conv.py": "import torch\nfrom .constants import SUPPORTED_DTYPES\n\n\ndef wavedec(x):\n"
                       "    assert x.dtype in SUPPORTED_DTYPES\n    return x.cumsum(0)\n",
        "pkg/matmul.py": "import torch\n\n\nclass MatrixWavedec:\n    def __call__(self, x):\n"
                         "        return x.double().cumsum(0)\n",
        "pkg/packets.py": "from .matmul import MatrixWavedec\n\n\nclass Packet:\n    def transform(self, x):\n"
                          "        return MatrixWavedec()(x)\n",
        "conv_script.py": "import pkg\n" + IDIOM + "print(pkg.wavedec(torch.ones(2, device=device)))\n",
        "matrix_script.py": "import pkg\n" + IDIOM + "print(pkg.MatrixWavedec()(torch.ones(2, device=device)))\n",
    })
    found = _run(tmp_path)
    assert found["conv_script.py"].hold is None and "tp.available_device_str()" in found["conv_script.py"].migrated
    assert "pkg/matmul.py:6 uses float64" in (found["matrix_script.py"].hold or "")


@pytest.mark.parametrize("dtype", ["double", "float"])
def test_float64_in_an_imported_module_keeps_the_idiom(tmp_path: Path, dtype: str) -> None:
    _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/timing.py": f"import torch\n\n\ndef dtw(x):\n    return x.{dtype}().cumsum(0)\n",
        "pkg/run.py": "from .timing import dtw\n" + IDIOM + "print(dtw(torch.ones(2, device=device)))\n",
    })
    run = _run(tmp_path)["pkg/run.py"]
    if dtype == "float":  # no blocker: rewritten
        assert "tp.available_device_str()" in run.migrated and run.hold is None
        return
    assert run.migrated == run.original
    assert run.hold is not None and "pkg/timing.py:5 uses float64" in run.hold
    assert any(d.code == "TP110" and "availability idiom kept as written: " in d.message
               and "pkg/timing.py:5 uses float64" in d.message for d in run.diagnostics)


@pytest.mark.parametrize("helper", [
    "import torch\n\n\ndef dtw(x):\n    return x.cpu().double()\n",  # on the CPU: no blocker
    "import torch\n\n\ndef dtw(x):\n    d = torch.float32 if x.device.type == 'mps' else torch.float64\n"
    "    return x.to(d)\n",
    "def dtw(x):\n    return x  # not .double()\n",
])
def test_what_is_not_a_blocker(tmp_path: Path, helper: str) -> None:
    _tree(tmp_path, {"timing.py": helper, "run.py": "import timing\n" + IDIOM})
    assert _run(tmp_path)["run.py"].hold is None


def test_a_blocker_not_imported_does_not_hold(tmp_path: Path) -> None:
    _tree(tmp_path, {"timing.py": "import torch\nx = torch.zeros(2, dtype=torch.float64)\n", "run.py": IDIOM})
    assert _run(tmp_path)["run.py"].hold is None


def test_a_choice_kept_by_the_importer_keeps_the_imported_guard(tmp_path: Path) -> None:
    # script.py keeps its flag (`use_cuda`), so lib.build must not move data to MPS either.
    _tree(tmp_path, {
        "lib.py": GUARD,
        "script.py": "import torch\nimport lib\nuse_cuda = torch.cuda.is_available()\nm = lib.build(1)\n"
                     "x = m.cuda() if use_cuda else m\n",
    })
    lib = _run(tmp_path)["lib.py"]
    assert lib.migrated == lib.original
    assert lib.hold is not None and "script.py:5 keeps its device choice CUDA-or-CPU" in lib.hold


def test_a_registry_package_imports_its_folder(tmp_path: Path) -> None:
    # `fairseq.tasks` imports every task module by name; a script importing the package reaches them.
    _tree(tmp_path, {
        "tasks/__init__.py": "import importlib, os\nfor f in os.listdir(os.path.dirname(__file__)):\n"
                             "    importlib.import_module('tasks.' + f[:-3])\n",
        "tasks/tts.py": GUARD,
        "generate.py": "import torch\nimport tasks\nuse_cuda = torch.cuda.is_available()\n"
                       "model = tasks.tts.build(1)\nmodel = model.cuda() if use_cuda else model\n",
    })
    assert _run(tmp_path)["tasks/tts.py"].hold is not None


def test_kept_and_rewritten_choices_in_one_file(tmp_path: Path) -> None:
    _tree(tmp_path, {"one.py": GUARD + "\n\nuse_cuda = torch.cuda.is_available()\ny = build(2)\n"
                                       "y = y.cuda() if use_cuda else y\n"})
    one = _run(tmp_path)["one.py"]
    assert one.migrated == one.original and one.hold.startswith("this file:")


def test_unrelated_files_are_not_held(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": GUARD + "\n\nif __name__ == '__main__':\n    print(build(torch.ones(1)))\n",
                     "b.py": "import torch\nuse_cuda = torch.cuda.is_available()\n"
                                            "x = torch.ones(1)\nx = x.cuda() if use_cuda else x\n"})
    a = _run(tmp_path)["a.py"]
    assert a.hold is None and "tp.is_available()" in a.migrated


def test_held_results_are_cached(tmp_path: Path) -> None:
    _tree(tmp_path, {"timing.py": "import torch\nx = torch.ones(1).double()\n", "run.py": "import timing\n" + IDIOM})
    cache = cache_module.Cache.open(tmp_path / ".cache")
    first = _run(tmp_path, cache)["run.py"]
    again = cache_module.Cache.open(tmp_path / ".cache")
    second = _run(tmp_path, again)["run.py"]
    assert again.misses == 0 and again.hits == 3  # timing.py, then run.py without and with its hold
    assert (second.hold, second.migrated, second.diagnostics) == (first.hold, first.migrated, first.diagnostics)


@pytest.mark.parametrize(("text", "expected"), [
    ("x = y.double()\n", (1, "float64")),
    ("\nz = torch.zeros(2, dtype=torch.complex128, device=dev)\n", (2, "complex128")),
    ("z = torch.zeros(2, dtype=torch.float64)\nz = z.to(dev)\n", (1, "float64")),  # a CPU tensor moved later
    ("x = y.to(torch.double)\n", (1, "float64")),
    ("torch.set_default_dtype(torch.float64)\n", (1, "float64")),
    ("def f(dtype=torch.float64):\n    pass\n", (1, "float64")),  # where it goes is not known: it counts
    # only compared, tested, kept on the CPU, or a table of names
    ("ok = x.dtype == torch.float64\n", None),
    ("d = torch.float64 if x.dtype == torch.float64 else torch.float32\n", None),
    ("w = torch.full((3,), 0.5, dtype=torch.float64)\nw.sum()\n", None),
    ("s = torch.zeros(1, device='cpu', dtype=torch.float64)\n", None),
    ("DTYPES = {'float64': torch.float64}\n", None),
    ("a = np.zeros(3, dtype=np.float64)\n", None),  # numpy's, not moved to a device
    ("s = torch.sparse_coo_tensor(i, v)\n", (1, "sparse tensors")),
    ("a = F.forced_align(e, t)\n", (1, "torchaudio's forced_align")),
    ("y = F.interpolate(x, size=s, mode='area')\n",
     (1, 'area interpolation to sizes that need not divide (`mode="area"`)')),
    ("y = F.interpolate(x, size=s, mode='bilinear')\n", None),
    ("x = y.double() if device != 'mps' else y.float()\n", None),  # the code handles MPS itself
    ("x = y.double()  # a comment about MPS is not code\n", (1, "float64")),
    ("# x.double()\n", None),
    ("x = y.cpu().double()\n", None),
    ("t = trial.to('cpu', torch.float64)\n", None),  # cast on its way to the CPU
    # a parametrized dtype a test gives with a device (piq's tests)
    ("@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])\ndef test_psnr(x, dtype, device):\n"
     "    assert psnr(x.to(device=device, dtype=dtype)).dtype == dtype\n", (1, "float64")),
    ("@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])\ndef test_cast(x, dtype):\n"
     "    assert x.to(dtype=dtype).dtype == dtype\n", None),
    ("t = x.to(device='cpu', dtype=torch.float64)\n", None),
    ("q = (-(-d.double().log1p_() * 2 * n).expm1_()).log_().float()\n", None),  # float32 once computed
    ("q = (d.double() * 2).sum()\n", (1, "float64")),
    ("model = torch.nn.DataParallel(model).cuda()\n", (1, "DataParallel, which moves its inputs only on CUDA")),
    ("def f(x, allowed=(torch.float32, torch.float64)):\n    assert x.dtype in allowed\n", None),
    # torchvision's roi_heads: a tuple of dtypes bound to a name only checked against
    ("def f(targets):\n    kinds = (torch.float, torch.double, torch.half)\n    for t in targets:\n"
     "        assert t.dtype in kinds\n", None),
    ("def f(x):\n    kinds = (torch.float, torch.double)\n    return x.to(kinds[1]).cuda()\n", (2, "float64")),
    ("def f(x, dtype=torch.float64):\n    return x.to(dtype)\n", (1, "float64")),
    ("model = DistributedDataParallel(model).cuda()\n", None),
    # every call of the wrapped model gets inputs the code moved itself (semseg's test.py): nothing left to scatter
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, image):\n    x = image.unsqueeze(0).cuda()\n"
     "    x = torch.cat([x, x.flip(3)], 0)\n    return model(x)\n", None),
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, loader):\n    for x, y in loader:\n"
     "        x, y = x.float().cuda(), y.long().cuda()\n        out = model(x)\n", None),  # dgcnn: moved in pairs
    # an input straight from the loader (CutMix's validate) relies on CUDA's scatter
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, loader):\n    for x, y in loader:\n"
     "        y = y.cuda()\n        out = model(x)\n", (1, "DataParallel, which moves its inputs only on CUDA")),
    # ... as do keyword inputs (pan_pp's train: `model(**data)`, the batch straight from the loader)
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, loader):\n    for data in loader:\n"
     "        out = model(**data)\n", (1, "DataParallel, which moves its inputs only on CUDA")),
    # ... a moved input re-made under an `if` from itself stays moved (semseg's flip) ...
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, x, flip):\n    x = x.unsqueeze(0).cuda()\n"
     "    if flip:\n        x = torch.cat([x, x.flip(3)], 0)\n    return model(x)\n", None),
    # ... and one moved only under an `if` (the ImageNet example's `if args.gpu is not None:`) may not be moved
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, loader):\n    for x, y in loader:\n"
     "        if gpu is not None:\n            x = x.cuda(gpu)\n        out = model(x)\n",
     (1, "DataParallel, which moves its inputs only on CUDA")),
    # ... but a call under that same `if` sees it moved (few-shot-meta-baseline's `if eval_fs:` evaluation)
    ("model = torch.nn.DataParallel(model).cuda()\n\n\ndef run(model, loader):\n    for x, y in loader:\n"
     "        if gpu is not None:\n            x = x.cuda(gpu)\n            out = model(x)\n", None),
    # a helper given the device moves what it returns (batteries' `bx, by = t2d((bx, by), device)`)
    ("model = torch.nn.DataParallel(model).to(device)\n\n\ndef run(model, loader, device):\n"
     "    for x, y in loader:\n        x, y = t2d((x, y), device)\n        out = model(x)\n", None),
    ("model = torch.nn.DataParallel(model).to(device)\n\n\ndef run(model, loader, device):\n"
     "    for x, y in loader:\n        x, y = t2d((x, y))\n        out = model(x)\n",
     (1, "DataParallel, which moves its inputs only on CUDA")),
    # handed to a function of the module, which calls it with inputs it moved (SiamMask's `train(loader, model)`)
    ("model = torch.nn.DataParallel(model).cuda()\ntrain(loader, model)\n\n\ndef train(loader, net):\n"
     "    for x in loader:\n        x = x.cuda()\n        out = net(x)\n", None),
    ("model = torch.nn.DataParallel(model).cuda()\ntrain(loader, model)\n\n\ndef train(loader, net):\n"
     "    for x in loader:\n        out = net(x)\n", (1, "DataParallel, which moves its inputs only on CUDA")),
    # a script that never calls the wrapper (FastSpeech's eval.py: `model.module.forward`) scatters nothing
    ("def load():\n    return torch.nn.DataParallel(Net()).cuda()\n\n\nif __name__ == '__main__':\n"
     "    model = load()\n    model.module.forward(x)\n", None),
    # ... nor one that hands only its `.module` to functions whose parameter bears the wrapper's name (RAFT's
    # evaluate.py: `validate_chairs(model.module)`, which calls `model(image1, image2, iters=iters)`)
    ("model = torch.nn.DataParallel(Net())\nmodel.cuda()\n\n\ndef validate(model, iters=24):\n"
     "    return model(x, iters=iters)\n\n\nif __name__ == '__main__':\n    validate(model.module)\n", None),
    ("model = torch.nn.DataParallel(Net())\nmodel.cuda()\n\n\ndef validate(model, iters=24):\n"
     "    return model(x, iters=iters)\n\n\nif __name__ == '__main__':\n    validate(model)\n",
     (2, "DataParallel, which moves its inputs only on CUDA")),
    # ... and a call whose other inputs are numbers the function defaults (`iters=24`) or a name that holds None
    # until a moved value replaces it (RAFT's `flow_init=flow_prev`) gives it nothing to scatter
    ("model = torch.nn.DataParallel(Net()).cuda()\n\n\ndef submit(model, x, iters=32):\n    prev = None\n"
     "    for _ in range(2):\n        low = model(x.cuda(), iters=iters, flow_init=prev)\n        prev = low.cuda()\n",
     None),
    ("model = torch.nn.DataParallel(Net()).cuda()\n\n\ndef submit(model, x, iters=None):\n"
     "    return model(x.cuda(), iters=iters)\n", (1, "DataParallel, which moves its inputs only on CUDA")),
    # ... while one handed on through two functions (`outer(net)` calls `inner(net)`) is the wrapper there too
    ("model = torch.nn.DataParallel(Net()).cuda()\n\n\ndef outer(net):\n    inner(net)\n\n\ndef inner(model):\n"
     "    return model(x)\n\n\nouter(model)\n", (1, "DataParallel, which moves its inputs only on CUDA")),
    ("y = y.type(x.type())\n", (1, "tensor type strings given back to `.type()` (`x.type(y.type())`)")),
    ("y = y.type(x.dtype)\n", None),
    # data moved only where other data is on CUDA: on MPS the port's moves meet it on the CPU
    ("def f(t, y):\n    if t.is_cuda:\n        z = y.cuda()\n", (2, "data moved only where other data is on CUDA "
                                                             "(`.is_cuda`)")),
    ("def f(t, y):\n    if t.is_cuda:\n        y = y.cuda()\n", None),  # TP024 moves it to t.device
    ("def f(t, y):\n    if t.is_cuda:\n        return y.cuda()\n    return y\n", None),  # and this one
    ("def f(t):\n    if t.is_cuda:\n        torch.cuda.synchronize()\n", None),  # nothing placed
    # a device CUDA's only where its input is on CUDA (its masks stay on the CPU on MPS) ...
    ("def f(x):\n    device = (torch.device('cuda:0')\n              if x.is_cuda\n"
     "              else torch.device('cpu'))\n",
     (2, "a device chosen CUDA only where other data is on CUDA (`.is_cuda`)")),
    # ... unless TP024 makes it the input's own (SupContrast's loss: `features.device`), which it does for a name
    # or a chain of attributes, in a module that sets no `is_cuda` of its own
    ("def f(x):\n    device = (torch.device('cuda')\n              if x.is_cuda\n"
     "              else torch.device('cpu'))\n", None),
    # ... or where a module's first weight is, which the choice reads once (TP024 writes `next(...).device`)
    ("def f(self, x):\n    device = torch.device('cuda') if next(self.parameters()).is_cuda else torch.device('cpu')\n",
     None),
    ("def f(self, x):\n    device = torch.device('cuda') if self.first().is_cuda else torch.device('cpu')\n",
     (2, "a device chosen CUDA only where other data is on CUDA (`.is_cuda`)")),
    ("class E:\n    def __init__(self):\n        self.is_cuda = False\n\n    def f(self, x):\n"
     "        return torch.device('cuda') if x.is_cuda else torch.device('cpu')\n",
     (6, "a device chosen CUDA only where other data is on CUDA (`.is_cuda`)")),
    ("def f(x):\n    kind = 'fast' if x.is_cuda else 'slow'\n", None),  # no device
    # torchdiffeq's adaptive solvers (dopri5, the default) make float64 tensors on the state's device
    ("from torchdiffeq import odeint_adjoint as odeint\n\n\ndef f(func, y, t):\n    return odeint(func, y, t)\n",
     (5, "torchdiffeq's adaptive ODE solvers, which make float64 tensors")),
    ("import torchdiffeq\n\n\ndef f(func, y, t):\n    return torchdiffeq.odeint(func, y, t, method='dopri5')\n",
     (5, "torchdiffeq's adaptive ODE solvers, which make float64 tensors")),
    ("from torchdiffeq import odeint\n\n\ndef f(func, y, t):\n    return odeint(func, y, t, method='rk4')\n", None),
    # numpy's default float64, made into a tensor and moved in one expression
    ("z = torch.from_numpy(np.random.RandomState(seed).randn(1, 512)).to(device)\n",
     (1, "float64 numpy arrays made into tensors")),
    ("t = torch.tensor(np.linspace(0, 1, 5)).cuda()\n", (1, "float64 numpy arrays made into tensors")),
    ("z = torch.from_numpy(np.random.randn(1, 512)).float().to(device)\n", None),  # cast on the way
    ("z = torch.from_numpy(np.random.randn(1, 512).astype(np.float32)).to(device)\n", None),
    ("z = torch.tensor(random.uniform(0, 1)).to(device)\n", None),  # Python's float: float32
    ("z = torch.from_numpy(torch.randn(3).numpy()).to(device)\n", None),
    # float64 named for an array its function never makes a tensor of, nor gives back (written to a file)
    ("def save(x, path):\n    out = x.cpu().numpy().astype(np.float64)\n    np.save(path, out)\n\n\n"
     "def load(a):\n    return torch.from_numpy(a).to(device)\n", None),
    ("def load(a):\n    b = a.astype(np.float64)\n    return torch.from_numpy(b).to(device)\n",
     (2, "float64 numpy arrays made into tensors")),
    # DDPM's beta schedule: float64 betas, made a tensor only cast on the way (`.float()`), and kept numpy beside
    ("import numpy as np\n\n\ndef get_beta_schedule(n):\n    return np.linspace(1e-4, 0.02, n, dtype=np.float64)\n\n\n"
     "class Runner:\n    def __init__(self, device):\n        betas = get_beta_schedule(1000)\n"
     "        self.betas = torch.from_numpy(betas).float().to(device)\n        self.logvar = np.log(1.0 - betas)\n",
     None),
    ("import numpy as np\n\n\ndef get_beta_schedule(n):\n    return np.linspace(1e-4, 0.02, n, dtype=np.float64)\n\n\n"
     "class Runner:\n    def __init__(self, device):\n        betas = get_beta_schedule(1000)\n"
     "        self.betas = torch.from_numpy(betas).to(device)\n",
     (5, "float64 numpy arrays made into tensors")),
    # ... not one cast after the move (float64 on the device first)
    ("import numpy as np\n\n\ndef get_beta_schedule(n):\n    return np.linspace(1e-4, 0.02, n, dtype=np.float64)\n\n\n"
     "class Runner:\n    def __init__(self, device):\n        betas = get_beta_schedule(1000)\n"
     "        self.betas = torch.from_numpy(betas).to(device).float()\n",
     (5, "float64 numpy arrays made into tensors")),
    # mtm-meta-learning's protonet: a script's float64 copy of its weights, written to a file
    ("x = torch.from_numpy(a).to(device)\nif __name__ == '__main__':\n    saved = np.float64(w.cpu().numpy())\n"
     "    f.write(saved)\n", None),
    ("x = torch.from_numpy(a).to(device)\nif __name__ == '__main__':\n    saved = np.float64(w.cpu().numpy())\n"
     "    y = torch.from_numpy(saved).to(device)\n", (3, "float64 numpy arrays made into tensors")),
    ("x = torch.from_numpy(a).to(device)\nsaved = np.float64(w.cpu().numpy())\nscaled = saved * 2\n"
     "y = torch.from_numpy(scaled).to(device)\n", (2, "float64 numpy arrays made into tensors")),
    # a dataset's float64: stored and given back by __getitem__ (a regression target), or only used to pick (PDVC)
    ("class D:\n    def __init__(self, n):\n        self.targets = np.zeros(n)\n\n    def __getitem__(self, i):\n"
     "        return i, self.targets[i]\n", (3, "float64 numpy arrays a dataset gives (its DataLoader batches them as "
                                           "float64 tensors)")),
    ("class D:\n    def __init__(self, n):\n        self.uniform = np.linspace(0, 1, n)\n\n"
     "    def __getitem__(self, i):\n        t = self.uniform[i] * 10\n        return load(t)\n", None),
    # a wrapper put in eval mode is still the wrapper; a dtype given by position is the array's
    ("def f(model, x):\n    model = torch.nn.DataParallel(model)\n    model = model.eval()\n    model.to(device)\n"
     "    return model(x)\n", (4, "DataParallel, which moves its inputs only on CUDA")),
    ("class D:\n    def __getitem__(self, i):\n        x = np.zeros(3, np.float32)\n        return x\n", None),
    ("def ctc_loss(x):\n    return x\n", None),  # a project's own function of that name
    # a class like T2M-GPT's WordVectorizer: `__getitem__` gives back what a method of it makes
    ("class V:\n    def _ohot(self, n):\n        v = np.zeros(n)\n        return v\n\n    def __getitem__(self, i):\n"
     "        pos = self._ohot(i)\n        return i, pos\n", (3, "float64 numpy arrays a dataset gives (its "
                                                            "DataLoader batches them as float64 tensors)")),
    # Mixup-Inference's mixing weights: numpy's samplers give float64 (`np.random.beta`), moved before their cast
    ("ma = np.random.beta(1.0, 1.0, [4, 1])\nx = torch.from_numpy(ma).to(device).float()\n",
     (2, "float64 numpy arrays made into tensors")),
    # GenerativeZoo's MaskGIT: Gumbel noise from numpy, moved as it is
    ("import numpy as np\nimport torch\n\n\ndef f(conf, t, r, device):\n"
     "    rand = t * np.random.gumbel(size=(2, 4)) * (1 - r)\n    return conf + torch.from_numpy(rand).to(device)\n",
     (7, "float64 numpy arrays made into tensors")),
    ("def beta(t):\n    return t\n\n\nx = torch.from_numpy(beta(a)).to(device)\n", None),  # a project's own
    # ... and an indexed copy of them keeps their float64 (Mixup-Inference's `ma_img = ma[:, :, None, None]`)
    ("def shuffle(x):\n    if FLAGS.mixup_alpha == 0.:\n        return x\n    alpha = FLAGS.mixup_alpha\n"
     "    ma = np.random.beta(alpha, alpha, [4, 1])\n    ma_img = ma[:, :, None, None]\n"
     "    return x * torch.from_numpy(ma_img).to(device).float()\n", (7, "float64 numpy arrays made into tensors")),
    ("def shuffle(x):\n    if FLAGS.mixup_alpha == 0.:\n        return x\n    alpha = FLAGS.mixup_alpha\n"
     "    ma = np.random.beta(alpha, alpha, [4, 1])\n    ma_img = ma[:, :, None, None]\n"
     "    return x * torch.from_numpy(ma_img).float().to(device)\n", None),
    # Simple-CenterNet's dataset: `hm, wh = self.generate_targets(boxes)`, arrays of float64 by default
    ("class C:\n    def targets(self, n):\n        hm = np.zeros((n, n))\n        wh = np.zeros((n, 2))\n"
     "        return hm, wh\n\n    def __getitem__(self, i):\n        hm, wh = self.targets(i)\n"
     "        return torch.from_numpy(hm), torch.from_numpy(wh)\n",
     (3, "float64 numpy arrays a dataset gives (its DataLoader batches them as float64 tensors)")),
    # pmf's MovieLens: a subclass builds the rows of Python floats its `__getitem__` gives (float64 batches)
    ("import torch\n\n\nclass Ratings(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
     "        self.rows, self.users = self.build(path)\n\n    def __getitem__(self, i):\n"
     "        rating = self.rows[i][1]\n        return [self.rows[i][0], rating]\n\n\n"
     "class Small(Ratings):\n    def build(self, path):\n        rows = []\n        for line in open(path):\n"
     "            user, rating = line.split()\n            rating = float(rating)\n"
     "            rows.append([int(user), rating])\n        return rows, []\n",
     (18, "float64 numpy arrays a dataset gives (its DataLoader batches them as float64 tensors)")),
    ("import torch\n\n\nclass Ratings(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n"
     "        return torch.tensor(float(self.rows[i]))\n", None),  # torch.tensor of a Python float: float32
    # torchvision's train_quantization.py: fake-quantize and quantize kernels are the CPU's and CUDA's alone
    ("model = torch.ao.quantization.prepare_qat(model)\n",
     (1, "quantization kernels (fake-quantize, `quantize_per_tensor`)")),
    ("q = torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)\n",
     (1, "quantization kernels (fake-quantize, `quantize_per_tensor`)")),
    ("def prepare_qat(model):\n    return model\n", None),  # a project's own function of that name
    # deep_avsr: MPS has no CTC loss kernel
    ("loss_function = nn.CTCLoss(blank=0)\n", (1, "CTC loss (`aten::_ctc_loss`)")),
    ("loss = F.ctc_loss(log_probs, targets, lengths, target_lengths)\n", (1, "CTC loss (`aten::_ctc_loss`)")),
    # DistilledCTR's models: a CPU type made of a tensor that is not on CUDA raises on MPS and on an XPU
    ("def forward(self, x):\n    if not x.is_cuda:\n        x = torch.LongTensor(x).to(device)\n    return x\n",
     (3, "a CPU tensor type made of a tensor wherever it is not on CUDA (`torch.LongTensor(x)`)")),
    ("def forward(self, x):\n    if not x.is_cuda:\n        y = torch.LongTensor([1, 2])\n    return x\n", None),
    # ProPainter's flow_comp_raft: the wrapper only loads a checkpoint, then the name is the module again
    ("def f(model, x):\n    model = torch.nn.DataParallel(model)\n    model = model.module\n    model.to(device)\n"
     "    return model(x)\n", None),
    # HRNet's demo: the wrapper moved by a statement of its own, called with inputs it never moved
    ("def f(model, x):\n    model = torch.nn.DataParallel(model)\n    model.to(device)\n    return model(x)\n",
     (3, "DataParallel, which moves its inputs only on CUDA")),
    ("def f(model, x):\n    model = torch.nn.DataParallel(model)\n    model.to(device)\n"
     "    x = x.to(device)\n    return model(x)\n", None),
    # kaggle-hpa's train: wrapped only where CUDA counts two devices, which a Mac never does
    ("import torch\n\n\ndef f(model, x):\n    if torch.cuda.device_count() > 1:\n"
     "        model = torch.nn.DataParallel(model)\n    model = model.cuda()\n    return model(x)\n", None),
    # Co2L's set_model: wrapped under `if torch.cuda.is_available():`, the module placed by a move beside it
    ("import torch\n\n\ndef f(model, x):\n    if torch.cuda.is_available():\n"
     "        if torch.cuda.device_count() > 1:\n            model.encoder = torch.nn.DataParallel(model.encoder)\n"
     "        model = model.cuda()\n"
     "    x = x.cuda()\n    return model.encoder(x)\n", None),
    ("import torch\n\n\ndef f(model, x, many):\n    if many:\n"
     "        model.encoder = torch.nn.DataParallel(model.encoder)\n"
     "    x = x.cuda()\n    return model.encoder(x)\n", (6, "DataParallel, which places its module only on CUDA")),
    ("import torch\n\n\ndef f(net, x):\n    if torch.cuda.is_available():\n"
     "        net = torch.nn.DataParallel(net)\n    x = x.cuda()\n    return net(x)\n",
     (6, "DataParallel, which places its module only on CUDA")),  # the port's test is true on MPS too
    ("import torch\n\n\ndef f(model, x, many):\n    if many:\n        model = torch.nn.DataParallel(model)\n"
     "    model = model.cuda()\n    return model(x)\n", (7, "DataParallel, which moves its inputs only on CUDA")),
    # the module moved before it is wrapped: on MPS the wrapper calls it with its inputs where they are (CPU)...
    ("def f(net, x):\n    net = net.cuda()\n    net = torch.nn.DataParallel(net)\n    return net(x)\n",
     (3, "DataParallel, which moves its inputs only on CUDA")),
    # ... unless they were moved (CRAFT's test.py)
    ("def f(net, x):\n    net = net.cuda()\n    net = torch.nn.DataParallel(net)\n    x = x.cuda()\n"
     "    return net(x)\n", None),
    # ibot's challenge_eval: the wrapper handed to a function that calls it with what its loader gives
    ("model.cuda()\nmodel = nn.DataParallel(model, device_ids=[0])\nacc = evaluate(model, loader)\n",
     (2, "DataParallel, which moves its inputs only on CUDA")),
    # stylegan2's style_mixing.py: numpy's default float64 stacked from a comprehension
    ("import numpy as np\n\n\ndef f(seeds):\n    z = np.stack([np.random.RandomState(s).randn(512) for s in seeds])\n"
     "    return torch.from_numpy(z).to(device)\n", (6, "float64 numpy arrays made into tensors")),
    ("import numpy as np\n\n\ndef f(seeds):\n"
     "    z = np.stack([np.random.RandomState(s).randn(512).astype(np.float32) for s in seeds])\n"
     "    return torch.from_numpy(z).to(device)\n", None),
    # UnOpticalFlow's warp test: `.cuda().float()` becomes `.float().to(tp.device())`, float32 on the device
    ("x = np.ones([1, 10])\ny = torch.from_numpy(x).cuda().float()\n", None),
    ("x = np.ones([1, 10])\ny = torch.from_numpy(x).cuda()\n", (2, "float64 numpy arrays made into tensors")),
])
def test_blocker(text: str, expected: tuple[int, str] | None) -> None:
    assert blocker(text) == expected


@pytest.mark.parametrize(("torch_version", "lacks"), [("2.9.1", True), ("2.10.0", False), ("2.13.0", False)])
def test_what_mps_lacked_before_a_torch_release_counts_where_the_installed_torch_predates_it(
        monkeypatch: pytest.MonkeyPatch, torch_version: str, lacks: bool) -> None:
    """GenerativeZoo's Glow: slogdet's backward solves with `aten::linalg_lu_solve`, which MPS has had since torch
    2.10 (pytorch#167569): a lack where the torch installed is older. A project's own `slogdet` is none."""
    from torchport.model import installed

    monkeypatch.setattr(installed, "version", lambda: torch_version)
    assert blocker("logdet = torch.slogdet(w)[1]\n") == (
        (1, "LU solves (`aten::linalg_lu_solve`: `slogdet`'s backward)") if lacks else None)
    assert blocker("def slogdet(w):\n    return w\n") is None


def test_a_module_whose_unconditional_moves_fail_on_the_cpu_is_ported_whole_not_held(tmp_path: Path) -> None:
    """Held, the guard would keep the CPU on a Mac as before, but `x = torch.ones(2).cuda()` beside it already
    fails on any machine without CUDA: a hold is no "as before" there (DGI's `tot = tot.cuda()`). The module is
    ported whole and its program keeps the CPU on a Mac with `tp.avoid_mps`."""
    _tree(tmp_path, {
        "timing.py": "import torch\n\n\ndef adjacency(i, v):\n    return torch.sparse_coo_tensor(i, v)\n",
        "run.py": "import timing\nimport torch\n\nif torch.cuda.is_available():\n    model = model.cuda()\n"
                  "x = torch.ones(2).cuda()\ntorch.cuda.synchronize()\na = timing.adjacency(x, x)\n",
    })
    run = _run(tmp_path)["run.py"]
    assert run.hold is None and run.avoid_mps is not None
    assert run.migrated is not None and ".cuda()" not in run.migrated and "tp.avoid_mps(" in run.migrated
    assert "if tp.is_available():" in run.migrated and "torch.ones(2).to(tp.device())" in run.migrated


def test_a_module_held_for_a_blocker_that_may_not_reach_the_device_keeps_its_moves(tmp_path: Path) -> None:
    """`x.double()` may run on the CPU: no `tp.avoid_mps` would keep a Mac's program off MPS, so the module stays
    held and its unconditional moves stay as written, reported; the path then still stops off CUDA at the kept
    `.cuda()`, so the synchronize after it stays too (no half port), said once (R19)."""
    _tree(tmp_path, {
        "timing.py": "import torch\n\n\ndef dtw(x):\n    return x.double()\n",
        "run.py": "import timing\nimport torch\n\nif torch.cuda.is_available():\n    model = model.cuda()\n"
                  "x = torch.ones(2).cuda()\ntorch.cuda.synchronize()\nd = timing.dtw(x)\n",
    })
    run = _run(tmp_path)["run.py"]
    assert run.hold is not None
    assert run.migrated == run.original and not run.rewrites
    assert any(d.code == "TP110" and "TP001 would apply" in d.message for d in run.diagnostics)
    assert [d.line for d in run.diagnostics if "R19" in d.message] == [7]


def test_a_held_module_keeps_its_guarded_moves(tmp_path: Path) -> None:
    """On a Mac the held guard keeps the model on the CPU, as before: what it guards stays as written, reported."""
    _tree(tmp_path, {
        "timing.py": "import torch\n\n\ndef dtw(x):\n    return x.double()\n",
        "run.py": "import timing\nimport torch\n\nif torch.cuda.is_available():\n    model = model.cuda()\n"
                  "d = timing.dtw(model)\n",
    })
    run = _run(tmp_path)["run.py"]
    assert run.hold is not None
    assert run.migrated == run.original and not run.rewrites
    assert any(d.code == "TP110" and "R13" in d.message for d in run.diagnostics)


def test_a_held_module_keeps_its_cuda_autocast_and_scaler(tmp_path: Path) -> None:
    """CanglongPhysics' training scripts: their device choice is held CUDA-or-CPU, so their data is on CUDA or the
    CPU, where CUDA's autocast and GradScaler already run as moved ones would (on, off): a scaler made for MPS
    would scale a CPU run on a Mac."""
    _tree(tmp_path, {
        "timing.py": "import torch\n\n\ndef dtw(x):\n    return x.double()\n",
        "run.py": "import timing\nimport torch\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
                  "model = torch.nn.Linear(2, 2).to(device)\nscaler = torch.amp.GradScaler('cuda')\n"
                  "with torch.autocast('cuda'):\n    d = timing.dtw(model(torch.ones(2, device=device)))\n",
    })
    run = _run(tmp_path)["run.py"]
    assert run.hold is not None
    assert run.migrated == run.original and not run.rewrites
    assert [d.line for d in run.diagnostics if "TP023 would apply" in d.message and "R13" in d.message] == [6, 7]


@pytest.mark.parametrize(("text", "expected"), [
    ("x = torch.zeros(2, dtype=torch.float64, device=dev)\n", (1, "float64")),
    ("x = torch.zeros(2, dtype=torch.float64).cuda()\n", (1, "float64")),
    ("a = np.zeros(3, dtype=np.float64)\nt = th.from_numpy(a).to(device=d)\n",
     (1, "float64 numpy arrays made into tensors")),
    ("s = torch.sparse_coo_tensor(i, v)\n", (1, "sparse tensors")),
    # a conversion whose tensor may be on the CPU, or float64 in a function that runs collectives: not certain
    ("x = y.double()\n", None),
    ("x = y.to(torch.float64)\n", None),
    ("def sync(d):\n    t = torch.tensor([1.0], dtype=torch.float64, device=d)\n    dist.all_reduce(t)\n", None),
    # float64 numpy arrays that stay numpy, beside a tensor of its own dtype (diffusers' convert_amused.py)
    ("d = np.abs(a.astype(np.float64) - b.astype(np.float64))\n"
     "c = torch.tensor([[512, 0]], dtype=torch.float32, device=dev)\n", None),
    # a module's float64 buffer or parameter goes wherever the module goes (pytorch-ddpm's diffusion.py)
    ("class D(nn.Module):\n    def __init__(self, T):\n        super().__init__()\n"
     "        self.register_buffer('betas', torch.linspace(0.1, 0.2, T).double())\n", (4, "float64")),
    ("class D(nn.Module):\n    def __init__(self, w):\n        super().__init__()\n"
     "        self.w = nn.Parameter(torch.zeros(3, dtype=torch.float64))\n", (4, "float64")),
    ("class D(nn.Module):\n    def __init__(self, T):\n        super().__init__()\n"
     "        self.register_buffer('betas', torch.linspace(0.1, 0.2, T).double().float())\n", None),
])
def test_a_certain_blocker_surely_reaches_the_device(text: str, expected: tuple[int, str] | None) -> None:
    """What TP019 acts on (`tp.avoid_mps`): a cautious blocker keeps a program's verdict, not its device."""
    assert blocker(text, certain=True) == expected


def test_float64_in_a_function_that_runs_collectives_is_no_blocker() -> None:
    """MetricLogger's `synchronize_between_processes` (mae, deit, detr, dino...): it runs in a process group, where a
    Mac's pick is the CPU already."""
    text = ("def sync(self):\n    if not is_dist_avail_and_initialized():\n        return\n"
            "    t = torch.tensor([self.count, self.total], dtype=torch.float64, device='cuda')\n"
            "    dist.barrier()\n    dist.all_reduce(t)\n")
    assert blocker(text) is None


def test_a_package_folder_named_with_dashes_is_imported_with_underscores(tmp_path: Path) -> None:
    """facenet-pytorch's root is the package `facenet_pytorch` (setup.py's `package_dir={'facenet_pytorch': '.'}`):
    its tests' `from facenet_pytorch import MTCNN` reach the repository's own modules."""
    reached = _reached(tmp_path / "facenet-pytorch", {
        "__init__.py": "from .models.mtcnn import MTCNN\n",
        "models/__init__.py": "",
        "models/mtcnn.py": "class MTCNN:\n    pass\n",
        "tests/perf_test.py": "from facenet_pytorch import MTCNN\n",
    }, "tests/perf_test.py")
    assert "models/mtcnn.py" in reached


def _reached(root: Path, files: dict[str, str], start: str) -> set[str]:
    """The files of the project ``files`` written under ``root`` that the module ``start`` reaches."""
    from torchport.pipeline.project import Project
    from torchport.results import FileResult

    _tree(root, files)
    paths = sorted(root.rglob("*.py"))
    results = [FileResult(path=f, display=f.relative_to(root).as_posix(), original=f.read_text()) for f in paths]
    entry = next(i for i, r in enumerate(results) if r.display == start)
    return {results[i].display for i in Project(results).reach(entry)}


def test_a_name_without_a_package_is_the_importers_sibling(tmp_path: Path) -> None:
    """pytorch/examples: every loose `train.py` is a module `train`; `from train import train` in mnist_hogwild is
    its own folder's, as Python finds it from the script's folder (a float64 in another example's train.py is not
    on its way)."""
    assert _reached(tmp_path, {
        "hogwild/main.py": "from train import train\n",
        "hogwild/train.py": "def train():\n    pass\n",
        "sequence/train.py": "import torch\nx = torch.zeros(2, dtype=torch.float64).cuda()\n",
    }, "hogwild/main.py") == {"hogwild/main.py", "hogwild/train.py"}


def test_a_namespace_folder_beside_the_script_comes_before_a_module_above(tmp_path: Path) -> None:
    """EasyOCR's CRAFT trainer runs from trainer/craft/, whose utils/ has no ``__init__.py``: ``from utils import
    craft_utils`` there names that folder's module, not trainer/utils.py (whose device choice is not its own)."""
    assert _reached(tmp_path, {
        "trainer/craft/train.py": "from utils.util import save\n",
        "trainer/craft/utils/util.py": "from utils import craft_utils\n\n\ndef save():\n    pass\n",
        "trainer/craft/utils/craft_utils.py": "def boxes():\n    pass\n",
        "trainer/utils.py": "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
        "trainer/train.py": "import utils\n",
    }, "trainer/craft/train.py") == {"trainer/craft/train.py", "trainer/craft/utils/util.py",
                                     "trainer/craft/utils/craft_utils.py"}


def test_cuda_autocast_stays_where_no_program_places_data(tmp_path: Path) -> None:
    """On every machine that autocast wraps CPU tensors (a no-op); a CPU autocast would change the numbers there."""
    script = ("import torch\n\nmodel = torch.nn.Linear(4, 4)\nwith torch.cuda.amp.autocast():\n"
              "    y = model(torch.randn(2, 4))\n")
    _tree(tmp_path, {"cpu_only.py": script,
                     "placed.py": script.replace("torch.randn(2, 4)", "torch.randn(2, 4).cuda()")})
    results = _run(tmp_path)
    assert results["cpu_only.py"].migrated == script and not results["cpu_only.py"].rewrites
    assert any("no program that reaches it puts data on a device" in d.message
               for d in results["cpu_only.py"].diagnostics)
    assert 'torch.amp.autocast(tp.device_type(), enabled=tp.device_type() != "cpu")' in results["placed.py"].migrated


def test_a_call_of_a_function_another_module_leaves_cuda_only_stops_the_path(tmp_path: Path) -> None:
    """`t2i` keeps `torch.cuda.LongTensor`, which no rule ports: a program calling it still fails off CUDA, so
    the moves after the call are left as written; a module that does not call it is ported."""
    _tree(tmp_path, {
        "ranking.py": "import torch\n\n\ndef t2i(scores):\n    return torch.cuda.LongTensor(scores)\n",
        "train.py": "import torch\nfrom ranking import t2i\n\n\ndef evaluate(model, x):\n    order = t2i(x)\n"
                    "    return model(x.cuda()), order\n",
        "other.py": "import torch\n\n\ndef evaluate(model, x):\n    return model(x.cuda())\n",
    })
    results = _run(tmp_path)
    assert results["train.py"].migrated == (tmp_path / "train.py").read_text()
    assert "x.to(tp.device())" in results["other.py"].migrated


@pytest.mark.parametrize("script, gets_it", [
    ("import torch\nfrom layers import build\nmodel = build().cuda()\nprint(model)\n", True),  # no __main__
    ("from inference import run\n\nif __name__ == '__main__':\n    run()\n", True),  # the callee places the data
    ("from inference import run\n\nprint(run)\n", False),  # calls nothing of it: places no data
])
def test_scripts_that_reach_what_mps_lacks_keep_the_cpu_on_a_mac(tmp_path: Path, script: str, gets_it: bool) -> None:
    _tree(tmp_path, {
        "layers.py": "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2).register_module(adjacency)\n\n\n"
                     "def adjacency(i, v):\n    return torch.sparse_coo_tensor(i, v, (2, 2))\n",
        "inference.py": "import torch\nfrom layers import build\n\n\ndef run():\n    return build().cuda()\n",
        "main.py": script,
    })
    migrated = _run(tmp_path)["main.py"].migrated or ""
    assert ('tp.avoid_mps("sparse tensors, layers.py:9")' in migrated) is gets_it, migrated


def test_a_legacy_tensor_type_chosen_beside_the_device_keeps_the_module_whole(tmp_path: Path) -> None:
    """PyTorch-GAN: `device` and `Tensor` are both chosen CUDA-or-CPU. Porting the device line alone would put
    the model on MPS and the tensors made from `Tensor` on the CPU, so the module stays as it is (R13)."""
    source = ("import numpy as np\nimport torch\nimport torch.nn as nn\n\n"
              'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
              "cuda = torch.cuda.is_available()\ngenerator = nn.Linear(4, 4).to(device)\n"
              "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
              "print(generator(Tensor(np.ones((2, 4)))).shape)\n")
    _tree(tmp_path, {"esrgan.py": source})
    result = _run(tmp_path)["esrgan.py"]
    assert result.migrated == source
    assert any("R13 held-choice" in d.message for d in result.diagnostics)


def test_a_model_a_library_places_under_a_cuda_guard_moves_with_the_inputs_choice(tmp_path: Path) -> None:
    """basaran: the model is placed by transformers' `device_map` only under a CUDA guard, while the inputs go to a
    `"cuda" if available else "cpu"` device. Ported alone, the inputs would go to MPS and meet a CPU model; the
    guard is a device choice too, so both move."""
    source = ("import torch\n\n\ndef load_model(name):\n    kwargs = {}\n    if torch.cuda.is_available():\n"
              "        kwargs['device_map'] = 'auto'\n    return AutoModel.from_pretrained(name, **kwargs)\n\n\n"
              "class StreamModel:\n    def __init__(self, model):\n        self.model = model\n"
              "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n"
              "    def __call__(self, ids):\n        return self.model(ids.to(self.device))\n")
    _tree(tmp_path, {"model.py": source})
    migrated = _run(tmp_path)["model.py"].migrated or ""
    assert "    if tp.is_available():\n        kwargs['device_map'] = 'auto'" in migrated
    assert "self.device = tp.available_device_str()" in migrated


@pytest.mark.parametrize("load, gets_it", [
    ("samples = torch.load(path)\n    print(model(samples))\n", True),  # data on MPS/XPU beside a CPU model
    ("model.load_state_dict(torch.load(path)['model'])\n", False),  # copied into the CPU model: nothing moves
])
def test_a_checkpoint_loaded_beside_a_kept_choice(tmp_path: Path, load: str, gets_it: bool) -> None:
    script = ("import torch\n\n\ndef usable(gpu):\n    return gpu >= 0\n\n\n"  # a choice kept CUDA-or-CPU: a
              # call of the program's own also decides
              "device = torch.device('cuda:0' if torch.cuda.is_available() and usable(0) else 'cpu')\n"
              "model = torch.nn.Linear(2, 2).to(device)\n\n\ndef run(path):\n    " + load + "\n\n"
              "if __name__ == '__main__':\n    run('ckpt.pt')\n")
    _tree(tmp_path, {"latent_ode.py": script})
    migrated = _run(tmp_path)["latent_ode.py"].migrated or ""
    assert "map_location=tp.map_location()" in migrated  # on the CPU, a checkpoint saved on CUDA loads
    assert ("tp.keep_cuda_or_cpu(" in migrated) is gets_it, migrated  # on MPS and on XPU


def test_a_parameter_every_call_fills_with_a_projects_cuda_flag_keeps_its_module_as_written(tmp_path: Path) -> None:
    """SGC: `args.cuda = not args.no_cuda and torch.cuda.is_available()` in args.py, passed by citation.py to
    utils.load(..., cuda) and set_seed(..., cuda): off CUDA `if cuda:` there never runs, as in the caller, so a
    rewrite there would change nothing; a function some call gives another value is ported."""
    _tree(tmp_path, {
        "args.py": "import argparse\nimport torch\n\n\ndef get_args():\n    parser = argparse.ArgumentParser()\n"
                   "    parser.add_argument('--no-cuda', action='store_true')\n    args = parser.parse_args()\n"
                   "    args.cuda = not args.no_cuda and torch.cuda.is_available()\n    return args\n",
        "utils.py": "import torch\n\n\ndef load(n, cuda=True):\n    x = torch.ones(n)\n    if cuda:\n"
                    "        x = x.cuda()\n    return x\n\n\ndef seed(s, cuda):\n    torch.manual_seed(s)\n"
                    "    if cuda:\n        torch.cuda.manual_seed(s)\n",
        "other.py": "import torch\n\n\ndef place(x, cuda):\n    if cuda:\n        x = x.cuda()\n    return x\n",
        "main.py": "from args import get_args\nfrom utils import *\nimport other\n\nargs = get_args()\n"
                   "seed(1, args.cuda)\nx = load(2, cuda=args.cuda)\ny = other.place(x, True)\n",
    })
    found = _run(tmp_path)
    assert found["utils.py"].migrated == found["utils.py"].original
    assert "x.to(tp.device())" in found["other.py"].migrated  # one call passes True


def test_an_object_whose_class_moves_itself_to_cuda_alone_keeps_its_guard(tmp_path: Path) -> None:
    """manydepth: `ResnetEncoderMatching` has its own `cuda()` and a `to()` that raises for anything but 'cpu' and
    'cuda'; its `.cuda()` is its own, `.to(tp.device())` would raise on a Mac. The guard around it stays CUDA's,
    and the module's other choices with it (R13): on a Mac it all runs on the CPU, as before."""
    _tree(tmp_path, {
        "nets/__init__.py": "from .enc import Encoder\n",
        "nets/enc.py": "import torch\n\n\nclass Encoder(torch.nn.Module):\n    def cuda(self):\n"
                       "        return super().cuda()\n\n    def to(self, device):\n"
                       "        if str(device) == 'cpu':\n            return self.cpu()\n"
                       "        elif str(device) == 'cuda':\n            return self.cuda()\n"
                       "        raise NotImplementedError\n",
        "run.py": "import torch\nimport nets\n\nencoder = nets.Encoder()\nimage = torch.ones(2)\n"
                  "if torch.cuda.is_available():\n    image = image.cuda()\nif torch.cuda.is_available():\n"
                  "    encoder.cuda()\nprint(encoder(image))\n",
    })
    run = _run(tmp_path)["run.py"]
    assert run.migrated == run.original
    assert any(d.code == "TP106" and "`nets.Encoder`" in d.message for d in run.diagnostics)
    assert any("R13" in d.message for d in run.diagnostics)



def test_a_subclass_in_another_module_of_a_class_that_moves_itself_keeps_its_cuda_call(tmp_path: Path) -> None:
    """video-representation: `Framework` (a plain class) moves its model in its own `cuda()` and has no `to`;
    `ConvLSTMFramework(SeqClsMixin, Framework)` in another module, and save_feature.py's own `ResnetFramework`,
    inherit it. `framework.to(tp.device())` raised AttributeError on CUDA too: each `.cuda()` stays, reported."""
    _tree(tmp_path, {
        "lib/__init__.py": "",
        "lib/framework.py": "import torch\n\n\nclass Framework:\n    def __init__(self):\n"
                            "        self.model = torch.nn.Linear(2, 2)\n\n    def cuda(self):\n"
                            "        self.model = torch.nn.DataParallel(self.model).cuda()\n",
        "lib/seq.py": "from .framework import Framework\n\n\nclass Mixin:\n    pass\n\n\n"
                      "class SeqFramework(Mixin, Framework):\n    pass\n",
        "train.py": "import sys\n\nimport torch\n\nfrom lib.seq import SeqFramework\n\n"
                    "if sys.argv[1:]:\n    framework = SeqFramework()\nelse:\n    framework = None\n"
                    "framework.cuda()\nprint(framework.model(torch.ones(1, 2).cuda()))\n",
        "save_feature.py": "import torch\n\nfrom lib.framework import Framework\n\n\n"
                           "class ResnetFramework(Framework):\n    batch_axis = 0\n\n\n"
                           "framework = ResnetFramework()\nframework.cuda()\n",
        # a subclass of a subclass, its base named through its module
        "leaf.py": "import lib.seq as S\n\n\nclass Mid(S.SeqFramework):\n    pass\n\n\n"
                   "class Leaf(Mid):\n    pass\n\n\nleaf = Leaf()\nleaf.cuda()\n",
    })
    found = _run(tmp_path)
    train = found["train.py"].migrated or ""
    assert "\nframework.cuda()\n" in train and "torch.ones(1, 2).to(tp.device())" in train
    assert any(d.code == "TP106" and "`SeqFramework`" in d.message for d in found["train.py"].diagnostics)
    assert (found["save_feature.py"].migrated or found["save_feature.py"].original) == found[
        "save_feature.py"].original
    assert any(d.code == "TP106" and "`ResnetFramework`" in d.message for d in found["save_feature.py"].diagnostics)
    assert (found["leaf.py"].migrated or found["leaf.py"].original) == found["leaf.py"].original


def test_an_object_whose_own_to_lacks_a_parameter_of_its_cuda_keeps_its_cuda_call(tmp_path: Path) -> None:
    """kaolin's PBRMaterial: `cuda(device, non_blocking, memory_format)` beside `to(device)`. The test's
    `mat.cuda(device=device, non_blocking=non_blocking)` made `.to(..., non_blocking=...)` raised a TypeError on
    CUDA too: the call stays, reported."""
    _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/materials.py": "class Material:\n    def __init__(self, x):\n        self.x = x\n\n"
                            "    def to(self, device):\n        return Material(self.x.to(device))\n\n"
                            "    def cuda(self, device=None, non_blocking=False):\n"
                            "        return Material(self.x.cuda(device, non_blocking=non_blocking))\n",
        "tests/test_materials.py": "import torch\nfrom pkg.materials import Material\n\n\n"
                                   "def test_cuda():\n    mat = Material(torch.ones(2))\n"
                                   "    moved = mat.cuda(non_blocking=True)\n"
                                   "    assert float(moved.x.sum()) == 2.0\n",
    })
    test = _run(tmp_path)["tests/test_materials.py"]
    assert "mat.cuda(non_blocking=True)" in (test.migrated or test.original)
    assert any(d.code == "TP106" and "`Material`" in d.message for d in test.diagnostics)


def test_a_device_type_given_to_a_function_of_the_module_that_dispatches_on_it_stays(tmp_path: Path) -> None:
    """torch-interpol: `custom_fwd` is torch.amp's, or, where torch lacks it, a fallback of its own whose branches
    know 'cuda' and 'cpu' alone. `@custom_fwd(device_type='cuda')` made the runtime's type took none of them on a
    Mac with such a torch: `import interpol` failed there. The string stays, reported."""
    shutil.copytree(Path(__file__).parent / "fixtures" / "projects" / "own_device_type_dispatch", tmp_path,
                    dirs_exist_ok=True)
    module = _run(tmp_path)["interpol/autograd.py"]
    assert module.migrated is None or module.migrated == module.original
    assert any(d.code == "TP102" and d.line == 45 for d in module.diagnostics), module.diagnostics


@pytest.mark.parametrize("packaged", [True, False])
def test_a_library_with_a_module_class_of_its_own_cuda_keeps_the_cuda_of_models_it_is_given(
        tmp_path: Path, packaged: bool) -> None:
    """selene: `MultiModelWrapper(nn.Module)` moves its sub-models (a plain list) in its own `cuda()`;
    `AnalyzeSequences(model)` takes whatever model a user passes, and `self.model.cuda()` made `.to()` left the
    wrapper's sub-models on the CPU, on CUDA too. In an installable library the call stays; in a set of scripts,
    where every caller is seen, it is ported."""
    _tree(tmp_path, {
        **({"pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n"} if packaged else {}),
        "lib/__init__.py": "",
        "lib/wrapper.py": "import torch.nn as nn\n\n\nclass MultiModelWrapper(nn.Module):\n"
                          "    def __init__(self, sub_models):\n        super().__init__()\n"
                          "        self.sub_models = sub_models\n\n    def cuda(self):\n"
                          "        for m in self.sub_models:\n            m.cuda()\n        return self\n",
        "lib/predict.py": "import torch\n\n\nclass AnalyzeSequences:\n    def __init__(self, model):\n"
                          "        self.model = model\n        self.model.eval()\n"
                          "        if torch.cuda.is_available():\n            self.model.cuda()\n",
    })
    predict = _run(tmp_path)["lib/predict.py"]
    assert ("self.model.cuda()" in (predict.migrated or predict.original or "")) is packaged


def test_an_object_a_fluent_chain_makes_keeps_its_own_cuda_call(tmp_path: Path) -> None:
    """inferno: `trainer = Trainer(model=net).build_optimizer('Adam')` (each method returns the trainer), then
    `trainer.cuda().fit()`. Trainer's `to()` takes 'cuda' alone and returns nothing for a torch.device: a
    `.to(tp.device())` there broke the test on CUDA too. The call stays, as for `trainer = Trainer(...)`."""
    _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/trainer.py": "class Trainer:\n    def __init__(self, model=None):\n        self.model = model\n\n"
                          "    def build_optimizer(self, name):\n        return self\n\n"
                          "    def cuda(self):\n        self.model.cuda()\n        return self\n\n"
                          "    def to(self, device):\n        if device == 'cuda':\n            return self.cuda()\n"
                          "        raise NotImplementedError(device)\n",
        "tests/test_train.py": "import torch\n\n\ndef test_fit():\n    from pkg.trainer import Trainer\n"
                               "    trainer = Trainer(model=torch.nn.Linear(2, 2))\\\n"
                               "        .build_optimizer('Adam')\n"
                               "    if torch.cuda.is_available():\n        trainer.cuda()\n",
    })
    test = _run(tmp_path)["tests/test_train.py"]
    assert test.migrated == test.original
    assert any(d.code == "TP106" and "`Trainer`" in d.message for d in test.diagnostics), test.diagnostics


def test_an_object_of_a_subclass_of_a_class_with_its_own_cuda_keeps_its_cuda_call(tmp_path: Path) -> None:
    """pytorch-seq2seq: `Perplexity(NLLLoss)` and `NLLLoss(Loss)` inherit `Loss.cuda()`, which moves its criterion;
    none of them has a `to()`, so `loss.to(tp.device())` would raise AttributeError, on CUDA too. The call stays,
    and `Loss.cuda()`'s own body is ported."""
    _tree(tmp_path, {
        "s2s/__init__.py": "",
        "s2s/loss/__init__.py": "from .loss import Perplexity\n",
        "s2s/loss/loss.py": "import torch\n\n\nclass Loss(object):\n    def __init__(self):\n"
                            "        self.criterion = torch.nn.NLLLoss()\n\n    def cuda(self):\n"
                            "        self.criterion.cuda()\n\n\nclass NLLLoss(Loss):\n    pass\n\n\n"
                            "class Perplexity(NLLLoss):\n    pass\n",
        "sample.py": "import torch\nfrom s2s.loss import Perplexity\n\nloss = Perplexity()\nx = torch.ones(2).cuda()\n"
                     "if torch.cuda.is_available():\n    loss.cuda()\n",
    })
    found = _run(tmp_path)
    sample = found["sample.py"]
    assert "x = torch.ones(2).to(tp.device())\n" in sample.migrated and "    loss.cuda()\n" in sample.migrated
    assert any(d.code == "TP106" and "`Perplexity`" in d.message for d in sample.diagnostics)
    assert "self.criterion.to(tp.device())" in found["s2s/loss/loss.py"].migrated


@pytest.mark.parametrize("dispatches", [True, False])
def test_device_values_a_project_function_dispatches_on_are_labels(tmp_path: Path, dispatches: bool) -> None:
    """torch-harmonics' benchmark registry: entries keep `device="cuda"`, and the runner's `_resolve_device(
    entry.device)` compares it with "cpu" and "cuda" to skip what is not there. The strings name its branches: a
    port would run CUDA's entries on the CPU. Where nothing compares them, they are device settings, ported."""
    resolve = ('    if spec == "cpu":\n        return torch.device("cpu")\n    if spec == "cuda":\n'
               '        return torch.device("cuda") if torch.cuda.is_available() else None\n    return None\n'
               if dispatches else '    return torch.device(spec)\n')
    _tree(tmp_path, {
        "bench.py": "import torch\n\n\nclass Entry:\n    def __init__(self, name, device):\n"
                    "        self.name, self.device = name, device\n\n\n"
                    f"def _resolve_device(spec):\n{resolve}\n\ndef run(entry):\n"
                    "    device = _resolve_device(entry.device)\n    return torch.ones(2, device=device)\n",
        "configs.py": 'from bench import Entry\n\nCONFIGS = [dict(name="a_cuda", device="cuda"), '
                      'dict(name="a_cpu", device="cpu")]\nENTRIES = [Entry(name=c["name"], device=c["device"]) '
                      'for c in CONFIGS]\nEXTRA = Entry(name="b_cuda", device="cuda")\n',
    })
    configs = _run(tmp_path)["configs.py"]
    assert (configs.migrated == configs.original) is dispatches
    assert sum("R09" in d.message and "`device` values" in d.message for d in configs.diagnostics) == (
        2 if dispatches else 0)


@pytest.mark.parametrize("moves", [True, False])
def test_a_device_name_a_module_compares_with_cuda_to_move_data_is_a_label(tmp_path: Path, moves: bool) -> None:
    """RWKV-LM's chat.py sets `args.RUN_DEVICE = "cuda"`; model_run.py moves its weights only `if
    args.RUN_DEVICE == 'cuda'`. Ported to the runtime's device type, the weights would stay on the CPU on a Mac
    while the state, made on `args.RUN_DEVICE`, went to MPS. Where the comparison moves nothing, it is ported."""
    guarded = "        w = w.cuda()\n" if moves else "        print('on a GPU')\n"
    _tree(tmp_path, {
        "src/__init__.py": "",
        "src/model_run.py": "import torch\n\n\ndef load(args, w):\n    if args.RUN_DEVICE == 'cuda':\n"
                            f"{guarded}    state = torch.zeros(2, device=args.RUN_DEVICE)\n    return w, state\n",
        "chat.py": "import types\n\nimport torch\n\nfrom src.model_run import load\n\n"
                   'args = types.SimpleNamespace()\nargs.RUN_DEVICE = "cuda"\n'
                   "print(load(args, torch.ones(2)))\n",
    })
    chat = _run(tmp_path)["chat.py"]
    assert (chat.migrated is None or chat.migrated == chat.original) is moves
    assert any("R09" in d.message and "`RUN_DEVICE` values" in d.message for d in chat.diagnostics) is moves


@pytest.mark.parametrize("switch", ['    config["use_cuda"] = False\n',
                                    '    config["use_cuda"] = "cpu" in str(config)\n'])
def test_a_flag_switched_off_without_cuda_gates_what_it_guards_in_other_modules(tmp_path: Path, switch: str) -> None:
    """pymarl: `if config["use_cuda"] and not th.cuda.is_available(): config["use_cuda"] = False`, then another
    module reads `args.use_cuda`. Off CUDA the flag is false: a port of what it guards changes nothing anywhere.
    An `if` that sets it to anything but False is no such switch."""
    _tree(tmp_path, {
        "main.py": "import types\n\nimport torch\n\nfrom run import run\n\n\ndef check(config):\n"
                   '    if config["use_cuda"] and not torch.cuda.is_available():\n'
                   f"    {switch}        print('CUDA switched off')\n    return config\n\n\n"
                   'if __name__ == "__main__":\n    run(types.SimpleNamespace(**check({"use_cuda": True})))\n',
        "run.py": "import torch\n\n\ndef run(args):\n    net = torch.nn.Linear(2, 2)\n    if args.use_cuda:\n"
                  "        net.cuda()\n    return net\n",
    })
    ran = _run(tmp_path)["run.py"]
    assert (ran.migrated is None or ran.migrated == ran.original) is switch.endswith("False\n")


@pytest.mark.parametrize("source, scripted", [
    ("import torch\n\n\nclass Net(torch.jit.ScriptModule):\n    @torch.jit.script_method\n"
     "    def forward(self, x):\n        return x.cuda()\n", True),
    ("import torch\n\n\ndef pin(x):\n    return x.cuda()\n\n\nfused = torch.jit.script(pin)\n", True),
    ("from torch import jit\n\n\n@jit.script\nclass Storage(object):\n    def __init__(self, x: jit.Tensor):\n"
     "        self.x = x\n\n    def cuda(self):\n        return Storage(self.x.cuda())\n", True),
    ("import torch\n\n\ndef pin(x):\n    return x.cuda()\n\n\ntraced = torch.jit.trace(pin, torch.ones(2))\n", False),
])
def test_code_torchscript_compiles_is_left_as_written(tmp_path: Path, source: str, scripted: bool) -> None:
    """pytorch_sparse's `@torch.jit.script class SparseStorage` has its own `cuda()`: `tp.device()` there fails to
    compile at import, on CUDA too. A traced function runs as Python while tracing: it is ported."""
    _tree(tmp_path, {"ops.py": source})
    ops = _run(tmp_path)["ops.py"]
    assert (ops.migrated is None or ops.migrated == ops.original) is scripted
    assert any("[R23 torchscript]" in d.message for d in ops.diagnostics) is scripted


def test_an_object_a_class_method_makes_keeps_its_own_cuda_call(tmp_path: Path) -> None:
    """DrQA: `self.reader = reader.DocReader.load(path)`, a static method that makes a `DocReader`, whose own `cuda()`
    moves its network; it has no `to()`, so `self.reader.to(...)` would raise AttributeError on CUDA."""
    _tree(tmp_path, {
        "drqa/__init__.py": "",
        "drqa/reader/__init__.py": "from .model import DocReader\n",
        "drqa/reader/model.py": "import torch\n\n\nclass DocReader(object):\n    def __init__(self):\n"
                                "        self.network = torch.nn.Linear(2, 2)\n\n    @staticmethod\n"
                                "    def load(path):\n        return DocReader()\n\n    def cuda(self):\n"
                                "        self.network = self.network.cuda()\n",
        "drqa/pipeline.py": "import torch\nfrom drqa import reader\n\n\nclass DrQA:\n"
                            "    def __init__(self, cuda=True):\n"
                            "        self.reader = reader.DocReader.load('m.mdl')\n        if cuda:\n"
                            "            self.reader.cuda()\n        self.x = torch.zeros(2).cuda()\n",
    })
    pipeline = _run(tmp_path)["drqa/pipeline.py"]
    assert "            self.reader.cuda()\n" in pipeline.migrated
    assert any(d.code == "TP106" and "`reader.DocReader`" in d.message for d in pipeline.diagnostics)


def test_a_model_keeps_its_files_in_the_order_it_was_built_with(tmp_path: Path) -> None:
    """`migrate` sorts its result list in place before the summary, which reuses the run's model of the same files:
    the model reads its own copy, so a module's index still names the same file (minGPT's summary once showed
    `bpe.py` reaching the model's modules)."""
    from torchport.pipeline.project import Project
    from torchport.results import FileResult

    _tree(tmp_path, {"b.py": "import a\n", "a.py": "x = 1\n"})
    results = [FileResult(path=tmp_path / name, display=name, original=(tmp_path / name).read_text())
               for name in ("b.py", "a.py")]
    project = Project(results)
    results.sort(key=lambda r: r.display)
    assert [r.display for r in project.results] == ["b.py", "a.py"]
    assert project.reach(0) == {0, 1} and project.reach(1) == {1}


def test_a_constructor_default_every_call_of_the_class_passes_is_left(tmp_path: Path) -> None:
    """CodeFormer's `YoloDetector(config_name, device='cuda')`: every construction passes a device, so the default
    never runs and its port changes nothing; a class some code makes without it, or makes through `cls(...)`,
    keeps its port."""
    _tree(tmp_path, {
        "detector.py": "import torch\n\n\nclass Detector:\n    def __init__(self, name, device='cuda'):\n"
                       "        self.device = device\n\n\nclass Loose:\n    def __init__(self, device='cuda'):\n"
                       "        self.device = device\n\n\nclass Made:\n    def __init__(self, device='cuda'):\n"
                       "        self.device = device\n\n    @classmethod\n    def build(cls):\n        return cls()\n",
        "run.py": "import torch\nfrom detector import Detector, Loose, Made\n\ndevice = torch.device('cpu')\n"
                  "a = Detector('yolo', device=device)\nb = Detector('n', device)\nc = Loose()\n"
                  "d = Made(device=device)\n",
    })
    text = _run(tmp_path)["detector.py"].migrated or ""
    assert "    def __init__(self, name, device='cuda'):\n" in text
    assert "class Loose:\n    def __init__(self, device=tp.device_str()):\n" in text
    assert "class Made:\n    def __init__(self, device=tp.device_str()):\n" in text


@pytest.mark.parametrize(("line", "folder"), [
    ("import os, sys\nhere = os.path.dirname(__file__)\nsys.path.append(os.path.join(here, 'lib'))\n", ("lib",)),
    # slayerPytorch's tests: a folder read from the file, joined with `+`
    ("import os, sys\nCURRENT_TEST_DIR = os.path.dirname(os.path.realpath(__file__))\n"
     "sys.path.append(CURRENT_TEST_DIR + '/../src')\n", ("..", "src")),
    ("import os, sys\nsys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n", ("..",)),
    ("import sys\nfrom pathlib import Path\nsys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'src'))\n",
     ("..", "src")),
    ("import sys\nsys.path.append('../..')\n", ("..", "..")),  # a script runs from its own folder
    ("import os, sys\nroot = os.path.abspath(os.path.join(os.getcwd(), '..'))\nsys.path.insert(0, root)\n", ("..",)),
    ("import sys\nsys.path.append('/opt/lib')\n", None),  # an absolute folder is no folder of the project
    ("import os, sys\nCURRENT_TEST_DIR = os.getcwd()\nsys.path.append(CURRENT_TEST_DIR + '/../src')\n", ("..", "src")),
    # a name bound to the file itself, not its folder
    ("import os, sys\nFILE = os.path.abspath(__file__)\nsys.path.append(os.path.join(os.path.dirname(FILE), '..', "
     "'src'))\n", ("..", "src")),
])
def test_the_folders_a_module_puts_on_sys_path(line: str, folder: tuple[str, ...] | None) -> None:
    from torchport.pipeline.project import _joined_here

    assert _joined_here(line) == ([folder] if folder is not None else [])


_TRAIN = ("import numpy as np\nimport torch\n\n\ndef build_model():\n    return torch.nn.Linear(2, 2)\n\n\n"
          "def main():\n    weights = torch.tensor(np.linspace(0, 1, 2)).cuda()\n"
          "    print(build_model(), weights)\n\n\n"
          "if __name__ == '__main__':\n    main()\n")


@pytest.mark.parametrize(("evaluate", "runs_train_main"), [
    # m3m's evaluation script: its own `main` runs, not the one of the training script it imports a helper from
    ("from train import build_model\n\n\ndef main():\n    print(build_model())\n\n\n"
     "if __name__ == '__main__':\n    main()\n", False),
    ("import train as t\nfrom train import build_model as build\n\n\ndef main():\n    print(build(), t.build_model)\n"
     "\n\nmain()\n", False),
    # an attribute may mean the training script's `main`
    ("import train\n\n\ndef main():\n    train.main()\n\n\nmain()\n", True),
    # the training script's `main` under another name, beside an own `main`
    ("from train import build_model\nfrom train import main as train_main\n\n\ndef main():\n"
     "    print(build_model())\n    train_main()\n\n\nmain()\n", True),
])
def test_a_program_runs_the_definitions_its_names_resolve_to(evaluate: str, runs_train_main: bool) -> None:
    from torchport.pipeline.project import Project, program_defs, reached_lack
    from torchport.results import FileResult

    results = [FileResult(path=Path(name), display=name, original=text)
               for name, text in (("train.py", _TRAIN), ("evaluate.py", evaluate))]
    project = Project(results)
    reach = project.reach(1)
    assert ((0, "main") in program_defs(project, reach)) is runs_train_main
    assert (0, "build_model") in program_defs(project, reach)
    lack = reached_lack(project, 0, reach)  # the float64 weights of the training script's `main`
    assert (lack is not None and lack[0] == 10) is runs_train_main


def test_an_entry_point_a_module_of_its_program_imports_back_still_runs_its_main_block() -> None:
    """A helper's `from train import main` makes train.py an imported module of its own program; as the program
    its `__main__` block still runs `main`, and the float64 weights there still count."""
    from torchport.pipeline.project import Project, program_defs, reached_lack
    from torchport.results import FileResult

    helper = "def log(x):\n    from train import main\n    return main, x\n"
    train = _TRAIN.replace("import torch\n", "import torch\n\nimport helper\n", 1)
    results = [FileResult(path=Path(name), display=name, original=text)
               for name, text in (("train.py", train), ("helper.py", helper))]
    project = Project(results)
    reach = project.reach(0)
    assert (0, "main") in program_defs(project, reach)
    assert reached_lack(project, 0, reach) is not None
