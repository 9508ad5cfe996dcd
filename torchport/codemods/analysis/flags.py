"""Flags of CUDA's availability (``use_cuda = torch.cuda.is_available() and not args.no_cuda``) and whether a port
can move one with the accelerator as a whole: what its readers run under it has a runtime counterpart. CPython's
`ast` only: the project pass reads it without LibCST.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable

from torchport.codemods.analysis.programs import cuda_call
from torchport.model import torch_facts
from torchport.model.trees import parent_map


def is_cuda_module(node: ast.expr) -> bool:
    """``torch.cuda`` (or ``cuda`` imported from torch)."""
    return isinstance(node, ast.Attribute) and node.attr == "cuda" or isinstance(node, ast.Name) and node.id == "cuda"


def names_cuda_api(node: ast.AST) -> bool:
    """Whether ``node`` names something of ``torch.cuda`` (``torch.cuda.FloatTensor``)."""
    return any(isinstance(n, ast.Attribute) and is_cuda_module(n.value) for n in ast.walk(node))


def ported_whole(body: list[ast.stmt], cuda_names: frozenset[str]) -> bool:
    """Whether the runtime ports every CUDA API ``body`` names (``.cuda()`` moves, seeds, ``set_device``): none
    that it keeps (a legacy tensor type, CUDA RNG state, graphs) or has no name for, and no CUDA-only library it
    imports or uses (``cuda_names``: the module's names bound to one; ``if use_cuda: from apex import amp``)."""
    counts = {id(count.func) for statement in body for call in ast.walk(statement) if isinstance(call, ast.Call)
              and _data_parallel(call) for given in [*call.args[1:], *call.keywords] for count in ast.walk(given)
              if isinstance(count, ast.Call) and cuda_call(count, "device_count")}  # `range(torch.cuda.device_count())`
    for statement in body:
        for node in ast.walk(statement):
            if id(node) in counts:
                continue
            if isinstance(node, ast.Attribute) and is_cuda_module(node.value):
                api = torch_facts.api(f"torch.cuda.{node.attr}")
                if api is None or api.becomes is None or not api.portable:
                    return False
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and cuda_library_names(node) or \
                    isinstance(node, ast.Name) and node.id in cuda_names:
                return False
    return True


def _data_parallel(call: ast.Call) -> bool:
    """``torch.nn.DataParallel(...)`` or ``nn.DataParallel(...)`` (its devices' count becomes the accelerator's)."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "DataParallel" or isinstance(
        call.func, ast.Name) and call.func.id == "DataParallel"


def cuda_library_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The local names an import binds from a CUDA-only library (`torch_facts.cuda_library`)."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return {a.asname or a.name for a in node.names
                if torch_facts.cuda_library(f"{module}.{a.name}" if module else a.name) is not None}
    return {a.asname or a.name.split(".", 1)[0] for a in node.names if torch_facts.cuda_library(a.name) is not None}


def one_availability(value: ast.expr) -> bool:
    """``torch.cuda.is_available()``, alone or and-ed with what names no CUDA API (``not args.no_cuda``), or
    that as the test of ``True if ... else False``."""
    if isinstance(value, ast.IfExp) and isinstance(value.body, ast.Constant) and value.body.value is True \
            and isinstance(value.orelse, ast.Constant) and value.orelse.value is False:
        value = value.test
    parts = value.values if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And) else [value]
    checks = [p for p in parts if cuda_call(p, "is_available") and isinstance(p, ast.Call) and not p.keywords]
    return len(checks) == 1 and not any(names_cuda_api(p) for p in parts if p is not checks[0])


def portable_attribute_flags(trees: Iterable[ast.Module], names: Collection[str]) -> frozenset[str]:
    """Of ``names`` (attribute names every assignment of the project sets false without CUDA), those a port can
    move with the accelerator across modules: the Informer family's ``args.use_gpu = True if
    torch.cuda.is_available() and args.use_gpu else False`` in the script, read as ``if self.args.use_gpu:`` around
    ``torch.device('cuda:{}'.format(self.args.gpu))`` in ``exp/exp_basic.py``. Every assignment is one
    availability check (`one_availability`), and every read is the test, or a term of an ``and`` test, of an ``if``
    whose branches the runtime ports whole (`ported_whole`), the test of a conditional expression whose branches
    name no CUDA API, or a ``pin_memory=`` value; some read picks a device or moves data. Read anywhere else
    (printed, passed on, negated) a flag stays CUDA's alone, and so does one an object sets on itself
    (deep-person-reid's ``self.use_gpu``): its class's other code may ask its data where it is, beside it.

    Args:
        trees: the CPython trees of the project's modules.
        names: the candidate attribute names.

    Returns:
        the names whose setting and reading a port changes together.
    """
    candidates, assigned, places = set(names), set(), set()
    for tree in trees:
        if not candidates:
            break
        if not any(isinstance(n, ast.Attribute) and n.attr in candidates for n in ast.walk(tree)):
            continue
        parents = parent_map(tree)
        cuda_names = frozenset(name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                               for name in cuda_library_names(n))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr in candidates):
                continue
            if isinstance(node.ctx, ast.Store):
                statement = parents.get(id(node))
                if isinstance(statement, ast.Assign) and statement.targets == [node] and not (
                        isinstance(node.value, ast.Name) and node.value.id == "self") \
                        and one_availability(statement.value):
                    assigned.add(node.attr)
                else:
                    candidates.discard(node.attr)
                continue
            read = _read(node, parents, cuda_names) if isinstance(node.ctx, ast.Load) else None
            if read is None:
                candidates.discard(node.attr)
            elif read:
                places.add(node.attr)
    return frozenset(candidates & assigned & places)


def _read(node: ast.Attribute, parents: dict[int, ast.AST], cuda_names: frozenset[str]) -> bool | None:
    """How a flag is read: None where a port cannot follow it, else whether what it guards picks a device or
    moves data."""
    test: ast.AST = node
    parent = parents.get(id(node))
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.And):
        test, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.keyword) and parent.arg == "pin_memory" and test is node:
        return False
    if isinstance(parent, ast.If) and parent.test is test:
        if not ported_whole([*parent.body, *parent.orelse], cuda_names):
            return None
        return any(isinstance(n, ast.Attribute) and n.attr == "cuda" or _cuda_string(n)
                   for s in parent.body for n in ast.walk(s))
    if isinstance(parent, ast.IfExp) and parent.test is test:
        if names_cuda_api(parent.body) or names_cuda_api(parent.orelse):
            return None
        return any(_cuda_string(n) for n in ast.walk(parent.body))
    return None


def _cuda_string(node: ast.AST) -> bool:
    """A CUDA device string, or the start of one an index completes (``'cuda:{}'.format(gpu)``, ``f"cuda:{i}"``)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        torch_facts.CUDA_SPEC.fullmatch(node.value) is not None or node.value in ("cuda:", "cuda:{}", "cuda:{0}"))
