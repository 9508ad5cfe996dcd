"""Audit of silent fallbacks: autocast or GradScaler that disabled itself (TPA04), compute left on the CPU while an
accelerator was picked (TPA05), ops that fell back to the CPU on MPS (TPA06)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from torchport.checks import audit_fallbacks
from torchport.checks.audit import Audit

HERE = os.path.abspath(__file__)
CUDA = torch.cuda.is_available()
FALLBACK = ("The operator 'aten::_linalg_solve_ex.result' is not currently supported on the MPS backend and will "
            "fall back to run on the CPU. This may have performance implications.")


def line_of(marker: str) -> int:
    lines = Path(HERE).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "line_of(" not in text)


def found(audit: Audit, code: str) -> list[tuple[str, int, int]]:
    return [(f.api, f.line, f.count) for f in audit.findings if f.code == code and f.file == HERE]


@pytest.mark.skipif(CUDA, reason="autocast('cuda') stays enabled where CUDA is")
def test_autocast_and_grad_scaler_that_disabled_themselves_are_reported_at_their_line():
    init = torch.amp.autocast_mode.autocast.__init__
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # torch warns "CUDA is not available. Disabling"
        with Audit(report=False) as audit:
            for _ in range(2):
                with torch.autocast("cuda", dtype=torch.float16):  # marker: autocast cuda
                    y = torch.ones(2) * 2
            with torch.autocast("cpu", dtype=torch.bfloat16):  # works here: not a fallback
                pass
            with torch.autocast("cuda", enabled=False):  # asked off: not a fallback
                pass
            scaler = torch.amp.GradScaler("cuda")  # marker: scaler
            torch.amp.GradScaler("cuda", enabled=False)
    assert y.dtype == torch.float32 and not scaler.is_enabled()  # behaviour unchanged: the audit only looks
    assert found(audit, "TPA04") == [("torch.autocast('cuda')", line_of("marker: autocast cuda"), 2),
                                     ("GradScaler('cuda')", line_of("marker: scaler"), 1)]
    assert "disabled itself at run time" in audit.format()
    disabling = [(w.filename, w.lineno) for w in shown if "Disabling" in str(w.message)]
    assert disabling[0] == (HERE, line_of("marker: autocast cuda"))  # where torch puts it, audit or not
    assert torch.amp.autocast_mode.autocast.__init__ is init  # unhooked on exit


def test_compute_on_the_cpu_while_an_accelerator_was_picked(monkeypatch):
    monkeypatch.setattr(audit_fallbacks, "accelerator", lambda: "mps")  # this machine has none
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with Audit(report=False) as audit:
        lin(x)  # marker: module on cpu
        x @ x.T  # marker: matmul on cpu
        x.sum()  # not compute that belongs on an accelerator
    assert found(audit, "TPA05") == [("F.linear on the CPU although mps was there", line_of("marker: module"), 1),
                                     ("Tensor.matmul on the CPU although mps was there",
                                      line_of("marker: matmul on"), 1)]
    monkeypatch.setattr(audit_fallbacks, "accelerator", lambda: None)
    with Audit(report=False) as audit:
        F.linear(x, lin.weight)
    assert found(audit, "TPA05") == []  # the CPU was the pick: nothing fell back


def test_mps_fallback_warnings_are_reported_per_op_at_the_users_line(monkeypatch):
    monkeypatch.setattr(audit_fallbacks, "accelerator", lambda: "mps")
    monkeypatch.setenv(audit_fallbacks.MPS_FALLBACK_ENV, "1")
    before = torch._C._get_warnAlways()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("ignore")  # even a program that ignores warnings
        with Audit(report=False) as audit:
            assert torch._C._get_warnAlways()  # torch warns each time, not once per process
            for _ in range(3):
                warnings.warn(FALLBACK, UserWarning, stacklevel=1)  # marker: fallback op (as torch's C++ warning)
            warnings.warn("something else", UserWarning, stacklevel=1)
    assert torch._C._get_warnAlways() == before
    assert found(audit, "TPA06") == [("aten::_linalg_solve_ex.result", line_of("marker: fallback op"), 3)]
    assert [str(w.message) for w in shown] == [FALLBACK] * 3  # still shown, as before
    assert "fell back to the CPU on MPS (PYTORCH_ENABLE_MPS_FALLBACK)" in audit.format()


@pytest.mark.skipif(CUDA, reason="CUDA profiling works where CUDA is")
def test_cuda_profiling_that_torch_dropped_is_reported_at_the_line_that_asked_for_it():
    from torch.profiler import ProfilerActivity, profile

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("ignore")  # even a program that ignores warnings
        with Audit(report=False) as audit:
            for _ in range(2):
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:  # marker: activity
                    torch.ones(2) + 1
            with torch.autograd.profiler.profile(use_device="cuda"):  # marker: use_device
                torch.ones(2)
            with profile(activities=[ProfilerActivity.CPU]):  # the CPU asked for, the CPU profiled: no finding
                torch.ones(2)
    assert prof.key_averages()  # behaviour unchanged: the CPU events are there
    assert found(audit, "TPA07") == [
        ("CUDA profiling (torch.profiler.ProfilerActivity.CUDA)", line_of("marker: activity"), 2),
        ("CUDA profiling (torch.autograd.profiler.profile(use_device='cuda'))", line_of("marker: use_device"), 1)]
    assert [str(w.message) for w in shown] == ["CUDA is not available, disabling CUDA profiling"] * 3  # each time
    text = audit.format()
    assert "dropped at run time: CUDA is not available" in text
    assert text.endswith("; 2 silent fallback site(s), 3 time(s)")  # not CUDA use sites
    assert not [f for f in warnings.filters if "disabling CUDA profiling" in str(f[1])]  # its filter is gone
