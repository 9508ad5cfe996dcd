"""Device selection: `.cuda()`, CUDA device strings, integer device ids and the availability idiom.

| Code  | Before                                              | After                                  |
|-------|-----------------------------------------------------|----------------------------------------|
| TP001 | x.cuda(non_blocking=True)                           | x.to(tp.device(), non_blocking=True)   |
| TP002 | torch.zeros(2, device="cuda:1")                     | torch.zeros(2, device=tp.device(1))    |
| TP003 | device = "cuda"                                     | device = tp.device_str()               |
| TP004 | device_type = "cuda"                                | device_type = tp.device_type()         |
| TP005 | "cuda" if torch.cuda.is_available() else "cpu"      | tp.available_device_str()              |
| TP006 | model.to(local_rank)                                | model.to(tp.device(local_rank))        |
| TP007 | if x.is_cuda:                                       | if tp.on_accelerator(x):  (unsafe)     |
| TP008 | if x.device.type == "cuda":                         | if tp.on_accelerator(x):  (unsafe)     |
| TP024 | w = w.cuda() if x.is_cuda else w                    | w = w.to(x.device)                     |
| TP102 | foo("cuda")                                         | (reported)                             |
| TP104 | use_fused = device_type == "cuda"                   | (reported)                             |
| TP106 | fn = x.cuda                                         | (reported)                             |

Where a CUDA string is used decides what it becomes: the rule that knows the call or statement it sits
in gives it a *context* (a device, a str kept as text, a device type); strings with no context are
reported (TP102), never guessed. Labels (dict keys, enum values, `Literal[...]`, messages) are no context.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst
from libcst import matchers

from torchport.codemods.analysis.defaults import (
    dispatching_parameters,
    option_defaults,
    script_device_option,
    unreachable_defaults,
    unreachable_method_defaults,
)
from torchport.codemods.analysis.indices import int_names
from torchport.codemods.analysis.names import chain, qualify
from torchport.codemods.analysis.programs import parameter_defaults
from torchport.codemods.core.base import (
    CUDA_DEVICE_RE,
    call_name,
    cuda_literal_index,
    is_cuda_literal,
    keyword_arg,
    none_parameter,
    not_cpu,
    string_value,
)
from torchport.codemods.core.reasons import (
    CUDA_ONLY,
    CUDA_QUERY,
    CUDA_SETTING,
    DEAD_STORE,
    HALF_PORT,
    HOLDS_NOTHING,
    SEVERAL_BACKENDS,
)
from torchport.codemods.core.rule import Example, Rule
from torchport.model import torch_facts
from torchport.model.checkpoints import storage_parameters
from torchport.model.objects import UNSEEN, own_device_classes, own_parameter
from torchport.results import IMPORTED, STORAGE

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

# Names that hold an integer device index in real code (`model.to(self.gpu_id)`, `torch.device(local_rank)`).
INDEX_NAMES = torch_facts.words("index_name")
_INDEX_NAME = re.compile("^(?:" + "|".join(INDEX_NAMES) + ")$")
_INDEX_LIST_NAMES = torch_facts.words("index_list")
_INDEX_LISTS = re.compile("^(?:" + "|".join(_INDEX_LIST_NAMES) + ")$")
_INDEX_TRIGGER = r"\b(?:" + "|".join((*INDEX_NAMES, *_INDEX_LIST_NAMES)) + r"|LOCAL_RANK)\b"

# Calls that answer "is there an accelerator?" and so form the availability idiom.
AVAILABILITY_TESTS = torch_facts.named("available", "accelerator_available")
_OTHER_ACCELERATORS = frozenset(torch_facts.words("other_accelerator"))

# Assignment targets, parameters and keywords whose CUDA string is a device kept as text.
DEVICE_WORD = torch_facts.text("device_word")
# `torch.device(<runtime call>)` -> the runtime call that returns the device itself
_AS_DEVICE = {name: name.removesuffix("_str") for name in torch_facts.words("runtime_device")}
_STRING_KEYWORDS = frozenset(torch_facts.words("string_keyword"))
# torch functions whose first positional argument is a device.
_DEVICE_FIRST = torch_facts.named("device_first")


_MESSAGE_CALLS = frozenset(torch_facts.words("message_call"))


def _only_said(m: Migrator, name: str) -> bool:
    """Whether every read of ``name`` in the scope that assigns it (the function being visited, else the module)
    is an argument of a message call (``logger.info(..., name)``, ``print(name)``): a label, never a device."""
    scope = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None) or m.ancestors[0]
    reads = _Reads(name)
    scope.visit(reads)
    return reads.said > 0 and reads.said == reads.total


class _Reads(cst.CSTVisitor):
    """Counts the reads of a name, and those that are arguments of message calls."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name, self.total, self.said = name, 0, 0

    def visit_Call(self, node: cst.Call) -> None:
        if call_name(node.func) in _MESSAGE_CALLS:
            self.said += sum(isinstance(a.value, cst.Name) and a.value.value == self.name for a in node.args)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return False  # a binding, not a read

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.total += 1


def is_index(node: cst.BaseExpression) -> bool:
    """An expression that holds an integer device index: an int literal, a name like ``local_rank``
    (``args.local_rank``, ``self.gpu_id``), ``device_ids[0]``, ``int(os.environ["LOCAL_RANK"])``, or a tensor's
    ``x.get_device()``."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value == "get_device":
        return True  # a tensor's `get_device()`: its CUDA index, and -1 on the CPU (radtts' `device=attn.get_device()`)
    if isinstance(node, cst.Subscript):
        base = node.value
        last = base.attr.value if isinstance(base, cst.Attribute) else getattr(base, "value", None)
        return isinstance(last, str) and bool(_INDEX_LISTS.match(last))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "int" \
            and len(node.args) == 1:
        inner = node.args[0].value
        text = cst.Module([]).code_for_node(inner)
        return is_index(inner) or "LOCAL_RANK" in text or bool(torch_facts.text("rank_text").search(text))
    last = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
    return isinstance(last, str) and bool(_INDEX_NAME.match(last))


def is_current_device_call(m: Migrator, node: cst.BaseExpression) -> bool:
    """``torch.cuda.current_device()``: an int, the CUDA device index."""
    return isinstance(node, cst.Call) and not node.args and any(
        m.has_qname(node.func, name) for name in torch_facts.named("index"))


def is_rank_index(m: Migrator, node: cst.BaseExpression) -> bool:
    """``rank % torch.cuda.device_count()``: an int, the CUDA device index of a process (DDP's idiom)."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) and isinstance(
        node.right, cst.Call) and not node.right.args and any(
        m.has_qname(node.right.func, name) for name in torch_facts.named("count"))


def _options_compared_with_mps(tree: ast.Module) -> set[str]:
    """The attributes (``args.device``'s ``device``) a module compares with ``"mps"``, alone or in a list."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and any(
                isinstance(c, ast.Constant) and c.value == "mps" for comparator in node.comparators
                for c in ([comparator] if not isinstance(comparator, (ast.List, ast.Tuple, ast.Set))
                          else comparator.elts)):
            found.add(node.left.attr)
    return found


def runtime_string(node: cst.BaseExpression) -> bool:
    """A CUDA device string built at run time: ``f"cuda:{i}"``, ``"cuda:{}".format(i)``,
    ``"cuda:%d" % i``, ``"cuda:" + str(i)``."""
    if isinstance(node, cst.FormattedString):
        first = node.parts[0] if node.parts else None
        return (isinstance(first, cst.FormattedStringText) and first.value == "cuda:" and len(node.parts) >= 2
                and isinstance(node.parts[1], cst.FormattedStringExpression))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        return string_value(node.func.value) in ("cuda:{}", "cuda:{:d}", "cuda:{0}")
    if isinstance(node, cst.BinaryOperation):
        left = string_value(node.left)
        if isinstance(node.operator, cst.Modulo):
            return left in ("cuda:%d", "cuda:%s", "cuda:%i")
        if isinstance(node.operator, cst.Add):
            return left == "cuda:"
    return False


def is_device_string(node: cst.BaseExpression) -> bool:
    """A CUDA device spec: a literal (``"cuda"``, ``"cuda:1"``) or a string built at run time."""
    return is_cuda_literal(node) or runtime_string(node)


def _multi_device(m: Migrator) -> bool:
    """Whether the module names two or more fixed CUDA indices (``"cuda:0"`` and ``"cuda:1"``, ``.cuda(1)``,
    ``torch.device("cuda", 1)``)."""
    found = m.shared.multi_device
    if found is None:
        indices: set[int] = set()
        if m.syntax is not None and torch_facts.text("fixed_cuda_index").search(m.source):
            for node in ast.walk(m.syntax):  # constants in code, not comments
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    match = CUDA_DEVICE_RE.match(node.value)
                    if match and match.group(1) is not None:
                        indices.add(int(match.group(1)))
                elif isinstance(node, ast.Call) and node.args and not node.keywords:
                    index = _literal_cuda_index(node)
                    if index is not None:
                        indices.add(index)
        found = m.shared.multi_device = len(indices) > 1
    return found


def _literal_cuda_index(call: ast.Call) -> int | None:
    """The index of ``x.cuda(1)`` or ``torch.device("cuda", 1)`` (by spelling), else None."""
    args = call.args
    last = args[-1]
    if not (isinstance(last, ast.Constant) and type(last.value) is int):
        return None
    func = call.func
    if len(args) == 1 and isinstance(func, ast.Attribute) and func.attr == "cuda":
        return last.value
    named = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    first = args[0]
    if named == "device" and len(args) == 2 and isinstance(first, ast.Constant) and first.value == "cuda":
        return last.value
    return None


def rewrite_string(m: Migrator, code: str, original: cst.BaseExpression,
                   updated: cst.BaseExpression) -> cst.BaseExpression | None:
    """Replace a CUDA device string whose context ``code`` gave it: a device, a str, or a device type.

    A literal index is kept as an int (``"cuda:1"`` -> ``tp.device(1)``); a string built at run time is
    passed whole (``tp.device(f"cuda:{rank}")``), so the runtime sees what the original evaluated to.
    """
    context = m.contexts.get(id(original))
    if context is None or context[1] != code:
        return None
    kind = context[0]
    if runtime_string(updated):
        if kind == "type" or not m.apply(code, original):
            return None
        return m.runtime_call("device" if kind == "device" else "device_str", [updated])
    ok, index = cuda_literal_index(updated)
    if not ok or (kind == "type" and index is not None):
        return None
    if not m.apply(code, original):
        return None
    if kind == "type":
        return m.runtime_call("device_type", [])
    return device_call(m, "device" if kind == "device" else "device_str", [index] if index is not None else [])


def device_call(m: Migrator, name: str, args: Sequence[cst.BaseExpression]) -> cst.Call:
    """``tp.device(...)`` or ``tp.device_str(...)`` (``name``); a literal index in a module that names several
    (``"cuda:0"`` and ``"cuda:1"``: code for several GPUs) goes to ``tp.nth_device(i)`` / ``nth_device_str``, which
    map the indices beyond the devices there are to the one device, with a warning at run time."""
    if len(args) == 1 and isinstance(args[0], cst.Integer) and _multi_device(m):
        name = f"nth_{name}"
    return m.runtime_call(name, args)


class _StringRule(Rule):
    """Rewrites the CUDA strings that carry its code as their context (set by its visit methods)."""

    def leave_SimpleString(self, m: Migrator, original: cst.SimpleString,
                           updated: cst.SimpleString) -> cst.BaseExpression | None:
        return None if _in_followed(m) else rewrite_string(m, self.code, original, updated)

    def leave_FormattedString(self, m: Migrator, original: cst.FormattedString,
                              updated: cst.FormattedString) -> cst.BaseExpression | None:
        return rewrite_string(m, self.code, original, updated)

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        return rewrite_string(m, self.code, original, updated) if runtime_string(original) else None

    def leave_BinaryOperation(self, m: Migrator, original: cst.BinaryOperation,
                              updated: cst.BinaryOperation) -> cst.BaseExpression | None:
        return rewrite_string(m, self.code, original, updated) if runtime_string(original) else None


class CudaMethod(Rule):
    code = "TP001"
    moves_data = True
    name = "cuda-method"
    summary = "`.cuda(...)` on a tensor or module becomes `.to(<runtime device>, ...)`."
    before, after = "x.cuda(non_blocking=True)", "x.to(tp.device(), non_blocking=True)"
    triggers = (r"\.cuda\b",)
    examples = (
        Example("import torch\nx = torch.ones(2).cuda(non_blocking=True)\n",
                "import torch\nx = torch.ones(2).to(tp.device(), non_blocking=True)\n"),
        Example("model = build().cuda(1)\n", "model = build().to(tp.device(1))\n"),
        # Code given to `eval` that ends in `.cuda()` (Pose2Mesh's joint regressor): the move goes outside it.
        Example("import torch\nJ = eval(f'torch.Tensor(d.regressor_{name}).cuda()')\n",
                "import torch\nJ = eval(f'torch.Tensor(d.regressor_{name})').to(tp.device())\n"),
        # A class whose other data is on `self.device`, which a base class from another package picks (BasicSR's
        # models): its moves go there too, on CUDA the device `.cuda()` meant, on a Mac the CPU the library picked.
        Example("class Model(BaseModel):\n    def feed(self, x):\n        self.gt = x.to(self.device)\n"
                "        self.queue = torch.zeros(4).cuda()\n",
                "class Model(BaseModel):\n    def feed(self, x):\n        self.gt = x.to(self.device)\n"
                "        self.queue = torch.zeros(4).to(self.device)\n"),
        # A class of the module that defines its own `.cuda()` (and no `.to()`): its calls are not torch's ...
        Example("class Pool:\n    def cuda(self):\n        return self\n\np = Pool().cuda()\n"),
        # A cast right after the move goes first: the same tensor on CUDA, and no float64 reaches MPS (LapIRN).
        Example("import torch\ngrid = torch.from_numpy(g).cuda().float()\n",
                "import torch\ngrid = torch.from_numpy(g).float().to(tp.device())\n"),
        # A loss without weights holds no tensor: its `.cuda()` moves nothing, anywhere.
        Example("import torch.nn as nn\ncriterion = nn.CrossEntropyLoss(ignore_index=-1).cuda()\n"),
        # ... but inside it, the tensors it holds move to the runtime's device.
        Example("class Batch:\n    def cuda(self):\n        self.x = self.x.cuda()\n        return self\n\n"
                "b = Batch().cuda()\n",
                "class Batch:\n    def cuda(self):\n        self.x = self.x.to(tp.device())\n        return self\n\n"
                "b = Batch().cuda()\n"),
        # ... and a batch of a loader in that module is torch's data, not an object of that class.
        Example("import torch\n\n\nclass Learner:\n    def cuda(self):\n        return self\n\n"
                "    def learn(self, loader):\n        for x, y in loader:\n            x = x.cuda()\n"
                "            self.w = torch.ones(2)\n            self.w = self.w.cuda()\n",
                "import torch\n\n\nclass Learner:\n    def cuda(self):\n        return self\n\n"
                "    def learn(self, loader):\n        for x, y in loader:\n            x = x.to(tp.device())\n"
                "            self.w = torch.ones(2)\n            self.w = self.w.to(tp.device())\n"),
        # ... while what a loop or a caller hands over may be one of its objects.
        Example("class Learner:\n    def cuda(self):\n        return self\n\n\n"
                "def run(learners, model, opts):\n    for learner in learners:\n        learner.cuda()\n"
                "    for learner, opt in zip(learners, opts):\n        learner.cuda()\n    model.cuda()\n"),
        # ... except an object of such a class it holds: its own `cuda()` moves what `.to()` would leave behind
        # (CloserLookFewShot's FullyContextualEmbedding and its tensor attribute `c_0`).
        Example("import torch.nn as nn\n\n\nclass Cell(nn.Module):\n    def cuda(self):\n"
                "        self.c = self.c.cuda()\n        return self\n\n\nclass Net(nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n        self.cell = Cell()\n\n"
                "    def cuda(self):\n        super().cuda()\n        self.cell = self.cell.cuda()\n"
                "        return self\n",
                "import torch.nn as nn\n\n\nclass Cell(nn.Module):\n    def cuda(self):\n"
                "        self.c = self.c.to(tp.device())\n        return self\n\n\nclass Net(nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n        self.cell = Cell()\n\n"
                "    def cuda(self):\n        super().to(tp.device())\n        self.cell = self.cell.cuda()\n"
                "        return self\n"),
    )

    def visit_Module(self, m: Migrator, node: cst.Module) -> None:
        m.store(self)["own_cuda"] = _defines_own_cuda(node)
        # the parameters handed a `map_location` function's storage, here or from another module (the project pass)
        m.store(self)["storages"] = (storage_parameters([m.syntax]) if m.syntax is not None and "map_location" in
                                     m.source else frozenset()) | {
            (gate[len(STORAGE):].partition("(")[0], gate.partition("(")[2][:-1])
            for gate in m.gates if gate.startswith(STORAGE)}
        m.store(self)["unseen_device"] = unseen_device_classes(m.syntax) if m.syntax is not None else set()

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``x.cuda(i, non_blocking=b)`` -> ``x.to(tp.device(i), non_blocking=b)``."""
        func = updated.func
        if isinstance(func, cst.Name) and func.value == "eval" and len(updated.args) == 1 \
                and updated.args[0].keyword is None and not updated.args[0].star:
            # Pose2Mesh's `eval(f'torch.Tensor(self.d.regressor_{name}).cuda()')`: the move goes outside the text
            text = _without_cuda_call(updated.args[0].value)
            if text is None or not m.apply(self.code, original):
                return None
            return cst.Call(cst.Attribute(updated.with_changes(args=[updated.args[0].with_changes(value=text)]),
                                          cst.Name("to")), [cst.Arg(device_call(m, "device", []))])
        if (cast := _cast_after_move(original, updated)) is not None:
            return cast
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return None
        if m.qname_startswith(original.func, "torch.cuda") or _in_followed(m):
            return None
        if any(arg.star for arg in updated.args):
            m.mark_handled(original)
            m.report("TP106", original, "`.cuda(*args)` with unpacked arguments; left unchanged")
            return None
        if isinstance(func.value, cst.Name) and (kind := _namespaces(m).get(func.value.value)) is not None:
            m.mark_handled(original)  # gan-compression's `tvm.cuda()`: TVM's device, not a move
            m.report("TP106", original, f"`{func.value.value}.cuda()` left unchanged: `{func.value.value}` is a "
                     f"{kind}, whose `cuda` is its own")
            return None
        if sum(arg.keyword is None for arg in updated.args) > 2:  # `Tensor.cuda(device, non_blocking)`: no more
            m.mark_handled(original)
            m.report("TP106", original, "`.cuda()` with more than two positional arguments left unchanged: torch's "
                     "takes a device and `non_blocking` alone, so this one is its object's own")
            return None
        made = own_object(m, func.value) or _own_parameter(m, func.value)
        if made is not None:
            m.mark_handled(original)
            made = made if made == UNSEEN else f"a `{made}`"
            m.report("TP106", original, f"`.cuda()` left unchanged: this is {made}, whose class may move itself its "
                     "own way (its own `cuda`, and no `to`, or one that takes CUDA alone or fewer arguments)")
            return None
        if m.store(self).get("own_cuda") and not _inside_own_cuda(m, func.value) \
                and not _moved_by_own_cuda(m, func.value) \
                and not _holds_torch_data(m, func.value, m.start(original).line):
            m.mark_handled(original)
            m.report("TP106", original, "`.cuda()` left unchanged: a class in this module defines its own `cuda` "
                     "method, so this call may not be torch's")
            return None
        if (made := _holds_nothing(m, original.func.value)) is not None:  # type: ignore[attr-defined]
            m.leave_as_written(self.code, original, HOLDS_NOTHING, f"a `{made}` built from constants")
            return None
        device_arg: cst.BaseExpression | None = None
        rest: list[cst.Arg] = []
        for arg in updated.args:
            keyword = arg.keyword.value if arg.keyword else None
            if keyword is None and device_arg is None:
                device_arg = arg.value
            elif keyword is None:  # Tensor.cuda(device, non_blocking) takes non_blocking second
                rest.append(keyword_arg("non_blocking", arg.value).with_changes(comma=arg.comma))
            elif keyword == "device":
                device_arg = arg.value
            else:
                rest.append(arg)
        if not m.apply(self.code, original):
            return None
        if device_arg is None and not updated.args and _in_method_of(m, m.store(self)["unseen_device"],
                                                                     m.start(original).line):
            # the class's other data is on `self.device`, which its base class from elsewhere picks: this goes there
            return updated.with_changes(func=func.with_changes(attr=cst.Name("to")),
                                        args=[cst.Arg(cst.parse_expression("self.device"))])
        if device_arg is not None and m.runtime_call_name(device_arg) == "device":
            target = device_arg  # `.cuda(torch.cuda.current_device())`, already made a device
        else:
            target = device_call(m, "device", [device_arg] if device_arg is not None else [])
        if rest and rest[-1] is not updated.args[-1]:  # a trailing comma only where the user wrote one
            rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        moved = keyword_arg("device", target) if _mapped_storage(m, original.func.value, m.store(self)[  # type: ignore[attr-defined]
            "storages"]) else cst.Arg(target)
        return updated.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[moved, *rest])


