"""`torchport verify PATH -- CMD`: copies, migration, runs, per-test comparison, reports, exit codes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchport.checks.verify import (
    UNITTEST_RESULTS_ENV,
    UNITTEST_RUNNER,
    classify,
    detect_test_runner,
    parse_junit,
    parse_unittest_results,
    pytest_index,
    with_junit,
    with_unittest_runner,
)
from torchport.cli import app

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


@pytest.fixture(autouse=True)
def _plain_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs verify starts load no plugin of this environment (hypothesis alone costs a CPU-second per
    run); verify passes its environment on to CMD, and needs no plugin (junit XML is pytest's own)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


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


@pytest.mark.slow
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
    assert report["migration"]["exit_code"] == 0 and "file(s) changed" in report["migration"]["stderr_tail"]
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


@pytest.mark.slow
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


# ---------------------------------------------------------------------------------------------- unittest

# Two tests that need CUDA (they fail on a CPU-only machine before the port, pass after), one plain test, and
# a class that exists only where a CUDA tensor can be made (so only in the migrated run).
UNITTEST_CUDA_TESTS = """\
import unittest

import torch


def cuda_ok():
    try:
        torch.zeros(1, device="cuda")
    except (AssertionError, RuntimeError):
        return False
    return True


class TestCuda(unittest.TestCase):
    def test_zeros(self):
        self.assertEqual(torch.zeros(2, device="cuda").sum().item(), 0)

    def test_ones(self):
        self.assertEqual(torch.ones(2).cuda().sum().item(), 2)

    def test_plain(self):
        self.assertEqual(1 + 1, 2)


if cuda_ok():
    class TestOnlyWithCuda(unittest.TestCase):
        def test_there(self):
            pass
"""

# Cannot even be imported before the port: an error for the module before, a passing test after.
UNITTEST_CUDA_IMPORT = """\
import unittest

import torch

DEVICE = torch.zeros(1, device="cuda").device


class TestImported(unittest.TestCase):
    def test_device(self):
        self.assertIsNotNone(DEVICE)
"""


@pytest.mark.slow
def test_unittest_discover_reports_two_fixed_tests(tmp_path: Path) -> None:
    project = _write(tmp_path / "proj", {"tests/test_cuda.py": UNITTEST_CUDA_TESTS,
                                         "tests/test_import.py": UNITTEST_CUDA_IMPORT})
    reports = tmp_path / "r"
    cmd = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-p", "test_*.py", "-v"]
    code, output = _verify(str(project), "--report-dir", str(reports), "--", *cmd)
    assert code == 0, output
    assert "IMPROVED" in output and "2 fixed" in output
    report = json.loads((reports / "verify.json").read_text())
    outcomes = {t["id"]: (t["original"], t["migrated"], t["change"]) for t in report["tests"]}
    assert outcomes == {
        # torch's "not compiled with CUDA" is an AssertionError: unittest counts a failure, not an error
        "test_cuda.TestCuda::test_zeros": ("failed", "passed", "fixed"),
        "test_cuda.TestCuda::test_ones": ("failed", "passed", "fixed"),
        "test_cuda.TestCuda::test_plain": ("passed", "passed", "unchanged"),
        "test_cuda.TestOnlyWithCuda::test_there": (None, "passed", "only_migrated"),
        "test_import": ("error", None, "only_original"),
        "test_import.TestImported::test_device": (None, "passed", "only_migrated"),
    }
    assert report["counts"]["fixed"] == 2 and report["counts"]["broken"] == 0
    assert report["verdict"] == "improved" and report["test_runner"] == "unittest" and not report["is_pytest"]
    assert report["command"] == cmd
    assert report["original"]["command"] == [sys.executable, str(UNITTEST_RUNNER), *cmd[3:]]
    assert (report["original"]["exit_code"], report["migrated"]["exit_code"]) == (1, 0)
    # unittest's own output, as the command prints it
    assert report["original"]["stderr_tail"].endswith("FAILED (failures=2, errors=1)")
    assert re.search(r"Ran 5 tests in .*\n\nOK", report["migrated"]["stderr_tail"])
    md = (reports / "verify.md").read_text()
    assert "| `test_cuda.TestCuda::test_zeros` | failed | passed | fixed |" in md
    assert "2 fixed" in md


def test_unittest_module_form_broken_test_exits_1(tmp_path: Path) -> None:
    # No torch: the test reads the source, so it passes before the port and fails after it.
    project = _write(tmp_path / "proj", {
        "mod.py": "def f(x):\n    return x.cuda()\n",
        "tests/__init__.py": "",
        "tests/test_src.py": "import unittest\nfrom pathlib import Path\n\n\nclass TestSrc(unittest.TestCase):\n"
                             "    def test_source_mentions_cuda(self):\n"
                             "        self.assertIn('.cuda()', Path('mod.py').read_text())\n\n"
                             "    def test_plain(self):\n        pass\n",
    })
    code, output = _verify(str(project), "--report-dir", str(tmp_path / "r"), "--",
                           sys.executable, "-m", "unittest", "tests.test_src")
    assert code == 1, output
    report = json.loads((tmp_path / "r" / "verify.json").read_text())
    assert report["verdict"] == "broken"
    assert [(t["id"], t["change"]) for t in report["tests"]] == [
        ("tests.test_src.TestSrc::test_source_mentions_cuda", "broken"),
        ("tests.test_src.TestSrc::test_plain", "unchanged")]
    assert "| `tests.test_src.TestSrc::test_source_mentions_cuda` | passed | failed | broken |" in (
        tmp_path / "r" / "verify.md").read_text()


UNITTEST_MIXED = """\
import sys
import unittest


