"""Device selection: `.cuda()`, CUDA device strings and the availability idiom.

| Code  | Before                                              | After                                  |
|-------|-----------------------------------------------------|----------------------------------------|
| TP001 | x.cuda(non_blocking=True)                           | x.to(tp.device(), non_blocking=True)   |
| TP002 | torch.zeros(2, device="cuda:1")                     | torch.zeros(2, device=tp.device(1))    |
| TP003 | device = "cuda"                                     | device = tp.device_str()               |
| TP004 | device_type = "cuda"                                | device_type = tp.device_type()         |
| TP005 | "cuda" if torch.cuda.is_available() else "cpu"      | tp.device_str()                        |
| TP006 | model.to(local_rank)                                | model.to(tp.device(local_rank))        |
| TP007 | if x.is_cuda:                                       | if tp.on_accelerator(x):  (unsafe)     |
| TP008 | if x.device.type == "cuda":                         | if tp.on_accelerator(x):  (unsafe)     |
| TP102 | foo("cuda")                                         | (reported)                             |
| TP104 | use_fused = device_type == "cuda"                   | (reported)                             |
| TP106 | fn = x.cuda                                         | (reported)                             |
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods._base import Rule, cuda_literal_index, is_cuda_literal, keyword_arg, string_value

if TYPE_CHECKING:
    from torchport.codemods._transformer import MigrateCodemod

RULES = (
    Rule("TP001", "cuda-method", "`.cuda(...)` on a tensor or module becomes `.to(<runtime device>, ...)`.",
         "x.cuda(non_blocking=True)", "x.to(tp.device(), non_blocking=True)"),
    Rule("TP002", "device-literal", "A CUDA device spec where torch expects a device becomes the runtime device.",
         'torch.zeros(2, device="cuda:1")', "torch.zeros(2, device=tp.device(1))"),
    Rule("TP003", "device-string", "A CUDA device spec kept as a str (config, default, argument) stays a str.",
         'device = "cuda"', "device = tp.device_str()"),
    Rule("TP004", "device-type-string", 'The device type "cuda" given as device_type= or assigned to a *type name.',
         'device_type = "cuda"', "device_type = tp.device_type()"),
    Rule("TP005", "availability-idiom", '`"cuda" if torch.cuda.is_available() else "cpu"` becomes one runtime call.',
         'torch.device("cuda" if torch.cuda.is_available() else "cpu")', "tp.device()"),
    Rule("TP006", "integer-device-id", "An integer device id (a literal, or a name like `rank`, `local_rank`, "
         "`gpu_id`) given to `.to()` or `torch.device()` becomes the runtime device with that index.",
         "model.to(local_rank)", "model.to(tp.device(local_rank))"),
    Rule("TP007", "is-cuda", "`.is_cuda` becomes \"on the picked accelerator\"; unsafe because it may enable "
         "CUDA-only code on MPS or XPU.", "if x.is_cuda:", "if tp.on_accelerator(x):", safety="unsafe"),
    Rule("TP008", "device-type-check", '`x.device.type == "cuda"` becomes "on the picked accelerator"; unsafe for '
         "the same reason as TP007.", 'if x.device.type == "cuda":', "if tp.on_accelerator(x):", safety="unsafe"),
    Rule("TP102", "unclassified-device-string", "A CUDA device string where torchport cannot tell a device from text.",
         'foo("cuda:0")', safety="manual", effort="low"),
    Rule("TP104", "device-type-comparison", 'A comparison with "cuda" may guard CUDA-only code; left unchanged.',
         'use_fused = device_type == "cuda"', safety="manual", effort="low"),
    Rule("TP106", "cuda-attribute", "`.cuda` referenced without a call, or called with unpacked arguments; "
         "left unchanged.", "fn = x.cuda",
         safety="manual", effort="low"),
)

# Names that hold an integer device index in real code (`model.to(self.gpu_id)`, `torch.device(local_rank)`).
_INDEX_NAME = re.compile(r"^(local_)?rank$|^(local_)?gpu(_id|_idx|_index)?$|^device_(id|idx|index)$|^gpu$")

# Text without any of these cannot match a rule of this family (the engine's prefilter).
TRIGGERS = (r"cuda", r"\.to\(\s*(?:self\.)?(?:local_rank|rank|gpu|device_id|device_idx|device_index|\d)",
            r"device\(\s*(?:local_rank|rank|gpu|device_id|device_idx|device_index|\d)")

# Calls that answer "is there an accelerator?" and so form the availability idiom.
AVAILABILITY_TESTS = frozenset({
    "torch.cuda.is_available",
    "torch.backends.mps.is_available",
    "torch.mps.is_available",
    "torch.xpu.is_available",
    "torch.accelerator.is_available",
})
_OTHER_ACCELERATORS = frozenset({"mps", "xpu"})

# Keyword names whose CUDA string value is a device kept as text, in calls torchport does not know.
_STRING_KEYWORDS = frozenset({"device", "default", "map_location", "device_name", "device_str"})


def _is_device_call(m: MigrateCodemod, node: cst.CSTNode, kinds: frozenset[str]) -> bool:
    """``torch.device("<kind>")`` for one of ``kinds``."""
    if not (isinstance(node, cst.Call) and m.has_qname(node.func, "torch.device") and node.args):
        return False
    first = node.args[0].value
    value = string_value(first)
    if value is None:
        return "cuda" in kinds and is_cuda_literal(first)
    return value.split(":")[0] in kinds


def _branch_kind(m: MigrateCodemod, node: cst.BaseExpression) -> str | None:
    """"cuda", "other" (mps/xpu), "cpu" or "idiom" for a branch of the availability idiom."""
    if is_cuda_literal(node) or _is_device_call(m, node, frozenset({"cuda"})):
        return "cuda"
    if string_value(node) in _OTHER_ACCELERATORS or _is_device_call(m, node, _OTHER_ACCELERATORS):
        return "other"
    if string_value(node) == "cpu" or _is_device_call(m, node, frozenset({"cpu"})):
        return "cpu"
    if isinstance(node, cst.IfExp) and _idiom_shape(m, node) is not None:
        return "idiom"
    return None


def _idiom_shape(m: MigrateCodemod, node: cst.IfExp) -> tuple[bool, cst.BaseExpression | None, bool] | None:
    """``(wants_device_object, cuda_index, names_cuda)`` for ``A if <available> else B``, or None."""
    test = node.test
    if not (isinstance(test, cst.Call) and not test.args and m.qnames(test.func) & AVAILABILITY_TESTS):
        return None
    body, orelse = _branch_kind(m, node.body), _branch_kind(m, node.orelse)
    if body not in ("cuda", "other") or orelse not in ("cpu", "idiom", "cuda"):
        return None
    wants_object = isinstance(node.body, cst.Call) or isinstance(node.orelse, cst.Call)
    has_cuda = "cuda" in (body, orelse)
    index = None
    for branch in (node.body, node.orelse):
        literal = branch.args[0].value if isinstance(branch, cst.Call) else branch
        ok, idx = cuda_literal_index(literal)
        if ok and idx is not None:
            index = idx
    if orelse == "idiom":
        assert isinstance(node.orelse, cst.IfExp)
        nested = _idiom_shape(m, node.orelse)
        assert nested is not None
        wants_object = wants_object or nested[0]
        index = index if index is not None else nested[1]
        has_cuda = has_cuda or nested[2]
    return wants_object, index, has_cuda


def availability_idiom(m: MigrateCodemod, node: cst.IfExp) -> tuple[bool, cst.BaseExpression | None] | None:
    """Match ``A if <accelerator available> else B`` choosing between CUDA (or MPS/XPU) and CPU.

    Variants chain more tests (``"cuda" if ... else "mps" if ... else "cpu"``); at least one
    branch must name CUDA. Returns ``(wants_device_object, index)`` or None:
    ``wants_device_object`` is True when a branch builds a ``torch.device``, and ``index`` is the
    CUDA index the idiom names (``"cuda:0"`` gives 0).
    """
    shape = _idiom_shape(m, node)
    if shape is None or not shape[2]:
        return None
    return shape[0], shape[1]


def is_index(node: cst.BaseExpression) -> bool:
    """An integer literal, or a name/attribute whose last part names a device index."""
    if isinstance(node, cst.Integer):
        return True
    last = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
    return last is not None and bool(_INDEX_NAME.match(last))


def classify_call(m: MigrateCodemod, node: cst.Call) -> None:
    """Give every CUDA string among a call's arguments the context it is used in."""
    func = node.func
    if m.has_qname(func, "torch.device"):
        if len(node.args) == 2 and node.args[0].keyword is None and string_value(node.args[0].value) == "cuda":
            m.device_pairs.add(id(node))
        elif len(node.args) == 1 and node.args[0].keyword is None and is_index(node.args[0].value):
            m.index_args.add(id(node.args[0].value))
        elif node.args and node.args[0].keyword is None:
            m.set_context(node.args[0].value, "device", "TP002")
        return
    is_to = isinstance(func, cst.Attribute) and func.attr.value == "to"
    if is_to and node.args and node.args[0].keyword is None and is_index(node.args[0].value):
        m.index_args.add(id(node.args[0].value))
    torch_call = m.qname_startswith(func, "torch.")
    for index, arg in enumerate(node.args):
        keyword = arg.keyword.value if arg.keyword else None
        if keyword is None:
            if is_to and index == 0:
                m.set_context(arg.value, "device", "TP002")
        elif keyword == "device_type":
            m.set_context(arg.value, "type", "TP004")
        elif keyword in ("device", "map_location") and (torch_call or is_to):
            m.set_context(arg.value, "device", "TP002")
        elif keyword in _STRING_KEYWORDS:
            m.set_context(arg.value, "str", "TP003")
        elif keyword == "choices":
            m.keep_literals(arg.value)


