"""Scope-correct qualified names: which imported API a name read stands for.

`_names.import_map` reads a module's imports and qualifies every name through them, which is
wrong where a local shadows an import (``def timer(fn, synchronize=True)`` under
``from torch.cuda import synchronize``). `Resolver` follows Python's scoping rules instead, and
stays cheap:

* The scope facts come from the stdlib's symbol table (``_symtable``, in C): which names each
  function, class, lambda or comprehension binds, imports, declares ``global``/``nonlocal``, or
  reads from an enclosing scope. It re-parses the source in C, without building Python objects,
  which costs a fraction of ``ast.parse``.
* The imports' qualified names come from CPython's ``ast`` tree the caller already has: the
  module scope's eagerly (a walk of the statements outside functions and classes), a function's
  or class's only when a read resolves to an import there.
* `Resolver.static` answers from those facts alone for a name bound only by module-level imports
  (the common case: ``torch``, ``nn``, ``F``). Only other names need a position: `Resolver.at`
  finds the innermost statement holding the position (bisecting the statement lists), walks that
  statement's own expressions once (lambdas and comprehensions are scopes of their own there),
  and resolves the read through the enclosing scopes.

Semantics (Python's): a binding anywhere in a function (parameter, assignment target, for/with/
except/walrus/match target, def/class name, ``del``, import) makes the name local to the whole
function, so a read before it is local too (an ``UnboundLocalError`` at run time, not the import).
Class scopes are invisible from their methods, lambdas and comprehensions; defaults, annotations,
decorators, base classes and a comprehension's first iterable evaluate in the enclosing scope.
A scope that binds a name by import *and* otherwise (``try: import apex`` / ``except ImportError:
apex = None``) resolves it to the import's names, as LibCST's ``QualifiedNameProvider`` unions
assignments. In a class body a name read before the class's own first binding of it is looked up
in the module (``device = device``), as ``LOAD_NAME`` does for straight-line code.

Fallback: when the symbol table cannot be built (it raises ``SyntaxError`` on code the parser
accepts, such as ``nonlocal`` at module level or a duplicate parameter), or a function's table
cannot be matched to its ``def``, names are qualified from the module's whole import map as
`_names.import_map` does: `static` never answers None and `at` answers the import map's names for
a read of the name at that position.

Known limits: private names (``__x``) inside classes are not mangled; on Python 3.12+ a
comprehension's target may show as local in its function's table (PEP 709 inlining) when the
function reads it nowhere else, which only matters for a nested lambda reading an import of that
name; ``type`` statements and type parameters (3.12+) bind names the resolver only sees through
the symbol table.
"""

from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

from torchport.codemods._names import import_map

try:
    import _symtable
    from symtable import (
        CELL,
        DEF_BOUND,
        DEF_GLOBAL,
        DEF_IMPORT,
        DEF_LOCAL,
        DEF_NONLOCAL,
        DEF_PARAM,
        FREE,
        GLOBAL_EXPLICIT,
        GLOBAL_IMPLICIT,
        LOCAL,
        SCOPE_MASK,
        SCOPE_OFF,
    )

    _TYPE_FUNCTION = _symtable.TYPE_FUNCTION
    _TYPE_CLASS = _symtable.TYPE_CLASS
    _TYPE_MODULE = _symtable.TYPE_MODULE
except (ImportError, AttributeError):  # pragma: no cover - every CPython 3.10+ has them
    _symtable = None  # type: ignore[assignment]

EMPTY: frozenset[str] = frozenset()
_Pos = tuple[int, int]  # (line from 1, column from 0 in UTF-8 bytes, as ast counts)

_NEWLINE = re.compile(r"\r\n|\r|\n")
_SCOPE_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")
_CLAUSE_FIELDS = ("handlers", "cases")  # items that are not statements but hold a body


class _Mismatch(Exception):
    """The symbol table and the ast tree disagree (a function's table was not found)."""


# ---- imports ------------------------------------------------------------------------------


