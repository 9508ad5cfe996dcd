"""torch.compile(fullgraph=True) must trace runtime calls without graph breaks.

fullgraph=True raises on any graph break, so running the compiled function is
the assertion. backend="eager" keeps these fast (Dynamo tracing only).
"""

from __future__ import annotations

import pytest
import torch

from torchport import runtime as tp


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.skipif(tp.device_type() == "cuda", reason="on CUDA tp.device_count and tp.range are "
                    "torch.cuda.device_count and torch.cuda.nvtx.range, which fullgraph refuses as it does "
                    "the original calls (checked on an H100)")
def test_device_helpers_and_event_record_trace_without_graph_breaks():
    outside = tp.Event(enable_timing=True)

    def step(x):
        inside = tp.Event(enable_timing=True)
        inside.record()
        outside.record()
        y = x.to(tp.device()) + torch.zeros(2, device=tp.device())
        y = y.to(tp.device(0)).to(tp.device("cuda:0")).to(tp.device_str())
        if tp.device_type() == tp.device().type and tp.device_str(0) == str(tp.device(0)):
            y = y * 2
        if tp.is_available():
            y = y - 1
        y = y.to(tp.device("".join(["cuda:", "0"])))  # a str built in the graph
        if tp.device_count() > 0 or tp.process_count() > 1:
            y = y + 3
        with tp.range("step {}", 1):
            y = y * 3
        return y

    x = torch.ones(2)
    compiled = torch.compile(step, fullgraph=True, backend="eager")
    expected = step(x)
    assert torch.equal(compiled(x).cpu(), expected.cpu())


@pytest.mark.skipif(tp.device_type() not in ("cpu", "mps"), reason="host-emulated events only")
def test_host_event_record_is_skipped_inside_compiled_code():
    ev = tp.Event(enable_timing=True)

    @torch.compile(fullgraph=True, backend="eager")
    def record(x):
        ev.record()
        return x + 1

    record(torch.ones(1))
    with pytest.raises(ValueError, match="recorded"):
        ev.elapsed_time(ev)  # documented: recording needs eager code


def test_runtime_picked_before_compiling_stays_constant_without_recompiles():
    tp.device()  # picked before compiling (the usual case)
    counts = []

    def backend(gm, example_inputs):
        counts.append(1)
        return gm

    @torch.compile(fullgraph=True, backend=backend)
    def f(x):
        return x.to(tp.device()) * (2 if tp.device_type() == "cpu" else 3)

    for _ in range(3):
        f(torch.ones(2))
    assert len(counts) == 1


def test_device_numbers_of_several_gpus_trace_without_graph_breaks(monkeypatch):
    """`tp.nth_device(1)` in a compiled forward: no graph break; the warning is left to eager calls."""
    import warnings

    from torchport.runtime import _device

    monkeypatch.setattr(_device, "_WARNED", set())

    def forward(x):
        return x.to(tp.nth_device(0)) + torch.ones(2, device=tp.nth_device(1)).to(tp.nth_device_str(1))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning inside the traced code would raise here
        compiled = torch.compile(forward, fullgraph=True, backend="eager")
        assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))
    if tp.device_type() not in ("cuda", "xpu"):
        with pytest.warns(UserWarning, match="cuda:1"):
            forward(torch.ones(2))
