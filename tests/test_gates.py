"""CUDA gates a project defines, recognised from what their definitions do (`torchport.codemods.analysis.gates`)."""

from __future__ import annotations

import ast

import pytest

from torchport.codemods.analysis.gates import cuda_gates


@pytest.mark.parametrize(("source", "expected"), [
    # a skipif mark asking CUDA, whatever its name
    ("import pytest, torch\nzebra = pytest.mark.skipif(not torch.cuda.is_available(), reason='x')\n", {"zebra": 2}),
    # a function that skips (Lightning's RunIf), raises, or exits without enough GPUs
    ("import pytest, torch\ndef RunIf(min_cuda_gpus=0):\n    c = torch.cuda.device_count() < min_cuda_gpus\n"
     "    return pytest.mark.skipif(c, reason='gpus')\n", {"RunIf": 2}),
    ("import torch\ndef check():\n    if not torch.cuda.is_available():\n        raise RuntimeError('GPU')\n",
     {"check": 2}),
    ("import sys, torch\ndef need():\n    if torch.cuda.device_count() < 2:\n        sys.exit(0)\n", {"need": 2}),
    # a decorator whose wrapper skips
    ("import unittest, torch\ndef gpu(f):\n    def w(self):\n        if not torch.cuda.is_available():\n"
     "            self.skipTest('gpu')\n        f(self)\n    return w\n", {"gpu": 2}),
    # diffusers' require_torch_gpu: skip unless the device in use is CUDA's; a raise on CUDA is no gate
    ("import unittest\ndef needs_gpu(t):\n    return unittest.skipUnless(torch_device == 'cuda', 'gpu')(t)\n",
     {"needs_gpu": 2}),
    ("def f(x):\n    if x.device.type == 'cuda':\n        raise ValueError(x)\n", {}),
    # asking CUDA without stopping, or stopping without asking CUDA, is no gate
    ("import torch\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n", {}),
    ("import pytest\nslow = pytest.mark.skipif(True, reason='slow')\n", {}),
    # asking in one place and raising in another is none either (whisper's load_model: a default device pick, then
    # a raise for an unknown model name); nor is an assert of CUDA (TP009 removes it where the program runs elsewhere)
    ("import torch\ndef f(x):\n    if x < 0:\n        raise ValueError(x)\n    return torch.cuda.device_count()\n",
     {}),
    ("import torch\ndef f():\n    assert torch.cuda.is_available()\n", {}),
    # a check that raises only where CUDA is (RTVC's train: the batch must divide among the GPUs) is none; evaluated
    # on the CPU, no path reaches its raise
    ("import torch\ndef train(b):\n    if torch.cuda.is_available():\n        if b % torch.cuda.device_count():\n"
     "            raise ValueError(b)\n    return b\n", {}),
    ("import torch\ndef need(n):\n    if torch.cuda.device_count() < n:\n        raise RuntimeError(n)\n",
     {"need": 2}),
])
def test_cuda_gates(source: str, expected: dict[str, int]) -> None:
    assert cuda_gates(ast.parse(source)) == expected


@pytest.mark.parametrize(("source", "stops"), [
    # dino's init_distributed_mode: an if/elif chain on the environment and CUDA whose else exits
    ("import os, sys, torch\ndef init(args):\n    if 'RANK' in os.environ:\n        args.rank = 0\n"
     "    elif torch.cuda.is_available():\n        args.rank = 0\n    else:\n        sys.exit(1)\n", True),
    ("import torch\ndef need():\n    if not torch.cuda.is_available():\n        raise RuntimeError('GPU')\n", True),
    ("import sys, torch\ndef need():\n    if torch.cuda.device_count() < 2:\n        sys.exit(0)\n", True),
    # stops only when asked for CUDA (a flag), or never
    ("import sys, torch\ndef main(args):\n    if args.cuda and not torch.cuda.is_available():\n        sys.exit(1)\n",
     False),
    ("import torch\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n", False),
    # SRResNet's main: the check sits in the branch of a `--cuda` flag (store_true), so only that flag stops it
    ("import torch\ndef main(opt):\n    if opt.cuda:\n        if not torch.cuda.is_available():\n"
     "            raise Exception('No GPU found')\n", False),
    ("import torch\ndef main():\n    with open('x') as f:\n        if not torch.cuda.is_available():\n"
     "            raise Exception('No GPU found')\n", True),
    # AdCo's Config_Environment: the count bound to a name first, then compared; `not use_cuda` the same
    ("import torch\ndef config(args):\n    ngpus = torch.cuda.device_count()\n    print(ngpus)\n"
     "    if ngpus <= 0:\n        print('no gpu, exit')\n        exit()\n    return ngpus\n", True),
    ("import torch\ndef config():\n    use_cuda = torch.cuda.is_available()\n    if not use_cuda:\n"
     "        raise SystemExit(1)\n", True),
    # a name bound to the count inside a branch, or bound again, stands for nothing
    ("import torch\ndef config(args):\n    ngpus = 1\n    if args.gpu:\n        ngpus = torch.cuda.device_count()\n"
     "    if ngpus <= 0:\n        exit()\n", False),
    ("import torch\ndef config(args):\n    ngpus = torch.cuda.device_count()\n    if args.cpu:\n        ngpus = 1\n"
     "    if ngpus <= 0:\n        exit()\n", False),
])
def test_a_function_that_stops_whenever_cuda_is_missing(source: str, stops: bool) -> None:
    from torchport.codemods.analysis.gates import exits_without_cuda

    function = ast.parse(source).body[-1]
    assert isinstance(function, ast.FunctionDef)
    assert exits_without_cuda(function) is stops


