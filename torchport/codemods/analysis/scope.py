"""Scope-correct qualified names: which imported API a name read stands for.

`_names.import_map` reads a module's imports and qualifies every name through them, which is
wrong where a local shadows an import (``def timer(fn, synchronize=True)`` under
``from torch.cuda import synchronize``, ``for Event in xs:``). `Resolver` follows Python's
scoping rules instead, and stays cheap: it never walks the whole tree in Python, and never parses
again. It works per name, from the places the name's text occurs:

* Imports: every import statement holds the word ``import``; the statements at those places (found
  by bisecting the statement lists, CPython's ``ast`` positions) give each scope's imports.
* Bindings of a name (`Resolver._facts`, once per name): each occurrence of the word that is not
  plainly a read from the text alone (``torch.``, ``nn(``, ``F[`` are, unless after ``def``,
  ``class`` or ``type``) is looked up in its statement: the nodes holding that position tell
  whether it binds the name and in which scope (a parameter, an assignment/for/with/except/match
  target, a walrus, a def/class name, ``del``, ``global``/``nonlocal``; lambda parameters and
  comprehension targets bind in their own expression scope).
* `Resolver.static`: a name whose only bindings are module-level imports stands for them wherever
  it is read (the common case: ``torch``, ``nn``, ``F``, ``np``).
* `Resolver.at` (the other names): the innermost statement holding the position, its Name nodes
  walked once with their scopes (lambdas and comprehensions are scopes of their own), then the
  read resolved outwards through the scopes that bind the name.

The scope facts are those of CPython's symbol table (``symtable``), which the tests check them
against (every fixture, several stdlib modules; fairseq's 1021 files by hand). The symbol table
itself is not used: it parses the source again, a third to half of ``ast.parse``. Building a
`Resolver` costs 5-10% of ``ast.parse`` (about `_names.import_map`); answering every Name read of
a file brings it to 20-30%, mostly `static`'s first call for each imported name (one scan of the
text per name).

Semantics (Python's): a binding anywhere in a function makes the name local to the whole
function, so a read before it is local too (an ``UnboundLocalError`` at run time, not the import).
Class scopes are invisible from their methods, lambdas and comprehensions; defaults, annotations,
decorators, base classes and a comprehension's first iterable evaluate in the enclosing scope; a
walrus in a comprehension binds in the enclosing function. A scope that binds a name by import
*and* otherwise (``try: import apex`` / ``except ImportError: apex = None``) resolves it to the
import's names, as LibCST's ``QualifiedNameProvider`` unions assignments, except for a read in
that scope itself before its first import of the name (``def f(phonemizer): if phonemizer: ...
import phonemizer``: the parameter). ``global x`` with ``import x`` in a function adds to the
module's names. In a class body, a name read before the class's own first binding of it is looked
up in the module (``device = device``), as ``LOAD_NAME`` does for straight-line code.

Nothing here needs more than the ``ast`` tree, so there is no fallback: code the symbol table
refuses (``nonlocal x`` at module level) resolves by the same rules.

Known limits: private names (``__x``) inside classes are not mangled; NFKC-equivalent spellings of
a name are not looked for; type parameters (3.12+) count as bound in their function or class;
``nonlocal x`` with ``import x`` does not add to the enclosing function's names.
"""

from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_right
from collections.abc import Iterator

from torchport.model.torch_facts import STAR_BINDS

EMPTY: frozenset[str] = frozenset()
_Pos = tuple[int, int]  # (line from 1, column from 0 in UTF-8 bytes, as ast counts)

_SCOPE_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")
_CLAUSE_FIELDS = ("handlers", "cases")  # items that are not statements but hold a body

# How a scope binds a name (`_Frame.facts`).
_IMPORT = 1  # an import
_OTHER = 2  # any other binding: parameter, target, def/class name, del...
_GLOBAL = 4  # a `global` declaration
_NONLOCAL = 8  # a `nonlocal` declaration


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
            if alias.name == "*":
                for name, full in STAR_BINDS.items():
                    out.setdefault(name, set()).add(full)
            else:
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


def _sub_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in _BLOCK_FIELDS:
        block = getattr(stmt, name, None)
        if block:
            yield block
    for name in _CLAUSE_FIELDS:
        for clause in getattr(stmt, name, None) or ():
            if clause.body:
                yield clause.body


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
    """The AST children of a node, nested statements and expression contexts left out."""
    found: list[ast.AST] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            if not isinstance(value, (ast.expr_context, ast.stmt)):
                found.append(value)
        elif isinstance(value, list):
            found.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, ast.stmt))
    return found


