"""Where a module-level line that torchport adds goes (native's ``DEVICE = ...``, the vendored runtime's
``sys.path`` line), and the blank lines around it.

It goes after the module's docstring, ``__future__`` imports and leading imports (and after torch's own
import where that comes later), and after a top-level ``sys.path`` change above the first ``def`` or ``class``
with the imports right after it (``sys.path.insert(0, ROOT)``, then the project's imports: an import the port
adds may need that folder too), as a person would put it. The blank lines are those pycodestyle and
isort (ruff's ``E3`` and ``I001``) want: one after the imports, two before a ``def`` or ``class`` that
follows (or after one that precedes). A comment above the statement that followed stays with it: it
documents that statement, not the added line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst

from torchport.emit.names import dotted_name
from torchport.emit.patterns import PATH_CHANGE

_DEFINITIONS = (cst.FunctionDef, cst.ClassDef)


def _smalls(statement: cst.BaseStatement) -> Sequence[cst.BaseSmallStatement]:
    return statement.body if isinstance(statement, cst.SimpleStatementLine) else ()


def imports_only(statement: cst.BaseStatement) -> bool:
    """Whether ``statement`` is a line of imports alone, or a ``try`` of them whose handlers only import, pass or
    bind names (e3_diffusion's ``try: from rdkit import Chem`` / ``except ModuleNotFoundError: pass``, which its
    authors keep first)."""
    if isinstance(statement, cst.Try):
        return not statement.finalbody and bool(statement.handlers) and all(
            isinstance(s, cst.BaseStatement) and imports_only(s) for s in statement.body.body) and all(
            isinstance(s, cst.SimpleStatementLine) and all(isinstance(small, (cst.Import, cst.ImportFrom, cst.Pass,
                                                                              cst.Assign)) for small in s.body)
            for block in (*statement.handlers, *((statement.orelse,) if statement.orelse else ()))
            for s in block.body.body)
    small = _smalls(statement)
    return bool(small) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in small)


def path_change(body: Sequence[cst.BaseStatement], source: str | None = None) -> int | None:
    """The index in ``body`` of the last top-level statement above the first ``def`` or ``class`` that
    changes ``sys.path`` (an ``if`` around one counts), else None. ``source``: the module's text, when the caller
    has it: one without ``sys.path`` has none, and no statement's code is generated."""
    if source is not None and "sys.path" not in source:
        return None
    last = None
    for index, statement in enumerate(body):
        if isinstance(statement, _DEFINITIONS):
            break
        if isinstance(statement, (cst.SimpleStatementLine, cst.If)) and PATH_CHANGE.search(
                cst.Module([]).code_for_node(statement)):
            last = index
    return last


def after_imports(body: Sequence[cst.BaseStatement], also_after: Callable[[cst.BaseStatement], bool],
                  uses: Callable[[cst.BaseStatement], bool] = lambda _: False, source: str | None = None) -> int:
    """The index in ``body`` after the docstring and the leading imports, after the last statement
    ``also_after`` accepts (torch's own import, when it comes later), and after the last ``sys.path``
    change (`path_change`) unless a statement before it ``uses`` what is placed; then after the imports
    right after it."""
    at = 0
    for index, statement in enumerate(body):
        small = _smalls(statement)
        docstring = index == 0 and len(small) == 1 and isinstance(small[0], cst.Expr) and isinstance(
            small[0].value, (cst.SimpleString, cst.ConcatenatedString))
        if not (docstring or imports_only(statement)):
            break
        at = index + 1
    for index, statement in enumerate(body):
        if also_after(statement):
            at = max(at, index + 1)
    change = path_change(body, source)
    if change is not None and change >= at and not any(uses(s) for s in body[at:change + 1]):
        at = change + 1
    while at < len(body) and imports_only(body[at]):
        at += 1
    return at


def _binds_torch(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(s, cst.Import) and any((dotted_name(a.name) or "").split(".")[0] == "torch" for a in s.names)
        for s in statement.body)


def torch_try(body: Sequence[cst.BaseStatement]) -> cst.Try | None:
    """The top-level ``try`` that imports torch in a module that imports it nowhere else at its top level
    (ssqueezepy's ``try: import torch`` / ``except ImportError: torch = None``), else None. What the port adds
    that loads torch goes in its ``else`` (`into_else`): at the top it would raise where the module allows torch
    to be missing."""
    if any(_binds_torch(s) for s in body):
        return None
    return next((s for s in body if isinstance(s, cst.Try) and s.handlers
                 and any(_binds_torch(x) for x in s.body.body)), None)


def into_else(module: cst.Module, guard: cst.Try, statements: Sequence[cst.BaseStatement],
              name: str | None = None) -> cst.Module:
    """``statements`` put first in the ``else`` of ``guard`` (a ``try`` of ``module.body`` that `torch_try`
    gave), made if missing: they run once torch has imported, and an error of theirs is not read as torch
    missing, as it would be inside the ``try``. Where the ``try`` body itself reads ``name`` (the runtime's alias,
    native's ``DEVICE``: a statement of it the port rewrote), they go in the body, right after torch's import."""
    added = [s.with_changes(leading_lines=()) for s in statements]
    if name is not None and re.search(rf"\b{re.escape(name)}\b", cst.Module([]).code_for_node(guard.body)):
        inner = list(guard.body.body)
        at = next(i for i, s in enumerate(inner) if _binds_torch(s)) + 1
        placed = guard.with_changes(body=guard.body.with_changes(body=[*inner[:at], *added, *inner[at:]]))
    elif guard.orelse is None:
        placed = guard.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=added)))
    else:
        placed = guard.with_changes(orelse=guard.orelse.with_changes(body=guard.orelse.body.with_changes(
            body=[*added, *guard.orelse.body.body])))
    return module.with_changes(body=[placed if s is guard else s for s in module.body])


def _blank(count: int) -> list[cst.EmptyLine]:
    return [cst.EmptyLine() for _ in range(count)]


def insert(module: cst.Module, at: int,
           statements: Sequence[cst.SimpleStatementLine | cst.BaseCompoundStatement]) -> cst.Module:
    """``statements`` inserted at ``module.body[at]``, with the blank lines the module docstring describes."""
    body: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = list(module.body)
    before = body[at - 1] if at else None
    after = body[at] if at < len(body) else None
    lines = list(after.leading_lines) if after is not None else []
    gap = 0  # blank lines above the statement that followed, before its comments
    while gap < len(lines) and lines[gap].comment is None:
        gap += 1
    comments = lines[gap:]
    if before is None:
        lead = 0 if not module.header else 1
    elif isinstance(before, _DEFINITIONS):
        lead = 2
    else:
        lead = 1 if imports_only(before) else min(max(gap, 1), 2)
        if imports_only(before) and imports_only(statements[0]):
            lead = 0  # an import among imports
    new = [s.with_changes(leading_lines=[*_blank(lead), *s.leading_lines]) if i == 0 else s
           for i, s in enumerate(statements)]
    if after is not None:
        # a comment block right under the added line would read as documenting it: one blank line at least
        follow = 2 if isinstance(after, _DEFINITIONS) else min(max(gap, 1 if comments else 0), 2)
        if imports_only(statements[-1]):
            follow = max(follow, 1)  # isort: a blank line after imports
        body[at] = after.with_changes(leading_lines=_blank(follow) + comments)
    body[at:at] = new
    return module.with_changes(body=body)
