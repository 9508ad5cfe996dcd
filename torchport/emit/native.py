"""Plain PyTorch for the runtime's calls (``--runtime native``), for a minimum torch version.

During the pass the rules' runtime calls are written against a placeholder alias; `NativeRuntime.finish`
then replaces each call by its native form (`native_call`), or, where there is none at the target
version, by a call of the vendored runtime (`PackageRuntime` of the vendored module) and a diagnostic
that says why. The device is chosen once, in a module-level constant after the imports::

    DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.device_count() else torch.device("cpu")

which counts devices as ``torch.cuda.device_count()`` does, through NVML on CUDA: no CUDA context and no
``cuInit``, so a later ``fork`` whose child uses CUDA still works, as it did before the port (the unmigrated
module touched no backend at import). ``torch.accelerator.is_available()`` (and ``current_accelerator(
check_available=True)``) would call ``cudaGetDeviceCount`` and break that unless
``PYTORCH_NVML_BASED_CUDA_CHECK=1``. Every form is, on CUDA, the ``torch.cuda`` call it
replaces (``torch.get_device_module(DEVICE)`` is ``torch.cuda`` there), and right on MPS, XPU and CPU.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from torchport.emit import placement
from torchport.emit.package import PackageRuntime
from torchport.model import torch_facts
from torchport.results import Diagnostic

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

_PLACEHOLDER = "__torchport_native__"
_NAMES = ("DEVICE", "ACCELERATOR", "TORCH_DEVICE", "PORTED_DEVICE")
_INDEXED = '("cuda", "xpu")'  # device types with an index, pinned memory and DDP device ids

# name -> (minimum (major, minor), arity allowed, template). In templates ``{D}`` is the device constant,
# ``{t}`` torch's name in the module, ``{0}`` the first argument's code, ``{args}`` all of them.
_FORMS: dict[str, tuple[tuple[int, int], Callable[[int], bool], str]] = {
    "device": ((2, 6), lambda n: n == 0, "{D}"),
    "device_type": ((2, 6), lambda n: n == 0, "{D}.type"),
    "device_str": ((2, 6), lambda n: n == 0, "str({D})"),
    "available_device": ((2, 6), lambda n: n == 0, '{D} if {t}.accelerator.is_available() else {t}.device("cpu")'),
    "available_device_str": ((2, 6), lambda n: n == 0, 'str({D}) if {t}.accelerator.is_available() else "cpu"'),
    "available_device_type": ((2, 6), lambda n: n == 0, '{D}.type if {t}.accelerator.is_available() else "cpu"'),
    "is_available": ((2, 6), lambda n: n == 0, "{t}.accelerator.is_available()"),
    "device_count": ((2, 6), lambda n: n == 0, "{t}.accelerator.device_count()"),
    "process_count": ((2, 6), lambda n: n == 0, "max({t}.accelerator.device_count(), 1)"),
    "current_device": ((2, 7), lambda n: n == 0,
                       '{t}.accelerator.current_device_index() if {D}.type != "cpu" else 0'),
    "set_device": ((2, 6), lambda n: n == 1,
                   '{t}.get_device_module({D}).set_device({0}) if {D}.type != "mps" else None'),
    "synchronize": ((2, 6), lambda n: n == 0, "{t}.get_device_module({D}).synchronize()"),
    "init": ((2, 6), lambda n: n == 0, "{t}.get_device_module({D}).init() if {D}.type in " + _INDEXED + " else None"),
    "empty_cache": ((2, 6), lambda n: n == 0,
                    '{t}.get_device_module({D}).empty_cache() if {D}.type != "cpu" else None'),
    "memory_allocated": ((2, 9), lambda n: n <= 1,
                         '{t}.accelerator.memory_allocated({args}) if {D}.type != "cpu" else 0'),
    "max_memory_allocated": ((2, 9), lambda n: n <= 1,
                             '{t}.accelerator.max_memory_allocated({args}) if {D}.type != "cpu" else 0'),
    "memory_reserved": ((2, 9), lambda n: n <= 1,
                        '{t}.accelerator.memory_reserved({args}) if {D}.type != "cpu" else 0'),
    "max_memory_reserved": ((2, 9), lambda n: n <= 1,
                            '{t}.accelerator.max_memory_reserved({args}) if {D}.type != "cpu" else 0'),
    "reset_peak_memory_stats": ((2, 9), lambda n: n <= 1,
                                '{t}.accelerator.reset_peak_memory_stats({args}) if {D}.type != "cpu" else None'),
    "set_per_process_memory_fraction": ((2, 6), lambda n: 1 <= n <= 2,
                                        '{t}.cuda.set_per_process_memory_fraction({args}) if {D}.type == "cuda" '
                                        'else None'),
    "manual_seed": ((2, 6), lambda n: n == 1,
                    '{t}.get_device_module({D}).manual_seed({0}) if {D}.type != "cpu" else {t}.manual_seed({0})'),
    "manual_seed_all": ((2, 6), lambda n: n == 1,
                        "{t}.get_device_module({D}).manual_seed_all({0}) if {D}.type in " + _INDEXED
                        + " else {t}.manual_seed({0})"),
    "pin_memory_available": ((2, 6), lambda n: n == 0, "{D}.type in " + _INDEXED),
    "ddp_device_ids": ((2, 6), lambda n: n == 1, "{0} if {D}.type in " + _INDEXED + " else None"),
    "process_group_device_id": ((2, 6), lambda n: n == 1, '{0} if {D}.type == "cuda" else None'),
    "distributed_backend": ((2, 6), lambda n: n == 0, "{t}.distributed.get_default_backend_for_device({D})"),
    "map_location": ((2, 6), lambda n: n == 0, 'None if {D}.type == "cuda" else {D}'),
    "fsdp_device_id": ((2, 6), lambda n: n == 1,
                       '{0} if {D}.type == "cuda" else {D} if {D}.type == "xpu" else {t}.device("cpu")'),
}
# Calls with no form, and why: said in the site's note.
_NO_FORM = {str(api.becomes): api.no_plain_form for api in torch_facts.CUDA_APIS.values() if api.no_plain_form}
# Forms whose argument is written twice: only a plain name may be repeated.
_REPEATS = {"pin_memory": "{0}.pin_memory() if {D}.type in " + _INDEXED + " else {0}"}


# A module that makes a process group or wraps a model for one: the runtime's calls there, or the names.
_GROUP_CALLS = frozenset(torch_facts.words("runtime_group_call"))
_GROUP_SOURCE = torch_facts.text("group_source")
# torch.distributed has no MPS backend (gloo carries CPU tensors): as the runtime does once a group exists.
_OFF_MPS = ('if {D}.type == "mps":  # torch.distributed has no MPS backend: a process group computes on the CPU\n'
            '    {D} = {t}.device("cpu")\n')


# The device as PyTorch's tutorials pick it: where the module picked its own device, as it did, so that
# asking CUDA whether it is available at import (which a later fork's children feel) stays as it was.
_AVAILABLE = '{t}.accelerator.current_accelerator() if {t}.accelerator.is_available() else {t}.device("cpu")'


def _bound_once(source: str, name: str) -> bool:
    """Whether ``name`` is bound exactly once in the module ``source`` (an assignment, a parameter, an
    import, a ``def``, ``global``... anywhere count)."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) or isinstance(node, ast.arg):
            count += (node.id if isinstance(node, ast.Name) else node.arg) == name
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler,
                               ast.MatchAs, ast.MatchStar)):
            count += getattr(node, "name", None) == name
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            count += 2 * (name in node.names)
        elif isinstance(node, ast.alias):
            count += (node.asname or node.name.split(".")[0]) == name
    return count == 1


