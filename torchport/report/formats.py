"""Plain-text and machine-readable reports: the concise one-line-per-finding form, GitHub workflow
annotations, `--statistics` as text, JSON, and SARIF 2.1.0. No rich here: a run piped to a file
or read by CI loads none of it."""

from __future__ import annotations

import difflib
import json
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchport import __version__
from torchport.pipeline.notebooks import NotebookResult, locate, not_migrated
from torchport.report.statistics import file_statistics, rule_counts
from torchport.results import FileResult

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"info": "note", "low": "warning", "medium": "warning", "high": "error"}


def _rules() -> dict[str, Any]:
    from torchport.codemods.api import (
        RULES,  # the rules' names and summaries: loaded only for reports that show them
    )

    return RULES


@dataclass(frozen=True)
class Finding:
    """One line of the concise report: a rewrite (pending or applied) or a diagnostic, where it is.

    Args:
        path: the file as shown (``display``); ``cell`` is ``"cell_N:"`` in a notebook, else empty.
        line: 1-based line (in the cell, for a notebook); column: 1-based.
        code: rule code; message: one line; fix: whether torchport rewrites it (``[*]``, as ruff marks fixes).
    """

    path: str
    cell: str
    line: int
    column: int
    code: str
    message: str
    fix: bool


def findings(result: FileResult) -> list[Finding]:
    """The rewrites and diagnostics of one file, in line order."""
    out = []
    for fix, items in ((True, result.sites if not result.error else []), (False, result.diagnostics)):
        for item in items:
            cell, line = locate(result, item.line)
            out.append(Finding(result.display, cell, line, item.column + 1, item.code, item.message, fix))
    return sorted(out, key=lambda f: (int(f.cell[5:-1] or 0), f.line, f.column, f.code))


def error_location(result: FileResult) -> tuple[str, int, int, str]:
    """A failed file's ``(cell, line, column, reason)``; line 1, column 1 when the error names no place."""
    error = result.error or ""
    head, _, rest = error.partition(": ")
    parts = head.split(":")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        cell, line = locate(result, int(parts[0]))
        return cell, line, int(parts[1]) + 1, rest
    return "", 1, 1, error


def error_lines(results: Sequence[FileResult]) -> Iterator[str]:
    """``path:line:col: error: reason`` for each file that failed (left untouched), and for each notebook cell
    left unmigrated because it does not parse (``nb.ipynb:cell_3:1:1: error: cell not migrated: ...``)."""
    for result in results:
        if result.error:
            cell, line, column, reason = error_location(result)
            yield f"{result.display}:{cell}{line}:{column}: error: {reason}"
        for cell, line, column, reason in not_migrated(result):
            yield f"{result.display}:{cell}{line}:{column}: error: {reason}"


def concise_lines(results: Sequence[FileResult], mode: str) -> Iterator[str]:
    """``path:line:col: TPnnn [*] message``, one line per finding (ruff's concise form; ``[*]``: torchport
    rewrites it); a notebook's place reads ``nb.ipynb:cell_3:2:5``. After ``--apply`` only what is left
    (the diagnostics) is listed."""
    for result in results:
        for f in findings(result):
            if f.fix and mode == "apply":
                continue
            yield f"{f.path}:{f.cell}{f.line}:{f.column}: {f.code}{' [*]' if f.fix else ''} {f.message}"


def summary_line(results: Sequence[FileResult], mode: str) -> str:
    """One line for the end of a concise report: files changed (or that would change), rewrites,
    diagnostics, failures, files scanned."""
    changed = sum(r.changed for r in results)
    failed = sum(bool(r.error or not_migrated(r)) for r in results)
    rewrites = sum(sum(r.rewrites.values()) for r in results if not r.error)
    diagnostics = sum(len(r.diagnostics) for r in results)
    verb = "changed" if mode == "apply" else "would change"
    line = (f"torchport: {changed} file(s) {verb}, {rewrites} rewrite(s) [*], {diagnostics} diagnostic(s), "
            f"{failed} failed; {len(results)} file(s) scanned.")
    if mode != "apply" and changed:
        line += " Run with --apply to write the changes."
    return line


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_lines(results: Sequence[FileResult], root: Path, mode: str) -> Iterator[str]:
    """GitHub Actions workflow commands: ``::warning file=…,line=…,col=…,title=TPnnn::TPnnn message`` per
    finding (after ``--apply``, per diagnostic), ``::error`` per failed file; paths relative to ``root``."""
    for result in results:
        path = _escape_property(_relative(result, root))
        failures = [error_location(result)] if result.error else []
        for cell, line, column, reason in failures + not_migrated(result):
            yield (f"::error file={path},line={line},col={column},title={_escape_property('torchport error')}"
                   f"::{_escape_data(cell + reason)}")
        for f in findings(result):
            if f.fix and mode == "apply":
                continue
            title = _escape_property(f"{f.code} ({f.cell.rstrip(':')})" if f.cell else f.code)
            yield (f"::warning file={path},line={f.line},col={f.column},title={title}"
                   f"::{_escape_data(f'{f.code} {f.cell}{f.message}')}")


