"""Device selection and device queries (the ``torch.cuda`` device functions).

Every function reads the picked backend from :mod:`._backend` (picked on first
use). When CUDA is picked, each ``torch.cuda`` counterpart is called with the
arguments unchanged, so results and errors are exactly torch's.
"""

from __future__ import annotations

import contextlib
import os
import platform
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from . import _backend as _b

Device = Any  # int | str | torch.device | None, as torch.cuda accepts


def _is_cuda_str(spec: str) -> bool:
    return spec == "cuda" or spec.startswith("cuda:")


_IN_A_GROUP = frozenset({"mps", "xpu"})  # picks that a process group may move to the CPU (`_backend._in_a_group`)


class _Probe:
    """Stands in for torch's world state where it is missing: ``_default_pg`` asks ``is_initialized()``."""

    @property
    def _default_pg(self) -> Any:
        dist = torch.distributed
        return True if dist.is_available() and dist.is_initialized() else None


# torch.distributed's world state: its ``_default_pg`` is the default process group, None before
# ``init_process_group``. Read directly it costs one attribute read per call on MPS (``is_initialized()``
# costs two property calls, 3.6 times a plain `device()`); never read on other backends.
_WORLD: Any = getattr(torch.distributed.distributed_c10d, "_world", None) if torch.distributed.is_available() else None
if not hasattr(_WORLD, "_default_pg"):
    _WORLD = _Probe()


def device(spec: Any = None) -> Any:
    """Return the device to use for ``spec``; mirrors ``torch.device("cuda", ...)``.

    Args:
        spec: ``None`` gives the picked device (``torch.device("cuda")``,
            ``"mps"``, ``"xpu"`` or ``"cpu"``; with an index only if
            ``TORCHPORT_DEVICE`` gave one). An ``int`` ``i``, a ``str`` such as
            ``"cuda"``/``"cuda:i"`` (also built at run time, e.g.
            ``f"cuda:{os.environ['LOCAL_RANK']}"``) or ``torch.device("cuda", i)``
            names a CUDA device, and so does a str of digits (``"1"``: the field of an
            ``f"cuda:{args.gpu}"`` a port gives alone). Anything else (``"cpu"``, ``"meta"``,
            ``torch.device("mps")``, a ``map_location`` dict or callable) is
            returned unchanged, as the same object. Types are matched exactly:
            ``True`` or a ``str`` subclass pass through.

    Returns:
        On CUDA: a ``torch.device`` equal to ``torch.device(spec)`` for a CUDA
        str/device (the same object for a ``torch.device``), and
        ``torch.device("cuda", i)`` for an int. On XPU: the same index on the
        XPU (``"cuda"`` and an index-less device give the picked device). On
        MPS and CPU: the picked device (never ``cpu:0``); on MPS the CPU once a
        ``torch.distributed`` process group exists (gloo carries no MPS tensors).
        Other specs: ``spec``.

    Raises:
        RuntimeError: from ``torch.device`` for a malformed ``"cuda..."`` string,
            or a negative index on CUDA/XPU.
    """
    if spec is None and (fixed := _b._FIXED) is not None:  # CUDA or the CPU, picked (hot path)
        return fixed
    if _b._TYPE in _IN_A_GROUP and _WORLD._default_pg is not None:  # gloo carries no MPS or XPU tensors
        _b._in_a_group()
    if spec is None:
        return _b._DEVICE
    kind = type(spec)  # exact types: cheaper than isinstance, and excludes bool
    if kind is str:
        mapped = _b._SPECS.get(spec)  # "cuda", "cuda:0".."cuda:63": no parsing (hot path)
        if mapped is not None:
            return mapped
        if spec.isascii() and spec.isdigit():  # a port's `f"cuda:{args.gpu}"` given as its field, a str option ("1")
            index = int(spec)
        elif not spec.startswith("cuda:"):
            return spec
        else:
            index = torch.device(spec).index  # raises torch's error if malformed
    elif kind is int:
        index = spec
    elif kind is torch.device:
        if spec.type != "cuda" or _b._CUDA:
            return spec
        if spec.index is None:
            return _b._DEVICE
        index = spec.index
    else:
        return spec
    return torch.device(_b._TYPE, index) if _b._INDEXED else _b._SPECS["cuda:0"]


