"""A name a program reads before it does any work, which nothing binds: a NameError on every device.

PhySTNet's ``MAU/main.py`` loads its checkpoint and then builds ``DataLoader(dataset_test, ...)``, a name no line
of the module binds: it stops there on CUDA as anywhere, so a port of it changes nothing anyone can run. Read from
CPython's tree in the order the statements run: the module's body (its ``__main__`` block, for a script), and the
body of the first own function it calls, up to the first loop or call of another own function (after that the
program may have done its work: a training loop that ends in a NameError still trained). A name counts as bound
wherever the module binds it, in any scope (an assignment, a parameter, an import, a definition, ``global``); a
module that may bind names it does not spell (``globals()``, ``exec``, a star import, ``builtins``) settles nothing.
The same walk gives the calls the program makes on every run before its work (`first_calls`): a call of a project
function or class with arguments its signature refuses is a TypeError on every device (a stale notebook).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Mapping

from torchport.model import installed, torch_facts

_DYNAMIC = torch_facts.text("dynamic_binding")


class _Worked(Exception):
    """The program reached a loop or a call of its own code: what follows may come after its work."""


def unbound_read(tree: ast.Module, text: str, script: bool) -> tuple[int, str] | None:
    """The first name the module's code reads on every run that nothing in the module binds.

    Args:
        tree: CPython's parse of ``text``.
        text: the module's source.
        script: read its ``if __name__ == "__main__":`` block too (it runs as the program).

    Returns:
        ``(line, name)``, 1-based; None where no such read comes before the program's first loop or call of its
        own functions, or where the module may bind names it does not spell.
    """
    if _binds_unspelled(text):
        return None
    reads = [n for n in _walk(tree, script) if isinstance(n, ast.Name)]
    known = _BUILTINS | (installed.binds(text, tree) or frozenset())  # most reads are of imports and globals: the
    # whole walk only for names they leave
    reads = [n for n in reads if n.id not in known and not (n.id.startswith("__") and n.id.endswith("__"))]
    if not reads:
        return None
    bound = _bound(tree)
    return next(((n.lineno, n.id) for n in reads if n.id not in bound), None)


def first_calls(tree: ast.Module, text: str, script: bool) -> list[ast.Call]:
    """The calls of a name or a name's attribute (``Net(3)``, ``models.build(cfg)``) the module's code makes on every
    run before its work, in the order they run, the call that starts the work included (``main(args)``, a method
    called), as `unbound_read` walks it; none where the module may bind names it does not spell.

    Args:
        tree: CPython's parse of ``text``.
        text: the module's source.
        script: read its ``if __name__ == "__main__":`` block too.
    """
    if _binds_unspelled(text):
        return []
    return [n for n in _walk(tree, script) if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) or isinstance(
        n.func, ast.Attribute) and isinstance(n.func.value, ast.Name))]


def _binds_unspelled(text: str) -> bool:
    """Whether a module may bind names it does not spell (``globals()``, ``exec``, a star import, ``builtins``)."""
    return bool(_DYNAMIC.search(text)) or "builtins" in text or "import *" in text


def _walk(tree: ast.Module, script: bool) -> list[ast.Name | ast.Call]:
    """The names read and the calls made on every run, in order, until the program may have done its work."""
    functions = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    modules = frozenset((a.asname or a.name).split(".", 1)[0] for s in ast.walk(tree) if isinstance(s, ast.Import)
                        for a in s.names)
    found: list[ast.Name | ast.Call] = []
    try:
        for node in _reads(tree.body, script, functions, 1, modules):
            found.append(node)
    except _Worked:
        pass
    return found


_BUILTINS = frozenset(dir(builtins))


def _bound(tree: ast.Module) -> set[str]:
    """Every name the module binds, in any scope."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".", 1)[0] for a in node.names)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.add(node.rest)
    return found


