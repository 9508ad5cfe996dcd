"""CUDA guards and the regions that run only on CUDA, or that already pick among several backends.

| Code  | Before                                     | After                         |
|-------|--------------------------------------------|-------------------------------|
| TP110 | if torch.cuda.is_available(): import apex  | (kept: a CUDA guard; noted)   |

A guard (`torch.cuda.is_available()`, `torch.cuda.device_count() > 0`) is rewritten to the runtime's
only where the code it guards chooses a device or moves data and holds nothing CUDA-only; then on a Mac
the guarded code runs on MPS. Otherwise it stays a CUDA guard: on MPS or CPU the CUDA-only code (apex,
NVML, CUDA kernels, `torch.cuda` APIs with no equivalent) is still skipped, and the code under it, which
runs only on CUDA, is left as it is (rewriting it would change nothing anywhere). The same holds under
`if x.is_cuda:`, `if x.device.type == "cuda":`, and in tests skipped unless CUDA is present.

Code that already chooses among CUDA, MPS, XPU, NPU or HPU, and classes that implement an accelerator
backend (DeepSpeed-style `CUDA_Accelerator`, `NPU_Accelerator`), are left alone, without a note.
`device_count()` is rewritten to `tp.process_count()` where it sizes a process count (`nprocs=`, a world
size), so one process starts on a CPU-only machine.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst
import libcst.matchers as matchers

from torchport.codemods import cuda_api
from torchport.codemods.analysis.flags import (
    cuda_library_names,
    is_cuda_module,
    names_cuda_api,
    one_availability,
    ported_whole,
)
from torchport.codemods.analysis.gates import GATE_TEXT, cuda_gates
from torchport.codemods.analysis.names import ast_chain, own_nodes, qualify
from torchport.codemods.analysis.programs import (
    CUDA_ONLY_TEXT,
    arguments,
    closed_functions,
    cuda_call,
    cuda_only_program,
    parameters,
    placed_again,
    where,
)
from torchport.codemods.analysis.requirements import cuda_only_functions, cuda_only_import
from torchport.codemods.core.base import (
    call_name,
    dotted_name,
    is_cuda_literal,
    string_value,
)
from torchport.codemods.core.reasons import (
    CONFIG_DATA,
    CUDA_GATE,
    CUDA_ONLY,
    CUDA_ONLY_LIBRARY,
    CUDA_ONLY_PROGRAM,
    CUDA_QUERY,
    CUDA_TEST,
    EXPECTED_ERROR,
    FAKES_CUDA,
    GATE_DEFINITION,
    HALF_PORT,
    HELD_CHOICE,
    OLDER_TORCH,
    SEVERAL_BACKENDS,
    TORCHSCRIPT,
    UNSET_ATTRIBUTE,
    Reason,
    note,
)
from torchport.codemods.core.rule import Example, Rule
from torchport.codemods.device import own_object, tensor_type_check
from torchport.codemods.unported import exit_gate_at, removable_assert, removable_exit_gate
from torchport.emit.unparse import unparse
from torchport.model import torch_facts
from torchport.model.evaluate import asks_for_cuda, fixture_decorator
from torchport.model.objects import own_device_classes
from torchport.model.torch_facts import FAKES_CUDA as FAKES_CUDA_TEXT
from torchport.model.torch_facts import LIBRARY_PLACEMENT_KEYWORDS
from torchport.model.trees import parent_map
from torchport.results import PORTED_FLAG

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

(_AVAILABLE,) = torch_facts.named("available")
(_COUNT,) = torch_facts.named("count")
_OTHER_BACKENDS = torch_facts.text("other_backend_module")
_OTHER_DEVICE_STRINGS = frozenset(torch_facts.words("other_device"))
_PROCESS_COUNT = frozenset(torch_facts.words("process_count"))
_EXPECTS_ERROR = frozenset(torch_facts.words("expects_error"))
_COLLECTIVES = frozenset(torch_facts.words("collective"))
_SPAWN = torch_facts.named("spawn")
_DATA_PARALLEL = torch_facts.named("data_parallel")
# Why a module that names MPS keeps its CUDA choices (`Migrator.hold`): it picks MPS itself
OWN_MPS_HOLD = "this module already moves data to MPS itself; a runtime guard would add a second choice"
_KERNEL_REGISTRATION = torch_facts.named("kernel_registration")
_SPAWN_TAILS = frozenset(name.rsplit(".", 1)[-1] for name in _SPAWN)  # `mp.spawn(...)`, read from CPython's tree
_QUERY_TAILS = frozenset(torch_facts.cuda_tail(name) for name in torch_facts.named("available", "count"))
# torch.cuda names some rule ports (the registry's RENAMED); anything else under a guard is CUDA-only.
def _portable_cuda(name: str) -> bool:
    """Whether a ``torch.cuda`` name has a portable rewrite (a rule's ``renames``, or the idioms guards port)."""
    from torchport.codemods.core.registry import RENAMED  # the registry imports this module

    tail = cuda_api.cuda_tail(name)
    return tail is not None and (tail in RENAMED or tail in _QUERY_TAILS
                                 or tail in cuda_api.LEGACY_TYPES)
_TORCH_CUDA_INTERNALS = tuple(sorted(torch_facts.named("cuda_internals")))  # CUDA kernels, compiled or built here


def _moves(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is data moved to a device (``img.to(device)``, ``x.cuda()``): under a CUDA query, data that
    stays on the CPU off CUDA, wherever the program's other data goes."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
        and node.func.attr.value in ("to", "cuda")


def _type_label(m: Migrator, node: cst.IfExp) -> bool:
    """Whether ``node`` is assigned to a name that the module reads only in comparisons and as ``device_type=``
    (TabularTransformer's ``self.device_type = 'cuda' if 'cuda' in self.device else 'cpu'``, for its autocast):
    a label of where the data is, which places nothing (on MPS it reads "cpu": no autocast there)."""
    if m.syntax is None:
        return False
    line = m.start(node).line
    assign = next((a for a in ast.walk(m.syntax) if isinstance(a, ast.Assign) and isinstance(a.value, ast.IfExp)
                   and a.value.lineno == line and len(a.targets) == 1), None)
    if assign is None or not isinstance(assign.targets[0], (ast.Name, ast.Attribute)):
        return False
    key = ast.unparse(assign.targets[0])
    parents = parent_map(m.syntax)
    reads = [n for n in ast.walk(m.syntax) if isinstance(n, (ast.Name, ast.Attribute))
             and isinstance(n.ctx, ast.Load) and ast.unparse(n) == key]
    return bool(reads) and all(isinstance(parent := parents.get(id(n)), ast.Compare) or isinstance(
        parent, ast.keyword) and parent.arg == "device_type" for n in reads)


def _placed_again(m: Migrator, node: cst.If) -> bool:
    """`placed_again` of the ``if`` ``node`` (no ``else``), read from CPython's tree."""
    if m.syntax is None or node.orelse is not None:
        return False
    line = m.start(node).line
    parents = parent_map(m.syntax)
    branch = next((n for n in ast.walk(m.syntax) if isinstance(n, ast.If) and n.lineno == line), None)
    return branch is not None and placed_again(branch, parents)


def _else_picks_cpu(node: cst.If) -> bool:
    """Whether the ``else:`` of a CUDA guard sets a device to the CPU (AGCRN's ``if torch.cuda.is_available():
    torch.cuda.set_device(...)`` / ``else: args.device = 'cpu'``): off CUDA the choice is the CPU, MPS or not."""
    return isinstance(node.orelse, cst.Else) and any(
        isinstance(small, cst.Assign) and isinstance(small.value, cst.SimpleString)
        and small.value.evaluated_value == "cpu"
        for line in node.orelse.body.body if isinstance(line, cst.SimpleStatementLine) for small in line.body)


class _Scan(cst.CSTVisitor):
    """What a guarded block does: chooses a device or moves data, and whether anything is CUDA-only."""

    def __init__(self, m: Migrator) -> None:
        super().__init__()
        self.m = m
        self.chooses = False
        self.cuda_only = False
        self.inner: set[int] = set()  # parts of a longer chain: `torch.cuda.nvtx` of `torch.cuda.nvtx.range_push`
        self.compared: set[int] = set()  # strings a comparison reads

    def visit_Import(self, node: cst.Import) -> bool:
        self.cuda_only = True
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.cuda_only = True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = call_name(func)
        if name in _COLLECTIVES:  # a tensor for NCCL: gloo on MPS or XPU could not take it
            self.cuda_only = True
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to", "cpu"):
            self.chooses = True  # (`.cpu()`: brings back what the program placed, wherever that was)
            if func.attr.value == "cuda" and own_object(self.m, func.value) is not None:
                self.cuda_only = True  # its class moves itself to CUDA alone: the guard keeps the choice
        if self.m.has_qname(func, "torch.device"):
            self.chooses = True
        if isinstance(func, cst.Name) and (called := _module_function(self.m, func.value)) is not None:
            # Palette's `set_device`: `if torch.cuda.is_available(): args = set_gpu(args)`, whose body moves it
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "to")
                   for n in ast.walk(called)):
                self.chooses = True
                text = ast.unparse(called)
                self.cuda_only |= "torch.cuda." in text or "nccl" in text

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.inner.add(id(node.value))
        self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        if id(node) in self.inner:
            return
        for name in self.m.qnames(node):
            if name.startswith("torch.cuda.") and name.endswith("Tensor"):
                self.chooses = self.cuda_only = True  # a legacy tensor type: where its tensors go, CUDA's alone
            elif name.startswith("torch.cuda.") and not _portable_cuda(name):
                self.cuda_only = True
            elif name.startswith(_TORCH_CUDA_INTERNALS) or cuda_only_import(name.rsplit(".", 1)[0]) is not None:
                self.cuda_only = True

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value in LIBRARY_PLACEMENT_KEYWORDS:
            self.chooses = True  # `from_pretrained(..., device_map="auto")`: the library places the model

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # pytorch_SSD's `if not 'cuda' in self.model.device.type: logging.warning(...)`: a device compared with
        # "cuda" is asked about, not chosen
        self.compared.update(id(n) for n in (node.left, *(c.comparator for c in node.comparisons)))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if id(node) in self.compared:
            return
        # `kwargs["device_map"] = "auto"`; `"cuda:" + str(gpu)`, `"cuda:%s" % ids[0]`: a device built at run time
        if is_cuda_literal(node) or value in LIBRARY_PLACEMENT_KEYWORDS or value is not None and value.startswith(
                "cuda:"):
            self.chooses = True
        if value is not None and (value.lower() == "nccl" or value.endswith((".cu", ".cuh"))):
            self.cuda_only = True

    def visit_Assign(self, node: cst.Assign) -> None:
        # `cuda = True` for a later `torch.device("cuda" if cuda else "cpu")` (focal_calibration's train.py)
        if isinstance(node.value, cst.Name) and node.value.value == "True" and len(node.targets) == 1 and \
                isinstance(node.targets[0].target, cst.Name) and self.m.syntax is not None:
            picked = _picks_a_device(self.m.syntax, node.targets[0].target.value)
            self.chooses |= picked is not None
            self.cuda_only |= picked is False

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        # `f"cuda:{args.gpu_ids[0]}"`: BIT_CD's trainer picks its device so
        if node.parts and isinstance(head := node.parts[0], cst.FormattedStringText) and head.value.startswith(
                "cuda:"):
            self.chooses = True


