"""The prefilter, one statement at a time: which statements of a module no rule can match.

A file that passes the text prefilter usually mentions CUDA in a few places only (a docstring
example, one method). Walking every node of it with LibCST's Python visitor cost four times the
parse, so the transformer skips each top-level statement, class-body statement and function-body
statement whose lines match no rule's trigger. The lines come from CPython's ``ast`` (fast, in C),
matched to LibCST statements by position in their lists; any disagreement between the two trees
turns the skipping off for the whole module.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Sequence

import libcst as cst

# LibCST compound statement -> the ast classes it may correspond to.
_COMPOUND = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.Try: (ast.Try,),
    cst.TryStar: (getattr(ast, "TryStar", ast.Try),),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Match: (getattr(ast, "Match", ast.If),),
}
_ALL_COMPOUND = tuple({kind for kinds in _COMPOUND.values() for kind in kinds})


class _Mismatch(Exception):
    """The LibCST and ast statement lists do not line up."""


def trigger_lines(source: str, pattern: re.Pattern[str]) -> list[int]:
    """Sorted line numbers (from 1) that a match of ``pattern`` touches (a match may span lines)."""
    starts = [0]
    starts.extend(m.end() for m in re.finditer(r"\r\n|\r|\n", source))
    lines: set[int] = set()
    for match in pattern.finditer(source):
        first = bisect.bisect_right(starts, match.start())
        last = bisect.bisect_right(starts, max(match.start(), match.end() - 1))
        lines.update(range(first, last + 1))
    return sorted(lines)


def quiet_statements(module: cst.Module, tree: ast.Module, lines: Sequence[int]) -> set[int]:
    """``id()`` of each statement of ``module`` that spans none of ``lines``.

    Args:
        module: the LibCST tree.
        tree: CPython's tree of the same source.
        lines: sorted line numbers where some rule's trigger matches (see `trigger_lines`).

    Returns an empty set when the two trees do not line up (nothing is skipped then).
    """
    quiet: set[int] = set()
    try:
        _walk(module.body, tree.body, lines, quiet)
    except _Mismatch:
        return set()
    return quiet


def _walk(statements: Sequence[cst.CSTNode], nodes: Sequence[ast.stmt], lines: Sequence[int], quiet: set[int]) -> None:
    index = 0
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            count = len(statement.body)
            matched = nodes[index:index + count]
            if len(matched) != count or any(isinstance(n, _ALL_COMPOUND) for n in matched):
                raise _Mismatch
        else:
            kinds = _COMPOUND.get(type(statement))
            if kinds is None or index >= len(nodes) or not isinstance(nodes[index], kinds):
                raise _Mismatch
            matched = nodes[index:index + 1]
            count = 1
        index += count
        first = min(min((d.lineno for d in getattr(n, "decorator_list", ())), default=n.lineno) for n in matched)
        last = max(n.end_lineno or n.lineno for n in matched)
        spot = bisect.bisect_left(lines, first)
        if spot == len(lines) or lines[spot] > last:
            quiet.add(id(statement))
        elif isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and isinstance(statement.body, cst.IndentedBlock):
            _walk(statement.body.body, matched[0].body, lines, quiet)  # type: ignore[attr-defined]
    if index != len(nodes):
        raise _Mismatch

