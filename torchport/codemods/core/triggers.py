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
from collections.abc import Iterator, Sequence
from typing import AnyStr

import libcst as cst

from torchport.codemods.analysis.names import Imports, blocks
from torchport.codemods.core.registry import LOOSE_TRIGGERS, TRIGGERS

TRIGGER_PATTERN = re.compile(TRIGGERS)
LOOSE_PATTERN = re.compile(LOOSE_TRIGGERS)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_STRING_START = re.compile(r"""\s*[rRuUbBfF]{0,2}['"]""")

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


def trigger_lines(source: str, pattern: re.Pattern[str], tree: ast.Module | None = None,
                  loose: re.Pattern[str] | None = None) -> list[int]:
    """Sorted line numbers (from 1) that a match of ``pattern`` touches (a match may span lines).

    ``loose``, a pattern whose matches include every match of ``pattern``, finds the candidate lines
    fast; ``pattern`` then runs on those lines only.

    With CPython's ``tree`` of ``source``, matches that are only text are left out: in a comment,
    in a docstring-like string statement, or on the inner lines of a multi-line string value. No
    rule matches inside them (device literals are short, one-line strings).
    """
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(source))
    text = _text_lines(source, starts, tree) if tree is not None else set()
    lines: set[int] = set()
    for match in confirmed_matches(source, pattern, loose):
        first = bisect.bisect_right(starts, match.start())
        last = bisect.bisect_right(starts, max(match.start(), match.end() - 1))
        if first == last and _in_comment(source[starts[first - 1]:match.start()]):
            continue
        lines.update(line for line in range(first, last + 1) if line not in text)
    return sorted(lines)


def confirmed_matches(data: AnyStr, exact: re.Pattern[AnyStr],
                      loose: re.Pattern[AnyStr] | None) -> Iterator[re.Match[AnyStr]]:
    """The matches of ``exact`` in ``data`` (text or bytes), each looked for only on the lines where ``loose``,
    whose matches include every match of ``exact``, finds a candidate: the loose scan is several times faster."""
    if loose is None:
        yield from exact.finditer(data)
        return
    newline = "\n" if isinstance(data, str) else b"\n"
    done = 0  # the exact pattern has run on data[:done]
    for candidate in loose.finditer(data):
        if candidate.start() < done:
            continue
        begin = data.rfind(newline, 0, candidate.start()) + 1
        end = data.find(newline, max(candidate.start(), candidate.end() - 1))
        end = len(data) if end < 0 else end + 1
        yield from exact.finditer(data, max(begin, done), end)
        done = end


def code_trigger_lines(source: str, tree: ast.Module, imports: Imports) -> list[int]:
    """`trigger_lines` of every rule's trigger, and of the bare names imported from a module that
    has one (``from torch.cuda import Event`` makes ``Event`` a trigger)."""
    aliases = sorted(a for a, names in imports.items() if any(map(TRIGGER_PATTERN.search, names)))
    if not aliases:
        return trigger_lines(source, TRIGGER_PATTERN, tree, LOOSE_PATTERN)
    words = [re.escape(a) for a in aliases]
    pattern = re.compile("|".join([TRIGGERS, *(rf"\b{w}\b" for w in words)]))
    return trigger_lines(source, pattern, tree, re.compile("|".join([LOOSE_TRIGGERS, *words])))


def _in_comment(before: str) -> bool:
    """Whether a match preceded on its line by ``before`` is in a comment: a ``#`` with no quote
    before it (a ``#`` after a quote may be inside a string; then the match counts)."""
    hash_at = before.find("#")
    return hash_at >= 0 and "'" not in before[:hash_at] and '"' not in before[:hash_at]


def _starts_string(line: str) -> bool:
    return bool(_STRING_START.match(line))


def _text_lines(source: str, starts: list[int], tree: ast.Module) -> set[int]:
    """Lines that hold nothing but string text: docstring-like statements, inner lines of
    multi-line string values."""

    def line(number: int) -> str:
        end = starts[number] if number < len(starts) else len(source)
        return source[starts[number - 1]:end]

    text: set[int] = set()
    for block in blocks(tree):
        for index, statement in enumerate(block):
            value = getattr(statement, "value", None)
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                continue
            if isinstance(statement, ast.Expr) and (" " in value.value or "\n" in value.value):
                low, high = statement.lineno, statement.end_lineno or statement.lineno
                # Not a line shared with other code: `x = 1; "doc"`, `def f(): "doc"`.
                if (index and (block[index - 1].end_lineno or 0) >= low) or not _starts_string(line(low)):
                    low += 1
                if (index + 1 < len(block) and block[index + 1].lineno <= high) or not _ends_string(line(high)):
                    high -= 1
                text.update(range(low, high + 1))
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and (value.end_lineno or 0) - value.lineno >= 2:
                text.update(range(value.lineno + 1, value.end_lineno or 0))
    return text


def _ends_string(line: str) -> bool:
    return line.rstrip().endswith(("'", '"'))


# id() of a statement -> (its first line, the indentation of the block it is in).
Anchors = dict[int, tuple[int, tuple[str, ...]]]


def map_statements(module: cst.Module, tree: ast.Module, lines: Sequence[int]) -> tuple[set[int], Anchors]:
    """Match the statements of ``module`` with CPython's: which to skip, and where the others start.

    Args:
        module: the LibCST tree.
        tree: CPython's tree of the same source.
        lines: sorted line numbers where some rule's trigger matches (see `trigger_lines`).

    Returns ``(quiet, anchors)``: the ``id()`` of each statement (top level, or in the body of a
    class or function that is not quiet) that spans none of ``lines``; and for each such statement
    that is not quiet, its first line and indentation, from which `Positions` places its nodes.
    Both are empty when the two trees do not line up (nothing is skipped then).
    """
    quiet: set[int] = set()
    anchors: Anchors = {}
    try:
        _walk(module, module.body, tree.body, lines, (), quiet, anchors)
    except _Mismatch:
        return set(), {}
    return quiet, anchors


def _walk(
    module: cst.Module,
    statements: Sequence[cst.CSTNode],
    nodes: Sequence[ast.stmt],
    lines: Sequence[int],
    indent: tuple[str, ...],
    quiet: set[int],
    anchors: Anchors,
) -> None:
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
            continue
        anchors[id(statement)] = (matched[0].lineno, indent)  # as LibCST places it: after decorators
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and isinstance(statement.body, cst.IndentedBlock):
            inner = indent + (module.default_indent if statement.body.indent is None else statement.body.indent,)
            _walk(module, statement.body.body, matched[0].body, lines, inner, quiet, anchors)  # type: ignore[attr-defined]
    if index != len(nodes):
        raise _Mismatch