def _reads(body: list[ast.stmt], script: bool, functions: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
           depth: int, modules: frozenset[str] = frozenset()) -> Iterator[ast.Name | ast.Call]:
    """The names ``body`` reads and the calls it makes on every run, in the order it runs, until it may have done
    work (`_Worked`).
    ``modules``: the names the module binds to modules (``import torch``): a call of their attributes is a library
    call (``torch.load``), not the program's work."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if script and main_guard(stmt.test):
                yield from _reads(stmt.body, False, functions, depth, modules)
                continue
            yield from _loads(stmt.test)
            if _works(stmt, functions, modules):
                raise _Worked
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            yield from _loads(stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test)
            raise _Worked
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            if any(_broad(h.type) for h in stmt.handlers):
                if _works(stmt, functions, modules):
                    raise _Worked
                continue
            yield from _reads(stmt.body, False, functions, depth, modules)
            yield from _reads(stmt.finalbody, False, functions, depth, modules)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Match)):
            # a context manager may swallow what its block raises (`contextlib.suppress`); a `match` takes one case
            for part in [getattr(stmt, "subject", None), *(i.context_expr for i in getattr(stmt, "items", ()))]:
                yield from _loads(part) if part is not None else ()
            raise _Worked
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for part in _definition_parts(stmt):
                yield from _loads(part)
        elif isinstance(stmt, (ast.Return, ast.Raise)):
            yield from _loads(stmt)
            raise _Worked  # the path ends here
        elif isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Pass)):
            continue
        elif (call := _own_call(stmt, functions)) is not None:
            for argument in [*call.args, *(k.value for k in call.keywords)]:
                yield from _loads(argument)
            yield call
            function = functions[call.func.id]  # type: ignore[attr-defined]
            if depth > 0 and isinstance(function, ast.FunctionDef) and not any(
                    isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(function)):  # a generator: later
                yield from _reads(function.body, False, functions, depth - 1, modules)
            raise _Worked
        else:
            yield from _loads(stmt)
            if _works(stmt, functions, modules):
                raise _Worked


def _loads(node: ast.AST) -> Iterator[ast.Name | ast.Call]:
    """The names ``node`` reads and the calls it makes whenever it runs, in source order (a call after its
    arguments): not in a lambda, a generator or an annotation
    (they run later, or never), nor in what a conditional expression, ``and``/``or`` or a comprehension may skip
    (the other arm, the right side, the element)."""
    stack = [node]
    found = []
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.Lambda, ast.GeneratorExp, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(current, ast.IfExp):
            stack.append(current.test)
            continue
        if isinstance(current, ast.BoolOp):
            stack.append(current.values[0])
            continue
        if isinstance(current, (ast.ListComp, ast.SetComp, ast.DictComp)):
            stack.append(current.generators[0].iter)
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load) or isinstance(current, ast.Call):
            found.append(current)
        for name, child in ast.iter_fields(current):
            if name in ("annotation", "returns"):
                continue
            children = child if isinstance(child, list) else [child]
            stack.extend(c for c in children if isinstance(c, ast.AST))
    yield from sorted(found, key=lambda n: (n.end_lineno or n.lineno, n.end_col_offset or 0) if isinstance(
        n, ast.Call) else (n.lineno, n.col_offset))


def _definition_parts(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[ast.expr]:
    """What a ``def`` or ``class`` statement evaluates when it runs: decorators, defaults, bases."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    return [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]


def _broad(handled: ast.expr | None) -> bool:
    """Whether an ``except`` clause of type ``handled`` catches a NameError."""
    if handled is None:
        return True
    names = handled.elts if isinstance(handled, ast.Tuple) else [handled]
    return any(not isinstance(n, ast.Name) or isinstance(base := getattr(builtins, n.id, None), type)
               and issubclass(NameError, base) for n in names)


def main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" and any(
        isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)


def _own_call(stmt: ast.stmt, functions: Mapping[str, ast.AST]) -> ast.Call | None:
    """The call of an own function a statement makes whole: ``main()``, ``result = main(args)``."""
    value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in functions:
        return value
    return None


def _works(node: ast.AST, functions: Mapping[str, ast.AST], modules: frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` holds a loop or a call that may do the program's work: an own function, an imported one
    (``fit(model)``), a method (``trainer.fit(model)``). Not a builtin, a module's function (``torch.load``), a
    class made (a name in CapWords, PEP 8's for classes: ``MAU_Model(configs)``) or a method torch's
    ``nn.Module`` defines (``model.load_state_dict(...)``, ``model.eval()``): setting up is no work."""
    setup = installed.module_methods()
    for n in ast.walk(node):
        if isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
            return True
        if not isinstance(n, ast.Call):
            continue
        if isinstance(n.func, ast.Name):
            name = n.func.id
            if name in functions or name not in _BUILTINS and not name[:1].isupper():
                return True
        elif isinstance(n.func, ast.Attribute) and n.func.attr not in setup:
            root = n.func.value
            while isinstance(root, (ast.Attribute, ast.Call)):
                root = root.value if isinstance(root, ast.Attribute) else root.func
            if not (isinstance(root, ast.Name) and root.id in modules):
                return True
    return False