def _positioned(node: ast.AST) -> list[ast.AST]:
    """The nearest descendants of ``node`` that have a position (looking into ``arguments``,
    ``comprehension``, ``withitem``, ``match_case``...), sorted by where they start; siblings
    never overlap."""
    found: list[ast.AST] = []
    stack = _children(node)
    while stack:
        child = stack.pop()
        if getattr(child, "lineno", None) is None:
            stack.extend(_children(child))
        else:
            found.append(child)
    found.sort(key=lambda child: (child.lineno, child.col_offset))  # type: ignore[attr-defined]
    return found


# ---- scopes -------------------------------------------------------------------------------


class _Frame:
    """A scope of statements: the module, a function or a class."""

    __slots__ = ("kind", "node", "parent", "facts", "_imports", "_first_binding", "_first_import")

    def __init__(self, kind: str, node: ast.AST, parent: _Frame | None) -> None:
        self.kind = kind  # "module", "function" or "class"
        self.node = node
        self.parent = parent
        self.facts: dict[str, int] = {}  # name -> _IMPORT | _OTHER | _GLOBAL | _NONLOCAL
        self._imports: dict[str, set[str]] = {}  # filled by `add_import`
        self._first_binding: dict[str, _Pos | None] = {}
        self._first_import: dict[str, _Pos] = {}

    def imports(self, name: str) -> frozenset[str]:
        """The qualified names the scope's own imports bind ``name`` to."""
        return frozenset(self._imports.get(name, ()))

    def first_import(self, name: str) -> _Pos | None:
        """Where the scope's first import of ``name`` takes effect (the statement's end)."""
        return self._first_import.get(name)

    def add_import(self, stmt: ast.stmt) -> list[str]:
        """Record an import statement of the scope; the names it binds."""
        bound: dict[str, set[str]] = {}
        _bind_imports(stmt, bound)
        end = _end(stmt)
        for name, names in bound.items():
            self._imports.setdefault(name, set()).update(names)
            first = self._first_import.get(name)
            if first is None or end < first:
                self._first_import[name] = end
        return list(bound)

    def first_binding(self, name: str) -> _Pos | None:
        """Where a class body first binds ``name`` (takes effect), for the reads before it."""
        if name not in self._first_binding:
            self._first_binding[name] = _first_binding(self.node.body, name)  # type: ignore[attr-defined]
        return self._first_binding[name]


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


def _params(args: ast.arguments) -> set[str]:
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    if args.vararg:
        names.add(args.vararg.arg)
    if args.kwarg:
        names.add(args.kwarg.arg)
    return names


def _walk_header(stmt: ast.stmt, scopes: _Scopes) -> dict[_Pos, tuple[str, bool, _Scopes]]:
    """Every Name in ``stmt``'s own text (not its nested blocks): position -> (id, whether it is
    read, the scopes it is read in)."""
    found: dict[_Pos, tuple[str, bool, _Scopes]] = {}
    stack: list[tuple[ast.AST, _Scopes]] = [(node, scopes) for node in _header_nodes(stmt)]
    while stack:
        node, here = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            found[(node.lineno, node.col_offset)] = (node.id, type(node.ctx) is ast.Load, here)  # type: ignore[attr-defined]
        elif kind is ast.Lambda:
            args = node.args  # type: ignore[attr-defined]
            stack.extend((d, here) for d in (*args.defaults, *args.kw_defaults) if d is not None)
            stack.append((node.body, (*here, _ExprScope(True, _params(args)))))  # type: ignore[attr-defined]
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
                    break  # a statement scope: its facts know
            stack.extend((child, here) for child in ast.iter_child_nodes(node))
    return found


def _first_binding(body: list[ast.stmt], name: str) -> _Pos | None:
    """Where a class body's first binding of ``name`` takes effect: after what is evaluated
    before it (the value of an assignment, the iterable of a loop...)."""
    best: _Pos | None = None

    def note(pos: _Pos) -> None:
        nonlocal best
        if best is None or pos < best:
            best = pos

    def names_in(node: ast.AST | None) -> bool:
        found: set[str] = set()
        if node is not None:
            _target_names(node, found)
        return name in found

    for stmt in _scope_statements(body):
        if isinstance(stmt, _SCOPE_DEFS):
            if stmt.name == name:
                note(_end(stmt))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            bound: dict[str, set[str]] = {}
            _bind_imports(stmt, bound)
            if name in bound:
                note(_end(stmt))
        elif isinstance(stmt, (ast.Assign, ast.Delete)):
            if any(names_in(t) for t in stmt.targets):
                note(_end(stmt))
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            if names_in(stmt.target):
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


# ---- where a name is bound ----------------------------------------------------------------

_NAMED_NODES = tuple(getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name))
_TYPE_PARAMS = tuple(getattr(ast, name) for name in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, name))


