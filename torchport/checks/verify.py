"""`torchport verify PATH -- CMD...`: run a command before and after the port and compare the results.

The project is copied twice into a temporary folder (``original/`` and ``migrated/``), so neither the
command nor the migration ever writes into the user's tree. CMD runs in the original copy; the other copy
is migrated by the ``torchport migrate --apply`` command line (a subprocess, as a user would run it); CMD
then runs in the migrated copy. Exit codes are compared and, when CMD is pytest or ``python -m unittest``, so
is each test's outcome: pytest is asked to write a JUnit XML file; ``python -m unittest ARGS`` runs as
``python torchport/verify_unittest.py ARGS`` (unittest's own command line, same output and exit code, which
also writes each test's outcome to a file).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from torchport import __version__
from torchport.checks import verify_files, verify_sources
from torchport.checks.names import UNITTEST_RESULTS_ENV  # verify_unittest.py keeps a copy (no torchport there)
from torchport.checks.verify_files import FileRun

EXIT_OK, EXIT_BROKEN, EXIT_USAGE = 0, 1, 2

# Never copied: version control, caches, and build byproducts that only slow the copy down.
_SKIPPED_NAMES = frozenset({".git", ".hg", ".svn", "__pycache__", ".torchport_cache", ".pytest_cache",
                            ".mypy_cache", ".ruff_cache", ".tox", ".nox"})
_TAIL_LINES = 40  # lines of stdout/stderr kept per run: enough for a traceback, small enough for a report
_BAD = frozenset({"failed", "error"})
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}  # a test reported twice keeps its worst outcome

# How a test's outcome changed from the original run to the migrated one.
FIXED, BROKEN, UNCHANGED, CHANGED = "fixed", "broken", "unchanged", "changed"
ONLY_ORIGINAL, ONLY_MIGRATED = "only_original", "only_migrated"
_CHANGE_ORDER = (BROKEN, ONLY_ORIGINAL, FIXED, CHANGED, ONLY_MIGRATED, UNCHANGED)


class VerifyError(Exception):
    """Bad input to verify (missing folder, no command, command not found): exit code 2."""


@dataclass
class RunResult:
    """One run of a command.

    Attributes:
        command: the argv that ran (with verify's pytest options added, or unittest's runner swapped in).
        exit_code: the command's exit status; None when it timed out (it was killed).
        timed_out: whether it ran past the timeout.
        duration_s: wall-clock time in seconds.
        stdout_tail: the last lines of its stdout.
        stderr_tail: the last lines of its stderr.
        junit_xml: the JUnit XML file pytest wrote, or None (not pytest, or pytest wrote none).
        unittest_results: the outcomes file verify's unittest runner wrote, or None (not unittest, or none).
    """

    command: list[str]
    exit_code: int | None
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    junit_xml: str | None = None
    unittest_results: str | None = None


@dataclass
class TestChange:
    """One test's outcome on each side (``passed``, ``failed``, ``error``, ``skipped`` or None if absent)."""

    __test__ = False  # not a pytest test class, despite its name

    id: str
    original: str | None
    migrated: str | None
    change: str


@dataclass
class Verification:
    """Everything verify found; serialised as the JSON report."""

    command: list[str]
    project: str
    workdir: str
    kept: bool
    timeout_s: float
    is_pytest: bool
    test_runner: str | None  # "pytest", "unittest" or None (CMD is neither: exit codes only)
    original: RunResult
    migration: RunResult
    migrated: RunResult
    tests: list[TestChange] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    verdict: str = ""
    verdict_text: str = ""
    exit_code: int = EXIT_OK
    torchport_version: str = __version__
    # Where the project's top-level packages resolve on each side ({"original": {name: path}, "migrated": ...}),
    # and the names a side resolved outside its own copy.
    sources: dict[str, dict[str, str | None]] = field(default_factory=dict)
    foreign: dict[str, list[str]] = field(default_factory=dict)
    per_file: bool = False
    files: list[FileRun] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- copying


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