def device_str(spec: str | int | torch.device | None = None) -> str:
    """Return ``str(device(spec))``; a non-CUDA string other than a str of digits is returned unchanged.

    The ``str`` form of :func:`device` (no ``torch.cuda`` counterpart). On CUDA
    it equals ``str(torch.device(spec))`` for CUDA specs.

    For code that keeps devices as strings (config defaults, argparse,
    ``"cuda" in device`` checks). Examples: ``"cpu"``, ``"cuda"``, ``"cuda:1"``,
    ``"mps"``, ``"xpu:0"``.

    Raises:
        TypeError: ``spec`` is not ``None``, an int, a str or a ``torch.device``.
        RuntimeError: as :func:`device`.
    """
    if _b._TYPE in _IN_A_GROUP and _WORLD._default_pg is not None:  # gloo carries no MPS or XPU tensors
        _b._in_a_group()
    if spec is None:
        return _b._DEVICE_STR
    if isinstance(spec, str) and not _is_cuda_str(spec) and not (spec.isascii() and spec.isdigit()):
        return spec
    if not isinstance(spec, (str, int, torch.device)):
        raise TypeError(f"device_str() expects str, int, torch.device or None, got {spec!r}")
    return str(device(spec))


_WARNED: set[int] = set()  # indices `nth_device` warned about: once per index and process


def nth_device(index: int) -> torch.device:
    """Return the device for CUDA device number ``index`` of code written for several GPUs.

    What a port writes for a fixed index (``"cuda:1"``, ``.cuda(1)``) in a module that names several
    (``"cuda:0"`` and ``"cuda:1"``: model parallel), so that the code runs on the devices there are.
    No ``torch.cuda`` counterpart; the mapping is :func:`device`'s.

    Args:
        index: the CUDA device number the original code named.

    Returns:
        On CUDA: ``torch.device("cuda", index)``, what the original named (an index beyond the count
        fails where the original did). On XPU: ``xpu:index`` where that device exists. Otherwise (MPS and
        the CPU have one device; an XPU index beyond the count): the picked device, as :func:`device`
        gives it, with a ``UserWarning`` the first time each index is so mapped (not inside code
        ``torch.compile`` traces: a warning there would break the graph; the next eager call warns).

    Raises:
        RuntimeError: ``index`` is negative (torch's error, as on CUDA).
    """
    return _nth(index)


def nth_device_str(index: int) -> str:
    """Return ``str(nth_device(index))``: the str form of :func:`nth_device` (``"cuda:1"`` on CUDA).

    Raises:
        RuntimeError: as :func:`nth_device`.
    """
    return str(_nth(index))


def _nth(index: int) -> torch.device:
    """`nth_device`, warning at the caller of the public function."""
    if _b._CUDA or index < 0:
        return torch.device("cuda", index)
    count = _b._MODULE.device_count() if _b._INDEXED else 1
    if index < count:
        return device(index)
    picked = device()
    if index not in _WARNED and not torch.compiler.is_compiling():
        _WARNED.add(index)
        warnings.warn(f"cuda:{index}: this machine has {count} {_b._TYPE} device(s); using {picked} for it (torchport "
                      "maps the devices of code written for several GPUs to the devices there are)", stacklevel=3)
    return picked


def _arg(dev: Any) -> Any:
    """Map a ``device=`` argument to a device of the picked backend (not used on CUDA).

    On XPU torch itself rejects a foreign device type; on MPS/CPU (where
    the runtime answers itself) it is checked here, like torch would.
    """
    mapped = device(dev)
    if _b._INDEXED:
        return mapped
    if not isinstance(mapped, torch.device):
        mapped = torch.device(mapped)
    if mapped.type != _b._TYPE:
        raise ValueError(f"Expected a {_b._TYPE} device (the device torchport picked), got {dev!r}")
    return _b._DEVICE


def available_device(spec: Any = None) -> Any:
    """Return :func:`device` of ``spec`` if :func:`is_available`, else the CPU.

    Mirrors ``torch.device("cuda" if torch.cuda.is_available() else "cpu")`` (also with ``"cuda:i"``):
    on CUDA it calls ``torch.cuda.is_available()`` each time, as the original did, so a machine whose
    driver sees a GPU that the CUDA runtime cannot use falls back to the CPU. Elsewhere: :func:`device`.

    Args:
        spec: as :func:`device` (``None``, an int, ``"cuda:i"``...).
    """
    if _b._CUDA and not torch.cuda.is_available():
        return torch.device("cpu")
    return device(spec)