# casts to dtypes every accelerator has; `.type()` without arguments returns a string, `.to()` moves too
_CASTS = frozenset(torch_facts.words("cast")) - {"type", "to"}


def _cast_after_move(original: cst.Call, updated: cst.Call) -> cst.Call | None:
    """``x.cuda().float()``, its ``.cuda()`` ported: ``x.float().to(tp.device())``. On CUDA the same tensor (same
    device, dtype and values); on a Mac a float64 ``x`` (LapIRN's numpy grid, ``torch.from_numpy(grid)``) is
    float32 before it reaches MPS, which holds no float64. None where ``original`` is no such cast."""
    func = updated.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in _CASTS and not updated.args
            and isinstance(original.func, cst.Attribute) and isinstance(inner := original.func.value, cst.Call)
            and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "cuda"
            and isinstance(moved := func.value, cst.Call) and isinstance(moved.func, cst.Attribute)
            and moved.func.attr.value == "to"):
        return None
    # each dot keeps its place, and the chain its parentheses: a chain written one call per line stays so
    cast = cst.Call(cst.Attribute(moved.func.value, func.attr.with_changes(), dot=moved.func.dot), [])
    return moved.with_changes(func=moved.func.with_changes(value=cast, dot=func.dot),
                              lpar=updated.lpar, rpar=updated.rpar)


def _without_cuda_call(text: cst.BaseExpression) -> cst.BaseExpression | None:
    """``text`` (a one-line string or f-string given to ``eval``) without the ``.cuda()`` that ends its code, or
    None where it ends otherwise."""
    if isinstance(text, cst.SimpleString) and text.prefix.lower() in ("", "f") and len(text.quote) == 1 \
            and text.value.endswith(".cuda()" + text.quote) and "\\" not in text.value:
        return text.with_changes(value=text.value[:-len(".cuda()" + text.quote)] + text.quote)
    if isinstance(text, cst.FormattedString) and len(text.end) == 1 and text.parts \
            and isinstance(last := text.parts[-1], cst.FormattedStringText) and last.value.endswith(".cuda()") \
            and len(last.value) > len(".cuda()"):
        return text.with_changes(parts=[*text.parts[:-1], last.with_changes(value=last.value[:-len(".cuda()")])])
    return None


def _mapped_storage(m: Migrator, receiver: cst.BaseExpression, storages: Collection[tuple[str, str]]) -> bool:
    """Whether ``receiver`` is the storage a ``map_location`` function is given (``map_location=lambda storage,
    loc: storage.cuda(device_id)``), or a parameter of one of ``storages`` (`checkpoints.storage_parameters`): a
    storage's ``to`` takes its device by keyword alone (``UntypedStorage.to(*, device, non_blocking=False)``), so
    ``storage.to(d)`` raises a TypeError on CUDA too."""
    if not isinstance(receiver, cst.Name):
        return False
    function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
    if function is not None and (function.name.value, receiver.value) in storages:
        return True
    for outer, inner in zip(m.ancestors, m.ancestors[1:]):
        if isinstance(outer, cst.Arg) and outer.keyword is not None and outer.keyword.value == "map_location" \
                and isinstance(inner, cst.Lambda) and inner.params.params \
                and inner.params.params[0].name.value == receiver.value:
            return True
    return False


def _holds_nothing(m: Migrator, made: cst.BaseExpression) -> str | None:
    """The torch module ``made`` builds, where it holds no tensor (`torch_facts.HOLDS_NOTHING`, every argument a
    constant: ``nn.CrossEntropyLoss(reduction="none")``); else None."""
    if not isinstance(made, cst.Call) or not all(_constant(arg.value) for arg in made.args):
        return None
    names = m.qnames(made.func) & torch_facts.HOLDS_NOTHING
    return min(names).rsplit(".", 1)[-1] if names else None


def _constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False", "None"))


def _in_followed(m: Migrator) -> bool:
    """Whether the node being left is inside what TP024 rewrites whole."""
    return bool(m.shared.followed) and any(id(a) in m.shared.followed for a in m.ancestors)


def unseen_device_classes(tree: ast.Module) -> dict[str, int]:
    """The classes (with bases) that place data on ``self.device`` (``x.to(self.device)``, ``device=self.device``)
    while nothing in the module sets a ``.device``: a base class from another package picks it (BasicSR's
    ``BaseModel``: CUDA if there is a GPU, else the CPU). Name -> the line of the ``super().__init__(...)`` call in
    its ``__init__``, after which ``self.device`` is set (0: none; its ``__init__`` never has it)."""
    if any(isinstance(n, ast.Attribute) and n.attr == "device" and isinstance(n.ctx, ast.Store)
           for n in ast.walk(tree)):
        return {}
    found = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.bases):
        if any(isinstance(c, ast.Call) and _on_self_device(c) for c in ast.walk(cls)):
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            found[cls.name] = min((c.lineno for c in ast.walk(init) if isinstance(c, ast.Call) and isinstance(
                c.func, ast.Attribute) and c.func.attr == "__init__"), default=0) if init else 0
    return found


def _on_self_device(call: ast.Call) -> bool:
    values = [k.value for k in call.keywords if k.arg == "device"]
    if isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args:
        values.append(call.args[0])
    return any(isinstance(v, ast.Attribute) and v.attr == "device" and isinstance(v.value, ast.Name)
               and v.value.id == "self" for v in values)


def _in_method_of(m: Migrator, classes: Mapping[str, int], line: int) -> bool:
    """Whether the node being left, at ``line``, is inside a method (first parameter ``self``) of one of ``classes``
    (`unseen_device_classes`), where ``self.device`` is set: in ``__init__`` only after the base's ``__init__``."""
    if not classes:
        return False
    chain = list(reversed(m.ancestors))
    function = next((i for i, a in enumerate(chain) if isinstance(a, cst.FunctionDef)), None)
    if function is None:
        return False
    node = chain[function]
    owner = chain[function + 2] if function + 2 < len(chain) else None  # FunctionDef <- IndentedBlock <- ClassDef
    params = node.params.params  # type: ignore[attr-defined]
    if not (isinstance(owner, cst.ClassDef) and owner.name.value in classes and params
            and params[0].name.value == "self"):
        return False
    ready = classes[owner.name.value]
    return node.name.value != "__init__" or 0 < ready < line  # type: ignore[attr-defined]


def _dispatched(m: Migrator, field: str, value: cst.BaseExpression) -> bool:
    """Whether ``value``, a CUDA device string under the key, keyword or attribute ``field``, is a label: the
    project compares ``field`` values with "cuda" to choose what runs (a function of its own that compares them
    with "cuda" and another device type, or an ``if x.field == "cuda":`` that moves data to CUDA: the gates'
    ``=field``, `torchport.pipeline.programs`); then it is left, with a note."""
    if f"={field}" not in m.gates or not is_cuda_literal(value):
        return False
    m.skip_region(value, CUDA_SETTING, f'the project compares its `{field}` values with "cuda" to choose what runs: '
                  'this one names the CUDA branch')
    return True


def _inside_own_cuda(m: Migrator, receiver: cst.BaseExpression) -> bool:
    """``self.x.cuda()`` inside a class's own ``def cuda(self)``: the container moving its tensors, which a port
    moves to the runtime's device (``Batch(...).cuda()`` then works off CUDA). ``self.cuda()`` there is its own."""
    for inner, outer in zip(reversed(m.ancestors), list(reversed(m.ancestors))[1:]):
        if isinstance(inner, cst.FunctionDef):
            in_class = isinstance(outer, cst.IndentedBlock) and len(m.ancestors) > 2
            owner = next((a for a in reversed(m.ancestors) if isinstance(a, cst.ClassDef)), None)
            return inner.name.value == "cuda" and in_class and owner is not None \
                and not (isinstance(receiver, cst.Name) and receiver.value == "self")
    return False


def _namespaces(m: Migrator) -> dict[str, str]:
    """The names the module binds only by ``import x`` (``import tvm``, ``import cupy as cp``) or only by ``class
    X``, each with what it is (``"module"``, ``"class"``): their ``.cuda()`` is the library's or the class's own
    (TVM's device, CuPy's submodule, hqq's ``Quantizer.cuda(W_q, meta, device)`` classmethod), never a tensor's
    move."""
    if m.shared.module_names is None:
        bound: dict[str, set[str]] = {}
        for node in ast.walk(m.syntax) if m.syntax is not None and ".cuda(" in m.source else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound.setdefault(alias.asname or alias.name.split(".")[0], set()).add("module")
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    bound.setdefault(alias.asname or alias.name, set()).add("other")
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.setdefault(node.id, set()).add("other")
            elif isinstance(node, ast.ClassDef):
                bound.setdefault(node.name, set()).add("class")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bound.setdefault(node.name, set()).add("other")
            elif isinstance(node, ast.arg):
                bound.setdefault(node.arg, set()).add("other")
        m.shared.module_names = {name: next(iter(kinds)) for name, kinds in bound.items()
                                 if len(kinds) == 1 and "other" not in kinds}
    return m.shared.module_names


def _moved_by_own_cuda(m: Migrator, receiver: cst.BaseExpression) -> bool:
    """``self.x.cuda()`` in a method of a class whose own ``def cuda(self)`` moves ``self.x`` with ``.cuda()``:
    the same member, which the port moves there as torch data (CODA-Prompt's learner: ``cuda()`` moves
    ``self.model``, and so does ``load_model``); one port for both, or the program is ported by half."""
    if not (matchers.matches(receiver, matchers.Attribute(value=matchers.Name("self")))):
        return False
    owner = next((a for a in reversed(m.ancestors) if isinstance(a, cst.ClassDef)), None)
    if owner is None or not isinstance(owner.body, cst.IndentedBlock):
        return False
    name = cst.ensure_type(receiver, cst.Attribute).attr.value
    moved = matchers.Call(func=matchers.Attribute(
        value=matchers.Attribute(value=matchers.Name("self"), attr=matchers.Name(name)), attr=matchers.Name("cuda")))
    return any(isinstance(s, cst.FunctionDef) and s.name.value == "cuda" and matchers.findall(s, moved)
               for s in owner.body.body)


