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
    # asking CUDA without stopping, or stopping without asking CUDA, is no gate
    ("import torch\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n", {}),
    ("import pytest\nslow = pytest.mark.skipif(True, reason='slow')\n", {}),
    # asking in one place and raising in another is none either (whisper's load_model: a default device pick, then
    # a raise for an unknown model name); nor is an assert of CUDA (TP009 removes it where the program runs elsewhere)
    ("import torch\ndef f(x):\n    if x < 0:\n        raise ValueError(x)\n    return torch.cuda.device_count()\n",
     {}),
    ("import torch\ndef f():\n    assert torch.cuda.is_available()\n", {}),
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
])
def test_a_function_that_stops_whenever_cuda_is_missing(source: str, stops: bool) -> None:
    from torchport.codemods.analysis.gates import exits_without_cuda

    function = ast.parse(source).body[-1]
    assert isinstance(function, ast.FunctionDef)
    assert exits_without_cuda(function) is stops
