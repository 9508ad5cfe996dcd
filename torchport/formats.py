"""Machine-readable reports: `--format json` and `--format sarif` (SARIF 2.1.0)."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchport import __version__
from torchport.codemods import RULES
from torchport.engine import FileResult
from torchport.statistics import file_statistics

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"info": "note", "low": "warning", "medium": "warning", "high": "error"}


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
    files = []
    for result in results:
        stats = file_statistics(result)
        files.append({
            "path": _relative(result, root),
            "changed": result.changed,
            "error": result.error,
            "rewrites": [{"code": s.code, "line": s.line, "column": s.column + 1, "message": s.message}
                         for s in getattr(result, "sites", [])],
            "diagnostics": [{"code": d.code, "line": d.line, "column": d.column + 1, "message": d.message,
                             "effort": RULES[d.code].effort} for d in result.diagnostics],
            "sites": {"rewritten": stats.rewritten, "reported": stats.reported, "unreported": stats.unreported},
        })
    return json.dumps({"tool": "torchport", "version": __version__, "mode": mode, "files": files}, indent=2)


def _hunks(result: FileResult) -> list[tuple[int, int, str]]:
    """Line-based replacements (first line, end line exclusive, new text), 1-based, that make the change."""
    before = (result.original or "").splitlines(keepends=True)
    after = (result.migrated or "").splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return [(i1 + 1, i2 + 1, "".join(after[j1:j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _location(uri: str, line: int, column: int) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "ROOT"},
                                 "region": {"startLine": line, "startColumn": column + 1}}}


def to_sarif(results: Sequence[FileResult], root: Path, mode: str) -> str:
    """A SARIF 2.1.0 log: every diagnostic and every pending or applied rewrite is a result.

    Rewrites carry the line-level replacement that makes them as a SARIF ``fix`` (each diff hunk is
    attached to the first rewrite inside it, or to the file's first rewrite for an added import).
    """
    rules = [{
        "id": code, "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "help": {"text": f"{rule.before}  ->  {rule.after}" if rule.after else rule.before},
        "properties": {"safety": rule.safety, **({"effort": rule.effort} if rule.effort else {})},
    } for code, rule in RULES.items()]
    sarif_results: list[dict[str, Any]] = []
    notifications = []
    for result in results:
        uri = _relative(result, root)
        if result.error:
            notifications.append({"level": "error", "message": {"text": result.error},
                                  "locations": [_location(uri, 1, 0)]})
            continue
        file_results = []
        for site in getattr(result, "sites", []):
            file_results.append({
                "ruleId": site.code, "level": "note", "kind": "pass" if mode == "apply" else "fail",
                "message": {"text": f"{site.message} ({'applied' if mode == 'apply' else 'pending'})"},
                "locations": [_location(uri, site.line, site.column)],
            })
        if result.changed and file_results:
            for start, end, text in _hunks(result):
                owner = next((r for r in file_results
                              if start <= r["locations"][0]["physicalLocation"]["region"]["startLine"] < max(end, start + 1)),
                             file_results[0])
                fix = owner.setdefault("fixes", [{"description": {"text": "torchport migrate --apply"},
                                                  "artifactChanges": [{"artifactLocation": {"uri": uri, "uriBaseId": "ROOT"},
                                                                       "replacements": []}]}])
                fix[0]["artifactChanges"][0]["replacements"].append({
                    "deletedRegion": {"startLine": start, "startColumn": 1, "endLine": end, "endColumn": 1},
                    "insertedContent": {"text": text},
                })
        for diag in result.diagnostics:
            file_results.append({
                "ruleId": diag.code, "level": _LEVEL.get(RULES[diag.code].effort or "", "warning"),
                "message": {"text": diag.message}, "locations": [_location(uri, diag.line, diag.column)],
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
