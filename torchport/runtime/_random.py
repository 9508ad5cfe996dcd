"""Random seeds and RNG state of the picked device (the ``torch.cuda`` RNG functions).

On CPU the picked device *is* the CPU, so these act on the CPU generator
(``torch.manual_seed``, ``torch.get_rng_state``, ...). Note that
``torch.manual_seed``/``torch.seed`` also reseed every accelerator.
"""

from __future__ import annotations

import torch

from ._backend import _INDEXED, _MODULE, _TYPE
from ._device import _arg


def manual_seed(seed: int) -> None:
    """Seed the current device's generator; mirrors ``torch.cuda.manual_seed``.

    CUDA/XPU/MPS: the backend's ``manual_seed``. CPU: ``torch.manual_seed``.
    """
    if _MODULE is None:
        torch.manual_seed(seed)
    else:
        _MODULE.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the generators of all devices; mirrors ``torch.cuda.manual_seed_all``.

    MPS has one device (``torch.mps.manual_seed``). CPU: ``torch.manual_seed``.
    """
    if _INDEXED:
        _MODULE.manual_seed_all(seed)
    else:
        manual_seed(seed)


def seed() -> None:
    """Seed the current device's generator with a random number; mirrors ``torch.cuda.seed``.

    CPU: ``torch.seed()`` (its return value is dropped, as ``torch.cuda.seed`` returns None).
    """
    if _MODULE is None:
        torch.seed()
    else:
        _MODULE.seed()


def initial_seed() -> int:
    """Return the current device's initial seed; mirrors ``torch.cuda.initial_seed``.

    MPS: the MPS default generator's seed. CPU: ``torch.initial_seed()``.
    """
    if _INDEXED:
        return _MODULE.initial_seed()
    if _TYPE == "mps":
        return torch.mps._get_default_mps_generator().initial_seed()
    return torch.initial_seed()


def get_rng_state(device: int | str | torch.device | None = None) -> torch.Tensor:
    """Return the RNG state as a uint8 tensor; mirrors ``torch.cuda.get_rng_state``.

    ``None`` means the picked device. CPU: ``torch.get_rng_state()``.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _MODULE is None:
        return torch.get_rng_state()
    return _MODULE.get_rng_state(dev)


def set_rng_state(state: torch.Tensor, device: int | str | torch.device | None = None) -> None:
    """Set the RNG state from :func:`get_rng_state`; mirrors ``torch.cuda.set_rng_state``.

    CPU: ``torch.set_rng_state(state)``.

    Raises:
        ValueError: ``device`` is of another backend.
    """
    dev = _arg(device)
    if _MODULE is None:
        torch.set_rng_state(state)
    else:
        _MODULE.set_rng_state(state, dev)
