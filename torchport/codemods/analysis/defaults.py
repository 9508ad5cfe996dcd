"""Parameter defaults whose rewrite would change nothing, read from CPython's tree before the rules visit.

A default is evaluated at ``def`` time but used only by a call that leaves the parameter out. When nothing
outside the module can call the function (a private ``_helper``, or a function of a script: a module with
a ``__main__`` block) and every call inside the module passes the parameter, the default never reaches a
tensor; rewriting ``device="cuda"`` there changes nothing anywhere::

    def validate(model, loader, device=torch.device("cuda")):   # stays as written
        ...
    if __name__ == "__main__":
        validate(model, loader, device=args.device)

Two more cases are left as written and reported, not proven: a script with its own ``--device`` option
passes that device along, so its functions' and classes' device defaults are fallbacks it does not use;
and a function that compares its ``device`` parameter with ``"cuda"`` (``assert device == "cuda"``)
dispatches on the string itself, so its default names a branch, not where tensors go.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.codemods.analysis.programs import closed_functions, is_script
from torchport.model import torch_facts

# Decorators that return the function unchanged for callers (others may register it to be called elsewhere).
_PLAIN_DECORATORS = frozenset(torch_facts.words("plain_decorator"))


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def defaulted(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int | None]:
    """Parameters with a default: name -> positional index (None for keyword-only)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    first = len(positional) - len(args.defaults)
    found: dict[str, int | None] = {a.arg: i for i, a in enumerate(positional) if i >= first}
    found.update({a.arg: None for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return found


def passes(call: ast.Call, name: str, index: int | None) -> bool | None:
    """Whether ``call`` passes parameter ``name``; None when it cannot be told (``*args``, ``**kwargs``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return any(k.arg == name for k in call.keywords) or (index is not None and len(call.args) > index)


def unreachable_defaults(module: ast.Module) -> dict[str, frozenset[str]]:
    """Module-level functions whose named parameter defaults no call can reach.

    Args:
        module: the module's CPython tree.

    Returns:
        function name -> the names of its parameters whose default is never used: the function is
        private or the module is a script, it has only plain decorators, each reference to its name in
        the module is a call, and each call passes those parameters.
    """
    candidates = {
        name: defaulted(function) for name, function in closed_functions(module).items()
        if all(_decorator_name(d) in _PLAIN_DECORATORS for d in function.decorator_list)
    }
    candidates = {name: params for name, params in candidates.items() if params}
    if not candidates:
        return {}
    calls: dict[int, ast.Call] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls[id(node.func)] = node
    unused = {name: set(params) for name, params in candidates.items()}
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id in unused:
            call = calls.get(id(node))
            params = candidates[node.id]
            for param in list(unused[node.id]):
                if call is None or not passes(call, param, params[param]):
                    unused[node.id].discard(param)
    return {name: frozenset(params) for name, params in unused.items() if params}


def unreachable_method_defaults(module: ast.Module) -> dict[tuple[str, str], frozenset[str]]:
    """Private methods (``_name``) of module-level classes whose named parameter defaults no call reaches.

    Returns:
        (class name, method name) -> parameters with an unused default: every reference to
        ``.<method name>`` in the module is a call (``self._check(device=d)``) that passes them.
    """
    methods: dict[tuple[str, str], dict[str, int | None]] = {}
    for statement in module.body:
        if isinstance(statement, ast.ClassDef):
            for item in statement.body:
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("_")
                        and not item.name.endswith("__") and not item.decorator_list):
                    params = {name: (None if index is None else index - 1)  # `self` is not passed
                              for name, index in defaulted(item).items()}
                    if params:
                        methods[(statement.name, item.name)] = params
    if not methods:
        return {}
    names = {method for _, method in methods}
    calls = {id(n.func): n for n in ast.walk(module) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    unused = {key: set(params) for key, params in methods.items()}
    owners = {}  # `self._check` inside class C means C's method; any other reference may mean any of them
    for statement in module.body:
        if isinstance(statement, ast.ClassDef):
            for node in ast.walk(statement):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in ("self", "cls")):
                    owners[id(node)] = statement.name
    for node in ast.walk(module):
        if isinstance(node, ast.Attribute) and node.attr in names:
            call = calls.get(id(node))
            for key, params in methods.items():
                if key[1] == node.attr and owners.get(id(node), key[0]) == key[0]:
                    for param in list(unused[key]):
                        if call is None or not passes(call, param, params[param]):
                            unused[key].discard(param)
    return {key: frozenset(params) for key, params in unused.items() if params}


def _option_names(call: ast.Call) -> list[str]:
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    names += [k.value.value for k in call.keywords
              if k.arg == "dest" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)]
    return [n.lstrip("-").replace("-", "_") for n in names]


def option_defaults(tree: ast.Module) -> list[tuple[str, str]]:
    """``(name, default)`` for each name of each command-line option with a string default in ``tree``
    (``parser.add_argument("--net", default="pointnet2_msg")`` gives ``("net", "pointnet2_msg")``): its long flags
    as ``args`` attributes, and its ``dest``."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if not (isinstance(default, ast.Constant) and isinstance(default.value, str)):
            continue
        dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)),
                    None)
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dests = {n.lstrip("-").replace("-", "_") for n in names if n.startswith("--")} | (
            {dest} if isinstance(dest, str) else set())
        found.extend((name, default.value) for name in sorted(dests))
    return found