@pytest.mark.parametrize(("source", "expected"), [
    # pytorch/examples' `verify_min_gpu_count`: it answers through locals assigned from CUDA queries
    ("import torch\ndef enough(min_gpus=2):\n    ok = torch.cuda.is_available()\n"
     "    n = torch.cuda.device_count()\n    return ok and n >= min_gpus\n", {"enough"}),
    ("import torch\ndef count():\n    return torch.cuda.device_count()\n", {"count"}),
    # a device pick answers nothing; neither does a function that returns something else on another path
    ("import torch\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n", set()),
    ("import torch\ndef f(x):\n    if x:\n        return x\n    return torch.cuda.is_available()\n", set()),
    # falkon's `decide_cuda`: constants returned, false on every path without CUDA (evaluated, not read)
    ("import torch, warnings\ndef decide(opt=None):\n    if opt is None:\n        opt = Options()\n"
     "    if opt.use_cpu:\n        return False\n    if not torch.cuda.is_available():\n"
     "        warnings.warn('no CUDA')\n        return False\n    return True\n", {"decide"}),
    # false everywhere, or true off CUDA on some path: no answer
    ("import torch\ndef never():\n    if torch.cuda.is_available():\n        return False\n    return False\n", set()),
    ("import torch\ndef f(opt):\n    if opt.force:\n        return True\n"
     "    if not torch.cuda.is_available():\n        return False\n    return True\n", set()),
])
def test_cuda_predicates(source: str, expected: set[str]) -> None:
    from torchport.codemods.analysis.programs import cuda_predicates

    assert cuda_predicates(ast.parse(source)) == expected


def test_a_script_that_exits_unless_a_predicate_answers_runs_only_on_cuda() -> None:
    """Recognised from what the predicate returns, whatever it is called."""
    from torchport.codemods.analysis.programs import cuda_only_program

    source = ("import sys, torch\ndef zebra():\n    return torch.cuda.device_count() >= 4\n"
              "if not zebra():\n    sys.exit()\n")
    assert cuda_only_program(ast.parse(source)) == 4
    imported = "import sys\nfrom helpers import zebra\nif not zebra():\n    sys.exit()\n"
    assert cuda_only_program(ast.parse(imported)) is None  # unless the project says what it is
    assert cuda_only_program(ast.parse(imported), frozenset({"zebra"})) == 3


CUDA_ONLY = '''
import importlib
import torch
from apex.optimizers import FusedAdam


def dtw(x):
    from .triton_ops import kernel
    return kernel(x)


def uses(x):
    y = x + 1
    return dtw(y)


def maybe(x):
    if x.is_cuda:
        return dtw(x)
    return x


def capture(model):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model()


class Adam2(FusedAdam):
    pass


class Fused:
    def __init__(self):
        self.kernel = importlib.import_module("fused_adam_cuda")

    def plain(self):
        return 1
'''


def test_functions_that_always_need_cuda_are_read_from_what_they_do() -> None:
    from torchport.codemods.analysis.requirements import cuda_only_functions

    found = cuda_only_functions(ast.parse(CUDA_ONLY), "pkg", frozenset({"pkg.triton_ops"}))
    assert {name: why for name, (_, why) in found.items()} == {
        "dtw": "imports pkg.triton_ops, which needs CUDA",
        "uses": "calls dtw(), which needs CUDA",  # always; `maybe` calls it only under a check
        "capture": "uses torch.cuda.CUDAGraph, which only CUDA has",
        "Adam2": "is built on FusedAdam (imports apex.optimizers, a CUDA-only library)",
        "Fused.__init__": "imports fused_adam_cuda, a compiled CUDA extension",
        "Fused": "imports fused_adam_cuda, a compiled CUDA extension",
    }
    # without the project, a relative import is not known to need CUDA
    assert "dtw" not in cuda_only_functions(ast.parse(CUDA_ONLY))


FALLBACK_BASE = '''
try:
    from apex.normalization import FusedLayerNorm
except ImportError:
    from torch.nn import LayerNorm as FusedLayerNorm


class LayerNorm(FusedLayerNorm):
    pass
'''


def test_a_base_with_a_fallback_import_needs_no_cuda() -> None:
    """jukebox's ``LayerNorm(FusedLayerNorm)``: apex's class where apex imports, torch's where it does not."""
    from torchport.codemods.analysis.requirements import cuda_only_functions

    assert cuda_only_functions(ast.parse(FALLBACK_BASE)) == {}
    alone = FALLBACK_BASE.replace("from torch.nn import LayerNorm as FusedLayerNorm", "raise")
    assert set(cuda_only_functions(ast.parse(alone))) == {"LayerNorm"}


