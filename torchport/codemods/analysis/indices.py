"""Names that hold an integer device index by the data flow of their own function, read from CPython's tree.

Off CUDA, an int where torch expects a device means ``cuda:<int>`` and fails. The int often travels through a
name that holds no CUDA text, so no trigger of the rules finds its use::

    def to_ctx(self, data, ctx=0, dtype=None):   # a parameter with an int default
        for key in data:
            data[key] = data[key].to(ctx)

    def predict_loop(self, model):
        ctx = 0                                   # a local bound only to int literals
        model = model.to(ctx)

A name counts when its function binds it in nothing but that way (a parameter with an int default that the
body never rebinds; a local every binding of which is ``name = <int literal>``), no nested scope binds it again,
and some read of it sits where a device goes: the first argument of ``.to(...)``, a ``device=`` keyword, or
the one argument of ``<module>.device(...)`` (``.cuda(ctx)`` needs nothing: TP001 maps whatever it is given).
Rule TP006 decides what to do with it; this module only finds the names and the lines the pass must visit.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from torchport.codemods.analysis.programs import parameter_defaults
from torchport.model import torch_facts

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass
class IntNames:
    """One function's names that hold an int device index.

    Args:
        params: parameters with an int literal default that the body never rebinds.
        local: names of the function bound only by ``name = <int literal>``.
        lines: the lines the rules must visit: the function's ``def``, the defaults and assignments, and the
            reads in device positions.
    """

    params: set[str] = field(default_factory=set)
    local: set[str] = field(default_factory=set)
    lines: set[int] = field(default_factory=set)


def _is_int(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def device_read(call: ast.Call, node: ast.expr) -> bool:
    """Whether ``node`` is an argument of ``call`` where a device goes (see the module's docstring)."""
    func = call.func
    if call.args and call.args[0] is node and isinstance(func, ast.Attribute) and func.attr == "to":
        return True
    if len(call.args) == 1 and call.args[0] is node and not call.keywords and isinstance(func, ast.Attribute) \
            and func.attr == "device":
        return True
    return any(k.arg == "device" and k.value is node for k in call.keywords)


def _own_scope(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[ast.AST], list[ast.AST]]:
    """The nodes of ``function``'s own scope (its defaults, decorators and annotations left out), and the nested
    scopes met inside it."""
    own: list[ast.AST] = []
    nested: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            nested.append(node)
            continue
        own.append(node)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return own, nested


def _bound(node: ast.AST) -> set[str]:
    """The names a nested scope binds for itself (parameters, stores, its own name excepted)."""
    names: set[str] = set()
    if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
        args = node.args
        names.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            names.add(inner.id)
        elif isinstance(inner, (ast.Global, ast.Nonlocal)):
            names.update(inner.names)
    return names


def _assigns_int(function: ast.AST, wanted: set[str]) -> bool:
    return any(isinstance(node, ast.Assign) and _is_int(node.value) and len(node.targets) == 1
               and isinstance(node.targets[0], ast.Name) and node.targets[0].id in wanted
               for node in ast.walk(function))


def function_int_names(function: ast.FunctionDef | ast.AsyncFunctionDef,
                       wanted: set[str] | None = None) -> IntNames | None:
    """The names of ``function`` that hold an int device index, or None when it has none (only names in
    ``wanted``, the names the module reads in a device position, when given)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    int_params = {a.arg: d for a, d in parameter_defaults(function).items()
                  if _is_int(d) and (wanted is None or a.arg in wanted)}
    every_param = {a.arg for a in (*positional, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None}
    if wanted is not None and not int_params and not _assigns_int(function, wanted):
        return None
    own, nested = _own_scope(function)
    int_stores: dict[str, list[ast.Assign]] = {}
    other: set[str] = set(every_param) - set(int_params)
    for node in own:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _is_int(node.value) and (wanted is None or node.targets[0].id in wanted):
            int_stores.setdefault(node.targets[0].id, []).append(node)
    for node in own:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if not any(node is a.targets[0] for a in int_stores.get(node.id, ())):
                other.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            other.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in node.names)
    for scope in nested:
        other |= _bound(scope)
        if isinstance(scope, (*_FUNCTIONS, ast.ClassDef)):
            other.add(scope.name)
    params = {n for n in int_params if n not in other and n not in int_stores}
    local = {n for n in int_stores if n not in other and n not in every_param}
    if not params and not local:
        return None
    found = IntNames()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            for arg in (*node.args, *(k.value for k in node.keywords)):
                if isinstance(arg, ast.Name) and arg.id in (params | local) and device_read(node, arg):
                    found.lines.add(arg.lineno)
                    (found.params if arg.id in params else found.local).add(arg.id)
    if not found.lines:
        return None
    found.lines.add(function.lineno)
    for name in found.params:
        default = int_params[name]
        found.lines.add(default.lineno)
    for name in found.local:
        found.lines.update(a.lineno for a in int_stores[name])
    return found


_LAST: list[tuple[ast.Module, dict[int, IntNames]]] = []  # the last module asked about: asked twice per module


_INT_BOUND = torch_facts.text("int_bound")
_DEVICE_READ = r"(?:\.to\(|\bdevice\s*=|\bdevice\()\s*(?:{})\s*[,)]"


def _may_have(source: str) -> bool:
    """A fast look at the text: a name bound to an int (``ctx=0``, ``ctx = 0``) that is also written in a device
    position (``.to(ctx``, ``device=ctx``). Every module `int_names` finds something in passes."""
    names = set(_INT_BOUND.findall(source))
    return bool(names) and re.search(_DEVICE_READ.format("|".join(map(re.escape, names))), source) is not None


def int_names(module: ast.Module, source: str | None = None) -> dict[int, IntNames]:
    """Every function of ``module`` with names that hold an int device index, by the line of its ``def``
    (``source``, the module's text, lets most modules be passed over without a walk)."""
    if _LAST and _LAST[0][0] is module:
        return _LAST[0][1]
    if source is not None and not _may_have(source):
        _LAST[:] = [(module, {})]
        return {}
    wanted: set[str] = set()
    functions = []
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            wanted.update(arg.id for arg in (*node.args, *(k.value for k in node.keywords))
                          if isinstance(arg, ast.Name) and device_read(node, arg))
        elif isinstance(node, _FUNCTIONS):
            functions.append(node)
    found: dict[int, IntNames] = {}
    if wanted:
        found = {node.lineno: names for node in functions
                 if (names := function_int_names(node, wanted)) is not None}
    _LAST[:] = [(module, found)]
    return found


def int_name_lines(module: ast.Module, source: str | None = None) -> set[int]:
    """The lines that the rules must visit for the names `int_names` finds."""
    return {line for found in int_names(module, source).values() for line in found.lines}
