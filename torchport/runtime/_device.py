"""Device selection and device queries (the ``torch.cuda`` device functions)."""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import dataclass
from typing import Any

import torch

from ._backend import _DEVICE, _INDEXED, _MODULE, _TYPE

_DEVICE_STR = str(_DEVICE)
_AVAILABLE = _TYPE != "cpu"
_CUDA_INDEX = {f"cuda:{i}": i for i in range(64)}


def _is_cuda_str(spec: str) -> bool:
    return spec == "cuda" or spec.startswith("cuda:")


def device(spec: Any = None) -> Any:
    """Return the device to use for ``spec``; mirrors ``torch.device("cuda", ...)``.

    Args:
        spec: ``None`` gives the picked device (``torch.device("cuda")``,
            ``"mps"``, ``"xpu"`` or ``"cpu"``; with an index only if
            ``TORCHPORT_DEVICE`` gave one). An ``int`` ``i``, ``"cuda:i"`` or
            ``torch.device("cuda", i)`` gives device ``i`` of the picked backend
            on CUDA/XPU, and the single device on MPS and CPU. ``"cuda"`` and
            ``torch.device("cuda")`` give the picked device. Anything else
            (``"cpu"``, ``"meta"``, ``torch.device("mps")``, a ``map_location``
            dict or callable) is returned unchanged, as the same object.
            Types are matched exactly: ``True`` or a ``str`` subclass pass through.

    Returns:
        A ``torch.device`` for ``None``/int/CUDA-style specs, else ``spec``.

    Raises:
        RuntimeError: from ``torch.device`` for a malformed ``"cuda..."`` string
            or a negative index on CUDA/XPU.
    """
    if spec is None:
        return _DEVICE
    kind = type(spec)  # exact types: cheaper than isinstance, and excludes bool
    if kind is int:
        index = spec
    elif kind is str:
        if spec == "cuda":
            return _DEVICE
        if not spec.startswith("cuda:"):
            return spec
        index = _CUDA_INDEX.get(spec)  # skips torch.device parsing (hot path)
        if index is None:
            index = torch.device(spec).index  # raises torch's error if malformed
    elif kind is torch.device:
        if spec.type != "cuda":
            return spec
        if spec.index is None:
            return _DEVICE
        index = spec.index
    else:
        return spec
    return torch.device(_TYPE, index) if _INDEXED else _DEVICE


def device_str(spec: str | int | torch.device | None = None) -> str:
    """Return ``str(device(spec))``; a non-CUDA string is returned unchanged.

    The ``str`` form of :func:`device` (no ``torch.cuda`` counterpart).

    For code that keeps devices as strings (config defaults, argparse,
    ``"cuda" in device`` checks). Examples: ``"cpu"``, ``"cuda"``, ``"cuda:1"``,
    ``"mps"``, ``"xpu:0"``.

    Raises:
        TypeError: ``spec`` is not ``None``, an int, a str or a ``torch.device``.
    """
    if spec is None:
        return _DEVICE_STR
    if isinstance(spec, str) and not _is_cuda_str(spec):
        return spec
    if not isinstance(spec, (str, int, torch.device)):
        raise TypeError(f"device_str() expects str, int, torch.device or None, got {spec!r}")
    return str(device(spec))


def _arg(dev: Any) -> torch.device:
    """Map a ``device=`` argument to a device of the picked backend.

    On CUDA/XPU torch itself rejects a foreign device type; on MPS/CPU (where
    the runtime answers itself) it is checked here, like torch would.
    """
    mapped = device(dev)
    if _INDEXED:
        return mapped
    if not isinstance(mapped, torch.device):
        mapped = torch.device(mapped)
    if mapped.type != _TYPE:
        raise ValueError(f"Expected a {_TYPE} device (the device torchport picked), got {dev!r}")
    return _DEVICE


def device_type() -> str:
    """Return the picked backend: ``"cuda"``, ``"mps"``, ``"xpu"`` or ``"cpu"``.

    Replaces the literal ``"cuda"`` where torch wants a device *type*, e.g.
    ``torch.amp.autocast(device_type())``, ``torch.amp.GradScaler(device_type())``.
    """
    return _TYPE


def is_available() -> bool:
    """Return True iff an accelerator was picked; mirrors ``torch.cuda.is_available``.

    False on CPU, including when ``TORCHPORT_DEVICE=cpu`` hides an accelerator.
    """
    return _AVAILABLE


def device_count() -> int:
    """Return the number of devices of the picked backend; mirrors ``torch.cuda.device_count``.

    CUDA/XPU: the real count (at least 1). MPS: 1. CPU: 1, because the CPU is
    one device and ``mp.spawn(nprocs=device_count())`` must start a process.
    """
    return _MODULE.device_count() if _INDEXED else 1


def current_device() -> int:
    """Return the current device index; mirrors ``torch.cuda.current_device``.

    CUDA/XPU: ``torch.accelerator.current_device_index()``. MPS and CPU: 0.
    """
    return torch.accelerator.current_device_index() if _INDEXED else 0


def set_device(device: int | str | torch.device | None) -> None:
    """Set the current device; mirrors ``torch.cuda.set_device``.

    Args:
        device: an index, a CUDA-style spec (mapped), or a device of the picked
            backend. ``None`` does nothing. No-op on MPS and CPU.

    Raises:
        ValueError: on MPS/CPU, a device of another type (e.g. ``"xpu"`` on CPU);
            on CUDA/XPU torch raises for foreign or index-less devices.
    """
    if device is None:
        return
    dev = _arg(device)
    if _INDEXED:
        torch.accelerator.set_device_index(dev)