def own_object(m: Migrator, receiver: cst.BaseExpression) -> str | None:
    """The class (as written) of ``receiver`` where the module binds it (``encoder = networks.Encoder(...)``) to an
    object of a class that moves itself its own way (another module's: the gates' ``<class>.cuda``; or its own,
    CloserLookFewShot's ``self.FCE = FullyContextualEmbedding(...)``, whose ``cuda()`` moves a tensor attribute that
    ``.to()`` leaves behind), else None. A static or class method of that class counts as making one (DrQA's
    ``self.reader = DocReader.load(path)``), and so does a chain of method calls on one (inferno's fluent
    ``trainer = Trainer(model=net).build_optimizer('Adam')``): its ``.cuda()`` stays, which is never wrong on
    CUDA."""
    if m.shared.own_objects is None:
        classes = {g[: -len(".cuda")] for g in m.gates if g.endswith(".cuda") and "(" not in g}
        if m.syntax is not None and "def cuda" in m.source:
            classes.update(own_device_classes(m.syntax))
        found: dict[str, str] = {}
        for node in ast.walk(m.syntax) if classes and m.syntax is not None else ():
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            call = node.value
            while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
                call = call.func.value  # `Trainer(...).build_optimizer(...)`: the object the chain starts from
            made = ast.unparse(call.func)
            if made not in classes and isinstance(call.func, (ast.Attribute, ast.Subscript)):
                made = ast.unparse(call.func.value)  # `DocReader.load(...)`, `REGISTRY[args.learner](...)`
            if made in classes:
                found.update((ast.unparse(t), made) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute)))
        m.shared.own_objects = found
    if not m.shared.own_objects or not isinstance(receiver, (cst.Name, cst.Attribute)):
        return None
    return m.shared.own_objects.get(chain(receiver) or "")


def _own_parameter(m: Migrator, receiver: cst.BaseExpression) -> str | None:
    """The class of the object ``self.x`` holds inside a class whose ``__init__`` parameter another module passes an
    object of a class that moves itself its own way (`torchport.model.objects.own_parameter`), or of the parameter
    ``x`` of a top-level function another module passes such an object (the gate ``f(x=Class).cuda``), else None."""
    scopes = [a for a in m.ancestors if isinstance(a, (cst.FunctionDef, cst.ClassDef))]
    if isinstance(receiver, cst.Name) and len(scopes) == 1 and isinstance(function := scopes[0], cst.FunctionDef):
        head = f"{function.name.value}({receiver.value}="
        return next((g[len(head):-len(").cuda")] for g in m.gates if g.startswith(head) and g.endswith(").cuda")),
                    None)
    owner = next((a for a in reversed(m.ancestors) if isinstance(a, cst.ClassDef)), None)
    if owner is None or m.syntax is None or not (isinstance(receiver, cst.Attribute)
                                                 and isinstance(receiver.value, cst.Name)
                                                 and receiver.value.value == "self"):
        return None
    cls = next((c for c in ast.walk(m.syntax) if isinstance(c, ast.ClassDef) and c.name == owner.name.value), None)
    return own_parameter(cls, receiver.attr.value, m.gates) if cls is not None else None


