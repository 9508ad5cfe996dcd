"""Find, at run time, the CUDA uses the static migration could not see: ``Audit``.

``torchport migrate`` rewrites what it can read. Code it cannot read (third-party packages,
``getattr(torch, "cuda")``, device strings built at run time) still reaches CUDA. ``Audit``
reports each such use once per line, with the count:

* ``TPA01`` a ``torch.cuda`` attribute touched (``torch.cuda.synchronize``), seen by
  swapping the ``__class__`` of the loaded ``torch.cuda`` modules for a recording subclass;
* ``TPA02`` ``Tensor.cuda()`` called (also what ``Module.cuda()`` does);
* ``TPA03`` a CUDA device requested: ``.to("cuda")``, ``.to(0)``, ``device="cuda:1"``
  (a ``TorchFunctionMode``; a ``torch.device`` object only off a CUDA pick).

It is a detector, never a redirect: every call still does what it did, and raises where it
raised. Accesses made by torch itself or by ``torchport.runtime`` are not reported
(``torch.cuda`` attributes: only the immediate caller counts; device requests: the first
frame outside torch). The hooks live only while an audit is enabled.

``TORCHPORT_AUDIT=1`` (read when ``torchport.runtime`` is imported) runs one audit for the
whole process and prints its report to stderr at exit. Limits: the function mode is
thread-local (other threads are not audited), ``torch.cuda`` submodules imported after the
audit starts are not hooked, and ``torch.compile`` may graph-break under the mode.
"""

from __future__ import annotations

import atexit
import sys
from dataclasses import asdict, dataclass
from types import FrameType, ModuleType
from typing import IO, Any, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch._dynamo.comptime import comptime
from torch._guards import TracingContext

from ._backend import _TYPE
from .trace import _INTERNAL_PREFIXES, _short_path, is_internal

__all__ = ["CODES", "Audit", "Finding", "start_process_audit"]

CODES = {
    "TPA01": "{api} touched at run time",
    "TPA02": "{api}() called at run time",
    "TPA03": "{api}: CUDA device requested at run time",
}
_RUNTIME_DIR = _INTERNAL_PREFIXES[1]
_getattr = ModuleType.__getattribute__