def device_index(device: int | str | torch.device | None) -> contextlib.AbstractContextManager:
    """Context manager that makes ``device`` current; mirrors ``torch.cuda.device``.

    On CUDA/XPU it is ``torch.cuda.device`` / ``torch.xpu.device`` with the
    spec mapped. ``None``, MPS and CPU: a no-op context manager.

    Raises:
        ValueError: as :func:`set_device`.
    """
    if device is None:
        return contextlib.nullcontext()
    dev = _arg(device)
    return _MODULE.device(dev) if _INDEXED else contextlib.nullcontext()


@dataclass(frozen=True)
class DeviceProperties:
    """Properties of an MPS or CPU device, shaped like ``torch.cuda.get_device_properties()``.

    Attributes:
        name: device name.
        total_memory: bytes (MPS: recommended max working set; CPU: physical RAM,
            0 if the OS does not report it).
        multi_processor_count: GPU cores (MPS) or logical CPUs (CPU).
        major, minor: always 0 (no CUDA compute capability).
    """

    name: str
    total_memory: int
    multi_processor_count: int
    major: int = 0
    minor: int = 0


_cpu_name: str | None = None


def _cpu_model() -> str:
    global _cpu_name
    if _cpu_name is None:
        _cpu_name = platform.processor() or platform.machine() or "cpu"
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                for line in f:
                    if line.startswith("model name"):
                        _cpu_name = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
    return _cpu_name


def _host_memory() -> tuple[int, int]:
    """Return (free, total) physical memory in bytes from ``os.sysconf``, 0 if unknown.

    "free" is ``SC_AVPHYS_PAGES``: memory not in use at all, so page cache
    counts as used (a lower bound on what could be allocated).
    """
    def pages(name: str) -> int:
        try:
            return max(os.sysconf(name), 0)
        except (AttributeError, OSError, ValueError):
            return 0

    size = pages("SC_PAGE_SIZE")
    return pages("SC_AVPHYS_PAGES") * size, pages("SC_PHYS_PAGES") * size


def _mps_name() -> str:
    get_name = getattr(torch.backends.mps, "get_name", None)
    return get_name() if get_name is not None else "Apple MPS"


def get_device_name(device: int | str | torch.device | None = None) -> str:
    """Return the device name; mirrors ``torch.cuda.get_device_name``.

    CUDA/XPU: the real name. MPS: ``torch.backends.mps.get_name()`` (e.g.
    "Apple M2"). CPU: the CPU model from ``/proc/cpuinfo``, else ``platform``.

    Raises:
        ValueError: as :func:`set_device`.
    """
    dev = _arg(device)
    if _INDEXED:
        return _MODULE.get_device_name(dev)
    return _mps_name() if _TYPE == "mps" else _cpu_model()


def get_device_properties(device: int | str | torch.device | None = None) -> Any:
    """Return device properties; mirrors ``torch.cuda.get_device_properties``.

    CUDA/XPU: torch's own properties object. MPS/CPU: a frozen
    :class:`DeviceProperties` with ``name``, ``total_memory`` (bytes),
    ``multi_processor_count``, ``major=0`` and ``minor=0``.

    Raises:
        ValueError: as :func:`set_device`.
    """
    dev = _arg(device)
    if _INDEXED:
        return _MODULE.get_device_properties(dev)
    if _TYPE == "mps":
        cores = getattr(torch.backends.mps, "get_core_count", None)
        return DeviceProperties(
            _mps_name(), torch.mps.recommended_max_memory(), cores() if cores else 0
        )
    return DeviceProperties(_cpu_model(), _host_memory()[1], os.cpu_count() or 1)


def get_device_capability(device: int | str | torch.device | None = None) -> tuple[int, int]:
    """Return the CUDA compute capability ``(major, minor)``; mirrors ``torch.cuda.get_device_capability``.

    CUDA: the real tuple, e.g. ``(9, 0)``. MPS, XPU and CPU: ``(0, 0)``, so
    checks like ``cap[0] >= 8`` are False. (Unlike
    ``torch.accelerator.get_device_capability``, which returns a dict.)

    Raises:
        ValueError: as :func:`set_device`.
    """
    dev = _arg(device)
    return torch.cuda.get_device_capability(dev) if _TYPE == "cuda" else (0, 0)


def synchronize(device: int | str | torch.device | None = None) -> None:
    """Wait for all queued work on the device; mirrors ``torch.cuda.synchronize``.

    CUDA/XPU: ``torch.accelerator.synchronize``. MPS: ``torch.mps.synchronize()``
    (single device). CPU: no-op (CPU ops run synchronously).

    Raises:
        ValueError: as :func:`set_device`.
    """
    dev = _arg(device)
    if _INDEXED:
        torch.accelerator.synchronize(dev)
    elif _TYPE == "mps":
        torch.mps.synchronize()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Return whether bfloat16 is supported; mirrors ``torch.cuda.is_bf16_supported``.

    CUDA/XPU: torch's answer. MPS: True (torch 2.13 requires macOS 14, which
    has bf16). CPU: True, because CPU autocast runs bf16 (its default dtype),
    although without native bf16 instructions it may be slow.
    """
    if _INDEXED:
        return _MODULE.is_bf16_supported(including_emulation)
    return True