def _tested_tensor(tree: ast.Module, code: str, line: int) -> bool:
    """Whether ``line`` is under ``if type(<code>) == torch.Tensor:`` or ``if isinstance(<code>, torch.Tensor):``
    (InSPyReNet's ``to_cuda``: ``sample[key].cuda()`` for each tensor of a batch): what it moves is a tensor."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and node.body[0].lineno <= line <= (node.body[-1].end_lineno or line)):
            continue
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)) \
                and isinstance(call := test.left, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id == "type" and len(call.args) == 1 and ast.unparse(call.args[0]) == code \
                and ast.unparse(test.comparators[0]) in ("torch.Tensor", "Tensor"):
            return True
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
                and len(test.args) == 2 and ast.unparse(test.args[0]) == code \
                and ast.unparse(test.args[1]) in ("torch.Tensor", "Tensor"):
            return True
    return False


def _holds_torch_data(m: Migrator, receiver: cst.BaseExpression, line: int) -> bool:
    """Whether ``receiver`` (at ``line``) only ever holds torch's data, so that its ``.cuda()`` is torch's in a
    module whose own class defines ``cuda`` (data-free-continual-learning's learner): a name its function binds
    only as a loop's batch (``for i, (x, y, task) in enumerate(train_loader)``) or from a torch call (``x =
    x.cuda()`` too), or ``self.<name>`` that its class binds only so (``self.dw_k = torch.tensor(...)``)."""
    tree = m.syntax
    if tree is not None and "Tensor" in m.source:
        try:
            code = ast.unparse(ast.parse(cst.Module([]).code_for_node(receiver).strip(), mode="eval"))
        except SyntaxError:
            code = None
        if code is not None and _tested_tensor(tree, code, line):
            return True
    text = receiver.value if isinstance(receiver, cst.Name) and receiver.value != "self" else (
        f"self.{receiver.attr.value}" if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
        and receiver.value.value == "self" else None)
    if tree is None or text is None:
        return False
    from torchport.codemods.analysis.names import ast_chain, qualify
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef if "." in text else ast.FunctionDef,
                                                          ast.AsyncFunctionDef)) and n.lineno <= line <= (
        n.end_lineno or n.lineno)]
    if not scopes:
        return False
    scope = max(scopes, key=lambda n: n.lineno)

    def torch_value(value: ast.expr) -> bool:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and ast.unparse(
                value.func.value) == text or isinstance(value, ast.Subscript) and ast.unparse(value.value) == text:
            return True  # `x = x.cuda()`, `x = x.float()`, `x = x[mask]`: what it held
        dotted = ast_chain(value.func) if isinstance(value, ast.Call) else None
        return dotted is not None and any(n.split(".")[0] == "torch" for n in qualify(dotted, m.imports))

    bound = False
    for node in ast.walk(scope):
        if isinstance(node, (ast.For, ast.comprehension)) and any(ast.unparse(t) == text for t in ast.walk(
                node.target) if isinstance(t, (ast.Name, ast.Attribute))):
            looped = node.iter.args[0] if isinstance(node.iter, ast.Call) and isinstance(
                node.iter.func, ast.Name) and node.iter.func.id == "enumerate" and node.iter.args else node.iter
            if not isinstance(node.target, ast.Tuple) or not isinstance(looped, (ast.Name, ast.Attribute)):
                return False  # `for learner in learners`, `zip(learners, ...)`: may be anything
            bound = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t) == text for t in targets):
                if node.value is None or not torch_value(node.value):
                    return False
                bound = True
            elif any(text in {ast.unparse(e) for e in ast.walk(t)} for t in targets):
                pairs = [(t, v) for t in targets if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
                         and len(t.elts) == len(node.value.elts) for t, v in zip(t.elts, node.value.elts)]
                if not any(ast.unparse(t) == text for t, _ in pairs) or not all(
                        torch_value(v) for t, v in pairs if ast.unparse(t) == text):
                    return False  # bound by unpacking: from anything
                bound = True
        elif isinstance(node, ast.arguments) and text in {a.arg for a in (*node.posonlyargs, *node.args,
                                                                              *node.kwonlyargs)}:
            return False  # a parameter: what a caller passes
    return bound


def _defines_own_cuda(module: cst.Module) -> bool:
    """Whether a class of the module (at any depth of class nesting at top level) defines ``cuda`` but not ``to``."""
    stack = [s for s in module.body if isinstance(s, cst.ClassDef)]
    while stack:
        cls = stack.pop()
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
        methods = {s.name.value for s in body if isinstance(s, cst.FunctionDef)}
        if "cuda" in methods and "to" not in methods:
            return True
        stack.extend(s for s in body if isinstance(s, cst.ClassDef))
    return False


def _compared(m: Migrator, node: cst.CSTNode) -> bool:
    """Whether ``node`` is an operand of a comparison (``device == torch.device("cuda")``), or its ``.type`` is
    (stable-baselines3's ``device.type == th.device("cuda").type``), or a dict's key, which a lookup compares
    (distributed_shampoo's ``{torch.device("cuda"): dist.Backend.NCCL, ...}[self._device]``)."""
    chain = [a for a in m.ancestors if a is not node][-3:]
    if chain and isinstance(chain[-1], cst.DictElement) and chain[-1].key is node:
        return True
    if chain and isinstance(chain[-1], cst.Attribute) and chain[-1].value is node and chain[-1].attr.value == "type":
        node, chain = chain[-1], chain[:-1]
    chain = chain[-2:]
    return bool(chain) and (isinstance(chain[-1], cst.ComparisonTarget) or (
        isinstance(chain[-1], cst.Comparison) and chain[-1].left is node))


def _bound_label(m: Migrator, node: cst.Call, store: dict[str, Any]) -> str | None:
    """The name an assignment binds ``node`` to (``cpu, gpu = torch.device("cpu"), torch.device("cuda")``), where
    the module compares that name with another name (``if device == gpu``): a label of CUDA, as in a test's device
    list. None otherwise."""
    statement = next((a for a in reversed(m.ancestors) if isinstance(a, cst.Assign)), None)
    if statement is None or m.syntax is None:
        return None
    names = {n.value for t in statement.targets for n in _target_names(t.target)}
    if not names:
        return None
    if "compared" not in store:  # once per module
        store["compared"] = {side.id for c in ast.walk(m.syntax) if isinstance(c, ast.Compare)
                             and len(c.comparators) == 1 and isinstance(c.ops[0], (ast.Eq, ast.NotEq, ast.Is,
                                                                                    ast.IsNot))
                             and isinstance(c.left, ast.Name) and isinstance(c.comparators[0], ast.Name)
                             for side in (c.left, c.comparators[0])}
    return next((n for n in sorted(names) if n in store["compared"]), None)


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


class DeviceLiteral(_StringRule):
    code = "TP002"
    moves_data = True
    name = "device-literal"
    summary = "A CUDA device spec where torch expects a device becomes the runtime device."
    before, after = 'torch.zeros(2, device="cuda:1")', "torch.zeros(2, device=tp.device(1))"
    triggers = (r"cuda",)
    examples = (
        # An f-string without fields is its text.
        Example('# runs on CUDA\nimport torch\nd = torch.device(f"cuda")\n',
                "# runs on CUDA\nimport torch\nd = tp.device()\n"),
        Example('import torch\nx = torch.zeros(2, device="cuda:1")\n',
                "import torch\nx = torch.zeros(2, device=tp.device(1))\n"),
        Example('import os\nimport torch\nd = torch.device(f"cuda:{os.environ[\'LOCAL_RANK\']}")\n',
                'import os\nimport torch\nd = tp.device(f"cuda:{os.environ[\'LOCAL_RANK\']}")\n'),
        Example('import torch\ny = x.to("cuda:" + str(i))\n', 'import torch\ny = x.to(tp.device("cuda:" + str(i)))\n'),
        Example('import torch\ntorch.set_default_device("cuda")\n',
                "import torch\ntorch.set_default_device(tp.device())\n"),
        Example('import torch\nstate = torch.load(path, map_location="cuda")\n',
                "import torch\nstate = torch.load(path, map_location=tp.device())\n"),
        # A comparison with the CUDA device asks whether the device is CUDA's: it stays.
        Example('import torch\nif device == torch.device("cuda"):\n    print("on CUDA")\n'),
        Example('import torch\nif device.type == torch.device("cuda").type:\n    print("on CUDA")\n'),
        # ... as does a name for it that the module compares with another (a test's device list).
        Example('import torch\ncpu, gpu = torch.device("cpu"), torch.device("cuda")\n\n\ndef test_x(device):\n'
                '    if device == gpu and not torch.cuda.is_available():\n        return\n'),
    )

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        """Mark the CUDA strings given where a device is expected."""
        func = node.func
        names = m.qnames(func)
        if "torch.device" in names and _compared(m, node):
            m.skip_region(node, CUDA_QUERY, "a comparison with a CUDA device asks whether the device is CUDA's: "
                                            "the runtime's device would answer yes on the CPU or MPS too")
            return
        if "torch.device" in names and (label := _bound_label(m, node, m.store(self))) is not None:
            m.skip_region(node, CUDA_QUERY, f"`{label}` is compared with other devices (`device == {label}`): it "
                                            "names CUDA's device, and the runtime's would equal the CPU's there")
            return
        if names & _DEVICE_FIRST:
            args = node.args
            if names & {"torch.device"} and len(args) == 2 and args[0].keyword is None \
                    and string_value(args[0].value) == "cuda":
                m.store(self).setdefault("pairs", set()).add(id(node))
            elif args and args[0].keyword is None and not is_index(args[0].value):
                m.set_context(args[0].value, "device", self.code)
            if args and args[0].keyword is None or "torch.device" in names:
                return  # else `torch.Generator(device="cuda")`: its keyword, below
        is_to = isinstance(func, cst.Attribute) and func.attr.value == "to"
        torch_call = any(n.startswith("torch.") for n in names)
        for index, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword else None
            if ((keyword is None and is_to and index == 0)
                    or (keyword in ("device", "map_location") and (torch_call or is_to))
                    or (keyword is None and index == 1 and "torch.load" in names)):
                m.set_context(arg.value, "device", self.code)

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``torch.device("cuda", i)`` -> ``tp.device(i)``; ``torch.device(tp.device(x))`` -> ``tp.device(x)``."""
        if runtime_string(original):
            return super().leave_Call(m, original, updated)
        if not m.has_qname(original.func, "torch.device"):
            return None
        if id(original) in m.store(self).get("pairs", ()):
            m.mark_handled(original.args[0].value)
            if not m.apply(self.code, original):
                return None
            return device_call(m, "device", [updated.args[1].value])
        if len(updated.args) == 1 and updated.args[0].keyword is None:
            inner = updated.args[0].value
            name = m.runtime_call_name(inner)
            if name in _AS_DEVICE and m.runtime_call_name(original.args[0].value) is None:
                assert isinstance(inner, cst.Call)
                return m.runtime_call(_AS_DEVICE[name], [a.value for a in inner.args])
        return None


class DeviceString(_StringRule):
    code = "TP003"
    moves_data = True
    name = "device-string"
    summary = ("A CUDA device spec kept as a str (a device setting, default or argument) becomes the runtime "
               "device's str.")
    before, after = 'device = "cuda"', "device = tp.device_str()"
    triggers = (r"cuda", r"\bdevice\(\s*\w+\.\w+\s*\)")  # the second: `torch.device(args.device)`
    examples = (
        Example('device = "cuda"\n', "device = tp.device_str()\n"),
        Example('def build(device="cuda:0"):\n    pass\n', "def build(device=tp.device_str(0)):\n    pass\n"),
        # A default no call can reach: a private function whose every call passes the device.
        Example('def _fill(n, device="cuda"):\n    return n\n\n\nx = _fill(2, device=d)\n'),
        # A function that dispatches on the string itself.
        Example('def dtype(device="cuda"):\n    if device == "cpu":\n        return 1\n'
                '    assert device == "cuda"\n    return 2\n'),
        # The setting a lookup falls back to (self-critical's `eval_split`).
        Example("def eval_split(model, x, kw):\n    device = kw.get('device', 'cuda')\n"
                "    return model(x.to(device))\n",
                "def eval_split(model, x, kw):\n    device = kw.get('device', tp.device_str())\n"
                "    return model(x.to(device))\n"),
        Example('import torch\nconfig = {"device": "cuda", "lr": 1e-3}\n',
                'import torch\nconfig = {"device": tp.device_str(), "lr": 1e-3}\n'),
        # A --device option that the module makes a device: the option stays its setting, mapped where used.
        Example("import argparse\nimport torch\n\n\ndef get_args_parser():\n    parser = argparse.ArgumentParser()\n"
                "    parser.add_argument('--device', default='cuda')\n    return parser\n\n\ndef main(args):\n"
                "    return torch.device(args.device)\n",
                "import argparse\nimport torch\n\n\ndef get_args_parser():\n    parser = argparse.ArgumentParser()\n"
                "    parser.add_argument('--device', default='cuda')\n    return parser\n\n\ndef main(args):\n"
                "    return torch.device(tp.device(args.device))\n"),
        # The same where a function above the parser makes the device (opacus's imdb.py).
        Example("import argparse\nimport torch\n\n\ndef train(args):\n    return torch.device(args.device)\n\n\n"
                "parser = argparse.ArgumentParser()\nparser.add_argument('--device', default='cuda')\n",
                "import argparse\nimport torch\n\n\ndef train(args):\n    return torch.device(tp.device(args.device))\n"
                "\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--device', default='cuda')\n"),
        # ... but an option also read as it is (`.to(args.device)`, SASRec) is a setting the port must change.
        Example("import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--device', default='cuda')\nargs = parser.parse_args()\n"
                "state = torch.load('m.pt', map_location=torch.device(args.device))\n"
                "x = torch.ones(2).to(args.device)\n",
                "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--device', default=tp.device_str())\nargs = parser.parse_args()\n"
                "state = torch.load('m.pt', map_location=torch.device(args.device))\n"
                "x = torch.ones(2).to(args.device)\n"),
        # ... and so is one handed to another module's function, which may read it as it is (PointTAD's
        # `build_model(args)`, whose module makes `torch.device(args.device)` too).
        Example("import argparse\nimport torch\nfrom models import build_model\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--device', default='cuda')\nargs = parser.parse_args()\n"
                "device = torch.device(args.device)\nmodel = build_model(args).to(device)\n",
                "import argparse\nimport torch\nfrom models import build_model\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--device', default=tp.device_str())\nargs = parser.parse_args()\n"
                "device = torch.device(args.device)\nmodel = build_model(args).to(device)\n"),
        # A CUDA device string whatever its name, where the module places data with that name (GCNII's `cudaid`).
        Example('import torch\ncudaid = "cuda:" + str(args.dev)\nx = torch.ones(2).to(torch.device(cudaid))\n',
                'import torch\ncudaid = tp.device_str("cuda:" + str(args.dev))\n'
                'x = torch.ones(2).to(torch.device(cudaid))\n'),
        Example('def test_kwargs():\n    assert build(args) == {"device_map": "cuda"}\n'),
        Example('def test_offload_id(pipe):\n    pipe.enable_model_cpu_offload(gpu_id=5, device="cuda")\n'),
        # Labels are not devices.
        Example('import enum\n\n\nclass Backend(enum.Enum):\n    CUDA = "cuda"\n'),
        Example('KERNELS = {"cuda": 1, "cpu": 2}\n'),
        Example('CONFIG = {"cuda": {"backend": "nccl", "device": "cuda"}, "xpu": {"backend": "xccl"}}\n'),
        Example('from typing import Literal\n\nDevice = Literal["cpu", "cuda"]\n'),
        # nnU-Net's -device: the module maps the types it names, MPS included, itself; only its default moves
        Example("import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('-device', default='cuda')\nargs = parser.parse_args()\n"
                "assert args.device in ['cpu', 'cuda', 'mps']\n"
                "device = torch.device('mps') if args.device == 'mps' else torch.device(args.device)\n",
                "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('-device', default=tp.device_type())\nargs = parser.parse_args()\n"
                "assert args.device in ['cpu', 'cuda', 'mps']\n"
                "device = torch.device('mps') if args.device == 'mps' else torch.device(args.device)\n"),
    )

    def leave_SimpleString(self, m: Migrator, original: cst.SimpleString,
                           updated: cst.SimpleString) -> cst.BaseExpression | None:
        done = super().leave_SimpleString(m, original, updated)
        if done is not None and len(m.ancestors) > 2 and isinstance(m.ancestors[1], cst.SimpleStatementLine) \
                and isinstance(m.ancestors[2], cst.Assign):
            m.fact("choices", original)  # FCOS's `_C.MODEL.DEVICE = "cuda"`: set on import, read where data goes
        return done

    def _chosen_among(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        """nnU-Net's ``parser.add_argument('-device', default='cuda')``, whose value the module itself turns into a
        device among the types it names, MPS included (``assert args.device in ['cpu', 'cuda', 'mps']``, ``if
        args.device == 'cpu': ... elif args.device == 'cuda': ... else: torch.device('mps')``): the default
        becomes the runtime's device type, the one choice the module then makes (``"cuda"`` on CUDA, as before);
        the module's other CUDA code stays its own. None where this is no such option."""
        from torchport.codemods.guards import OWN_MPS_HOLD

        if m.hold != OWN_MPS_HOLD or m.syntax is None or not (
                isinstance(original.func, cst.Attribute) and original.func.attr.value == "add_argument"):
            return None
        at = next((i for i, a in enumerate(original.args) if a.keyword is not None and a.keyword.value == "default"),
                  None)
        if at is None or string_value(original.args[at].value) != "cuda":
            return None
        names = [string_value(a.value) for a in original.args if a.keyword is None]
        dests = {n.lstrip("-").replace("-", "_") for n in names if n and n.startswith("-")}
        # no second choice: the module's own takes the runtime's pick
        if not dests & _options_compared_with_mps(m.syntax) or not m.apply(self.code, original.args[at].value,
                                                                             held_choice=True):
            return None
        return updated.with_changes(args=[a.with_changes(value=m.runtime_call("device_type", [])) if i == at else a
                                          for i, a in enumerate(updated.args)])

    def _maps_where_used(self, m: Migrator, call: cst.Call) -> bool:
        """``parser.add_argument("--device", default="cuda")`` whose value the module turns into a device with
        ``torch.device(args.device)``: parsed arguments travel (a launcher pickles them to GPU nodes, a config
        file keeps them), so the default stays the setting it was and the port maps it where it is used."""
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument") or m.syntax is None:
            return False
        names = [string_value(a.value) for a in call.args if a.keyword is None or a.keyword.value == "dest"]
        dests = {n.lstrip("-").replace("-", "_") for n in names if n and n.startswith("--")} | {
            string_value(a.value) for a in call.args if a.keyword is not None and a.keyword.value == "dest"}
        store = m.store(self)
        if "consumed" not in store:
            store["consumed"] = _options_made_devices(m)
        found = dests & store["consumed"]
        store.setdefault("mapped", set()).update(found)
        return bool(found)

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        if (chosen := self._chosen_among(m, original, updated)) is not None:
            return chosen
        store = m.store(self)
        if "ahead" not in store:  # `torch.device(args.device)` in a function above the parser's `add_argument`
            options = _cuda_device_options(m.syntax) if m.syntax and "add_argument" in m.source else set()
            store["ahead"] = options & _options_made_devices(m) if options else set()
        mapped = store.get("mapped", set()) | store["ahead"]
        if mapped and m.has_qname(original.func, "torch.device") and len(updated.args) == 1 \
                and updated.args[0].keyword is None and isinstance(updated.args[0].value, cst.Attribute) \
                and updated.args[0].value.attr.value in mapped and m.apply(self.code, original):
            return updated.with_changes(args=[updated.args[0].with_changes(
                value=m.runtime_call("device", [updated.args[0].value]))])
        return super().leave_Call(m, original, updated)

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        names = [_target_name(t.target) for t in node.targets]
        for target, name in zip(node.targets, names):
            if isinstance(target.target, cst.Attribute | cst.Subscript):
                _dispatched(m, name, node.value)
        if not any(n.endswith("type") for n in names) and (any(DEVICE_WORD.search(n) for n in names) or (
                runtime_string(node.value) and names[0] in _placing_names(m, self))):
            m.set_context(node.value, "str", self.code)
            if (fallback := _lookup_default(node.value)) is not None and any(DEVICE_WORD.search(n) for n in names):
                m.set_context(fallback, "str", self.code)  # `device = kwargs.get('device', 'cuda')`
        elif is_cuda_literal(node.value) and len(names) == 1 and names[0].isidentifier() and _only_said(m, names[0]):
            m.handled.add(id(node.value))  # `backend_name = "cuda"` only logged or printed: a label

    def visit_AnnAssign(self, m: Migrator, node: cst.AnnAssign) -> None:
        name = _target_name(node.target)
        if node.value is not None and not name.endswith("type") and DEVICE_WORD.search(name):
            m.set_context(node.value, "str", self.code)

    def visit_FunctionDef(self, m: Migrator, node: cst.FunctionDef) -> None:
        """A default whose rewrite would change nothing (see `_defaults`) stays as written, whatever rule
        would rewrite it; the TP110 note says why."""
        defaults = [(p.name.value, p.default) for p in (*node.params.posonly_params, *node.params.params,
                                                         *node.params.kwonly_params)
                    if p.default is not None and "cuda" in _EMPTY.code_for_node(p.default)]
        if not defaults or m.syntax is None:
            return
        store = m.store(self)
        if "unreachable" not in store:
            store["unreachable"] = unreachable_defaults(m.syntax)
            store["methods"] = unreachable_method_defaults(m.syntax)
            store["option"] = script_device_option(m.syntax, _is_device_name)
        kinds = [type(a) for a in m.ancestors[-4:-1]]
        top = kinds[-1:] == [cst.Module]
        method = kinds == [cst.Module, cst.ClassDef, cst.IndentedBlock]
        unreachable = store["unreachable"].get(node.name.value, ()) if top else ()
        if method:
            owner = m.ancestors[-3]
            assert isinstance(owner, cst.ClassDef)
            unreachable = store["methods"].get((owner.name.value, node.name.value), ())
        dispatching = dispatching_parameters(_function_tree(node))
        what = ("private method" if method else "private function" if node.name.value.startswith("_")
                else "script function")
        if what == "script function" and IMPORTED in m.gates:
            unreachable = ()  # another module imports the script: its calls may leave the default
        for name, default in defaults:
            if name in unreachable:
                why = f"a default no call reaches: every call of this {what} passes `{name}`"
                if what == "script function":
                    m.fact("script_defaults", default)  # the project pass asks whether other modules import it
            elif store["option"] and (top or method) and _is_device_name(name):
                why = "this script passes its own --device option along; its defaults are fallbacks it does not use"
            elif name in dispatching:
                why = f'this function compares `{name}` with "cuda" and another device type itself'
            else:
                continue
            m.skip_region(default, CUDA_SETTING, why)

    def visit_IndentedBlock(self, m: Migrator, node: cst.IndentedBlock) -> None:
        _skip_dead_stores(m, node.body)

    def visit_Module(self, m: Migrator, node: cst.Module) -> None:
        _skip_dead_stores(m, node.body)

    def visit_Param(self, m: Migrator, node: cst.Param) -> None:
        if node.default is not None and DEVICE_WORD.search(node.name.value) and not node.name.value.endswith("type"):
            m.set_context(node.default, "str", self.code)

    def visit_Return(self, m: Migrator, node: cst.Return) -> None:
        function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
        if node.value is not None and function is not None and DEVICE_WORD.search(function.name.value):
            m.set_context(node.value, "str", self.code)

    def visit_DictElement(self, m: Migrator, node: cst.DictElement) -> None:
        key = string_value(node.key)
        compared = any(isinstance(a, cst.Comparison) for a in m.ancestors)
        if key is not None:
            _dispatched(m, key, node.value)
        if key is not None and DEVICE_WORD.search(key) and not key.endswith("type") and not compared:
            m.set_context(node.value, "str", self.code)
        elif compared and is_cuda_literal(node.value):
            m.mark_handled(node.value)  # `assert f(args) == {"device": "cuda"}`: data a test expects back
        if is_cuda_literal(node.key):
            m.mark_handled(node.key)  # a key naming a backend is a label
            m.skip_region(node.value, CUDA_SETTING, 'the value under a "cuda" key is the setting for CUDA alone')

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        torch_call = m.qname_startswith(node.func, "torch.")
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "default" and not _names_a_device(node):
                continue
            if keyword == "default" and is_cuda_literal(arg.value) and self._maps_where_used(m, node):
                m.mark_handled(arg.value)  # the option stays "cuda"; `torch.device(args.device)` maps it
                continue
            if keyword is not None and not torch_call:
                _dispatched(m, keyword, arg.value)
            if keyword in _STRING_KEYWORDS and not (keyword in ("device", "map_location") and torch_call):
                if (id(arg.value) not in m.contexts) \
                        and not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "to") \
                        and not (not torch_call and _in_test(m)):
                    m.set_context(arg.value, "str", self.code)
            elif keyword == "choices":
                m.keep_literals(arg.value)

    def visit_Subscript(self, m: Migrator, node: cst.Subscript) -> None:
        if m.qnames(node.value) & {"typing.Literal", "typing_extensions.Literal"}:
            for element in node.slice:
                if isinstance(element.slice, cst.Index):
                    m.mark_handled(element.slice.value)  # `Literal["cpu", "cuda"]` names labels

    def visit_ClassDef(self, m: Migrator, node: cst.ClassDef) -> None:
        if any("Enum" in (cst.Module([]).code_for_node(b.value)) for b in node.bases):
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            for statement in body:
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                            m.mark_handled(small.value)  # an enum member's value is a label


_EMPTY = cst.Module([])


def _single_store(statement: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """``name = value`` alone on its line: (name, value)."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            return small.targets[0].target.value, small.value
    return None


def _only_device_uses(function: cst.FunctionDef, name: str, store: cst.Assign | None,
                      module: Mapping[str, cst.FunctionDef] | None = None) -> bool:
    """Whether every read of ``name`` in ``function`` (nested functions too), apart from ``store``, is a
    device argument: ``.to(name)`` or ``device=name``, or, with ``module`` (its functions by name), an argument
    of a call of one of them whose parameter is used only so (``build(3, name)`` with ``def build(n, device)``
    that reads ``device`` only in ``device=device``); and there is one."""
    reads, device_reads = _device_uses(function, name, store, module)
    return reads > 0 and reads == device_reads


def _device_uses(function: cst.FunctionDef | cst.Module, name: str, store: cst.Assign | None,
                 module: Mapping[str, cst.FunctionDef] | None = None) -> tuple[int, int]:
    """``(reads of name, those that are device arguments)`` in ``function`` (or a whole module), as
    `_only_device_uses` counts."""
    allowed = set()
    inside = {id(n) for n in matchers.findall(store, matchers.Name(name))} if store is not None else set()
    for call in matchers.findall(function, matchers.Call()):
        assert isinstance(call, cst.Call)
        callee = module.get(call.func.value) if module and isinstance(call.func, cst.Name) else None
        for index, arg in enumerate(call.args):
            if callee is not None:  # a function of this module: how it uses the parameter decides
                parameter = _parameter(callee, index, arg) if callee is not function and not arg.star else None
                if isinstance(arg.value, cst.Name) and arg.value.value == name and parameter is not None \
                        and _only_device_uses(callee, parameter, None):
                    allowed.add(id(arg.value))
            elif (arg.keyword is not None and arg.keyword.value == "device") or (
                    index == 0 and arg.keyword is None and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value in ("to", "set_device")):
                allowed.add(id(arg.value))
    reads = [n for n in _name_reads(function.body if isinstance(function, cst.FunctionDef) else function, name)
             if id(n) not in inside]
    return len(reads), sum(id(n) in allowed for n in reads)


def _index_uses(m: Migrator, function: cst.FunctionDef, name: str, methods: Mapping[str, cst.FunctionDef],
                depth: int = 0) -> tuple[int, int]:
    """``(reads of name, those where a device goes)`` in ``function``, for a name that holds an int: the first
    argument of ``.to()`` or ``.cuda()``, ``device=`` of ``.to()`` or of a torch call, the argument of
    ``torch.device()``, or an argument of a module function or of a method of this class (``self.<method>``, see
    `_class_methods`) whose parameter is read only so. Stricter than `_device_uses`: ``device=`` of another
    library's call may be read as a number there."""
    allowed = set()
    functions = _module_functions(m) if depth == 0 else {}
    for call in matchers.findall(function, matchers.Call()):
        assert isinstance(call, cst.Call)
        func = call.func
        callee, shift = None, 0
        if isinstance(func, cst.Name):
            callee = functions.get(func.value)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self" \
                and depth == 0:
            callee, shift = methods.get(func.attr.value), 1
        torch_call = any(n.startswith("torch.") for n in qualify(chain(func) or "", m.imports))
        attr = func.attr.value if isinstance(func, cst.Attribute) else None
        for index, arg in enumerate(call.args):
            if not (isinstance(arg.value, cst.Name) and arg.value.value == name):
                continue
            keyword = arg.keyword.value if arg.keyword else None
            if callee is not None and callee is not function and not arg.star:
                parameter = _parameter(callee, index + shift, arg)
                if parameter is not None:
                    used, as_device = _index_uses(m, callee, parameter, methods, depth + 1)
                    if used and used == as_device:
                        allowed.add(id(arg.value))
            elif arg.star:
                continue
            elif (keyword is None and index == 0 and attr in ("to", "cuda")) \
                    or (keyword == "device" and (torch_call or attr == "to")) \
                    or (keyword is None and len(call.args) == 1 and "torch.device" in qualify(chain(func) or "",
                                                                                         m.imports)):
                allowed.add(id(arg.value))
    stores = {id(t.target) for t in matchers.findall(function.body, matchers.AssignTarget(target=matchers.Name(name)))
              if isinstance(t, cst.AssignTarget)}
    reads = [n for n in _name_reads(function.body, name) if id(n) not in stores]
    return len(reads), sum(id(n) in allowed for n in reads)


def _class_methods(m: Migrator) -> dict[str, cst.FunctionDef]:
    """The methods ``self.<name>(...)`` calls in the class being visited: its own and those of its bases in this
    module, each undecorated and defined by no other class of the module (an override would take its place)."""
    owner = next((a for a in reversed(m.ancestors) if isinstance(a, cst.ClassDef)), None)
    module = m.ancestors[0] if m.ancestors and isinstance(m.ancestors[0], cst.Module) else None
    if owner is None or module is None:
        return {}
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    defined: dict[str, list[cst.FunctionDef]] = {}
    for cls in classes.values():
        for item in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(item, cst.FunctionDef):
                defined.setdefault(item.name.value, []).append(item)
    found: dict[str, cst.FunctionDef] = {}
    todo, seen = [owner], set()
    while todo:
        cls = todo.pop()
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        for item in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(item, cst.FunctionDef) and not item.decorators and len(defined[item.name.value]) == 1:
                found.setdefault(item.name.value, item)
        todo += [classes[b.value.value] for b in cls.bases
                 if isinstance(b.value, cst.Name) and b.value.value in classes]
    return found


def _parameter(function: cst.FunctionDef, index: int, arg: cst.Arg) -> str | None:
    """The name of the parameter of ``function`` that argument ``arg`` (the ``index``-th) binds, else None."""
    if arg.keyword is not None:
        names = [p.name.value for p in (*function.params.params, *function.params.kwonly_params)]
        return arg.keyword.value if arg.keyword.value in names else None
    positional = [*function.params.posonly_params, *function.params.params]
    return positional[index].name.value if index < len(positional) else None


def _module_functions(m: Migrator) -> dict[str, cst.FunctionDef]:
    """The module's top-level functions by name; a name defined twice, or a decorated function (its decorator
    may change what it is called with), is left out."""
    module = m.ancestors[0] if m.ancestors and isinstance(m.ancestors[0], cst.Module) else None
    found: dict[str, cst.FunctionDef] = {}
    twice: set[str] = set()
    for statement in module.body if module is not None else ():
        if isinstance(statement, cst.FunctionDef):
            name = statement.name.value
            if name in found:
                twice.add(name)
            found[name] = statement
    return {name: f for name, f in found.items() if name not in twice and not f.decorators}


def _in_test(m: Migrator) -> bool:
    """Inside a test function (``def test_...``): a device string it gives a library call (not torch's) is
    what the test checks, e.g. ``enable_model_cpu_offload(gpu_id=5, device="cuda")`` that runs on CPU."""
    return any(isinstance(a, cst.FunctionDef) and a.name.value.startswith("test") for a in m.ancestors)


def _name_reads(node: cst.CSTNode, name: str) -> list[cst.CSTNode]:
    """The reads of variable ``name`` in ``node`` (an attribute or keyword of that name is not a read)."""
    found = matchers.findall(node, matchers.Attribute() | matchers.Arg())
    names = {id(a.attr) for a in found if isinstance(a, cst.Attribute)}
    names |= {id(a.keyword) for a in found if isinstance(a, cst.Arg) and a.keyword}
    return [n for n in matchers.findall(node, matchers.Name(name)) if id(n) not in names]


def _skip_dead_stores(m: Migrator, body: Sequence[cst.BaseStatement]) -> None:
    """``device = torch.device("cuda" if a else "cpu")`` right before ``device = ...`` that does not read it:
    the first value is never used, so rewriting it would change nothing."""
    for first, second in zip(body, body[1:]):
        store, again = _single_store(first), _single_store(second)
        if store is not None and again is not None and store[0] == again[0] \
                and "cuda" in _EMPTY.code_for_node(store[1]) \
                and not _name_reads(again[1], store[0]):
            m.skip_region(store[1], DEAD_STORE, f"a dead store: the next line assigns `{store[0]}` again")


def _is_device_name(name: str) -> bool:
    return bool(DEVICE_WORD.search(name)) and not name.endswith("type")


def _function_tree(node: cst.FunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """CPython's tree of one function (decorators dropped: they may not parse on their own)."""
    parsed = ast.parse(_EMPTY.code_for_node(node.with_changes(decorators=())))
    function = parsed.body[0]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    return function


def _placing_names(m: Migrator, rule: Rule) -> set[str]:
    """The names the module places data with (``torch.device(cudaid)``, ``.to(cudaid)``, ``device=cudaid``): a CUDA
    device string with an index built at run time and bound to one (GCNII's ``cudaid = "cuda:" + str(args.dev)``) is
    a device, whatever its name (a plain ``"cuda"`` may be a label: it is reported)."""
    store = m.store(rule)
    if "placing" not in store:
        found: set[str] = set()
        for node in ast.walk(m.syntax) if m.syntax is not None else ():
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in ("to", "device") and node.args \
                        and isinstance(node.args[0], ast.Name):
                    found.add(node.args[0].id)
                found.update(k.value.id for k in node.keywords if k.arg in ("device", "map_location")
                             and isinstance(k.value, ast.Name))
        store["placing"] = found
    return store["placing"]


def _options_made_devices(m: Migrator) -> set[str]:
    """The attribute names ``x`` of every ``torch.device(<something>.x)`` in the module (CPython's tree), also as
    the port writes it, ``torch.device(tp.device(<something>.x))``, where the module reads ``.x`` nowhere else and
    hands ``<something>`` to no other module's function: an option also read as it is (``.to(args.device)``,
    SASRec), here or there, would keep CUDA there, so its default is ported."""
    assert m.syntax is not None
    torch_names = {name for name, full in m.imports.items() if "torch" in full} | {"torch"}
    found: set[str] = set()
    mapped: set[int] = set()
    for node in ast.walk(m.syntax):
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.func, ast.Attribute) and node.func.attr == "device" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in torch_names:
            arg = node.args[0]
            if isinstance(arg, ast.Call) and len(arg.args) == 1 and isinstance(arg.func, ast.Attribute) \
                    and arg.func.attr == "device":
                arg = arg.args[0]
            if isinstance(arg, ast.Attribute):
                found.add(arg.attr)
                mapped.add(id(arg))
    called = {id(node.func) for node in ast.walk(m.syntax) if isinstance(node, ast.Call)}  # `torch.device` itself
    found -= {node.attr for node in ast.walk(m.syntax) if isinstance(node, ast.Attribute)
              and node.attr in found and isinstance(node.ctx, ast.Load) and id(node) not in mapped | called}
    # PointTAD's `build_model(args)`: the options handed to another module's function may be read there as they are
    # (`torch.device(args.device)` in models/pointtad.py, which never names CUDA): their defaults are ported
    holders = {ast.unparse(node.value) for node in ast.walk(m.syntax) if isinstance(node, ast.Attribute)
               and id(node) in mapped}
    for node in ast.walk(m.syntax) if found else ():
        if isinstance(node, ast.Call) and any(ast.unparse(a) in holders for a in node.args) and (
                head := node.func.id if isinstance(node.func, ast.Name) else node.func.value.id if isinstance(
                    node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) else None) is not None \
                and head in m.imports and head not in torch_names and "torch" not in m.imports[head]:
            return set()
    return found


def _cuda_device_options(tree: ast.Module) -> set[str]:
    """The ``dest`` of every ``add_argument("--device", default="cuda")`` in the module (CPython's tree): a device
    option whose default is a CUDA device."""
    return {name for name, default in option_defaults(tree) if CUDA_DEVICE_RE.match(default)
            and DEVICE_WORD.search(name)}


def _names_a_device(call: cst.Call) -> bool:
    """Whether an ``add_argument("--device", default=...)``-like call names a device option."""
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "dest":
            text = string_value(arg.value)
            if text is not None and DEVICE_WORD.search(text.lstrip("-").replace("-", "_")):
                return True
    return False


def _target_name(target: cst.BaseExpression) -> str:
    if isinstance(target, cst.Attribute):
        return target.attr.value
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        return string_value(target.slice[0].slice.value) or ""
    return ""


class DeviceTypeString(_StringRule):
    code = "TP004"
    moves_data = False
    places_data = True
    name = "device-type-string"
    summary = ('The device type "cuda" given as device_type= or assigned to a *type name becomes the runtime\'s '
               "device type.")
    before, after = 'device_type = "cuda"', "device_type = tp.device_type()"
    triggers = (r"cuda",)
    examples = (
        Example('device_type = "cuda"\n', "device_type = tp.device_type()\n"),
        Example('y = run(x, device_type="cuda")\n', "y = run(x, device_type=tp.device_type())\n"),
    )

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        if any(_target_name(t.target).endswith("device_type") for t in node.targets):
            m.set_context(node.value, "type", self.code)

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device_type" and id(arg.value) not in m.contexts \
                    and not _dispatches_on_type(m, node.func):
                m.set_context(arg.value, "type", self.code)


def _dispatches_on_type(m: Migrator, func: cst.BaseExpression) -> bool:
    """Whether the module defines a function of the name called (torch-interpol's fallback ``custom_fwd``, defined
    where ``torch.amp`` lacks one) that compares its ``device_type`` with a device type: it knows the types it
    names alone (``'cuda'``, ``'cpu'``), and the runtime's ``'mps'`` would take none of its branches."""
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    if name is None or m.syntax is None or f"def {name}" not in m.source:
        return False
    return any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name and any(
        isinstance(c, ast.Compare) and any(isinstance(n, ast.Name) and n.id == "device_type" for n in (
            c.left, *c.comparators)) and any(isinstance(n, ast.Constant) and n.value == "cuda"
                                             for n in (c.left, *c.comparators)) for c in ast.walk(f))
        for f in ast.walk(m.syntax))


def _is_device_call(m: Migrator, node: cst.CSTNode, kinds: frozenset[str]) -> bool:
    """``torch.device("<kind>")`` for one of ``kinds``."""
    if not (isinstance(node, cst.Call) and m.has_qname(node.func, "torch.device") and node.args):
        return False
    first = node.args[0].value
    value = string_value(first)
    if value is None:
        return "cuda" in kinds and is_device_string(first)
    return value.split(":")[0] in kinds


def _branch_kind(m: Migrator, node: cst.BaseExpression) -> str | None:
    """"cuda", "other" (mps/xpu), "cpu" or "idiom" for a branch of the availability idiom."""
    if is_device_string(node) or _is_device_call(m, node, frozenset({"cuda"})):
        return "cuda"
    if string_value(node) in _OTHER_ACCELERATORS or _is_device_call(m, node, _OTHER_ACCELERATORS):
        return "other"
    if string_value(node) == "cpu" or _is_device_call(m, node, frozenset({"cpu"})):
        return "cpu"
    if isinstance(node, cst.IfExp) and _idiom_shape(m, node) is not None:
        return "idiom"
    return None


def _idiom_flag(m: Migrator, node: cst.IfExp) -> cst.BaseExpression | None:
    """``args.cuda`` of an idiom tested with ``torch.cuda.is_available() and args.cuda`` (either order; a name or a
    chain of attributes of the program's own, not torch's: ``torch.version.cuda`` is a query; or a string key of
    one, ``config['cuda']``; or a test of those that calls nothing: RLsamp's ``args.ngpu > 0``, ``not
    args.no_cuda``), else None."""
    test = node.test
    if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)):
        return None
    for query, flag in ((test.left, test.right), (test.right, test.left)):
        if isinstance(query, cst.Call) and not query.args and m.qnames(query.func) & AVAILABILITY_TESTS \
                and _program_test(m, flag):
            return flag
    return None


