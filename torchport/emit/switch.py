"""Switching a module already ported in one runtime mode to another (``--runtime package|vendor|native``).

A ported module holds no CUDA call for the rules to find, so without this a second run in another mode
changed nothing. `switch` finds the runtime the module uses: the import of ``torchport.runtime`` or of a
vendored ``_torchport_runtime`` (package and vendor mode, native's fallbacks), or native mode's device line
and the plain-PyTorch forms `torchport.emit.native` writes. It takes them out (the import, the vendored copy's
``sys.path`` line, the device line) and hands each runtime call to the target mode's renderer, which writes
it as that mode does. The result equals porting the original in the target mode, but for these differences:

* native → package/vendor: a device line of the module's own (``device = torch.accelerator...``, from its
  ``torch.device("cuda" if ... else "cpu")``) stays, as ``device = tp.available_device()``, and the code
  that read it keeps reading it (a direct port writes ``tp.device()`` in the sites it ported); native forms
  that a person edited, and ``f"{DEVICE.type}:{rank}"`` device strings, are left as they are. That line in
  PyTorch's tutorials' form is a person's as often as native mode's: it counts as native mode's only in a
  module that also imports a runtime (native's fallbacks); elsewhere such a module is left as it is.
* a vendored copy that no module imports any more stays on disk: delete it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from torchport.emit import native as native_forms
from torchport.emit.names import dotted_name
from torchport.emit.package import RUNTIME_MODULE, PackageRuntime
from torchport.emit.patterns import RUNTIME_TEXT
from torchport.emit.unparse import unparse

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator
    from torchport.emit.package import Renderer

_VENDORED = "_torchport_runtime"
_BOOTSTRAP_COMMENT = "# where torchport's vendored runtime is"
_A0, _ARGS = "__tp_a0__", "__tp_args__"
_PLACEHOLDER = "__torchport_switch__"


def _call(name: str, args: Sequence[cst.Arg] = ()) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Name(_PLACEHOLDER), cst.Name(name)), args=args)


def _canonical(code: str) -> str | None:
    try:
        return unparse(ast.parse(code.strip(), mode="eval"))
    except SyntaxError:
        return None


def _smalls(statement: cst.BaseStatement) -> Sequence[cst.BaseSmallStatement]:
    return statement.body if isinstance(statement, cst.SimpleStatementLine) else ()


def _runtime_import(statement: cst.BaseStatement) -> tuple[str, str] | None:
    """``(module, alias)`` when ``statement`` is a lone import of a runtime under an alias."""
    smalls = _smalls(statement)
    if len(smalls) != 1:
        return None
    small = smalls[0]
    if isinstance(small, cst.Import) and len(small.names) == 1 and small.names[0].asname is not None:
        module = dotted_name(small.names[0].name) or ""
        if module == RUNTIME_MODULE or module.split(".")[-1] == _VENDORED:
            return module, small.names[0].evaluated_alias or ""
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative \
            and not isinstance(small.names, cst.ImportStar) and len(small.names) == 1:
        parent, alias = dotted_name(small.module) or "", small.names[0]
        module = f"{parent}.{alias.evaluated_name}"
        if module == RUNTIME_MODULE or alias.evaluated_name == _VENDORED:
            return module, alias.evaluated_alias or alias.evaluated_name
    return None


def _bootstrap(statement: cst.BaseStatement) -> bool:
    """The ``sys.path`` line vendor mode writes above a copy's import (under its comment)."""
    return isinstance(statement, cst.SimpleStatementLine) and any(
        line.comment is not None and line.comment.value == _BOOTSTRAP_COMMENT for line in statement.leading_lines)


def _templates(device: str, torch: str) -> list[tuple[re.Pattern[str], str, bool]]:
    """``(pattern, runtime name, repeats its argument)`` of each native form, as `_canonical` writes it."""
    fill = {"D": device, "t": torch, "args": _ARGS}
    forms = [(name, template) for name, (_, _, template) in native_forms._FORMS.items()]
    forms += list(native_forms._REPEATS.items())
    indexed = native_forms._INDEXED
    forms += [("device", f"{{t}}.device({{D}}.type, {{0}}) if {{D}}.type in {indexed} else {{D}}"),
              ("device", '{0} if {D}.type == "cuda" else {D}'),
              ("get_device_name", f"{{t}}.get_device_module({{D}}).get_device_name({{args}}) if {{D}}.type in "
                                  f"{indexed} else {{D}}.type")]
    made = []
    for name, template in forms:
        text = _canonical(template.format(_A0, **fill))
        if text is None:
            continue
        pattern = re.escape(text).replace(re.escape(_ARGS), "(?P<args>.*?)")
        escaped = re.escape(_A0)
        repeats = pattern.count(escaped) > 1
        pattern = pattern.replace(escaped, "(?P<a0>.+?)", 1).replace(escaped, "(?P=a0)")
        made.append((re.compile(pattern), name, repeats))
    made.sort(key=lambda t: -len(t[0].pattern))  # the most specific first
    return made


