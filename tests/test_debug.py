"""torchport.checks.debug: per-module value stats, printed or saved, in eager and compiled code."""

from __future__ import annotations

import io
import math
import os
import re

import forkrun
import pytest
import torch
from torch import nn

from torchport.checks import debug


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


ORDER = ["fc1", "act", "fc2", "<root>"]


def _mlp() -> MLP:
    torch.manual_seed(0)
    return MLP()


def _hook_count(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) for m in model.modules())


def test_stats_match_torch_computations():
    t = torch.tensor([[1.0, -2.0, float("nan")], [float("inf"), 3.0, float("-inf")]])
    s = debug.tensor_stats(t)
    assert (s["shape"], s["dtype"], s["device"], s["numel"]) == ([2, 3], "float32", "cpu", 6)
    assert (s["nan"], s["inf"]) == (1, 2)
    assert math.isnan(s["mean"])
    x = torch.randn(100, 7, dtype=torch.float64)
    s = debug.tensor_stats(x)
    assert s["mean"] == pytest.approx(x.mean().item())
    assert s["std"] == pytest.approx(x.std(correction=0).item())
    assert (s["min"], s["max"]) == (x.min().item(), x.max().item())
    assert s["values"] is None  # 700 elements > 64
    small = debug.tensor_stats(torch.arange(6).reshape(2, 3))  # integer: cast, no crash
    assert small["dtype"] == "int64" and small["mean"] == 2.5 and small["std"] == pytest.approx(1.7078251)
    assert torch.equal(small["values"], torch.arange(6).reshape(2, 3))
    assert debug.tensor_stats(torch.tensor([True, False]))["mean"] == 0.5
    assert math.isnan(debug.tensor_stats(torch.empty(0))["mean"])


def test_print_level_prints_stats_and_small_values(capsys):
    model = _mlp()
    x = torch.randn(2, 4)
    with debug.watch(model, level=debug.Level.PRINT) as w:
        out = model(x)
    text = capsys.readouterr().out
    fc1 = model.fc1(x)
    assert (f"[torchport] fc1 output: shape=(2, 16) dtype=float32 device=cpu numel=32 "
            f"mean={fc1.mean().item():.6g}") in text
    assert f"std={fc1.std(correction=0).item():.6g} nan=0 inf=0" in text
    assert text.count("values=") == 4  # 32 and 6 elements: all printed
    assert torch.equal(out, model(x))  # the hooks do not change the result
    assert [r["key"] for r in w.records] == ORDER

    big = nn.Linear(4, 65)
    with debug.watch(big, level=2):
        big(torch.randn(1, 4))
    text = capsys.readouterr().out
    assert "numel=65" in text and "values=" not in text


def test_names_level_prints_names_only_with_call_index(capsys):
    model = _mlp()
    with debug.watch(model, level=debug.Level.NAMES) as w:
        model(torch.randn(2, 4))
        model.fc1(torch.randn(2, 4))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"[torchport] {n}" for n in ORDER] + ["[torchport] fc1#1"]
    assert w.records == []


def test_off_installs_nothing_and_env_sets_level(monkeypatch, tmp_path, capsys):
    model = _mlp()
    monkeypatch.delenv(debug.ENV_LEVEL, raising=False)
    with debug.watch(model) as w:
        assert w.level is debug.Level.OFF and _hook_count(model) == 0
        model(torch.randn(2, 4))
    assert w.records == [] and capsys.readouterr().out == ""
    monkeypatch.setenv(debug.ENV_LEVEL, "3")
    with debug.watch(model) as w:
        assert w.level is debug.Level.NAMES and _hook_count(model) == 4
    assert _hook_count(model) == 0  # removed by the context
    monkeypatch.setenv(debug.ENV_LEVEL, "print")
    w = debug.watch(model)
    assert w.level is debug.Level.PRINT
    w.remove()  # an active watch also takes debug.inspect reports: leave none behind
    monkeypatch.setenv(debug.ENV_LEVEL, "7")
    with pytest.raises(ValueError, match=debug.ENV_LEVEL):
        debug.watch(model)


def test_remove_unhooks_and_later_calls_record_nothing(tmp_path):
    model = _mlp()
    w = debug.watch(model, level=1, run_dir=tmp_path)
    assert _hook_count(model) == 4 and w.active
    model(torch.randn(2, 4))
    w.remove()
    w.remove()
    assert _hook_count(model) == 0 and not w.active
    model(torch.randn(2, 4))
    assert len(w.records) == 4


