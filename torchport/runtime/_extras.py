"""Pinned memory, "is this tensor on the accelerator", and NVTX-style profiler ranges."""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from ._backend import _TYPE

T = TypeVar("T")

# Page-locked host memory exists for CUDA and XPU; MPS has none and CPU-only builds raise.
_PIN = _TYPE in ("cuda", "xpu")
_ranges: list[Any] = []


def pin_memory_available() -> bool:
    """Whether pinned host memory helps here: True on CUDA and XPU, False on MPS and CPU.

    Used for ``pin_memory=`` arguments (``DataLoader``, ``torch.empty``); mirrors what
    ``pin_memory=True`` means on a CUDA machine.
    """
    return _PIN


def pin_memory(obj: T) -> T:
    """``obj.pin_memory()`` where pinned memory exists, else ``obj`` itself; mirrors ``Tensor.pin_memory``.

    Args:
        obj: a tensor, or any object with a ``pin_memory()`` method (a custom batch).

    On a CPU-only machine ``Tensor.pin_memory()`` raises; here it returns the tensor unchanged.
    """
    return obj.pin_memory() if _PIN else obj  # type: ignore[attr-defined]


def on_accelerator(tensor: torch.Tensor | torch.nn.Module) -> bool:
    """Whether ``tensor`` lives on the picked accelerator; the portable ``Tensor.is_cuda``.

    Always False on a CPU-only run, as ``is_cuda`` is there. A module is judged by its first
    parameter or buffer (False when it has none).
    """
    if _TYPE == "cpu":
        return False
    if isinstance(tensor, torch.nn.Module):
        first = next(iter(tensor.parameters()), None)
        first = first if first is not None else next(iter(tensor.buffers()), None)
        return first is not None and first.device.type == _TYPE
    return tensor.device.type == _TYPE


def range_push(msg: str) -> int:
    """Open a named profiler range; mirrors ``torch.cuda.nvtx.range_push``.

    CUDA: NVTX itself. Elsewhere: a ``torch.profiler.record_function`` range, visible in
    ``torch.profiler`` traces. Returns the depth of the range stack, as NVTX does.
    """
    if _TYPE == "cuda":
        return torch.cuda.nvtx.range_push(msg)
    scope = torch.profiler.record_function(msg)
    scope.__enter__()
    _ranges.append(scope)
    return len(_ranges) - 1


def range_pop() -> int:
    """Close the innermost range opened by ``range_push``; mirrors ``torch.cuda.nvtx.range_pop``.

    Returns the depth left, or -1 when no range was open (NVTX's answer too).
    """
    if _TYPE == "cuda":
        return torch.cuda.nvtx.range_pop()
    if not _ranges:
        return -1
    _ranges.pop().__exit__(None, None, None)
    return len(_ranges)