def _program_test(m: Migrator, flag: cst.BaseExpression) -> bool:
    """Whether ``flag`` tests the program's own state and calls nothing: names or chains of attributes not torch's,
    string keys of them, constants, and ``not``, comparisons and ``and``/``or`` of those."""
    if isinstance(flag, cst.Subscript):  # `config['cuda']` (consistency_vqa's YAML options)
        return len(flag.slice) == 1 and isinstance(flag.slice[0].slice, cst.Index) and isinstance(
            flag.slice[0].slice.value, cst.SimpleString) and _program_test(m, flag.value)
    if isinstance(flag, (cst.Name, cst.Attribute)):
        return chain(flag) is not None and not any(name.startswith("torch.") for name in m.qnames(flag))
    if isinstance(flag, cst.UnaryOperation):
        return isinstance(flag.operator, cst.Not) and _program_test(m, flag.expression)
    if isinstance(flag, cst.Comparison):
        return _program_test(m, flag.left) and all(_program_test(m, c.comparator) for c in flag.comparisons)
    if isinstance(flag, cst.BooleanOperation):
        return _program_test(m, flag.left) and _program_test(m, flag.right)
    return isinstance(flag, (cst.Integer, cst.Float, cst.SimpleString))


def _idiom_shape(m: Migrator, node: cst.IfExp) -> tuple[bool, cst.BaseExpression | None, bool, bool] | None:
    """``(wants_device_object, cuda_index, names_cuda, names_other)`` for ``A if <available> else B``."""
    test = node.test
    if _idiom_flag(m, node) is not None:
        assert isinstance(test, cst.BooleanOperation)
        test = test.left if isinstance(test.left, cst.Call) else test.right
    if not (isinstance(test, cst.Call) and not test.args and m.qnames(test.func) & AVAILABILITY_TESTS):
        return None
    body, orelse = _branch_kind(m, node.body), _branch_kind(m, node.orelse)
    if body not in ("cuda", "other") or orelse not in ("cpu", "idiom", "cuda"):
        return None
    def made(branch: cst.BaseExpression) -> bool:  # `torch.device(...)`, not `"cuda:{}".format(gpu)`
        return isinstance(branch, cst.Call) and m.has_qname(branch.func, "torch.device")

    wants_object = made(node.body) or made(node.orelse)
    has_cuda = "cuda" in (body, orelse)
    has_other = body == "other"
    index = None
    for branch in (node.body, node.orelse):
        literal = branch.args[0].value if made(branch) and isinstance(branch, cst.Call) and branch.args else branch
        ok, idx = cuda_literal_index(literal)
        if ok and idx is not None and not isinstance(literal, cst.FormattedString):
            index = idx
        elif runtime_string(literal) or ok and idx is not None:
            # `"cuda:" + str(i)`, `f"cuda:{args.device}"`: the runtime is given the string the original built, which
            # holds whatever the field is (se3_diffusion's `--device` is a str: `"1"` alone would name no device)
            index = literal
    if orelse == "idiom":
        assert isinstance(node.orelse, cst.IfExp)
        nested = _idiom_shape(m, node.orelse)
        assert nested is not None
        wants_object = wants_object or nested[0]
        index = index if index is not None else nested[1]
        has_cuda = has_cuda or nested[2]
        has_other = has_other or nested[3]
    return wants_object, index, has_cuda, has_other