MAMBA_SCAN = '''
import torch.nn as nn
try:
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
except:
    pass


class SS2D(nn.Module):
    def __init__(self):
        super().__init__()
        self.forward_core = self.forward_corev0

    def forward_corev0(self, x):
        return selective_scan_fn(x)

    def forward(self, x):
        return self.forward_core(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SS2D()


class Plain:
    def forward(self, x):
        return selective_scan_fn(x)
'''


def test_a_module_whose_forward_reads_a_cuda_only_import_that_failed_needs_cuda() -> None:
    """Mamba-UNet's SS2D: ``forward`` calls the method ``__init__`` bound (``self.forward_core``), which reads a
    name only a CUDA-only import binds (``except: pass`` binds nothing in its place). Calling a module runs its
    ``forward``, so the module, and what builds one, needs CUDA; a class with no base is no module."""
    from torchport.codemods.analysis.requirements import cuda_only_functions

    found = {name: why for name, (_, why) in cuda_only_functions(ast.parse(MAMBA_SCAN)).items()}
    assert found["SS2D.forward"] == "calls self.forward_core(), which needs CUDA"
    assert found["SS2D"] == found["SS2D.forward"]
    assert found["Block"] == "calls SS2D(), which needs CUDA"
    assert "Plain" not in found and "Plain.forward" in found


PRIOR = '''
import torch as t
import torch.nn as nn


class Autoregressive(nn.Module):
    def forward(self, x):
        x = self.preprocess(x)
        assert isinstance(x, t.cuda.LongTensor)
        return x


class Prior(nn.Module):
    def __init__(self, single):
        super().__init__()
        if single:
            self.prior = Autoregressive()
        else:
            self.prior = Autoregressive()


class Either(nn.Module):
    def __init__(self, single):
        super().__init__()
        if single:
            self.prior = Autoregressive()


class Checked(nn.Module):
    def forward(self, x):
        assert isinstance(x, t.LongTensor)
        return x
'''


def test_an_assert_false_without_cuda_and_an_if_whose_every_arm_needs_cuda_need_cuda() -> None:
    """jukebox's prior: ``forward`` asserts ``isinstance(x, t.cuda.LongTensor)``, which evaluates false on the
    CPU whatever ``x`` is, so the module cannot be called there; ``SimplePrior.__init__`` builds one on each arm of
    an ``if``. A CPU tensor type, or one arm alone, decides nothing."""
    from torchport.codemods.analysis.requirements import cuda_only_functions

    found = {name: why for name, (_, why) in cuda_only_functions(ast.parse(PRIOR)).items()}
    assert found["Autoregressive.forward"] == "asserts what is false without CUDA (line 9)"
    assert found["Prior"] == "calls Autoregressive(), which needs CUDA"
    assert "Either" not in found and "Checked" not in found and "Checked.forward" not in found


def test_a_test_that_calls_another_modules_cuda_only_function_is_left_as_it_is(tmp_path) -> None:  # noqa: ANN001
    import json

    from typer.testing import CliRunner

    from torchport.cli import app

    (tmp_path / "kernels.py").write_text("try:\n    import triton\nexcept ImportError:\n    raise RuntimeError('no')\n")
    (tmp_path / "lib.py").write_text("def fused(x):\n    import kernels\n    return x\n")
    (tmp_path / "test_lib.py").write_text(
        "import torch\nfrom lib import fused\n\n\ndef test_fused():\n    x = torch.ones(2).cuda()\n"
        "    assert fused(x) is x\n\n\ndef test_plain():\n    assert torch.ones(2).cuda().sum() == 2\n")
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--no-cache", "--format", "json"])
    [test] = [f for f in json.loads(done.stdout)["files"] if f["path"] == "test_lib.py"]
    assert [r["line"] for r in test["rewrites"]] == [11]  # test_plain only
    assert "[R03 cuda-gate] `test_fused` calls fused(), which stops or fails without CUDA" in \
        test["diagnostics"][0]["message"]


RUN_IF_CUDA = '''
import torch


def run_if_cuda(func):
    def wrapped_func(*args, **kwargs):
        if torch.cuda.is_available():
            return func(*args, **kwargs)
        else:
            return

    return wrapped_func


def timed(func):
    def wrapped_func(*args, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return func(*args, **kwargs)

    return wrapped_func
'''


def test_a_decorator_that_calls_what_it_wraps_only_on_cuda_is_a_gate() -> None:
    """torch-points-kernels' ``run_if_cuda``: off CUDA the wrapper returns without calling the test, so what it
    decorates runs only on CUDA; a wrapper that calls it on every path (``timed``) gates nothing."""
    from torchport.codemods.analysis.gates import cuda_gates

    assert cuda_gates(ast.parse(RUN_IF_CUDA)) == {"run_if_cuda": 5}