def _binding(path: list[ast.AST], head: str) -> tuple[str, int] | None:
    """How the occurrence of ``head`` at the end of ``path`` binds it: (where, how), where is
    "here" (the statement's scope), "own" (the scope a def or class statement opens) or None for
    an expression scope; None when it binds nothing (a read, a keyword argument, a comment...)."""
    for index, node in enumerate(path):
        if isinstance(node, ast.JoinedStr):  # positions inside f-strings are unreliable before 3.12
            for sub in ast.walk(node):
                if isinstance(sub, ast.NamedExpr) and getattr(sub.target, "id", None) == head:
                    return _expression_scope(path[:index], walrus=True), _OTHER  # type: ignore[return-value]
            return None
    node = path[-1]
    if isinstance(node, ast.Name):
        if node.id != head or type(node.ctx) is ast.Load:
            return None
        walrus = len(path) > 1 and isinstance(path[-2], ast.NamedExpr) and path[-2].target is node
        return _expression_scope(path[:-1], walrus=walrus), _OTHER  # type: ignore[return-value]
    if isinstance(node, ast.arg):
        if node.arg != head:
            return None
        if any(isinstance(outer, ast.Lambda) for outer in path):
            return (None, _OTHER)  # type: ignore[return-value]
        return ("own", _OTHER)
    root = path[0]
    if node is root:  # the statement's own words: a def or class name, a declaration, a comment
        if isinstance(node, _SCOPE_DEFS):
            return ("here", _OTHER) if node.name == head else None
        if isinstance(node, ast.Global):
            return ("here", _GLOBAL) if head in node.names else None
        if isinstance(node, ast.Nonlocal):
            return ("here", _NONLOCAL) if head in node.names else None
        return None
    if isinstance(node, ast.ExceptHandler):
        return ("here", _OTHER) if node.name == head else None
    if isinstance(node, _NAMED_NODES):
        return ("here", _OTHER) if node.name == head else None
    if isinstance(node, ast.MatchMapping):
        return ("here", _OTHER) if node.rest == head else None
    if isinstance(node, _TYPE_PARAMS):
        return ("own", _OTHER) if node.name == head else None
    return None  # a keyword argument's name, an attribute, a literal's text, a comment


def _expression_scope(path: list[ast.AST], walrus: bool) -> str | None:
    """"here" when a target at the end of ``path`` binds in the statement's scope, None when it
    binds in a lambda's or a comprehension's (a walrus passes through comprehensions)."""
    for node in reversed(path):
        if isinstance(node, ast.Lambda):
            return None
        if isinstance(node, _COMPREHENSIONS) and not walrus:
            return None
    return "here"


_ASCII_IDENTIFIER = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_FOLLOWER = re.compile(r"[ \t]*([.(\[]?)")
_NAMING_KEYWORDS = ("def", "class", "type")
_WORD_PATTERNS: dict[str, re.Pattern[str]] = {}