def _picks_a_device(tree: ast.Module, name: str) -> bool | None:
    """How the module reads a flag ``name`` set True under a CUDA guard: None where no conditional expression picks
    a CUDA device string by it (``"cuda" if name else "cpu"``); False where one does but some ``if`` or conditional
    of it also names a CUDA API (``torch.cuda.FloatTensor if name else ...``: CUDA's alone); True otherwise."""
    tests = [n for n in ast.walk(tree) if isinstance(n, (ast.If, ast.IfExp)) and isinstance(n.test, ast.Name)
             and n.test.id == name]
    if not any(isinstance(n, ast.IfExp) and isinstance(n.body, ast.Constant) and isinstance(n.body.value, str)
               and torch_facts.CUDA_SPEC.fullmatch(n.body.value) for n in tests):
        return None
    return not any(names_cuda_api(branch) for n in tests
                   for branch in ([n.body, n.orelse] if isinstance(n, ast.IfExp) else [*n.body, *n.orelse]))


def _module_function(m: Migrator, name: str) -> ast.FunctionDef | None:
    """The module's own top-level function ``name`` (CPython's tree), if it defines one."""
    return next((s for s in m.syntax.body if isinstance(s, ast.FunctionDef) and s.name == name), None) \
        if m.syntax is not None else None


def _scan(m: Migrator, node: cst.CSTNode) -> _Scan:
    scan = _Scan(m)
    node.visit(scan)
    return scan


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The outermost function of ``tree`` holding ``line``, or None."""
    return next((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and f.lineno <= line <= (f.end_lineno or f.lineno)), None)


def _asks_cuda(node: ast.AST) -> bool:
    """Whether ``node`` holds ``torch.cuda.device_count()`` or ``torch.cuda.is_available()``."""
    return any(cuda_call(c, "device_count") or cuda_call(c, "is_available") for c in ast.walk(node))


def _counted_choice(function: ast.FunctionDef | ast.AsyncFunctionDef, choice: ast.IfExp) -> bool:
    """Whether ``choice``, a conditional expression of ``function``, picks a CUDA device string (else another) by a
    test of names the function derives from CUDA's count or availability (`torch.cuda.device_count()` assigned,
    then names assigned from it or under a test of it), not by the query itself."""
    if _asks_cuda(choice.test) or not any(isinstance(c, ast.Constant) and isinstance(c.value, str)
                                          and c.value.startswith("cuda") for c in ast.walk(choice.body)):
        return False  # (asked itself: an availability idiom, which the guard rules decide)
    tainted: set[str] = set()
    while True:
        before = len(tainted)
        for branch in ast.walk(function):
            tested = isinstance(branch, ast.If) and (_asks_cuda(branch.test) or any(
                isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(branch.test)))
            for statement in (branch.body if isinstance(branch, ast.If) and tested else [branch]):
                for assign in ast.walk(statement) if tested else [statement]:
                    if isinstance(assign, ast.Assign) and (tested or _asks_cuda(assign.value) or any(
                            isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(assign.value))):
                        tainted.update(t.id for t in assign.targets if isinstance(t, ast.Name))
        if len(tainted) == before:
            break
    return any(isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(choice.test))


def _counted_choice_at(tree: ast.Module, line: int) -> bool:
    """`_counted_choice` of the conditional expression at ``line``."""
    function = _function_at(tree, line)
    choice = next((n for n in ast.walk(function) if isinstance(n, ast.IfExp) and n.lineno == line), None) \
        if function is not None else None
    return function is not None and choice is not None and _counted_choice(function, choice)


def _counts_for_a_choice(tree: ast.Module, line: int) -> bool:
    """Whether the function holding ``line`` (an assignment of ``torch.cuda.device_count()``) has a conditional
    expression that `_counted_choice` reads."""
    function = _function_at(tree, line)
    return function is not None and any(isinstance(n, ast.IfExp) and _counted_choice(function, n)
                                        for n in ast.walk(function))


def _guard_calls(m: Migrator, test: cst.BaseExpression) -> tuple[list[cst.Call], list[cst.Call]]:
    """The guard calls of an ``if`` test: ``(positive, other)``. Positive ones are true when CUDA is there:
    ``torch.cuda.is_available()`` and ``torch.cuda.device_count() > 0`` alone or joined with ``and``."""
    positive: list[cst.Call] = []
    other: list[cst.Call] = []

    def is_call(node: cst.BaseExpression, name: str) -> bool:
        return isinstance(node, cst.Call) and not node.args and m.has_qname(node.func, name)

    def visit(node: cst.BaseExpression) -> None:
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
            visit(node.left)
            visit(node.right)
        elif is_call(node, _AVAILABLE):
            positive.append(node)  # type: ignore[arg-type]
        elif (isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and is_call(node.left, _COUNT)
              and _means_any(node.comparisons[0])):
            positive.append(node.left)  # type: ignore[arg-type]
        else:
            collector = _Calls(m, counted=True)
            node.visit(collector)
            other.extend(collector.found)

    visit(test)
    return positive, other


def _asked_for(m: Migrator, node: cst.If) -> cst.Call | None:
    """``if not torch.cuda.is_available(): raise ...`` in the branch of a flag that asks for the GPU (SRResNet's
    ``if opt.cuda:``, a ``store_true`` option): the user asked for an accelerator, which the runtime's answers (on
    CUDA the same call). Its ``is_available`` call; None for any other ``if``."""
    test = node.test
    if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Call) and not test.expression.args
            and m.has_qname(test.expression.func, _AVAILABLE) and node.orelse is None and _exits(node.body)
            and isinstance(node.body, cst.IndentedBlock) and any(
                isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[-1], cst.Raise) for s in node.body.body)):
        return None
    block = m.ancestors[-2] if len(m.ancestors) > 2 else None
    flag = m.ancestors[-3] if len(m.ancestors) > 2 else None
    if not (isinstance(flag, cst.If) and flag.body is block) or any(_guard_calls(m, flag.test)) \
            or _cuda_detection(m, flag.test):
        return None
    return test.expression


def _means_any(target: cst.ComparisonTarget) -> bool:
    value = target.comparator.value if isinstance(target.comparator, cst.Integer) else None
    op = target.operator
    return (isinstance(op, cst.GreaterThan) and value == "0") or (
        isinstance(op, cst.GreaterThanEqual) and value == "1") or (
        isinstance(op, cst.NotEqual) and value == "0")


class _Calls(cst.CSTVisitor):
    """The CUDA availability and count calls in what it visits; ``counted``: not a count that divides (``n %
    torch.cuda.device_count()``), which `visit_BinaryOperation` makes the runtime's process count."""

    def __init__(self, m: Migrator, counted: bool = False) -> None:
        super().__init__()
        self.m = m
        self.found: list[cst.Call] = []
        self._divisors: set[int] = set()
        self._counted = counted

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self._counted and isinstance(node.operator, (cst.Modulo, cst.FloorDivide)):
            self._divisors.add(id(node.right))

    def visit_Call(self, node: cst.Call) -> None:
        if id(node) not in self._divisors and self.m.qnames(node.func) & {_AVAILABLE, _COUNT}:
            self.found.append(node)


def _mentions_other_backend(m: Migrator, node: cst.CSTNode) -> bool:
    finder = _OtherBackends(m)
    node.visit(finder)
    return finder.found


class _OtherBackends(cst.CSTVisitor):
    """Looks at a test, or at the statements of one branch (not into nested blocks)."""

    def __init__(self, m: Migrator) -> None:
        super().__init__()
        self.m = m
        self.found = False

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        for statement in node.body:
            if isinstance(statement, cst.SimpleStatementLine):
                statement.visit(self)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if any(_OTHER_BACKENDS.match(n) for n in self.m.qnames(node)):
            self.found = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is not None and value.split(":")[0] in _OTHER_DEVICE_STRINGS:
            self.found = True

    def visit_Import(self, node: cst.Import) -> None:  # `import torch_xla` in a branch: that branch is XLA's
        if any(_OTHER_BACKENDS.match(dotted_name(a.name) or "") for a in node.names):
            self.found = True

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None and _OTHER_BACKENDS.match(dotted_name(node.module) or ""):
            self.found = True


_OTHER_TEXT = torch_facts.text("other_backend_text")
_CUDA_ATTRIBUTE_SET = torch_facts.text("cuda_attribute_set")
_PORTABLE_IMPORT = torch_facts.text("portable_import")


def _guarded(m: Migrator, guard: cst.CSTNode, place: str) -> str:
    """The TP110 detail of code that runs only on CUDA because of ``guard``: ``place`` (``"under the CUDA guard"``)
    and the guard's line, so that the note names the check it kept."""
    return (f"this code runs only on CUDA ({place} at {where(m.source, m.start(guard).line)}): a rewrite would "
            "change nothing anywhere")