def _bind_imports(node: ast.stmt, out: dict[str, set[str]]) -> None:
    """Add the names ``node`` (an import) binds, qualified as `_names.import_map` does."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out.setdefault(alias.asname, set()).add(alias.name)
            else:
                head = alias.name.split(".", 1)[0]
                out.setdefault(head, set()).add(head)
    elif isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                joined = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name
                out.setdefault(alias.asname or alias.name, set()).add(joined)


def _scope_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of one scope: ``body`` and its nested blocks, not the bodies of the
    functions and classes defined there (their headers belong to this scope, their bodies not)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPE_DEFS):
            continue
        for name in _BLOCK_FIELDS:
            block = getattr(node, name, None)
            if block:
                stack.extend(block)
        for name in _CLAUSE_FIELDS:
            for clause in getattr(node, name, None) or ():
                stack.extend(clause.body)


def _scope_imports(body: list[ast.stmt]) -> dict[str, frozenset[str]]:
    bound: dict[str, set[str]] = {}
    for node in _scope_statements(body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _bind_imports(node, bound)
    return {name: frozenset(names) for name, names in bound.items()}


# ---- positions ----------------------------------------------------------------------------


def _start(node: ast.stmt) -> _Pos:
    decorators = getattr(node, "decorator_list", None)
    if decorators:  # a decorator starts its own logical line, so column 0 is safe
        return (decorators[0].lineno, 0)
    return (node.lineno, node.col_offset)


def _end(node: ast.AST) -> _Pos:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


class _Block:
    """A list of statements with their start positions, for bisecting."""

    __slots__ = ("stmts", "starts", "first", "last")

    def __init__(self, stmts: list[ast.stmt]) -> None:
        self.stmts = stmts
        self.starts = [_start(s) for s in stmts]
        self.first = self.starts[0]
        self.last = _end(stmts[-1])

    def find(self, pos: _Pos) -> ast.stmt | None:
        if not self.first <= pos < self.last:
            return None
        index = bisect_right(self.starts, pos) - 1
        if index < 0:
            return None
        stmt = self.stmts[index]
        return stmt if pos < _end(stmt) else None


# ---- scopes -------------------------------------------------------------------------------


class _Frame:
    """A scope of statements: the module, a function or a class."""

    __slots__ = ("kind", "node", "parent", "_table", "_imports", "_chain", "_first_binding")

    def __init__(self, kind: str, node: ast.AST, parent: _Frame | None, table: object = None) -> None:
        self.kind = kind  # "module", "function" or "class"
        self.node = node
        self.parent = parent
        self._table = table
        self._imports: dict[str, frozenset[str]] | None = None
        self._chain: list[object] | None = None  # 3.12+: type-parameter tables between it and its parent
        self._first_binding: dict[str, _Pos | None] = {}

    def table(self) -> object:
        if self._table is None:
            self._match()
        return self._table

    def between(self) -> list[object]:
        """Symbol tables between this scope and its parent's (3.12+ type parameters), inner first."""
        if self._chain is None:
            self._match()
        return self._chain or []

    def _match(self) -> None:
        assert self.parent is not None
        parent = self.parent.table()
        node = self.node
        kind = _TYPE_CLASS if isinstance(node, ast.ClassDef) else _TYPE_FUNCTION
        name, line = node.name, node.lineno  # type: ignore[attr-defined]
        found = _find_child(parent, kind, name, line, [])
        if found is None:
            raise _Mismatch(f"no symbol table for {name!r} line {line}")
        self._table, chain = found
        self._chain = list(reversed(chain))

    def imports(self, name: str) -> frozenset[str]:
        if self._imports is None:
            self._imports = _scope_imports(self.node.body)  # type: ignore[attr-defined]
        return self._imports.get(name, EMPTY)

    def first_binding(self, name: str) -> _Pos | None:
        """Where the class body first binds ``name`` (takes effect), for reads before it."""
        if name not in self._first_binding:
            self._first_binding[name] = _first_binding(self.node.body, name)  # type: ignore[attr-defined]
        return self._first_binding[name]


def _find_child(table: object, kind: int, name: str, line: int, chain: list[object]) -> tuple[object, list[object]] | None:
    found = None
    others = []
    for child in table.children:  # type: ignore[attr-defined]
        if child.lineno != line:
            continue
        if child.type == kind and child.name == name:
            found = child  # the last one: comprehensions in its defaults come before it
        elif child.type not in (_TYPE_FUNCTION, _TYPE_CLASS, _TYPE_MODULE):
            others.append(child)  # 3.12+: the type parameters' scope holds the def's table
    if found is not None:
        return found, chain
    for other in others:
        inner = _find_child(other, kind, name, line, [*chain, other])
        if inner is not None:
            return inner
    return None