class AvailabilityIdiom(Rule):
    code = "TP005"
    moves_data = False
    places_data = True
    name = "availability-idiom"
    summary = '`"cuda" if torch.cuda.is_available() else "cpu"` becomes one runtime call.'
    before, after = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")', "tp.available_device()"
    names = torch_facts.named("available")
    examples = (
        Example('import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
                "import torch\ndevice = tp.available_device()\n"),
        Example('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n',
                "import torch\ndevice = tp.available_device_str()\n"),
        Example('import torch\ndevice = torch.device("cuda:" + str(i) if torch.cuda.is_available() else "cpu")\n',
                'import torch\ndevice = tp.available_device("cuda:" + str(i))\n'),
        # tgn's `--gpu`: the index of a string formatted at run time goes to the runtime, which still gives a str
        Example("import torch\nd = 'cuda:{}'.format(GPU) if torch.cuda.is_available() else 'cpu'\n",
                "import torch\nd = tp.available_device_str('cuda:{}'.format(GPU))\n"),
        # the program's own flag still decides (cleanrl's `--cuda`; RLsamp's `--ngpu`)
        Example('import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")\n',
                'import torch\ndevice = torch.device(tp.available_device_str() if args.cuda else "cpu")\n'),
        Example('import torch\nd = torch.device(f"cuda:{a.i}" if (torch.cuda.is_available() and a.n > 0) else "cpu")\n',
                'import torch\nd = torch.device(tp.available_device_str(f"cuda:{a.i}") if a.n > 0 else "cpu")\n'),
        # a test that calls something may ask CUDA itself (a free-memory probe): left alone
        Example('import torch\nd = "cuda" if torch.cuda.is_available() and gpu_free() else "cpu"\n'),
        # Already chooses among several backends: left alone.
        Example('import torch\nd = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() '
                'else "cpu"\n'),
    )

    def visit_IfExp(self, m: Migrator, node: cst.IfExp) -> bool:
        shape = _idiom_shape(m, node)
        if shape is None:
            return True
        if not shape[2] or shape[3]:  # no CUDA branch, or already picks MPS/XPU too
            for branch in (node.body, node.orelse):
                m.mark_handled(branch)
            m.skip_region(node, SEVERAL_BACKENDS if shape[3] else CUDA_ONLY)
            return True
        # the project needs CUDA-or-CPU here, or only such programs run it (the idiom already picks what the
        # runtime would): TP110 keeps it, with the reason
        if m.hold is not None or m.kept is not None:
            m.shared.held_idioms.add(id(node))
            return True
        m.shared.idioms[id(node)] = (shape[0], shape[1])
        return False  # the whole expression is replaced; its parts need no visit

    def leave_IfExp(self, m: Migrator, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression | None:
        idiom = m.shared.idioms.get(id(original))
        if idiom is None:
            return None
        wants_object, index = idiom
        kind = m.contexts.get(id(original), ("str", ""))[0]
        if not m.apply(self.code, original):
            return None
        m.fact("choices", original)
        # `available_*`: on CUDA the choice still asks torch.cuda.is_available(), as the original did
        flag = _idiom_flag(m, original)  # its other branch stays: a device object only where it was one
        if kind == "type":
            call = m.runtime_call("available_device_type", [])
        else:
            name = "available_device" if wants_object or (kind == "device" and flag is None) else "available_device_str"
            call = m.runtime_call(name, [index] if index is not None else [])
        if flag is not None:  # `"cuda" if torch.cuda.is_available() and args.cuda else "cpu"`: the flag still decides
            return updated.with_changes(test=flag.deep_clone(), body=call)
        return call


class IntegerDeviceId(Rule):
    code = "TP006"
    moves_data = True
    name = "integer-device-id"
    summary = ("An integer device id (a literal, a name like `local_rank`, `device_ids[0]`, "
               "`torch.cuda.current_device()`) where a device is expected becomes the runtime device with that index.")
    before, after = "model.to(local_rank)", "model.to(tp.device(local_rank))"
    triggers = (_INDEX_TRIGGER, r"current_device", r"\.to\(\s*\d", r"device\s*=\s*\d", r"get_device\(\)")
    replaces = False
    examples = (
        Example("# runs on CUDA\nmodel.to(args.local_rank)\n",
                "# runs on CUDA\nmodel.to(tp.device(args.local_rank))\n"),
        Example("# runs on CUDA\nimport torch\nx = torch.zeros(4, device=local_rank)\n",
                "# runs on CUDA\nimport torch\nx = torch.zeros(4, device=tp.device(local_rank))\n"),
        Example("import torch\nx = torch.ones(2, device=torch.cuda.current_device())\n",
                "import torch\nx = torch.ones(2, device=tp.device(torch.cuda.current_device()))\n"),
        Example("# runs on CUDA\nbatch = batch.to(device_ids[0])\n",
                "# runs on CUDA\nbatch = batch.to(tp.device(device_ids[0]))\n"),
        Example("# runs on CUDA\nimport torch\nd = torch.device(rank)\n",
                "# runs on CUDA\nimport torch\nd = tp.device(rank)\n"),
        Example("x.to(dtype)\n"),
        # a tensor's index: -1 on the CPU, which no device takes (radtts' `device=attn.get_device()`)
        Example("# runs on CUDA\nimport torch\nmask = torch.ones(2, device=attn.get_device())\n",
                "# runs on CUDA\nimport torch\nmask = torch.ones(2, device=tp.device(attn.get_device()))\n"),
        # Kept as an int: on CUDA a stored index must stay the int it was (`str(device)`, arithmetic).
        Example("import torch\ndevice = device or torch.cuda.current_device()\n"),
        # ... unless the function uses it only as a device.
        Example("import torch\n\n\ndef move(x, device=None):\n    device = device or torch.cuda.current_device()\n"
                "    return x.to(device=device)\n",
                "import torch\n\n\ndef move(x, device=None):\n"
                "    device = device or tp.device(torch.cuda.current_device())\n"
                "    return x.to(device=device)\n"),
        # ... or only as a device, and as an argument of a module function that uses it only as a device.
        Example("import torch\n\n\ndef build(n, device):\n    return torch.zeros(n, device=device)\n\n\n"
                "def main():\n    dev = torch.cuda.current_device()\n"
                "    return torch.ones(2, device=dev), build(3, dev)\n",
                "import torch\n\n\ndef build(n, device):\n    return torch.zeros(n, device=device)\n\n\n"
                "def main():\n    dev = tp.device(torch.cuda.current_device())\n"
                "    return torch.ones(2, device=dev), build(3, dev)\n"),
        # That function also reads it as a number: it stays the index it was.
        Example("import torch\n\n\ndef build(n, device):\n    print(device + 1)\n"
                "    return torch.zeros(n, device=device)\n\n\n"
                "def main():\n    dev = torch.cuda.current_device()\n"
                "    return torch.ones(2, device=dev), build(3, dev)\n"),
        # A file that never mentions CUDA or NCCL is left as it is (the id is reported).
        Example("model.to(args.local_rank)\n"),
        # A parameter with an int default, read only as a device: the default becomes the device (a caller's
        # value, `None` included, stays what it was) ...
        Example("# runs on CUDA\nmodel = model.to(0)\n\n\ndef to_ctx(data, ctx=0):\n"
                "    return {k: v.to(ctx) for k, v in data.items()}\n",
                "# runs on CUDA\nmodel = model.to(tp.device(0))\n\n\ndef to_ctx(data, ctx=tp.device(0)):\n"
                "    return {k: v.to(ctx) for k, v in data.items()}\n"),
        # ... as does a local bound only to int literals; one also read as a number is mapped where it is a device.
        Example("# runs on CUDA\ndef run(model, x):\n    ctx = 0\n    model = model.to(ctx)\n"
                "    return model(x.to(0)), ctx + 1\n",
                "# runs on CUDA\ndef run(model, x):\n    ctx = 0\n    model = model.to(tp.device(ctx))\n"
                "    return model(x.to(tp.device(0))), ctx + 1\n"),
        # A process's index, read only as a device, becomes its device (DDP's `rank % device_count()`).
        Example("import torch\n\n\ndef main(rank, model):\n    device = rank % torch.cuda.device_count()\n"
                "    torch.cuda.set_device(device)\n    return model.to(device)\n",
                "import torch\n\n\ndef main(rank, model):\n    device = tp.device(rank % torch.cuda.device_count())\n"
                "    torch.cuda.set_device(device)\n    return model.to(device)\n"),
        # ... at the top of a script too, where every read in the module is a device (deq-lm's train.py).
        Example("import torch\nimport torch.distributed as dist\n\nrank = dist.get_rank()\n"
                "device = rank % torch.cuda.device_count()\ntorch.cuda.set_device(device)\n"
                "model = model.to(device)\n",
                "import torch\nimport torch.distributed as dist\n\nrank = dist.get_rank()\n"
                "device = tp.device(rank % torch.cuda.device_count())\ntorch.cuda.set_device(device)\n"
                "model = model.to(device)\n"),
        # A parameter with an int default that is also read otherwise is reported: a caller may pass `None`.
        Example("import torch\n\n\ndef run(model, x, ctx=0):\n    torch.cuda.synchronize()\n    print(ctx + 1)\n"
                "    return model(x).to(ctx)\n"),
    )

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        """``device = device or torch.cuda.current_device()`` in a function that uses ``device`` only as a
        device (``.to(device)``, ``device=device``): the stored index may become the device itself. Stored as an
        attribute named a device (Info-HCVAE's ``args.device = torch.cuda.current_device()``, read where this module
        cannot see), the index stays CUDA's: off CUDA ``tp.current_device()`` gives 0, which names no device there
        (``.to(0)`` fails later), so the call is left failing where it did."""
        if len(node.targets) == 1 and isinstance(target := node.targets[0].target, cst.Attribute) and \
                DEVICE_WORD.search(target.attr.value) and is_current_device_call(m, node.value):
            m.skip_region(node.value, HALF_PORT, f"`{_EMPTY.code_for_node(target)}` holds a CUDA index that other "
                          "code uses as a device: off CUDA an index names no device")
            return
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        value = node.value  # the call itself, or `device or torch.cuda.current_device()`, or `rank % device_count()`
        operands = [value.left, value.right] if isinstance(value, cst.BooleanOperation) else [value]
        if not any(is_current_device_call(m, c) or is_rank_index(m, c) for c in operands):
            return
        function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
        name = node.targets[0].target.value
        # at the top of a script, a process's index (deq-lm's `device = rank % torch.cuda.device_count()`) read
        # anywhere in the module only as a device
        scope: cst.FunctionDef | cst.Module | None = function if function is not None else m.ancestors[0] \
            if is_rank_index(m, value) and isinstance(m.ancestors[0], cst.Module) else None
        if scope is None:
            return
        reads, device_reads = _device_uses(scope, name, node, _module_functions(m))
        if reads and reads == device_reads:
            m.store(self).setdefault("stored", set()).add(id(node))
        elif device_reads and not m.in_skipped_region:
            m.report(self.code, node.value, f"`{name}` stays the CUDA index it is given: it is also used as a number, "
                     f"and as a device (`device={name}` means cuda:N off CUDA too); pass `tp.device({name})` where a "
                     "device is meant")

    def leave_Assign(self, m: Migrator, original: cst.Assign, updated: cst.Assign) -> cst.Assign | None:
        if id(original) in m.store(self).get("int_stores", ()):  # `ctx = 0`, read only as a device
            if not m.apply(self.code, original.value):
                return None
            return updated.with_changes(value=m.runtime_call("device", [updated.value]))
        if id(original) not in m.store(self).get("stored", ()) or not m.apply(self.code, original.value):
            return None

        def wrap(new: cst.BaseExpression) -> cst.BaseExpression:
            current = m.runtime_call_name(new) == "current_device" or is_current_device_call(m, new)
            return m.runtime_call("device", [new]) if current else new

        value = updated.value
        if is_rank_index(m, original.value):  # the index of this process: its device
            return updated.with_changes(value=m.runtime_call("device", [value]))
        if isinstance(value, cst.BooleanOperation):
            return updated.with_changes(value=value.with_changes(left=wrap(value.left), right=wrap(value.right)))
        return updated.with_changes(value=wrap(value))

    def visit_FunctionDef(self, m: Migrator, node: cst.FunctionDef) -> None:
        """Names the function binds only to ints and reads as a device (`analysis.indices`): a parameter with an int
        default, a local bound only to int literals. Read only as a device, the int becomes the device where it is
        bound (``ctx=tp.device(0)``); a local also read otherwise is wrapped where it is a device; a parameter also
        read otherwise is reported (a caller may pass ``None``, where ``tp.device(None)`` is not ``None``)."""
        if m.syntax is None:
            return
        found = int_names(m.syntax).get(m.start(node).line)
        if found is None:
            return
        store = m.store(self)
        methods = _class_methods(m)
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            name = param.name.value
            if name in found.params and isinstance(param.default, cst.Integer):
                reads, device_reads = _index_uses(m, node, name, methods)
                if reads == device_reads:
                    store.setdefault("int_defaults", set()).add(id(param.default))
                else:
                    store.setdefault("int_params", set()).add((id(node), name))
        for name in found.local:
            reads, device_reads = _index_uses(m, node, name, methods)
            if reads == device_reads:
                for assign in matchers.findall(node, matchers.Assign(
                        targets=[matchers.AssignTarget(target=matchers.Name(name))], value=matchers.Integer())):
                    store.setdefault("int_stores", set()).add(id(assign))
            else:
                store.setdefault("int_locals", set()).add((id(node), name))

    def leave_Param(self, m: Migrator, original: cst.Param, updated: cst.Param) -> cst.Param | None:
        if original.default is None or id(original.default) not in m.store(self).get("int_defaults", ()):
            return None
        if updated.default is None or not m.apply(self.code, original.default):
            return None
        return updated.with_changes(default=m.runtime_call("device", [updated.default]))

    def _int_name(self, m: Migrator, node: cst.BaseExpression) -> str | None:
        """"local" for a read of a local bound only to ints, "param" for a parameter with an int default also read
        otherwise (see `visit_FunctionDef`), else None."""
        if not isinstance(node, cst.Name):
            return None
        store = m.store(self)
        for function in reversed(m.ancestors):
            if isinstance(function, cst.FunctionDef):
                if (id(function), node.value) in store.get("int_locals", ()):
                    return "local"
                if (id(function), node.value) in store.get("int_params", ()):
                    return "param"
        return None

    def _wrap(self, m: Migrator, original: cst.BaseExpression,
              updated: cst.BaseExpression) -> cst.BaseExpression | None:
        kind = self._int_name(m, original)
        if kind == "param" and isinstance(original, cst.Name):
            m.mark_handled(original)
            if not m.in_skipped_region:
                m.report(self.code, original, f"`{original.value}` has an int default, which means a CUDA device "
                         "here (cuda:N off CUDA too), and is also read otherwise; pass "
                         f"`tp.device({original.value})` where a device is meant (a caller's `None` must stay `None`)")
            return None
        if not (kind == "local" or is_index(original) or is_current_device_call(m, original)):
            return None
        if isinstance(original, cst.Name) and _may_be_none(m, original):
            m.mark_handled(original)
            if not m.in_skipped_region:
                m.report(self.code, original, f"`{original.value}` may be None here, where `.to(None)` moves "
                         f"nothing and `tp.device(None)` is the picked device; pass `tp.device({original.value})` "
                         "where it is an index")
            return None
        if m.runtime_call_name(updated) in ("device", "nth_device") or not m.apply(self.code, original):
            return None
        return device_call(m, "device", [updated])

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        func = original.func
        names = m.qnames(func)
        is_to = isinstance(func, cst.Attribute) and func.attr.value == "to"
        if "torch.device" in names and len(updated.args) == 1 and updated.args[0].keyword is None:
            wrapped = self._wrap(m, original.args[0].value, updated.args[0].value)
            return wrapped  # `torch.device(rank)` is the device itself
        torch_call = any(n.startswith("torch.") for n in names)
        args, changed = [], False
        for index, (old, arg) in enumerate(zip(original.args, updated.args)):
            keyword = arg.keyword.value if arg.keyword else None
            if (is_to and keyword is None and index == 0) or (keyword == "device" and (torch_call or is_to)):
                wrapped = self._wrap(m, old.value, arg.value)
                if wrapped is not None:
                    arg, changed = arg.with_changes(value=wrapped), True
            args.append(arg)
        return updated.with_changes(args=args) if changed else None


def _may_be_none(m: Migrator, name: cst.Name) -> bool:
    """Whether ``name``, read where the rules are, may hold None there: a parameter of the enclosing function that
    defaults to None (`base.none_parameter`), or a name it assigns None, that the function never binds to anything
    else (``if gpu is None: gpu = 0``, ``gpu = gpu or 0``), outside the body of an ``if name is not None:`` (or
    ``if name:``, or the first arm of such a conditional expression) and the ``else`` of an ``if name is None:``
    (handwriting_line_generation's ``main(..., gpu=None)``, whose ``image.to(gpu)`` moves nothing in its CPU runs)."""
    function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
    if function is None:
        return False
    bound = matchers.findall(function, matchers.AssignTarget(target=matchers.Name(name.value))
                             | matchers.AugAssign(target=matchers.Name(name.value)))
    nones = matchers.findall(function, matchers.Assign(
        targets=[matchers.AssignTarget(target=matchers.Name(name.value))], value=matchers.Name("None")))
    if len(bound) > len(nones) or not (none_parameter(m, name) or nones or (
            m.syntax is not None and _given_none(m.syntax, function.name.value, name.value))):
        return False
    def holds(part: cst.CSTNode | None) -> bool:
        return part is not None and any(n is name for n in matchers.findall(part, matchers.Name(name.value)))

    for node in m.ancestors[m.ancestors.index(function):]:
        if isinstance(node, (cst.If, cst.IfExp)) and ((_not_none(node.test, name.value) and holds(node.body)) or (
                _is_none(node.test, name.value) and holds(node.orelse))):
            return False
    return True


def _given_none(tree: ast.Module, function: str, parameter: str) -> bool:
    """Whether a call of the module's function ``function`` gives its ``parameter`` a name that may be None where
    the call is: a parameter of the caller that defaults to None and that the caller never binds again, outside an
    ``if name is not None:`` (handwriting_line_generation's ``main(..., gpu=None)`` calls ``generate(...,
    gpu)``)."""
    callee = next((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and f.name == function), None)
    for caller in ast.walk(tree):
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for call in ast.walk(caller):
            if not (isinstance(call, ast.Call) and (getattr(call.func, "id", None) or getattr(
                    call.func, "attr", None)) == function):
                continue
            names = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)] if callee else []
            if isinstance(call.func, ast.Attribute) and names[:1] == ["self"]:
                names = names[1:]
            given = dict(zip(names, call.args)) | {k.arg: k.value for k in call.keywords if k.arg}
            value = given.get(parameter)
            if isinstance(value, ast.Name) and _none_default(caller, value.id) and not _narrowed(caller, call,
                                                                                               value.id):
                return True
    return False