def _portable_or_cuda_only_module(m: Migrator, module: cst.Module) -> tuple[Reason, str] | None:
    """A module written for several backends already (it imports an accelerator layer, e.g. DeepSpeed's
    ``get_accelerator``, or uses ``torch.accelerator``), or one that cannot run without CUDA at all (it
    imports triton or a CUDA-only library at its top level, unconditionally): its rewrites would change
    nothing anywhere. Its diagnostics still run. Returns the reason and the TP110 detail, or None."""
    if m.syntax is not None and ("accelerator" in m.source):  # code, not a comment or a docstring
        for n in ast.walk(m.syntax):
            if isinstance(n, ast.Attribute) and n.attr == "accelerator" and isinstance(n.value, ast.Name) and (
                    "torch" in m.imports.get(n.value.id, ())):
                return SEVERAL_BACKENDS, "this module uses torch.accelerator: it supports several backends already"
            if isinstance(n, ast.Name) and n.id == "get_accelerator":
                return SEVERAL_BACKENDS, ("this module asks an accelerator layer (`get_accelerator`) for its device: "
                                          "it supports several backends already")
    if m.syntax is not None and _CUDA_ATTRIBUTE_SET.search(m.source):
        for n in ast.walk(m.syntax):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and (dotted := ast_chain(n)) and any(
                    name.startswith("torch.cuda.") for name in qualify(dotted, m.imports)) and \
                    _implemented(m.syntax, n):
                return SEVERAL_BACKENDS, (f"this module sets `{dotted}` (line {n.lineno}): it implements torch.cuda "
                                          "for another backend")
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            names: list[str] = []
            if isinstance(small, cst.Import):
                names = [dotted_name(a.name) or "" for a in small.names]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                names = [dotted_name(small.module) or ""]
            for name in names:
                if (why := cuda_only_import(name)) is not None:
                    return CUDA_ONLY_LIBRARY, f"at its top level this module {why}: it runs only on CUDA"
                if _PORTABLE_IMPORT.search(name):
                    return SEVERAL_BACKENDS, (f"this module imports {name}, a backend layer: it supports several "
                                              "backends already")
    return None


def _implemented(tree: ast.Module, target: ast.Attribute) -> bool:
    """Whether the assignment to ``target`` gives a function of its own (sd-scripts' ``torch.cuda.synchronize =
    torch_cuda_synchronize``), not a stub that switches CUDA off (``torch.cuda.is_available = lambda: False``)."""
    assigned = next((a for a in ast.walk(tree) if isinstance(a, ast.Assign) and target in a.targets), None)
    return assigned is not None and isinstance(assigned.value, (ast.Name, ast.Attribute))


def _sizing(m: Migrator) -> frozenset[str]:
    """The names and attributes (``ngpus_per_node``, ``args.world_size``) whose value sizes processes: it is given to
    ``mp.spawn``/``start_processes``, as a process-count keyword (`_PROCESS_COUNT`) or to ``os.environ["WORLD_SIZE"]``,
    alone or in an expression, or it is named a process count (``args.nprocs``, which a launcher's script divides
    its batch by)."""
    if m.syntax is None or "device_count" not in m.source:
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(m.syntax):
        if isinstance(node, ast.Assign):  # `args.nprocs = torch.cuda.device_count()`: named a process count
            found.update(ast.unparse(t) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute))
                         and (t.id if isinstance(t, ast.Name) else t.attr) in _PROCESS_COUNT)
        if isinstance(node, ast.Assign) and any(  # `os.environ["WORLD_SIZE"] = str(n)`, read by env:// set-up
                isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                and t.slice.value in ("WORLD_SIZE", "LOCAL_WORLD_SIZE") for t in node.targets):
            found.update(ast.unparse(n) for n in ast.walk(node.value) if isinstance(n, (ast.Name, ast.Attribute)))
        if not isinstance(node, ast.Call):
            continue
        values = [k.value for k in node.keywords if k.arg in _PROCESS_COUNT]
        if isinstance(node.func, ast.Attribute) and node.func.attr in _SPAWN_TAILS:
            values += [*node.args, *(k.value for k in node.keywords)]
        for value in values:
            found.update(ast.unparse(n) for n in ast.walk(value) if isinstance(n, (ast.Name, ast.Attribute)))
    return frozenset(found | _factors(m.syntax))


def _factors(tree: ast.Module) -> set[str]:
    """The names assigned ``torch.cuda.device_count()`` and read only as a factor of work per device
    (``args.chunk * n_gpus``), a divisor (``rank % num_gpus``: pysot's local rank), a keyword's value or another
    name's value: one device off CUDA, as ``tp.process_count()`` answers, where CUDA's count of 0 made the work empty
    or the division fail (Accel-RF's run_nerf.py: a chunk of 0). A count also read as a condition, a comparison or a
    positional argument (``range(n_gpus)``) is none."""
    counted = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and cuda_call(node.value, "device_count")
               for t in node.targets if isinstance(t, ast.Name)}
    if not counted:
        return set()
    parents = parent_map(tree)
    reads: dict[str, list[bool]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in counted and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))
            reads.setdefault(node.id, []).append(
                isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Mult, ast.FloorDiv, ast.Div, ast.Mod))
                or isinstance(parent, ast.keyword) or isinstance(parent, ast.Assign) and parent.value is node)
    return {name for name, scales in reads.items() if all(scales)}


def _rank_placement(tree: ast.Module) -> tuple[int, str] | None:
    """``(line, code)`` of the first placement on a worker's rank as a bare device index (``data.to(device)``,
    ``device=device``, ``torch.device(device)``: CUDA device ``rank``, which no rule maps where the name is none
    TP006 reads as an index) in a function of the module
    that ``mp.spawn``/``start_processes`` starts, or that such a function passes its rank to (CPython's tree)."""
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    todo = [(call.args[0].id, 0) for call in ast.walk(tree) if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute) and call.func.attr in _SPAWN_TAILS
            and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in functions]
    seen: set[tuple[str, int]] = set()
    while todo:
        name, index = todo.pop()
        function = functions[name]
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if (name, index) in seen or index >= len(params):
            continue
        seen.add((name, index))
        ranks = {params[index]}
        for node in ast.walk(function):  # `device = rank`
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in ranks:
                ranks.update(t.id for t in node.targets if isinstance(t, ast.Name))
        rank = functools.partial(_names_one_of, ranks)
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            placed = (isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "device")
                      and len(node.args) == 1 and rank(node.args[0]) and not _index_name(node.args[0])) or any(
                k.arg == "device" and rank(k.value) and not _index_name(k.value) for k in node.keywords)
            if placed:
                return node.lineno, unparse(node)  # in a message: as 3.11 writes it
            if isinstance(node.func, ast.Name) and node.func.id in functions:
                todo.extend((node.func.id, i) for i, arg in enumerate(node.args) if rank(arg))
                inner = functions[node.func.id].args
                names = [a.arg for a in (*inner.posonlyargs, *inner.args)]
                todo.extend((node.func.id, names.index(k.arg)) for k in node.keywords
                            if k.arg in names and rank(k.value))
    return None


def _names_one_of(names: set[str], value: ast.expr) -> bool:
    return isinstance(value, ast.Name) and value.id in names


_INDEX_NAMES = frozenset(torch_facts.words("index_name"))


def _index_name(value: ast.expr) -> bool:
    """Whether ``value`` is a name TP006 reads as a device index (``rank``, ``local_rank``): ``.to(rank)`` becomes
    ``.to(tp.device(rank))``, which is the CPU off CUDA (the PyTorch DDP tutorial's spawned ``main(rank, ...)``)."""
    return isinstance(value, ast.Name) and value.id in _INDEX_NAMES


def _wraps_backend(node: cst.ClassDef) -> bool:
    """A class that implements a backend by delegating to one torch device module (DeepSpeed's ``CUDA_Accelerator``,
    ``MPS_Accelerator``): two or more of its methods only return the call or attribute of the same name there
    (``def synchronize(self): return torch.cuda.synchronize()``). Its users pick it for that backend and another
    class for another; rewriting it would make the CUDA one answer for MPS."""
    delegating = 0
    for item in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
        if not (isinstance(item, cst.FunctionDef) and isinstance(item.body, cst.IndentedBlock)):
            continue
        body = item.body.body
        if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(
                ret := body[0].body[0], cst.Return) and ret.value is not None:
            target = dotted_name(ret.value.func if isinstance(ret.value, cst.Call) else ret.value) or ""
            parts = target.split(".")
            if len(parts) == 3 and parts[0] == "torch" and parts[2] == item.name.value:
                delegating += 1
    return delegating >= 2


def _sets_cpu(body: cst.BaseSuite) -> bool:
    """Whether ``body`` assigns ``"cpu"`` (or ``torch.device("cpu")``) to something: a device choice's CPU arm."""
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return any(isinstance(n, cst.Assign) and (string_value(n.value) == "cpu" or isinstance(n.value, cst.Call) and any(
        string_value(a.value) == "cpu" for a in n.value.args)) for line in lines
        if isinstance(line, cst.SimpleStatementLine) for n in line.body)


def _negated_detection(m: Migrator, test: cst.BaseExpression) -> bool:
    """A test false wherever CUDA is: ``not torch.cuda.is_available()``, ``not x.is_cuda or not flash``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _cuda_detection(m, test.expression)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _negated_detection(m, test.left) or _negated_detection(m, test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:  # `x.device.type != "cuda"`
        target = test.comparisons[0]
        if isinstance(target.operator, cst.NotEqual) and _cuda_type_string(test):
            return True
        if isinstance(target.operator, (cst.NotEqual, cst.NotIn)) and "cuda" in (
                string_value(test.left), string_value(target.comparator)):
            return tensor_type_check(test) is None or not (m.unsafe_fixes and m.enabled("TP008"))
    return False


def _unset_attribute(m: Migrator, test: cst.BaseExpression) -> str | None:
    """``hasattr(self, "name")`` in ``test`` (alone or and-ed) for an attribute this module never sets: the
    name. (A base class of another module may set it; then the code under the guard is a miss, reported.)"""
    parts = [test]
    while isinstance(parts[-1], cst.BooleanOperation) and isinstance(parts[-1].operator, cst.And):
        last = parts.pop()
        assert isinstance(last, cst.BooleanOperation)
        parts += [last.left, last.right]
    for part in parts:
        if (isinstance(part, cst.Call) and isinstance(part.func, cst.Name) and part.func.value == "hasattr"
                and len(part.args) == 2 and isinstance(part.args[0].value, cst.Name)
                and part.args[0].value.value == "self"):
            name = string_value(part.args[1].value)
            if name and name.isidentifier() and not re.search(
                    rf"\b{name}\s*(?::[^=\n]*)?=(?!=)|setattr\([^)]*[\"']{name}[\"']", m.source):
                return name
    return None


def _only_data(module: cst.Module) -> bool:
    """A module of assignments alone (and a docstring), importing nothing: a config file a loader reads."""
    if not module.body:
        return False
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                if small.value is None or not _is_data(small.value) or not all(
                        isinstance(t, cst.Name) for t in targets):
                    return False
            elif not (isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString,
                                                                                 cst.ConcatenatedString))):
                return False
    return True


def _is_data(node: cst.BaseExpression) -> bool:
    """Literal data: strings, numbers, names (``True``, another setting), containers and ``dict(...)`` of data."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
                         cst.Name)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _is_data(node.expression)
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return all(isinstance(e, cst.Element) and _is_data(e.value) for e in node.elements)
    if isinstance(node, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _is_data(e.key) and _is_data(e.value) for e in node.elements)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        return all(_is_data(a.value) for a in node.args)
    return False