def available_device_str(spec: str | int | None = None) -> str:
    """Return ``str(available_device(spec))``; mirrors ``"cuda" if torch.cuda.is_available() else "cpu"``."""
    if _b._CUDA and not torch.cuda.is_available():
        return "cpu"
    return device_str(spec)


def available_device_type() -> str:
    """Return :func:`device_type` if :func:`is_available`, else ``"cpu"``; mirrors
    ``"cuda" if torch.cuda.is_available() else "cpu"`` where a device type is expected (autocast)."""
    if _b._CUDA and not torch.cuda.is_available():
        return "cpu"
    return device_type()


def device_type() -> str:
    """Return the picked backend: ``"cuda"``, ``"mps"``, ``"xpu"`` or ``"cpu"``.

    Replaces the literal ``"cuda"`` where torch wants a device *type*, e.g.
    ``torch.amp.autocast(device_type())``, ``torch.amp.GradScaler(device_type())``.
    On CUDA: exactly ``"cuda"``. On MPS: ``"cpu"`` once a ``torch.distributed``
    process group exists, as :func:`device`.
    """
    if _b._TYPE in _IN_A_GROUP and _WORLD._default_pg is not None:  # gloo carries no MPS or XPU tensors
        _b._in_a_group()
    return _b._TYPE


def is_available() -> bool:
    """Return whether the accelerator can be used; mirrors ``torch.cuda.is_available``.

    On CUDA: exactly ``torch.cuda.is_available()`` (called each time; it honours
    ``PYTORCH_NVML_BASED_CUDA_CHECK``). MPS/XPU: True. CPU: False, including
    when ``TORCHPORT_DEVICE=cpu`` hides an accelerator.
    """
    if _b._CUDA:
        return torch.cuda.is_available()
    return _b._ACCEL


def device_count() -> int:
    """Return the number of devices of the picked backend; mirrors ``torch.cuda.device_count``.

    On CUDA: exactly ``torch.cuda.device_count()``. XPU:
    ``torch.xpu.device_count()``. MPS: 1. CPU: 0, as ``torch.cuda.device_count()``
    is on a CPU-only machine (so ``if device_count() > 0:`` guards keep their
    meaning). For a number of processes to start, use :func:`process_count`.
    """
    if _b._INDEXED:
        return _b._MODULE.device_count()
    return 1 if _b._ACCEL else 0


def process_count() -> int:
    """Return how many processes to start with one process per device.

    For ``mp.spawn(nprocs=...)``, ``world_size`` and ``--nproc_per_node`` where
    the code used ``torch.cuda.device_count()``. On CUDA: exactly
    ``torch.cuda.device_count()``. XPU: ``torch.xpu.device_count()``. MPS and
    CPU: 1 (one process on the single device).
    """
    return _b._MODULE.device_count() if _b._INDEXED else 1


def current_device() -> int:
    """Return the current device index; mirrors ``torch.cuda.current_device``.

    On CUDA: exactly ``torch.cuda.current_device()``. XPU:
    ``torch.xpu.current_device()``. MPS and CPU: 0.
    """
    return _b._MODULE.current_device() if _b._INDEXED else 0


def set_device(device: Device) -> None:
    """Set the current device; mirrors ``torch.cuda.set_device``.

    On CUDA: exactly ``torch.cuda.set_device(device)`` (it raises for ``None``).
    XPU: ``torch.xpu.set_device`` with the spec mapped (:func:`device`); ``None``
    does nothing. MPS and CPU: no-op after checking the device type.

    Args:
        device: an index, a CUDA-style spec (mapped), or a device of the picked backend.

    Raises:
        ValueError: on MPS/CPU, a device of another type (e.g. ``"xpu"`` on CPU);
            on CUDA/XPU torch raises for foreign or index-less devices.
    """
    if _b._CUDA:
        return torch.cuda.set_device(device)
    if device is None:
        return None
    dev = _arg(device)
    if _b._INDEXED:
        _b._MODULE.set_device(dev)
    return None


def device_index(device: Device) -> contextlib.AbstractContextManager:
    """Context manager that makes ``device`` current; mirrors ``torch.cuda.device``.

    On CUDA: exactly ``torch.cuda.device(device)``. XPU: ``torch.xpu.device``
    with the spec mapped. ``None`` (off CUDA), MPS and CPU: a no-op context manager.

    Raises:
        ValueError: as :func:`set_device`.
    """
    if _b._CUDA:
        return torch.cuda.device(device)
    if device is None:
        return contextlib.nullcontext()
    dev = _arg(device)
    return _b._MODULE.device(dev) if _b._INDEXED else contextlib.nullcontext()


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


