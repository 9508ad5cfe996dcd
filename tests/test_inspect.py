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
    xv = tpd.inspect(x, tag="x")  # a view: the gradient reported is the one through the result
    assert xv is not x and torch.equal(xv, x)
    y, m = tpd.inspect(lin(xv), mask, tag="pair")
    assert m is mask  # no grad: the same object
    w = tpd.inspect(lin.weight, tag="w")  # a leaf that requires grad: an alias, not the parameter
    assert w is not lin.weight and w.data_ptr() == lin.weight.data_ptr() and torch.equal(w, lin.weight)
    tpd.inspect(x * 2, tag="unused")  # its result is not used: no gradient flows through it
    (y * m).sum().backward()
    w.sum().backward()
    out = capsys.readouterr().out
    lines = [ln.split(":")[0].strip() for ln in out.splitlines() if not ln.startswith("    values=")]
    assert lines == [  # a [tag][phase] header, then one indented line per value
        "[x][fwd]", "x output", "[pair][fwd]", "pair.0 output", "pair.1 output", "[w][fwd]", "w output",
        "[unused][fwd]", "unused output", "[pair][bwd]", "pair.0 grad", "[x][bwd]", "x grad", "[w][bwd]", "w grad"]
    assert "values=[1, 0]" in out
    printed = re.search(r"  x output: .*?mean=(\S+)", out)
    assert printed is not None and float(printed.group(1)) == pytest.approx(x.mean().item(), rel=1e-4, abs=1e-7)
    assert not lin.weight._backward_hooks  # no hook left on the parameter
    assert tpd.inspect() == ()
    with pytest.raises(TypeError, match="tensors, Python numbers, SymInts and constants"):
        tpd.inspect(x, object())


def test_scalars_and_format_string_print_as_torchs_print_operator(capsys):
    x = torch.tensor([1.0, 2.0])
    assert tpd.inspect(3, tag="n") == 3
    assert tpd.inspect(x, 7, 0.5, True, fmt="x={} n={} lr={} ok={}") == (x, 7, 0.5, True)
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["[n][fwd]", "  n output: value=3 (int)"]
    assert out[-1] == "x=tensor([1., 2.]) n=7 lr=0.5 ok=True"  # exactly print(fmt.format(*values))
    torch._higher_order_ops.print("x={} n={} lr={} ok={}", x, 7, 0.5, True)  # torch's own operator
    assert capsys.readouterr().out.strip() == out[-1]


def test_eager_callbacks_are_called_per_value_with_tag_phase_and_rank():
    seen: list = []

    def note(v, *, tag, phase, rank):
        seen.append((phase, tag, v.tolist() if isinstance(v, torch.Tensor) else v, rank))

    x = torch.arange(3.0, requires_grad=True)
    c = torch.ones(3)
    a, b, n = tpd.inspect(x * 2, c, 5, tag="ab", fwd=note, bwd=note)
    (a * 3 * b).sum().backward()
    assert seen == [("fwd", "ab.0", [0.0, 2.0, 4.0], 0), ("fwd", "ab.1", [1.0, 1.0, 1.0], 0), ("fwd", "ab.2", 5, 0),
                    ("bwd", "ab.0", [3.0, 3.0, 3.0], 0)]  # one call per gradient received
    seen.clear()
    with torch.no_grad():
        tpd.inspect(x, fwd=note, bwd=note)
    tpd.inspect(x * 1, tag="f", fwd=note).sum().backward()  # no bwd: no hook
    tpd.inspect(x * 1, tag="unused", bwd=note)  # result unused: no gradient through it, as compiled code
    (x * 4).sum().backward()
    assert [(p, t) for p, t, *_ in seen] == [("fwd", "inspect"), ("fwd", "f")]


class Checker:
    """A bound method as a callback: eager, compiled and made inside the compiled code alike."""

    def __init__(self) -> None:
        self.seen: list = []

    def check(self, v, *, tag, phase, rank):
        self.seen.append((phase, tag, rank))


