"""The dirty-tree guard: which of the files `--apply` would rewrite have changes git has not committed.

Like ``cargo fix``: a file that is modified, staged, untracked, or in conflict has no committed copy
to go back to, so rewriting it could lose work. Files outside any git work tree, and files git
ignores, are not checked (there is nothing to compare them with).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

_CHUNK = 500  # paths per `git status` call, well below any command-line limit


class GitError(Exception):
    """git could not tell whether a file is clean (e.g. a repository it does not trust)."""


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, env=env, check=False)


def _toplevel(folder: Path) -> Path | None:
    done = _git(folder, "rev-parse", "--show-toplevel")
    if done.returncode == 0:
        return Path(os.fsdecode(done.stdout.rstrip(b"\n")))
    message = done.stderr.decode(errors="replace").strip()
    if "not a git repository" in message:
        return None
    raise GitError(f"{folder}: {message.splitlines()[-1] if message else 'git rev-parse failed'}")


def dirty_files(paths: Iterable[Path]) -> list[Path]:
    """Those of ``paths`` with uncommitted changes (modified, staged, untracked, conflicted), as given.

    Raises:
        GitError: when git fails on a folder that is in a work tree (e.g. "dubious ownership").
    """
    if shutil.which("git") is None:
        return []
    given = list(paths)
    wanted = [Path(os.path.realpath(p)) for p in given]
    tops: dict[Path, Path | None] = {}
    by_top: dict[Path, list[Path]] = defaultdict(list)
    for path in wanted:
        folder = path.parent
        if folder not in tops:
            tops[folder] = _toplevel(folder)
        top = tops[folder]
        if top is not None:
            by_top[Path(os.path.realpath(top))].append(path)
    dirty: set[Path] = set()
    for top, files in by_top.items():
        for start in range(0, len(files), _CHUNK):
            chunk = [os.path.relpath(f, top) for f in files[start:start + _CHUNK]]
            done = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                        "--ignore-submodules=all", "--", *chunk)
            if done.returncode != 0:
                raise GitError(f"{top}: {done.stderr.decode(errors='replace').strip() or 'git status failed'}")
            for record in done.stdout.split(b"\0"):
                if len(record) > 3:  # "XY path"
                    dirty.add(top / os.fsdecode(record[3:]))
    return [p for p, real in zip(given, wanted) if real in dirty]


def outside_git(paths: Iterable[Path]) -> list[Path]:
    """Those of ``paths`` in no git work tree (all of them when git is not installed), as given: rewriting them
    leaves no committed copy to go back to. A folder git refuses to read counts as outside."""
    given = list(paths)
    if shutil.which("git") is None:
        return given
    tops: dict[Path, bool] = {}
    for path in given:
        folder = Path(os.path.realpath(path)).parent
        if folder not in tops:
            try:
                tops[folder] = _toplevel(folder) is not None
            except GitError:
                tops[folder] = False
    return [p for p in given if not tops[Path(os.path.realpath(p)).parent]]