def _assigns(node: cst.SimpleStatementLine, names: object) -> bool:
    """Whether the statement assigns one of ``names`` (a plain name target)."""
    return any(isinstance(s, (cst.Assign, cst.AnnAssign)) and any(
        isinstance(t, cst.Name) and t.value in names  # type: ignore[operator]
        for t in ([x.target for x in s.targets] if isinstance(s, cst.Assign) else [s.target])) for s in node.body)


def _marks_module(node: cst.SimpleStatementLine, gates: frozenset[str]) -> bool:
    """``pytestmark = gate`` or ``pytestmark = [gate, ...]`` (a gate called or not)."""
    for small in node.body:
        if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == "pytestmark"
                                                 for t in small.targets):
            value = small.value
            items = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
            for item in items:
                head = item.func if isinstance(item, cst.Call) else item
                if (dotted_name(head) or "") in gates:
                    return True
    return False


def _assert_goes(m: Migrator, node: cst.Assert) -> bool:
    """Whether TP009 removes this CUDA assert (so the code after it is not CUDA-only)."""
    return m.enabled("TP009") and (m.unsafe_fixes or removable_assert(m, node))


def _asserts_cuda(m: Migrator, function: cst.FunctionDef) -> bool:
    """A function that raises (or returns) first unless CUDA is there: ``if x.device.type != "cuda": raise``."""
    for statement in function.body.body if isinstance(function.body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.If) and _negated_detection(m, statement.test) and _exits(statement.body) \
                and not (m.enabled("TP009") and exit_gate_at(m, statement)):
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(
                isinstance(s, cst.Assert) and _cuda_detection(m, s.test) and not _assert_goes(m, s)
                for s in statement.body):
            return True  # (TP009 removes such asserts with --unsafe-fixes)
    return False


_EXIT_CALLS = frozenset(torch_facts.words("exit_method"))
_MISSING_API = frozenset(torch_facts.words("missing_api"))  # what an older torch raises


def _exits(block: cst.BaseSuite) -> bool:
    """Whether a block ends by leaving: ``return``, ``raise``, ``continue``, ``sys.exit()``, ``pytest.skip()``."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = statements[-1] if statements else None
    if not isinstance(last, cst.SimpleStatementLine):
        return False
    small = last.body[-1]
    if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return True
    call = small.value if isinstance(small, cst.Expr) else None
    if isinstance(call, cst.Call):
        func = call.func
        name = call_name(func)
        return name in _EXIT_CALLS
    return False


class _Ifs(cst.CSTVisitor):
    """The ``if`` statements of a function body, not those of nested functions or classes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.If] = []

    def visit_If(self, node: cst.If) -> None:
        self.found.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


_SCRIPTING = torch_facts.named("scripting")


def _scripted(m: Migrator, node: cst.FunctionDef | cst.ClassDef) -> bool:
    """Leave code TorchScript compiles (decorated by ``torch.jit.script``, ``script_method`` or ``interface``, or a
    module-level function the module hands to ``torch.jit.script(f)``): it cannot call the runtime (pytorch_sparse's
    scripted ``SparseStorage.cuda``). Whether it was left."""
    if "jit" not in m.source:
        return False
    decorated = any(m.qnames(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) & _SCRIPTING
                    for d in node.decorators)
    if not decorated and not (isinstance(node, cst.FunctionDef) and len(m.ancestors) <= 2
                              and node.name.value in _handed_to_script(m)):
        return False
    m.skip_region(node, TORCHSCRIPT, f"TorchScript compiles `{node.name.value}`, and it cannot compile "
                  "torchport.runtime calls: a rewrite would break it on every backend")
    return True


def _handed_to_script(m: Migrator) -> frozenset[str]:
    """Names of the module's functions TorchScript compiles without a decorator of their own: those it scripts by a
    call (``torch.jit.script(fused_gelu)``), and those a scripted function calls, which TorchScript compiles with it
    (Accel-RF's ``get_error_bound``, called by its ``@torch.jit.script`` ``error_bound_sampling_update``)."""
    found = m.shared.scripted
    if found is None:
        found = m.shared.scripted = _compiled_with(m.syntax) if m.syntax is not None else frozenset()
    return found


def _compiled_with(tree: ast.Module) -> frozenset[str]:
    """`_handed_to_script` of ``tree``: the module-level functions TorchScript compiles, the decorated ones not
    counted unless another scripted one calls them."""
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    ends = tuple(".".join(name.split(".")[-2:]) for name in _SCRIPTING)
    roots = [s for s in functions.values() if any(
        ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith(ends) for d in s.decorator_list)]
    handed = {node.args[0].id for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Name) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "script" and ast.unparse(node.func).endswith("jit.script")}
    compiled = set(handed)
    todo = [*roots, *(functions[name] for name in handed if name in functions)]
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                    and node.func.id not in compiled:
                compiled.add(node.func.id)
                todo.append(functions[node.func.id])
    return frozenset(compiled)


def _if_chain(node: cst.If) -> list[cst.If]:
    chain = [node]
    while isinstance(chain[-1].orelse, cst.If):
        chain.append(chain[-1].orelse)
    return chain


