"""torchport runtime: the device-agnostic calls that migrated code makes.

``from torchport import runtime as tp``, then ``x.to(tp.device())``,
``tp.synchronize()``, ``tp.Event(enable_timing=True)``...

The device is picked once, on first use (not at import: importing touches no
device backend and creates no CUDA context): ``TORCHPORT_DEVICE`` (``cpu``,
``mps``, ``cuda``, ``cuda:N``, ``xpu``, ``xpu:N``) if set, else the first
available of CUDA (``torch.cuda.is_available()``), MPS, XPU, else CPU. An
unusable ``TORCHPORT_DEVICE`` raises at first use (``ValueError`` if malformed,
``RuntimeError`` if the backend is unavailable). Reading ``Stream`` or ``Event``
counts as a use.

When CUDA is picked, every function is exactly the ``torch.cuda`` call it
replaces (arguments passed through, same results and errors). Nothing in torch
is patched, and only CUDA-style device specs are remapped.
"""

from typing import Any as _Any

from ._backend import ENV_VAR, avoid_mps, avoided_mps, keep_cuda_or_cpu
from ._device import (
    available_device,
    available_device_str,
    available_device_type,
    current_device,
    device,
    device_count,
    device_index,
    device_str,
    device_type,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_bf16_supported,
    nth_device,
    nth_device_str,
    process_count,
    set_device,
    synchronize,
)
from ._distributed import ddp_device_ids, distributed_backend, fsdp_device_id, process_group_device_id
from ._extras import (
    mark,
    on_accelerator,
    pin_memory,
    pin_memory_available,
    range,
    range_pop,
    range_push,
    set_default_tensor_type,
)
from ._memory import (
    empty_cache,
    ipc_collect,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from ._random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    set_rng_state,
    set_rng_state_all,
)
from ._serialization import map_location
from ._streams import current_stream, default_stream, record_stream, set_stream, stream

__all__ = [
    "ENV_VAR",
    "Event",
    "Stream",
    "available_device",
    "available_device_str",
    "available_device_type",
    "avoid_mps",
    "avoided_mps",
    "current_device",
    "current_stream",
    "ddp_device_ids",
    "default_stream",
    "device",
    "device_count",
    "device_index",
    "device_str",
    "device_type",
    "distributed_backend",
    "empty_cache",
    "ipc_collect",
    "keep_cuda_or_cpu",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "init",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "manual_seed_all",
    "map_location",
    "mark",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "nth_device",
    "nth_device_str",
    "on_accelerator",
    "pin_memory",
    "pin_memory_available",
    "process_count",
    "process_group_device_id",
    "fsdp_device_id",
    "range",
    "range_pop",
    "range_push",
    "record_stream",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "set_default_tensor_type",
    "set_device",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]

_LAZY = ("Stream", "Event")  # depend on the picked backend: resolved on first read


def __getattr__(name: str) -> _Any:
    """``Stream`` and ``Event``: picked on first read, then plain module attributes."""
    if name in _LAZY:
        from . import _streams

        value = getattr(_streams, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


def _forget_lazy() -> None:
    for name in _LAZY:
        globals().pop(name, None)


from ._backend import _resets  # noqa: E402

_resets.append(_forget_lazy)
del _resets


# TORCHPORT_AUDIT=1: report run-time CUDA uses the static pass missed. The runtime imports no checking
# tool: it calls each "torchport.audit" entry point (torchport's pyproject.toml registers
# torchport.checks.audit:start_process_audit). Unset, this costs one environment lookup.
import os as _os  # noqa: E402 - after the public names, as the vendored copy cuts here

if _os.environ.get("TORCHPORT_AUDIT", "").strip().lower() not in ("", "0", "false", "no", "off"):
    from importlib.metadata import entry_points as _entry_points

    _audits = _entry_points(group="torchport.audit")
    if not _audits:
        import warnings as _warnings

        _warnings.warn("TORCHPORT_AUDIT is set but no audit is installed (pip install torchport)", stacklevel=2)
    for _audit in _audits:
        _audit.load()()
    del _entry_points, _audits
    globals().pop("_audit", None)
del _os
