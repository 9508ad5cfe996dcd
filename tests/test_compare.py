"""`torchport compare RUN_A RUN_B`: drift between two runs saved by torchport.checks.debug."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from torchport.checks import debug
from torchport.checks.compare import compare_runs
from torchport.cli import app


class Net(nn.Module):
    def __init__(self, extra: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 2)
        self.extra = nn.Identity() if extra else None

    def forward(self, x):
        h = self.act(self.fc1(x))
        if self.extra is not None:
            h = self.extra(h)
        return self.head(self.act(self.fc2(h)))


def _run(path: Path, perturb: float = 0.0, extra: bool = False, dtype=torch.float32) -> Path:
    model = Net(extra).to(dtype)
    if perturb:
        with torch.no_grad():
            model.fc2.weight.add_(perturb)
    torch.manual_seed(1)
    with debug.watch(model, level=debug.Level.SAVE, run_dir=path, grads=True):
        model(torch.randn(4, 8, dtype=dtype)).sum().backward()
    return path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_identical_runs_exit_0(runner, tmp_path):
    a, b = _run(tmp_path / "a"), _run(tmp_path / "b")
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "all within tolerance" in result.stdout and "fc2" in result.stdout
    assert result.stderr == ""


def test_perturbed_module_exits_1_and_is_named_first(runner, tmp_path):
    a, b = _run(tmp_path / "a"), _run(tmp_path / "b", perturb=1e-2)
    result = runner.invoke(app, ["compare", str(a), str(b / "stats.pt")])
    assert result.exit_code == 1, result.output
    assert "first divergent module: fc2 (drift" in result.stdout
    # Loose enough tolerances accept the same runs.
    assert runner.invoke(app, ["compare", str(a), str(b), "--rtol", "10", "--atol", "1"]).exit_code == 0
    js = runner.invoke(app, ["compare", str(a), str(b), "--format", "json"])
    data = json.loads(js.stdout)
    assert js.exit_code == 1 and data["ok"] is False
    assert data["first_divergent"]["key"] == "fc2" and data["first_divergent"]["kind"] == "output"
    statuses = {(r["kind"], r["key"]): r["status"] for r in data["records"]}
    assert statuses[("output", "fc1")] == "ok" and statuses[("output", "head")] == "drift"


def test_missing_module_is_reported(runner, tmp_path):
    a, b = _run(tmp_path / "a"), _run(tmp_path / "b", extra=True)
    result = runner.invoke(app, ["compare", str(a), str(b), "--format", "json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["missing_in_a"] == ["extra", "extra"]  # its output and its gradient
    assert data["missing_in_b"] == [] and data["first_divergent"] is None
    text = runner.invoke(app, ["compare", str(a), str(b)]).stdout
    assert "missing in A: extra, extra (grad)" in text


def test_shape_dtype_and_nan_mismatches_diverge(tmp_path):
    rec = debug.tensor_stats(torch.ones(2, 2)) | {"step": 0, "kind": "output", "key": "m", "name": "m", "call": 0}
    assert compare_runs([rec], [dict(rec)]).ok
    other = debug.tensor_stats(torch.ones(4)) | {"step": 0, "kind": "output", "key": "m"}
    assert compare_runs([rec], [other]).rows[0].status == "shape"
    half = debug.tensor_stats(torch.ones(2, 2, dtype=torch.float16)) | {"step": 0, "kind": "output", "key": "m"}
    assert compare_runs([rec], [half]).rows[0].status == "dtype"
    assert compare_runs([rec], [half], ignore_dtype=True).ok
    nan = debug.tensor_stats(torch.tensor([[1.0, float("nan")], [1.0, 1.0]])) | {"step": 0, "kind": "output",
                                                                                "key": "m"}
    row = compare_runs([rec], [nan]).rows[0]
    assert row.status == "nan/inf" and not row.ok
    # Saved values are compared element-wise even when the stats agree.
    swapped = debug.tensor_stats(torch.tensor([[2.0, 1.0]])) | {"step": 0, "kind": "output", "key": "m"}
    base = debug.tensor_stats(torch.tensor([[1.0, 2.0]])) | {"step": 0, "kind": "output", "key": "m"}
    row = compare_runs([base], [swapped]).rows[0]
    assert row.status == "drift" and row.worst.startswith("value[0]")


def test_bad_input_exits_2_with_one_line_error(runner, tmp_path):
    a = _run(tmp_path / "a")
    result = runner.invoke(app, ["compare", str(a), str(tmp_path / "nope")])
    assert result.exit_code == 2 and "nope" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "stats.pt").write_text("not a torch file")
    result = runner.invoke(app, ["compare", str(a), str(tmp_path / "junk")])
    assert result.exit_code == 2 and result.stderr.startswith("error:")
    assert len(result.stderr.strip().splitlines()) == 1
    torch.save({"something": "else"}, tmp_path / "other.pt")
    result = runner.invoke(app, ["compare", str(a), str(tmp_path / "other.pt")])
    assert result.exit_code == 2 and "not a torchport-debug-values file" in result.stderr


def _zero_grad(key: str, numel: int = 2) -> dict:
    return debug.tensor_stats(torch.zeros(numel)) | {"step": 0, "kind": "grad", "key": key}


def test_zero_gradient_in_one_run_only_is_not_missing(runner, tmp_path):
    out = debug.tensor_stats(torch.ones(2)) | {"step": 0, "kind": "output", "key": "m"}
    result = compare_runs([out], [out, _zero_grad("aux"), _zero_grad("empty", 0)])
    assert result.ok and result.missing_in_a == [] and result.first_divergent is None
    assert [r.status for r in result.rows] == ["ok", "zero grad only in B", "zero grad only in B"]
    assert compare_runs([out, _zero_grad("aux")], [out]).rows[1].status == "zero grad only in A"
    # Not an excuse for anything else: a non-zero gradient, a zero output, or NaNs are still missing.
    nonzero = debug.tensor_stats(torch.tensor([0.0, 1e-9])) | {"step": 0, "kind": "grad", "key": "aux"}
    zero_out = debug.tensor_stats(torch.zeros(2)) | {"step": 0, "kind": "output", "key": "aux"}
    nan = debug.tensor_stats(torch.tensor([0.0, float("nan")])) | {"step": 0, "kind": "grad", "key": "aux"}
    for extra in (nonzero, zero_out, nan):
        assert compare_runs([out], [out, extra]).missing_in_a[0].key == "aux"


class TwoHeads(nn.Module):
    """The ``aux`` output is returned but takes no part in the loss: eager autograd never reaches it,
    a compiled backward gets a zero tangent for it."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Linear(3, 4)
        self.head = nn.Linear(4, 2)
        self.aux = nn.Linear(4, 2)

    def forward(self, x):
        h = self.body(x)
        return self.head(h), self.aux(h)


