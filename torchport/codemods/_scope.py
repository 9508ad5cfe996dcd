"""Scope-correct qualified names: which imported API a name read stands for.

`_names.import_map` reads a module's imports and qualifies every name through them, which is
wrong where a local shadows an import (``def timer(fn, synchronize=True)`` under
``from torch.cuda import synchronize``). `Resolver` follows Python's scoping rules instead, and
stays cheap (it never walks the whole tree in Python):

* Imports: every import statement holds the word ``import``; the statements at those places of
  the text (found by bisecting the statement lists) give each scope's imports.
* `Resolver.static` (per name, on demand): a name imported only in the module scope is bound
  nowhere else unless some occurrence of the word is a binding. The occurrences that are plainly
  reads (``torch.``, ``nn(``, ``F[``) are skipped from the text alone; the statement around each
  other one is checked for a binding of the name (its own text, not its nested blocks). If none
  binds it, every read stands for the import, whatever its position (the common case: ``torch``,
  ``nn``, ``F``, ``np``). That costs about what `_names.import_map` costs.
* `Resolver.at` (the other names): the innermost statement holding the position, its Name nodes
  walked once with their scopes (lambdas and comprehensions are scopes of their own), then the
  read resolved outwards through the stdlib's symbol table (``_symtable``, in C: which names each
  function and class binds, imports, declares ``global``/``nonlocal`` or reads from outside).
  The table is built by the first `at` that needs it (it parses the source again, in C: a third to
  half of ``ast.parse``), and the imports of a function or class are read when a read resolves to
  one.

Semantics (Python's): a binding anywhere in a function (parameter, assignment target, for/with/
except/walrus/match target, def/class name, ``del``, import) makes the name local to the whole
function, so a read before it is local too (an ``UnboundLocalError`` at run time, not the import).
Class scopes are invisible from their methods, lambdas and comprehensions; defaults, annotations,
decorators, base classes and a comprehension's first iterable evaluate in the enclosing scope; a
walrus in a comprehension binds in the enclosing function. A scope that binds a name by import
*and* otherwise (``try: import apex`` / ``except ImportError: apex = None``) resolves it to the
import's names, as LibCST's ``QualifiedNameProvider`` unions assignments; ``global x`` with
``import x`` in a function adds to the module's names. In a class body, a name read before the
class's own first binding of it is looked up in the module (``device = device``), as
``LOAD_NAME`` does for straight-line code.

Fallback: when the symbol table cannot be built (it raises ``SyntaxError`` on code the parser
accepts, such as ``nonlocal`` at module level, or a name used before its ``global``
declaration), ``fallback`` turns True and `at` answers the module's whole import map for a read
of the name at that position (what `_names.import_map` gives); `static` needs no symbol table and
keeps its answers. The same holds for one read whose function's table cannot be matched to its
``def`` (a Python newer than this code expects).

Known limits: private names (``__x``) inside classes are not mangled; NFKC-equivalent spellings
of a name are not looked for; on Python 3.12+ a comprehension's target may show as local in its
function's table (PEP 709 inlining) when the function reads it nowhere else, which only matters
for a lambda nested there reading an import of that name.
"""

from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_right
from collections.abc import Iterator

from torchport.codemods._names import import_map

