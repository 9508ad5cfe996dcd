"""Memory statistics (the ``torch.cuda`` memory functions).

CUDA: exactly the ``torch.cuda`` function, with the arguments unchanged. XPU:
torch's caching-allocator numbers (``torch.accelerator`` where it has the
function, else ``torch.xpu``). MPS: ``torch.mps`` numbers; "allocated" is memory
held by tensors, "reserved" is everything the Metal driver holds for the
process, and peaks are the largest values seen by these functions (torch.mps
tracks no peaks, so they are lower bounds). CPU: there is no device allocator,
so the counters are 0 and ``mem_get_info`` reports host RAM. All sizes are bytes.
"""

from __future__ import annotations

from typing import Any

import torch

from . import _backend as _b
from ._device import Device, _arg, _host_memory


def _xpu(acc_name: str, module_name: str) -> Any:
    """The XPU function: ``torch.accelerator.<acc_name>`` (torch >= 2.9), else ``torch.xpu.<module_name>``."""
    fn = getattr(torch.accelerator, acc_name, None)
    return fn if fn is not None else getattr(torch.xpu, module_name)


_mps_peak = [0, 0]  # [allocated, reserved] bytes, highest values sampled


def _mps_sample() -> tuple[int, int]:
    allocated = torch.mps.current_allocated_memory()
    reserved = torch.mps.driver_allocated_memory()
    _mps_peak[0] = max(_mps_peak[0], allocated)
    _mps_peak[1] = max(_mps_peak[1], reserved)
    return allocated, reserved


def _cpu(device: Device) -> bool:
    """Whether ``device`` names the CPU (``"cpu"``, ``torch.device("cpu")``): a program that chose the CPU itself
    (DeepGCN's ``--cpu``) asks its counters, which are 0 there, as ``torch.cuda``'s were without CUDA."""
    return isinstance(device, (str, torch.device)) and torch.device(device).type == "cpu"


def empty_cache() -> None:
    """Release cached, unused device memory; mirrors ``torch.cuda.empty_cache``.

    On CUDA: exactly ``torch.cuda.empty_cache()``. XPU/MPS: the backend's
    ``empty_cache``. No-op on CPU.
    """
    if _b._CUDA:
        return torch.cuda.empty_cache()
    if _b._INDEXED:
        _xpu("empty_cache", "empty_cache")()
    elif _b._TYPE == "mps":
        torch.mps.empty_cache()
    return None


def ipc_collect() -> None:
    """Free CUDA memory that other processes released through IPC; mirrors ``torch.cuda.ipc_collect``.

    On CUDA: exactly ``torch.cuda.ipc_collect()``. Elsewhere a no-op: only CUDA shares memory this way.
    """
    if _b._CUDA:
        return torch.cuda.ipc_collect()
    return None


def set_per_process_memory_fraction(fraction: float, device: Device = None) -> None:
    """Cap the memory this process may allocate on the device; mirrors ``torch.cuda.set_per_process_memory_fraction``.

    Args:
        fraction: the share of the device's total memory, 0 to 1.
        device: a CUDA device (index, ``"cuda:i"``, ``torch.device``); None is the current one.

    On CUDA: exactly ``torch.cuda.set_per_process_memory_fraction(fraction, device)``, with its errors (a fraction
    outside 0 to 1 raises ``ValueError``). Elsewhere a no-op: the CPU has no device allocator to cap, and MPS's own
    fraction is measured against another limit (the recommended working set) and may exceed 1, so a CUDA share
    does not carry over.
    """
    if _b._CUDA:
        return torch.cuda.set_per_process_memory_fraction(fraction, device)
    return None


def memory_allocated(device: Device = None) -> int:
    """Return bytes held by tensors; mirrors ``torch.cuda.memory_allocated``.

    On CUDA: exactly ``torch.cuda.memory_allocated(device)``. MPS:
    ``torch.mps.current_allocated_memory()``. CPU: 0.

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.memory_allocated(device)
    if _cpu(device):
        return 0
    dev = _arg(device)
    if _b._INDEXED:
        return _xpu("memory_allocated", "memory_allocated")(dev)
    return _mps_sample()[0] if _b._TYPE == "mps" else 0


def max_memory_allocated(device: Device = None) -> int:
    """Return peak bytes held by tensors; mirrors ``torch.cuda.max_memory_allocated``.

    On CUDA: exactly ``torch.cuda.max_memory_allocated(device)``. MPS: the
    largest value seen by this module's calls. CPU: 0.

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.max_memory_allocated(device)
    if _cpu(device):
        return 0
    dev = _arg(device)
    if _b._INDEXED:
        return _xpu("max_memory_allocated", "max_memory_allocated")(dev)
    if _b._TYPE == "mps":
        _mps_sample()
        return _mps_peak[0]
    return 0


def memory_reserved(device: Device = None) -> int:
    """Return bytes reserved by the allocator; mirrors ``torch.cuda.memory_reserved``.

    On CUDA: exactly ``torch.cuda.memory_reserved(device)``. MPS:
    ``torch.mps.driver_allocated_memory()``. CPU: 0.

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.memory_reserved(device)
    if _cpu(device):
        return 0
    dev = _arg(device)
    if _b._INDEXED:
        return _xpu("memory_reserved", "memory_reserved")(dev)
    return _mps_sample()[1] if _b._TYPE == "mps" else 0


def max_memory_reserved(device: Device = None) -> int:
    """Return peak reserved bytes; mirrors ``torch.cuda.max_memory_reserved``.

    On CUDA: exactly ``torch.cuda.max_memory_reserved(device)``. MPS: the
    largest value seen by this module's calls. CPU: 0.

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.max_memory_reserved(device)
    if _cpu(device):
        return 0
    dev = _arg(device)
    if _b._INDEXED:
        return _xpu("max_memory_reserved", "max_memory_reserved")(dev)
    if _b._TYPE == "mps":
        _mps_sample()
        return _mps_peak[1]
    return 0