# inductor by hand (-m slow): it compiles C++ for seconds; test_inspect runs inductor's graphs in the default run
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_eager_vs_compiled_extra_zero_gradients_are_not_missing(runner, tmp_path, backend):
    from torch._dynamo.utils import counters

    x = torch.randn(2, 3)
    for name, compile_it in (("eager", False), (backend, True)):
        model = TwoHeads()
        torch._dynamo.reset()
        counters.clear()
        run = torch.compile(model, backend=backend, fullgraph=True) if compile_it else model
        with debug.watch(run, level=debug.Level.SAVE, run_dir=tmp_path / name, grads=True):
            run(x)[0].sum().backward()
        assert dict(counters["graph_break"]) == {}
    torch._dynamo.reset()
    grads = lambda run: {r["key"] for r in debug.load(tmp_path / run)["records"] if r["kind"] == "grad"}  # noqa: E731
    assert grads(backend) - grads("eager") == {"aux", "<root>.1"}  # what the compiled run adds
    result = runner.invoke(app, ["compare", str(tmp_path / "eager"), str(tmp_path / backend), "--format", "json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 0, result.stdout
    assert data["missing_in_b"] == data["missing_in_a"] == [] and sorted(data["zero_grad_only_in_b"]) == [
        "<root>.1", "aux"]
    text = runner.invoke(app, ["compare", str(tmp_path / backend), str(tmp_path / "eager")]).stdout
    assert "zero gradients only in A (not counted): " in text and "all within tolerance" in text


def test_whole_saved_tensors_are_compared_element_wise(tmp_path):
    model = nn.Linear(8, 100)
    x = torch.randn(2, 8)
    with debug.watch(model, level=1, run_dir=tmp_path / "a", max_values=None):
        model(x)
    with torch.no_grad():  # swap two output units: every statistic stays the same
        model.weight[[0, 1]] = model.weight[[1, 0]]
        model.bias[[0, 1]] = model.bias[[1, 0]]
    with debug.watch(model, level=1, run_dir=tmp_path / "b", max_values=None):
        model(x)
    a, b = debug.load(tmp_path / "a")["records"], debug.load(tmp_path / "b")["records"]
    row = compare_runs(a, b).rows[0]
    assert row.status == "drift" and row.worst.split("]")[0] in ("value[0", "value[1", "value[100", "value[101")


def test_numbers_and_constants_a_module_returned_are_compared():
    def rec(value, key="m.1"):
        return {"step": 0, "kind": "output", "key": key, **debug.value_stats(value)}

    same = [rec(3), rec("a", "m.2"), rec(None, "m.3")]
    assert compare_runs(same, [dict(r) for r in same]).ok
    assert compare_runs([rec(2.0)], [rec(2.5)]).rows[0].status == "drift"  # a number: stats with tolerances
    row = compare_runs([rec("cuda")], [rec("mps")]).rows[0]
    assert (row.status, row.worst) == ("value", "value 'cuda' vs 'mps'")
    assert compare_runs([rec("a")], [rec(None)]).rows[0].status == "dtype"  # str vs NoneType