class TestMixed(unittest.TestCase):
    def test_ok(self):
        print("argv0", sys.argv[0], "path0", sys.path[0], "env", "TORCHPORT_VERIFY" in str(sys.modules["os"].environ))

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("no")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.fail()

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                if i == 1:
                    self.skipTest("one")
                self.assertLess(i, 2)

    def test_sub_ok(self):
        for i in range(2):
            with self.subTest(i=i):
                if i == 1:
                    self.skipTest("one")


class TestSetup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no gpu")

    def test_never(self):
        pass
"""


def test_unittest_runner_output_and_exit_code_match_python_m_unittest(tmp_path: Path) -> None:
    project = _write(tmp_path / "proj", {"tests/__init__.py": "", "tests/test_mixed.py": UNITTEST_MIXED,
                                         "tests/test_gone.py": "raise ImportError('no cuda')\n"})
    results = tmp_path / "results.jsonl"
    forms = [[], ["-v"], ["discover", "-s", "tests", "-p", "test_m*.py"], ["tests.test_mixed"],
             ["-k", "ok", "tests.test_mixed.TestMixed"], ["--no-such-option"]]

    def run(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        proc = subprocess.run(argv, cwd=project, capture_output=True, text=True, env={**os.environ, **env})
        times = re.compile(r"in \d+\.\d+s")
        return proc.returncode, proc.stdout, times.sub("in Xs", proc.stderr)

    for args in forms:
        cmd = [sys.executable, "-m", "unittest", *args]
        direct = run(cmd, {})
        ours = run(with_unittest_runner(cmd), {UNITTEST_RESULTS_ENV: str(results)})
        assert ours == direct, args
        if args == ["-v"]:
            assert "env False" in direct[1] and direct[0] == 1
            assert parse_unittest_results(results) == {
                "tests.test_mixed.TestMixed::test_ok": "passed", "tests.test_mixed.TestMixed::test_fail": "failed",
                "tests.test_mixed.TestMixed::test_error": "error", "tests.test_mixed.TestMixed::test_skip": "skipped",
                "tests.test_mixed.TestMixed::test_xfail": "skipped", "tests.test_mixed.TestMixed::test_xpass": "failed",
                "tests.test_mixed.TestMixed::test_sub": "failed", "tests.test_mixed.TestMixed::test_sub_ok": "skipped",
                "setUpClass (tests.test_mixed.TestSetup)": "error", "tests.test_gone": "error"}
        results.unlink(missing_ok=True)


def test_unittest_detection_and_results_parsing(tmp_path: Path) -> None:
    from torchport.checks import verify_unittest

    assert verify_unittest.RESULTS_ENV == UNITTEST_RESULTS_ENV and Path(verify_unittest.__file__) == UNITTEST_RUNNER
    runner = str(UNITTEST_RUNNER)
    assert detect_test_runner(["python3", "-m", "unittest"]) == "unittest"
    assert detect_test_runner(["python", "-X", "dev", "-munittest", "discover"]) == "unittest"
    assert detect_test_runner(["python", "-m", "pytest"]) == "pytest"
    assert detect_test_runner(["python", "-m", "unittest.mock"]) is None
    assert detect_test_runner(["python", "-c", "x", "-m", "unittest"]) is None
    assert detect_test_runner(["python", "run_tests.py"]) is None
    assert with_unittest_runner(["python", "-W", "error", "-m", "unittest", "-v", "tests.test_x"]) == [
        "python", "-W", "error", runner, "-v", "tests.test_x"]
    assert with_unittest_runner(["python", "-munittest", "discover"]) == ["python", runner, "discover"]
    lines = tmp_path / "r.jsonl"
    lines.write_text('{"id": "a", "outcome": "passed"}\n{"id": "b", "outcome": "failed"}\n'
                     '{"id": "b", "outcome": "passed"}\n{"id": "c", "outcome": "skipped"}\n{"id": "d", "outc')
    assert parse_unittest_results(lines) == {"a": "passed", "b": "failed", "c": "skipped"}
    assert parse_unittest_results(tmp_path / "missing.jsonl") == {}


# ------------------------------------------------------------------ each side its own tree; one process per file

# The tests read the package's source instead of running it: no test process imports torch (fast).
SRC_PACKAGE = {
    "pyproject.toml": "[project]\nname = \"pkg\"\nversion = \"0\"\n",
    "src/pkg/__init__.py": "",
    "src/pkg/gpu.py": CUDA_MODULE,
    "tests/test_a.py": "from pathlib import Path\n\nimport pkg\n\n\ndef test_make():\n"
                       "    assert '.cuda()' not in (Path(pkg.__file__).parent / 'gpu.py').read_text()\n",
    "tests/test_b.py": "import pkg\n\n\ndef test_device():\n    assert pkg.__file__\n\n\n"
                       "def test_plain():\n    assert pkg.__name__ == 'pkg'\n",
}


@pytest.mark.slow  # two whole suites in child processes, a file each: the other verify tests cover the parts
def test_src_layout_on_pythonpath_tests_the_migrated_copy_one_process_per_file(tmp_path: Path, monkeypatch) -> None:
    project = _write(tmp_path / "proj", SRC_PACKAGE)
    # What `pip install -e .` does for a src layout: the original tree's src/ on the path, ahead of the copies.
    monkeypatch.setenv("PYTHONPATH", str(project / "src"))
    reports = tmp_path / "reports"
    code, output = _verify(str(project), "--report-dir", str(reports), "--per-file", "--",
                           sys.executable, "-m", "pytest", "-q", "tests")
    assert code == 0, output
    data = json.loads((reports / "verify.json").read_text())
    changes = {t["id"].split("::")[-1]: t["change"] for t in data["tests"]}
    assert changes == {"test_make": "fixed", "test_device": "unchanged", "test_plain": "unchanged"}
    workdir = Path(data["workdir"])
    for side in ("original", "migrated"):  # each side imported its own copy, not the tree on PYTHONPATH
        assert data["sources"][side]["pkg"] == str(workdir / side / "src" / "pkg" / "__init__.py")
        assert data["foreign"][side] == []
    assert [f["file"] for f in data["files"]] == ["tests/test_a.py", "tests/test_b.py"]
    assert [(f["original_exit"], f["migrated_exit"]) for f in data["files"]] == [(1, 0), (0, 0)]
    md = (reports / "verify.md").read_text()
    assert "[original stdout](logs/original/tests__test_a.stdout)" in md and "## Sources imported" in md
    log = (reports / "logs" / "original" / "tests__test_a.stdout").read_text()
    assert "1 failed" in log and "test_b" not in log  # its own process, its own log
    assert "1 passed" in (reports / "logs" / "migrated" / "tests__test_a.stdout").read_text()
    code, output = _verify(str(project), "--report-dir", str(reports), "--per-file", "--", sys.executable, "x.py")
    assert code == 2 and "--per-file needs a pytest command" in output


def test_isolated_env_maps_pythonpath_into_the_copy_and_split_paths(tmp_path: Path) -> None:
    from torchport.checks.verify_files import file_command, split_paths
    from torchport.checks.verify_sources import isolated_env, outside, top_level_names

    project = _write(tmp_path / "proj", {**SRC_PACKAGE, "tool.py": "", "setup.py": "", "src/_private.py": ""})
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    env = isolated_env(copy, project, {"PYTHONPATH": os.pathsep.join([str(project / "src"), "/elsewhere", ""])})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(copy / "src"), str(copy), "/elsewhere"]
    assert top_level_names(copy) == ["pkg"]  # packages first: scripts beside them are not what tests import
    (copy / "src" / "pkg" / "__init__.py").unlink()
    assert top_level_names(copy) == ["tool"]  # no package: the modules
    assert outside({"pkg": str(project / "src/pkg/__init__.py"), "tool": str(copy / "tool.py"), "x": None},
                   copy) == ["pkg"]
    args = ["-q", "-k", "tests", "tests/test_a.py::test_make", "-p", "no:x", "--tb=short", "tests"]
    assert split_paths(args, project) == (["-q", "-k", "tests", "-p", "no:x", "--tb=short"],
                                          ["tests/test_a.py::test_make", "tests"])
    assert file_command(["pytest", *args], 1, "tests/test_b.py", project) == [
        "pytest", "-q", "-k", "tests", "-p", "no:x", "--tb=short", "tests/test_b.py"]
