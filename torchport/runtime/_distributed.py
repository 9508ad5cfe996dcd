"""Choices for ``torch.distributed`` and ``DistributedDataParallel`` on the picked backend."""

from __future__ import annotations

from typing import TypeVar

from ._backend import _INDEXED, _TYPE

_T = TypeVar("_T")
_BACKENDS = {"cuda": "nccl", "xpu": "xccl"}


def distributed_backend() -> str:
    """Return the process-group backend for ``init_process_group(backend=...)``.

    Replaces a literal ``"nccl"``: ``"nccl"`` on CUDA (RCCL on ROCm), ``"xccl"``
    on XPU, ``"gloo"`` on MPS and CPU.
    """
    return _BACKENDS.get(_TYPE, "gloo")


def ddp_device_ids(ids: _T) -> _T | None:
    """Return ``ids`` on CUDA/XPU, ``None`` on MPS and CPU.

    For the ``device_ids=`` and ``output_device=`` arguments of
    ``DistributedDataParallel``/``DataParallel``, which must be ``None`` for
    modules that are not on a CUDA-like device.
    """
    return ids if _INDEXED else None
