"""Shared types for the rules: diagnostics and the node helpers every family uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods.core.reasons import PROJECT_TORCH
from torchport.emit.names import dotted_name  # noqa: F401 - shared with the renderers
from torchport.model import torch_facts
from torchport.results import Diagnostic  # noqa: F401 - defined without LibCST, for the cache

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

# "cuda", "cuda:0", and the same for the other spellings of a CUDA device type.
CUDA_DEVICE_RE = torch_facts.text("cuda_device")


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower():
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def cuda_literal_index(node: cst.CSTNode) -> tuple[bool, cst.BaseExpression | None]:
    """Whether ``node`` spells a CUDA device, and the index expression it names.

    ``"cuda"`` gives ``(True, None)``, ``"cuda:1"`` gives ``(True, Integer(1))`` and
    ``f"cuda:{rank}"`` gives ``(True, Name(rank))``; an f-string without fields is its text (``f"cuda"``).
    Anything else gives ``(False, None)``.
    """
    value = string_value(node)
    if isinstance(node, cst.FormattedString) and "b" not in node.prefix.lower() and all(
            isinstance(part, cst.FormattedStringText) for part in node.parts):
        value = "".join(part.value for part in node.parts if isinstance(part, cst.FormattedStringText))
        value = value if "\\" not in value and "{{" not in value and "}}" not in value else None
    if value is not None:
        match = CUDA_DEVICE_RE.match(value)
        if not match:
            return False, None
        return True, cst.Integer(match.group(1)) if match.group(1) is not None else None
    if isinstance(node, cst.FormattedString) and len(node.parts) == 2:
        text, expr = node.parts
        if (
            isinstance(text, cst.FormattedStringText)
            and text.value == "cuda:"
            and isinstance(expr, cst.FormattedStringExpression)
            and expr.format_spec is None
            and expr.conversion is None
            and expr.equal is None
        ):
            return True, expr.expression
    return False, None


def is_cuda_literal(node: cst.CSTNode) -> bool:
    return cuda_literal_index(node)[0]


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value`` with no spaces around ``=``, as PEP 8 writes keyword arguments."""
    return cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))


def not_cpu(left: cst.BaseExpression) -> cst.Comparison:
    """``left != "cpu"``: a device type that is an accelerator's (``x.device.type``, ``tp.device_type()``)."""
    return cst.Comparison(left=left, comparisons=[
        cst.ComparisonTarget(operator=cst.NotEqual(), comparator=cst.SimpleString('"cpu"'))])


def call_name(func: cst.BaseExpression) -> str:
    """The name a call's ``func`` ends in: ``print`` for ``print``, ``warn`` for ``warnings.warn``, else ``""``."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def attribute_chain(dotted: str) -> cst.BaseExpression:
    """Build ``a.b.c`` as a CST expression."""
    head, *rest = dotted.split(".")
    expr: cst.BaseExpression = cst.Name(head)
    for part in rest:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def append_arg(call: cst.Call, new: cst.Arg) -> cst.Call:
    """``call`` with ``new`` added after its last argument, laid out like the arguments already there:
    on the same line after ``, ``, or on its own line where the call puts its arguments one per line."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    previous = args[-2].comma if len(args) > 1 else None
    if isinstance(previous, cst.Comma) and isinstance(previous.whitespace_after, cst.ParenthesizedWhitespace):
        sep: cst.BaseParenthesizableWhitespace = previous.whitespace_after
    elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        sep = call.whitespace_before_args
    else:
        sep = cst.SimpleWhitespace(" ")
    if isinstance(last.comma, cst.Comma):  # a trailing comma stays trailing
        new = new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(comma=cst.Comma(whitespace_after=sep), whitespace_after_arg=cst.SimpleWhitespace(""))
    else:
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(comma=cst.Comma(whitespace_after=sep), whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args[:-1], last, new])


def requires_older_torch(m: Migrator, needed: tuple[int, int]) -> bool:
    """Whether the torch the project requires (`Renderer.version`, from its requirements; ``(0, 0)``: it says
    nothing) predates ``needed``."""
    return (0, 0) < m.renderer.version < needed


def older_torch(m: Migrator, node: cst.CSTNode, needed: tuple[int, int], api: str) -> bool:
    """Leave ``node`` as written where the torch the project requires predates ``needed``, the first torch with
    ``api`` (`requires_older_torch`); True then (a TP110 note says why)."""
    if not requires_older_torch(m, needed):
        return False
    version = m.renderer.version
    m.skip_region(node, PROJECT_TORCH, f"the project requires torch {version[0]}.{version[1]}, which lacks {api} "
                                       f"(torch {needed[0]}.{needed[1]})")
    return True


def none_parameter(m: Migrator, value: cst.BaseExpression) -> bool:
    """Whether ``value`` is a parameter of the function around it whose default is ``None`` (XMem's ``def
    init_hyperparameters(self, config, model_path=None, map_location=None)``, called without it): a caller's
    ``None`` restores CUDA storages on CUDA alone; `tp.map_location` keeps any other value as it is."""
    if not isinstance(value, cst.Name):
        return False
    function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
    params = function.params if function is not None else None
    return params is not None and any(
        p.name.value == value.value and isinstance(p.default, cst.Name) and p.default.value == "None"
        for p in (*params.posonly_params, *params.params, *params.kwonly_params))


def tried_alone(m: Migrator) -> tuple[cst.Try, list[cst.ExceptHandler]] | None:
    """The ``try`` whose body is the one statement that holds the node being left, with no ``else``, and its
    handlers that catch what a call off CUDA raises (bare, ``Exception``, ``RuntimeError``, ...); None where the
    statement is not alone in a ``try`` body or no handler catches that."""
    statement = next((a for a in reversed(m.ancestors) if isinstance(a, cst.SimpleStatementLine)), None)
    if statement is None:
        return None
    at = m.ancestors.index(statement)
    above = m.ancestors[at - 2:at] if at >= 2 else []
    if len(above) != 2 or not isinstance(above[0], cst.Try) or above[1] is not above[0].body:
        return None
    node = above[0]
    if node.body.body != (statement,) or node.orelse is not None:
        return None
    catching = [h for h in node.handlers if h.type is None or (
        isinstance(h.type, cst.Name) and h.type.value in torch_facts.CATCHES_CUDA_ERRORS)]
    return (node, catching) if catching else None