def rewrite_cuda_method(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``x.cuda(i, non_blocking=b)`` -> ``x.to(tp.device(i), non_blocking=b)``."""
    func = updated.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
        return None
    if m.qname_startswith(original.func, "torch.cuda"):
        return None
    if any(arg.star for arg in updated.args):
        m.report("TP106", original, "`.cuda(*args)` with unpacked arguments; left unchanged")
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
    if not m.apply("TP001", original):
        return None
    target = m.runtime_call("device", [device_arg] if device_arg is not None else [])
    if rest and rest[-1] is not updated.args[-1]:  # a trailing comma only where the user wrote one
        rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return updated.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[cst.Arg(target), *rest])


def rewrite_torch_device(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``torch.device("cuda", i)`` -> ``tp.device(i)``; ``torch.device(tp.device(x))`` -> ``tp.device(x)``."""
    if not m.has_qname(original.func, "torch.device"):
        return None
    if id(original) in m.device_pairs:
        m.mark_handled(original.args[0].value)
        if not m.apply("TP002", original):
            return None
        return m.runtime_call("device", [updated.args[1].value])
    if len(updated.args) == 1 and id(original.args[0].value) in m.index_args:
        if not m.apply("TP006", original.args[0].value):
            return None
        return m.runtime_call("device", [updated.args[0].value])
    if len(updated.args) == 1 and updated.args[0].keyword is None:
        inner = updated.args[0].value
        name = m.runtime_call_name(inner)
        if name in ("device", "device_str"):
            assert isinstance(inner, cst.Call)
            return m.runtime_call("device", [a.value for a in inner.args])
    return None


def rewrite_literal(
    m: MigrateCodemod, original: cst.BaseExpression, updated: cst.BaseExpression
) -> cst.BaseExpression | None:
    """Replace a CUDA string literal according to the context its parent gave it."""
    context = m.contexts.get(id(original))
    if context is None:
        return None
    kind, code = context
    ok, index = cuda_literal_index(updated)  # updated: `f"cuda:{torch.cuda.current_device()}"` is renamed inside
    if not ok:
        return None
    if kind == "type" and index is not None:
        return None
    if not m.apply(code, original):
        return None
    if kind == "type":
        return m.runtime_call("device_type", [])
    return m.runtime_call("device" if kind == "device" else "device_str", [index] if index is not None else [])


def rewrite_to_index(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.Call | None:
    """``x.to(rank)`` -> ``x.to(tp.device(rank))``: an int there means "the current accelerator"."""
    if not (updated.args and id(original.args[0].value) in m.index_args):
        return None
    if not isinstance(updated.func, cst.Attribute) or updated.func.attr.value != "to":
        return None
    if not m.apply("TP006", original.args[0].value):
        return None
    first = updated.args[0]
    return updated.with_changes(args=[first.with_changes(value=m.runtime_call("device", [first.value])),
                                      *updated.args[1:]])


def rewrite_is_cuda(m: MigrateCodemod, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression | None:
    """``x.is_cuda`` -> ``tp.on_accelerator(x)`` (unsafe)."""
    if original.attr.value != "is_cuda" or not m.apply("TP007", original):
        return None
    return m.runtime_call("on_accelerator", [updated.value])


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


def rewrite_type_check(m: MigrateCodemod, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression | None:
    """``x.device.type == "cuda"`` -> ``tp.on_accelerator(x)`` (unsafe); ``!=`` -> ``not ...``."""
    found = tensor_type_check(updated)
    if found is None or not m.apply("TP008", original):
        return None
    tensor, negated = found
    call = m.runtime_call("on_accelerator", [tensor])
    return cst.UnaryOperation(operator=cst.Not(), expression=call) if negated else call