def script_device_option(module: ast.Module, is_device_name: Callable[[str], bool]) -> bool:
    """Whether ``module`` is a script (a ``__main__`` block) with a device command-line option
    (``parser.add_argument("--device", ...)``, any name ``is_device_name`` accepts)."""
    if not is_script(module):
        return False
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "add_argument" and any(map(is_device_name, _option_names(node)))
               for node in ast.walk(module))


_CUDA_TEXT = torch_facts.CUDA_SPEC
_OTHER_TEXT = frozenset(torch_facts.OFF_CUDA)


def dispatching_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Parameters that ``function`` itself compares with ``"cuda"`` and with another device type
    (``if device == "cpu": ... else: assert device == "cuda"``): code already written for several
    backends, whose default names one of its own branches."""
    seen: dict[str, set[str]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name):
            for comparator in node.comparators:
                items = comparator.elts if isinstance(comparator, (ast.Tuple, ast.List, ast.Set)) else [comparator]
                for item in items:
                    if isinstance(item, ast.Constant) and isinstance(item.value, str):
                        kind = "cuda" if _CUDA_TEXT.fullmatch(item.value) else item.value
                        seen.setdefault(node.left.id, set()).add(kind)
    return frozenset(name for name, kinds in seen.items() if "cuda" in kinds and kinds & _OTHER_TEXT)


def placing_fields(tree: ast.Module) -> frozenset[str]:
    """Attribute and key names whose value the module compares with ``"cuda"`` to place data on CUDA:
    ``if args.RUN_DEVICE == 'cuda': w = w.cuda()`` (RWKV's ``model_run.py``), or ``!=`` with the move in
    ``else``. A ``"cuda"`` stored under that name elsewhere chooses that branch: ported to the runtime's device
    type, the comparison fails on a Mac and the data stays on the CPU while the name's other uses go to MPS."""
    fields: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(test := node.test, ast.BoolOp | ast.Compare)):
            continue
        for compare in (test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]):
            if not (isinstance(compare, ast.Compare) and len(compare.ops) == 1
                    and isinstance(compare.ops[0], ast.Eq | ast.NotEq)):
                continue
            right = compare.comparators[0]
            if not (isinstance(right, ast.Constant) and isinstance(right.value, str)
                    and _CUDA_TEXT.fullmatch(right.value)):
                continue
            field = field_name(compare.left)
            branch = node.body if isinstance(compare.ops[0], ast.Eq) else node.orelse
            if field and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "cuda"
                             for statement in branch for n in ast.walk(statement)):
                fields.add(field)
    return frozenset(fields)


def field_name(node: ast.expr) -> str | None:
    """``x.name`` -> ``name``; ``x["name"]`` -> ``name``; else None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None
