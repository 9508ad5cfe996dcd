"""Pinned memory, "is this tensor on the accelerator", NVTX-style profiler ranges,
and the legacy default tensor type."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

import torch

from . import _backend as _b

T = TypeVar("T")

_range_tls = threading.local()  # per-thread stack of open record_function ranges, as NVTX's
_runtime_default_device = False  # set_default_tensor_type() called torch.set_default_device


def _reset_extras() -> None:
    global _runtime_default_device
    _runtime_default_device = False
    _range_tls.__dict__.pop("ranges", None)


_b._resets.append(_reset_extras)


def pin_memory_available() -> bool:
    """Whether pinned host memory helps here: True on CUDA and XPU, False on MPS and CPU.

    Used for ``pin_memory=`` arguments (``DataLoader``, ``torch.empty``); mirrors what
    ``pin_memory=True`` means on a CUDA machine. On CUDA: exactly ``True``.
    """
    return _b._INDEXED  # page-locked host memory exists for CUDA and XPU only


def pin_memory(obj: T) -> T:
    """``obj.pin_memory()`` where pinned memory exists, else an unpinned copy; mirrors ``Tensor.pin_memory``.

    Args:
        obj: a tensor, or any object with a ``pin_memory()`` method (a custom batch).

    Returns:
        On CUDA/XPU: exactly ``obj.pin_memory()``. Elsewhere (where ``Tensor.pin_memory()`` raises or pins
        nothing) a tensor gives a new copy with the same strides, as ``pin_memory()`` of an unpinned tensor
        does, so code that frees the original's storage afterwards (``t.storage().resize_(0)``) keeps its copy;
        any other object is returned as it is.
    """
    if _b._INDEXED:
        return obj.pin_memory()  # type: ignore[attr-defined]
    if isinstance(obj, torch.Tensor):
        return obj.clone()  # type: ignore[return-value]  # strides kept, as pin_memory() keeps them
    return obj


def on_accelerator(tensor: torch.Tensor | torch.nn.Module) -> bool:
    """Whether ``tensor`` lives on the picked accelerator; the portable ``Tensor.is_cuda``.

    On CUDA: ``tensor.device.type == "cuda"`` (``is_cuda``). Always False on a
    CPU-only run, as ``is_cuda`` is there. A module is judged by its first
    parameter or buffer (False when it has none).
    """
    kind = _b._TYPE
    if kind == "cpu":
        return False
    if isinstance(tensor, torch.nn.Module):
        first: torch.Tensor | None = next(iter(tensor.parameters()), None)
        first = first if first is not None else next(iter(tensor.buffers()), None)
        return first is not None and first.device.type == kind
    return tensor.device.type == kind


def _ranges() -> list[Any]:
    ranges = getattr(_range_tls, "ranges", None)
    if ranges is None:
        ranges = _range_tls.ranges = []
    return ranges


def range_push(msg: str) -> int:
    """Open a named profiler range; mirrors ``torch.cuda.nvtx.range_push``.

    On CUDA: exactly ``torch.cuda.nvtx.range_push(msg)`` (visible in Nsight).
    Elsewhere: a ``torch.profiler.record_function(msg)`` range, visible in
    ``torch.profiler`` traces, kept on a per-thread stack.

    Args:
        msg: the range name (str).

    Returns:
        The 0-based depth of the range started, as NVTX does.
    """
    if _b._CUDA:
        return torch.cuda.nvtx.range_push(msg)
    scope = torch.profiler.record_function(msg)
    scope.__enter__()
    ranges = _ranges()
    ranges.append(scope)
    return len(ranges) - 1


def range_pop() -> int:
    """Close the innermost range opened by ``range_push``; mirrors ``torch.cuda.nvtx.range_pop``.

    On CUDA: exactly ``torch.cuda.nvtx.range_pop()``. Elsewhere closes the
    thread's innermost ``record_function`` range.

    Returns:
        The depth left, or -1 when no range was open (NVTX's answer too).
    """
    if _b._CUDA:
        return torch.cuda.nvtx.range_pop()
    ranges = _ranges()
    if not ranges:
        return -1
    ranges.pop().__exit__(None, None, None)
    return len(ranges)


@contextlib.contextmanager
def _record_range(name: str) -> Iterator[None]:
    with torch.profiler.record_function(name):
        yield


def range(msg: str, *args: Any, **kwargs: Any) -> contextlib.AbstractContextManager:
    """Context manager and decorator for a named range; mirrors ``torch.cuda.nvtx.range``.

    ``with tp.range("step {}", i): ...`` or ``@tp.range("forward")``. Extra
    arguments are passed to ``msg.format()``, as in torch.

    On CUDA: exactly ``torch.cuda.nvtx.range(msg, *args, **kwargs)`` (an NVTX
    range, visible in Nsight). Elsewhere: a ``torch.profiler.record_function``
    range named ``msg.format(*args, **kwargs)``.

    Raises:
        IndexError, KeyError: from ``msg.format`` when the arguments do not fit
            (off CUDA at the call; torch raises on entering the range).
    """
    if _b._CUDA:
        return torch.cuda.nvtx.range(msg, *args, **kwargs)
    return _record_range(msg.format(*args, **kwargs) if args or kwargs else msg)


def mark(msg: str) -> None:
    """Mark an instantaneous event; mirrors ``torch.cuda.nvtx.mark``.

    On CUDA: exactly ``torch.cuda.nvtx.mark(msg)``. Elsewhere: a zero-length
    ``torch.profiler.record_function(msg)`` range (shows in profiler traces).
    """
    if _b._CUDA:
        return torch.cuda.nvtx.mark(msg)
    with torch.profiler.record_function(msg):
        pass
    return None


def _cuda_tensor_type(t: Any) -> Any:
    """The legacy CUDA tensor type class ``t`` names (class or dotted name), else None."""
    if isinstance(t, str):
        if not t.startswith("torch.cuda."):
            return None
        from torch._utils import _import_dotted_name

        t = _import_dotted_name(t)  # raises like torch for an unknown name
    if isinstance(t, type) and getattr(t, "is_cuda", None) is True:  # torch.Tensor's is a descriptor
        return t
    return None


def set_default_tensor_type(t: Any) -> None:
    """Set the default floating point tensor type; mirrors ``torch.set_default_tensor_type``.

    On CUDA: exactly ``torch.set_default_tensor_type(t)``.

    Elsewhere, a CUDA type (``torch.cuda.HalfTensor`` or ``"torch.cuda.HalfTensor"``)
    sets the default dtype through its CPU counterpart
    (``torch.set_default_tensor_type(torch.HalfTensor)``) and, on MPS/XPU, the
    default device to the picked device (``torch.set_default_device``; on CPU
    it already is). Any other ``t`` (``torch.FloatTensor``,
    ``"torch.DoubleTensor"``) goes to ``torch.set_default_tensor_type(t)``, and a
    default device set earlier by this function is undone
    (``torch.set_default_device(None)``).

    Args:
        t: a legacy tensor type class or its dotted name (str).

    Raises:
        TypeError: from torch, for a non floating point or sparse type
            ("only floating-point types are supported as the default type").
        AttributeError, ModuleNotFoundError: from torch, for an unknown name.

    Note: torch deprecates this function (a UserWarning, once per process) and
    keeps the default device per thread, while the default dtype is global.
    """
    global _runtime_default_device
    if _b._CUDA:
        return torch.set_default_tensor_type(t)
    cuda_type = _cuda_tensor_type(t)
    if cuda_type is not None:
        base = torch.sparse if cuda_type.is_sparse else torch
        torch.set_default_tensor_type(getattr(base, cuda_type.__name__))
        if _b._ACCEL:
            torch.set_default_device(_b._DEVICE)
            _runtime_default_device = True
        return None
    torch.set_default_tensor_type(t)
    if _runtime_default_device:
        torch.set_default_device(None)
        _runtime_default_device = False
    return None