def test_save_writes_weights_only_file_with_grads_and_structures(tmp_path):
    class Multi(nn.Module):
        def forward(self, x):
            return x * 2, {"idx": x.argmax(dim=-1), "half": x / 2}

    model = nn.Sequential(nn.Linear(3, 3), Multi())
    x = torch.tensor([[1.0, 2.0, float("inf")]])
    with debug.watch(model, level=debug.Level.SAVE, run_dir=tmp_path / "run", grads=True) as w:
        y, extra = model(x)
        (y.sum() + extra["half"].sum()).backward()
        w.step()
        model(x)
    data = torch.load(tmp_path / "run" / "stats.pt", weights_only=True)
    assert data["format"] == debug.FORMAT and data["version"] == 1
    recs = data["records"]
    keys = [(r["step"], r["kind"], r["key"]) for r in recs]
    assert keys[:5] == [(0, "output", "0"), (0, "output", "1.0"), (0, "output", "1.1.idx"),
                        (0, "output", "1.1.half"), (0, "output", "<root>.0")]
    grads = [k for _, kind, k in keys if kind == "grad"]
    assert set(grads) >= {"0", "1.0", "1.1.half"} and "1.1.idx" not in grads
    g0 = next(r for r in recs if r["kind"] == "grad" and r["key"] == "0")
    assert g0["values"].tolist() == [[2.5, 2.5, 2.5]]  # d(2y + y/2)/dy
    inf_rec = next(r for r in recs if r["key"] == "1.0" and r["kind"] == "output")
    assert inf_rec["inf"] == int(torch.isinf(model[0](x)).sum()) and inf_rec["nan"] == 0
    assert [r["order"] for r in recs] == list(range(len(recs)))
    assert any(r["step"] == 1 and r["key"] == "0" for r in recs)  # call index restarts per step
    assert debug.load(tmp_path / "run")["records"][0]["key"] == "0"


def test_repeated_calls_get_an_index_and_flush_writes(tmp_path):
    lin = nn.Linear(2, 2)
    model = nn.Sequential(lin, nn.Tanh(), lin)
    with debug.watch(model, level=1, run_dir=tmp_path) as w:
        model(torch.randn(1, 2))
        assert debug.flush() == [tmp_path / "stats.pt"]
    assert [r["key"] for r in w.records] == ["0", "1", "0#1", "<root>"]
    assert [r["name"] for r in w.records][2] == "0" and w.records[2]["call"] == 1


def test_runtime_import_does_not_import_debug():
    code = "import sys, torchport.runtime; print('torchport.checks.debug' in sys.modules)"
    out = forkrun.run(["-c", code], cwd=os.getcwd(), env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ torch.compile(fullgraph=True)

@pytest.fixture
def dynamo():
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    yield counters
    torch._dynamo.reset()


# torch.compile(module) runs the root module's hooks outside the compiled forward frame
# (OptimizedModule: "Invoke hooks outside of dynamo then pickup the inner frame"), so the root's hook
# is a second, separately compiled graph: two graphs, no graph break.
_GRAPHS = 2


def _assert_same_records(compiled, eager):
    assert [(r["kind"], r["key"], r["shape"], r["dtype"]) for r in compiled] == \
        [(r["kind"], r["key"], r["shape"], r["dtype"]) for r in eager]
    for c, e in zip(compiled, eager):
        for stat in ("mean", "std", "min", "max"):
            assert c[stat] == pytest.approx(e[stat], rel=1e-4, abs=1e-6), (c["key"], stat)


def test_save_under_inductor_fullgraph_matches_eager_without_graph_break(dynamo, tmp_path):
    model = _mlp()
    x = torch.randn(5, 4)
    with debug.watch(model, level=1, run_dir=tmp_path / "eager", grads=True) as eager:
        model(x).sum().backward()
    compiled = torch.compile(model, fullgraph=True, backend="inductor")
    with debug.watch(compiled, level=1, run_dir=tmp_path / "compiled", grads=True) as w:  # same names
        compiled(x).sum().backward()
        compiled(x).sum().backward()
    assert dict(dynamo["graph_break"]) == {} and dynamo["stats"]["unique_graphs"] <= _GRAPHS
    assert len(w.records) == 2 * len(eager.records) == 16
    assert w.records[8]["key"] == "fc1#1"  # the call counter lives outside the graph
    assert {r["kind"] for r in w.records} == {"output", "grad"}
    _assert_same_records(w.records[:8], eager.records)
    assert torch.load(tmp_path / "compiled" / "stats.pt", weights_only=True)["records"][0]["key"] == "fc1"


@pytest.mark.parametrize("level", [debug.Level.PRINT, debug.Level.NAMES])
def test_print_under_compile_fullgraph_without_graph_break(dynamo, capsys, level):
    model = _mlp()
    x = torch.randn(2, 4)
    with debug.watch(model, level=level):
        model(x)
    eager_text = capsys.readouterr().out
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    with debug.watch(model, level=level):
        compiled(x)
    assert dict(dynamo["graph_break"]) == {} and dynamo["stats"]["unique_graphs"] <= _GRAPHS
    compiled_text = capsys.readouterr().out
    assert compiled_text.splitlines()[0].startswith("[torchport] fc1")
    if level == debug.Level.NAMES:
        assert compiled_text == eager_text
    else:
        assert compiled_text.count("mean=") == 4 and compiled_text.count("values=") == 4


# ------------------------------------------------------------------ name filters and whole tensors

class Deep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.decoder(self.encoder(x)))