def test_bound_method_and_make_fx_run_the_callback_at_run_time_with_values():
    from torch.fx.experimental.proxy_tensor import make_fx

    checker = Checker()
    seen: list = []

    def f(x):
        y = tpd.inspect(x * 2, tag="y", fwd=checker.check)
        n = tpd.inspect(x.shape[0], tag="n", fwd=lambda v, **k: seen.append(v))
        return y + n

    x = torch.ones(3)
    for mode in ("real", "fake", "symbolic"):
        gm = make_fx(f, tracing_mode=mode)(x)
        # No call while tracing, not even in real mode (which runs the ops): as torch's print operator.
        assert (seen, checker.seen) == ([], [])
        seen.clear()
        checker.seen.clear()
        assert torch.equal(gm(torch.full((5,), 2.0)), torch.full((5,), 4.0 + (5 if mode == "symbolic" else 3)))
        assert seen == [5 if mode == "symbolic" else 3] and checker.seen == [("fwd", "y", 0)]
        seen.clear()
        checker.seen.clear()


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
    tpd.inspect(x, ranks=None, fwd=lambda t, **info: calls.append("all"))
    tpd.inspect(x, ranks=[0], fwd=lambda t, **info: calls.append("0"))  # no process group: rank 0
    assert tpd.inspect(x, ranks=[1, 2], fwd=lambda t, **info: calls.append("1,2")) is x
    dist = torch.distributed
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 2)
    tpd.inspect(x, ranks=[1, 2], fwd=lambda t, **info: calls.append("rank 2"))
    tpd.inspect(x, ranks=0, fwd=lambda t, **info: calls.append("not 0"))
    assert calls == ["all", "0", "rank 2"]
    tpd.inspect(x, tag="x", ranks=[2])
    assert capsys.readouterr().out.startswith("[rank 2][x][fwd]\n  x output: shape=(2,)")


# ------------------------------------------------------------------ torch.compile(fullgraph=True)

LOG: list = []
CHECKER = Checker()


def _fwd(v, *, tag, phase, rank):  # module-level callbacks
    LOG.append((phase, tag, round(v.sum().item(), 4) if isinstance(v, torch.Tensor) else v, rank))


_bwd = _fwd


def _program(x, y):  # few pointwise ops: each Inductor kernel costs a C++ compile
    a = tpd.inspect(x * 2, tag="a")                        # stats into the watch, and its gradient
    b, c = tpd.inspect(a.sin(), y, tag="bc", fwd=_fwd, bwd=_bwd)
    tpd.inspect(x, tag="unused")                           # result unused: still runs forward
    tpd.inspect(x * 3, tag="unused.bwd", bwd=_bwd)         # ... and gets no gradient, eager or compiled
    tpd.inspect(a, tag="rank1", ranks=[1], fwd=_fwd)       # not this rank: not in the graph
    scale = 3
    d = tpd.inspect(b, tag="d", fwd=lambda t, **info: LOG.append(("lambda", scale)))
    n = tpd.inspect(x.shape[0], 0.5, tag="n", fmt="n={} s={}", fwd=CHECKER.check)  # numbers, a bound method
    return (d * c).sum() * n[1]


def _run(fn, tmp_path, name):
    LOG.clear()
    torch.manual_seed(0)
    x, y = torch.randn(4, requires_grad=True), torch.randn(4)
    with tpd.watch(None, level=tpd.Level.SAVE, run_dir=tmp_path / name, grads=True) as w:
        fn(x, y).backward()
    return w.records, list(LOG), x.grad


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_fullgraph_matches_eager_without_graph_break(backend, tmp_path, capsys):
    from torch._dynamo.utils import counters

    CHECKER.seen.clear()
    eager = _run(_program, tmp_path, "eager")
    torch._dynamo.reset()
    counters.clear()
    try:
        compiled = _run(torch.compile(_program, backend=backend, fullgraph=True), tmp_path, backend)
        assert dict(counters["graph_break"]) == {} and counters["stats"]["unique_graphs"] == 1
    finally:
        torch._dynamo.reset()
    (rec_e, log_e, grad_e), (rec_c, log_c, grad_c) = eager, compiled
    assert log_e == [("fwd", "bc.0", log_e[0][2], 0), ("fwd", "bc.1", log_e[1][2], 0), ("lambda", 3),
                     ("bwd", "bc.0", log_e[3][2], 0)]  # no gradient for y (no grad) nor "unused.bwd"
    # Inductor may run inspect calls with independent inputs in another order than written: compare as sets.
    assert sorted(map(str, log_c)) == sorted(map(str, log_e))
    assert CHECKER.seen == [("fwd", "n.0", 0), ("fwd", "n.1", 0)] * 2
    assert capsys.readouterr().out.count("n=4 s=0.5\n") == 2  # printed at run time, eager and compiled
    assert [(r["kind"], r["key"]) for r in rec_e] == [("output", "a"), ("output", "unused"), ("grad", "a")]
    rec_c = sorted(rec_c, key=lambda r: [(r["kind"], r["key"]) for r in rec_e].index((r["kind"], r["key"])))
    assert [(r["kind"], r["key"]) for r in rec_c] == [(r["kind"], r["key"]) for r in rec_e]
    for c, e in zip(rec_c, rec_e):
        torch.testing.assert_close(c["values"], e["values"])
    torch.testing.assert_close(grad_c, grad_e)
