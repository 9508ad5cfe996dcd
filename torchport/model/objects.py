"""Objects a module holds whose class moves itself its own way: their ``.cuda()`` is the class's, not torch's."""

from __future__ import annotations

import ast
from collections.abc import Collection

from torchport.model import torch_facts

# A gate every module of a run gets where a class of the run moves itself its own way: an object a caller passes
# (through a registry, say) may be one of them.
PASSED = "<passed>.cuda"
UNSEEN = "an object its caller passed"  # what `own_parameter` names where it cannot see the caller
# A gate the installable modules of a run get where a torch module class of the run moves itself its own way: a
# user may pass one of its objects wherever the library takes a model (selene's `MultiModelWrapper`).
MODULE_PASSED = "<module passed>.cuda"


_MODEL_METHODS = frozenset(torch_facts.words("module_method"))


def _used_as_a_model(cls: ast.ClassDef, field: str) -> bool:
    """Whether ``cls`` uses ``self.<field>`` as a torch module: calls it, or a module's method of it
    (``self.model.eval()``, ``self.model.parameters()``); a tensor it is given is none."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            used = node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr in _MODEL_METHODS \
                else node.func  # `self.model.eval()`, or `self.model(x)`
            if isinstance(used, ast.Attribute) and used.attr == field and isinstance(used.value, ast.Name) \
                    and used.value.id == "self":
                return True
    return False


def own_parameter(cls: ast.ClassDef, field: str, gates: Collection[str]) -> str | None:
    """The class of the object ``self.<field>`` holds in ``cls``, where another module passes an ``__init__``
    parameter of ``cls`` an object of a class that moves itself its own way (the gates'
    ``<cls>(<param>=<Class>).cuda``, `torchport.pipeline.programs`) and ``self.<field>`` is that parameter or a copy
    of it (XLM's ``self._embedder = embedder``, ``self.embedder = copy.deepcopy(self._embedder)``), else None: its
    ``.cuda()`` is that class's own. In a class with its own ``cuda`` method, where the run has such classes (the
    gate `PASSED`), a parameter whose caller is not seen counts too: pymarl2's learners get their ``mac`` from a
    registry (``le_REGISTRY[args.learner](mac, ...)``), and ``self.mac.cuda()`` is ``BasicMAC.cuda``, which has no
    ``to``. In an installable library with a torch module class of its own ``cuda`` (the gate `MODULE_PASSED`), any
    class's parameter counts: selene's ``AnalyzeSequences(model)`` takes a user's ``MultiModelWrapper``, whose
    ``cuda()`` moves the sub-models ``.to()`` leaves behind."""
    head = f"{cls.name}("
    params = dict(g[len(head): -len(").cuda")].split("=", 1) for g in gates
                  if g.startswith(head) and g.endswith(").cuda") and "=" in g)
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    own_cuda = any(isinstance(f, ast.FunctionDef) and f.name == "cuda" for f in cls.body)
    if init is not None and (PASSED in gates and own_cuda or MODULE_PASSED in gates and _used_as_a_model(cls, field)):
        params = {a.arg: UNSEEN for a in (*init.args.args[1:], *init.args.kwonlyargs)} | params
    if not params:
        return None
    sources: dict[str, list[ast.expr]] = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    sources.setdefault(target.attr, []).append(node.value)

    def held(value: ast.expr, seen: frozenset[str]) -> str | None:
        if isinstance(value, ast.Call) and len(value.args) == 1 and ast.unparse(value.func).endswith("copy"):
            value = value.args[0]  # copy.deepcopy(x), copy.copy(x)
        if isinstance(value, ast.Name):
            return params.get(value.id)
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self" \
                and value.attr not in seen:
            return next((c for v in sources.get(value.attr, ()) if (c := held(v, seen | {value.attr}))), None)
        return None

    return next((c for v in sources.get(field, ()) if (c := held(v, frozenset({field})))), None)


def _takes_less(to: ast.FunctionDef | ast.AsyncFunctionDef, cuda: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a class's own ``to`` lacks a parameter its own ``cuda`` takes (kaolin's PBRMaterial: ``cuda(device,
    non_blocking, memory_format)`` beside ``to(device)``): ``.cuda(non_blocking=...)`` made ``.to(...)`` would raise
    a TypeError, on CUDA too."""
    def names(f: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        return {a.arg for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)} - {"self"}

    return to.args.kwarg is None and bool(names(cuda) - names(to) - {"device"})


def own_device_classes(tree: ast.Module, strict: bool = False) -> dict[str, int]:
    """The top-level classes of a module that move themselves their own way, with their lines: a ``cuda`` method
    of their own and no ``to``, or a ``to`` that compares its device with ``"cuda"`` (manydepth's encoder:
    ``elif str(device) == 'cuda': self.cuda()``, else it raises). ``.cuda()`` on one of their objects is theirs,
    and ``.to(<another device>)`` fails there; so is a ``to`` that lacks a parameter of its ``cuda``
    (`_takes_less`). ``strict``: only those with such a ``to`` (a ``cuda`` alone is a
    container moving its tensors, which a port of its body moves to the runtime's device). A class of the module
    that derives from one of them and defines neither ``cuda`` nor ``to`` inherits both (pytorch-seq2seq's
    ``Perplexity(NLLLoss)``, whose base ``Loss`` moves its criterion in its own ``cuda()``)."""
    found: dict[str, int] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        to = methods.get("to")
        if "cuda" in methods and ((to is None and not strict) or to is not None and (any(
                isinstance(n, ast.Compare) and any(isinstance(c, ast.Constant) and c.value == "cuda"
                                                    for c in (n.left, *n.comparators)) for n in ast.walk(to))
                or _takes_less(to, methods["cuda"]))):
            found[cls.name] = cls.lineno
        elif "cuda" not in methods and to is None and any(
                isinstance(base, ast.Name) and base.id in found for base in cls.bases):
            found[cls.name] = cls.lineno
    return found