try:
    import _symtable
    from symtable import (
        CELL,
        DEF_BOUND,
        DEF_IMPORT,
        DEF_LOCAL,
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

    __slots__ = ("kind", "node", "parent", "_table", "_imports", "_chain", "_first_binding", "_first_import")

    def __init__(self, kind: str, node: ast.AST, parent: _Frame | None, table: object = None) -> None:
        self.kind = kind  # "module", "function" or "class"
        self.node = node
        self.parent = parent
        self._table = table
        self._imports: dict[str, frozenset[str]] | None = None
        self._chain: list[object] | None = None  # 3.12+: type-parameter tables between it and its parent
        self._first_binding: dict[str, _Pos | None] = {}
        self._first_import: dict[str, _Pos | None] = {}

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

    def first_import(self, name: str) -> _Pos | None:
        """Where the scope's first import of ``name`` takes effect (the statement's end)."""
        if name not in self._first_import:
            ends = []
            for stmt in _scope_statements(self.node.body):  # type: ignore[attr-defined]
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    bound: dict[str, set[str]] = {}
                    _bind_imports(stmt, bound)
                    if name in bound:
                        ends.append(_end(stmt))
            self._first_import[name] = min(ends) if ends else None
        return self._first_import[name]

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
        for root in _header_nodes(stmt):  # walrus targets in the statement's own expressions
            for node in ast.walk(root):
                if isinstance(node, ast.NamedExpr) and getattr(node.target, "id", None) == name:
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


def _children(node: ast.AST) -> list[ast.AST]:
    """The AST children of an expression-level node, statements and contexts left out."""
    found: list[ast.AST] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            if not isinstance(value, (ast.expr_context, ast.stmt)):
                found.append(value)
        elif isinstance(value, list):
            found.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, ast.stmt))
    return found


def _path(stmt: ast.stmt, pos: _Pos) -> list[ast.AST]:
    """``stmt`` and the nodes inside its header that hold ``pos``, outermost first. Nodes without
    a position (``arguments``, ``comprehension``, ``withitem``, ``match_case``...) are looked into."""
    path: list[ast.AST] = [stmt]
    node: ast.AST = stmt
    while True:
        found = None
        stack = _children(node)
        while stack:
            child = stack.pop()
            line = getattr(child, "lineno", None)
            if line is None:
                stack.extend(_children(child))
            elif (line, child.col_offset) <= pos < (child.end_lineno, child.end_col_offset):  # type: ignore[attr-defined]
                found = child
                break
        if found is None:
            return path
        path.append(found)
        node = found


_NAMED = ("MatchAs", "MatchStar", "TypeVar", "ParamSpec", "TypeVarTuple")
_NAMED_NODES = tuple(getattr(ast, name) for name in _NAMED if hasattr(ast, name))
_QUIET_STATEMENTS = tuple(
    getattr(ast, name)
    for name in (
        "Expr", "Return", "Pass", "Raise", "Assert", "Assign", "AugAssign", "AnnAssign", "For", "AsyncFor",
        "With", "AsyncWith", "Delete", "If", "While", "Try", "TryStar", "Match", "Break", "Continue",
    )
    if hasattr(ast, name)
)  # statements that bind no name outside their expressions and targets


def _may_bind(path: list[ast.AST], head: str) -> bool:
    """Whether the word ``head`` at the position ``path`` leads to may bind it (True when unsure)."""
    for node in path:
        if isinstance(node, ast.JoinedStr):  # f-string positions are unreliable before 3.12
            return any(
                (isinstance(sub, ast.Name) and sub.id == head and type(sub.ctx) is not ast.Load)
                or (isinstance(sub, ast.arg) and sub.arg == head)
                for sub in ast.walk(node)
            )
    node = path[-1]
    if isinstance(node, ast.Name):
        return node.id != head or type(node.ctx) is not ast.Load
    if isinstance(node, ast.arg):
        return node.arg == head
    if isinstance(node, (ast.keyword, ast.Constant, ast.Attribute)):
        return False  # a keyword argument's name, a literal's text, an attribute's name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == head
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return head in node.names
    if isinstance(node, ast.ExceptHandler):
        return node.name == head
    if isinstance(node, _NAMED_NODES):
        return getattr(node, "name", None) == head
    if isinstance(node, ast.MatchMapping):
        return node.rest == head
    if isinstance(node, ast.Lambda):
        return head in _lambda_params(node.args)
    if isinstance(node, ast.pattern):
        return False  # a class pattern's keyword
    if isinstance(node, ast.expr):
        return False  # a comment inside the expression
    return not isinstance(node, _QUIET_STATEMENTS)  # a comment or a keyword of a known statement


_ASCII_IDENTIFIER = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_FOLLOWER = re.compile(r"[ \t]*([.(\[]?)")
_NAMING_KEYWORDS = ("def", "class", "type")
_SMALL_STATEMENT = 30  # lines: a statement this small is walked whole for its bindings


