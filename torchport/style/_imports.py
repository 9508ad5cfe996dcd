"""Imports after a port: move the ones it added where the project's sorter would put them, and drop the
ones it left unused.

Only top-level, unconditional import statements alone on their lines are touched; the project's own
imports are never reordered.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections import Counter
from pathlib import Path

from torchport.emit.patterns import PATH_CHANGE
from torchport.style._config import SECTIONS, Style

_STDLIB = frozenset(sys.stdlib_module_names)
# A string that reads as a type expression ("torch.Tensor", "Optional[torch.Tensor]"), not prose.
_DOTTED = re.compile(r"\w+(\.[\w.]+(\[[\w.\[\], |]*\])?|\[[\w.\[\], |]*\])")
Import = ast.Import | ast.ImportFrom


def _lines(code: str) -> list[str]:
    return code.splitlines(keepends=True)


def _newline(code: str) -> str:
    return "\r\n" if "\r\n" in code.split("\n", 1)[0] + "\n" else "\n"


def _top_imports(tree: ast.Module) -> list[Import]:
    return [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]


def _end(stmt: ast.stmt) -> int:
    """The last line of ``stmt`` (CPython always sets it on a parsed statement)."""
    return stmt.end_lineno or stmt.lineno


def _alone(stmt: ast.stmt, lines: list[str]) -> bool:
    """Whether ``stmt`` is the only statement on its lines (no ``;``, nothing before it)."""
    first, last = lines[stmt.lineno - 1], lines[stmt.end_lineno - 1]  # type: ignore[operator]
    if first[: stmt.col_offset].strip():
        return False
    rest = last[stmt.end_col_offset:].strip()
    return not rest or rest.startswith("#")


# ---- sections and order -------------------------------------------------------------------------


def section(stmt: Import, style: Style, path: Path) -> int:
    """The index in `SECTIONS` of the section ``stmt`` belongs to, as ruff and isort classify it."""
    if isinstance(stmt, ast.ImportFrom) and stmt.level:
        return SECTIONS.index("local-folder")
    module = (stmt.module or "") if isinstance(stmt, ast.ImportFrom) else stmt.names[0].name
    top = module.split(".")[0]
    if top == "__future__":
        return 0
    if style.no_sections:
        return 1
    for name, known in (("first-party", style.known_first_party), ("third-party", style.known_third_party),
                        ("local-folder", style.known_local_folder)):
        if any(module == k or module.startswith(k + ".") for k in known):
            return SECTIONS.index(name)
    if top in _STDLIB:
        return SECTIONS.index("stdlib")
    if top != "torchport" and _first_party(top, style.src, path.parent):
        return SECTIONS.index("first-party")
    return SECTIONS.index("third-party")


@functools.lru_cache(maxsize=4096)
def _first_party(top: str, src: tuple[Path, ...], folder: Path) -> bool:
    """Whether module ``top`` is a folder or file in ``src``, or (ruff's ``detect-same-package``) a
    package that the files in ``folder`` live inside."""
    if any((s / top).is_dir() or (s / f"{top}.py").is_file() for s in src):
        return True
    folder = folder.resolve()
    while (folder / "__init__.py").is_file():
        if folder.name == top:
            return True
        folder = folder.parent
    return False


def sort_key(stmt: Import, style: Style) -> tuple:
    """Where ``stmt`` sorts within its section."""
    is_from = isinstance(stmt, ast.ImportFrom)
    module = ("." * stmt.level + (stmt.module or "")) if is_from else stmt.names[0].name  # type: ignore[union-attr]
    group = 0 if style.force_sort_within_sections else int(is_from != style.from_first)
    alias = stmt.names[0]
    folded = module if style.case_sensitive else module.lower()
    return (group, folded, module, int(is_from), alias.name.lower(), alias.asname or "")


# ---- unused imports -----------------------------------------------------------------------------


def _strings_naming(tree: ast.Module, wanted: set[str]) -> set[str]:
    """Which of ``wanted`` strings may refer to: string annotations, ``__all__``, and dotted strings like
    ``"torch.Tensor"`` (type checkers and ruff read those). Only strings containing a wanted name are parsed."""
    names: set[str] = set()
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(wanted))) + r")\b")

    def parse(text: str, bare: bool) -> None:
        if not pattern.search(text) or not (bare or _DOTTED.fullmatch(text.strip())):
            return
        try:
            expr = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, ValueError):
            return
        if bare or not isinstance(expr.body, ast.Name):
            names.update(n.id for n in ast.walk(expr) if isinstance(n, ast.Name))

    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
            parse(node.value, bare=False)
    for node in tree.body:  # __all__ = [...] or __all__ += [...]
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            names.update(c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))
    for annotation in annotations:
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                parse(node.value, bare=True)
    return names & wanted


def _used(tree: ast.Module, wanted: set[str]) -> set[str]:
    """Which of ``wanted`` the module names: as a name anywhere, in ``global``/``nonlocal``, or in a string."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in wanted:
            used.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            used.update(wanted.intersection(node.names))
    return used | _strings_naming(tree, wanted - used)


def _bound(alias: ast.alias, stmt: Import) -> str:
    if alias.asname:
        return alias.asname
    return alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name


def remove_unused(original: str, migrated: str, path: Path) -> str:
    """``migrated`` without the imports the port made unused: bound in ``original``, used there, and
    named nowhere in ``migrated``. An ``__init__.py`` (re-exports), a ``# noqa`` line and an import the
    original already left unused are kept."""
    if path.name == "__init__.py":
        return migrated
    before, after = ast.parse(original), ast.parse(migrated)
    kept_before = {ast.dump(s) for s in _top_imports(before)}
    lines = _lines(migrated)
    candidates: list[Import] = []
    for stmt in _top_imports(after):
        if ast.dump(stmt) not in kept_before or not _alone(stmt, lines) or "noqa" in lines[_end(stmt) - 1]:
            continue
        if isinstance(stmt, ast.ImportFrom) and (stmt.module == "__future__" or stmt.names[0].name == "*"):
            continue
        candidates.append(stmt)
    wanted = {_bound(a, stmt) for stmt in candidates for a in stmt.names}
    unused_after = wanted - _used(after, wanted) if wanted else set()
    gone_names = _used(before, unused_after) if unused_after else set()
    removals = [(stmt, [a for a in stmt.names if _bound(a, stmt) in gone_names]) for stmt in candidates]
    for stmt, gone in reversed(removals):
        if not gone:
            continue
        kept = [a for a in stmt.names if a not in gone]
        first, last = stmt.lineno - 1, _end(stmt)
        if not kept:
            lines = _delete(lines, first, last)
        elif first + 1 == last and "#" not in lines[first]:
            lines[first] = _rewritten(stmt, kept, lines[first])
    return "".join(lines)


def _rewritten(stmt: Import, kept: list[ast.alias], line: str) -> str:
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
    head = f"from {'.' * stmt.level}{stmt.module or ''} import " if isinstance(stmt, ast.ImportFrom) else "import "
    ending = line[len(line.rstrip("\r\n")):]
    return line[: stmt.col_offset] + head + names + ending


def _blank(line: str) -> bool:
    return not line.strip()


def _delete(lines: list[str], first: int, last: int) -> list[str]:
    """``lines`` without ``lines[first:last]``; the blank lines around the gap become as many as the
    larger side had, so no section or module spacing doubles."""
    above = 0
    while first - above - 1 >= 0 and _blank(lines[first - above - 1]):
        above += 1
    below = 0
    while last + below < len(lines) and _blank(lines[last + below]):
        below += 1
    keep = max(above, below) if first - above > 0 and last + below < len(lines) else 0
    blanks = (lines[first - above: first] + lines[last: last + below])[:keep]
    return lines[: first - above] + blanks + lines[last + below:]


# ---- placing added imports ----------------------------------------------------------------------


def _blocks(tree: ast.Module) -> list[list[Import]]:
    """Runs of consecutive top-level import statements (what an import sorter sorts as one)."""
    blocks: list[list[Import]] = []
    previous: ast.stmt | None = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if isinstance(previous, (ast.Import, ast.ImportFrom)):
                blocks[-1].append(stmt)
            else:
                blocks.append([stmt])
        previous = stmt
    return blocks


def _leading_comments(lines: list[str], tree: ast.Module, stmt: ast.stmt) -> int:
    """The 0-based line where ``stmt`` starts with the comment lines right above it (not above the
    statement before it)."""
    floor = max((s.end_lineno or 0 for s in tree.body if (s.end_lineno or 0) < stmt.lineno), default=0)
    start = stmt.lineno - 1
    while start - 1 >= floor and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start


def place_added(original: str, migrated: str, style: Style, path: Path) -> str:
    """``migrated`` with each top-level import it has and ``original`` lacks moved to where the
    project's import sorter would put it."""
    before = Counter(ast.dump(s) for s in _top_imports(ast.parse(original)))
    for _ in range(8):  # one import a pass: positions change after each move
        tree = ast.parse(migrated)
        lines = _lines(migrated)
        added = None
        remaining = before.copy()
        for stmt in _top_imports(tree):
            key = ast.dump(stmt)
            if remaining[key] > 0:
                remaining[key] -= 1
            elif added is None and _alone(stmt, lines):
                added = stmt
        if added is None:
            return migrated
        moved = _move(migrated, added, style, path)
        before[ast.dump(added)] += 1  # placed (or left where it is): it counts as the project's from now on
        migrated = migrated if moved is None else moved
    return migrated


def _move(code: str, added: Import, style: Style, path: Path) -> str | None:
    lines = _lines(code)
    text = "".join(lines[added.lineno - 1: added.end_lineno]).strip("\r\n")
    newline = _newline(code)
    kind = section(added, style, path)
    key = sort_key(added, style)
    rest = _delete(lines, added.lineno - 1, added.end_lineno)  # type: ignore[arg-type]
    tree = ast.parse("".join(rest))
    blocks = _blocks(tree)
    change = _path_change(tree, rest)
    if change is not None and change < added.lineno:  # it may need that change: not above it
        blocks = [b for b in blocks if b[0].lineno > change]
    target = next((b for b in blocks if any(section(s, style, path) == kind for s in b)), None)
    if target is None:
        # its own block: the one it was placed at the end of (or the start of)
        target = next((b for b in blocks if b[-1].end_lineno == added.lineno - 1 or b[0].lineno >= added.lineno), None)
        if target is None:
            return None
    same = [s for s in target if section(s, style, path) == kind]
    if same:
        after = next((s for s in same if sort_key(s, style) > key), None)
        if after is not None:
            at, chunk = _leading_comments(rest, tree, after), [text + newline]
        else:
            at, chunk = _end(same[-1]), [text + newline]
    else:
        earlier = [s for s in target if section(s, style, path) < kind]
        later = [s for s in target if section(s, style, path) > kind]
        if earlier:
            at, chunk = _end(earlier[-1]), [newline, text + newline]
        else:
            at, chunk = _leading_comments(rest, tree, later[0]), [text + newline, newline]
    if any(at >= use for use in _uses(tree, {_bound(a, added) for a in added.names})):
        return None  # a move past a use would leave the name undefined there
    moved = rest[:at] + chunk + rest[at:]
    return "".join(moved)


def _path_change(tree: ast.Module, lines: list[str]) -> int | None:
    """The last line of the last top-level ``sys.path`` change above the first ``def`` or ``class``."""
    last = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if PATH_CHANGE.search("".join(lines[stmt.lineno - 1: _end(stmt)])):
            last = _end(stmt)
    return last


def _uses(tree: ast.Module, names: set[str]) -> list[int]:
    """The 1-based lines where ``names`` are referenced anywhere in ``tree``."""
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names]
