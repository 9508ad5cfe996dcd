"""`torchport verify --per-file`: each pytest test file in a process of its own, with a log per file.

One crashing or hanging file then costs only its own tests (as with the runtime-patching harnesses that ran
each test file apart). The files are the ones ``pytest --collect-only -q`` lists for the command's own
arguments in the original copy; each run is the command with its path arguments replaced by one file.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# pytest options whose value is the next argument (so that value is never taken for a path).
_VALUE_OPTIONS = frozenset({"-k", "-m", "-p", "-c", "-o", "-W", "-r", "--deselect", "--ignore", "--ignore-glob",
                            "--rootdir", "--confcutdir", "--basetemp", "--junitxml", "--tb", "--maxfail",
                            "--timeout", "--durations", "--log-level", "--import-mode", "-n"})


@dataclass
class FileRun:
    """One test file's runs: exit codes (None: timed out), durations in seconds and log paths relative to the
    report folder (``logs/original/<slug>.stdout`` and so on)."""

    file: str
    original_exit: int | None
    migrated_exit: int | None
    original_s: float
    migrated_s: float
    logs: dict[str, str]


def split_paths(args: list[str], root: Path) -> tuple[list[str], list[str]]:
    """pytest's arguments as (options, paths): a path is an argument that is not an option nor an option's value
    and names something under ``root`` (``tests``, ``tests/test_x.py``, ``tests/test_x.py::test_y``)."""
    options: list[str] = []
    paths: list[str] = []
    take_value = False
    for arg in args:
        if take_value:
            options.append(arg)
            take_value = False
        elif arg.startswith("-"):
            options.append(arg)
            take_value = arg in _VALUE_OPTIONS
        elif (root / arg.split("::")[0]).exists():
            paths.append(arg)
        else:
            options.append(arg)
    return options, paths


# `-q` lists node ids (`tests/test_x.py::test_y`); `-qq` (the command's own `-q` plus ours) lists `file: count`.
# A file that fails to collect is listed as `ERROR tests/test_x.py ...`: it is run too (and errors on its own).
_NODE = re.compile(r"^(?:ERROR )?([^\s:][^:\s]*\.py)(?:::|: \d+$| - |$)")


def collect_files(cmd: list[str], start: int, folder: Path, env: dict[str, str], timeout_s: float) -> list[str]:
    """The test files pytest collects for ``cmd`` (pytest's arguments start at ``start``), in collection order.

    Raises:
        OSError: when pytest cannot be started.
    """
    argv = [*cmd, "--collect-only", "-q", "-p", "no:cacheprovider"]
    try:
        proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return []
    files: list[str] = []
    for line in proc.stdout.splitlines():
        match = _NODE.match(line.strip())
        if match and match.group(1) not in files:
            files.append(match.group(1))
    return files


def file_command(cmd: list[str], start: int, file: str, root: Path) -> list[str]:
    """``cmd`` with its path arguments (from ``start`` on) replaced by ``file``."""
    options, _ = split_paths(cmd[start:], root)
    return [*cmd[:start], *options, file]


def slug(file: str) -> str:
    """A log-file name for a test file: ``tests/test_x.py`` -> ``tests__test_x``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", file.removesuffix(".py").replace("/", "__"))