def statistics_lines(results: Sequence[FileResult]) -> Iterator[str]:
    """``--statistics`` as plain text: count, code, ``[*]`` for rewrites and rule name, per rule; then the
    CUDA-specific sites per file (rewritten, reported, unreported, share accounted for) and in total."""
    rules = _rules()
    rewrites: Counter[str] = Counter()
    for result in results:
        if not result.error:
            rewrites.update(result.rewrites)
    for code, count in sorted(rule_counts(results).items()):
        yield f"{count:6d}\t{code}\t{'[*] ' if code in rewrites else ''}{rules[code].name}"
    yield "rewritten\treported\tunreported\taccounted\tfile"  # the CUDA-specific sites, per file
    totals = [0, 0, 0]
    for stats in map(file_statistics, results):
        if stats.total:
            yield f"{stats.rewritten}\t{stats.reported}\t{stats.unreported}\t{stats.accounted:.1%}\t{stats.display}"
        totals = [totals[0] + stats.rewritten, totals[1] + stats.reported, totals[2] + stats.unreported]
    total = sum(totals)
    share = 1.0 if total == 0 else (totals[0] + totals[1]) / total
    yield f"{totals[0]}\t{totals[1]}\t{totals[2]}\t{share:.1%}\ttotal ({len(results)} files)"


def _relative(result: FileResult, root: Path) -> str:
    try:
        return Path(os.path.relpath(result.path.resolve(), root.resolve())).as_posix()
    except ValueError:
        return result.path.as_posix()


def to_json(results: Sequence[FileResult], root: Path, mode: str) -> str:
    """One JSON document: every file with its rewrites, diagnostics, error and site accounting.

    Args:
        results: one result per file scanned.
        root: paths are written relative to it.
        mode: ``dry-run``, ``check`` or ``apply``; says whether rewrites are pending or applied.
    """
    rules = _rules()
    files = []
    for result in results:
        stats = file_statistics(result)

        def place(line: int, column: int, result: FileResult = result) -> dict[str, Any]:
            cell, line = locate(result, line)
            return {**({"cell": int(cell[5:-1])} if cell else {}), "line": line, "column": column + 1}

        files.append({
            "path": _relative(result, root),
            "changed": result.changed,
            "error": result.error,
            **({"not_migrated": [{"cell": int(c[5:-1]), "line": line, "column": col, "reason": why}
                                 for c, line, col, why in not_migrated(result)]} if not_migrated(result) else {}),
            "rewrites": [{"code": s.code, **place(s.line, s.column), "message": s.message}
                         for s in result.sites] if not result.error else [],
            "diagnostics": [{"code": d.code, **place(d.line, d.column), "message": d.message,
                             "effort": rules[d.code].effort} for d in result.diagnostics],
            "sites": {"rewritten": stats.rewritten, "reported": stats.reported, "unreported": stats.unreported},
        })
    return json.dumps({"tool": "torchport", "version": __version__, "mode": mode, "files": files}, indent=2)


def _region(line: int, column: int, end_line: int, end_column: int, text: str) -> dict[str, Any]:
    """A SARIF replacement: the region (1-based lines and columns, end exclusive) and the text put there."""
    return {"deletedRegion": {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column},
            "insertedContent": {"text": text}}