class _ExprScope:
    """A lambda's or a comprehension's scope: the names it binds (none by import)."""

    __slots__ = ("is_lambda", "bound")

    def __init__(self, is_lambda: bool, bound: set[str]) -> None:
        self.is_lambda = is_lambda
        self.bound = bound


_Scopes = tuple  # of _Frame and _ExprScope, outermost first


def _target_names(target: ast.AST, out: set[str]) -> None:
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred):
            stack.append(node.value)


def _lambda_params(args: ast.arguments) -> set[str]:
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    if args.vararg:
        names.add(args.vararg.arg)
    if args.kwarg:
        names.add(args.kwarg.arg)
    return names


def _walk_header(stmt: ast.stmt, scopes: _Scopes) -> dict[_Pos, tuple[str, bool, _Scopes]]:
    """Every Name in ``stmt`` outside its nested statement blocks: position -> (id, is a read,
    the scopes it is read in)."""
    found: dict[_Pos, tuple[str, bool, _Scopes]] = {}
    stack: list[tuple[ast.AST, _Scopes]] = []
    for field, value in ast.iter_fields(stmt):
        if field in _BLOCK_FIELDS:
            continue
        if field in _CLAUSE_FIELDS:
            for clause in value:
                for sub, item in ast.iter_fields(clause):
                    if sub != "body" and isinstance(item, ast.AST):
                        stack.append((item, scopes))
            continue
        if isinstance(value, ast.AST):
            stack.append((value, scopes))
        elif isinstance(value, list):
            stack.extend((item, scopes) for item in value if isinstance(item, ast.AST))
    while stack:
        node, here = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            found[(node.lineno, node.col_offset)] = (node.id, type(node.ctx) is ast.Load, here)  # type: ignore[attr-defined]
        elif kind is ast.Lambda:
            args = node.args  # type: ignore[attr-defined]
            stack.extend((d, here) for d in (*args.defaults, *args.kw_defaults) if d is not None)
            stack.append((node.body, (*here, _ExprScope(True, _lambda_params(args)))))  # type: ignore[attr-defined]
        elif kind in _COMPREHENSIONS:
            generators = node.generators  # type: ignore[attr-defined]
            stack.append((generators[0].iter, here))  # the first iterable: the enclosing scope
            bound: set[str] = set()
            for generator in generators:
                _target_names(generator.target, bound)
            inner = (*here, _ExprScope(False, bound))
            for index, generator in enumerate(generators):
                stack.append((generator.target, inner))
                if index:
                    stack.append((generator.iter, inner))
                stack.extend((condition, inner) for condition in generator.ifs)
            if kind is ast.DictComp:
                stack.append((node.key, inner))  # type: ignore[attr-defined]
                stack.append((node.value, inner))  # type: ignore[attr-defined]
            else:
                stack.append((node.elt, inner))  # type: ignore[attr-defined]
        else:
            if kind is ast.NamedExpr:  # binds in the nearest scope that is not a comprehension
                for scope in reversed(here):
                    if isinstance(scope, _ExprScope) and not scope.is_lambda:
                        continue
                    if isinstance(scope, _ExprScope):
                        scope.bound.add(node.target.id)  # type: ignore[attr-defined]
                    break  # a statement scope: its symbol table knows
            stack.extend((child, here) for child in ast.iter_child_nodes(node))
    return found


# Where a binding in a class body takes effect: after the expressions evaluated before it.
def _first_binding(body: list[ast.stmt], name: str) -> _Pos | None:
    best: _Pos | None = None

    def note(pos: _Pos) -> None:
        nonlocal best
        if best is None or pos < best:
            best = pos

    def names_in(node: ast.AST | None) -> bool:
        if node is None:
            return False
        found: set[str] = set()
        _target_names(node, found)
        return name in found

    for stmt in _scope_statements(body):
        if isinstance(stmt, _SCOPE_DEFS):
            if stmt.name == name:
                note(_end(stmt))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".", 1)[0]) == name for a in stmt.names):
                note(_end(stmt))
        elif isinstance(stmt, ast.Assign):
            if any(names_in(t) for t in stmt.targets):
                note(_end(stmt))
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            if names_in(stmt.target):
                note(_end(stmt))
        elif isinstance(stmt, ast.Delete):
            if any(names_in(t) for t in stmt.targets):
                note(_end(stmt))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            if names_in(stmt.target):
                note(_end(stmt.iter))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if names_in(item.optional_vars):
                    note(_end(item.context_expr))
        for handler in getattr(stmt, "handlers", None) or ():
            if handler.name == name:
                note(_end(handler.type) if handler.type is not None else (handler.lineno, handler.col_offset))
        for case in getattr(stmt, "cases", None) or ():
            for node in ast.walk(case.pattern):
                if getattr(node, "name", None) == name or getattr(node, "rest", None) == name:
                    note(_end(case.pattern))
        # walrus targets anywhere in the statement's own expressions
        for pos, (ident, is_read, _) in _walk_header(stmt, ()).items():
            if ident == name and not is_read:
                for node in ast.walk(stmt):
                    if isinstance(node, ast.NamedExpr) and (node.target.lineno, node.target.col_offset) == pos:
                        note(_end(node.value))
    return best


