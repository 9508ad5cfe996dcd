"""`--write-baseline FILE` and `--baseline FILE`: turn `--check` on in a project that has findings today.

A baseline is a JSON file of today's findings (info notes too, so that a check against it shows only what is
new; a note never fails it), each as its file (relative to the baseline's folder), its rule
and the text of its line of code (stripped). A finding matches an entry with the same file, rule and text, so an
entry survives the line moving; each entry matches as many findings as its ``count``. An entry that matches
nothing in a file the run scanned (or whose file is gone) was fixed since: it is *stale*, and `--check` fails
until the baseline is written again, so the baseline only shrinks.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from torchport.errors import TorchportError
from torchport.results import INFO_CODES, Diagnostic, FileResult, open_findings

FORMAT = 1


class BaselineError(TorchportError):
    """A baseline file that cannot be read or is not one."""


@dataclass(frozen=True, order=True)
class Entry:
    """One finding as the baseline keys it: file (posix, relative to the baseline's folder), rule, line text."""

    path: str
    code: str
    text: str


def _relative(path: Path, folder: Path) -> str:
    return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()


def _entry(result: FileResult, finding: Diagnostic, folder: Path) -> Entry:
    lines = (result.original or "").splitlines()
    text = lines[finding.line - 1].strip() if 0 < finding.line <= len(lines) else ""
    return Entry(_relative(result.path, folder), finding.code, text)


def _recorded(result: FileResult) -> list[Diagnostic]:
    """What a baseline holds of a file: the findings that fail ``--check`` and the info notes (so that a check
    against it shows only what is new; a note never fails it)."""
    return [*open_findings(result), *(d for d in result.diagnostics if d.code in INFO_CODES and not result.error)]


def entries(results: list[FileResult], folder: Path) -> Counter[Entry]:
    """The findings of ``results`` (`_recorded`), keyed as the baseline keys them."""
    return Counter(_entry(r, f, folder) for r in results for f in _recorded(r))


def write(path: Path, results: list[FileResult]) -> int:
    """Record the findings of ``results`` in the baseline file ``path``; returns how many were recorded.

    Raises:
        BaselineError: when the file cannot be written.
    """
    found = entries(results, path.absolute().parent)
    rows = [{"path": e.path, "code": e.code, "text": e.text, **({"count": n} if n > 1 else {})}
            for e, n in sorted(found.items())]
    text = json.dumps({"tool": "torchport", "format": FORMAT, "findings": rows}, indent=2, ensure_ascii=False)
    try:
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write the baseline: {exc.strerror or exc}") from None
    return sum(found.values())


def read(path: Path) -> Counter[Entry]:
    """The entries of the baseline file ``path``.

    Raises:
        BaselineError: when it is missing, not JSON, or not a torchport baseline.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data["findings"] if data.get("tool") == "torchport" else None
        if not isinstance(rows, list):
            raise ValueError("no torchport findings list")
        return Counter({Entry(str(r["path"]), str(r["code"]), str(r["text"])): int(r.get("count", 1)) for r in rows})
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BaselineError(f"{path}: not a torchport baseline ({type(exc).__name__}: {exc}); "
                            "write one with --write-baseline") from None


@dataclass
class Applied:
    """A run seen through a baseline.

    Args:
        results: the results less the findings the baseline holds (info notes and errors kept).
        known: how many findings the baseline held.
        stale: entries that matched nothing (fixed since), with their unmatched counts.
    """

    results: list[FileResult]
    known: int
    stale: list[tuple[Entry, int]]


def apply(baseline: Counter[Entry], path: Path, results: list[FileResult]) -> Applied:
    """Drop from ``results`` the findings that the baseline at ``path`` holds, and find its stale entries."""
    folder = path.absolute().parent
    left = Counter(baseline)
    known = 0
    out = []
    for result in results:
        held: set[int] = set()  # the findings of this file the baseline holds, by id
        for finding in _recorded(result):
            entry = _entry(result, finding, folder)
            if left[entry] > 0:
                left[entry] -= 1
                held.add(id(finding))
        known += len(held)
        out.append(replace(result, sites=[s for s in result.sites if id(s) not in held],
                           diagnostics=[d for d in result.diagnostics if id(d) not in held]))
    scanned = {_relative(r.path, folder) for r in results}
    stale = sorted((e, n) for e, n in left.items()  # a note gone is a decision changed, not debt paid: not stale
                   if n > 0 and e.code not in INFO_CODES and (e.path in scanned or not (folder / e.path).exists()))
    return Applied(out, known, stale)
