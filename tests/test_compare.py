"""`torchport compare RUN_A RUN_B`: drift between two runs saved by torchport.runtime.debug."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from torchport.cli import app
from torchport.compare import compare_runs
from torchport.runtime import debug


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
    nan = debug.tensor_stats(torch.tensor([[1.0, float("nan")], [1.0, 1.0]])) | {"step": 0, "kind": "output", "key": "m"}
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
