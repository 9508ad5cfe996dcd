"""Silent fallbacks, for the audit: work that asked for an accelerator, or could have had one, and quietly did not.

* ``TPA04`` ``torch.autocast`` or ``GradScaler`` disabled itself: ``autocast("cuda")`` off CUDA (or with a dtype
  the device does not support), ``GradScaler("cuda")`` without CUDA, each with only a warning, so a run meant to
  be mixed precision runs in float32. Seen by wrapping their ``__init__`` while an audit runs (the object is
  built exactly as before; the wrapper then reads its ``_enabled``).
* ``TPA05`` a matrix product, convolution or attention ran on the CPU although the runtime picked an
  accelerator: a model or batch that never moved (the audit's function mode sees the call).
* ``TPA06`` an op fell back to the CPU on MPS (``PYTORCH_ENABLE_MPS_FALLBACK=1``): torch warns, once per
  process, that "the operator 'aten::X' is not currently supported on the MPS backend and will fall back to run
  on the CPU"; while an audit runs on MPS with the fallback on, torch is told to warn every time
  (``torch._C._set_warnAlways``) and each such warning is recorded at the user's line.
* ``TPA07`` CUDA profiling dropped: ``torch.profiler.profile(activities=[ProfilerActivity.CUDA])`` (or the
  autograd profiler's ``use_device="cuda"``) where CUDA is not available profiles the CPU only, and torch only
  warns "CUDA is not available, disabling CUDA profiling" (once per line of torch: under the audit, every time).

Each is reported at the first frame outside torch, like the CUDA uses. Eager code only: inside
``torch.compile`` these checks are skipped (they would need the frame, which breaks the graph).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from types import FrameType
from typing import Any

import torch
import torch.nn.functional as F

from torchport.checks.trace import is_internal

MPS_FALLBACK_ENV = "PYTORCH_ENABLE_MPS_FALLBACK"
_MPS_FALLBACK = re.compile(r"The operator '([^']+)' is not currently supported on the MPS backend and will fall "
                           r"back to run on the CPU")
_PROFILING_DROPPED = re.compile(r"CUDA is not available, disabling CUDA profiling")

# What belongs on an accelerator if anything does: reported when every tensor argument is on the CPU.
COMPUTE = {F.linear: "F.linear", F.conv1d: "F.conv1d", F.conv2d: "F.conv2d", F.conv3d: "F.conv3d",
           F.scaled_dot_product_attention: "F.scaled_dot_product_attention", torch.matmul: "torch.matmul",
           torch.mm: "torch.mm", torch.bmm: "torch.bmm", torch.addmm: "torch.addmm", torch.baddbmm: "torch.baddbmm",
           torch.Tensor.matmul: "Tensor.matmul", torch.Tensor.__matmul__: "Tensor.__matmul__",
           torch.Tensor.mm: "Tensor.mm", torch.Tensor.bmm: "Tensor.bmm"}

_state: dict[str, Any] = {}


def accelerator() -> str | None:
    """The accelerator the runtime picked (``"cuda"``, ``"mps"``, ``"xpu"``), or None when it picked the CPU."""
    from torchport.runtime import _backend

    kind = _backend._TYPE
    return None if kind == "cpu" else kind


def all_on_cpu(args: tuple, kwargs: dict) -> bool:
    """Whether the call has tensor arguments and every one of them is on the CPU."""
    seen = False
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            if value.device.type != "cpu":
                return False
            seen = True
    return seen


def install(record: Any) -> None:
    """Start watching (``record(code, api, frame)`` counts a finding); undone by :func:`remove`."""
    if _state:
        return
    _state["record"] = record
    _state["accelerator"] = accelerator()
    autocast, scaler = torch.amp.autocast_mode.autocast, torch.amp.grad_scaler.GradScaler
    _state["inits"] = [(autocast, autocast.__init__), (scaler, scaler.__init__)]
    autocast.__init__ = _autocast_init  # type: ignore[method-assign]
    scaler.__init__ = _scaler_init  # type: ignore[method-assign]
    _state["showwarning"] = warnings.showwarning
    warnings.showwarning = _showwarning
    for pattern in (_MPS_FALLBACK.pattern, _PROFILING_DROPPED.pattern):  # never swallowed as "already shown"
        warnings.filterwarnings("always", message=pattern)
    _state["filters"] = warnings.filters[:2]
    if _state["accelerator"] == "mps" and os.environ.get(MPS_FALLBACK_ENV, "") not in ("", "0"):
        _state["warn_always"] = torch._C._get_warnAlways()
        torch._C._set_warnAlways(True)  # torch warns once per process: every fallback op, not only the first


def remove() -> None:
    """Undo :func:`install`."""
    if not _state:
        return
    for cls, init in _state["inits"]:
        cls.__init__ = init
    if warnings.showwarning is _showwarning:
        warnings.showwarning = _state["showwarning"]
    filters: list = warnings.filters  # type: ignore[assignment]  # a list at run time
    for added in _state["filters"]:
        if added in filters:
            filters.remove(added)
    warnings._filters_mutated()  # type: ignore[attr-defined]
    if "warn_always" in _state:
        torch._C._set_warnAlways(_state["warn_always"])
    _state.clear()


def _user_frame(frame: FrameType | None) -> FrameType | None:
    from torchport.checks.audit import _origin

    # Decorators between torch and the caller (typing_extensions.deprecated wraps torch.cuda.amp.GradScaler).
    wrappers = {getattr(sys.modules.get(name), "__file__", None) for name in ("typing_extensions", "functools")}
    while frame is not None and frame.f_code.co_filename in wrappers:
        frame = frame.f_back
    where = _origin(frame)
    while where is not None and where.f_code.co_filename in wrappers:
        where = _origin(where.f_back)
    return where


def _report(code: str, api: str, frame: FrameType | None) -> None:
    where = _user_frame(frame)
    if where is not None and _state:
        _state["record"](code, api, where)


def _warning_at_caller(init: Any, *args: Any, **kwargs: Any) -> None:
    """Call ``init``; its warnings (``stacklevel=2``: the line that built the object) are shown at our caller's
    line, as without the audit, not at this module's."""
    caller = sys._getframe(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        init(*args, **kwargs)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, caller.f_code.co_filename, caller.f_lineno,
                               module_globals=caller.f_globals)