def _extents(source: str, sites: Sequence[Any]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where each site's code is: ``((line, column), (end line, end column))``, columns from 0 in characters;
    the widest expression that starts where the site does (CPython's ``ast``), else the rest of its line."""
    import ast

    from torchport.codemods.analysis.source import parse

    lines = source.splitlines()
    widest: dict[tuple[int, int], tuple[int, int]] = {}
    tree = parse(source)

    def chars(line: int, offset: int) -> int:  # ast counts UTF-8 bytes
        return len(lines[line - 1].encode()[:offset].decode(errors="ignore")) if 0 < line <= len(lines) else offset

    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.expr) and node.end_lineno is not None and node.end_col_offset is not None:
            begin = (node.lineno, chars(node.lineno, node.col_offset))
            finish = (node.end_lineno, chars(node.end_lineno, node.end_col_offset))
            widest[begin] = max(widest.get(begin, finish), finish)
    return [((s.line, s.column), widest.get((s.line, s.column), (s.line, 1 << 30))) for s in sites]


def _site_fixes(result: FileResult) -> list[list[dict[str, Any]]]:
    """Each rewrite's own replacements (in ``result.sites`` order), so that a SARIF fix applies one rewrite.

    A changed line that keeps its place is split at the characters that changed, each change going to the
    innermost rewrite whose code holds it (``tp.device()`` for the ``"cuda"`` inside ``torch.ones(2,
    device="cuda").cuda()``, the ``.cuda()`` rewrite for the rest); a block whose lines do not pair up (a
    wrapped call) goes whole to the first rewrite in it. Lines only added where no rewrite is (the runtime
    import) go to every fix, so that each one alone gives code that runs; lines only removed there (an import
    left unused once every rewrite is applied) go to none.
    """
    before = (result.original or "").splitlines(keepends=True)
    after = (result.migrated or "").splitlines(keepends=True)
    sites = result.sites
    extents = _extents(result.original or "", sites)
    own: list[list[dict[str, Any]]] = [[] for _ in sites]
    shared: list[dict[str, Any]] = []

    def owner(inside: list[int], line: int, column: int) -> int:
        holding = [k for k in inside if extents[k][0] <= (line, column) <= extents[k][1]]
        if holding:  # the innermost: it starts last, and ends first
            return max(holding, key=lambda k: (extents[k][0], (-extents[k][1][0], -extents[k][1][1])))
        return max((k for k in inside if extents[k][0] <= (line, column)), key=lambda k: extents[k][0],
                   default=inside[0])

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        inside = [k for k, site in enumerate(sites) if i1 < site.line <= max(i2, i1 + 1)]
        if not inside:
            if tag == "insert":
                shared.append(_region(i1 + 1, 1, i1 + 1, 1, "".join(after[j1:j2])))
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            own[inside[0]].append(_region(i1 + 1, 1, i2 + 1, 1, "".join(after[j1:j2])))
            continue
        for offset in range(i2 - i1):
            line, old, new = i1 + offset + 1, before[i1 + offset], after[j1 + offset]
            spans: dict[int, list[int]] = {}  # owner -> [old start, old end, new start, new end]
            for ctag, c1, c2, d1, d2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
                if ctag != "equal":
                    span = spans.setdefault(owner(inside, line, c1), [c1, c2, d1, d2])
                    span[1], span[3] = c2, d2
            for k, (c1, c2, d1, d2) in spans.items():
                own[k].append(_region(line, c1 + 1, line, c2 + 1, new[d1:d2]))
    return [regions + shared if regions else [] for regions in own]


def _location(uri: str, result: FileResult, line: int, column: int) -> dict[str, Any]:
    """A SARIF location; in a notebook the region is the line in its cell, which a property names."""
    cell, line = locate(result, line)
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "ROOT"},
                                                     "region": {"startLine": line, "startColumn": column + 1}}}
    if cell:
        location["properties"] = {"cell": int(cell[5:-1])}
    return location


def to_sarif(results: Sequence[FileResult], root: Path, mode: str) -> str:
    """A SARIF 2.1.0 log: every diagnostic and every pending or applied rewrite is a result.

    A pending rewrite carries its own replacement as a SARIF ``fix`` (`_site_fixes`): applying the fix of one
    result applies that rewrite alone.
    """
    rules = [{
        "id": code, "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "help": {"text": f"{rule.before}  ->  {rule.after}" if rule.after else rule.before},
        "properties": {"safety": rule.safety, **({"effort": rule.effort} if rule.effort else {})},
    } for code, rule in _rules().items()]
    sarif_results: list[dict[str, Any]] = []
    notifications = []
    for result in results:
        uri = _relative(result, root)
        if result.error:
            notifications.append({"level": "error", "message": {"text": result.error},
                                  "locations": [_location(uri, result, 1, 0)]})
            continue
        for cell, line, column, reason in not_migrated(result):
            place = {"artifactLocation": {"uri": uri, "uriBaseId": "ROOT"},
                     "region": {"startLine": line, "startColumn": column}}
            notifications.append({"level": "error", "message": {"text": reason},
                                  "locations": [{"physicalLocation": place, "properties": {"cell": int(cell[5:-1])}}]})
        applied = mode == "apply"  # SARIF: a result whose kind is not "fail" has level "none"
        fixes = (_site_fixes(result) if result.changed and not applied and not isinstance(result, NotebookResult)
                 else [[] for _ in result.sites])
        file_results = []
        for site, replacements in zip(result.sites, fixes):
            file_results.append({
                "ruleId": site.code, "level": "none" if applied else "note", "kind": "pass" if applied else "fail",
                "message": {"text": f"{site.message} ({'applied' if applied else 'pending'})"},
                "locations": [_location(uri, result, site.line, site.column)],
                **({"fixes": [{"description": {"text": f"{site.code}: {site.message}"},
                               "artifactChanges": [{"artifactLocation": {"uri": uri, "uriBaseId": "ROOT"},
                                                    "replacements": replacements}]}]} if replacements else {}),
            })
        for diag in result.diagnostics:
            file_results.append({
                "ruleId": diag.code, "level": _LEVEL.get(_rules()[diag.code].effort or "", "warning"),
                "message": {"text": diag.message}, "locations": [_location(uri, result, diag.line, diag.column)],
            })
        sarif_results.extend(file_results)
    log = {
        "version": "2.1.0", "$schema": _SARIF_SCHEMA,
        "runs": [{
            "tool": {"driver": {"name": "torchport", "version": __version__,
                                "rules": rules}},
            "originalUriBaseIds": {"ROOT": {"uri": root.resolve().as_uri() + "/"}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "results": sarif_results,
        }],
    }
    return json.dumps(log, indent=2)
