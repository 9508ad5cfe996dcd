"""Random seeds and RNG state of the picked device (the ``torch.cuda`` RNG functions).

On CUDA each function is exactly its ``torch.cuda`` counterpart, arguments
unchanged. On CPU the picked device *is* the CPU, so these act on the CPU
generator (``torch.manual_seed``, ``torch.get_rng_state``, ...). Note that
``torch.manual_seed``/``torch.seed`` also reseed every accelerator.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from . import _backend as _b
from ._device import Device, _arg


def manual_seed(seed: int) -> None:
    """Seed the current device's generator; mirrors ``torch.cuda.manual_seed``.

    On CUDA: exactly ``torch.cuda.manual_seed(seed)``. XPU/MPS: the backend's
    ``manual_seed``. CPU: ``torch.manual_seed`` (its Generator return value is dropped).
    """
    if _b._MODULE is None:
        torch.manual_seed(seed)
        return None
    return _b._MODULE.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the generators of all devices; mirrors ``torch.cuda.manual_seed_all``.

    On CUDA: exactly ``torch.cuda.manual_seed_all(seed)``. XPU: the same.
    MPS has one device (``torch.mps.manual_seed``). CPU: ``torch.manual_seed``.
    """
    if _b._INDEXED:
        return _b._MODULE.manual_seed_all(seed)
    return manual_seed(seed)


def seed() -> None:
    """Seed the current device's generator with a random number; mirrors ``torch.cuda.seed``.

    On CUDA: exactly ``torch.cuda.seed()``. CPU: ``torch.seed()`` (its return
    value is dropped, as ``torch.cuda.seed`` returns None).
    """
    if _b._MODULE is None:
        torch.seed()
        return None
    return _b._MODULE.seed()


def initial_seed() -> int:
    """Return the current device's initial seed; mirrors ``torch.cuda.initial_seed``.

    On CUDA: exactly ``torch.cuda.initial_seed()``. MPS: the MPS default
    generator's seed. CPU: ``torch.initial_seed()``.
    """
    if _b._INDEXED:
        return _b._MODULE.initial_seed()
    if _b._TYPE == "mps":
        return torch.mps._get_default_mps_generator().initial_seed()
    return torch.initial_seed()


def get_rng_state(device: Device = "cuda") -> torch.Tensor:
    """Return the RNG state as a uint8 tensor; mirrors ``torch.cuda.get_rng_state``.

    On CUDA: exactly ``torch.cuda.get_rng_state(device)`` (same default,
    ``"cuda"``). Elsewhere ``"cuda"`` and ``None`` mean the picked device;
    CPU: ``torch.get_rng_state()``.

    Raises:
        ValueError: ``device`` is of another backend (MPS/CPU).
    """
    if _b._CUDA:
        return torch.cuda.get_rng_state(device)
    dev = _arg(device)
    if _b._MODULE is None:
        return torch.get_rng_state()
    return _b._MODULE.get_rng_state(dev)


def set_rng_state(new_state: torch.Tensor, device: Device = "cuda") -> None:
    """Set the RNG state from :func:`get_rng_state`; mirrors ``torch.cuda.set_rng_state``.

    On CUDA: exactly ``torch.cuda.set_rng_state(new_state, device)``.
    Elsewhere ``"cuda"`` and ``None`` mean the picked device; CPU:
    ``torch.set_rng_state(new_state)``.

    Raises:
        ValueError: ``device`` is of another backend (MPS/CPU).
    """
    if _b._CUDA:
        return torch.cuda.set_rng_state(new_state, device)
    dev = _arg(device)
    if _b._MODULE is None:
        torch.set_rng_state(new_state)
    else:
        _b._MODULE.set_rng_state(new_state, dev)
    return None


def get_rng_state_all() -> list[torch.Tensor]:
    """Return the RNG state of every device, one uint8 tensor each; mirrors ``torch.cuda.get_rng_state_all``.

    On CUDA: exactly ``torch.cuda.get_rng_state_all()``; XPU: ``torch.xpu.get_rng_state_all()``. MPS and
    CPU have one generator: ``[torch.mps.get_rng_state()]``, ``[torch.get_rng_state()]``, so a state saved
    and restored with :func:`set_rng_state_all` repeats the draws on the device the tensors moved to.
    """
    if _b._INDEXED:
        return _b._MODULE.get_rng_state_all()
    return [torch.get_rng_state() if _b._MODULE is None else _b._MODULE.get_rng_state()]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """Set the RNG state of every device from :func:`get_rng_state_all`; mirrors ``torch.cuda.set_rng_state_all``.

    On CUDA: exactly ``torch.cuda.set_rng_state_all(new_states)``; XPU: ``torch.xpu``'s. MPS and CPU have
    one generator: it takes the first state (device 0's); an empty iterable sets nothing, as on CUDA.

    Raises:
        RuntimeError: from torch, a state that is not this generator's (saved on another backend).
    """
    if _b._INDEXED:
        return _b._MODULE.set_rng_state_all(new_states)
    state = next(iter(new_states), None)
    if state is None:
        return None
    if _b._MODULE is None:
        torch.set_rng_state(state)
    else:
        _b._MODULE.set_rng_state(state)
    return None
