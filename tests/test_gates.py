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
    ("import torch\ndef f(x):\n    if x < 0:\n        raise ValueError(x)\n    return torch.cuda.device_count()\n",
     {"f": 2}),  # cautious: it both asks and raises (a gate keeps asking CUDA, which is what it did)
])
def test_cuda_gates(source: str, expected: dict[str, int]) -> None:
    assert cuda_gates(ast.parse(source)) == expected