def reset_peak_memory_stats(device: Device = None) -> None:
    """Reset peak counters to current values; mirrors ``torch.cuda.reset_peak_memory_stats``.

    On CUDA: exactly ``torch.cuda.reset_peak_memory_stats(device)``. No-op on CPU.

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.reset_peak_memory_stats(device)
    if _cpu(device):
        return None
    dev = _arg(device)
    if _b._INDEXED:
        _xpu("reset_peak_memory_stats", "reset_peak_memory_stats")(dev)
    elif _b._TYPE == "mps":
        _mps_peak[:] = [0, 0]
        _mps_sample()
    return None


def reset_max_memory_allocated(device: Device = None) -> None:
    """Reset peak memory counters; mirrors ``torch.cuda.reset_max_memory_allocated``.

    On CUDA: exactly ``torch.cuda.reset_max_memory_allocated(device)`` (with
    torch's FutureWarning). Elsewhere, like torch, this resets *all* peak
    statistics (:func:`reset_peak_memory_stats`, without a warning).

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.reset_max_memory_allocated(device)
    return reset_peak_memory_stats(device)


class _Counters(dict[str, Any]):
    """The statistics `memory_stats` gives off CUDA: a dict whose missing counters read 0 (``stats["num_ooms"]``),
    as the other memory queries answer where no allocator keeps them; ``in``, ``len`` and iteration see only the
    counters kept."""

    def __missing__(self, key: str) -> int:
        return 0


def memory_stats(device: Device = None) -> dict[str, Any]:
    """Return allocator statistics; mirrors ``torch.cuda.memory_stats``.

    On CUDA: exactly ``torch.cuda.memory_stats(device)``, the flattened dict
    (``"allocated_bytes.all.current"``, ...). Elsewhere a dict whose missing counters read 0: XPU's
    statistics; MPS's ``allocated_bytes``/``reserved_bytes`` ``.all.current``/``.all.peak``, in bytes; none on the
    CPU.

    Raises:
        ValueError: ``device`` is of another accelerator than the picked one (a CPU device counts 0 bytes).
    """
    if _b._CUDA:
        return torch.cuda.memory_stats(device)
    if _cpu(device):
        return _Counters()
    dev = _arg(device)
    if _b._INDEXED:
        return _Counters(_xpu("memory_stats", "memory_stats")(dev))
    if _b._TYPE != "mps":
        return _Counters()
    allocated, reserved = _mps_sample()
    return _Counters({
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": _mps_peak[0],
        "reserved_bytes.all.current": reserved,
        "reserved_bytes.all.peak": _mps_peak[1],
    })


def memory_summary(device: Device = None, abbreviated: bool = False) -> str:
    """Return a human-readable memory report; mirrors ``torch.cuda.memory_summary``.

    On CUDA: exactly ``torch.cuda.memory_summary(device, abbreviated)``, torch's
    table. XPU (``torch.xpu.memory_summary`` where it exists, else one line)
    and MPS: one line of allocated/reserved MiB and peaks. CPU: one line saying
    there is no device allocator. ``abbreviated`` only matters on CUDA.

    Raises:
        ValueError: ``device`` is of another backend (MPS/CPU).
    """
    if _b._CUDA:
        return torch.cuda.memory_summary(device, abbreviated)
    dev = _arg(device)
    summary = getattr(_b._MODULE, "memory_summary", None)
    if summary is not None:
        return summary(dev, abbreviated=abbreviated)
    if _b._TYPE == "cpu":
        return "torchport: CPU backend, no device allocator (memory_* report 0 bytes)."
    mib = 1 << 20
    return (
        f"torchport {dev} memory: allocated {memory_allocated(dev) / mib:.1f} MiB "
        f"(peak {max_memory_allocated(dev) / mib:.1f} MiB), reserved "
        f"{memory_reserved(dev) / mib:.1f} MiB (peak {max_memory_reserved(dev) / mib:.1f} MiB)"
    )


def mem_get_info(device: Device = None) -> tuple[int, int]:
    """Return ``(free, total)`` bytes; mirrors ``torch.cuda.mem_get_info``.

    On CUDA: exactly ``torch.cuda.mem_get_info(device)``, the driver's numbers.
    XPU: torch's numbers. MPS: total is ``torch.mps.recommended_max_memory()``,
    free is total minus ``driver_allocated_memory()``. CPU: host RAM from
    ``os.sysconf``; free excludes the page cache; both are 0 where the OS does
    not report them.

    Raises:
        ValueError: ``device`` is of another backend (MPS/CPU).
    """
    if _b._CUDA:
        return torch.cuda.mem_get_info(device)
    dev = _arg(device)
    if _b._INDEXED:
        return _xpu("get_memory_info", "mem_get_info")(dev)
    if _b._TYPE == "mps":
        total = torch.mps.recommended_max_memory()
        return max(total - _mps_sample()[1], 0), total
    return _host_memory()