def _identifier_char(char: str) -> bool:
    if char in _ASCII_IDENTIFIER:
        return True
    return not char.isascii() and ("a" + char).isidentifier()


def _header_bindings(stmt: ast.stmt) -> set[str]:
    """Every name ``stmt``'s own text binds (its nested blocks left out), generously: targets,
    walrus targets, parameters (lambdas' too), comprehension targets, def/class names, except
    and match names, global/nonlocal names, type parameters."""
    bound: set[str] = set()
    name = getattr(stmt, "name", None)
    if isinstance(name, str):
        bound.add(name)
    bound.update(getattr(stmt, "names", None) or ())  # global / nonlocal (imports are not asked)
    bound.update(handler.name for handler in getattr(stmt, "handlers", None) or () if handler.name)
    for root in _header_nodes(stmt):
        for node in ast.walk(root):
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    bound.add(node.id)  # type: ignore[attr-defined]
            elif kind is ast.arg:
                bound.add(node.arg)  # type: ignore[attr-defined]
            elif isinstance(node, (ast.ExceptHandler, ast.MatchMapping, *_NAMED_NODES)):
                for field in ("name", "rest"):
                    value = getattr(node, field, None)
                    if isinstance(value, str):
                        bound.add(value)
    return bound


_WORD_PATTERNS: dict[str, re.Pattern[str]] = {}


