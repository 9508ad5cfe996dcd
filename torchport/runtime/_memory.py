"""Memory statistics (the ``torch.cuda`` memory functions).

CUDA/XPU: torch's caching-allocator numbers (``torch.accelerator`` where it
has the function, else the backend module). MPS: ``torch.mps`` numbers;
"allocated" is memory held by tensors, "reserved" is everything the Metal
driver holds for the process, and peaks are the largest values seen by these
functions (torch.mps tracks no peaks, so they are lower bounds). CPU: there is
no device allocator, so the counters are 0 and ``mem_get_info`` reports host RAM.
"""

from __future__ import annotations

from typing import Any

import torch

from ._backend import _INDEXED, _MODULE, _TYPE
from ._device import _arg, _host_memory


def _accelerator_or_module(acc_name: str, module_name: str) -> Any:
    if not _INDEXED:
        return None
    fn = getattr(torch.accelerator, acc_name, None)  # torch >= 2.9
    return fn if fn is not None else getattr(_MODULE, module_name)


_allocated = _accelerator_or_module("memory_allocated", "memory_allocated")
_max_allocated = _accelerator_or_module("max_memory_allocated", "max_memory_allocated")
_reserved = _accelerator_or_module("memory_reserved", "memory_reserved")
_max_reserved = _accelerator_or_module("max_memory_reserved", "max_memory_reserved")
_stats = _accelerator_or_module("memory_stats", "memory_stats")
_reset_peak = _accelerator_or_module("reset_peak_memory_stats", "reset_peak_memory_stats")
_mem_info = _accelerator_or_module("get_memory_info", "mem_get_info")
_empty = _accelerator_or_module("empty_cache", "empty_cache")

_mps_peak = [0, 0]  # [allocated, reserved] bytes, highest values sampled


def _mps_sample() -> tuple[int, int]:
    allocated = torch.mps.current_allocated_memory()
    reserved = torch.mps.driver_allocated_memory()
    _mps_peak[0] = max(_mps_peak[0], allocated)
    _mps_peak[1] = max(_mps_peak[1], reserved)
    return allocated, reserved


def empty_cache() -> None:
    """Release cached, unused device memory; mirrors ``torch.cuda.empty_cache``. No-op on CPU."""
    if _INDEXED:
        _empty()
    elif _TYPE == "mps":
        torch.mps.empty_cache()


def memory_allocated(device: int | str | torch.device | None = None) -> int:
    """Return bytes held by tensors; mirrors ``torch.cuda.memory_allocated``.

    MPS: ``torch.mps.current_allocated_memory()``. CPU: 0.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        return _allocated(dev)
    return _mps_sample()[0] if _TYPE == "mps" else 0


def max_memory_allocated(device: int | str | torch.device | None = None) -> int:
    """Return peak bytes held by tensors; mirrors ``torch.cuda.max_memory_allocated``.

    MPS: the largest value seen by this module's calls. CPU: 0.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        return _max_allocated(dev)
    if _TYPE == "mps":
        _mps_sample()
        return _mps_peak[0]
    return 0


def memory_reserved(device: int | str | torch.device | None = None) -> int:
    """Return bytes reserved by the allocator; mirrors ``torch.cuda.memory_reserved``.

    MPS: ``torch.mps.driver_allocated_memory()``. CPU: 0.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        return _reserved(dev)
    return _mps_sample()[1] if _TYPE == "mps" else 0


def max_memory_reserved(device: int | str | torch.device | None = None) -> int:
    """Return peak reserved bytes; mirrors ``torch.cuda.max_memory_reserved``.

    MPS: the largest value seen by this module's calls. CPU: 0.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        return _max_reserved(dev)
    if _TYPE == "mps":
        _mps_sample()
        return _mps_peak[1]
    return 0


def reset_peak_memory_stats(device: int | str | torch.device | None = None) -> None:
    """Reset peak counters to current values; mirrors ``torch.cuda.reset_peak_memory_stats``.

    No-op on CPU.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        _reset_peak(dev)
    elif _TYPE == "mps":
        _mps_peak[:] = [0, 0]
        _mps_sample()


def reset_max_memory_allocated(device: int | str | torch.device | None = None) -> None:
    """Reset peak memory counters; mirrors ``torch.cuda.reset_max_memory_allocated``.

    Like torch, this resets *all* peak statistics (it is
    :func:`reset_peak_memory_stats` without torch's FutureWarning).
    """
    reset_peak_memory_stats(device)


def memory_stats(device: int | str | torch.device | None = None) -> dict[str, Any]:
    """Return allocator statistics; mirrors ``torch.cuda.memory_stats``.

    CUDA/XPU: torch's flattened dict (``"allocated_bytes.all.current"``, ...).
    MPS: only the ``allocated_bytes``/``reserved_bytes`` ``.all.current``/``.all.peak``
    keys, in bytes. CPU: ``{}``.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        return _stats(dev)
    if _TYPE != "mps":
        return {}
    allocated, reserved = _mps_sample()
    return {
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": _mps_peak[0],
        "reserved_bytes.all.current": reserved,
        "reserved_bytes.all.peak": _mps_peak[1],
    }


def memory_summary(device: int | str | torch.device | None = None, abbreviated: bool = False) -> str:
    """Return a human-readable memory report; mirrors ``torch.cuda.memory_summary``.

    CUDA: torch's table. XPU/MPS: one line of allocated/reserved bytes and
    peaks. CPU: one line saying there is no device allocator. ``abbreviated``
    only matters on CUDA.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    summary = getattr(_MODULE, "memory_summary", None)
    if summary is not None:
        return summary(dev, abbreviated=abbreviated)
    if _TYPE == "cpu":
        return "torchport: CPU backend, no device allocator (memory_* report 0 bytes)."
    mib = 1 << 20
    return (
        f"torchport {dev} memory: allocated {memory_allocated(dev) / mib:.1f} MiB "
        f"(peak {max_memory_allocated(dev) / mib:.1f} MiB), reserved "
        f"{memory_reserved(dev) / mib:.1f} MiB (peak {max_memory_reserved(dev) / mib:.1f} MiB)"
    )


def mem_get_info(device: int | str | torch.device | None = None) -> tuple[int, int]:
    """Return ``(free, total)`` bytes; mirrors ``torch.cuda.mem_get_info``.

    CUDA/XPU: the driver's numbers. MPS: total is
    ``torch.mps.recommended_max_memory()``, free is total minus
    ``driver_allocated_memory()``. CPU: host RAM from ``os.sysconf``; free
    excludes the page cache; both are 0 where the OS does not report them.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _INDEXED:
        return _mem_info(dev)
    if _TYPE == "mps":
        total = torch.mps.recommended_max_memory()
        return max(total - _mps_sample()[1], 0), total
    return _host_memory()
