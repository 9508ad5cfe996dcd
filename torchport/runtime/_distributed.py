"""Choices for ``torch.distributed`` and ``DistributedDataParallel`` on the picked backend."""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from . import _backend as _b
from ._device import _IN_A_GROUP, _WORLD, device

_T = TypeVar("_T")


def _accelerator_backend() -> str:
    """The collective backend for the picked device: XPU ``xccl`` if built in, else ``gloo``."""
    if _b._TYPE == "xpu":
        dist = torch.distributed
        if dist.is_available() and getattr(dist, "is_xccl_available", lambda: False)():
            return "xccl"
    return "gloo"


def _device_map(backend: str) -> str:
    """Rewrite a ``"cpu:gloo,cuda:nccl"`` device map for the picked (non-CUDA) device."""
    kind = _b._TYPE
    entries: dict[str, str] = {}
    mapped: dict[str, str] = {}
    for part in backend.split(","):
        dev, _, name = part.strip().partition(":")
        dev, name = dev.strip().lower(), name.strip()
        if dev == "cuda":
            mapped.setdefault(kind, _accelerator_backend() if name.lower() == "nccl" else name)
        else:
            entries.setdefault(dev, name)
    for dev, name in mapped.items():
        entries.setdefault(dev, name)  # an explicit entry for the picked device wins
    if kind == "cpu" and list(entries) == ["cpu"] and entries["cpu"].lower() == "gloo":
        return "gloo"
    return ",".join(f"{dev}:{name}" for dev, name in entries.items())


def distributed_backend(backend: Any = None) -> Any:
    """Return the process-group backend for ``init_process_group(backend=...)``.

    Args:
        backend: the original backend expression's value (``"nccl"``,
            ``dist.Backend.NCCL``, ``"cpu:gloo,cuda:nccl"``, ``"gloo"``...), or
            ``None`` for a literal ``"nccl"`` that was replaced.

    Returns:
        On CUDA: exactly ``backend`` (``None`` gives ``"nccl"``; RCCL on ROCm).
        Elsewhere: ``"nccl"`` in any case, and ``None``, give ``"gloo"`` (XPU:
        ``"xccl"`` if ``torch.distributed.is_xccl_available()``, else
        ``"gloo"``). In a device map the ``cuda`` entry becomes an entry for
        the picked device type with that backend (``"cpu:gloo,xpu:xccl"``),
        non-CUDA entries are kept, and a map reduced to ``cpu:gloo`` is
        simply ``"gloo"``. Any other value (``"gloo"``, ``"mpi"``) is returned
        unchanged.
    """
    if _b._CUDA:
        return "nccl" if backend is None else backend
    if backend is None:
        return _accelerator_backend()
    if not isinstance(backend, str):
        return backend
    if ":" in backend:
        return _device_map(backend)
    return _accelerator_backend() if backend.strip().lower() == "nccl" else backend


def process_group_device_id(device_id: Any) -> Any:
    """Return the ``device_id=`` for ``init_process_group``.

    On CUDA: exactly ``device_id``. XPU: ``device(device_id)`` (an int or
    CUDA spec becomes ``torch.device("xpu", i)``; ``None`` stays ``None``).
    MPS and CPU: ``None`` (gloo rejects a device without an index, and an int
    would mean a CUDA device).
    """
    if _b._CUDA:
        return device_id
    if _b._TYPE == "xpu" and device_id is not None:
        return device(device_id)
    return None


def fsdp_device_id(device_id: Any) -> Any:
    """Return the ``device_id=`` for ``FullyShardedDataParallel``.

    On CUDA: exactly ``device_id``. XPU: ``device(device_id)``. CPU and MPS:
    ``torch.device("cpu")``: FSDP without a ``device_id`` raises where no
    accelerator is ("FSDP needs a non-CPU accelerator device"), and it runs on
    the CPU with gloo (FSDP has no MPS support).
    """
    if _b._CUDA:
        return device_id
    if _b._TYPE == "xpu":
        return device(device_id)
    return torch.device("cpu")


def ddp_device_ids(ids: _T) -> _T | None:
    """Return ``ids`` on CUDA/XPU, ``None`` on MPS and CPU (and on XPU once a gloo group moved the pick to the CPU).

    For the ``device_ids=`` and ``output_device=`` arguments of
    ``DistributedDataParallel``/``DataParallel``, which must be ``None`` for
    modules that are not on a CUDA-like device. On CUDA: exactly ``ids``.
    """
    if _b._TYPE in _IN_A_GROUP and _WORLD._default_pg is not None:  # XPU in a gloo group: on the CPU now
        _b._in_a_group()
    return ids if _b._INDEXED else None
