"""DeviceOpTrace (torchport.checks.trace) and the `torchport trace` command."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchport.checks import trace as trace_module
from torchport.checks import trace_cli
from torchport.checks.trace import DeviceOpTrace, TraceSummary, op_names

HERE = os.path.abspath(__file__)
ROOT = str(Path(__file__).resolve().parent.parent)


def run(fn, **kw):
    """Run ``fn`` under a DeviceOpTrace writing to a buffer; return (buffer text, tracer)."""
    buf = io.StringIO()
    kw.setdefault("summary", False)
    with DeviceOpTrace(file=buf, **kw) as tracer:
        fn()
    return buf.getvalue(), tracer


def headers(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[DeviceOpTrace]")]


def test_header_line_is_exactly_pt_cpus():
    text, _ = run(lambda: torch.randn(2), include_ops=["randn"])
    assert headers(text) == ["[DeviceOpTrace] PyTorch op on cpu: aten.randn.default"]


def test_reports_go_to_stderr_by_default(capsys):
    with DeviceOpTrace(include_ops=["randn"], summary=False):
        torch.randn(2)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[0] == "[DeviceOpTrace] PyTorch op on cpu: aten.randn.default"


@pytest.mark.parametrize("name", ["aten.randn.default", "aten::randn", "randn.default", "randn"])
def test_include_matches_the_four_name_forms(name):
    text, tracer = run(lambda: (torch.randn(2), torch.ones(2) + 1), include_ops=[name])
    assert headers(text) == ["[DeviceOpTrace] PyTorch op on cpu: aten.randn.default"]
    assert tracer.summary().hits_per_op == {"aten.randn.default": 1}


@pytest.mark.parametrize("name", ["aten.randn.default", "aten::randn", "randn.default", "randn"])
def test_exclude_matches_the_four_name_forms(name):
    text, tracer = run(lambda: (torch.randn(2), torch.ones(2)), exclude_ops=[name])
    assert "aten.randn.default" not in text
    assert "aten.randn.default" not in tracer.summary().hits_per_op
    assert tracer.summary().hits_per_op  # ones still reported


def test_namespace_alone_is_not_a_name():
    # pt-cpu's variant set contains "aten", which matches every op; ours does not.
    assert "aten" not in op_names(torch.ops.aten.randn.default)
    assert {"aten::add.Tensor", "add.Tensor", "add"} <= op_names(torch.ops.aten.add.Tensor)


def test_other_device_is_not_reported():
    text, tracer = run(lambda: torch.randn(2) * 2, device="meta")
    assert text == ""
    s = tracer.summary()
    assert s.hits == 0 and s.total_ops == 2 and s.ops_per_device == {"cpu": 2}


def test_device_type_matches_any_index_and_index_only_its_own():
    def work():
        torch.empty(2, device="meta:0")
        torch.empty(2, device="meta")

    # "meta" tensors carry index None; check the rule on the matcher with indexed devices.
    assert run(work, device="meta")[1].summary().hits == 2
    by_type = DeviceOpTrace("cuda")
    assert by_type._matches(torch.device("cuda:0")) and by_type._matches(torch.device("cuda:1"))
    assert not by_type._matches(torch.device("cpu"))
    by_index = DeviceOpTrace("cuda:0")
    assert by_index._matches(torch.device("cuda:0")) and not by_index._matches(torch.device("cuda:1"))
    assert DeviceOpTrace("cpu:0")._matches(torch.device("cpu"))  # cpu tensors count as index 0


def test_factory_device_argument_is_counted():
    text, tracer = run(lambda: (torch.zeros(3, device="meta"), torch.randn(2, device="meta")), device="meta")
    s = tracer.summary()
    assert s.factories == 2 and s.hits == 2
    assert s.hits_per_op == {"aten.zeros.default": 1, "aten.randn.default": 1}
    # a meta factory is not a cpu hit
    assert run(lambda: torch.zeros(3, device="meta"), device="cpu")[1].summary().hits == 0


def test_print_once_prints_first_hit_only():
    text, tracer = run(lambda: (torch.randn(2), torch.ones(2), torch.randn(2)), print_once=True)
    assert headers(text) == ["[DeviceOpTrace] PyTorch op on cpu: aten.randn.default"]
    assert tracer.summary().hits == 3  # counting is not limited


def test_once_per_op_and_per_site():
    def work():
        for _ in range(3):
            torch.randn(2)
        torch.randn(2)
        torch.ones(2)

    assert len(headers(run(work, once="op")[0])) == 2
    assert len(headers(run(work, once="site")[0])) == 3  # loop line, next line, ones
    assert len(headers(run(work)[0])) == 5
    with pytest.raises(ValueError):
        DeviceOpTrace(once="sometimes")


class Square(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.linear(x, x)  # MARK-forward


def test_stack_is_trimmed_to_user_frames():
    # frames: forward (here) <- torch's Module.__call__ <- the lambda (here) <- run (here) ...
    text, _ = run(lambda: Square()(torch.ones(2, 2)), include_ops=["mm", "addmm", "matmul"])
    lines = text.splitlines()
    assert lines[0].startswith("[DeviceOpTrace] PyTorch op on cpu: aten.")
    assert lines[1] == f'  File "{HERE}", line {Square.forward.__code__.co_firstlineno + 1}, in forward'
    assert lines[3].startswith(f'  File "{HERE}", line ') and "<lambda>" in lines[3]
    frames = [line for line in lines if line.startswith("  File ")]
    torch_dir = os.path.dirname(torch.__file__)
    assert not any(torch_dir in f or "checks/trace.py" in f for f in frames)


def test_stack_limit_and_quiet():
    text, _ = run(lambda: torch.randn(2), stack_limit=0)
    assert text.splitlines() == ["[DeviceOpTrace] PyTorch op on cpu: aten.randn.default"]
    text, tracer = run(lambda: torch.randn(2), quiet=True)
    assert text == "" and tracer.summary().hits == 1


def test_summary_counts_and_call_sites():
    def work():
        x = torch.randn(4)  # line A
        for _ in range(2):
            x = x + 1  # line B
        return x

    buf = io.StringIO()
    with DeviceOpTrace(quiet=True, file=buf) as tracer:
        work()
    s = tracer.summary()
    line_a = work.__code__.co_firstlineno + 1
    assert s.total_ops == 3 and s.hits == 3 and s.factories == 1
    assert s.ops_per_device == {"cpu": 3}
    assert s.hits_per_op == {"aten.randn.default": 1, "aten.add.Tensor": 2}
    assert s.call_sites == {f"{HERE}:{line_a}": 1, f"{HERE}:{line_a + 2}": 2}
    assert s.top_sites(1) == [(f"{HERE}:{line_a + 2}", 2)]
    printed = buf.getvalue().splitlines()
    assert printed[0] == "[DeviceOpTrace] summary: 3 ops dispatched, 3 matched on cpu (factory calls: 1)"
    assert printed[1] == "  ops per device: cpu 3"
    assert TraceSummary.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_disabled_is_never_pushed():
    buf = io.StringIO()
    with DeviceOpTrace(enabled=False, file=buf) as tracer:
        torch.randn(2)
        assert not torch._C._len_torch_dispatch_stack()
    assert buf.getvalue() == "" and tracer.summary().total_ops == 0


def test_op_that_raises_is_still_reported():
    a, b = torch.ones(2), torch.ones(3)
    buf = io.StringIO()
    with pytest.raises(RuntimeError):
        with DeviceOpTrace(file=buf, summary=False):
            a + b
    assert headers(buf.getvalue()) == ["[DeviceOpTrace] PyTorch op on cpu: aten.add.Tensor"]


# -- the CLI -------------------------------------------------------------------

def test_child_command_shapes():
    boot = trace_cli.BOOTSTRAP
    py = sys.executable
    assert trace_cli.child_command(["python", "s.py", "--flag"]) == [py, "-c", boot, "script", "s.py", "--flag"]
    assert trace_cli.child_command(["s.py"]) == [py, "-c", boot, "script", "s.py"]
    assert trace_cli.child_command(["/x/python3", "-u", "-X", "dev", "-m", "pkg", "a"]) == [
        "/x/python3", "-u", "-X", "dev", "-c", boot, "module", "pkg", "a"]
    assert trace_cli.child_command(["python", "-c", "print(1)", "z"]) == [py, "-c", boot, "code", "print(1)", "z"]
    for bad in ([], ["python"], ["python", "-"], ["python", "-m"]):
        with pytest.raises(ValueError):
            trace_cli.child_command(bad)
    # the CLI keeps its own copies so it never imports torch
    assert (trace_cli.BOOTSTRAP, trace_cli.CHILD_ENV) == (trace_module.BOOTSTRAP, trace_module.CHILD_ENV)


SCRIPT = """\
import sys
import torch

