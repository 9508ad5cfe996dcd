"""`torch.cuda.*` device, stream, event, memory and RNG calls: renames to `torchport.runtime`.

| Code  | Before                                   | After                              |
|-------|------------------------------------------|------------------------------------|
| TP010 | torch.cuda.synchronize()                 | tp.synchronize()                   |
| TP011 | torch.cuda.Event(enable_timing=True)     | tp.Event(enable_timing=True)       |
| TP012 | torch.cuda.max_memory_allocated()        | tp.max_memory_allocated()          |
| TP013 | torch.cuda.manual_seed_all(0)            | tp.manual_seed_all(0)              |
| TP014 | except torch.cuda.OutOfMemoryError:      | except torch.OutOfMemoryError:     |
| TP015 | x.type(torch.cuda.FloatTensor)           | x.to(tp.device(), torch.float32)   |
| TP016 | torch.cuda.nvtx.range_push("step")       | tp.range_push("step")              |
| TP101 | torch.cuda.get_arch_list()               | (reported)                         |

The tables below are the whole rule: a qualified name and the runtime name it becomes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods._base import Rule, keyword_arg, string_value

if TYPE_CHECKING:
    from torchport.codemods._transformer import MigrateCodemod

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
    Rule("TP015", "cuda-legacy-tensor-type", "Legacy `torch.cuda.FloatTensor` and friends become a dtype on the "
         "runtime device.", "x.type(torch.cuda.FloatTensor)", "x.to(tp.device(), torch.float32)"),
    Rule("TP016", "cuda-nvtx", "NVTX ranges become profiler ranges (`torch.profiler.record_function`) off CUDA.",
         'torch.cuda.nvtx.range_push("step")', 'tp.range_push("step")'),
    Rule("TP101", "cuda-api-unported", "A `torch.cuda` API with no portable equivalent; left unchanged.",
         "torch.cuda.get_arch_list()", safety="manual", effort="medium"),
)

TRIGGERS = (r"cuda",)

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
    "nvtx.range_push": ("TP016", "range_push"),
    "nvtx.range_pop": ("TP016", "range_pop"),
}
# Submodules that re-export the same functions (torch.cuda.memory.empty_cache, ...).
_SUBMODULES = ("memory", "random", "streams")

# torch.cuda name -> (rule code, torch attribute path)
TORCH_RENAMES: dict[str, tuple[str, str]] = {
    "OutOfMemoryError": ("TP014", "OutOfMemoryError"),
    "nvtx.range": ("TP016", "profiler.record_function"),
}

# Legacy tensor types and the dtype each one means.
LEGACY_TYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16", "IntTensor": "int32",
    "LongTensor": "int64", "BoolTensor": "bool",
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


def _legacy_dtype(m: MigrateCodemod, node: cst.CSTNode) -> str | None:
    text = string_value(node)
    names = {text} if text else m.qnames(node)
    for name in names:
        if name.startswith("torch.cuda.") and name[len("torch.cuda."):] in LEGACY_TYPES:
            return LEGACY_TYPES[name[len("torch.cuda."):]]
    return None


def rewrite_legacy_call(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``torch.cuda.FloatTensor([1, 2])`` -> ``torch.tensor(...)``; ``x.type(torch.cuda.FloatTensor)`` -> ``x.to(...)``."""
    func = updated.func
    if isinstance(func, cst.Attribute) and func.attr.value == "type" and len(original.args) == 1:
        dtype = _legacy_dtype(m, original.args[0].value)
        if dtype is None or not m.apply("TP015", original.args[0].value):
            return None
        return updated.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[
            cst.Arg(m.runtime_call("device", [])), cst.Arg(m.torch_attr(dtype))])
    dtype = _legacy_dtype(m, original.func)
    if dtype is None or any(a.keyword or a.star for a in updated.args):
        return None
    values = [a.value for a in updated.args]
    if len(values) == 1 and isinstance(values[0], (cst.List, cst.Tuple)):
        factory = "tensor"
    elif all(isinstance(v, cst.Integer) for v in values):
        factory, values = "empty", values or [cst.Integer("0")]
    else:
        return None  # data or size? torchport cannot tell; TP101 reports it
    if not m.apply("TP015", original):
        return None
    return cst.Call(func=m.torch_attr(factory), args=[
        *(cst.Arg(v) for v in values), keyword_arg("dtype", m.torch_attr(dtype)),
        keyword_arg("device", m.runtime_call("device", []))])