@dataclass
class Finding:
    """One run-time CUDA use at one line.

    Attributes:
        code: ``"TPA01"``, ``"TPA02"`` or ``"TPA03"`` (see :data:`CODES`).
        api: what was used: ``"torch.cuda.synchronize"``, ``"Tensor.cuda"``,
            ``"Tensor.to('cuda')"``, ``"torch.zeros(device='cuda:1')"``.
        file: the caller's ``co_filename`` (absolute for imported modules).
        line: 1-based line number.
        count: times it happened at this line while the audit was enabled.
    """

    code: str
    api: str
    file: str
    line: int
    count: int = 1

    @property
    def message(self) -> str:
        """``"torch.cuda.synchronize touched at run time"`` and the like."""
        return CODES[self.code].format(api=self.api)

    def format(self) -> str:
        """``path:line: TPA01 torch.cuda.synchronize touched at run time`` (path relative to the cwd
        when under it), with ``(N times)`` appended when ``count > 1``."""
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{_short_path(self.file)}:{self.line}: {self.code} {self.message}{times}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields (without ``message``)."""
        return asdict(self)


# -- the torch.cuda attribute hook (shared by all enabled audits) ---------------
_ACTIVE: list["Audit"] = []
_SWAPPED: list[tuple[ModuleType, type]] = []
_NAMES: dict[int, str] = {}


class _AuditedModule(ModuleType):
    """A ``torch.cuda`` module whose attribute reads by user code are recorded.

    The value returned, and any ``AttributeError``, are exactly those of ``ModuleType``.
    """

    def __getattribute__(self, name: str) -> Any:
        if name[:2] == "__":
            return _getattr(self, name)
        try:
            frame = sys._getframe(1)
        except ValueError:  # called from C with no Python frame above
            return _getattr(self, name)
        if is_internal(frame.f_code.co_filename):  # torch or torchport.runtime itself
            return _getattr(self, name)
        try:
            value = _getattr(self, name)
        except AttributeError:
            _record("TPA01", f"{_NAMES.get(id(self), 'torch.cuda')}.{name}", frame)
            raise
        if type(value) is not _AuditedModule:  # a hooked submodule records the full name itself
            _record("TPA01", f"{_NAMES.get(id(self), 'torch.cuda')}.{name}", frame)
        return value


def _install_hooks() -> None:
    for name, module in list(sys.modules.items()):
        if (name == "torch.cuda" or name.startswith("torch.cuda.")) and type(module) is ModuleType:
            _NAMES[id(module)] = name
            module.__class__ = _AuditedModule
            _SWAPPED.append((module, ModuleType))


def _remove_hooks() -> None:
    while _SWAPPED:
        module, cls = _SWAPPED.pop()
        if type(module) is _AuditedModule:
            module.__class__ = cls
        _NAMES.pop(id(module), None)


def _record(code: str, api: str, frame: FrameType) -> None:
    key = (code, api, frame.f_code.co_filename, frame.f_lineno)
    for audit in _ACTIVE:
        audit._counts[key] = audit._counts.get(key, 0) + 1


# -- device requests (TorchFunctionMode) ----------------------------------------
_TENSOR_CUDA = torch._C.TensorBase.cuda
_TENSOR_TO = torch._C.TensorBase.to


def _cuda_spec(spec: Any, strict: bool) -> Optional[str]:
    """``repr`` of ``spec`` if it asks for CUDA, else None.

    Strings ``"cuda"``/``"cuda:N"`` and integer indices (the accelerator, i.e. CUDA in code
    written for it) always do; a ``torch.device`` of type cuda only when ``strict`` (it may
    be ``tp.device()`` on a CUDA machine otherwise).
    """
    if isinstance(spec, str):
        return repr(spec) if spec.strip().startswith("cuda") else None
    if isinstance(spec, int) and not isinstance(spec, bool):
        return repr(spec)
    if isinstance(spec, torch.device) and spec.type == "cuda" and strict:
        return repr(str(spec))
    return None


def _api_name(func: Any) -> str:
    if getattr(func, "__objclass__", None) is torch._C.TensorBase:
        return f"Tensor.{func.__name__}"
    module = getattr(func, "__module__", None) or "torch"
    if module.startswith("torch._C"):
        module = "torch"
    return f"{module}.{getattr(func, '__name__', func)}"


def _origin(frame: Optional[FrameType]) -> Optional[FrameType]:
    """The first frame outside torch, or None if the call comes from torchport.runtime."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_RUNTIME_DIR):
            return None
        if not is_internal(filename):
            return frame
        frame = frame.f_back
    return None


