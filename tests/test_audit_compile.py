"""Audit under torch.compile: no Unsupported error, no graph break, leftovers at their own line.

One migrated program (the TORCHPORT_AUDIT=1 audit is per process) runs in a subprocess,
started when this module's tests start so that it overlaps the in-process ones: ``model.py``
is code as ``torchport migrate`` writes it, ``train.py`` is written for CUDA and migrated by
the test, with ``getattr(torch, "cuda")`` uses the static pass cannot see. Both compile with
``fullgraph=True`` under eager and aot_eager, and Inductor compiles one tiny function of
views only (no kernel, so no C++ build).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import forkrun
import pytest
import torch

from torchport.checks import audit as audit_module
from torchport.checks.audit import Audit
from torchport.pipeline.engine import migrate_file

HERE = os.path.abspath(__file__)
ROOT = str(Path(__file__).resolve().parent.parent)

# (1) code as `torchport migrate` writes it: must report nothing and add no graph break
MODEL = """\
import torch
from torchport import runtime as tp


def step(x):
    y = x.to(tp.device()) * 2 + torch.zeros(2, device=tp.device())
    if tp.is_available():
        y = y - 1
    return y.to(tp.device(0)).to(tp.device_str())


def tiny(x):
    return x.to(tp.device()).to(tp.device_str())[1:]


def run():
    x = torch.ones(2)
    for backend in ("eager", "aot_eager"):
        torch.compile(step, fullgraph=True, backend=backend)(x)
    torch.compile(tiny, fullgraph=True, backend="inductor")(x)
    return torch._dynamo.explain(step)(x).graph_break_count
"""

# (2) code written for CUDA, migrated by the test; the getattr(torch, "cuda") uses are left over
TRAIN = """\
import torch
from torch._dynamo.utils import counters

import model


def step(x):
    y = x.cuda() * 2 + torch.zeros(2, device="cuda")
    if getattr(torch, "cuda").is_available():  # LEFTOVER-step
        y = y + 1
    return y.to("cuda:0")


def tiny(x):
    if getattr(torch, "cuda").is_available():  # LEFTOVER-tiny
        x = x.t()
    return x.cuda()[1:]


print("model graph breaks", model.run(), sum(counters["graph_break"].values()))
for backend in ("eager", "aot_eager"):
    compiled = torch.compile(step, fullgraph=True, backend=backend)
    compiled(torch.ones(2)), compiled(torch.ones(2))
