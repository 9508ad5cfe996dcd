"""Audit (torchport.checks.audit): run-time CUDA uses the static pass could not see."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from torchport.checks.audit import Audit, Finding
from torchport.runtime import _backend

HERE = os.path.abspath(__file__)
ROOT = str(Path(__file__).resolve().parent.parent)
CUDA_BUILD = torch.cuda.is_available()


def line_of(marker: str) -> int:
    """1-based line in this file of the first line containing ``marker`` (after this function)."""
    lines = Path(HERE).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "line_of(" not in text)


def keys(audit: Audit) -> list[tuple[str, str, str, int, int]]:
    return [(f.code, f.api, f.file, f.line, f.count) for f in audit.findings]


def test_dynamic_torch_cuda_access_is_found_at_its_line():
    with Audit(report=False) as audit:
        torch.cuda.is_available()  # MARK-dyn
        for _ in range(2):
            torch.cuda.device_count()  # MARK-loop
    assert keys(audit) == [
        ("TPA01", "torch.cuda.is_available", HERE, line_of("MARK-dyn"), 1),
        ("TPA01", "torch.cuda.device_count", HERE, line_of("MARK-loop"), 2),
    ]


@pytest.mark.skipif(CUDA_BUILD, reason="checks the CPU-only behaviour")
def test_behaviour_is_unchanged_the_call_still_raises():
    with Audit(report=False) as audit:
        with pytest.raises((AssertionError, RuntimeError)):
            torch.cuda.synchronize()  # MARK-sync
    assert keys(audit) == [("TPA01", "torch.cuda.synchronize", HERE, line_of("MARK-sync"), 1)]


def test_submodule_access_is_named_once_in_full():
    with Audit(report=False) as audit:
        torch.cuda.amp.GradScaler  # noqa: B018  MARK-amp
        with pytest.raises(AttributeError):
            torch.cuda.no_such_api  # noqa: B018  MARK-missing
    assert [(f.api, f.line) for f in audit.findings] == [
        ("torch.cuda.amp.GradScaler", line_of("MARK-amp")),
        ("torch.cuda.no_such_api", line_of("MARK-missing")),
    ]


def test_torch_and_runtime_calls_are_not_reported():
    from torchport import runtime as tp

    with Audit(report=False) as audit:
        _backend._available("cuda")  # torchport.runtime touches torch.cuda.is_available
        tp.is_available(), tp.device_count(), tp.synchronize(), tp.memory_allocated()
        torch.amp.autocast("cpu")  # torch's own code reads torch.cuda internals
        torch.zeros(2, device=tp.device()).to(tp.device())
    assert audit.findings == []


@pytest.mark.skipif(CUDA_BUILD, reason="checks the CPU-only behaviour")
def test_device_uses_are_reported_and_still_raise():
    x = torch.zeros(2)
    with Audit(report=False) as audit:
        with pytest.raises((AssertionError, RuntimeError)):
            x.cuda()  # MARK-cuda
        with pytest.raises((AssertionError, RuntimeError)):
            x.to("cuda:1")  # MARK-to
        with pytest.raises((AssertionError, RuntimeError)):
            torch.zeros(2, device="cuda")  # MARK-kw
        with pytest.raises((AssertionError, RuntimeError)):
            torch.nn.Linear(2, 2).cuda()  # MARK-module
        x.to("cpu"), x.to(torch.float64), torch.ones(2, device="cpu")  # not CUDA: not reported
    assert [(f.code, f.api, f.line) for f in audit.findings] == [
        ("TPA02", "Tensor.cuda", line_of("MARK-cuda")),
        ("TPA03", "Tensor.to('cuda:1')", line_of("MARK-to")),
        ("TPA03", "torch.zeros(device='cuda')", line_of("MARK-kw")),
        ("TPA02", "Tensor.cuda", line_of("MARK-module")),
    ]


def test_hooks_are_removed_on_exit_and_audits_nest():
    assert type(torch.cuda) is types.ModuleType
    outer = Audit(report=False).enable()
    with Audit(report=False) as inner:
        assert type(torch.cuda) is not types.ModuleType
        assert isinstance(torch.cuda, types.ModuleType)
        torch.cuda.is_available()  # MARK-both
    assert type(torch.cuda) is not types.ModuleType  # outer still enabled
    torch.cuda.is_available()  # MARK-outer
    outer.disable()
    assert type(torch.cuda) is types.ModuleType
    assert type(sys.modules["torch.cuda.amp"]) is types.ModuleType
    assert not torch._C._len_torch_function_stack()
    torch.cuda.is_available()  # after: nobody records
    assert [f.line for f in inner.findings] == [line_of("MARK-both")]
    assert [f.line for f in outer.findings] == [line_of("MARK-both"), line_of("MARK-outer")]


def test_hooks_are_removed_when_the_block_raises():
    with pytest.raises(KeyError):
        with Audit(report=False):
            raise KeyError("boom")
    assert type(torch.cuda) is types.ModuleType
    assert not torch._C._len_torch_function_stack()


def test_report_format():
    buf = io.StringIO()
    with Audit(file=buf):
        torch.cuda.is_available()  # MARK-report
        torch.cuda.is_available()  # MARK-report2
    lines = buf.getvalue().splitlines()
    rel = os.path.relpath(HERE)
    shown = HERE if rel.startswith("..") else rel
    assert lines[0] == f"{shown}:{line_of('MARK-report')}: TPA01 torch.cuda.is_available touched at run time"
    assert lines[-1] == "[torchport audit] 2 run-time CUDA use site(s), 2 use(s)"
    finding = Finding("TPA01", "torch.cuda.x", "/a.py", 3, 4)
    assert finding.format() == "/a.py:3: TPA01 torch.cuda.x touched at run time (4 times)"
    empty = io.StringIO()
    with Audit(file=empty):
        pass
    assert empty.getvalue() == "[torchport audit] no run-time CUDA use found\n"



def test_summary_counts_silent_fallbacks_apart_from_cuda_uses():
    from torchport.checks.names import audit_summary

    audit = Audit(report=False)
    audit._counts = {("TPA01", "torch.cuda.x", "/a.py", 1): 2, ("TPA04", "torch.autocast('cuda')", "/a.py", 2): 3,
                     ("TPA07", "CUDA profiling", "/a.py", 3): 1}
    assert audit.format().splitlines()[-1] == (
        "[torchport audit] 1 run-time CUDA use site(s), 2 use(s); 2 silent fallback site(s), 4 time(s)")
    assert audit_summary([("TPA05", 1)]) == "no run-time CUDA use found; 1 silent fallback site(s), 1 time(s)"
    assert audit_summary([]) == "no run-time CUDA use found"


SCRIPT = """\
import torch
import torchport.runtime as tp

tp.synchronize()
getattr(torch, "cuda").is_available()
print("ok")
"""


def _run_script(tmp_path, env_value, *extra):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT,
           "PYTHONWARNINGS": "ignore::UserWarning"}  # torch warns on stderr when numpy is missing
    env.pop("TORCHPORT_AUDIT", None)
    if env_value is not None:
        env["TORCHPORT_AUDIT"] = env_value
    return subprocess.run([sys.executable, *extra, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)


def test_env_hook_reports_at_exit_and_is_free_when_unset(tmp_path):
    on = _run_script(tmp_path, "1")
    assert on.returncode == 0 and on.stdout == "ok\n", on.stderr
    assert on.stderr.splitlines() == [
        "s.py:5: TPA01 torch.cuda.is_available touched at run time",
        "[torchport audit] 1 run-time CUDA use site(s), 1 use(s)",
    ]
    off = _run_script(tmp_path, "0", "-X", "importtime")
    assert off.returncode == 0 and off.stdout == "ok\n"
    imported = [line.rsplit("|", 1)[-1].strip() for line in off.stderr.splitlines()]
    assert "torchport.runtime" in imported
    assert "torchport.checks.audit" not in imported and "torchport.checks.trace" not in imported