x = torch.randn(3)
y = x * 2
getattr(torch, "cuda").is_available()
print("args:", sys.argv[1:])
sys.exit(3)
"""


def test_cli_end_to_end(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out_json = tmp_path / "out.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT, "COLUMNS": "120",
           "PYTHONWARNINGS": "ignore::UserWarning"}  # torch warns on stderr when numpy is missing
    env.pop("TORCHPORT_AUDIT", None)
    proc = subprocess.run(
        [sys.executable, "-m", "torchport", "trace", "--audit", "--json", str(out_json),
         "--", "python", str(script), "--flag", "v"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 3, proc.stderr  # the script's exit code
    assert "args: ['--flag', 'v']" in proc.stdout
    err = proc.stderr.splitlines()
    assert err[0] == "[DeviceOpTrace] PyTorch op on cpu: aten.randn.default"
    assert err[1] == f'  File "{script}", line 4, in <module>'
    assert "torchport trace: 2 ops dispatched, 2 matched on cpu (factory calls: 1)" in proc.stderr
    assert "script.py:6: TPA01 torch.cuda.is_available touched at run time" in proc.stderr
    result = json.loads(out_json.read_text())
    assert result["trace"]["hits_per_op"] == {"aten.randn.default": 1, "aten.mul.Tensor": 1}
    assert result["trace"]["call_sites"] == {f"{script}:4": 1, f"{script}:5": 1}
    assert [(f["code"], f["api"], f["line"]) for f in result["audit"]] == [("TPA01", "torch.cuda.is_available", 6)]
    assert result["compiled"] == []


def test_cli_usage_error_and_include(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from torchport.cli import app

    result = CliRunner().invoke(app, ["trace", "--", "python", "-"])
    assert result.exit_code == 2
    result = CliRunner().invoke(app, ["trace", "--bogus", "--", "python", "s.py"])
    assert result.exit_code == 2 and "unknown option --bogus" in result.output
    # --include/--no-stacks reach the child through its settings; run it in-process.
    seen = {}

    def fake_popen(argv, env):
        seen["argv"], seen["cfg"] = argv, json.loads(env[trace_cli.CHILD_ENV])
        with open(seen["cfg"]["out"], "w") as fh:
            json.dump({"trace": TraceSummary("cpu").to_dict()}, fh)

        class Done:
            def wait(self):
                return 0
        return Done()

    monkeypatch.setattr(trace_cli.subprocess, "Popen", fake_popen)
    result = CliRunner().invoke(app, ["trace", "--include", "randn", "--no-stacks", "--once", "op",
                                      "--", "python", "s.py", "--flag"])
    assert result.exit_code == 0, result.output
    assert seen["argv"][-3:] == ["script", "s.py", "--flag"]
    assert seen["cfg"]["include"] == ["randn"] and seen["cfg"]["stacks"] is False and seen["cfg"]["once"] == "op"


def test_a_program_that_compiles_is_told_it_is_traced_as_eager_code():
    import io

    from rich.console import Console

    from torchport.checks import trace
    from torchport.checks.trace_cli import print_report

    state = trace._watch_compile()
    try:
        fn = torch.compile(lambda t: t + 1, backend="eager")  # what the traced program calls
        model = torch.nn.Linear(2, 2)
        model.compile(backend="eager")  # Module.compile calls torch.compile
    finally:
        torch.compile = state.pop("original")
    line = sys._getframe().f_lineno
    assert state["sites"] == [f"{__file__}:{line - 5}", f"{__file__}:{line - 3}"] and callable(fn)
    out = io.StringIO()
    summary = trace.TraceSummary("cpu").to_dict()
    print_report({"trace": summary, "compiled": state["sites"]}, Console(file=out, width=200))
    assert f"test_trace.py:{line - 5} calls torch.compile: torchport trace runs it as eager code" in out.getvalue()
