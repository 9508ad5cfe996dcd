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
# the program's unused results warn, as they should (test_seed_usage_eager_and_compiled checks that warning)
@pytest.mark.filterwarnings("ignore:torchport.debug.inspect:UserWarning")
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


# ------------------------------------------------------------------ the seeds' usage (issue 30)

def test_one_argument_callbacks_get_only_the_keywords_they_take(capsys):
    from torchport.checks import inspect_values

    seen: list = []

    class Obj:
        def __call__(self, t, rank):
            seen.append(("obj", rank))

    x = torch.arange(3.0, requires_grad=True)
    y = tpd.inspect(x * 1, fwd=lambda t: seen.append(("fwd", t.shape)), bwd=lambda t: seen.append(("bwd", t.shape)))
    tpd.inspect(x, 2, fwd=lambda v, tag: seen.append(("tag", tag)))
    tpd.inspect(x, fwd=Obj())
    tpd.inspect(x, fwd=lambda v, /, phase="?", *, tag: seen.append(("kw", phase, tag)))
    tpd.inspect("text", fwd=print)  # a builtin without a signature: the value alone
    y.sum().backward()
    assert seen == [("fwd", (3,)), ("tag", "inspect.0"), ("tag", "inspect.1"), ("obj", 0), ("kw", "fwd", "inspect"),
                    ("bwd", (3,))]
    assert capsys.readouterr().out == "text\n"  # no tag given: no header
    before = len(inspect_values._SIGNATURES)
    for _ in range(5):  # a lambda made anew each time: its signature is read once
        tpd.inspect(x, fwd=lambda t: None)
    assert len(inspect_values._SIGNATURES) == before + 1


def test_format_keyword_fields_and_constants_print_as_torchs_print_operator(capsys):
    x = torch.tensor([1.0, 2.0])
    assert tpd.inspect(x, "label", fmt="{1}: {0} shape={s} val={v} ok={ok}", s=x.shape[0], v=x.sum(), ok=None) == \
        (x, "label")  # the fields are printed, not returned
    torch._higher_order_ops.print("{1}: {0} shape={s} val={v} ok={ok}", x, "label", s=2, v=x.sum(), ok=None)
    first, second = capsys.readouterr().out.splitlines()
    assert first == second == "label: tensor([1., 2.]) shape=2 val=3.0 ok=None"
    assert tpd.inspect("only", tag="c") == "only" and tpd.inspect(torch.float16, (1, "a"), tag="d")[1] == (1, "a")
    assert capsys.readouterr().out.splitlines() == [
        "[c][fwd]", "  c output: value='only' (str)", "[d][fwd]", "  d.0 output: value='torch.float16' (dtype)",
        "  d.1 output: value=\"(1, 'a')\" (tuple)"]
    with pytest.raises(TypeError, match="keyword fields .s. are fields of fmt"):
        tpd.inspect(x, s=1)
    with pytest.raises(ValueError, match="phase must be"):
        tpd.inspect(x, phase="forward")


def test_make_fx_real_mode_runs_nothing_at_trace_time_like_torchs_print(capsys):
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x):
        torch._higher_order_ops.print("torch {}", x.sum())
        return tpd.inspect(x, tag="x", fmt="ours {s}", s=x.sum()) * 2

    gm = make_fx(f)(torch.ones(2))  # tracing_mode="real"
    assert capsys.readouterr().out == ""
    gm(torch.ones(2))
    assert capsys.readouterr().out.splitlines() == ["torch 2.0", "ours 2.0"]


SEED: list = []


def _one(t):
    SEED.append(("one", tuple(t.shape)))


def _tagged(t, tag):
    SEED.append(("tagged", tag))


def _phased(t, *, phase):
    SEED.append(("phased", phase))


class _Relu(torch.autograd.Function):
    """The seed's custom autograd function: inspect in forward and in backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        tpd.inspect(x, tag="relu", phase="fwd", fwd=_phased)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        tpd.inspect(grad, tag="relu", fwd=_phased)  # in backward: told phase="bwd"
        tpd.inspect(grad, tag="relu.g", phase="bwd", bwd=_one)
        return grad * (x > 0).float()


def _seed_program(x):
    a = tpd.inspect(x * 2, tag="a", fwd=_one, bwd=_one)           # one-argument callbacks, a header
    b = tpd.inspect(a + 1, fwd=_tagged, bwd=_tagged)              # no tag: no header
    c = tpd.inspect(b, tag="f", phase="fwd", fwd=_phased, bwd=_phased)  # forward only
    d = tpd.inspect(c, tag="g", phase="bwd", fwd=_phased, bwd=_phased)  # backward only
    tpd.inspect(d, "label", fmt="{1}: n={n} s={s} sum={v:.2f}", n=x.shape[0], s="str", v=d.sum())
    tpd.inspect(x.shape, fmt="x.shape={}")                         # constants only (torch's print takes no tuple)
    e = tpd.inspect(d, tag="e")                                    # default print: [e][fwd], [e][bwd]
    h = x * 3
    tpd.inspect(h, tag="unused", bwd=_one)                         # result unused: a warning
    return _Relu.apply(e).sum() + h.sum()


def _seed_run(fn):
    from torchport.checks import inspect_values

    SEED.clear()
    inspect_values._WARNED.clear()
    x = torch.tensor([1.0, -2.0, 3.0, -4.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        fn(x).backward()
        fn(x).backward()
    unused = [w for w in record if "inspect(tag='unused')" in str(w.message)]
    return list(SEED), len(unused), x.grad


SEED_EAGER = [("one", (4,)), ("tagged", "inspect"), ("phased", "fwd"), ("phased", "fwd"),  # relu forward
              ("phased", "bwd"), ("one", (4,)),  # relu backward: relu, relu.g
              ("phased", "bwd"), ("tagged", "inspect"), ("one", (4,))]  # g, inspect, a


# inductor by hand (-m slow): it compiles C++ for seconds, and test_compiled_fullgraph_matches_eager_without_graph_break
# runs inductor's graphs in the default run
@pytest.mark.parametrize("backend", [None, "eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_seed_usage_eager_and_compiled(backend, capsys):
    fn = _seed_program if backend is None else torch.compile(_seed_program, backend=backend, fullgraph=True)
    torch._dynamo.reset()
    try:
        seen, unused, grad = _seed_run(fn)
    finally:
        torch._dynamo.reset()
    assert sorted(seen) == sorted(SEED_EAGER * 2)  # Inductor may reorder independent calls
    if backend is None:
        assert seen == SEED_EAGER * 2
    assert unused == 1  # warned once
    torch.testing.assert_close(grad, torch.tensor([10.0, 6.0, 10.0, 6.0]))  # two passes
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("    values=")]
    expected = ["[a][fwd]", "[f][fwd]", "label: n=4 s=str sum=0.00", "x.shape=torch.Size([4])", "[e][fwd]",
                "  e output", "[relu][fwd]",
                "[relu][bwd]", "[relu.g][bwd]", "[e][bwd]", "  e grad", "[g][bwd]", "[a][bwd]"]
    assert sorted(ln.split(":")[0] if ln.startswith("  e") else ln for ln in lines) == sorted(expected * 2)
    if backend != "inductor":
        assert [ln.split(":")[0] if ln.startswith("  e") else ln for ln in lines] == expected * 2