def _hooked(names) -> list[str]:
    model = Deep()
    with debug.watch(model, level=debug.Level.PRINT, stream=io.StringIO(), names=names) as w:
        model(torch.randn(1, 4))
    return [r["key"] for r in w.records]


def test_names_filter_globs_regex_callable_and_env(monkeypatch):
    monkeypatch.delenv(debug.ENV_NAMES, raising=False)
    assert _hooked(None) == ["encoder.0", "encoder.1", "encoder", "decoder.0", "decoder.1", "decoder", "head",
                             "<root>"]
    assert _hooked("encoder.*") == ["encoder.0", "encoder.1"]  # a glob matches the whole name
    assert _hooked("*.0, head") == ["encoder.0", "decoder.0", "head"]  # comma-separated, as the env variable
    assert _hooked("re:^(en|de)coder$") == ["encoder", "decoder"]
    assert _hooked(re.compile(r"\.1")) == ["encoder.1", "decoder.1"]  # a compiled pattern: search
    assert _hooked(["head", re.compile("^<")]) == ["head", "<root>"]
    assert _hooked(lambda name: name.startswith("dec")) == ["decoder.0", "decoder.1", "decoder"]
    with pytest.warns(UserWarning, match="matched no module of Deep"):
        assert _hooked([]) == []
    monkeypatch.setenv(debug.ENV_NAMES, "decoder.*")
    assert _hooked(None) == ["decoder.0", "decoder.1"]
    with pytest.raises(ValueError, match="bad name filter"):
        debug.watch(Deep(), level=1, names="re:(")


def test_max_values_saves_whole_tensors_and_prints_at_most_64(tmp_path, capsys):
    model = nn.Sequential(nn.Linear(4, 100), nn.Linear(100, 2))
    x = torch.randn(3, 4)
    with debug.watch(model, level=debug.Level.PRINT, run_dir=tmp_path, max_values=None, grads=True) as w:
        model(x).sum().backward()
    recs = {(r["kind"], r["key"]): r for r in debug.load(tmp_path)["records"]}
    assert torch.equal(recs[("output", "0")]["values"], model[0](x).detach())  # 300 elements, whole
    assert recs[("grad", "0")]["values"].shape == (3, 100)
    assert capsys.readouterr().out.count("values=") == 4  # only the 3x2 output and its gradient (x2)
    with debug.watch(model, level=debug.Level.PRINT, stream=io.StringIO(), max_values=0) as w:
        model(x)
    assert all(r["values"] is None for r in w.records)
    with pytest.raises(ValueError, match="max_values"):
        debug.watch(model, level=1, max_values=-1)


def test_names_filter_under_compile_without_graph_break(dynamo):
    model = _mlp()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    with debug.watch(compiled, level=debug.Level.PRINT, stream=io.StringIO(), grads=True, names="fc*") as w:
        compiled(torch.randn(2, 4)).sum().backward()
    assert dict(dynamo["graph_break"]) == {}
    assert [(r["kind"], r["key"]) for r in w.records] == [("output", "fc1"), ("output", "fc2"), ("grad", "fc2"),
                                                          ("grad", "fc1")]


