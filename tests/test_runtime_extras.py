"""Pinned memory, on_accelerator and profiler ranges, on the CPU backend of this machine."""

from __future__ import annotations

import torch

from torchport import runtime as tp


class Batch:
    def __init__(self) -> None:
        self.pinned = False

    def pin_memory(self) -> "Batch":
        self.pinned = True
        return self


def test_pin_memory_matches_the_backend() -> None:
    pinnable = tp.device_type() in ("cuda", "xpu")
    assert tp.pin_memory_available() is pinnable
    tensor = torch.ones(2)
    assert tp.pin_memory(tensor).is_pinned() is pinnable
    assert tp.pin_memory(Batch()).pinned is pinnable
    # the flag form is accepted where torch takes pin_memory=
    assert torch.empty(2, pin_memory=tp.pin_memory_available()).shape == (2,)


def test_on_accelerator_is_false_on_cpu_and_checks_modules() -> None:
    model = torch.nn.Linear(2, 2).to(tp.device())
    expected = tp.is_available()
    assert tp.on_accelerator(torch.ones(1, device=tp.device())) is expected
    assert tp.on_accelerator(model) is expected
    assert tp.on_accelerator(torch.nn.ReLU()) is False  # no parameters, nowhere
    assert tp.on_accelerator(torch.ones(1, device="cpu")) is False


def test_ranges_show_in_the_profiler_and_pop_like_nvtx() -> None:
    assert tp.range_pop() == -1  # nothing open
    with torch.profiler.profile() as prof:
        assert tp.range_push("outer") == 0
        assert tp.range_push("inner") == 1
        torch.ones(3).sum()
        assert tp.range_pop() == 1
        assert tp.range_pop() == 0
    names = {event.name for event in prof.events()}
    if tp.device_type() != "cuda":
        assert {"outer", "inner"} <= names