def _identifier_char(char: str) -> bool:
    if char in _ASCII_IDENTIFIER:
        return True
    return not char.isascii() and ("a" + char).isidentifier()


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
        self._sorted: dict[int, tuple[list[_Pos], list[ast.AST]]] = {}  # `_path`'s children by start
        self._frames: dict[int, _Frame] = {}
        self._binders: dict[str, list[_Frame]] = {}  # name -> the scopes binding or declaring it
        self._static: dict[str, frozenset[str] | None] = {}
        self._in_expressions: set[str] = set()  # names a lambda or a comprehension binds
        self._done: set[str] = set()  # the names `_facts` has looked for
        self._module = _Frame("module", tree, None)
        self._imported = self._scan_imports()

    # ---- public API ----------------------------------------------------------------------

    def static(self, head: str) -> frozenset[str] | None:
        """For a head name bound ONLY by imports, all of them in the module scope, and nowhere
        else in the file (no parameter, target, def/class name, global/nonlocal, del, import in
        an inner scope): the qualified names it stands for, wherever it is read. frozenset() when
        the name is never imported anywhere. None when the answer depends on the position (then
        call `at`). The first call for a name looks at where its text occurs."""
        if head not in self._imported:
            return EMPTY
        if head not in self._static:
            self._facts(head)
            binders = self._binders[head]
            only_imports = (
                binders == [self._module] and self._module.facts[head] == _IMPORT and head not in self._in_expressions
            )
            self._static[head] = self._module.imports(head) if only_imports else None
        return self._static[head]

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
        return static if static is not None else self._resolve(head, scopes, pos)

    # ---- imports and bindings ------------------------------------------------------------

    def _scan_imports(self) -> set[str]:
        """Every name imported anywhere; records each importing scope's facts. The statements
        at the places of the word ``import`` are all the import statements."""
        seen: set[int] = set()
        spans: list[tuple[_Pos, _Pos]] = []
        text = self._text
        line, last = 1, 0
        for at in _words(text, "import"):
            line += text.count("\n", last, at)
            last = at
            found = self._descend((line, self._byte_offset(at)))
            if found is None:
                continue
            stmt, frame, _ = found
            if id(stmt) in seen or not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            seen.add(id(stmt))
            spans.append((_start(stmt), _end(stmt)))
            for name in frame.add_import(stmt):
                self._note(name, frame, _IMPORT)
        spans.sort()
        self._import_starts = [span[0] for span in spans]
        self._import_ends = [span[1] for span in spans]
        return set(self._binders)

    def _note(self, name: str, frame: _Frame, how: int) -> None:
        facts = frame.facts.get(name, 0)
        if not facts:
            self._binders.setdefault(name, []).append(frame)
        frame.facts[name] = facts | how

    def _facts(self, head: str) -> None:
        """Record every scope that binds or declares ``head`` (once per name). Each occurrence
        of the word is looked at, but for the plain reads: ``head.``, ``head(``, ``head[``
        (unless after ``def``, ``class`` or ``type``) and those in import statements."""
        if head in self._done:
            return
        self._done.add(head)
        text = self._text
        follow = _FOLLOWER.match
        seen: set[tuple[int, _Pos]] = set()
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
            pos = (line, self._byte_offset(at))
            index = bisect_right(self._import_starts, pos) - 1
            if index >= 0 and pos < self._import_ends[index]:
                continue  # imports are `_scan_imports`'s
            found = self._descend(pos)
            if found is None:
                continue  # a comment between statements
            stmt, frame, _ = found
            path = self._path(stmt, pos)
            binding = _binding(path, head)
            if binding is None:
                continue
            where, how = binding
            if where is None:  # a lambda's parameter, a comprehension's target
                self._in_expressions.add(head)
                continue
            key = (id(stmt), _end(path[-1]))
            if key in seen:
                continue
            seen.add(key)
            self._note(head, self._frame(stmt, frame) if where == "own" else frame, how)

    # ---- positions -----------------------------------------------------------------------

    def _path(self, stmt: ast.stmt, pos: _Pos) -> list[ast.AST]:
        """``stmt`` and the nodes of its own text that hold ``pos``, outermost first (bisecting
        each node's children: a statement may be a dict literal of thousands of lines)."""
        path: list[ast.AST] = [stmt]
        node: ast.AST = stmt
        while True:
            sorted_children = self._sorted.get(id(node))
            if sorted_children is None:
                children = _positioned(node)
                starts = [(child.lineno, child.col_offset) for child in children]  # type: ignore[attr-defined]
                sorted_children = self._sorted[id(node)] = (starts, children)
            starts, children = sorted_children
            index = bisect_right(starts, pos) - 1
            if index < 0 or not pos < _end(children[index]):
                return path
            node = children[index]
            path.append(node)

    def _byte_offset(self, at: int) -> int:
        """The column (UTF-8 bytes, as ast counts) of the text offset ``at``."""
        start = self._text.rfind("\n", 0, at) + 1
        if self._ascii:
            return at - start
        return len(self._text[start:at].encode("utf-8", "surrogatepass"))

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
            facts = scope.facts.get(head, 0)
            if facts & _GLOBAL:
                return self._module_names(head)
            if facts & _NONLOCAL or not facts & (_IMPORT | _OTHER):
                continue  # bound further out
            if scope.kind == "class":
                first = scope.first_binding(head)
                if first is not None and pos < first:  # read before the class binds it:
                    return self._module_names(head)  # LOAD_NAME looks in the module
                return scope.imports(head) if facts & _IMPORT else EMPTY
            if facts & _IMPORT:
                if scope is own:  # before the scope's import: the other binding, or unbound
                    first = scope.first_import(head)
                    if first is not None and pos < first:
                        return EMPTY
                return scope.imports(head)
            return EMPTY  # a local, a parameter, an enclosing function's local
        return self._module_names(head)

    def _module_names(self, head: str, pos: _Pos | None = None) -> frozenset[str]:
        """The module's names for ``head``, those imported by functions that declare it
        ``global`` included; with ``pos``, for a read in the module scope itself, without the
        module's own imports that come after it."""
        names = self._module.imports(head) if self._module.facts.get(head, 0) & _IMPORT else EMPTY
        if names and pos is not None:
            first = self._module.first_import(head)
            if first is not None and pos < first:
                names = EMPTY
        for frame in self._binders.get(head, ()):
            if frame is not self._module and frame.facts[head] & _GLOBAL and frame.facts[head] & _IMPORT:
                names = names | frame.imports(head)
        return names