def _none_default(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """A parameter of ``function`` defaulting to None that it never binds again."""
    return any(a.arg == name and isinstance(d, ast.Constant) and d.value is None
               for a, d in parameter_defaults(function).items()) and not any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(function))


def _narrowed(function: ast.AST, node: ast.AST, name: str) -> bool:
    """Whether ``node`` is in the body of an ``if name is not None:`` (or ``if name:``) of ``function``, or in the
    ``else`` of an ``if name is None:``."""
    def holds(body: list[ast.stmt] | ast.expr) -> bool:
        return any(n is node for part in (body if isinstance(body, list) else [body]) for n in ast.walk(part))

    for branch in ast.walk(function):
        if isinstance(branch, (ast.If, ast.IfExp)):
            test = ast.unparse(branch.test).replace(" ", "")
            if test in (f"{name}isnotNone", name, f"{name}!=None") and holds(branch.body):
                return True
            if test in (f"{name}isNone", f"not{name}", f"{name}==None") and holds(branch.orelse):
                return True
    return False


def _not_none(test: cst.BaseExpression, name: str) -> bool:
    """``name is not None``, ``name``, or an ``and`` holding one."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _not_none(test.left, name) or _not_none(test.right, name)
    if isinstance(test, cst.Name):
        return test.value == name
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name and len(
        test.comparisons) == 1 and isinstance(test.comparisons[0].operator, (cst.IsNot, cst.NotEqual)) and isinstance(
        test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"


def _is_none(test: cst.BaseExpression, name: str) -> bool:
    """``name is None``, or ``not name``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return isinstance(test.expression, cst.Name) and test.expression.value == name
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name and len(
        test.comparisons) == 1 and isinstance(test.comparisons[0].operator, (cst.Is, cst.Equal)) and isinstance(
        test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"


class IsCuda(Rule):
    code = "TP007"
    moves_data = False
    places_data = True
    name = "is-cuda"
    summary = ("`.is_cuda` becomes \"on the picked accelerator\"; unsafe because it may enable CUDA-only code "
               "on MPS or XPU.")
    before, after = "if x.is_cuda:", "if tp.on_accelerator(x):"
    safety = "unsafe"
    triggers = (r"\bis_cuda\b",)
    examples = (Example("y = x.is_cuda\n", "y = tp.on_accelerator(x)\n", unsafe=True),
                # an attribute the code sets is its own, no tensor's property (which cannot be set)
                Example("class E:\n    def cuda(self):\n        self.is_cuda = True\n", unsafe=True),
                # a copy to the host where the tensor is on CUDA is one where it is on any accelerator: safe, plain
                # PyTorch (PyCIL's tensor2numpy; `.numpy()` of an MPS tensor raises)
                Example("def tensor2numpy(x):\n    return x.cpu().data.numpy() if x.is_cuda else x.data.numpy()\n",
                        "def tensor2numpy(x):\n"
                        "    return x.cpu().data.numpy() if x.device.type != \"cpu\" else x.data.numpy()\n"),
                Example("def post(out):\n    if out.is_cuda:\n        out = out.detach().cpu()\n"
                        "    return out.numpy()\n",
                        "def post(out):\n    if out.device.type != \"cpu\":\n        out = out.detach().cpu()\n"
                        "    return out.numpy()\n"),
                # more than a copy to the host under the test: CUDA-only code may follow
                Example("def post(out):\n    if out.is_cuda:\n        out = out.cpu()\n        use_kernels()\n",
                        "def post(out):\n    if tp.on_accelerator(out):\n"
                        "        out = out.cpu()\n        use_kernels()\n", unsafe=True))

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        parent = m.ancestors[-2] if len(m.ancestors) > 1 else None
        if node.attr.value == "is_cuda" and (isinstance(parent, cst.AssignTarget) or isinstance(
                parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node):
            m.mark_handled(node)  # `self.is_cuda = True`: set, not read
            m.store(self).setdefault("set", set()).add(id(node))

    def leave_Attribute(self, m: Migrator, original: cst.Attribute,
                        updated: cst.Attribute) -> cst.BaseExpression | None:
        if original.attr.value != "is_cuda" or id(original.value) in m.shared.followed \
                or id(original) in m.store(self).get("set", ()):
            return None
        host = _copies_to_host(m, original)
        if not m.apply(self.code, original, safe=host):
            return None
        if host:
            return not_cpu(cst.Attribute(cst.Attribute(updated.value, cst.Name("device")), cst.Name("type")))
        return m.runtime_call("on_accelerator", [updated.value])


def _copies_to_host(m: Migrator, node: cst.Attribute) -> bool:
    """Whether ``node`` (``x.is_cuda``) is the test of a conditional expression whose first branch copies ``x`` to
    the host (``x.cpu().data.numpy() if x.is_cuda else x.data.numpy()``), or of an ``if`` whose every statement
    does (``if out.is_cuda: out = out.detach().cpu()``, cellseg_models' post-processing before ``.numpy()``), and
    names no CUDA: where ``x`` is on any device but the CPU the copy is what the code needs, and on CUDA the test
    is the same."""
    parent = next((a for a in reversed(m.ancestors) if a is not node), None)
    if isinstance(parent, cst.If) and parent.test is node:
        from torchport.codemods.analysis.lacks import copies_to_host  # the project pass reads the same

        try:
            tree = ast.parse(_EMPTY.code_for_node(parent.with_changes(orelse=None, leading_lines=[])))
        except SyntaxError:
            return False
        return len(tree.body) == 1 and isinstance(tree.body[0], ast.If) and copies_to_host(tree.body[0])
    if not (isinstance(parent, cst.IfExp) and parent.test is node):
        return False
    tensor = _EMPTY.code_for_node(node.value)
    branch = _EMPTY.code_for_node(parent.body)
    return f"{tensor}.cpu()" in branch and "cuda" not in branch


def tensor_type_check(node: cst.Comparison) -> tuple[cst.BaseExpression, bool] | None:
    """``x.device.type == "cuda"`` (or ``!=``): the tensor expression and whether it is negated."""
    if len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
        return None
    for attr, literal in ((node.left, target.comparator), (target.comparator, node.left)):
        if (
            string_value(literal) == "cuda"
            and isinstance(attr, cst.Attribute) and attr.attr.value == "type"
            and isinstance(attr.value, cst.Attribute) and attr.value.attr.value == "device"
        ):
            return attr.value.value, isinstance(target.operator, cst.NotEqual)
    return None


def cuda_compared(node: cst.Comparison) -> list[cst.SimpleString]:
    """The ``"cuda"`` literals compared with ``==``, ``!=``, ``in`` or ``not in`` in ``node``."""
    found = []
    left = node.left
    for target in node.comparisons:
        if isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
            found += [s for s in (left, target.comparator)
                      if isinstance(s, cst.SimpleString) and s.evaluated_value == "cuda"]
        left = target.comparator
    return found


class FollowDevice(Rule):
    code = "TP024"
    moves_data = False  # to where other data already is, on every backend
    name = "follow-device"
    summary = ("Data moved to CUDA only where other data is on CUDA (`x.cuda() if y.is_cuda else x`) moves to that "
               "data's device.")
    before, after = "x = x.cuda() if y.is_cuda else x", "x = x.to(y.device)"
    triggers = (r"\bis_cuda\b",)
    examples = (
        Example("import torch\nw = w.cuda() if x.is_cuda else w\n", "import torch\nw = w.to(x.device)\n"),
        Example("import torch\nif raw_w.is_cuda: mask = mask.cuda()\n", "import torch\nmask = mask.to(raw_w.device)\n"),
        # segan's generator: `.to('cuda')` as `.cuda()`
        Example("import torch\nif hi.is_cuda:\n    z = z.to('cuda')\n", "import torch\nz = z.to(hi.device)\n"),
        Example("import torch\n\n\ndef f(x, w):\n    # follow x\n    if x.is_cuda:\n        w = w.cuda()  # moved\n"
                "    return w * x\n",
                "import torch\n\n\ndef f(x, w):\n    # follow x\n    w = w.to(x.device)  # moved\n    return w * x\n"),
        Example("import torch\n\n\ndef onehot(y, n):\n    new_y = torch.eye(n)[y.cpu()]\n    if y.is_cuda:\n"
                "        return new_y.cuda()\n    return new_y\n",
                "import torch\n\n\ndef onehot(y, n):\n    new_y = torch.eye(n)[y.cpu()]\n"
                "    return new_y.to(y.device)\n"),
        # an `is_cuda` the code sets itself is no tensor's: its object has no `.device` (manydepth's encoder)
        Example("import torch\n\n\nclass Encoder(torch.nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.is_cuda = False\n        self.bins = torch.ones(2)\n"
                "        if self.is_cuda:\n"
                "            self.bins = self.bins.cuda()\n"),
        # a device chosen by where other data is: that data's device (SupContrast's loss)
        Example("import torch\nd = (torch.device('cuda')\n     if f.is_cuda\n     else torch.device('cpu'))\n",
                "import torch\nd = f.device\n"),
        Example("import torch\nkind = 'cuda' if f.is_cuda else 'cpu'\n", "import torch\nkind = f.device.type\n"),
        # ... the model's first weight read once by the choice (MusicDiffusion's Denoiser)
        Example("import torch\nkind = 'cuda' if next(self.buffers()).is_cuda else 'cpu'\n",
                "import torch\nkind = next(self.buffers()).device.type\n"),
        # PIDAO's pointnet: already put beside it, where that data is on CUDA alone
        Example("import torch\nif x.is_cuda:\n    iden = iden.to(x.device)\n",
                "import torch\niden = iden.to(x.device)\n"),
        # ... or to its CUDA device by index (UnOpticalFlow's warp_flow)
        Example("import torch\nif x.is_cuda:\n    grid = grid.to(x.get_device())\n",
                "import torch\ngrid = grid.to(x.device)\n"),
        # something else is moved, or more is done under the test: left to the guards
        Example("import torch\nif x.is_cuda:\n    w = v.cuda()\n"),
        Example("import torch\nif x.is_cuda:\n    w = w.cuda()\n    torch.cuda.synchronize()\n"),
    )

    def visit_Module(self, m: Migrator, node: cst.Module) -> None:
        # `self.is_cuda = False`: an attribute of the code's own (manydepth's encoder), not a tensor's property
        m.store(self)["own"] = m.syntax is not None and any(
            isinstance(t, ast.Attribute) and t.attr == "is_cuda" for n in ast.walk(m.syntax)
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))

    def visit_IfExp(self, m: Migrator, node: cst.IfExp) -> None:
        """``x.cuda() if y.is_cuda else x``."""
        if m.store(self).get("own"):
            return
        follow = _followed(node.test)
        if follow is not None and _moved_to_cuda(node.body) == _code(node.orelse) is not None:
            self._claim(m, node, follow, node.body)
        elif (follow := follow or _first_weight(node.test)) is not None and (kind := _device_choice(node)) is not None:
            # SupContrast's loss: `torch.device('cuda') if features.is_cuda else torch.device('cpu')`
            for part in (node.body, node.orelse):
                m.mark_handled(part)
                m.handled.update(id(arg.value) for arg in getattr(part, "args", ()))
            m.shared.followed.update((id(node), id(follow)))
            m.store(self)[id(node)] = follow
            m.store(self).setdefault("chosen", {})[id(node)] = kind

    def visit_If(self, m: Migrator, node: cst.If) -> None:
        """``if y.is_cuda: x = x.cuda()``, alone in its ``if`` (no ``else``; a comment on the header or the line, not
        on both: the one line that replaces them keeps it)."""
        if m.store(self).get("own"):
            return
        follow = _followed(node.test)
        body = node.body.body
        if (follow is None or node.orelse is not None or len(body) != 1
                or not isinstance(line := body[0] if isinstance(node.body, cst.IndentedBlock) else node.body,
                                  (cst.SimpleStatementLine, cst.SimpleStatementSuite))):
            return
        small = line.body
        if _header_comment(node) and line.trailing_whitespace.comment is not None:
            return  # two comments for one line
        if len(small) == 1 and isinstance(assign := small[0], cst.Assign) and len(assign.targets) == 1 \
                and _moved_to_cuda(assign.value, follow) == _code(assign.targets[0].target) is not None:
            self._claim(m, node, follow, assign.value)
        elif len(small) == 1 and isinstance(ret := small[0], cst.Return) and ret.value is not None \
                and (moved := _moved_to_cuda(ret.value)) is not None \
                and (after := _returned_next(m, node, moved)) is not None:
            self._claim(m, node, follow, ret.value)  # `if y.is_cuda: return x.cuda()` then `return x`: one return
            m.store(self).setdefault("returns", {})[id(m.ancestors[-2])] = (id(node), id(after))

    def _claim(self, m: Migrator, node: cst.IfExp | cst.If, follow: cst.BaseExpression,
               moved: cst.BaseExpression) -> None:
        if isinstance(moved, cst.Call):  # the `"cuda"` of `x.to("cuda")` goes with it
            m.handled.update(id(arg.value) for arg in moved.args)
        m.shared.followed.add(id(node))
        m.shared.followed.add(id(follow))
        m.store(self)[id(node)] = follow

    def leave_IfExp(self, m: Migrator, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression | None:
        follow = m.store(self).get(id(original))
        if follow is None or not m.apply(self.code, original):
            return None
        kind = m.store(self).get("chosen", {}).get(id(original))
        if kind is not None:  # a chain of attributes: no parentheses needed
            device = cst.Attribute(follow.deep_clone().with_changes(lpar=[], rpar=[]), cst.Name("device"))
            return device if kind == "device" else cst.Attribute(device, cst.Name("type"))
        return _to_device_of(original.orelse, follow).with_changes(lpar=original.lpar, rpar=original.rpar)

    def leave_If(self, m: Migrator, original: cst.If, updated: cst.If) -> cst.BaseStatement | None:
        follow = m.store(self).get(id(original))
        if follow is None or not m.apply(self.code, original):
            return None
        line = original.body.body[0] if isinstance(original.body, cst.IndentedBlock) else original.body
        assert isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        small = line.body[0]
        moved: cst.Assign | cst.Return
        if isinstance(small, cst.Return):
            m.store(self).setdefault("applied", set()).add(id(original))
            assert isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute)
            moved = small.with_changes(value=_to_device_of(small.value.func.value, follow))
        else:
            assert isinstance(small, cst.Assign)
            moved = small.with_changes(value=_to_device_of(small.targets[0].target, follow))
        trailing = line.trailing_whitespace
        if isinstance(original.body, cst.IndentedBlock) and original.body.header.comment is not None:
            trailing = original.body.header  # the test's comment goes with the line that replaces it
        return cst.SimpleStatementLine([moved.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)],
                                       leading_lines=original.leading_lines, trailing_whitespace=trailing)

    def leave_IndentedBlock(self, m: Migrator, original: cst.IndentedBlock,
                            updated: cst.IndentedBlock) -> cst.IndentedBlock | None:
        """The ``return x`` after an ``if y.is_cuda: return x.cuda()`` made one return goes."""
        claimed = m.store(self).get("returns", {}).get(id(original))
        if claimed is None or claimed[0] not in m.store(self).get("applied", ()) \
                or len(updated.body) != len(original.body):
            return None
        after = next(i for i, s in enumerate(original.body) if id(s) == claimed[1])
        return updated.with_changes(body=[s for i, s in enumerate(updated.body) if i != after])