def _autocast_init(self: Any, device_type: str, dtype: Any = None, enabled: bool = True,
                   cache_enabled: bool | None = None) -> None:
    _warning_at_caller(_state["inits"][0][1], self, device_type, dtype, enabled, cache_enabled)
    if enabled and not self._enabled and not torch.compiler.is_compiling():
        _report("TPA04", f"torch.autocast({device_type!r})", sys._getframe(1))


def _scaler_init(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
    _warning_at_caller(_state["inits"][1][1], self, device, *args, **kwargs)
    enabled = kwargs.get("enabled", args[4] if len(args) > 4 else True)
    if enabled and not self._enabled and not torch.compiler.is_compiling():
        _report("TPA04", f"GradScaler({device!r})", sys._getframe(1))


def check_compute(func: Any, args: tuple, kwargs: dict) -> None:
    """``TPA05`` when ``func`` is a matrix product, convolution or attention and runs on the CPU while the
    runtime picked an accelerator. Called by the audit's function mode, in eager code only."""
    name = COMPUTE.get(func)
    if name is not None and _state.get("accelerator") and all_on_cpu(args, kwargs):
        _report("TPA05", f"{name} on the CPU although {_state['accelerator']} was there", sys._getframe(2))


def _showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                 line: str | None = None) -> None:
    match = _MPS_FALLBACK.search(str(message))
    dropped = match is None and _PROFILING_DROPPED.search(str(message)) is not None
    if match is not None or dropped:
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == warnings.__file__:  # warnings' own frames
            frame = frame.f_back
        if match is not None:
            _report("TPA06", match.group(1), frame)
        else:
            _report("TPA07", _profiling_api(frame), frame)
    shown = _state.get("showwarning") or warnings._showwarning_orig  # type: ignore[attr-defined]
    shown(message, category, filename, lineno, file, line)


_PROFILER = os.path.join("torch", "profiler", "profiler.py")


def _profiling_api(frame: FrameType | None) -> str:
    """What asked for the CUDA profiling torch dropped: ``torch.profiler.profile`` (its ``ProfilerActivity.CUDA``)
    when it is among the frames that warned, else the autograd profiler's ``use_device``."""
    while frame is not None and is_internal(frame.f_code.co_filename):
        if frame.f_code.co_filename.endswith(_PROFILER):
            return "CUDA profiling (torch.profiler.ProfilerActivity.CUDA)"
        frame = frame.f_back
    return "CUDA profiling (torch.autograd.profiler.profile(use_device='cuda'))"