def test_names_filter_ignores_case_as_inductors_and_warns_when_nothing_matches(monkeypatch):
    monkeypatch.delenv(debug.ENV_NAMES, raising=False)
    assert _hooked("ENCODER.0,Head") == ["encoder.0", "head"]
    assert _hooked("re:^DEC.*1$") == ["decoder.1"]
    with pytest.warns(UserWarning, match=r"the name filter 'encodr\.\*' matched no module of Deep"):
        assert _hooked("encodr.*") == []
    with pytest.warns(UserWarning):  # a compiled pattern keeps its own flags
        assert _hooked(re.compile("^HEAD$")) == []
    assert _hooked(re.compile("^HEAD$", re.IGNORECASE)) == ["head"]


# inductor by hand (-m slow): it compiles C++ for seconds, and the inductor test above covers its graphs
@pytest.mark.parametrize("backend", ["eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_watch_records_a_model_compiled_and_run_before_it_began(dynamo, backend):
    model = _mlp()
    x = torch.randn(2, 4)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    step = torch.compile(lambda t: model(t).sum(), fullgraph=True, backend=backend)  # a compiled caller
    expected = compiled(x)
    step(x)  # both compiled with no hook: Dynamo does not guard on hooks by default
    with debug.watch(compiled, level=debug.Level.SAVE, grads=True) as w:
        torch.testing.assert_close(compiled(x), expected)
        step(x.requires_grad_()).backward()
    assert [(r["kind"], r["key"]) for r in w.records] == [
        ("output", k) for k in ORDER] + [("output", f"{k}#1") for k in ORDER] + [
        ("grad", k) for k in ("<root>", "fc2", "act", "fc1")]  # grads count apart
    assert dict(dynamo["graph_break"]) == {}
    compiled(x)  # the watch is over: recompiled without its hooks, nothing recorded
    assert len(w.records) == 12


# ------------------------------------------------------------------ non-tensor outputs (issue 30)

class Mixed(nn.Module):
    """Returns what real modules return besides tensors: sizes, scalars, flags, names, None."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        y = self.fc(x)
        return y, x.shape[0], 0.5, True, "mixed", None


MIXED_KEYS = [("output", "fc"), ("output", "<root>.0"), ("output", "<root>.1"), ("output", "<root>.2"),
              ("output", "<root>.3"), ("output", "<root>.4"), ("output", "<root>.5")]


# inductor by hand (-m slow), as the test above; test_inspect runs inductor's graphs in the default run
@pytest.mark.parametrize("backend", [None, "eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_watch_records_numbers_and_constants_eager_and_compiled(dynamo, backend, tmp_path):
    model = Mixed()
    run = model if backend is None else torch.compile(model, backend=backend, fullgraph=True)
    x = torch.randn(3, 4)
    with debug.watch(run, level=debug.Level.SAVE, run_dir=tmp_path) as w:
        out = run(x)
        run(x)
    assert out[1:] == (3, 0.5, True, "mixed", None)  # returned unchanged
    assert dict(dynamo["graph_break"]) == {}
    keys = [(r["kind"], r["key"]) for r in w.records]
    if backend == "inductor":  # Inductor may run independent record ops in another order than written
        keys = sorted(keys[:7]) + sorted(keys[7:])
        assert keys == sorted(MIXED_KEYS) + sorted((k, n + "#1") for k, n in MIXED_KEYS)
    else:
        assert keys == MIXED_KEYS + [(k, n + "#1") for k, n in MIXED_KEYS]
    recs = {r["key"]: r for r in debug.load(tmp_path)["records"]}  # weights_only loads them
    assert [(recs[f"<root>.{i}"]["value"], recs[f"<root>.{i}"]["type"]) for i in range(1, 6)] == [
        (3, "int"), (0.5, "float"), (True, "bool"), ("mixed", "str"), (None, "NoneType")]
    assert (recs["<root>.1"]["dtype"], recs["<root>.1"]["mean"], recs["<root>.2"]["values"].item()) == \
        ("int64", 3.0, 0.5)  # a number is also a 0-d tensor: compare checks it with tolerances


def test_print_shows_the_value_of_non_tensor_outputs(capsys):
    model = Mixed()
    with debug.watch(model, level=debug.Level.PRINT):
        model(torch.randn(3, 4))
    text = capsys.readouterr().out.splitlines()
    assert text[-5:] == ["[torchport] <root>.1 output: value=3 (int)", "[torchport] <root>.2 output: value=0.5 (float)",
                         "[torchport] <root>.3 output: value=True (bool)",
                         "[torchport] <root>.4 output: value='mixed' (str)",
                         "[torchport] <root>.5 output: value=None (NoneType)"]
