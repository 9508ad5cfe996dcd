"""`torch.cuda.*` device, stream, event, memory and RNG calls: renames to `torchport.runtime`.

| Code  | Before                                   | After                              |
|-------|------------------------------------------|------------------------------------|
| TP010 | torch.cuda.synchronize()                 | tp.synchronize()                   |
| TP011 | torch.cuda.Event(enable_timing=True)     | tp.Event(enable_timing=True)       |
| TP012 | torch.cuda.max_memory_allocated()        | tp.max_memory_allocated()          |
| TP013 | torch.cuda.manual_seed_all(0)            | tp.manual_seed_all(0)              |
| TP014 | except torch.cuda.OutOfMemoryError:      | except torch.OutOfMemoryError:     |
| TP101 | torch.cuda.nvtx.range_push("step")       | (reported)                         |

The tables below are the whole rule: a qualified name and the runtime name it becomes.
"""

from __future__ import annotations

from torchport.codemods._base import Rule

RULES = (
    Rule("TP010", "cuda-device-api", "`torch.cuda` device management becomes the runtime's.",
         "torch.cuda.synchronize()", "tp.synchronize()"),
    Rule("TP011", "cuda-stream-api", "`torch.cuda` streams and events become the runtime's.",
         "torch.cuda.Event(enable_timing=True)", "tp.Event(enable_timing=True)"),
    Rule("TP012", "cuda-memory-api", "`torch.cuda` memory queries become the runtime's.",
         "torch.cuda.max_memory_allocated()", "tp.max_memory_allocated()"),
    Rule("TP013", "cuda-rng-api", "`torch.cuda` seeds and RNG state become the runtime's.",
         "torch.cuda.manual_seed_all(0)", "tp.manual_seed_all(0)"),
    Rule("TP014", "cuda-oom-error", "`torch.cuda.OutOfMemoryError` is `torch.OutOfMemoryError`.",
         "except torch.cuda.OutOfMemoryError:", "except torch.OutOfMemoryError:"),
    Rule("TP101", "cuda-api-unported", "A `torch.cuda` API with no portable equivalent; left unchanged.",
         'torch.cuda.nvtx.range_push("step")'),
)

_DEVICE = (
    "is_available", "device_count", "current_device", "set_device", "get_device_name",
    "get_device_properties", "get_device_capability", "synchronize", "is_bf16_supported",
)
_STREAMS = ("Stream", "stream", "current_stream", "default_stream", "set_stream", "Event")
_MEMORY = (
    "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "reset_max_memory_allocated", "memory_stats", "memory_summary", "mem_get_info",
)
_RNG = ("manual_seed", "manual_seed_all", "seed", "initial_seed", "get_rng_state", "set_rng_state")

# torch.cuda name -> (rule code, runtime name)
RUNTIME_RENAMES: dict[str, tuple[str, str]] = {
    **{name: ("TP010", name) for name in _DEVICE},
    "device": ("TP010", "device_index"),  # the context manager; `device` is the runtime's selector
    **{name: ("TP011", name) for name in _STREAMS},
    **{name: ("TP012", name) for name in _MEMORY},
    "memory_cached": ("TP012", "memory_reserved"),
    "max_memory_cached": ("TP012", "max_memory_reserved"),
    "reset_max_memory_cached": ("TP012", "reset_peak_memory_stats"),
    **{name: ("TP013", name) for name in _RNG},
    "seed_all": ("TP013", "seed"),
}
# Submodules that re-export the same functions (torch.cuda.memory.empty_cache, ...).
_SUBMODULES = ("memory", "random", "streams")

# torch.cuda name -> (rule code, torch attribute path)
TORCH_RENAMES: dict[str, tuple[str, str]] = {
    "OutOfMemoryError": ("TP014", "OutOfMemoryError"),
}


def lookup(qualified_name: str) -> tuple[str, str, bool] | None:
    """``(code, new_name, is_runtime)`` for a ``torch.cuda`` qualified name, or None."""
    if not qualified_name.startswith("torch.cuda."):
        return None
    name = qualified_name[len("torch.cuda."):]
    head, _, tail = name.partition(".")
    if head in _SUBMODULES and tail:
        name = tail
    if name in RUNTIME_RENAMES:
        code, new = RUNTIME_RENAMES[name]
        return code, new, True
    if name in TORCH_RENAMES:
        code, new = TORCH_RENAMES[name]
        return code, new, False
    return None
