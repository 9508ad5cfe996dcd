"""`torchport verify PATH -- CMD`: copies, migration, runs, per-test comparison, reports, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchport.cli import app
from torchport.verify import classify, parse_junit, pytest_index, with_junit

CUDA_MODULE = """\
import torch


def make():
    return torch.ones(2).cuda() * 2


def device():
    return torch.device("cuda")
"""

CUDA_TESTS = """\
import mod


def test_make():
    assert mod.make().sum().item() == 4
    assert mod.device().type in ("cpu", "cuda", "mps", "xpu")


def test_plain():
    assert 1 + 1 == 2
"""

# Exits 1 on a CPU-only machine before the port (`.cuda()` raises), 0 after; prints its arguments.
CUDA_SCRIPT = """\
import sys
import torch

print("argv:", sys.argv[1:])
try:
    torch.zeros(1).cuda()
except (AssertionError, RuntimeError) as exc:
    print("no cuda:", exc)
    sys.exit(1)
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under ``root`` with its bytes and mode: to prove the tree was not touched."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            found[rel] = (b"" if path.is_dir() else path.read_bytes(), path.stat().st_mode)
    return found


def _verify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["verify", *args])
    return result.exit_code, result.output


@pytest.fixture
def cuda_project(tmp_path: Path) -> Path:
    project = _write(tmp_path / "proj", {"mod.py": CUDA_MODULE, "tests/__init__.py": "", "conftest.py": "",
                                         "tests/test_mod.py": CUDA_TESTS, "run.sh": "#!/bin/sh\nexit 0\n"})
    (project / "run.sh").chmod(0o755)
    (project / "__pycache__").mkdir()  # not copied
    (project / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    return project


def test_pytest_project_fixed_test_and_reports(cuda_project: Path, tmp_path: Path) -> None:
    before = _snapshot(cuda_project)
    reports = tmp_path / "reports"
    code, output = _verify(str(cuda_project), "--report-dir", str(reports), "--",
                           sys.executable, "-m", "pytest", "-q")
    assert code == 0, output
    assert "IMPROVED" in output and "test_make" in output

    report = json.loads((reports / "verify.json").read_text())
    outcomes = {t["id"]: (t["original"], t["migrated"], t["change"]) for t in report["tests"]}
    assert outcomes == {"tests.test_mod::test_make": ("failed", "passed", "fixed"),
                        "tests.test_mod::test_plain": ("passed", "passed", "unchanged")}
    assert report["verdict"] == "improved" and report["exit_code"] == 0
    assert report["counts"]["fixed"] == 1 and report["counts"]["broken"] == 0
    assert report["original"]["exit_code"] == 1 and report["migrated"]["exit_code"] == 0
    assert report["migration"]["exit_code"] == 0 and "files changed" in report["migration"]["stderr_tail"]
    assert report["original"]["duration_s"] > 0
    assert any("--junitxml=" in a for a in report["original"]["command"])
    assert report["command"] == [sys.executable, "-m", "pytest", "-q"]

    md = (reports / "verify.md").read_text()
    assert "tests.test_mod::test_make` | failed | passed | fixed" in md
    assert "Verdict: improved" in md
    assert _snapshot(cuda_project) == before  # byte for byte, modes included, nothing added


def test_port_that_breaks_a_test_exits_1(tmp_path: Path) -> None:
    # The test reads the source: it passes before the port and fails after it, so the port "broke" it.
    project = _write(tmp_path / "proj", {
        "mod.py": "def f(x):\n    return x.cuda()\n",
        "test_src.py": "from pathlib import Path\n\n\ndef test_source_mentions_cuda():\n"
                       "    assert '.cuda()' in Path('mod.py').read_text()\n",
    })
    code, output = _verify(str(project), "--report-dir", str(tmp_path / "r"), "--", sys.executable, "-m", "pytest")
    assert code == 1, output
    report = json.loads((tmp_path / "r" / "verify.json").read_text())
    assert report["verdict"] == "broken"
    assert [t["change"] for t in report["tests"]] == ["broken"]


def test_script_exit_codes_and_flags_after_double_dash(tmp_path: Path) -> None:
    project = _write(tmp_path / "proj", {"script.py": CUDA_SCRIPT, "run.sh": "#!/bin/sh\n", "data/ro.txt": "x\n",
                                         ".venv/pyvenv.cfg": "", "__pycache__/x.pyc": "", ".git/HEAD": ""})
    (project / "run.sh").chmod(0o755)
    (project / "data" / "ro.txt").chmod(0o444)
    (project / "data").chmod(0o555)  # a read-only folder: the copies must still be writable and removable
    reports = tmp_path / "r"
    try:
        code, output = _verify(str(project), "--keep", "--report-dir", str(reports), "--",
                               sys.executable, "script.py", "--timeout", "5", "-x")
    finally:
        (project / "data").chmod(0o755)
    assert code == 0, output
    report = json.loads((reports / "verify.json").read_text())
    workdir = Path(report["workdir"])
    try:
        for side in ("original", "migrated"):
            copy = workdir / side
            assert sorted(p.name for p in copy.iterdir()) == ["data", "run.sh", "script.py"]
            assert (copy / "run.sh").stat().st_mode & 0o777 == 0o755
            assert (copy / "data" / "ro.txt").stat().st_mode & 0o777 == 0o444
        assert "tp.device()" in (workdir / "migrated" / "script.py").read_text()
        assert ".cuda()" in (workdir / "original" / "script.py").read_text()
    finally:
        shutil.rmtree(workdir)
    assert (report["original"]["exit_code"], report["migrated"]["exit_code"]) == (1, 0)
    assert report["verdict"] == "improved" and report["tests"] == []
    # verify's own --timeout stayed the default: the flags after `--` went to the script.
    assert report["timeout_s"] == 600
    assert "argv: ['--timeout', '5', '-x']" in report["migrated"]["stdout_tail"]
    assert (reports / "verify.md").exists()


def test_timeout_kills_both_runs(tmp_path: Path) -> None:
    project = _write(tmp_path / "proj", {"slow.py": "import time\ntime.sleep(60)\n"})
    code, output = _verify(str(project), "--timeout", "1", "--report-dir", str(tmp_path / "r"), "--",
                           sys.executable, "slow.py")
    report = json.loads((tmp_path / "r" / "verify.json").read_text())
    assert report["original"]["timed_out"] and report["migrated"]["timed_out"]
    assert report["original"]["exit_code"] is None and report["original"]["duration_s"] < 30
    assert code == 0 and report["verdict"] == "same"  # both time out: the port changed nothing


@pytest.mark.parametrize("args", [
    ["{missing}", "--", sys.executable, "-V"],  # no such folder
    ["{project}"],  # no command
    ["{project}", "--"],  # no command after --
    ["{project}", "--", "surely-not-a-command-torchport"],  # not on PATH
    ["{project}", "--", "./missing.sh"],  # not in the project
])
def test_bad_input_exits_2(tmp_path: Path, args: list[str]) -> None:
    project = _write(tmp_path / "proj", {"a.py": "x = 1\n"})
    filled = [a.format(missing=tmp_path / "nope", project=project) for a in args]
    code, output = _verify(filled[0], "--report-dir", str(tmp_path / "r"), *filled[1:])
    assert code == 2, output
    assert "error" in output
    assert not (tmp_path / "r").exists()


def test_pytest_detection_and_junit_injection(tmp_path: Path) -> None:
    assert pytest_index(["pytest", "-q"]) == 1
    assert pytest_index(["/venv/bin/python3.11", "-X", "dev", "-m", "pytest", "tests"]) == 5
    assert pytest_index(["python", "-m", "pip"]) is None
    assert pytest_index(["python", "script.py", "-m", "pytest"]) is None
    junit = tmp_path / "j.xml"
    assert with_junit(["pytest", "-k", "x", "--", "a"], junit) == [
        "pytest", "-k", "x", f"--junitxml={junit}", "-p", "no:cacheprovider", "--", "a"]


def test_parse_junit_and_classify(tmp_path: Path) -> None:
    xml = tmp_path / "j.xml"
    xml.write_text("""<testsuites><testsuite>
        <testcase classname="t" name="ok"/>
        <testcase classname="t" name="bad"><failure message="x"/></testcase>
        <testcase classname="t" name="bad"><error message="teardown"/></testcase>
        <testcase classname="t" name="skip"><skipped/></testcase>
        <testcase classname="" name="collect"><error/></testcase>
    </testsuite></testsuites>""")
    assert parse_junit(xml) == {"t::ok": "passed", "t::bad": "error", "t::skip": "skipped", "collect": "error"}
    assert parse_junit(tmp_path / "missing.xml") == {}
    changes = {c.id: c.change for c in classify(
        {"a": "failed", "b": "passed", "c": "passed", "d": "failed", "e": "passed"},
        {"a": "passed", "b": "error", "c": "passed", "d": "error", "f": "passed"})}
    assert changes == {"a": "fixed", "b": "broken", "c": "unchanged", "d": "changed",
                       "e": "only_original", "f": "only_migrated"}