def _returned_next(m: Migrator, node: cst.If, moved: str) -> cst.SimpleStatementLine | None:
    """The statement after ``node`` in its block when it is a lone ``return <moved>`` with no comment of its own."""
    block = m.ancestors[-2] if len(m.ancestors) > 1 else None
    if not isinstance(block, cst.IndentedBlock):
        return None
    body = list(block.body)
    index = next((i for i, s in enumerate(body) if s is node), None)
    after = body[index + 1] if index is not None and index + 1 < len(body) else None
    if not (isinstance(after, cst.SimpleStatementLine) and len(after.body) == 1
            and isinstance(ret := after.body[0], cst.Return) and ret.value is not None and _code(ret.value) == moved
            and after.trailing_whitespace.comment is None and all(e.comment is None for e in after.leading_lines)):
        return None
    return after


def _followed(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """``y`` of a test ``y.is_cuda`` (``y`` a name or a chain of attributes), else None."""
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda" and _code(test.value) is not None:
        return test.value
    return None


def _first_weight(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """``next(self.parameters())`` of a test ``next(self.parameters()).is_cuda`` (or ``buffers()``; MusicDiffusion's
    ``"cuda" if next(self.buffers()).is_cuda else "cpu"``): a choice reads it once, as its ``.device`` would
    (`analysis.lacks.first_weight`, which the project pass reads)."""
    from torchport.codemods.analysis.lacks import first_weight

    if not (isinstance(test, cst.Attribute) and test.attr.value == "is_cuda" and isinstance(test.value, cst.Call)):
        return None
    try:
        tree = ast.parse(f"({_EMPTY.code_for_node(test.value.with_changes(lpar=[], rpar=[]))})", mode="eval")
    except SyntaxError:
        return None
    return test.value if first_weight(tree.body) else None


def _moved_to_cuda(node: cst.BaseExpression, follow: cst.BaseExpression | None = None) -> str | None:
    """The code of ``x`` in ``x.cuda()``, ``x.to("cuda")`` or, ``follow`` being ``y``, ``x.to(y.device)``
    (PIDAO's pointnet: ``if x.is_cuda: iden = iden.to(x.device)``) or ``x.to(y.get_device())`` / ``x.cuda(
    y.get_device())`` (no other arguments; ``x`` a name or a chain of attributes), else None."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    if node.func.attr.value == "cuda" and not node.args:
        return _code(node.func.value)
    if follow is not None and node.func.attr.value in ("cuda", "to") and len(node.args) == 1 \
            and node.args[0].keyword is None and isinstance(index := node.args[0].value, cst.Call) \
            and not index.args and isinstance(index.func, cst.Attribute) and index.func.attr.value == "get_device" \
            and _code(index.func.value) == _code(follow) is not None:
        return _code(node.func.value)  # UnOpticalFlow's `grid.to(x.get_device())`: x's CUDA device, by its index
    if node.func.attr.value == "to" and len(node.args) == 1 and node.args[0].keyword is None and (isinstance(
            spec := node.args[0].value, cst.SimpleString) and spec.evaluated_value == "cuda" or (
            follow is not None and isinstance(spec, cst.Attribute) and spec.attr.value == "device"
            and _code(spec.value) == _code(follow) is not None)):
        return _code(node.func.value)
    return None


def _device_choice(node: cst.IfExp) -> str | None:
    """`analysis.lacks.device_choice` of the choice ``node`` (the project pass reads the same)."""
    from torchport.codemods.analysis.lacks import device_choice

    try:
        tree = ast.parse(f"({_EMPTY.code_for_node(node.with_changes(lpar=[], rpar=[]))})", mode="eval")
    except SyntaxError:
        return None
    return device_choice(tree.body) if isinstance(tree.body, ast.IfExp) else None


def _code(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a name or a chain of attributes (nothing a rewrite could change inside), else None."""
    return chain(node) if isinstance(node, (cst.Name, cst.Attribute)) else None


def _header_comment(node: cst.If) -> bool:
    header = node.body.header if isinstance(node.body, cst.IndentedBlock) else None
    return header is not None and header.comment is not None


def _to_device_of(moved: cst.BaseExpression, follow: cst.BaseExpression) -> cst.Call:
    """``moved.to(follow.device)``."""
    device = cst.Attribute(follow.deep_clone(), cst.Name("device"))
    return cst.Call(cst.Attribute(moved.deep_clone().with_changes(lpar=[], rpar=[]), cst.Name("to")),
                    [cst.Arg(device)])


class DeviceTypeCheck(Rule):
    code = "TP008"
    moves_data = False
    places_data = True
    name = "device-type-check"
    summary = '`x.device.type == "cuda"` becomes "on the picked accelerator"; unsafe for the same reason as TP007.'
    before, after = 'if x.device.type == "cuda":', "if tp.on_accelerator(x):"
    safety = "unsafe"
    triggers = (r"cuda",)
    examples = (Example('ok = x.device.type == "cuda"\n', "ok = tp.on_accelerator(x)\n", unsafe=True),
                # a guard of moves to that device alone is safe: plain PyTorch (transformers' old pipelines)
                Example('if self.device.type == "cuda":\n    self.model = self.model.to(self.device)\n',
                        'if self.device.type != "cpu":\n    self.model = self.model.to(self.device)\n'))

    def visit_Comparison(self, m: Migrator, node: cst.Comparison) -> None:
        if tensor_type_check(node) is not None:
            m.store(self)[id(node)] = True
            m.mark_handled(node)
            for side in cuda_compared(node):
                m.handled.add(id(side))

    def leave_Comparison(self, m: Migrator, original: cst.Comparison,
                         updated: cst.Comparison) -> cst.BaseExpression | None:
        if id(original) not in m.store(self):
            return None
        found = tensor_type_check(updated)
        if found is None:
            return None
        tensor, negated = found
        moves = not negated and _guards_moves_to(m, original, f"{_EMPTY.code_for_node(tensor)}.device")
        if not m.apply(self.code, original, safe=moves):
            return None
        if moves:  # plain PyTorch: the device is an accelerator's
            return not_cpu(cst.Attribute(cst.Attribute(tensor, cst.Name("device")), cst.Name("type")))
        call = m.runtime_call("on_accelerator", [tensor])
        return cst.UnaryOperation(operator=cst.Not(), expression=call) if negated else call


def _guards_moves_to(m: Migrator, test: cst.Comparison, device: str) -> bool:
    """Whether ``test`` is the test of an ``if`` (no ``else``) whose body only moves things to ``device``
    (transformers' pipelines: ``if self.device.type == "cuda": self.model = self.model.to(self.device)``): a move
    to a device that is not the CPU is needed on any accelerator, and on CUDA the test is the same."""
    parent = next((a for a in reversed(m.ancestors) if a is not test), None)
    if not (isinstance(parent, cst.If) and parent.test is test and parent.orelse is None
            and isinstance(parent.body, cst.IndentedBlock) and parent.body.body):
        return False
    for statement in parent.body.body:
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return False
        small = statement.body[0]
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to"
                and len(value.args) == 1 and _EMPTY.code_for_node(value.args[0].value) == device):
            return False
    return True


def _lookup_default(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The CUDA string a lookup falls back to: ``'cuda'`` of ``kwargs.get('device', 'cuda')``, ``getattr(opt,
    'device', 'cuda')`` or ``os.getenv('DEVICE', 'cuda')`` (self-critical's ``eval_split``); else None."""
    if not isinstance(value, cst.Call) or any(a.keyword is not None or a.star for a in value.args):
        return None
    name = call_name(value.func)
    at = 2 if name == "getattr" and isinstance(value.func, cst.Name) else 1 if name in ("get", "getenv") else None
    if at is None or len(value.args) != at + 1 or not is_cuda_literal(value.args[at].value):
        return None
    return value.args[at].value


class UnclassifiedString(Rule):
    code = "TP102"
    moves_data = False
    name = "unclassified-device-string"
    summary = ("A CUDA device string whose use torchport cannot tell (a device, or text: a label, a message, an "
               "argument of an unknown function); left unchanged.")
    before = 'foo("cuda:0")'
    safety, effort = "manual", "low"
    triggers = (r"cuda",)
    examples = (Example('foo("cuda:0")\n'), Example('print("cuda")\nlogger.info("cuda")\nraise ValueError("cuda")\n'),
                Example("if config['cuda']:\n    pass\n"))

    def visit_Subscript(self, m: Migrator, node: cst.Subscript) -> None:
        """A key looked up (consistency_vqa's ``config['cuda']``, an option of its YAML file) is a label."""
        for element in node.slice:
            if isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.SimpleString):
                m.handled.add(id(element.slice.value))

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        """Text given to ``print``, a logger, ``warnings.warn`` or an exception is a message, not a device."""
        if m.runtime_call_name(node) is not None:  # the port's own tp.device(f"cuda:{rank}"): no finding next run
            m.handled.update(id(arg.value) for arg in node.args)
        func = node.func
        name = call_name(func)
        if name in _MESSAGE_CALLS or name.endswith(("Error", "Exception", "Warning")):
            for arg in node.args:
                if isinstance(arg.value, (cst.SimpleString, cst.FormattedString)):
                    m.handled.add(id(arg.value))

    def visit_SimpleString(self, m: Migrator, node: cst.SimpleString) -> None:
        if is_cuda_literal(node) and not m.in_skipped_region:
            m.store(self).setdefault("strings", []).append(node)
            m.remember_statement(node)

    def visit_FormattedString(self, m: Migrator, node: cst.FormattedString) -> None:
        first = node.parts[0] if node.parts else None
        if isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:") and not m.in_skipped_region:
            m.store(self).setdefault("strings", []).append(node)
            m.remember_statement(node)

    def finish(self, m: Migrator, module: cst.Module) -> None:
        for node in m.store(self).get("strings", ()):
            if id(node) not in m.handled:
                text = cst.Module([]).code_for_node(node)
                m.report(self.code, node, f"CUDA device string {text} where torchport cannot tell how it is used; "
                         "left unchanged")


_NATIVE_DEVICE_LINE = torch_facts.text("native_device_line")


def _native_device_type(m: Migrator, node: cst.BaseExpression, store: dict) -> bool:
    """``DEVICE.type`` of the device constant that native output writes (``DEVICE = torch.accelerator.
    current_accelerator() if ...``): torchport's own comparison, which is exactly the original on CUDA."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "type" and isinstance(node.value, cst.Name)):
        return False
    names = store.setdefault("native", set(_NATIVE_DEVICE_LINE.findall(m.source)))
    return node.value.value in names


class DeviceTypeComparison(Rule):
    code = "TP104"
    moves_data = False
    name = "device-type-comparison"
    summary = 'A comparison with "cuda" may guard CUDA-only code; left unchanged.'
    before = 'use_fused = device_type == "cuda"'
    safety, effort = "manual", "low"
    triggers = (r"cuda",)
    examples = (Example('use_fused = device_type == "cuda"\n'),)

    def visit_Comparison(self, m: Migrator, node: cst.Comparison) -> None:
        # `x == "cuda"` may mean "on the accelerator" or guard a CUDA-only path (fused kernels, CUDA
        # extensions): torchport cannot tell which, so it reports and leaves it.
        if tensor_type_check(node) is not None or _native_device_type(m, node.left, m.store(self)):
            return
        for side in cuda_compared(node):
            m.handled.add(id(side))
            m.report(self.code, side, 'comparison with the device type "cuda"; left unchanged (it may guard '
                     "CUDA-only code)")

    def visit_IfExp(self, m: Migrator, node: cst.IfExp) -> None:
        if isinstance(node.test, cst.Comparison) and cuda_compared(node.test):
            # `"cuda" if "cuda" in device else "cpu"` derives a type from a device string, which already
            # works on every backend: keep the branches as the test keeps "cuda".
            for branch in (node.body, node.orelse):
                m.contexts.pop(id(branch), None)
                m.handled.add(id(branch))


class CudaAttribute(Rule):
    code = "TP106"
    moves_data = False
    name = "cuda-attribute"
    summary = "`.cuda` referenced without a call, or called with unpacked arguments; left unchanged."
    before = "fn = x.cuda"
    safety, effort = "manual", "low"
    triggers = (r"\.cuda\b",)
    examples = (Example("import torch\nfn = torch.zeros(2).cuda\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        # Only torch's own `.cuda` methods (`torch.Tensor.cuda`, ...): `args.cuda` is a user's flag.
        if node.attr.value != "cuda" or id(node) in m.called or id(node) in m.inner:
            return
        if any(n.startswith("torch.") and n not in ("torch.cuda", "torch.version.cuda") for n in m.qnames(node)):
            m.report(self.code, node, "`.cuda` referenced without a call; left unchanged")