def _words(text: str, word: str) -> Iterator[int]:
    """The offsets of ``word`` in ``text`` as a whole identifier (a literal-prefixed regex finds
    the candidates at C speed; what precedes them is checked here)."""
    pattern = _WORD_PATTERNS.get(word)
    if pattern is None:
        pattern = _WORD_PATTERNS[word] = re.compile(re.escape(word) + r"(?!\w)")
    for match in pattern.finditer(text):
        at = match.start()
        if at == 0 or not _identifier_char(text[at - 1]):
            yield at


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
        # CPython reads "\r\n" and "\r" as "\n"; columns are unchanged
        self._text = source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source
        self._ascii = source.isascii()
        self._lines: list[str] | None = None
        self._blocks: dict[int, _Block | None] = {}
        self._headers: dict[int, dict[_Pos, tuple[str, bool, _Scopes]]] = {}
        self._frames: dict[int, _Frame] = {}
        self._fallback_map: dict[str, frozenset[str]] | None = None
        self._global_imports: dict[str, frozenset[str]] | None = None
        self._symbols: object = None  # the symbol table, built by the first `at` that needs it
        self.fallback = False  # True once the symbol table failed: `at` answers from the import map
        self._module = _Frame("module", tree, None)
        self._module._chain = []
        module_imports, self._imported, self._inner_imports = self._scan_imports()
        self._module._imports = module_imports
        self._static: dict[str, frozenset[str] | None] = {}  # `static`'s answers, computed on demand
        self._bindings: dict[int, set[str]] = {}  # names bound in a statement's own text, by id

    # ---- public API ----------------------------------------------------------------------

    def static(self, head: str) -> frozenset[str] | None:
        """For a head name bound ONLY by imports, all of them in the module scope, and nowhere
        else in the file (no parameter, target, def/class name, global/nonlocal, del, import in
        an inner scope): the qualified names it stands for, wherever it is read. frozenset() when
        the name is never imported anywhere. None when the answer depends on the position (then
        call `at`)."""
        if head not in self._imported:
            return EMPTY
        if head in self._static:
            return self._static[head]
        names = self._module._imports.get(head)  # type: ignore[union-attr]
        if names is not None and (head in self._inner_imports or self._bound_elsewhere(head)):
            names = None
        self._static[head] = names
        return names

    def at(self, head: str, line: int, column: int) -> frozenset[str]:
        """The qualified names of the name ``head`` read at ``line`` (from 1), ``column`` (from 0,
        in characters as LibCST counts them). Empty when no Name node ``head`` is there, when it
        is a binding (a target, a ``del``), or when the read resolves to a binding that is not an
        import (a local, a parameter, an enclosing function's local, a class attribute read in
        its class body after the class binds it)."""
        if head not in self._imported:
            return EMPTY
        pos = (line, self._byte_column(line, column))
        found = self._locate(pos)
        if found is None:
            return EMPTY
        ident, is_read, scopes = found
        if ident != head or not is_read:
            return EMPTY
        static = self.static(head)
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

    # ---- the fast path -------------------------------------------------------------------

    def _scan_imports(self) -> tuple[dict[str, frozenset[str]], set[str], set[str]]:
        """(the module scope's imports, every name imported anywhere, the names imported in an
        inner scope). Every import statement holds the word ``import``: only those statements
        are looked at."""
        module: dict[str, set[str]] = {}
        inner: dict[str, set[str]] = {}
        seen: set[int] = set()
        spans: list[tuple[_Pos, _Pos]] = []
        text = self._text
        line, last = 1, 0
        for at in _words(text, "import"):
            line += text.count("\n", last, at)
            last = at
            found = self._descend((line, self._byte_offset(at, line)))
            if found is None:
                continue
            stmt, frame, _ = found
            if id(stmt) in seen or not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            seen.add(id(stmt))
            _bind_imports(stmt, module if frame is self._module else inner)
            spans.append((_start(stmt), _end(stmt)))
        spans.sort()
        self._import_starts = [span[0] for span in spans]
        self._import_ends = [span[1] for span in spans]
        imported = set(module) | set(inner)
        return {name: frozenset(names) for name, names in module.items()}, imported, set(inner)

    def _bound_elsewhere(self, head: str) -> bool:
        """Whether ``head`` may be bound otherwise than by a module-level import. The statements
        holding the word are looked at, but for the plain reads: ``head.``, ``head(`` and
        ``head[`` (unless after ``def``, ``class`` or ``type``)."""
        text = self._text
        follow = _FOLLOWER.match
        line, last = 1, 0
        for at in _words(text, head):
            if at and text[at - 1] == ".":
                continue  # an attribute, or a module in a relative import
            follower = follow(text, at + len(head)).group(1)  # type: ignore[union-attr]
            if follower == ".":
                continue
            if follower and not text[max(0, at - 40) : at].rstrip(" \t\\\n").endswith(_NAMING_KEYWORDS):
                continue  # a call or a subscript, not `def head(`, `class head[T]`, `type head[T]`
            line += text.count("\n", last, at)
            last = at
            pos = (line, self._byte_offset(at, line))
            index = bisect_right(self._import_starts, pos) - 1
            if index >= 0 and pos < self._import_ends[index]:
                continue  # imports are `_scan_imports`'s
            found = self._descend(pos)
            if found is None:
                continue  # a comment between statements
            stmt = found[0]
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            if _SMALL_STATEMENT >= (stmt.end_lineno or stmt.lineno) - stmt.lineno:
                bindings = self._bindings.get(id(stmt))
                if bindings is None:
                    bindings = self._bindings[id(stmt)] = _header_bindings(stmt)
                if head in bindings:
                    return True
            elif _may_bind(_path(stmt, pos), head):
                return True
        return False

    def _byte_offset(self, at: int, line: int) -> int:
        """The column (UTF-8 bytes, as ast counts) of the text offset ``at`` on ``line``."""
        start = self._text.rfind("\n", 0, at) + 1
        if self._ascii:
            return at - start
        return len(self._text[start:at].encode("utf-8", "surrogatepass"))

    # ---- positions -----------------------------------------------------------------------

    def _byte_column(self, line: int, column: int) -> int:
        if self._ascii:
            return column
        if self._lines is None:
            self._lines = self._text.split("\n")
        if not 1 <= line <= len(self._lines):
            return column
        text = self._lines[line - 1]
        if text.isascii():
            return column
        return len(text[:column].encode("utf-8", "surrogatepass"))

    def _block(self, stmts: list[ast.stmt]) -> _Block | None:
        key = id(stmts)
        block = self._blocks.get(key)
        if block is None and key not in self._blocks:
            block = self._blocks[key] = _Block(stmts) if stmts else None
        return block

    def _frame(self, node: ast.AST, parent: _Frame) -> _Frame:
        frame = self._frames.get(id(node))
        if frame is None:
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            frame = self._frames[id(node)] = _Frame(kind, node, parent)
        return frame

    def _descend(self, pos: _Pos) -> tuple[ast.stmt, _Frame, _Scopes] | None:
        """The innermost statement whose own text (not its nested blocks) holds ``pos``, the
        scope it is in, and the scopes from the module's down; None between statements."""
        frame = self._module
        scopes: _Scopes = (frame,)
        block = self._block(self.tree.body)
        while block is not None:
            stmt = block.find(pos)
            if stmt is None:
                return None
            inner = None
            for sub in _sub_blocks(stmt):
                candidate = self._block(sub)
                if candidate is not None and candidate.first <= pos < candidate.last:
                    inner = candidate
                    break
            if inner is None:
                return stmt, frame, scopes
            if isinstance(stmt, _SCOPE_DEFS):
                frame = self._frame(stmt, frame)
                scopes = (*scopes, frame)
            block = inner
        return None

    def _locate(self, pos: _Pos) -> tuple[str, bool, _Scopes] | None:
        """The Name at ``pos`` (ast's coordinates): its id, whether it is read, its scopes."""
        found = self._descend(pos)
        if found is None:
            return None
        stmt, _, scopes = found
        header = self._headers.get(id(stmt))
        if header is None:
            header = self._headers[id(stmt)] = _walk_header(stmt, scopes)
        return header.get(pos)

    # ---- resolution ----------------------------------------------------------------------

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

    def _resolve(self, head: str, scopes: _Scopes, pos: _Pos) -> frozenset[str]:
        own = scopes[-1]  # the scope the read runs in, where the order of statements counts
        innermost = True
        for scope in reversed(scopes):
            if isinstance(scope, _ExprScope):
                if head in scope.bound:
                    return EMPTY
                innermost = False
                continue
            if scope.kind == "module":
                return self._module_names(head, pos if scope is own else None)
            if scope.kind == "class" and not innermost:
                continue  # a class scope is invisible from the scopes nested in it
            innermost = False
            flags = scope.table().symbols.get(head)  # type: ignore[attr-defined]
            if flags is not None:
                where = (flags >> SCOPE_OFF) & SCOPE_MASK
                if where == GLOBAL_EXPLICIT or where == GLOBAL_IMPLICIT:
                    return self._module_names(head)
                if scope.kind == "class" and flags & DEF_BOUND:
                    first = scope.first_binding(head)
                    if first is not None and pos < first:  # read before the class binds it:
                        return self._module_names(head)  # LOAD_NAME looks in the module
                    return scope.imports(head) if flags & DEF_IMPORT else EMPTY
                if flags & DEF_IMPORT:
                    if scope is own:  # before the import: the other binding, or unbound
                        first = scope.first_import(head)
                        if first is not None and pos < first:
                            return EMPTY
                    return scope.imports(head)
                if flags & (DEF_LOCAL | DEF_PARAM) and where in (LOCAL, CELL):
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

    def _module_names(self, head: str, pos: _Pos | None = None) -> frozenset[str]:
        """The module's names for ``head``; with ``pos``, for a read in the module scope itself,
        none of its own imports that come later."""
        flags = self._module.table().symbols.get(head, 0)  # type: ignore[attr-defined]
        names = self._module.imports(head) if flags & DEF_IMPORT else EMPTY
        if names and pos is not None:
            first = self._module.first_import(head)
            if first is not None and pos < first:
                names = EMPTY
        if self._global_imports is None:
            self._global_imports = _global_imports(self.tree) if self._has_global_imports() else {}
        return names | self._global_imports.get(head, EMPTY)


def _sub_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in _BLOCK_FIELDS:
        block = getattr(stmt, name, None)
        if block:
            yield block
    for name in _CLAUSE_FIELDS:
        for clause in getattr(stmt, name, None) or ():
            if clause.body:
                yield clause.body