class _DeviceUseMode(TorchFunctionMode):
    """Records ``.cuda()``, ``.to(<cuda>)`` and ``device=<cuda>`` before running the call unchanged."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        kwargs = kwargs or {}
        if func is _TENSOR_CUDA or func is _TENSOR_TO or "device" in kwargs:
            if torch.compiler.is_compiling():
                _check_traced(func, args, kwargs)
            else:
                self._check(func, args, kwargs)
        return func(*args, **kwargs)

    def _check(self, func: Any, args: tuple, kwargs: dict) -> None:
        caller = sys._getframe(2)
        strict = _TYPE != "cuda"
        if func is _TENSOR_CUDA:  # also Module.cuda(), via torch's _apply
            code, api = "TPA02", "Tensor.cuda"
        else:
            if not strict and is_internal(caller.f_code.co_filename):
                return  # torch's own CUDA work on a CUDA pick is expected, not a leftover
            spec = kwargs.get("device")
            if func is _TENSOR_TO and spec is None and len(args) > 1:
                spec = args[1]
            shown = _cuda_spec(spec, strict)
            if shown is None:
                return
            name = _api_name(func)
            code = "TPA03"
            api = f"{name}({shown})" if func is _TENSOR_TO and "device" not in kwargs else f"{name}(device={shown})"
        frame = _origin(caller)
        if frame is not None:
            _record(code, api, frame)


def _check_traced(func: Any, args: tuple, kwargs: dict) -> None:
    strict = _TYPE != "cuda"
    if func is _TENSOR_CUDA:
        code, api = "TPA02", "Tensor.cuda"
    else:
        spec = kwargs.get("device")
        if func is _TENSOR_TO and spec is None and len(args) > 1:
            spec = args[1]
        shown = _cuda_spec(spec, strict)
        if shown is None:
            return
        name = _api_name(func)
        code = "TPA03"
        api = f"{name}({shown})" if func is _TENSOR_TO and "device" not in kwargs else f"{name}(device={shown})"
    comptime(_record_traced)


def _record_traced(ctx: Any) -> None:
    code = ctx.get_local("code").as_python_constant()
    api = ctx.get_local("api").as_python_constant()
    print("TRACED", code, api, file=sys.stderr)
    for fs in TracingContext.extract_stack():
        print("  ", fs.filename, fs.lineno, file=sys.stderr)


class Audit:
    """Record run-time CUDA uses by user and third-party code (see the module docstring).

    Use as ``with Audit() as audit: ...`` or call :meth:`enable`/:meth:`disable`. Audits nest;
    the hooks are installed by the first enabled one and removed with the last (so
    ``torch.cuda.__class__`` is ``ModuleType`` again after exit).

    Args:
        report: print :meth:`format` to ``file`` when the ``with`` block exits.
        file: text stream for the report; None means ``sys.stderr`` at print time.

    No PyTorch counterpart; complements ``torchport migrate`` (its ``TP1xx``/``TP2xx`` report
    what the static pass saw, ``TPA0x`` what only a run shows).
    """

    def __init__(self, report: bool = True, file: Optional[IO[str]] = None) -> None:
        self.report_on_exit = report
        self.file = file
        self.enabled = False
        self._mode: Optional[_DeviceUseMode] = None
        self._counts: dict[tuple[str, str, str, int], int] = {}

    def enable(self) -> "Audit":
        """Start recording (install the hooks if no other audit has). Idempotent."""
        if self.enabled:
            return self
        if not _ACTIVE:
            _install_hooks()
        _ACTIVE.append(self)
        self._mode = _DeviceUseMode()
        self._mode.__enter__()
        self.enabled = True
        return self

    def disable(self) -> None:
        """Stop recording; the last audit to stop removes the hooks. Idempotent.

        The function mode is popped only if it is still on top of torch's mode stack (at
        interpreter exit another mode may have been left above it).
        """
        if not self.enabled:
            return
        self.enabled = False
        stack = torch.overrides._get_current_function_mode_stack()
        if stack and stack[-1] is self._mode:
            self._mode.__exit__(None, None, None)
        self._mode = None
        _ACTIVE.remove(self)
        if not _ACTIVE:
            _remove_hooks()

    def __enter__(self) -> "Audit":
        return self.enable()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.disable()
        if self.report_on_exit:
            self.report()

    @property
    def findings(self) -> list[Finding]:
        """Every finding so far, sorted by file, line, code and API."""
        found = [Finding(code, api, f, line, n) for (code, api, f, line), n in self._counts.items()]
        return sorted(found, key=lambda x: (x.file, x.line, x.code, x.api))

    def format(self) -> str:
        """One ``path:line: TPA0x ...`` line per finding, then a count line."""
        found = self.findings
        lines = [f.format() for f in found]
        total = sum(f.count for f in found)
        lines.append(
            f"[torchport audit] {len(found)} run-time CUDA use site(s), {total} use(s)"
            if found else "[torchport audit] no run-time CUDA use found"
        )
        return "\n".join(lines)

    def report(self, file: Optional[IO[str]] = None) -> None:
        """Print :meth:`format` to ``file`` (default: the audit's file, else stderr)."""
        print(self.format(), file=file or self.file or sys.stderr, flush=True)


_PROCESS_AUDIT: Optional[Audit] = None


def start_process_audit() -> Audit:
    """Start the process-wide audit of ``TORCHPORT_AUDIT=1`` (idempotent); it reports at exit."""
    global _PROCESS_AUDIT
    if _PROCESS_AUDIT is None:
        _PROCESS_AUDIT = Audit(report=False).enable()
        atexit.register(_finish_process_audit)
    return _PROCESS_AUDIT


def _finish_process_audit() -> None:
    if _PROCESS_AUDIT is not None:
        _PROCESS_AUDIT.disable()
        _PROCESS_AUDIT.report()