def _cuda_detection(m: Migrator, test: cst.BaseExpression) -> bool:
    """A test true only on CUDA that stays as written: ``x.is_cuda`` and ``x.device.type == "cuda"`` without
    their unsafe fixes, ``device == "cuda"``/``"cuda" in str(device)`` (never rewritten), ``backend == "nccl"``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _cuda_detection(m, test.left) or _cuda_detection(m, test.right)
    dotted = dotted_name(test)
    if dotted is not None and (_is_flag(m, dotted) or "torch.version.cuda" in m.qnames(test)):
        return True
    if isinstance(test, cst.Call) and not test.args and m.has_qname(test.func, _AVAILABLE):
        return id(test.func) not in m.shared.guard_renames
    if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Call)
            and m.has_qname(test.left.func, _COUNT)):
        return id(test.left.func) not in m.shared.guard_renames  # DBNet's ported `device_count() > 0 and ...`
    unsafe = m.unsafe_fixes
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith"
            and test.args and (string_value(test.args[0].value) or "").startswith("cuda")):
        return True  # `device.startswith("cuda:")`
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return not (unsafe and m.enabled("TP007"))
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.In)):
            return False
        sides = (test.left, target.comparator)
        if _cuda_type_string(test):
            return True  # `x.type() == "torch.cuda.HalfTensor"`: a CUDA tensor's type name
        if any(_cuda_device_call(m, s) for s in sides):
            return True  # `device == torch.device("cuda")`: TP002 keeps a compared CUDA device as written
        if any(string_value(s) == "nccl" for s in sides) and isinstance(target.operator, cst.Equal):
            return True  # `backend == "nccl"`: NCCL carries CUDA tensors alone
        if not any(string_value(s) == "cuda" for s in sides):
            return False
        if tensor_type_check(test) is not None:
            return not (unsafe and m.enabled("TP008"))
        return True
    return False


def _cuda_device_call(m: Migrator, node: cst.BaseExpression) -> bool:
    """``torch.device("cuda")`` or ``torch.device("cuda:0")``: a CUDA device, which off CUDA nothing else equals."""
    return (isinstance(node, cst.Call) and len(node.args) == 1 and not node.args[0].keyword
            and (string_value(node.args[0].value) or "").split(":")[0] == "cuda"
            and m.has_qname(node.func, "torch.device"))


def _asks_for_cuda(test: cst.BaseExpression) -> bool:
    """`torchport.model.evaluate.asks_for_cuda` of the test ``test``."""
    try:
        tree = ast.parse(f"({cst.Module([]).code_for_node(test)})", mode="eval")
    except SyntaxError:
        return False
    return asks_for_cuda(tree.body)


def _cuda_type_string(test: cst.Comparison) -> bool:
    """``x.type() == "torch.cuda.HalfTensor"`` (either side, ``==`` or ``!=``): true only for a CUDA tensor, as
    ``x.is_cuda`` is (off CUDA a half tensor's type is ``torch.HalfTensor`` or ``torch.mps.HalfTensor``)."""
    sides = (test.left, test.comparisons[0].comparator)
    return any((string_value(s) or "").startswith("torch.cuda.") for s in sides) and any(
        isinstance(s, cst.Call) and not s.args and isinstance(s.func, cst.Attribute) and s.func.attr.value == "type"
        for s in sides)


def _availability_based(m: Migrator, test: cst.BaseExpression) -> bool:
    """Whether ``test`` asks whether CUDA is there (``torch.cuda.is_available()``, a device count, a flag
    assigned from them), rather than where a tensor is (``x.is_cuda``)."""
    if isinstance(test, (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison)):
        return any(_availability_based(m, part) for part in
                   ((test.left, test.right) if isinstance(test, cst.BooleanOperation) else
                    (test.expression,) if isinstance(test, cst.UnaryOperation) else
                    (test.left, *(c.comparator for c in test.comparisons))))
    if isinstance(test, cst.Call):
        return not test.args and bool(m.qnames(test.func) & {_AVAILABLE, _COUNT})
    dotted = dotted_name(test)
    return dotted is not None and _is_flag(m, dotted)


def _flags(m: Migrator) -> set[tuple[str, str]]:
    """Names assigned from a CUDA check: ``use_cuda = not args.no_cuda and torch.cuda.is_available()``
    (read from CPython's tree: a LibCST walk of the whole module cost more than the rest of the pass)."""
    flags: set[tuple[str, str]] = set()
    if m.syntax is None:
        return flags
    scopes: list[tuple[ast.AST, str]] = [(m.syntax, "")]
    while scopes:
        scope, owner = scopes.pop()
        for node in ast.iter_child_nodes(scope):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scopes.append((node, node.name))
                continue
            scopes.append((node, owner))
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:  # `args = dotdict({'cuda': torch.cuda.is_available()})`: `args.cuda`
                if isinstance(target, (ast.Name, ast.Attribute)):
                    flags.update(("*", f"{ast.unparse(target)}.{key}") for key in _keys_from_query(node.value))
            for inner in ast.walk(node.value):
                if isinstance(inner, ast.Attribute) and inner.attr == "is_available" and is_cuda_module(inner.value):
                    for target in node.targets:
                        if isinstance(target, ast.Name):  # a local: in its own function only
                            flags.add((owner, target.id))
                        elif isinstance(target, ast.Attribute):  # `args.cuda`, `self.use_cuda`: anywhere
                            flags.add(("*", ast.unparse(target)))
                    break
    return flags | _flag_parameters(m.syntax, flags) if flags else flags


def _keys_from_query(value: ast.expr) -> list[str]:
    """The keys of a dict literal (alone, or the one argument of a call) set from ``torch.cuda.is_available()``."""
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    if not isinstance(value, ast.Dict):
        return []
    return [key.value for key, item in zip(value.keys, value.values, strict=True)
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier() and any(
                isinstance(n, ast.Attribute) and n.attr == "is_available" and is_cuda_module(n.value)
                for n in ast.walk(item))]


def _flag_parameters(module: ast.Module, flags: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Parameters of module functions that every call in the module fills with a flag:
    ``optimize(args, use_cuda, models)`` after ``use_cuda = torch.cuda.is_available() and not args.cpu``.
    Only functions nothing outside the module calls: private ones, or those of a script."""
    functions = closed_functions(module)
    passed: dict[tuple[str, str], bool] = {}
    scopes: list[tuple[ast.AST, str]] = [(module, "")]
    while scopes:
        scope, owner = scopes.pop()
        for node in ast.iter_child_nodes(scope):
            scopes.append((node, node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else owner))
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions):
                continue
            function = functions[node.func.id]
            given = arguments(function, node) or {}
            for param in parameters(function):
                value = given.get(param)
                flag = value is not None and (
                    (isinstance(value, ast.Name) and ((owner, value.id) in flags or ("", value.id) in flags))
                    or (isinstance(value, ast.Attribute) and ("*", ast.unparse(value)) in flags))
                key = (function.name, param)
                passed[key] = passed.get(key, True) and flag
    return {key for key, always in passed.items() if always}


def _portable_flags(module: ast.Module, flags: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The flags of ``flags`` that a port moves with the accelerator as a whole (TRADES: ``use_cuda = not
    args.no_cuda and torch.cuda.is_available()``, then ``torch.device("cuda" if use_cuda else "cpu")`` and
    ``{"pin_memory": True} if use_cuda else {}``): a name bound once in its scope, by one ``is_available()`` call
    alone or and-ed with options, and read only as the test of an ``if`` whose body the runtime ports whole (no
    CUDA API without a runtime counterpart, nothing else), the test of a conditional expression whose branches
    name no CUDA API, or a ``pin_memory=`` value. Read anywhere else (passed on, printed, stored, negated) it stays
    a flag of CUDA alone."""
    found: set[tuple[str, str]] = set()
    cuda_names = frozenset(name for n in ast.walk(module) if isinstance(n, (ast.Import, ast.ImportFrom))
                           for name in cuda_library_names(n))
    functions = [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    named = {f.name: [g for g in functions if g.name == f.name] for f in functions}
    scopes: dict[str, ast.AST] = {"": module, **{name: same[0] for name, same in named.items() if len(same) == 1}}
    for owner, name in flags:
        scope = scopes.get(owner)
        if scope is None:  # `("*", "args.cuda")`, or a function name defined twice
            continue
        nodes = list(own_nodes(scope))
        if owner == "":  # a module flag that functions read too (MARS's `if use_cuda:` in `train`): their reads count
            inner = [f for f in ast.walk(module) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
            if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) or name in _bound_by(n)
                   for f in inner for n in ast.walk(f) if n is not f):
                continue  # bound in a function too (a local, a parameter, `global`): left as a flag
            nodes = list(ast.walk(module))
        stores = [n for n in nodes if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in n.targets)]
        others = [n for n in nodes if name in _bound_by(n)]  # bound again (a loop's body may read it: SCAN's)
        if len(stores) != 1 or len(stores[0].targets) != 1 or others or not one_availability(stores[0].value):
            continue
        allowed: set[int] = set()
        places = False  # what it picks is a device or a move (not only a backend name: that port is churn)
        for node in nodes:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == name:
                if not ported_whole([*node.body, *node.orelse], cuda_names):
                    break
                allowed.add(id(node.test))
                places = places or any(isinstance(n, ast.Attribute) and n.attr == "cuda" or isinstance(
                    n, ast.Constant) and isinstance(n.value, str) and torch_facts.CUDA_SPEC.fullmatch(n.value)
                                       for n in ast.walk(node))
            elif isinstance(node, ast.IfExp) and isinstance(node.test, ast.Name) and node.test.id == name:
                if names_cuda_api(node.body) or names_cuda_api(node.orelse):
                    break
                allowed.add(id(node.test))
                places = places or _indexed_spec(node.body) or any(
                    isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and torch_facts.CUDA_SPEC.fullmatch(n.value) for n in ast.walk(node.body))
            elif isinstance(node, ast.keyword) and node.arg == "pin_memory" and isinstance(node.value, ast.Name):
                allowed.add(id(node.value))
        else:
            if places and all(id(n) in allowed for n in nodes if isinstance(n, ast.Name) and n.id == name
                              and isinstance(n.ctx, ast.Load)):
                found.add((owner, name))
    return found


def _indexed_spec(body: ast.expr) -> bool:
    """Whether ``body`` makes a CUDA device string with an index (pruning_is_enough's ``"cuda:{}".format(gpu)``,
    ``f"cuda:{gpu}"``), which TP002 ports as a whole (a narrower reading than its `device.runtime_string`)."""
    first = body.values[0] if isinstance(body, ast.JoinedStr) and body.values else body.func.value if isinstance(
        body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr == "format" else None
    return isinstance(first, ast.Constant) and first.value in (
        ("cuda:",) if isinstance(body, ast.JoinedStr) else ("cuda:{}", "cuda:{0}"))


def _bound_by(node: ast.AST) -> set[str]:
    """The names a statement or node binds other than by ``=``: an augmented or annotated assignment's target, a
    loop's target, a ``with ... as``, a parameter, ``global``/``nonlocal``, ``:=``."""
    def names(target: ast.AST | None) -> set[str]:
        return {x.id for x in ast.walk(target) if isinstance(x, ast.Name)} if target is not None else set()

    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        return names(node.target)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return set().union(*(names(item.optional_vars) for item in node.items))
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    return set()




def _gated_fixtures(module: ast.Module, gates: frozenset[str]) -> dict[str, str]:
    """The module's own pytest fixtures that only tests skipped without CUDA request (Sock's ``data_cuda``, asked
    for by ``@needs_cuda`` tests alone), each with the gate of its first such test: off CUDA pytest never makes
    them. A fixture another fixture, an unskipped test or a string (``request.getfixturevalue``) names, or that
    nothing requests, is left out."""
    functions = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    fixtures = {f.name for f in functions if any(fixture_decorator(d) for d in f.decorator_list)}
    if not fixtures:
        return {}
    named = {n.value for n in ast.walk(module) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    requests: dict[str, list[str | None]] = {}  # fixture -> the gate of each function asking for it (None: ungated)
    for function in functions:
        args = function.args
        for param in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if param.arg in fixtures:
                requests.setdefault(param.arg, []).append(
                    _test_gate(function, gates) if function.name.startswith("test") else None)
    return {name: gate for name, asked in requests.items()
            if name not in named and all(asked) and (gate := asked[0]) is not None}


def _test_gate(function: ast.FunctionDef | ast.AsyncFunctionDef, gates: frozenset[str]) -> str | None:
    """The decorator that skips ``function`` without CUDA: a CUDA gate of the project, or a mark that asks CUDA
    (``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``)."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        text = ast.unparse(target)
        if text in gates or isinstance(decorator, ast.Call) and any(
                cuda_call(n, "is_available") or cuda_call(n, "device_count") for n in ast.walk(decorator)):
            return text
    return None


def _is_flag(m: Migrator, dotted: str) -> bool:
    flags = m.shared.cuda_flags
    if ("*", dotted) in flags:
        return True
    if "." in dotted and any(owner == "*" and dotted.endswith(f".{name}") for owner, name in flags):
        return True  # `self.args.cuda` after `self.args = args` and `args.cuda = ... torch.cuda.is_available()`
    function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
    if function is None:
        return ("", dotted) in flags
    if (function.name.value, dotted) in flags:
        return True
    params = {p.name.value for p in (*function.params.params, *function.params.kwonly_params,
                                     *function.params.posonly_params)}
    return ("", dotted) in flags and dotted not in params


# why a choice stays where only programs kept CUDA-or-CPU run it (`Migrator.kept`)
_KEPT = "{}: there it already picks what the runtime's pick would"

_PROBE_ERRORS = frozenset(torch_facts.words("catches_cuda_error"))


def _error_names(node: cst.BaseExpression) -> set[str]:
    """The exception names an ``except`` clause catches (``(RuntimeError, AssertionError)``); ``{""}`` for
    another expression."""
    if isinstance(node, cst.Tuple):
        return {name for element in node.elements for name in _error_names(element.value)}
    if isinstance(node, cst.Name):
        return {node.value}
    return {node.attr.value} if isinstance(node, cst.Attribute) else {""}


def _probe(node: cst.Try) -> bool:
    """Whether a ``try`` only tries something of CUDA and answers with a flag: its body imports, calls and assigns
    (no block) and asks CUDA (``cuda_probe``), its handlers catch what a failed device call raises (bare,
    ``Exception``, ``RuntimeError``...) and only assign constants, pass or say something, and a name is bound to a
    bool constant in the body or a handler."""
    def simple(statements: Sequence[cst.CSTNode], work: bool) -> bool:
        return all(isinstance(s, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Pass) or (isinstance(small, cst.Assign) and (work or isinstance(
                small.value, (cst.Name, cst.Integer, cst.SimpleString)))) or isinstance(small, cst.Expr) and isinstance(
                small.value, cst.Call) or (work and isinstance(small, (cst.Import, cst.ImportFrom)))
            for small in s.body) for s in statements)

    if not node.handlers or node.orelse is not None or node.finalbody is not None:
        return False
    if not simple(node.body.body, True) or not all(simple(h.body.body, False) for h in node.handlers):
        return False
    if not all(h.type is None or _error_names(h.type) <= _PROBE_ERRORS for h in node.handlers):
        return False  # `except FileNotFoundError:` answers whether a file is there, not CUDA
    if not torch_facts.text("cuda_probe").search(cst.Module([]).code_for_node(node.body)):
        return False
    flags = matchers.Assign(targets=[matchers.AssignTarget(target=matchers.Name())],
                            value=matchers.Name("True") | matchers.Name("False"))
    return bool(matchers.findall(node.body, flags)) or any(matchers.findall(h, flags) for h in node.handlers)


class CudaGuard(Rule):
    code = "TP110"
    moves_data = False
    name = "cuda-guard"
    summary = ("A CUDA guard of CUDA-only code stays a CUDA guard; "
               "the code under it runs only on CUDA and is left as is.")
    before = "if torch.cuda.is_available(): import apex"
    safety, effort = "manual", "info"
    names = frozenset({_AVAILABLE, _COUNT})
    triggers = (r"cuda",)  # a region is left alone only where some other rule would rewrite
    examples = (
        Example("import torch\nif torch.cuda.is_available():\n    import pynvml\n    pynvml.nvmlInit()\n"),
        Example("import torch\nif x.is_cuda:\n    y = x.cuda()\n"),
        Example('generator_device = "cpu" if not device.startswith("cuda") else "cuda"\n'),
        # A private function whose every call passes a CUDA flag (also: a function of a script).
        Example("import torch\n\n\ndef _setup(model, is_cuda):\n"
                "    if is_cuda:\n        model = model.cuda()\n    return model\n\n\n"
                "def main():\n    use_cuda = torch.cuda.is_available()\n"
                "    return _setup(torch.nn.Linear(2, 2), use_cuda)\n"),
        Example("import torch\n\n\ndef _check_cuda(q):\n"
                "    if q.device.type != 'cuda':\n        raise ValueError('CUDA only')\n\n\n"
                "def check_capability(q):\n    _check_cuda(q)\n"
                "    return torch.cuda.get_device_capability(q.device)\n"),
        Example("import torch\nif torch.cuda.is_available():\n    d = 'cuda'\nelif torch.backends.mps.is_available():\n"
                "    d = 'mps'\nelse:\n    d = 'cpu'\n"),
        Example("import unittest\nimport torch\n\n\n@unittest.skipIf(not torch.cuda.is_available(), 'needs CUDA')\n"
                "def test_gpu():\n    x = torch.ones(2).cuda()\n"),
        Example("class CUDA_Accelerator(DeepSpeedAccelerator):\n    def device_name(self):\n        return 'cuda'\n"),
        Example("import torch\n\n\ndef setup(flash):\n"
                "    if not torch.cuda.is_available() or not flash:\n        return\n"
                "    props = torch.cuda.get_device_properties(torch.device('cuda'))\n"),
        Example("import torch\ntry:\n    scaler = make_scaler()\nexcept AttributeError:  # an older torch\n"
                "    scaler = torch.cuda.amp.GradScaler()\n"),
        Example("import torch\nassert torch.cuda.device_count() > rank, 'insufficient CUDA devices'\n"
                "torch.cuda.set_device(rank)\n"),
        # Programs that run only where CUDA GPUs are.
        Example("import sys\nimport torch\nfrom log_utils import verify_min_gpu_count\n\n"
                "if not verify_min_gpu_count(min_gpus=2):\n    sys.exit()\nmodel = torch.nn.Linear(2, 2).cuda()\n"),
        Example("import torch\n\n\ndef demo(rank):\n    model = torch.nn.Linear(2, 2).to(rank)\n\n\n"
                "if __name__ == '__main__':\n    n_gpus = torch.cuda.device_count()\n    if n_gpus < 8:\n"
                "        print(f'Requires at least 8 GPUs, got {n_gpus}')\n    else:\n        demo(0)\n"),
        Example("import torch\n\n\ndef main():\n    x = torch.ones(2).cuda()\n\n\nif __name__ == '__main__':\n"
                "    assert torch.cuda.is_available(), 'needs CUDA'\n    main()\n"),
        Example("import faiss\nimport torch\n\n\ndef main():\n    x = torch.ones(2).cuda()\n"
                "    res = faiss.StandardGpuResources()\n\n\nif __name__ == '__main__':\n    main()\n"),
        # Classes built on CUDA-only libraries.
        Example("import torch\nfrom apex.optimizers import FusedAdam\n\n\nclass Adam2(FusedAdam):\n"
                "    def step(self):\n        torch.cuda.synchronize()\n"),
        # A module with its own MPS path keeps its CUDA guards (on XPU a runtime guard would split devices).
        Example("import torch\nif torch.cuda.is_available():\n    x = x.cuda()\nif torch.backends.mps.is_available():\n"
                "    x = x.to('mps')\n"),
        # Code under a guard for an attribute nothing in the module sets.
        Example("import torch\n\n\nclass P(Base):\n    def run(self):\n"
                "        if hasattr(self, 'final_offload_hook') and self.final_offload_hook is not None:\n"
                "            torch.cuda.empty_cache()\n"),
        # A test module that fakes torch.cuda: its "cuda:0" is a descriptor that needs no GPU.
        Example("import torch\nfrom unittest import mock\n\nDEVICE = torch.device('cuda:0')\n\n\n"
                "def fake_memory():\n    return mock.patch.object(torch.cuda, 'mem_get_info', return_value=(1, 2))\n"),
        # A function that imports triton kernels runs only on CUDA.
        Example("import torch\n\n\ndef autotune(n):\n    from pkg.ops.triton.matmul_ext import matmul\n"
                "    a = torch.randn(n, n, device='cuda')\n    matmul(a, a)\n"),
        # Tests skipped unless CUDA is there, in `setUp` or by a module's `pytestmark`.
        Example("import unittest\nimport torch\n\n\nclass T(unittest.TestCase):\n    def setUp(self):\n"
                "        if not torch.cuda.is_available():\n            self.skipTest('needs CUDA')\n\n"
                "    def test_x(self):\n        x = torch.ones(2).cuda()\n"),
        Example("import unittest\nimport torch\n\n\nclass Base(unittest.TestCase):\n    def setUp(self):\n"
                "        if not torch.cuda.is_available():\n            raise unittest.SkipTest('needs CUDA')\n\n\n"
                "class T(Base):\n    def test_x(self):\n        x = torch.ones(2).cuda()\n"),
        Example("import pytest\nimport torch\n\n"
                "pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n"
                "\n\ndef test_x():\n    x = torch.ones(2).cuda()\n"),
    )

    def _rewrite(self, m: Migrator, call: cst.Call, name: str) -> None:
        m.shared.guard_renames[id(call.func)] = name

    def _keep(self, m: Migrator, calls: list[cst.Call], where: cst.CSTNode, reason: Reason | None,
              detail: str | None = None) -> None:
        """Keep CUDA queries ``calls`` as written; a TP110 note at ``where`` gives ``reason`` (None: no note)."""
        calls = [call for call in calls if id(call.func) not in m.handled]
        for call in calls:
            m.mark_handled(call)
        if calls and reason is not None and not m.in_skipped_region:
            m.report(self.code, where, note(reason, detail))

    def _skip_rest_of_block(self, m: Migrator, node: cst.BaseStatement) -> None:
        parent = m.ancestors[-2] if len(m.ancestors) > 1 else None
        body = parent.body if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
        if body is None:
            return
        after = False
        for statement in body:
            if after:
                m.skip_region(statement, CUDA_ONLY, _guarded(m, node, "after the CUDA check"))
            after = after or statement is node

    def _mixed(self, m: Migrator, function: cst.FunctionDef | None) -> bool:
        """Whether ``function`` holds a guard that moves data but must stay a CUDA guard: then all its guards
        stay, or on MPS some tensors would move and others not."""
        if function is None:
            return False
        known = m.store(self).setdefault("mixed", {})
        if id(function) not in known:
            finder = _Ifs()
            function.body.visit(finder)
            known[id(function)] = any(
                _guard_calls(m, branch.test)[0] and (scan := _scan(m, branch.body)).chooses and scan.cuda_only
                for branch in finder.found)
        return known[id(function)]

    def visit_Module(self, m: Migrator, node: cst.Module) -> None:
        if m.hold is None and "mps" in m.source and m.names_mps:
            m.hold = OWN_MPS_HOLD
        if (whole := _portable_or_cuda_only_module(m, node)) is not None:
            m.skip_region(node, *whole)
        elif _only_data(node):  # its tables stay data (a lone `device = "cuda"` is still a setting to port)
            for statement in node.body:
                for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                    if isinstance(small, (cst.Assign, cst.AnnAssign)) and not isinstance(
                            small.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                        m.skip_region(small, CONFIG_DATA)
        elif FAKES_CUDA_TEXT.search(m.source):
            m.skip_region(node, FAKES_CUDA, "this module fakes torch.cuda (mock.patch), so its CUDA devices are "
                          "descriptors "
                          "that need no GPU")
        elif m.syntax is not None and (line := cuda_only_program(m.syntax, m.gates)) is not None:
            m.skip_region(node, CUDA_ONLY_PROGRAM, "this program runs only where CUDA GPUs are (it checks at "
                          f"{where(m.source, line)})")
            m.report_at(self.code, line, 0, f"{CUDA_ONLY_PROGRAM.tag} this program runs only where CUDA GPUs are "
                        "(it checks here); "
                        "left as written")
        own = cuda_gates(m.syntax) if m.syntax is not None and GATE_TEXT.search(m.source) else {}
        m.store(self)["own_gates"] = own
        m.gates = m.gates | frozenset(own)
        m.store(self)["cuda_only"] = cuda_only_functions(m.syntax, stopping=m.gates) if m.syntax is not None and (
            m.gates or CUDA_ONLY_TEXT.search(m.source)) else {}
        if m.gates and any(isinstance(s, cst.SimpleStatementLine) and _marks_module(s, m.gates) for s in node.body):
            m.skip_region(node, CUDA_GATE, "its pytestmark is a CUDA gate of this project: it runs only on CUDA")
        m.store(self)["others"] = bool(_OTHER_TEXT.search(m.source))
        if "cuda" in m.source:  # module functions that raise unless CUDA is there
            m.store(self)["asserting"] = {s.name.value for s in node.body
                                          if isinstance(s, cst.FunctionDef) and _asserts_cuda(m, s)}
        if "is_available" in m.source:
            m.shared.cuda_flags = _flags(m)
            portable = _portable_flags(m.syntax, m.shared.cuda_flags) if (
                m.syntax is not None and m.hold is None and m.shared.cuda_flags) else set()
            ported = {g[len(PORTED_FLAG):] for g in m.gates if g.startswith(PORTED_FLAG)} if m.hold is None else ()
            portable |= {(owner, name) for owner, name in m.shared.cuda_flags  # the project pass moves it whole
                         if owner == "*" and name.rpartition(".")[2] in ported}
            m.store(self)["portable_flags"] = portable
            m.shared.cuda_flags -= portable
        for gate in m.gates:  # `load_citation(cuda)`: every call in the run passes a CUDA flag there
            function, _, param = gate.partition("(")
            if param.endswith(")"):
                m.shared.cuda_flags.add((function, param[:-1]))

    def visit_BooleanOperation(self, m: Migrator, node: cst.BooleanOperation) -> None:
        """``torch.version.cuda and torch.cuda.is_bf16_supported()``: the right side runs only on CUDA."""
        if isinstance(node.operator, cst.And) and _cuda_detection(m, node.left):
            m.skip_region(node.right, CUDA_ONLY, _guarded(m, node.left, "after the CUDA check"))

    def visit_IfExp(self, m: Migrator, node: cst.IfExp) -> None:
        """``"cuda:0" if torch.cuda.is_available() and n > 0 else "cpu"``: the first branch runs only on CUDA."""
        if id(node) in m.shared.followed:
            return
        if id(node) not in m.shared.idioms and _cuda_detection(m, node.test):
            positive, other = _guard_calls(m, node.test)
            held = id(node) in m.shared.held_idioms
            self._keep(m, positive + other, node.test, HELD_CHOICE if held else None,
                       f"availability idiom kept as written: {m.hold or _KEPT.format(m.kept)}")
            if _availability_based(m, node.test) and (_scan(m, node.body).chooses or _moves(node.body)) \
                    and not _type_label(m, node):
                m.fact("kept", node)  # reid-strong-baseline's `img.to(device) if device_count() >= 1 else img`
            m.skip_region(node.body, CUDA_ONLY, _guarded(m, node.test, "in the CUDA branch of the conditional"))
        elif id(node) not in m.shared.idioms and m.hold is not None and m.syntax is not None \
                and "device_count" in m.source and _scan(m, node.body).chooses \
                and _counted_choice_at(m.syntax, m.start(node).line):
            # held (its count stays CUDA's): `torch.device('cuda:%d' % ids[0] if len(ids) > 0 else 'cpu')`, `ids`
            # emptied where `torch.cuda.device_count()` is 0, stays the CPU off CUDA, whatever else moves
            m.fact("kept", node)
        elif (id(node) not in m.shared.idioms and isinstance(node.test, cst.UnaryOperation)
              and isinstance(node.test.operator, cst.Not) and _cuda_detection(m, node.test.expression)
              and not _availability_based(m, node.test.expression)):
            # `"cpu" if not device.startswith("cuda") else "cuda"`
            m.skip_region(node.orelse, CUDA_ONLY, _guarded(m, node.test, "in the CUDA branch of the conditional"))

    def visit_If(self, m: Migrator, node: cst.If) -> None:
        if id(node) in m.shared.followed:
            return
        parent = m.ancestors[-2] if len(m.ancestors) > 1 else None
        chain = _if_chain(node)
        if isinstance(node.test, cst.Comparison) and len(node.test.comparisons) == 1 and _cuda_type_string(node.test):
            m.skip_region(node, CUDA_ONLY, "it dispatches on CUDA tensor type names (`x.type() == "
                          "\"torch.cuda.HalfTensor\"`): off CUDA no branch matches what the tensor is")
            return
        unset = _unset_attribute(m, node.test)
        if unset is not None:  # `if hasattr(self, "final_offload_hook") and ...` where nothing sets it
            m.skip_region(node.body, UNSET_ATTRIBUTE,
                          f"its guard asks for `self.{unset}`, which nothing in this module sets")
        if not (isinstance(parent, cst.If) and parent.orelse is node):  # the head of an if/elif chain
            if m.store(self).get("others") and any(
                    _mentions_other_backend(m, branch.test) or _mentions_other_backend(m, branch.body)
                    for branch in chain):
                for branch in chain:
                    positive, other = _guard_calls(m, branch.test)
                    self._keep(m, positive + other, branch, None)
                m.skip_region(node, SEVERAL_BACKENDS)  # already chooses among several backends
                return
        if m.hold is None and m.kept is None and (asked := _asked_for(m, node)) is not None:
            self._rewrite(m, asked, "is_available")
            return
        positive, other = _guard_calls(m, node.test)
        self._keep(m, other, node.test, CUDA_QUERY if other else None,
                   "CUDA guard kept as written (it is true only where CUDA is)")
        if positive:
            scan = _scan(m, node.body)
            function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
            portable = scan.chooses and not scan.cuda_only and not self._mixed(m, function)
            if portable and m.hold is None and m.kept is None:
                for call in positive:
                    self._rewrite(m, call, "is_available" if m.has_qname(call.func, _AVAILABLE) else "device_count")
                m.fact("choices", node)
                return
            if scan.chooses or _else_picks_cpu(node):
                m.fact("kept", node)
            self._keep(m, positive, node.test, HELD_CHOICE if portable else CUDA_ONLY,
                       f"CUDA guard kept as written: {m.hold or _KEPT.format(m.kept)}" if portable else
                       "CUDA guard kept: the code under it runs only on CUDA, as before")
            m.skip_region(node.body, CUDA_ONLY, _guarded(m, node.test, "under the CUDA guard"))
        elif _cuda_detection(m, node.test):
            if _availability_based(m, node.test) and _scan(m, node.body).chooses and not (
                    _asks_for_cuda(node.test) and _sets_cpu(node.body)) and not _placed_again(m, node):
                m.fact("kept", node)
            m.skip_region(node.body, CUDA_ONLY, _guarded(m, node.test, "under the CUDA guard"))
        elif _negated_detection(m, node.test):
            if _availability_based(m, node.test) and _sets_cpu(node.body) and not _asks_for_cuda(node.test):
                m.fact("kept", node)  # learning3d's `if not torch.cuda.is_available(): args.device = 'cpu'`
            if node.orelse is not None:  # `if not x.is_cuda: ... else: <CUDA only>`
                m.skip_region(node.orelse, CUDA_ONLY, _guarded(m, node.test, "in the else branch of the CUDA check"))
            if _exits(node.body) and not (m.enabled("TP009") and removable_exit_gate(m, node)):
                self._skip_rest_of_block(m, node)  # `if not torch.cuda.is_available(): return`: the rest is CUDA's
                # (not after an exit TP009 removes: the program's own `sys.exit` without CUDA)

    def visit_Try(self, m: Migrator, node: cst.Try) -> None:
        """A probe of the device: ``try: torch.tensor(1, device='cuda')`` / ``CAN_GPU = True`` / ``except: CAN_GPU =
        False`` (ssqueezepy's tests). Off CUDA the try fails and the handler gives the answer; ported, it would
        succeed everywhere and what the flag gates (CuPy kernels, ``device='cuda'``) would run off CUDA."""
        if _probe(node):
            m.skip_region(node.body, CUDA_QUERY, "a probe of CUDA: where it fails, the handler gives the answer")

    def visit_With(self, m: Migrator, node: cst.With) -> None:
        """``with pytest.raises(TypeError): model.cuda()``: the test checks that error (torchgpipe's
        ``test_deny_moving``); a rewrite would change what it tests."""
        if any(isinstance(item.item, cst.Call) and call_name(item.item.func) in _EXPECTS_ERROR for item in node.items):
            m.skip_region(node.body, EXPECTED_ERROR)

    def visit_SimpleStatementLine(self, m: Migrator, node: cst.SimpleStatementLine) -> None:
        """``assert torch.cuda.device_count() > rank``: what follows in the block runs only on CUDA (unless
        TP009 removes the assert). A gate assigned at the top level (``requires_cuda = pytest.mark.skipif(...)``)
        keeps asking CUDA; ``pytestmark = <gate>`` gates the whole module."""
        if len(m.ancestors) <= 2 and _assigns(node, m.store(self).get("own_gates", ())):
            m.skip_region(node, GATE_DEFINITION)
            return
        for small in node.body:
            if isinstance(small, cst.Assert) and _cuda_detection(m, small.test) and not _assert_goes(m, small):
                self._skip_rest_of_block(m, node)
            elif (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                  and isinstance(small.value.func, cst.Name)
                  and small.value.func.value in m.store(self).get("asserting", ())):
                self._skip_rest_of_block(m, node)  # `_check_device_cuda(q, k, v)`: it raises off CUDA
                return

    def visit_ExceptHandler(self, m: Migrator, node: cst.ExceptHandler) -> None:
        """``except (AttributeError, ImportError): <fallback for an older torch>``: reached only where the new
        API is missing, which the port's torch always has; rewriting it would change nothing."""
        caught = node.type.elements if isinstance(node.type, cst.Tuple) else [node.type] if node.type else []
        if any(dotted_name(c.value if isinstance(c, cst.Element) else c) in _MISSING_API for c in caught):
            m.skip_region(node.body, OLDER_TORCH)

    def visit_For(self, m: Migrator, node: cst.For) -> None:
        """``for i in range(torch.cuda.device_count()):`` runs its body only where CUDA devices are."""
        it = node.iter
        if (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" and it.args
                and isinstance(it.args[-1].value, cst.Call) and not it.args[-1].value.args
                and m.has_qname(it.args[-1].value.func, _COUNT)):
            self._keep(m, [it.args[-1].value], node, None)
            m.skip_region(node.body, CUDA_ONLY, _guarded(m, node.iter, "in the loop over CUDA devices"))

    def visit_FunctionDef(self, m: Migrator, node: cst.FunctionDef | cst.ClassDef) -> None:
        if node.name.value in m.store(self).get("own_gates", ()) and len(m.ancestors) <= 2:
            m.skip_region(node, GATE_DEFINITION)
            return
        if _scripted(m, node):
            return
        if self._cuda_only(m, node) or self._cuda_kernel(m, node):
            return
        if self._gated(m, node):
            return
        if len(m.ancestors) <= 2 and "fixture" in m.source and m.syntax is not None:
            fixtures = m.store(self).get("gated_fixtures")
            if fixtures is None:
                fixtures = m.store(self)["gated_fixtures"] = _gated_fixtures(m.syntax, m.gates)
            if node.name.value in fixtures:
                m.skip_region(node.body, CUDA_GATE, f"a fixture only tests gated by `{fixtures[node.name.value]}` "
                              "request: it runs only on CUDA")

    def _cuda_kernel(self, m: Migrator, node: cst.FunctionDef | cst.ClassDef) -> bool:
        """A kernel registered for a CUDA dispatch key (``@torch.library.impl(op, "AutocastCUDA")``) runs only on
        CUDA: torch dispatches to it for CUDA tensors alone, and the ``autocast("cuda", enabled=False)`` in it names
        that key, to reach the kernel below it."""
        for decorator in node.decorators:
            call = decorator.decorator
            if not (isinstance(call, cst.Call) and m.qnames(call.func) & _KERNEL_REGISTRATION):
                continue
            key = next((text for arg in call.args[1:] if (text := string_value(arg.value))
                        and text.lower().endswith("cuda")), None)
            if key is not None:
                m.skip_region(node.body, CUDA_ONLY, f"a kernel torch dispatches for CUDA alone (key `{key}`)")
                return True
        return False

    def _cuda_only(self, m: Migrator, node: cst.FunctionDef | cst.ClassDef) -> bool:
        """A function, method or class that cannot run without CUDA (`analysis.requirements.cuda_only_functions`:
        it always imports a CUDA-only library or kernel, captures a CUDA graph, or calls what does, or a CUDA gate)
        is left as written."""
        found = m.store(self).get("cuda_only")
        if not found:
            return False
        line = m.start(node.name).line
        name, why = next(((name, why) for name, (at, why) in found.items() if at == line
                          and name.rpartition(".")[2] == node.name.value), (None, None))
        if name is None or why is None:
            return False
        gate = why.endswith("which stops or fails without CUDA")
        m.skip_region(node.body, CUDA_GATE if gate else CUDA_ONLY_LIBRARY, f"`{name}` {why}: it runs only on CUDA")
        return True

    def _gated(self, m: Migrator, node: cst.FunctionDef | cst.ClassDef) -> bool:
        """A test decorated by a CUDA query, or by a CUDA gate of the project (`analysis.gates`), is left alone."""
        for decorator in node.decorators:
            calls = _Calls(m)
            decorator.visit(calls)
            text = dotted_name(decorator.decorator.func if isinstance(decorator.decorator, cst.Call)
                               else decorator.decorator) or ""
            if text in m.gates:
                m.skip_region(node.body, CUDA_GATE, f"gated by `{text}`, a CUDA gate of this project: it runs only "
                              "on CUDA")
                return True
            if calls.found:
                self._keep(m, calls.found, decorator, CUDA_TEST, "test runs only where CUDA is; left as it is")
                m.skip_region(node.body, CUDA_TEST)
                return True
        return False

    def visit_ClassDef(self, m: Migrator, node: cst.ClassDef) -> None:
        if node.name.value in m.store(self).get("own_gates", ()) and len(m.ancestors) <= 2:
            m.skip_region(node, GATE_DEFINITION)
            return
        if _scripted(m, node):
            return
        if self._gated(m, node):
            return
        if self._cuda_only(m, node):
            return
        if _wraps_backend(node):
            m.skip_region(node, SEVERAL_BACKENDS)  # an accelerator backend of its own
            return
        if len(m.ancestors) <= 2 and m.syntax is not None and "def cuda" in m.source \
                and node.name.value in own_device_classes(m.syntax, strict=True):
            for method in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                if isinstance(method, cst.FunctionDef) and method.name.value in ("cuda", "cpu", "to"):
                    m.skip_region(method, SEVERAL_BACKENDS, "its class moves itself its own way (its own `cuda`, "
                                  "and a `to` that takes CUDA alone or fewer arguments): its objects stay CUDA-or-CPU")
        bases = [dotted_name(b.value) or "" for b in node.bases]
        skipping = m.store(self).setdefault("skipping", set())  # test classes that skip without CUDA
        if self._skipped_in_setup(m, node) or any(b in skipping for b in bases):
            skipping.add(node.name.value)  # subclasses inherit the skipping setUp
            m.skip_region(node.body, CUDA_TEST)
            return
        self.visit_FunctionDef(m, node)  # decorators: skipped test classes

    def _skipped_in_setup(self, m: Migrator, node: cst.ClassDef) -> bool:
        """A test class whose ``setUp``/``setUpClass`` skips unless CUDA is there runs only on CUDA."""
        for statement in node.body.body:
            if not (isinstance(statement, cst.FunctionDef) and statement.name.value in ("setUp", "setUpClass")):
                continue
            for inner in statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ():
                if isinstance(inner, cst.If) and _negated_detection(m, inner.test) and _exits(inner.body):
                    positive, other = _guard_calls(m, inner.test)
                    self._keep(m, positive + other, inner, None)
                    return True
        return False

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        module = m.ancestors[-3] if len(m.ancestors) > 2 else None
        if isinstance(module, cst.Module) and any(
                isinstance(t.target, cst.Name) and t.target.value == "pytestmark" for t in node.targets):
            calls = _Calls(m)  # `pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)`
            node.value.visit(calls)
            if calls.found and "skipif" in cst.Module([]).code_for_node(node.value):
                self._keep(m, calls.found, node, CUDA_TEST, "tests run only where CUDA is; left as they are")
                statement = m.ancestors[-2]
                for later in module.body[[id(s) for s in module.body].index(id(statement)) + 1:]:
                    m.skip_region(later, CUDA_TEST)
                return
        if (portable := m.store(self).get("portable_flags")) and len(node.targets) == 1 and isinstance(
                target := node.targets[0].target, (cst.Name, cst.Attribute)):
            function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
            if (function.name.value if function else "", target.value) in portable if isinstance(
                    target, cst.Name) else ("*", dotted_name(target)) in portable:
                calls = _Calls(m)  # `use_cuda = not args.no_cuda and torch.cuda.is_available()`: the accelerator's
                node.value.visit(calls)
                for call in calls.found:
                    self._rewrite(m, call, "is_available")
                if calls.found:
                    m.fact("choices", node)  # the program's device follows the flag: what MPS lacks then matters
        sizing = m.store(self).get("sizing")
        if sizing is None:
            sizing = m.store(self)["sizing"] = _sizing(m)
        if sizing and any(dotted_name(target.target) in sizing for target in node.targets):
            self._count(m, node.value)  # `ngpus = torch.cuda.device_count()`, later `mp.spawn(..., nprocs=ngpus)`
        elif isinstance(node.value, cst.Call) and not node.value.args and m.has_qname(node.value.func, _COUNT) \
                and m.hold is None and m.syntax is not None and _counts_for_a_choice(m.syntax, m.start(node).line):
            # pytorch-template's prepare_device: `n_gpu = torch.cuda.device_count()` empties the ids a
            # `torch.device('cuda:0' if n_gpu_use > 0 else 'cpu')` reads: the accelerator's count keeps the choice
            # and what it places together wherever the port sends the program's data
            self._rewrite(m, node.value, "device_count")

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        """Every device count given to ``mp.spawn`` (``nprocs``, a world size in ``args``) sizes processes; one
        given to DataParallel names its devices (`torch_facts` ``data_parallel``): the accelerator's count."""
        if m.qnames(node.func) & _SPAWN:
            calls = _Calls(m)
            for arg in node.args:
                arg.value.visit(calls)
            for call in calls.found:
                self._count(m, call)
        elif m.qnames(node.func) & _DATA_PARALLEL and m.hold is None and m.kept is None:
            calls = _Calls(m)
            for arg in node.args[1:]:
                arg.value.visit(calls)
            for call in calls.found:  # `device_ids=range(torch.cuda.device_count())`: none on an XPU as written
                if not call.args and m.has_qname(call.func, _COUNT):
                    self._rewrite(m, call, "device_count")

    def visit_Arg(self, m: Migrator, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value in _PROCESS_COUNT:
            self._count(m, node.value)


    def _count(self, m: Migrator, value: cst.BaseExpression) -> None:
        calls = _Calls(m)
        value.visit(calls)  # `n_workers or torch.cuda.device_count()` too
        store = m.store(self)
        if "rank_placed" not in store:
            store["rank_placed"] = _rank_placement(m.syntax) if m.syntax is not None else None
        for call in calls.found:
            if not call.args and m.has_qname(call.func, _COUNT):
                if store["rank_placed"] is not None:
                    self._keep(m, [call], call, HALF_PORT, "the processes it counts place data on the CUDA device "
                               f"of their rank (`{store['rank_placed'][1]}`, line {store['rank_placed'][0]}), "
                               "which stays: off CUDA none starts, as before")
                else:
                    self._rewrite(m, call, "process_count")

    def visit_BinaryOperation(self, m: Migrator, node: cst.BinaryOperation) -> None:
        """``rank % torch.cuda.device_count()``: a local rank from the number of devices, one process each;
        ``torch.cuda.device_count() // local_world_size``: the devices of each process, one off CUDA."""
        if isinstance(node.operator, (cst.Modulo, cst.FloorDivide)) and isinstance(node.right, cst.Call) and not (
                isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))):
            # (not `'# available GPUs: %d' % torch.cuda.device_count()`, hsnet's log: a string formatted with it)
            self._count(m, node.right)
        elif isinstance(node.operator, cst.Divide) and isinstance(node.right, cst.Call) and (
                _numeric(node.left) or _made_integer(m)):
            # a number shared among the devices (DoLipReading's `lr = args.batch_size / 32.0 /
            # torch.cuda.device_count() * args.lr`; MolTrans's `int(batch_size / gpus)`): one device off CUDA,
            # where CUDA's count of 0 raises ZeroDivisionError
            self._count(m, node.right)
        if isinstance(node.operator, cst.FloorDivide) and isinstance(node.left, cst.Call):
            self._count(m, node.left)
        if isinstance(node.operator, cst.Multiply):
            self._multiplied(m, node)

    def _multiplied(self, m: Migrator, node: cst.BinaryOperation) -> None:
        """``(torch.device("cuda"),) * torch.cuda.is_available()``: the other side counts only where CUDA is
        (Shampoo's test devices); a port of it alone changes nothing."""
        for query, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(query, cst.Call) and not query.args and m.has_qname(query.func, _AVAILABLE):
                self._keep(m, [query], node, None)
                m.skip_region(other, CUDA_ONLY, _guarded(m, query, "multiplied by the CUDA check"))
                return

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> None:
        """A guard call that no rule decided on stays as written, with a note."""
        if id(original.func) in m.handled or id(original.func) in m.shared.guard_renames:
            return None
        if not original.args and m.qnames(original.func) & {_AVAILABLE, _COUNT}:
            self._keep(m, [original], original, CUDA_QUERY, "CUDA query kept as written: it answers for CUDA alone")
        return None


def _numeric(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is arithmetic on a number literal (``args.batch_size / 32.0``): a Python number, not a
    tensor, whatever its names hold (`torchport.model.evaluate`'s reading, on LibCST's tree)."""
    return isinstance(node, cst.BinaryOperation) and any(
        isinstance(side, (cst.Integer, cst.Float)) or _numeric(side) for side in (node.left, node.right))


def _made_integer(m: Migrator) -> bool:
    """Whether the division being left is the one argument of ``int(...)``: by 0 it raises, a number or a tensor."""
    if len(m.ancestors) < 3:
        return False
    call, arg = m.ancestors[-3], m.ancestors[-2]  # the last is the division itself
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "int" \
        and len(call.args) == 1 and call.args[0] is arg and arg.keyword is None

