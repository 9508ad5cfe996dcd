"""torchport.debug.inspect: stats or callbacks on any tensor, eager and compiled (no graph break), with grads."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import torchport.debug as tpd
from torchport.checks import debug


@pytest.fixture(autouse=True)
def no_active_watch():
    """inspect() reports into every active watch: start and end each test with none."""
    for w in list(debug._WATCHES.values()):
        w.remove()
    yield
    assert not debug._WATCHES


def _keys(watch: debug.Watch) -> list[tuple[str, str]]:
    return [(r["kind"], r["key"]) for r in watch.records]


def test_facade_is_the_runtime_module():
    assert tpd.inspect is debug.inspect and tpd.watch is debug.watch and tpd.Level is debug.Level


def test_eager_returns_inputs_and_prints_stats_and_gradients(capsys):
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True) * 1  # non-leaf
    mask = torch.tensor([1.0, 0.0])
    assert tpd.inspect(x, tag="x") is x  # identity: drop it into code
    y, m = tpd.inspect(lin(x), mask, tag="pair")
    assert m is mask
    w = tpd.inspect(lin.weight, tag="w")  # a leaf that requires grad: an alias, not the parameter
    assert w is not lin.weight and w.data_ptr() == lin.weight.data_ptr() and torch.equal(w, lin.weight)
    (y * m).sum().backward()
    w.sum().backward()
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("[torchport]")]
    assert [ln.split(":")[0] for ln in lines] == [
        "[torchport] x output", "[torchport] pair.0 output", "[torchport] pair.1 output", "[torchport] w output",
        "[torchport] pair.0 grad", "[torchport] x grad", "[torchport] w grad"]
    assert "values=[1, 0]" in out
    printed = re.search(r"\[torchport\] x output: .*?mean=(\S+)", out)
    assert printed is not None and float(printed.group(1)) == pytest.approx(x.mean().item(), rel=1e-4, abs=1e-7)
    assert not lin.weight._backward_hooks  # no hook left on the parameter
    assert tpd.inspect() == ()
    with pytest.raises(TypeError, match="tensors"):
        tpd.inspect(x, 3)  # type: ignore[arg-type]


def test_eager_callbacks_get_values_and_gradients():
    seen: list = []
    x = torch.arange(3.0, requires_grad=True)
    c = torch.ones(3)
    a, b = tpd.inspect(x * 2, c, tag="ab", fwd=lambda *t: seen.append(("fwd", [v.tolist() for v in t],
                                                                             [v.requires_grad for v in t])),
                       bwd=lambda *g: seen.append(("bwd", [None if v is None else v.tolist() for v in g])))
    (a * 3 * b).sum().backward()
    assert seen == [("fwd", [[0.0, 2.0, 4.0], [1.0, 1.0, 1.0]], [False, False]), ("bwd", [[3.0, 3.0, 3.0], None])]
    seen.clear()
    with torch.no_grad():
        tpd.inspect(x, fwd=lambda t: seen.append("fwd"), bwd=lambda g: seen.append("bwd"))
    tpd.inspect(x * 1, fwd=lambda t: seen.append("fwd only")).sum().backward()  # no bwd: no hook
    assert seen == ["fwd", "fwd only"]


def test_reports_go_into_active_watches_filtered_by_tag(tmp_path):
    with tpd.watch(None, level=tpd.Level.SAVE, run_dir=tmp_path, grads=True) as w, \
            tpd.watch(None, level=tpd.Level.SAVE, run_dir=tmp_path / "f", names="keep*") as f:
        x = torch.randn(2, 2, requires_grad=True)
        for _ in range(2):
            tpd.inspect(x * 1, tag="keep").sum().backward()
        tpd.inspect(x, tag="drop")
    assert _keys(w) == [("output", "keep"), ("grad", "keep"), ("output", "keep#1"), ("grad", "keep#1"),
                        ("output", "drop")]
    assert _keys(f) == [("output", "keep"), ("output", "keep#1")]  # no grads=True: no gradients
    assert [r["key"] for r in debug.load(tmp_path)["records"]][-1] == "drop"


def test_rank_filter(monkeypatch, capsys):
    calls: list = []
    x = torch.ones(2)
    tpd.inspect(x, ranks=None, fwd=lambda t: calls.append("all"))
    tpd.inspect(x, ranks=[0], fwd=lambda t: calls.append("0"))  # no process group: rank 0
    assert tpd.inspect(x, ranks=[1, 2], fwd=lambda t: calls.append("1,2")) is x
    dist = torch.distributed
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 2)
    tpd.inspect(x, ranks=[1, 2], fwd=lambda t: calls.append("rank 2"))
    tpd.inspect(x, ranks=0, fwd=lambda t: calls.append("not 0"))
    assert calls == ["all", "0", "rank 2"]
    tpd.inspect(x, tag="x", ranks=[2])
    assert capsys.readouterr().out.startswith("[torchport rank 2] x output: shape=(2,)")


# ------------------------------------------------------------------ torch.compile(fullgraph=True)

LOG: list = []


def _fwd(*t):  # module-level callbacks: Dynamo holds them as constants
    LOG.append(("fwd", [round(v.sum().item(), 4) for v in t]))


def _bwd(*g):
    LOG.append(("bwd", [None if v is None else round(v.sum().item(), 4) for v in g]))


def _program(x, y):  # few pointwise ops: each Inductor kernel costs a C++ compile
    a = tpd.inspect(x * 2, tag="a")                        # stats into the watch, and its gradient
    b, c = tpd.inspect(a.sin(), y, tag="bc", fwd=_fwd, bwd=_bwd)
    tpd.inspect(x, tag="unused")                           # result unused: still runs
    tpd.inspect(a, tag="rank1", ranks=[1], fwd=_fwd)       # not this rank: not in the graph
    scale = 3
    d = tpd.inspect(b, tag="d", fwd=lambda t: LOG.append(("lambda", scale)))
    return (d * c).sum()


def _run(fn, tmp_path, name):
    LOG.clear()
    torch.manual_seed(0)
    x, y = torch.randn(4, requires_grad=True), torch.randn(4)
    with tpd.watch(None, level=tpd.Level.SAVE, run_dir=tmp_path / name, grads=True) as w:
        fn(x, y).backward()
    return w.records, list(LOG), x.grad


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_fullgraph_matches_eager_without_graph_break(backend, tmp_path):
    from torch._dynamo.utils import counters

    eager = _run(_program, tmp_path, "eager")
    torch._dynamo.reset()
    counters.clear()
    try:
        compiled = _run(torch.compile(_program, backend=backend, fullgraph=True), tmp_path, backend)
        assert dict(counters["graph_break"]) == {} and counters["stats"]["unique_graphs"] == 1
    finally:
        torch._dynamo.reset()
    (rec_e, log_e, grad_e), (rec_c, log_c, grad_c) = eager, compiled
    assert log_c == log_e == [("fwd", log_e[0][1]), ("lambda", 3), ("bwd", [log_e[2][1][0], None])]
    assert [(r["kind"], r["key"]) for r in rec_c] == [(r["kind"], r["key"]) for r in rec_e] == [
        ("output", "a"), ("output", "unused"), ("grad", "a")]
    for c, e in zip(rec_c, rec_e):
        torch.testing.assert_close(c["values"], e["values"])
    torch.testing.assert_close(grad_c, grad_e)
