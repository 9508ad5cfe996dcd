"""Cut the runtime's sources down to what some of its public names need (the lean vendored runtime).

Each part (one module of ``torchport.runtime``) is read with `ast`; a top-level statement is kept when a
kept statement (or a wanted public name) uses a name it binds. Uses are followed across parts through
the runtime's own imports (``from ._device import device``, ``from . import _backend as _b`` then
``_b._TYPE``). A name a part does not bind statically (the picked state, ``Stream``) is served by its
module ``__getattr__``, which is then kept. Statements kept are copied verbatim, with the comment lines
right above them; an import loses only the names nothing kept uses. Statements run for their effect
(``_b._resets.append(_reset)``) are kept with their part, so resets and the MPS-in-a-group move behave as
in the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_INIT = "__init__"


@dataclass
class _Part:
    """One runtime module: its statements, what each binds, and where its imported names come from."""

    name: str
    text: str
    tree: ast.Module
    binds: dict[str, list[int]] = field(default_factory=dict)  # name -> indices of the statements binding it
    parts: dict[str, str] = field(default_factory=dict)  # alias -> part (``from . import _backend as _b``)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (part, name) it comes from


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _read(name: str, text: str) -> _Part:
    part = _Part(name, text, ast.parse(text))
    for index, node in enumerate(part.tree.body):
        for bound in _bound(node):
            part.binds.setdefault(bound, []).append(index)
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                if node.module is None:
                    part.parts[alias.asname or alias.name] = alias.name
                else:
                    part.imported[alias.asname or alias.name] = (node.module, alias.name)
    return part


def _uses(part: _Part, node: ast.AST) -> tuple[set[str], set[tuple[str, str]], set[str]]:
    """``(local names, (part, name) pairs read through a part alias, parts used whole)`` in ``node``."""
    aliases = dict(part.parts)
    for inner in ast.walk(node):  # `from . import _streams` inside a function
        if isinstance(inner, ast.ImportFrom) and inner.level == 1 and inner.module is None and inner is not node:
            aliases.update({a.asname or a.name: a.name for a in inner.names})
    names: set[str] = set()
    through: set[tuple[str, str]] = set()
    whole: set[str] = set()
    under_attribute: set[int] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id in aliases:
            through.add((aliases[inner.value.id], inner.attr))
            under_attribute.add(id(inner.value))
            if inner.value.id in part.parts:
                names.add(inner.value.id)  # the module-level `from . import _backend as _b` is used
    local = _locals(node)
    for inner in ast.walk(node):
        if not isinstance(inner, ast.Name) or id(inner) in under_attribute or isinstance(inner.ctx, ast.Store):
            continue
        if inner.id in aliases and inner.id not in part.parts:
            whole.add(aliases[inner.id])  # getattr(_streams, name): anything it serves
        elif inner.id not in local:
            names.add(inner.id)
    return names, through, whole


class _Shaker:
    def __init__(self, parts: Mapping[str, str]) -> None:
        self.parts = {name: _read(name, text) for name, text in parts.items()}
        self.kept: dict[str, set[int]] = {name: set() for name in parts}
        self.used: dict[str, set[str]] = {name: set() for name in parts}  # names read, per part
        self.todo: list[tuple[str, str]] = []

    def need(self, part: str, name: str) -> None:
        self.todo.append((part, name))

    def run(self, wanted: Iterable[str]) -> None:
        for name in wanted:
            self.need(_INIT, name)
        while self.todo:
            part_name, name = self.todo.pop()
            part = self.parts[part_name]
            if name in self.used[part_name]:
                continue
            self.used[part_name].add(name)
            if name in part.imported:
                self.need(*part.imported[name])
            if name in part.parts:
                self._keep_part(part.parts[name])
            indices = part.binds.get(name)
            if indices is None and "__getattr__" in part.binds and not _builtin(name):
                indices = part.binds["__getattr__"]
            for index in indices or ():
                self._keep(part, index)

    def _keep_part(self, name: str) -> None:
        """A part that is imported: its statements run for their effect are kept."""
        part = self.parts[name]
        for index, node in enumerate(part.tree.body):
            if isinstance(node, ast.Expr) and not _docstring(node, index):
                self._keep(part, index)

    def _keep(self, part: _Part, index: int) -> None:
        if index in self.kept[part.name]:
            return
        self.kept[part.name].add(index)
        self._keep_part(part.name)
        node = part.tree.body[index]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # an import's names are followed when something uses them
        names, through, whole = _uses(part, node)
        for name in names:
            self.need(part.name, name)
        for other, name in through:
            self._keep_part(other)
            self.need(other, name)
        for other in whole:
            self._keep_part(other)
            self.need(other, "__getattr__")

    def text(self, name: str, public: list[str]) -> str | None:
        """The part's kept statements (None when nothing of it is kept)."""
        part = self.parts[name]
        lines = part.text.splitlines(keepends=True)
        chunks: list[str] = []
        previous_end = 0
        for index, node in enumerate(part.tree.body):
            code = self._statement(part, index, node, public)
            if code is None:
                continue
            start = _first_line(node, lines)
            blanks = run = 0  # the longest run of blank lines in what lies between (kept or cut)
            for line in lines[previous_end:start - 1]:
                run = 0 if line.strip() else run + 1
                blanks = max(blanks, run)
            if chunks:
                chunks.append("\n" * min(blanks, 2))
            chunks.append(code)
            previous_end = node.end_lineno or start
        return "".join(chunks) if chunks else None

    def _statement(self, part: _Part, index: int, node: ast.stmt, public: list[str]) -> str | None:
        lines = part.text.splitlines(keepends=True)
        first = _first_line(node, lines)
        cut = _docstring_lines(node)
        kept, after_cut = [], False
        for number, line in enumerate(lines[first - 1:node.end_lineno], first):
            if number in cut or (after_cut and not line.strip()):  # a docstring, and the blank lines after it
                after_cut = True
                continue
            kept.append(line)
            after_cut = False
        verbatim = "".join(kept)
        if _docstring(node, index):
            return None  # the vendored module's own docstring points to the runtime's documentation
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return verbatim if self.kept[part.name] else None
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a for a in node.names if (a.asname or a.name).split(".")[0] in self.used[part.name]]
            if not names:
                return None
            if len(names) == len(node.names):
                return verbatim
            return ast.unparse(type(node)(**{**node.__dict__, "names": names})) + "\n"
        if isinstance(node, ast.Assign) and _bound(node) == ["__all__"]:
            return None if not public else "__all__ = [\n" + "".join(f"    {n!r},\n" for n in public) + "]\n"
        if isinstance(node, ast.Delete):
            deleted = [t.id for t in node.targets if isinstance(t, ast.Name)]
            return verbatim if all(n in self.used[part.name] for n in deleted) else None
        return verbatim if index in self.kept[part.name] else None