class _Forms(cst.CSTTransformer):
    """Replaces each native form (outermost first) and each ``alias.name`` of an old runtime with the
    renderer's call."""

    def __init__(self, alias: str | None, device: str | None, torch: str, own: bool) -> None:
        super().__init__()
        self.alias, self.device, self.own = alias, device, own
        self.templates = _templates(device, torch) if device else []
        self.torch = torch
        self.count = 0
        self._matched: dict[int, cst.BaseExpression] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.AssignTarget, cst.Import, cst.ImportFrom)):
            return False
        if isinstance(node, cst.BaseExpression) and self.templates:
            found = self._match(node)
            if found is not None:
                self._matched[id(node)] = found
                return False
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        if id(original) in self._matched:
            self.count += 1
            return self._matched[id(original)]  # a call: it needs no parentheses where the form had them
        if self.alias and isinstance(updated, cst.Attribute) and isinstance(updated.value, cst.Name) \
                and updated.value.value == self.alias:
            self.count += 1
            return cst.Attribute(cst.Name(_PLACEHOLDER), updated.attr)
        return updated

    def expression(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """``value`` with its native forms and runtime calls switched."""
        statement = cst.Module([cst.SimpleStatementLine([cst.Expr(value)])]).visit(self).body[0]
        assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr)
        return statement.body[0].value

    def _match(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(node, cst.Name):
            if node.value != self.device or self.own:
                return None
            return _call("device")
        if not isinstance(node, (cst.IfExp, cst.Call, cst.Attribute, cst.Comparison)):
            return None
        code = cst.Module([]).code_for_node(node)
        if self.device not in code:  # type: ignore[operator]
            return None
        text = _canonical(code)
        if text is None:
            return None
        for pattern, name, _ in self.templates:
            hit = pattern.fullmatch(text)
            if hit is None:
                continue
            args = self._arguments(hit)
            if args is not None:
                return _call(name, args)
        return None

    def _arguments(self, hit: re.Match[str]) -> list[cst.Arg] | None:
        groups = hit.groupdict()
        try:
            if groups.get("a0") is not None:
                values = [cst.parse_expression(groups["a0"])]
            elif groups.get("args"):
                call = cst.parse_expression(f"f({groups['args']})")
                assert isinstance(call, cst.Call)
                values = [a.value for a in call.args]
            else:
                values = []
        except (cst.ParserSyntaxError, AssertionError):
            return None
        args = []
        for value in values:
            inner = _Forms(self.alias, self.device, self.torch, self.own)
            args.append(cst.Arg(inner.expression(value)))
            self.count += inner.count
        return args


def _device_line(statement: cst.BaseStatement, torch: str) -> tuple[str, bool] | None:
    """``(name, own)`` when ``statement`` is native mode's device line (``own``: in the tutorials' form,
    the module's own line native mode rewrote, or a name of the module's own)."""
    smalls = _smalls(statement)
    if len(smalls) != 1 or not isinstance(smalls[0], cst.Assign) or len(smalls[0].targets) != 1 \
            or not isinstance(smalls[0].targets[0].target, cst.Name):
        return None
    name = smalls[0].targets[0].target.value
    text = _canonical(cst.Module([]).code_for_node(smalls[0].value))
    if text == _canonical(native_forms._device_line(torch, name).partition(" = ")[2]):
        return name, name not in native_forms._NAMES
    if text == _canonical(native_forms._AVAILABLE.format(t=torch)):
        return name, True
    return None


def _off_mps(statement: cst.BaseStatement, name: str) -> bool:
    return isinstance(statement, cst.If) and _canonical(cst.Module([]).code_for_node(statement.test)) == \
        _canonical(f'{name}.type == "mps"')


def torch_name(module: cst.Module) -> str:
    """The module's name for torch (``import torch as th``), else ``torch``."""
    for statement in module.body:
        for small in _smalls(statement):
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.evaluated_name == "torch":
                        return alias.evaluated_alias or "torch"
    return "torch"


def _strip(module: cst.Module, target: str | None, is_native: bool) -> tuple[cst.Module, int]:
    """``module`` with the runtime of another mode taken out and each of its calls written as
    ``__torchport_switch__.name(...)``, and how many things moved; ``(module, 0)`` when it uses none."""
    torch = torch_name(module)
    body = list(module.body)
    device = None
    for index, statement in enumerate(body):
        line = _device_line(statement, torch)
        if line is not None:
            device = (index, *line)
            break
    alias, drop = None, set()
    for index, statement in enumerate(body):
        found = _runtime_import(statement)
        if found is None:
            continue
        module_name, name = found
        if module_name == target and not (is_native and module_name != RUNTIME_MODULE and device is None):
            continue  # its own mode (native's fallbacks import the vendored copy too)
        alias = name
        drop.add(index)
        if index and _bootstrap(body[index - 1]):
            drop.add(index - 1)
    tutorial = device is not None and "is_available" in cst.Module([]).code_for_node(body[device[0]])
    if device is not None and (is_native or tutorial and not any(map(_runtime_import, body))):
        # native already; or PyTorch's tutorial line, which a person writes too: ported by torchport only
        # where the module imports a runtime as well (native mode's fallbacks)
        device = None
    if device is not None:
        index, name, own = device
        if not own:
            drop.add(index)
        if index + 1 < len(body) and _off_mps(body[index + 1], name):
            drop.add(index + 1)
    if alias is None and device is None:
        return module, 0
    if device is not None and device[2]:  # the module's own line: it reads the runtime's device now
        index, name, _ = device
        statement = body[index]
        assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
        kind = "available_device" if "is_available" in cst.Module([]).code_for_node(statement) else "device"
        body[index] = statement.with_changes(body=[statement.body[0].with_changes(
            value=_call(kind))])
    kept = [s for i, s in enumerate(body) if i not in drop]
    if kept and drop and min(drop) == 0:
        kept[0] = kept[0].with_changes(leading_lines=())
    forms = _Forms(alias, device[1] if device else None, torch, bool(device and device[2]))
    switched = module.with_changes(body=kept).visit(forms)
    return switched, forms.count + len(drop) + int(bool(device and device[2]))


class _Render(cst.CSTTransformer):
    def __init__(self, m: Migrator, renderer: Renderer) -> None:
        super().__init__()
        self.m, self.renderer = m, renderer

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if isinstance(updated.value, cst.Name) and updated.value.value == _PLACEHOLDER:
            return self.renderer.attr(self.m, updated.attr.value)
        return updated


def switch(source: str, renderer: Renderer) -> cst.Module | None:
    """``source`` (a module ported in some runtime mode) with the runtime of another mode taken out, each of
    its calls written ``__torchport_switch__.name(...)`` for `render` to hand to ``renderer``; None when it
    uses no runtime of another mode.

    Raises:
        libcst.ParserSyntaxError: when ``source`` does not parse.
    """
    if not RUNTIME_TEXT.search(source):
        return None
    is_native = isinstance(renderer, native_forms.NativeRuntime)
    target = renderer.vendor.module if isinstance(renderer, native_forms.NativeRuntime) else (
        renderer.module if isinstance(renderer, PackageRuntime) else None)
    stripped, moved = _strip(cst.parse_module(source), target, is_native)
    return stripped if moved else None


def render(m: Migrator, module: cst.Module, renderer: Renderer, original: str) -> cst.Module:
    """`switch`'s ``module`` with its calls written by ``renderer`` (prepared, then finished, as in a pass);
    the imports it schedules are ``m``'s to add. Where ``original`` had the vendored copy's ``sys.path``
    line, ``os`` and ``sys`` are dropped if nothing else uses them."""
    m.torch_name = torch_name(module)
    renderer.prepare(m, module)
    done = renderer.finish(m, module.visit(_Render(m, renderer)))
    if _BOOTSTRAP_COMMENT in original:
        for name in ("os", "sys"):
            m.remove_unused_import(name)
    return done