def _device_line(torch_name: str, name: str) -> str:
    t = torch_name
    return f'{name} = {t}.accelerator.current_accelerator() if {t}.accelerator.device_count() else {t}.device("cpu")\n'


def _indexed_cuda_string(node: cst.BaseExpression) -> bool:
    """``f"cuda:{rank}"`` or ``"cuda:1"``, in single quotes: a CUDA device with an index, as text."""
    if isinstance(node, cst.FormattedString):
        return len(node.end) == 1 and bool(node.parts) and isinstance(node.parts[0], cst.FormattedStringText) \
            and node.parts[0].value.startswith("cuda:")
    return isinstance(node, cst.SimpleString) and torch_facts.text("indexed_cuda_literal").fullmatch(
        node.value) is not None


class NativeRuntime:
    """Renders runtime calls as plain PyTorch for ``version``; a call with no native form there goes to
    the vendored runtime ``vendor_module`` (see `PackageRuntime`) and is reported."""

    def __init__(self, version: tuple[int, int], vendor_module: str, bootstrap: str = "") -> None:
        self.version = version
        self.vendor = PackageRuntime(vendor_module, bootstrap)
        self.device_name = "DEVICE"
        self._sites: dict[int, Diagnostic | None] = {}

    def prepare(self, m: Migrator, module: cst.Module) -> None:
        self.vendor.prepare(m, module)
        self.device_name = next(n for n in _NAMES if not re.search(rf"\b{n}\b", m.source))

    def attr(self, m: Migrator, name: str) -> cst.BaseExpression:
        node = cst.Attribute(value=cst.Name(_PLACEHOLDER), attr=cst.Name(name))
        self._sites[id(node)] = m.sites[-1] if m.sites else None
        return node

    def called(self, node: cst.CSTNode) -> str | None:
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name) and node.func.value.value == _PLACEHOLDER):
            return node.func.attr.value
        return None

    # ---- after the pass ----------------------------------------------------------------------------

    def native_call(self, name: str, args: Sequence[cst.Arg], torch_name: str,
                    to_argument: bool = False) -> tuple[str | None, str]:
        """The native code for ``name(args)`` (None when there is none) and, if None, the reason.

        ``to_argument``: the call is the device argument of ``.to(...)``, where an index passes as it is.
        """
        if name in _NO_FORM:
            return None, _NO_FORM[name]
        if name not in _FORMS and name not in _REPEATS and name not in ("device_str", "get_device_name"):
            return None, "no plain-PyTorch form keeps its CUDA behaviour and works on every device"
        if self.version < (2, 6):
            return None, "its native form needs torch >= 2.6 (torch.accelerator)"
        if any(a.keyword or a.star for a in args):
            return None, "no native form for keyword or unpacked arguments"
        codes = [cst.Module([]).code_for_node(a.value) for a in args]
        # an argument that binds looser than a conditional expression keeps its own parentheses in the form
        codes = [f"({c})" if isinstance(a.value, (cst.IfExp, cst.Lambda, cst.NamedExpr)) and not a.value.lpar
                 else c for a, c in zip(args, codes, strict=True)]
        fill = {"D": self.device_name, "t": torch_name, "args": ", ".join(codes)}
        if name == "device_str" and len(args) == 1 and _indexed_cuda_string(args[0].value):
            text = codes[0]  # f"cuda:{rank}" -> f"{DEVICE.type}:{rank}", the same string on CUDA
            quote = text.lstrip("fFrRuU")[0]
            body = text[text.index(quote) + 1 + len("cuda"):-1]
            indexed = f"f{quote}{{{self.device_name}.type}}{body}{quote}"
            return f"{indexed} if {self.device_name}.type in {_INDEXED} else str({self.device_name})", ""
        if name == "get_device_name":
            return self._device_name(args, codes, fill)
        if name == "device" and len(args) == 1:
            device = self._indexed_device(args[0].value, codes[0], fill, to_argument)
            if device is not None:
                return device, ""
        if name in _REPEATS and len(args) == 1 and isinstance(args[0].value, cst.Name):
            return _REPEATS[name].format(*codes, **fill), ""
        form = _FORMS.get(name)
        if form is None:
            return None, "no native form for these arguments"
        minimum, arity, template = form
        if self.version < minimum:
            return None, f"its native form needs torch >= {minimum[0]}.{minimum[1]}"
        if not arity(len(args)):
            return None, "no native form for these arguments"
        return template.format(*codes, **fill), ""

    def _device_name(self, args: Sequence[cst.Arg], codes: list[str], fill: dict[str, str]) -> tuple[str | None, str]:
        """``get_device_name()``, ``(0)`` or ``(DEVICE)``: on CUDA and XPU the backend's own call (exactly
        ``torch.cuda.get_device_name`` on CUDA); on MPS and CPU the device type, a name to print."""
        d = fill["D"]
        if len(args) > 1 or (args and not (isinstance(args[0].value, cst.Integer) or (
                isinstance(args[0].value, cst.Name) and args[0].value.value == d))):
            return None, "no native form for this argument (on XPU the runtime maps a CUDA device to the XPU)"
        return (f"{fill['t']}.get_device_module({d}).get_device_name({fill['args']}) if {d}.type in {_INDEXED} "
                f"else {d}.type"), ""

    def needed(self, name: str) -> tuple[int, int] | None:
        """The oldest torch where the runtime's ``name`` has a native form (for some arguments), else None."""
        if name == "get_device_name":
            return (2, 6)
        if name in _FORMS:
            return max(_FORMS[name][0], (2, 6))
        return (2, 6) if name in _REPEATS else None

    def _indexed_device(self, node: cst.BaseExpression, code: str, fill: dict[str, str],
                        to_argument: bool) -> str | None:
        """``device(i)``: a CUDA device with an index (``f"cuda:{i}"``, ``1``, ``rank`` given to ``.to``).

        On CUDA each form is what the original passed (``torch.device("cuda:1")``, ``.to(rank)``); on XPU
        the index on the XPU (or, for ``.to(rank)``, the current XPU: ``set_device`` chose it); on MPS and
        CPU the one device, as the runtime's ``device(i)``.
        """
        d, t, indexed = fill["D"], fill["t"], f"{fill['D']}.type in {_INDEXED}"
        if _indexed_cuda_string(node):
            quote = code.lstrip("fFrRuU")[0]
            body = code[code.index(quote) + 1 + len("cuda"):-1]
            return f"{t}.device(f{quote}{{{d}.type}}{body}{quote}) if {indexed} else {d}"
        if isinstance(node, cst.Integer):
            return f"{t}.device({d}.type, {code}) if {indexed} else {d}"
        if to_argument and _repeatable(node):
            return f'{code} if {d}.type == "cuda" else {d}'
        return None

    def finish(self, m: Migrator, module: cst.Module) -> cst.Module:
        torch_name = m.torch_name or "torch"
        own = self._own_device(m, module)
        if own is not None:  # the module's own device line is the one: it picks the device, as it did
            index, self.device_name, kind = own
            line = module.body[index]
            assert isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign)
            chosen = cst.parse_expression(_AVAILABLE.format(t=torch_name) if kind == "available_device" else
                                          _device_line(torch_name, "_").partition(" = ")[2])
            body = list(module.body)
            body[index] = line.with_changes(body=[line.body[0].with_changes(value=chosen), *line.body[1:]])
            module = module.with_changes(body=body)
        rewriter = _Rewriter(self, m, torch_name)
        module = module.visit(rewriter)
        if rewriter.native or own is not None:
            m.torch_attr("device")  # schedules `import torch` where the module has none
            grouped = bool(rewriter.names & _GROUP_CALLS) or _GROUP_SOURCE.search(m.source) is not None
            if own is None:
                module = self._add_device_line(module, torch_name, grouped)
            elif grouped:
                off_mps = cst.parse_statement(_OFF_MPS.format(D=self.device_name, t=torch_name))
                module = module.with_changes(body=[*module.body[:own[0] + 1], off_mps, *module.body[own[0] + 1:]])
        return self.vendor.finish(m, module)

    def _own_device(self, m: Migrator, module: cst.Module) -> tuple[int, str, str] | None:
        """``(index, name, runtime call)`` of the module's own top-level ``name = <the device>`` (the port
        of ``torch.device("cuda" if torch.cuda.is_available() else "cpu")``, ``available_device``, or of
        ``torch.device("cuda")``, ``device``), where ``name`` is bound nowhere else in the module and no
        statement that runs at import before it needs the device; else None."""
        if self.version < (2, 6):
            return None
        for index, statement in enumerate(module.body):
            smalls = _smalls(statement)
            if len(smalls) == 1 and isinstance(smalls[0], cst.Assign) and len(smalls[0].targets) == 1 \
                    and isinstance(smalls[0].targets[0].target, cst.Name) \
                    and self.called(smalls[0].value) in ("available_device", "device") \
                    and not smalls[0].value.args:  # type: ignore[attr-defined]
                name = smalls[0].targets[0].target.value
                kind = self.called(smalls[0].value)
                return (index, name, kind) if kind and _bound_once(m.source, name) else None
            if isinstance(statement, cst.FunctionDef):  # its body runs later; decorators and defaults now
                statement = statement.with_changes(body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])]))
            if _PLACEHOLDER in cst.Module([]).code_for_node(statement):
                return None
        return None

    def _add_device_line(self, module: cst.Module, torch_name: str, grouped: bool) -> cst.Module:
        """``DEVICE = ...`` after the module's leading imports (and docstring); see `torchport.emit.placement`."""
        uses = re.compile(rf"\b{self.device_name}\b")
        at = placement.after_imports(module.body, lambda statement: any(
            isinstance(s, cst.Import) and any(_binds(a, torch_name) for a in s.names) for s in _smalls(statement)),
            lambda statement: uses.search(cst.Module([]).code_for_node(statement)) is not None)
        lines = [cst.parse_statement(_device_line(torch_name, self.device_name))]
        if grouped:
            lines.append(cst.parse_statement(_OFF_MPS.format(D=self.device_name, t=torch_name)))
        guard = placement.torch_try(module.body)
        if guard is not None:
            return placement.into_else(module, guard, lines, self.device_name)
        return placement.insert(module, at, lines)