def _copy_ignore(skip: set[Path]) -> Callable[[str, list[str]], set[str]]:
    """A ``shutil.copytree`` ignore function: skips caches, VCS data, virtualenvs, ``skip`` and special files."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        ignored = set()
        for name in names:
            path = Path(folder, name)
            if name in _SKIPPED_NAMES or path.resolve() in skip:
                ignored.add(name)
                continue
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode) and _is_virtualenv(path):
                ignored.add(name)
            elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                ignored.add(name)  # a FIFO or socket: copying it would block or fail
        return ignored

    return ignore


def copy_project(source: Path, dest: Path, skip: set[Path] | None = None) -> None:
    """Copy the project at ``source`` to ``dest`` (which must not exist), keeping file modes and links.

    Args:
        source: the project root.
        dest: the new folder.
        skip: absolute resolved paths to leave out (e.g. verify's own report folder).

    Raises:
        OSError: when the copy fails.
    """
    shutil.copytree(source, dest, symlinks=True, ignore=_copy_ignore(skip or set()), copy_function=shutil.copy2)
    # Folders of a read-only tree stay writable to their owner: migrate replaces files atomically in them,
    # CMD may write outputs there, and the copy must be removable. Files keep their modes.
    for folder, dirs, _ in os.walk(dest):
        for path in (folder, *(os.path.join(folder, d) for d in dirs)):
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode) and not mode & stat.S_IWUSR:
                os.chmod(path, stat.S_IMODE(mode) | stat.S_IWUSR)


# ---------------------------------------------------------------------------------------------- commands


def _tail(path: Path, lines: int = _TAIL_LINES) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def child_env() -> dict[str, str]:
    """The environment CMD runs in: ours, with this Python's folder first on PATH.

    ``python`` and ``pytest`` in CMD then resolve to the interpreter running torchport, the one that can
    import ``torchport.runtime`` (which the migrated code needs).
    """
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("COLUMNS", "120")  # rich output of the migrate subprocess: tables not squeezed to 80 columns
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_command(argv: list[str], cwd: Path, timeout_s: float, logs: Path, name: str,
                env: dict[str, str] | None = None) -> RunResult:
    """Run ``argv`` in ``cwd`` with output to files under ``logs``; kill its process group on timeout.

    Args:
        argv: the command.
        cwd: its working folder.
        timeout_s: wall-clock limit in seconds.
        logs: folder for ``<name>.stdout`` and ``<name>.stderr``.
        name: a label for the log files.
        env: variables to add to :func:`child_env`'s.

    Returns:
        the run's exit code, duration (seconds) and output tails.

    Raises:
        VerifyError: when the command cannot be started (not found, not executable).
    """
    out_path, err_path = logs / f"{name}.stdout", logs / f"{name}.stderr"
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            # A session of its own, so that a timeout kills the command's children too.
            proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    env={**child_env(), **(env or {})}, start_new_session=True)
        except OSError as exc:
            raise VerifyError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:  # Ctrl-C: leave nothing running behind us
            _kill_group(proc)
            raise
    return RunResult(command=list(argv), exit_code=None if timed_out else proc.returncode, timed_out=timed_out,
                     duration_s=round(time.monotonic() - start, 3), stdout_tail=_tail(out_path),
                     stderr_tail=_tail(err_path))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def resolve_command(cmd: list[str], root: Path) -> None:
    """Check that CMD can be found, before anything is copied.

    Raises:
        VerifyError: when CMD is empty or its program is neither on PATH nor a file in the project.
    """
    if not cmd:
        raise VerifyError("no command given: use `torchport verify PATH -- CMD [ARGS...]`")
    program = cmd[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        if not (root / program).exists() and not Path(program).is_absolute():
            raise VerifyError(f"command not found: {program} (looked in {root})")
        if Path(program).is_absolute() and not Path(program).exists():
            raise VerifyError(f"command not found: {program}")
    elif shutil.which(program, path=child_env()["PATH"]) is None:
        raise VerifyError(f"command not found: {program}")


# ---------------------------------------------------------------------------------------------- pytest

_PYTHON = re.compile(r"python[0-9.]*(\.exe)?$")


def _python_module(cmd: list[str]) -> tuple[str | None, int, int]:
    """For ``python [-X opt ...] -m MODULE ARGS...``: MODULE, where ``-m`` is and where ARGS start.

    (None, 0, 0) when ``cmd`` is not a Python interpreter running a module.
    """
    program = Path(cmd[0]).name if cmd else ""
    if not cmd or not (_PYTHON.match(program) or cmd[0] == sys.executable):
        return None, 0, 0
    i = 1
    while i < len(cmd) and cmd[i].startswith("-"):
        if cmd[i] == "-m":
            return (cmd[i + 1], i, i + 2) if i + 1 < len(cmd) else (None, 0, 0)
        if cmd[i].startswith("-m"):
            return cmd[i][2:], i, i + 1
        if cmd[i] in ("-c", "-", "--"):  # code, stdin or a script follows: not a module
            return None, 0, 0
        i += 2 if cmd[i] in ("-X", "-W") else 1
    return None, 0, 0


def pytest_index(cmd: list[str]) -> int | None:
    """Where pytest's own arguments start in ``cmd``, or None when CMD is not pytest.

    Recognises ``pytest ...``, ``py.test ...`` and ``python [-X opt ...] -m pytest ...``.
    """
    program = Path(cmd[0]).name if cmd else ""
    if program in ("pytest", "py.test", "pytest.exe"):
        return 1
    module, _, args = _python_module(cmd)
    return args if module == "pytest" else None


def detect_test_runner(cmd: list[str]) -> str | None:
    """``"pytest"``, ``"unittest"`` (``python [-X opt ...] -m unittest ...``) or None (exit codes only)."""
    if pytest_index(cmd) is not None:
        return "pytest"
    return "unittest" if _python_module(cmd)[0] == "unittest" else None


UNITTEST_RUNNER = Path(__file__).with_name("verify_unittest.py")


def with_unittest_runner(cmd: list[str]) -> list[str]:
    """``python [opts] -m unittest ARGS`` as ``python [opts] .../verify_unittest.py ARGS`` (same interpreter)."""
    module, m_at, args = _python_module(cmd)
    if module != "unittest":
        return list(cmd)
    return [*cmd[:m_at], str(UNITTEST_RUNNER), *cmd[args:]]


def parse_unittest_results(path: Path) -> dict[str, str]:
    """Each test's outcome from the JSON lines verify's unittest runner wrote (worst outcome of a test wins).

    Returns {} when the file is missing; an unreadable line (a run killed mid-write) is skipped.
    """
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    outcomes: dict[str, str] = {}
    for line in lines:
        try:
            record = json.loads(line)
            test_id, outcome = str(record["id"]), str(record["outcome"])
        except (ValueError, KeyError, TypeError):
            continue
        if outcome in _RANK and _RANK[outcome] >= _RANK.get(outcomes.get(test_id, "passed"), 0):
            outcomes[test_id] = outcome
    return outcomes


def with_junit(cmd: list[str], junit: Path) -> list[str]:
    """``cmd`` with ``--junitxml=junit -p no:cacheprovider`` added (before a ``--``, so pytest still reads them)."""
    extra = [f"--junitxml={junit}", "-p", "no:cacheprovider"]
    start = pytest_index(cmd) or len(cmd)
    end = cmd.index("--", start) if "--" in cmd[start:] else len(cmd)
    return [*cmd[:end], *extra, *cmd[end:]]


def parse_junit(path: Path) -> dict[str, str]:
    """Each test's outcome from a pytest JUnit XML file: ``passed``, ``failed``, ``error`` or ``skipped``.

    A test id is ``classname::name`` (``tests.test_x::test_y[1]``). A test reported twice (a failure in the
    call, an error in teardown) keeps its worst outcome. Returns {} when the file is missing or unreadable.
    """
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        test_id = f"{classname}::{name}" if classname else name
        tags = {child.tag for child in case}
        outcome = ("error" if "error" in tags else "failed" if "failure" in tags
                   else "skipped" if "skipped" in tags else "passed")
        if _RANK[outcome] >= _RANK.get(outcomes.get(test_id, "passed"), 0):
            outcomes[test_id] = outcome
    return outcomes


def classify(original: dict[str, str], migrated: dict[str, str]) -> list[TestChange]:
    """Pair each test's outcomes and say how the port changed it (fixed, broken, unchanged, ...).

    fixed: failed/error before, passed after. broken: passed before, failed/error after.
    changed: any other difference (e.g. failed -> error, passed -> skipped).
    """
    changes = []
    for test_id in sorted(original.keys() | migrated.keys()):
        before, after = original.get(test_id), migrated.get(test_id)
        if after is None:
            kind = ONLY_ORIGINAL
        elif before is None:
            kind = ONLY_MIGRATED
        elif before == after:
            kind = UNCHANGED
        elif before in _BAD and after == "passed":
            kind = FIXED
        elif before == "passed" and after in _BAD:
            kind = BROKEN
        else:
            kind = CHANGED
        changes.append(TestChange(test_id, before, after, kind))
    changes.sort(key=lambda c: _CHANGE_ORDER.index(c.change))
    return changes


# ---------------------------------------------------------------------------------------------- verdict


def verdict(v: Verification) -> tuple[str, str, int]:
    """The verdict, a one-line explanation and verify's exit code.

    ``broken`` (exit 1): a test that passed before fails or errors after, a test that passed before is gone,
    or the migrated run exits non-zero with a status other than the original's (a timeout counts as a status).
    Otherwise ``improved`` (some test fixed, or the exit status went from failure to 0) or ``same`` (exit 0).
    """
    broken = [t for t in v.tests if t.change == BROKEN or (t.change == ONLY_ORIGINAL and t.original == "passed")]
    fixed = [t for t in v.tests if t.change == FIXED]
    before, after = _status(v.original), _status(v.migrated)
    if broken:
        return "broken", f"the port broke {len(broken)} test(s) that passed before", EXIT_BROKEN
    if after != "0" and after != before:
        return "broken", f"the migrated run exits {after}; the original exits {before}", EXIT_BROKEN
    if fixed or (before != "0" and after == "0"):
        what = (f"the port fixed {len(fixed)} test(s) and broke none" if fixed
                else f"the original run exits {before}; the migrated run exits 0")
        return "improved", what, EXIT_OK
    moved = sum(t.change != UNCHANGED for t in v.tests)
    tests = (f"; {moved} test(s) changed outcome, none broken" if moved else "; no test changed outcome")
    return "same", f"both runs exit {before}" + (tests if v.test_runner else ""), EXIT_OK


def _status(run: RunResult) -> str:
    return "timeout" if run.timed_out else str(run.exit_code)


# ---------------------------------------------------------------------------------------------- migration


def migrate_copy(folder: Path, timeout_s: float, logs: Path) -> RunResult:
    """Migrate ``folder`` in place with the ``torchport migrate --apply`` command line (``timeout_s`` seconds).

    ``--no-cache`` and ``--allow-dirty`` are passed when this version of the command line knows them
    (an option it rejects is dropped and the migration run again).
    """
    options = ["--no-cache", "--allow-dirty"]
    while True:
        # "." from the copy's root: the summary then names files relative to the project root.
        argv = [sys.executable, "-m", "torchport", "migrate", ".", "--apply", *options]
        result = run_command(argv, folder, timeout_s, logs, "migrate")
        rejected = [o for o in options if f"No such option: {o}" in result.stderr_tail]
        if result.exit_code != 2 or not rejected:
            return result
        options = [o for o in options if o not in rejected]


# ---------------------------------------------------------------------------------------------- the whole run


def verify(project: Path, cmd: list[str], timeout_s: float, workdir: Path, skip: set[Path] | None = None,
           kept: bool = False, per_file_logs: Path | None = None) -> Verification:
    """Copy ``project`` twice under ``workdir``, run CMD on one, migrate the other, run CMD on it, compare.

    Args:
        project: the project root (a folder).
        cmd: the command to run in each copy's root.
        timeout_s: limit in seconds for each run of CMD and for the migration.
        workdir: an empty folder for the copies, logs and JUnit files.
        skip: absolute resolved paths not to copy.
        kept: whether ``workdir`` is kept afterwards (recorded in the report).
        per_file_logs: run each test file in its own process (pytest only), with its logs in this folder
            (``original/<file>.stdout`` ...); None runs CMD once per side.

    Each side runs with its own copy's sources first on ``PYTHONPATH`` (:mod:`verify_sources`), so an editable
    install or a ``PYTHONPATH`` entry of the original tree cannot stand in for the migrated copy.

    Raises:
        VerifyError: when the command cannot be run, or ``per_file_logs`` is given for a command that is not
            pytest.
        OSError: when the project cannot be copied.
    """
    logs = workdir / "logs"
    logs.mkdir()
    original_dir, migrated_dir = workdir / "original", workdir / "migrated"
    copy_project(project, original_dir, skip)
    copy_project(project, migrated_dir, skip)
    runner = detect_test_runner(cmd)
    if per_file_logs is not None and runner != "pytest":
        raise VerifyError("--per-file needs a pytest command (pytest ... or python -m pytest ...)")
    envs = {side: verify_sources.isolated_env(folder, project)
            for side, folder in (("original", original_dir), ("migrated", migrated_dir))}

    def run_side(side: str, folder: Path) -> RunResult:
        junit, results = workdir / f"junit-{side}.xml", workdir / f"unittest-{side}.jsonl"
        if runner == "pytest":
            result = run_command(with_junit(cmd, junit), folder, timeout_s, logs, side, env=envs[side])
        elif runner == "unittest":
            result = run_command(with_unittest_runner(cmd), folder, timeout_s, logs, side,
                                 env={**envs[side], UNITTEST_RESULTS_ENV: str(results)})
        else:
            result = run_command(list(cmd), folder, timeout_s, logs, side, env=envs[side])
        result.junit_xml = str(junit) if junit.exists() else None
        result.unittest_results = str(results) if results.exists() else None
        return result

    files: list[str] = []
    if per_file_logs is not None:
        files = verify_files.collect_files(cmd, pytest_index(cmd) or 1, original_dir,
                                           {**child_env(), **envs["original"]}, timeout_s)
    runs: dict[str, list[RunResult]] = {}

    def run_one_side(name: str, folder: Path) -> RunResult:
        """One side's run: each test file in its own process with ``--per-file``, else the command once."""
        if not files:
            return run_side(name, folder)
        assert per_file_logs is not None
        return _run_files(name, folder, cmd, files, timeout_s, per_file_logs, workdir, envs[name], runs)

    original = run_one_side("original", original_dir)
    migration = migrate_copy(migrated_dir, timeout_s, logs)
    migrated = run_one_side("migrated", migrated_dir)
    v = Verification(command=list(cmd), project=str(project), workdir=str(workdir), kept=kept,
                     timeout_s=timeout_s, is_pytest=runner == "pytest", test_runner=runner, original=original,
                     migration=migration, migrated=migrated, per_file=bool(files))
    names = verify_sources.top_level_names(original_dir)
    for side, folder in (("original", original_dir), ("migrated", migrated_dir)):
        v.sources[side] = verify_sources.imported_sources(folder, names, {**child_env(), **envs[side]})
        v.foreign[side] = verify_sources.outside(v.sources[side], folder)
    if files:
        v.files = [FileRun(f, _status_code(a), _status_code(b), a.duration_s, b.duration_s,
                           {kind: f"logs/{side}/{verify_files.slug(f)}.{kind.split('-')[1]}"
                            for side in ("original", "migrated") for kind in (f"{side}-stdout", f"{side}-stderr")})
                   for f, a, b in zip(files, runs["original"], runs["migrated"])]
        v.tests = classify(_merged_junit(workdir, "original", len(files)),
                           _merged_junit(workdir, "migrated", len(files)))
    elif runner == "pytest":
        v.tests = classify(parse_junit(workdir / "junit-original.xml"), parse_junit(workdir / "junit-migrated.xml"))
    elif runner == "unittest":
        v.tests = classify(parse_unittest_results(workdir / "unittest-original.jsonl"),
                           parse_unittest_results(workdir / "unittest-migrated.jsonl"))
    v.counts = {kind: sum(t.change == kind for t in v.tests) for kind in _CHANGE_ORDER}
    v.verdict, v.verdict_text, v.exit_code = verdict(v)
    return v


def _status_code(run: RunResult) -> int | None:
    return None if run.timed_out else run.exit_code


def _run_files(side: str, folder: Path, cmd: list[str], files: list[str], timeout_s: float, log_root: Path,
               workdir: Path, env: dict[str, str], runs: dict[str, list[RunResult]]) -> RunResult:
    """Run ``cmd`` once per test file on one side; return one RunResult for the side as a whole (worst exit
    code, total duration) and keep each file's in ``runs[side]``."""
    logs = log_root / side
    logs.mkdir(parents=True, exist_ok=True)
    start = pytest_index(cmd) or 1
    results = []
    for i, file in enumerate(files):
        argv = with_junit(verify_files.file_command(cmd, start, file, folder), workdir / f"junit-{side}-{i}.xml")
        results.append(run_command(argv, folder, timeout_s, logs, verify_files.slug(file), env=env))
    runs[side] = results
    codes = [r.exit_code for r in results if r.exit_code is not None]
    failed = [r for r in results if r.timed_out or r.exit_code]
    return RunResult(command=[*cmd, "(one process per test file)"], exit_code=max(codes, default=0),
                     timed_out=any(r.timed_out for r in results),
                     duration_s=round(sum(r.duration_s for r in results), 3),
                     stdout_tail=f"{len(results)} test files run, {len(failed)} exited non-zero; logs in {logs}",
                     stderr_tail=(failed[-1].stderr_tail if failed else ""))


def _merged_junit(workdir: Path, side: str, n: int) -> dict[str, str]:
    merged: dict[str, str] = {}
    for i in range(n):
        merged.update(parse_junit(workdir / f"junit-{side}-{i}.xml"))
    return merged


# ---------------------------------------------------------------------------------------------- reports


def write_reports(v: Verification, report_dir: Path) -> tuple[Path, Path]:
    """Write ``verify.json`` and ``verify.md`` into ``report_dir`` (created if needed); return their paths.

    Raises:
        OSError: when the folder or files cannot be written.
    """
    report_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = report_dir / "verify.json", report_dir / "verify.md"
    json_path.write_text(json.dumps(asdict(v), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown(v), encoding="utf-8")
    return json_path, md_path


def _md_cell(text: object) -> str:
    return str(text if text is not None else "—").replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    return "```text\n" + (text.replace("```", "'''") or "(empty)") + "\n```\n"


def markdown(v: Verification, max_unchanged: int = 500) -> str:
    """The Markdown report: command, runs, migration summary, per-test table (unchanged rows capped), verdict."""
    lines = [
        "# torchport verify", "",
        f"**Verdict: {v.verdict}** — {v.verdict_text} (exit code {v.exit_code}).", "",
        f"- Command: `{' '.join(v.command)}`",
        f"- Project: `{v.project}`",
        f"- Copies: `{v.workdir}`" + ("" if v.kept else " (removed afterwards; `--keep` keeps them)"),
        f"- Timeout per run: {v.timeout_s:g} s",
        f"- torchport {v.torchport_version}", "",
        "| run | exit code | duration (s) |", "|---|---|---|",
    ]
    for name, run in (("original", v.original), ("migration", v.migration), ("migrated", v.migrated)):
        lines.append(f"| {name} | {_status(run)} | {run.duration_s:.2f} |")
    migrate = " ".join(["torchport", *v.migration.command[3:]])  # without "python -m"
    lines += ["", "## Migration", "", f"`{migrate}` (in the migrated copy) exited {_status(v.migration)}; "
              "the end of its summary:", "", _fence(v.migration.stderr_tail)]
    lines += _md_sources(v)
    if v.files:
        lines += _md_files(v)
    if v.test_runner:
        lines += _md_tests(v, max_unchanged)
    for name, run in (("original", v.original), ("migrated", v.migrated)):
        lines += [f"<details><summary>Output of the {name} run (last lines)</summary>", "", "stdout:", "",
                  _fence(run.stdout_tail), "stderr:", "", _fence(run.stderr_tail), "</details>", ""]
    return "\n".join(lines)


def _md_sources(v: Verification) -> list[str]:
    """Which file each of the project's top-level packages resolved to, per side."""
    if not any(v.sources.values()):
        return []
    lines = ["## Sources imported", "",
             "Each side runs with its own copy first on `PYTHONPATH`; where the project's packages resolved:", "",
             "| package | original | migrated |", "|---|---|---|"]
    names = sorted(set().union(*(s.keys() for s in v.sources.values())))
    for name in names:
        lines.append(f"| `{name}` | `{_md_cell(v.sources.get('original', {}).get(name))}` "
                     f"| `{_md_cell(v.sources.get('migrated', {}).get(name))}` |")
    for side, bad in v.foreign.items():
        if bad:
            lines.append(f"\n**Warning:** the {side} run imports {', '.join(bad)} from outside its copy: "
                         "its results are not those of its own tree.")
    return [*lines, ""]


def _md_files(v: Verification) -> list[str]:
    """One row per test file run in its own process, with links to its logs."""
    lines = ["## Test files (one process each)", "", "| file | original | migrated | logs |", "|---|---|---|---|"]
    for f in v.files:
        logs = " ".join(f"[{k.replace('-', ' ')}]({path})" for k, path in f.logs.items())
        lines.append(f"| `{_md_cell(f.file)}` | {_md_cell('timeout' if f.original_exit is None else f.original_exit)}"
                     f" | {_md_cell('timeout' if f.migrated_exit is None else f.migrated_exit)} | {logs} |")
    return [*lines, ""]


def _md_tests(v: Verification, max_unchanged: int) -> list[str]:
    counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in v.counts.items() if n)
    none = ("pytest wrote no JUnit XML" if v.test_runner == "pytest"
            else f"no test reported an outcome in either {v.test_runner} run")
    lines = ["## Tests", "", counts or f"No test results ({none}).", "",
             "| test | original | migrated | change |", "|---|---|---|---|"]
    unchanged = 0
    for t in v.tests:
        if t.change == UNCHANGED:
            unchanged += 1
            if unchanged > max_unchanged:
                continue
        lines.append(f"| `{_md_cell(t.id)}` | {_md_cell(t.original)} | {_md_cell(t.migrated)} | {t.change} |")
    if unchanged > max_unchanged:
        lines.append(f"\n{unchanged - max_unchanged} more unchanged test(s) are in the JSON report.")
    return [*lines, ""]


_STYLE = {FIXED: "green", BROKEN: "red", CHANGED: "yellow", ONLY_ORIGINAL: "magenta", ONLY_MIGRATED: "cyan"}


def print_summary(err: Console, v: Verification, paths: tuple[Path, Path]) -> None:
    """The verdict, the runs, the counts and a table of the tests whose outcome changed, on ``err``."""
    colour = {"broken": "red", "improved": "green"}.get(v.verdict, "blue")
    err.print(f"[bold {colour}]{v.verdict.upper()}[/]: {escape(v.verdict_text)}", highlight=False)
    for name, run in (("original", v.original), ("migration", v.migration), ("migrated", v.migrated)):
        err.print(f"  {name:<9} exit {_status(run):>7}  {run.duration_s:8.2f} s", highlight=False)
    if v.test_runner:
        err.print("  tests: " + (", ".join(f"{n} {k.replace('_', ' ')}" for k, n in v.counts.items() if n)
                                 or "none reported"), highlight=False)
    changed = [t for t in v.tests if t.change != UNCHANGED]
    if changed:
        table = Table(title="Tests whose outcome changed", title_justify="left", show_edge=False)
        for column in ("test", "original", "migrated", "change"):
            table.add_column(column, overflow="fold")
        for t in changed:
            table.add_row(escape(t.id), t.original or "—", t.migrated or "—",
                          f"[{_STYLE.get(t.change, '')}]{t.change}[/]")
        err.print(table)
    for side, bad in v.foreign.items():
        if bad:
            err.print(f"[yellow]warning[/]: the {side} run imports {escape(', '.join(bad))} from outside its copy",
                      highlight=False)
    err.print(f"reports: {escape(str(paths[0]))}, {escape(str(paths[1]))}", highlight=False)


# ---------------------------------------------------------------------------------------------- command line


def _usage(err: Console, message: str) -> typer.Exit:
    err.print(f"[red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(EXIT_USAGE)


def verify_command(
    path: Annotated[Path, typer.Argument(metavar="PATH",
                                         help="The project root to verify (it is copied, never changed).",
                                         show_default=False)],
    cmd: Annotated[list[str] | None, typer.Argument(metavar="-- CMD...", show_default=False,
                                                       help="The command to run in each copy, after `--`.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", min=0.001,
                                           help="Limit for each run of CMD (and for the migration).")] = 600.0,
    report_dir: Annotated[Path, typer.Option("--report-dir", metavar="DIR",
                                             help="Where verify.json and verify.md "
                                                  "are written.")] = Path("torchport-verify"),
    keep: Annotated[bool, typer.Option("--keep",
                                       help="Keep the temporary copies (their path is in the report).")] = False,
    per_file: Annotated[bool, typer.Option("--per-file",
                                           help="pytest only: run each test file in its own process, with a log "
                                                "per file under REPORT_DIR/logs/ linked from verify.md.")] = False,
) -> None:
    """Run CMD on a copy of PATH before and after migrating it, and compare exit codes and test outcomes.

    With pytest (`pytest ...` or `python -m pytest ...`) or unittest (`python -m unittest ...`) each test's
    outcome is compared: fixed, broken, unchanged, on one side only.

    Exit codes: 0 the migrated run is at least as good as the original; 1 the port broke something;
    2 bad input (no such folder, no command, command not found).
    """
    err = Console(stderr=True)
    cmd = list(cmd or [])
    if not path.is_dir():
        raise _usage(err, f"{path}: no such folder")
    project = path.resolve()
    try:
        resolve_command(cmd, project)
    except VerifyError as exc:
        raise _usage(err, str(exc)) from None
    report_dir = report_dir.absolute()
    workdir = Path(tempfile.mkdtemp(prefix="torchport-verify-"))
    try:
        err.print(f"verify: copying {escape(str(project))} to {escape(str(workdir))}", highlight=False)
        v = verify(project, cmd, timeout, workdir, skip={report_dir.resolve()}, kept=keep,
                   per_file_logs=report_dir / "logs" if per_file else None)
    except VerifyError as exc:
        raise _usage(err, str(exc)) from None
    except OSError as exc:
        raise _usage(err, f"cannot copy {path}: {exc}") from None
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    try:
        paths = write_reports(v, report_dir)
    except OSError as exc:
        raise _usage(err, f"cannot write the reports to {report_dir}: {exc}") from None
    print_summary(err, v, paths)
    raise typer.Exit(v.exit_code)


def register(app: typer.Typer) -> None:
    """Add the ``verify`` command to ``app`` (a typer.Typer)."""
    app.command("verify")(verify_command)
