"""``map_location`` for ``torch.load``: CUDA-saved checkpoints load on the picked device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from . import _backend as _b
from ._device import _is_cuda_str, device, device_str

_MISSING = object()


def _mapped(location: Any) -> Any:
    """A CUDA location (str or ``torch.device``) mapped to the picked device; others unchanged."""
    if type(location) is str and _is_cuda_str(location):
        return device_str(location)
    if type(location) is torch.device and location.type == "cuda":
        return device(location)
    return location


class LocationMap(dict):
    """A ``map_location`` dict that also sends every CUDA location to the picked device.

    ``torch.load`` (and torch's wrapper-subclass rebuilds) look a saved
    location tag up with ``map_location.get(tag, tag)``. Here the dict's own
    entries apply first, as in torch; then a result naming CUDA (``"cuda"``,
    ``"cuda:N"``) is replaced by the picked device (``device_str``: ``"cpu"``,
    ``"mps"``, ``"xpu:N"``). Tags of other devices are left as saved.
    """

    def get(self, key: Any, default: Any = None) -> Any:
        value = dict.get(self, key, _MISSING)
        return _mapped(default if value is _MISSING else value)

    def __repr__(self) -> str:
        return f"LocationMap({dict.__repr__(self)}, cuda -> {_b._DEVICE_STR!r})"


def _wrap(fn: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    from torch.serialization import default_restore_location

    def restore_location(storage: Any, location: str) -> Any:
        result = fn(storage, location)
        if result is None and type(location) is str and _is_cuda_str(location):
            result = default_restore_location(storage, device_str(location))
        return result  # None: torch restores to the saved (non-CUDA) location

    restore_location.__wrapped__ = fn  # type: ignore[attr-defined]
    return restore_location


def map_location(spec: Any = None) -> Any:
    """Return the ``map_location=`` for ``torch.load``; mirrors torch's own meaning of ``spec``.

    On CUDA: exactly ``spec`` (``None`` stays ``None``: storages are restored
    where they were saved).

    Elsewhere:

    * ``None``: a :class:`LocationMap` (a ``dict``) that sends CUDA-saved
      storages to the picked device and leaves the others where they were saved.
    * a ``str``/``torch.device`` naming CUDA (``"cuda"``, ``"cuda:1"``,
      ``torch.device("cuda", 1)``): mapped like :func:`device_str`/:func:`device`;
      any other ``str``/``torch.device`` (``"cpu"``, ``"meta"``): unchanged.
    * a ``dict`` (``{"cuda:1": "cuda:0"}``): a :class:`LocationMap` with the same
      entries; values naming CUDA, and saved CUDA tags with no entry, go to the
      picked device.
    * a callable ``fn(storage, location)``: wrapped so that when it returns
      ``None`` (torch's "default behaviour") a CUDA location is restored on
      the picked device. It still sees the saved location; a callable that
      itself moves storages to CUDA (``storage.cuda(1)``) raises off CUDA.

    Works with ``torch.load(weights_only=True)`` (the default) and ``mmap=True``.
    On XPU ``"cuda:N"`` maps to ``"xpu:N"``, so the index must exist, as on CUDA.

    Raises:
        RuntimeError: for a malformed ``"cuda..."`` string (from ``torch.device``).
    """
    if _b._CUDA:
        return spec
    if spec is None:
        return LocationMap()
    kind = type(spec)
    if kind is str or kind is torch.device:
        return _mapped(spec)
    if isinstance(spec, dict):
        return LocationMap(spec)
    if callable(spec):
        return _wrap(spec)
    return spec