def _locals(node: ast.AST) -> set[str]:
    """Names bound inside the functions and classes of ``node`` (not declared ``global``): not module names."""
    bound: set[str] = set()
    declared: set[str] = set()
    for scope in ast.walk(node):
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if not isinstance(scope, ast.ClassDef):
            args = scope.args
            bound.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                         *(x for x in (args.vararg, args.kwarg) if x)))
        for inner in ast.walk(scope):
            if inner is scope:
                continue
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
                bound.add(inner.id)
            elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(inner.name)
            elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in inner.names)
            elif isinstance(inner, ast.Global):
                declared.update(inner.names)
            elif isinstance(inner, ast.ExceptHandler) and inner.name:
                bound.add(inner.name)
    return bound - declared


def _docstring_lines(node: ast.stmt) -> set[int]:
    """The line numbers of the docstrings of the functions and classes in ``node`` (documented in the
    package, not needed to run); a body that is only a docstring keeps it."""
    lines: set[int] = set()
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(inner.body) > 1:
            first = inner.body[0]
            if _docstring(first, 0) and first.end_lineno is not None:
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def _builtin(name: str) -> bool:
    import builtins

    return hasattr(builtins, name)


def _docstring(node: ast.stmt, index: int) -> bool:
    return index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def _first_line(node: ast.stmt, lines: list[str]) -> int:
    """The statement's first line (1-based), with its decorators and the comment lines right above it."""
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    while start > 1 and lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return start


def shake(parts: Mapping[str, str], wanted: Iterable[str]) -> dict[str, str]:
    """The runtime's parts cut down to what the public names ``wanted`` need.

    Args:
        parts: part name -> source text, in import order, the runtime's ``__init__`` last
            (under the name ``"__init__"``).
        wanted: public names of the runtime (``"device"``, ``"Event"``...).

    Returns:
        part name -> kept text, in the same order, without the parts nothing needs; the ``__init__``
        part always, with ``__all__`` listing ``wanted``.

    Raises:
        KeyError: a name in ``wanted`` is not one of the runtime's public names.
    """
    wanted = sorted(set(wanted))
    shaker = _Shaker(parts)
    init = shaker.parts[_INIT]
    public = set(ast.literal_eval(next(n.value for n in init.tree.body
                                       if isinstance(n, ast.Assign) and _bound(n) == ["__all__"])))
    unknown = [n for n in wanted if n not in public]
    if unknown:
        raise KeyError(f"not in torchport.runtime: {', '.join(unknown)}")
    shaker.run(wanted)
    shaker._keep_part(_INIT)
    out: dict[str, str] = {}
    for name in parts:
        text = shaker.text(name, wanted if name == _INIT else [])
        if text is not None or name == _INIT:
            out[name] = text or ""
    return out