def _repeatable(node: cst.BaseExpression) -> bool:
    """A name, ``self.rank`` or ``ids[0]``: written twice, it reads the same value twice."""
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return _repeatable(node.value)
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        index = node.slice[0].slice.value
        return _repeatable(node.value) and isinstance(index, (cst.Integer, cst.SimpleString))
    return False


def _smalls(statement: cst.BaseStatement) -> Sequence[cst.BaseSmallStatement]:
    return statement.body if isinstance(statement, cst.SimpleStatementLine) else ()


def _binds(alias: cst.ImportAlias, torch_name: str) -> bool:
    """Whether ``import ...`` binds ``torch_name`` to torch (``import torch``, ``import torch.nn``,
    ``import torch as th``)."""
    if alias.asname is not None:
        return alias.evaluated_alias == torch_name and alias.evaluated_name == "torch"
    return alias.evaluated_name.split(".")[0] == torch_name


class _Rewriter(cst.CSTTransformer):
    """Replaces the placeholder calls with their native form or the vendored runtime's call."""

    def __init__(self, native: NativeRuntime, m: Migrator, torch_name: str) -> None:
        super().__init__()
        self.r, self.m, self.torch_name = native, m, torch_name
        self.native = 0
        self.names: set[str] = set()  # the runtime's names this module calls
        self._called: set[int] = set()
        self._to_arguments: set[int] = set()  # the device argument of each `.to(...)`

        self._bare: set[int] = set()  # values that need no parentheses around a conditional expression
        self._quotes: list[str] = []  # the quote of each f-string around the node being visited
        self._conditionals = 0  # conditional expressions around the node being visited

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._conditionals += 1

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        self._conditionals -= 1
        return updated

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._quotes.append(node.start[-1])

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString) -> cst.FormattedString:
        self._quotes.pop()
        return updated

    def visit_Call(self, node: cst.Call) -> None:
        self._called.add(id(node.func))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to" and node.args \
                and not (node.args[0].keyword or node.args[0].star):
            self._to_arguments.add(id(node.args[0].value))

    def visit_Expr(self, node: cst.Expr) -> None:
        self._bare.add(id(node.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bare.add(id(node.value))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._bare.add(id(node.value))

    def visit_Arg(self, node: cst.Arg) -> None:
        self._bare.add(id(node.value))

    def _fallback(self, node: cst.Attribute, reason: str) -> cst.BaseExpression:
        """The vendored runtime's ``name`` for the placeholder ``node`` (an original node), reported, and
        recorded for the run's summary (`torchport.emit.torch_version.fallback_note`)."""
        site = self.r._sites.get(id(node))
        name = node.attr.value
        self.m.facts.setdefault("vendored", []).append(site.line if site is not None else 0)  # one per site
        needs = self.r.needed(name)
        if needs is not None and self.r.version < needs:
            self.m.facts.setdefault("vendored_needs", []).append(needs[0] * 100 + needs[1])
        if site is not None:
            self.m.diagnostics.append(Diagnostic(site.code, site.line, site.column,
                                                 f"kept as the vendored runtime's {name} (native output for "
                                                 f"torch {self.r.version[0]}.{self.r.version[1]}): {reason}"))
        return self.r.vendor.attr(self.m, name)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                and func.value.value == _PLACEHOLDER):
            return updated
        self.names.add(func.attr.value)
        code, reason = self.r.native_call(func.attr.value, updated.args, self.torch_name,
                                          to_argument=id(original) in self._to_arguments)
        if code is not None and self._quotes:  # inside an f-string: before 3.12 its own quote ends it
            if len(set(self._quotes)) > 1:
                code, reason = None, "inside nested f-strings that use both quotes"
            elif self._quotes[0] == '"':
                code = code.replace('"', "'")
        expression = cst.parse_expression(code) if code is not None else None
        if isinstance(expression, cst.IfExp) and (self._conditionals or any(
                isinstance(a.value, cst.IfExp) for a in updated.args)):
            expression, reason = None, "its native form is a conditional expression and would sit in another one " \
                                       "(a one-line nested conditional)"
        if expression is None:
            return updated.with_changes(func=self._fallback(original.func, reason))  # type: ignore[arg-type]
        self.native += 1
        if isinstance(expression, cst.IfExp) and id(original) not in self._bare:
            return cst.parse_expression(f"({code})")
        return expression

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if id(original) not in self._called and isinstance(updated.value, cst.Name) \
                and updated.value.value == _PLACEHOLDER:
            return self._fallback(original, "not called, or called with unpacked arguments")
        return updated