def get_device_name(device: Device = None) -> str:
    """Return the device name; mirrors ``torch.cuda.get_device_name``.

    On CUDA: exactly ``torch.cuda.get_device_name(device)``. XPU: the real
    name (spec mapped). MPS: ``torch.backends.mps.get_name()`` (e.g. "Apple
    M2"). CPU: the CPU model from ``/proc/cpuinfo``, else ``platform``.

    Raises:
        ValueError: as :func:`set_device`.
    """
    if _b._CUDA:
        return torch.cuda.get_device_name(device)
    dev = _arg(device)
    if _b._INDEXED:
        return _b._MODULE.get_device_name(dev)
    return _mps_name() if _b._TYPE == "mps" else _cpu_model()


def get_device_properties(device: Device = None) -> Any:
    """Return device properties; mirrors ``torch.cuda.get_device_properties``.

    On CUDA: exactly ``torch.cuda.get_device_properties(device)``. XPU: torch's
    own properties object. MPS/CPU: a frozen :class:`DeviceProperties` with
    ``name``, ``total_memory`` (bytes), ``multi_processor_count``, ``major=0``
    and ``minor=0``.

    Raises:
        ValueError: as :func:`set_device`.
    """
    if _b._CUDA:
        return torch.cuda.get_device_properties(device)
    dev = _arg(device)
    if _b._INDEXED:
        return _b._MODULE.get_device_properties(dev)
    if _b._TYPE == "mps":
        cores = getattr(torch.backends.mps, "get_core_count", None)
        return DeviceProperties(
            _mps_name(), torch.mps.recommended_max_memory(), cores() if cores else 0
        )
    return DeviceProperties(_cpu_model(), _host_memory()[1], os.cpu_count() or 1)


def get_device_capability(device: Device = None) -> tuple[int, int]:
    """Return the CUDA compute capability ``(major, minor)``; mirrors ``torch.cuda.get_device_capability``.

    On CUDA: exactly ``torch.cuda.get_device_capability(device)``, e.g.
    ``(9, 0)``. MPS, XPU and CPU: ``(0, 0)``, so checks like ``cap[0] >= 8``
    are False. (Unlike ``torch.accelerator.get_device_capability``, which
    returns a dict.)

    Raises:
        ValueError: as :func:`set_device`.
    """
    if _b._CUDA:
        return torch.cuda.get_device_capability(device)
    _arg(device)
    return (0, 0)


def init() -> None:
    """Initialize the picked backend's state now rather than at its first use; mirrors ``torch.cuda.init``.

    On CUDA: exactly ``torch.cuda.init()``. XPU: ``torch.xpu.init()``. MPS and CPU: nothing (they keep no lazy
    state to set up), where ``torch.cuda.init()`` raises "Torch not compiled with CUDA enabled".
    """
    if _b._CUDA:
        return torch.cuda.init()
    if _b._INDEXED:
        _b._MODULE.init()
    return None


def synchronize(device: Device = None) -> None:
    """Wait for all queued work on the device; mirrors ``torch.cuda.synchronize``.

    On CUDA: exactly ``torch.cuda.synchronize(device)``. XPU:
    ``torch.xpu.synchronize`` (spec mapped). MPS: ``torch.mps.synchronize()``
    (single device). CPU: no-op (CPU ops run synchronously).

    Raises:
        ValueError: as :func:`set_device`.
    """
    if _b._CUDA:
        return torch.cuda.synchronize(device)
    dev = _arg(device)
    if _b._INDEXED:
        _b._MODULE.synchronize(dev)
    elif _b._TYPE == "mps":
        torch.mps.synchronize()
    return None


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Return whether bfloat16 is supported; mirrors ``torch.cuda.is_bf16_supported``.

    On CUDA: exactly ``torch.cuda.is_bf16_supported(including_emulation)``.
    XPU: ``torch.xpu.is_bf16_supported``. MPS: True (torch 2.13 requires macOS
    14, which has bf16). CPU: True, because CPU autocast runs bf16 (its default
    dtype), although without native bf16 instructions it may be slow.
    """
    if _b._INDEXED:
        return _b._MODULE.is_bf16_supported(including_emulation)
    return True
