"""Migrate the bundled CUDA example into a temporary folder and run it on this machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import forkrun
import torch

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuda_train"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``cwd``, forked from a process that imported torch (see forkrun.py)."""
    return forkrun.run(list(args), cwd=cwd, env=ENV, timeout=300)


def test_migrated_example_runs_here(tmp_path: Path) -> None:
    target = tmp_path / "cuda_train"
    shutil.copytree(EXAMPLE, target)

    original = _run("train.py", "--steps", "3", cwd=target)
    if not torch.cuda.is_available():
        assert original.returncode != 0, "the example must need CUDA before migration"

    migrated = _run("-m", "torchport", "migrate", str(target), "--apply", cwd=REPO)
    assert migrated.returncode == 0, migrated.stderr
    assert "from torchport import runtime as tp" in (target / "train.py").read_text()
    assert _run("-m", "torchport", "migrate", str(target), "--check", cwd=REPO).returncode == 0

    run = _run("train.py", "--steps", "5", cwd=target)
    assert run.returncode == 0, run.stderr
    assert "step   4 loss" in run.stdout and "accuracy" in run.stdout
    assert "(0 device(s))" not in run.stdout and run.stdout.startswith("training on ")  # consistent after the port
    # the migrated script still accepts an explicit device, as the original did
    run_cpu = _run("train.py", "--steps", "5", "--device", "cpu", "--amp", cwd=target)
    assert run_cpu.returncode == 0, run_cpu.stderr