torch.compile(tiny, fullgraph=True, backend="inductor")(torch.ones(2, 2))
torch.cuda.synchronize()
cuda = getattr(torch, "cuda")
print("done", cuda.device_count() >= 0, sum(counters["graph_break"].values()))  # LEFTOVER-eager
"""


PLAIN = 'import sys\nimport torch\nprint(sys.argv[1:])\ngetattr(torch, "cuda").is_available()\nsys.exit(3)\n'


def _result(run: forkrun.Started) -> tuple[int, str, str]:
    """``(returncode, stdout, stderr)`` of a program :func:`programs` started."""
    done = run.wait(timeout=300)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module", autouse=True)
def programs(tmp_path_factory):
    """Starts both subprocess programs at module set-up, so that they overlap the other tests.

    ``"train"``: the migrated program under TORCHPORT_AUDIT=1 (its migrated ``train.py`` source
    is ``programs["train_source"]``); ``"plain"``: a program that never imports the runtime,
    under ``python -m torchport.checks.audit``.
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT,
           "PYTHONWARNINGS": "ignore::UserWarning"}  # torch warns on stderr when numpy is missing
    env.pop("TORCHPORT_AUDIT", None)
    folder = tmp_path_factory.mktemp("migrated")
    (folder / "model.py").write_text(MODEL)
    (folder / "train.py").write_text(TRAIN)
    migrated = migrate_file(folder / "train.py").migrated
    assert migrated and "x.to(tp.device())" in migrated and 'getattr(torch, "cuda")' in migrated
    (folder / "train.py").write_text(migrated)
    started = {"train_source": migrated}
    started["train"] = forkrun.start(["train.py"], cwd=folder, env={
        **env, "TORCHPORT_AUDIT": "1", "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        "TORCHINDUCTOR_COMPILE_THREADS": "1"})
    folder = tmp_path_factory.mktemp("plain")
    (folder / "plain.py").write_text(PLAIN)
    started["plain"] = forkrun.start(["-m", "torchport.checks.audit", "plain.py", "a", "-b"], cwd=folder, env=env)
    yield started
    for run in (started["train"], started["plain"]):
        run.kill()


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.slow  # inductor compiles C++ for seconds; the fullgraph audit test covers compiled code by default
def test_device_request_in_compiled_code_is_recorded_when_traced_not_in_generated_code(fresh_dynamo, monkeypatch):
    # Off a CUDA machine a CUDA device cannot reach a compiled graph, so "meta" stands in for it
    cuda_spec = audit_module._cuda_spec
    monkeypatch.setattr(audit_module, "_cuda_spec",
                        lambda spec, strict: repr(spec) if spec == "meta" else cuda_spec(spec, strict))

    def to_meta(x):
        return x.to("meta") + torch.zeros(2, device="meta")  # MARK-meta

    x = torch.ones(2)
    with Audit(report=False) as audit:
        for backend in ("eager", "aot_eager"):
            compiled = torch.compile(to_meta, fullgraph=True, backend=backend)
            compiled(x), compiled(x)  # the second call runs only the compiled graph
        explained = torch._dynamo.explain(to_meta)(x)
    assert explained.graph_break_count == 0
    line = next(i for i, text in enumerate(Path(HERE).read_text().splitlines(), 1)
                if "MARK-meta" in text and "next(" not in text)
    assert {(f.code, f.api, f.file, f.line) for f in audit.findings} == {
        ("TPA03", "Tensor.to('meta')", HERE, line),
        ("TPA03", "torch.zeros(device='meta')", HERE, line),
    }
    assert all(1 <= f.count <= 3 for f in audit.findings)  # once per compilation, not per call


def test_python_m_audit_runs_a_program_that_never_imports_the_runtime(programs):
    code, out, err = _result(programs["plain"])
    assert (code, out) == (3, "['a', '-b']\n"), err
    assert err.splitlines() == [
        "plain.py:4: TPA01 torch.cuda.is_available touched at run time",
        "[torchport audit] 1 run-time CUDA use site(s), 1 use(s)",
    ]


def test_python_m_audit_usage(capsys):
    for argv, code in (([], 2), (["-m"], 2), (["--help"], 0)):
        with pytest.raises(SystemExit) as exit_info:
            audit_module.main(argv)
        assert exit_info.value.code == code
    out, err = capsys.readouterr()
    assert err.count("usage: python -m torchport.checks.audit") == 2 and out.startswith("usage:")


def test_migrated_code_compiles_fullgraph_with_no_graph_break_under_audit(programs):
    code, out, err = _result(programs["train"])
    assert code == 0, err
    assert out.splitlines()[0] == "model graph breaks 0 0"
    assert "model.py" not in err and "<" not in err.replace("[torchport audit]", ""), err


def test_leftover_inside_compiled_code_is_reported_at_its_own_line(programs):
    code, out, err = _result(programs["train"])
    assert code == 0, err
    assert out.splitlines()[1] == "done True 0"  # ran to the end, no graph break
    lines = programs["train_source"].splitlines()

    def at(marker: str) -> int:
        return next(i for i, text in enumerate(lines, 1) if marker in text)

    expected = [
        (at("LEFTOVER-step"), "torch.cuda.is_available"),  # compiled with eager and aot_eager
        (at("LEFTOVER-tiny"), "torch.cuda.is_available"),  # compiled with inductor
        (at("LEFTOVER-eager"), "torch.cuda.device_count"),  # not compiled
    ]
    report = err.splitlines()
    found = [re.fullmatch(r"train\.py:(\d+): TPA01 (\S+) touched at run time( \(\d+ times\))?", text)
             for text in report[:-1]]
    assert [m and (int(m[1]), m[2]) for m in found] == expected, err
    assert report[-1].startswith("[torchport audit] 3 run-time CUDA use site(s)"), err