def _global_imports(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Imports in functions and classes of names they declare ``global``: module bindings."""
    bound: dict[str, set[str]] = {}
    stack = [s for s in _scope_statements(tree.body) if isinstance(s, _SCOPE_DEFS)]
    while stack:
        scope = stack.pop()
        declared: set[str] = set()
        imports: dict[str, set[str]] = {}
        for stmt in _scope_statements(scope.body):
            if isinstance(stmt, _SCOPE_DEFS):
                stack.append(stmt)
            elif isinstance(stmt, ast.Global):
                declared.update(stmt.names)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                _bind_imports(stmt, imports)
        for name in declared & imports.keys():
            bound.setdefault(name, set()).update(imports[name])
    return {name: frozenset(names) for name, names in bound.items()}


# ---- the fast path: names bound only by module-level imports ---------------------------------

def _hint_lines(source: str) -> list[int]:
    """The sorted lines (from 1) holding the word ``lambda`` or ``for``, or ``:=``, anywhere,
    strings and comments included: the only lines where an expression can bind a name."""
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    found: list[int] = []
    for word, check in (("lambda", True), ("for", True), (":=", False)):
        find = source.find
        size = len(word)
        line, last = 1, 0
        at = find(word)
        while at != -1:
            end = at + size
            if not check or (
                (at == 0 or not (source[at - 1].isalnum() or source[at - 1] == "_"))
                and (end == len(source) or not (source[end].isalnum() or source[end] == "_"))
            ):
                line += source.count("\n", last, at)
                last = at
                found.append(line)
            at = find(word, end)
    found.sort()
    return found


def _scan(tree: ast.Module, source: str) -> tuple[dict[str, frozenset[str]], set[str], dict[str, frozenset[str]]]:
    """(names bound only by module-level imports -> their qualified names, every name imported
    anywhere, the module scope's imports).

    A walk of the statements, which misses no binding: statements bind through their targets,
    names and parameters, and an expression binds only through a walrus, a lambda or a
    comprehension, which need ``:=``, ``lambda`` or ``for`` on their lines (`_hint_lines`): only
    the expressions spanning such a line are walked into. Generous: a name it takes for bound
    elsewhere only takes the position-dependent path (`Resolver.at`), which is exact.
    """
    hints = _hint_lines(source)
    count = len(hints)

    def hinted(first: int, last: int) -> bool:
        index = bisect_left(hints, first)
        return index < count and hints[index] <= last

    module_imports: dict[str, set[str]] = {}
    module_bound: set[str] = set()  # bound in the module scope otherwise than by import
    inner: set[str] = set()  # bound or declared anywhere else, imports included
    imported: set[str] = set()

    def expressions(roots: Iterable[ast.AST]) -> None:
        """Names bound by the lambdas, comprehensions and walruses in ``roots`` (into ``inner``:
        a walrus binding in the module scope spoils the fast path as well)."""
        stack = list(roots)
        while stack:
            node = stack.pop()
            line = getattr(node, "lineno", None)
            if line is not None and not hinted(line, node.end_lineno or line):  # type: ignore[attr-defined]
                continue
            kind = type(node)
            if kind is ast.Lambda:
                inner.update(_lambda_params(node.args))  # type: ignore[attr-defined]
            elif kind in _COMPREHENSIONS:
                for generator in node.generators:  # type: ignore[attr-defined]
                    _target_names(generator.target, inner)
            elif kind is ast.NamedExpr:
                _target_names(node.target, inner)  # type: ignore[attr-defined]
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    if not isinstance(value, ast.expr_context):
                        stack.append(value)
                elif isinstance(value, list):
                    stack.extend(item for item in value if isinstance(item, ast.AST))

    stack: list[tuple[ast.stmt, bool]] = [(stmt, True) for stmt in tree.body]
    while stack:
        node, top = stack.pop()
        bound = module_bound if top else inner
        kind = type(node)
        if kind is ast.Import or kind is ast.ImportFrom:
            if top:
                _bind_imports(node, module_imports)
            else:
                names: dict[str, set[str]] = {}
                _bind_imports(node, names)
                inner.update(names)
                imported.update(names)
            continue
        shape = _SHAPES.get(kind)
        if shape is None:
            shape = _SHAPES[kind] = _shape(kind)
        if not shape[0]:  # a simple statement
            if kind is ast.Assign or kind is ast.Delete:
                for target in node.targets:  # type: ignore[attr-defined]
                    _target_names(target, bound)
            elif kind is ast.AugAssign or kind is ast.AnnAssign:
                _target_names(node.target, bound)  # type: ignore[attr-defined]
            elif kind is ast.Global or kind is ast.Nonlocal:
                inner.update(node.names)  # type: ignore[attr-defined]
            elif kind not in _KNOWN_STATEMENTS:  # a newer Python's: what is not read counts as bound
                _unknown_bindings(node, bound)
            if count and hinted(node.lineno, node.end_lineno or node.lineno):
                expressions((node,))
            continue
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef:
            bound.add(node.name)  # type: ignore[attr-defined]
            if kind is not ast.ClassDef:
                inner.update(_lambda_params(node.args))  # type: ignore[attr-defined]
            for param in getattr(node, "type_params", None) or ():  # 3.12+
                inner.add(param.name)
            stack.extend((stmt, False) for stmt in node.body)  # type: ignore[attr-defined]
        else:
            if kind is ast.For or kind is ast.AsyncFor:
                _target_names(node.target, bound)  # type: ignore[attr-defined]
            elif kind is ast.With or kind is ast.AsyncWith:
                for item in node.items:  # type: ignore[attr-defined]
                    if item.optional_vars is not None:
                        _target_names(item.optional_vars, bound)
            elif kind is not ast.If and kind is not ast.While:
                for clause in getattr(node, "handlers", None) or ():
                    if clause.name:
                        bound.add(clause.name)
                for case in getattr(node, "cases", None) or ():
                    for pattern in ast.walk(case.pattern):
                        for field in ("name", "rest"):
                            value = getattr(pattern, field, None)
                            if isinstance(value, str):
                                bound.add(value)
                if kind not in _KNOWN_STATEMENTS:
                    _unknown_bindings(node, bound)
            for field in shape[1]:
                stack.extend((stmt, top) for stmt in getattr(node, field))
            for field in shape[2]:
                for clause in getattr(node, field):
                    stack.extend((stmt, top) for stmt in clause.body)
        if count:  # the header's expressions: `expressions` only enters those on a hint's lines
            header: list[ast.AST] = []
            for field in shape[3]:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    header.append(value)
                elif isinstance(value, list):
                    header.extend(value)
            for field in shape[2]:
                for clause in getattr(node, field):
                    header.extend(getattr(clause, sub) for sub in ("type", "pattern", "guard") if getattr(clause, sub, None))
            expressions(header)
    imported.update(module_imports)
    frozen = {name: frozenset(names) for name, names in module_imports.items()}
    static = {name: names for name, names in frozen.items() if name not in module_bound and name not in inner}
    return static, imported, frozen


_Shape = tuple[bool, tuple[str, ...], tuple[str, ...], tuple[str, ...]]
_SHAPES: dict[type, _Shape] = {}


def _shape(kind: type) -> _Shape:
    """A statement class's (is compound, block fields, clause fields, other fields)."""
    fields = kind._fields  # type: ignore[attr-defined]
    blocks = tuple(f for f in fields if f in _BLOCK_FIELDS)
    clauses = tuple(f for f in fields if f in _CLAUSE_FIELDS)
    others = tuple(f for f in fields if f not in _BLOCK_FIELDS and f not in _CLAUSE_FIELDS)
    return (bool(blocks or clauses), blocks, clauses, others)


def _unknown_bindings(node: ast.stmt, bound: set[str]) -> None:
    for item in _header_nodes(node):
        for sub in ast.walk(item):
            if isinstance(sub, ast.Name) and type(sub.ctx) is not ast.Load:
                bound.add(sub.id)
            elif isinstance(sub, ast.arg):
                bound.add(sub.arg)
    for param in getattr(node, "type_params", None) or ():
        bound.add(param.name)


_KNOWN_STATEMENTS = {
    getattr(ast, name)
    for name in (
        "Expr", "Return", "Pass", "Raise", "Assert", "Assign", "AugAssign", "AnnAssign", "For", "AsyncFor",
        "FunctionDef", "AsyncFunctionDef", "ClassDef", "With", "AsyncWith", "Delete", "Global", "Nonlocal",
        "If", "While", "Try", "TryStar", "Match", "Break", "Continue", "Import", "ImportFrom",
    )
    if hasattr(ast, name)
}


def _header_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The AST children of ``stmt`` outside its nested statement blocks."""
    for field, value in ast.iter_fields(stmt):
        if field in _BLOCK_FIELDS:
            continue
        if field in _CLAUSE_FIELDS:
            for clause in value:
                for sub, item in ast.iter_fields(clause):
                    if sub != "body" and isinstance(item, ast.AST):
                        yield item
            continue
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, ast.AST))


# ---- the resolver -------------------------------------------------------------------------


class Resolver:
    """Which imported API each name read stands for, scope-correctly.

    Args:
        tree: CPython's tree of ``source`` (``ast.parse``); None parses it here.
        source: the module's text.
    """

    def __init__(self, tree: ast.Module | None, source: str) -> None:
        if tree is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        self.tree = tree
        self.source = source
        self._ascii = source.isascii()
        self._lines: list[str] | None = None
        self._blocks: dict[int, _Block | None] = {}
        self._headers: dict[int, dict[_Pos, tuple[str, bool, _Scopes]]] = {}
        self._frames: dict[int, _Frame] = {}
        self._fallback_map: dict[str, frozenset[str]] | None = None
        self.fallback = False
        self._static: dict[str, frozenset[str]] = {}
        self._imported: set[str] = set()
        self._global_imports: dict[str, frozenset[str]] | None = None
        self._static, self._imported, module_imports = _scan(tree, source)
        self._module = _Frame("module", tree, None)
        self._module._imports = module_imports
        self._module._chain = []
        self._symbols: object = None  # the symbol table, built by the first `at` that needs it

    # ---- public API ----------------------------------------------------------------------

    def static(self, head: str) -> frozenset[str] | None:
        """For a head name bound ONLY by imports, all of them in the module scope, and nowhere
        else in the file: the qualified names it stands for, wherever it is read. frozenset()
        when the name is never imported anywhere. None when the answer depends on the position
        (then call `at`). In fallback mode (see the module's doc) never None."""
        found = self._static.get(head)
        if found is not None:
            return found
        return None if head in self._imported else EMPTY

    def at(self, head: str, line: int, column: int) -> frozenset[str]:
        """The qualified names of the name ``head`` read at ``line`` (from 1), ``column`` (from 0,
        in characters as LibCST counts them). Empty when no Name node ``head`` is there, when it
        is a binding (a target, a ``del``), or when the read resolves to a binding that is not an
        import (a local, a parameter, an enclosing function's local, a class attribute read in
        its class body)."""
        if head not in self._imported:
            return EMPTY
        pos = (line, self._byte_column(line, column))
        found = self._locate(pos)
        if found is None:
            return EMPTY
        ident, is_read, scopes = found
        if ident != head or not is_read:
            return EMPTY
        static = self._static.get(head)
        if static is not None:
            return static
        if self._symbols is None:
            self._build_symbols()
        if self.fallback:
            return self._imports_anywhere().get(head, EMPTY)
        try:
            return self._resolve(head, scopes, pos)
        except _Mismatch:
            return self._imports_anywhere().get(head, EMPTY)

    # ---- internals -----------------------------------------------------------------------

    def _build_symbols(self) -> None:
        try:
            if _symtable is None:
                raise RuntimeError("no _symtable")
            top = _symtable.symtable(self.source, "<module>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError, RuntimeError, TypeError):
            self.fallback = True
            self._symbols = False
            return
        self._symbols = top
        self._module._table = top

    def _imports_anywhere(self) -> dict[str, frozenset[str]]:
        if self._fallback_map is None:
            self._fallback_map = dict(import_map(self.tree))
        return self._fallback_map

    def _byte_column(self, line: int, column: int) -> int:
        if self._ascii:
            return column
        if self._lines is None:
            self._lines = _NEWLINE.split(self.source)
        if not 1 <= line <= len(self._lines):
            return column
        text = self._lines[line - 1]
        if text.isascii():
            return column
        return len(text[:column].encode("utf-8", "surrogatepass"))

    def _block(self, stmts: list[ast.stmt]) -> _Block | None:
        key = id(stmts)
        if key not in self._blocks:
            self._blocks[key] = _Block(stmts) if stmts else None
        return self._blocks[key]

    def _frame(self, node: ast.AST, parent: _Frame) -> _Frame:
        frame = self._frames.get(id(node))
        if frame is None:
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            frame = self._frames[id(node)] = _Frame(kind, node, parent)
        return frame

    def _locate(self, pos: _Pos) -> tuple[str, bool, _Scopes] | None:
        """The Name at ``pos`` (ast's coordinates) and the scopes around it."""
        frame = self._module
        scopes: _Scopes = (frame,)
        block = self._block(self.tree.body)
        while block is not None:
            stmt = block.find(pos)
            if stmt is None:
                return None
            inner = None
            for sub in self._sub_blocks(stmt):
                candidate = self._block(sub)
                if candidate is not None and candidate.first <= pos < candidate.last:
                    inner = candidate
                    break
            if inner is None:  # the statement's own expressions
                header = self._headers.get(id(stmt))
                if header is None:
                    header = self._headers[id(stmt)] = _walk_header(stmt, scopes)
                return header.get(pos)
            if isinstance(stmt, _SCOPE_DEFS):
                frame = self._frame(stmt, frame)
                scopes = (*scopes, frame)
            block = inner
        return None

    @staticmethod
    def _sub_blocks(stmt: ast.stmt) -> Iterable[list[ast.stmt]]:
        for name in _BLOCK_FIELDS:
            block = getattr(stmt, name, None)
            if block:
                yield block
        for name in _CLAUSE_FIELDS:
            for clause in getattr(stmt, name, None) or ():
                if clause.body:
                    yield clause.body

    def _resolve(self, head: str, scopes: _Scopes, pos: _Pos) -> frozenset[str]:
        innermost = True
        for scope in reversed(scopes):
            if isinstance(scope, _ExprScope):
                if head in scope.bound:
                    return EMPTY
                innermost = False
                continue
            if scope.kind == "module":
                return self._module_names(head)
            if scope.kind == "class" and not innermost:
                continue  # a class scope is invisible from the scopes nested in it
            innermost = False
            flags = scope.table().symbols.get(head)  # type: ignore[attr-defined]
            if flags is not None:
                where = (flags >> SCOPE_OFF) & SCOPE_MASK
                if where == GLOBAL_EXPLICIT or where == GLOBAL_IMPLICIT:
                    return self._module_names(head)
                if flags & DEF_IMPORT:
                    return scope.imports(head)
                if flags & (DEF_LOCAL | DEF_PARAM) and where in (LOCAL, CELL):
                    if scope.kind == "class":
                        first = scope.first_binding(head)
                        if first is not None and pos < first:  # read before the class binds it
                            return self._module_names(head)
                    return EMPTY
                if where != FREE and scope.kind == "class":
                    return self._module_names(head)
            for table in scope.between():  # 3.12+: type parameters
                flags = table.symbols.get(head)  # type: ignore[attr-defined]
                if flags is not None and flags & DEF_BOUND:
                    return EMPTY
        return self._module_names(head)

    def _has_global_imports(self) -> bool:
        """Whether a function or class imports a name it declares ``global``."""
        stack = list(self._symbols.children)  # type: ignore[attr-defined]
        while stack:
            table = stack.pop()
            stack.extend(table.children)
            for flags in table.symbols.values():
                if flags & DEF_IMPORT and (flags >> SCOPE_OFF) & SCOPE_MASK == GLOBAL_EXPLICIT:
                    return True
        return False

    def _module_names(self, head: str) -> frozenset[str]:
        flags = self._module.table().symbols.get(head, 0)  # type: ignore[attr-defined]
        names = self._module.imports(head) if flags & DEF_IMPORT else EMPTY
        if self._global_imports is None:
            self._global_imports = _global_imports(self.tree) if self._has_global_imports() else {}
        return names | self._global_imports.get(head, EMPTY)
