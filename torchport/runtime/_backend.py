"""Pick the device once, at import: ``TORCHPORT_DEVICE``, else CUDA > MPS > XPU > CPU.

Everything else in the runtime reads the three globals set here:

* ``_TYPE``: ``"cuda"``, ``"mps"``, ``"xpu"`` or ``"cpu"``.
* ``_DEVICE``: the picked :class:`torch.device` (index ``None`` unless the
  environment variable gave one).
* ``_MODULE``: ``torch.cuda``, ``torch.mps``, ``torch.xpu``, or ``None`` on CPU.

They are plain module globals, resolved eagerly, so that code reading them under
``torch.compile(fullgraph=True)`` sees constants (a lazy cache or
``functools.cache`` would be traced and graph-break).
"""

from __future__ import annotations

import os

import torch

ENV_VAR = "TORCHPORT_DEVICE"
_ACCELERATORS = ("cuda", "mps", "xpu")  # probe order


def _available(kind: str) -> bool:
    """Return whether backend ``kind`` is usable, never raising.

    A CPU-only build raises ``AssertionError`` ("Torch not compiled with CUDA
    enabled") and a GPU-less CUDA build ``RuntimeError`` from some probes.
    """
    try:
        if kind == "cuda":
            return torch.cuda.is_available()
        if kind == "mps":
            return torch.backends.mps.is_available()
        if kind == "xpu":
            return torch.xpu.is_available()
    except (AssertionError, RuntimeError):
        return False
    return kind == "cpu"


def _from_env(value: str) -> torch.device:
    """Parse and check ``TORCHPORT_DEVICE``; raise instead of falling back."""
    try:
        dev = torch.device(value)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", *_ACCELERATORS):
        raise ValueError(
            f"{ENV_VAR}={value!r} is not supported; use one of "
            "'cpu', 'mps', 'cuda', 'cuda:N', 'xpu', 'xpu:N', or unset it."
        )
    if dev.type == "mps" and dev.index not in (None, 0):
        raise ValueError(f"{ENV_VAR}={value!r}: MPS has a single device, use 'mps'.")
    if not _available(dev.type):
        raise RuntimeError(
            f"{ENV_VAR}={value!r} requests the {dev.type} backend, which is not "
            "available in this process (torch build "
            f"{torch.__version__}). Unset {ENV_VAR} to pick the best available "
            "device, or set it to 'cpu'."
        )
    if dev.type in ("cpu", "mps"):
        return torch.device(dev.type)  # never 'cpu:0' when 'cpu' is meant
    if dev.index is not None:
        module = getattr(torch, dev.type)
        count = module.device_count()
        if dev.index >= count:
            raise RuntimeError(
                f"{ENV_VAR}={value!r}: only {count} {dev.type} device(s) are visible."
            )
        # Make it the current device too, so streams, events, seeds and
        # current_device() agree with device(). This initialises the backend.
        module.set_device(dev.index)
    return dev


def _pick() -> torch.device:
    """Return the device named by ``TORCHPORT_DEVICE``, else the best available."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        return _from_env(value)
    for kind in _ACCELERATORS:
        if _available(kind):
            return torch.device(kind)
    return torch.device("cpu")


_DEVICE: torch.device = _pick()
_TYPE: str = _DEVICE.type
_MODULE = getattr(torch, _TYPE) if _TYPE != "cpu" else None
_INDEXED: bool = _TYPE in ("cuda", "xpu")  # backends with several devices
