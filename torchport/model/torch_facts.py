"""What torch does off CUDA, and what each target answers: the facts no evaluation of a project's code can know.

Every list of names the program model decides with is here, each with the reason it exists. Measured on torch
2.13's CPU build (a Mac's build has no CUDA either): the calls in `RAISES_OFF_CUDA` raise ("Torch not compiled
with CUDA enabled" or a lazy-init error); the other ``torch.cuda`` calls return quietly.
"""

from __future__ import annotations

import re

TARGETS = ("cuda", "mps", "xpu", "cpu")

# torch.cuda calls (names under ``torch.cuda``) that raise where CUDA is not there.
RAISES_OFF_CUDA = frozenset({
    "current_device", "synchronize", "set_device", "get_device_name", "get_device_properties",
    "get_device_capability", "get_rng_state", "initial_seed", "current_stream", "default_stream", "Stream", "Event",
    "device", "init", "ipc_collect", "mem_get_info", "memory_summary", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "set_per_process_memory_fraction", "caching_allocator_alloc", "utilization",
    "CUDAGraph", "graph", "make_graphed_callables", "nvtx.range_push", "nvtx.range_pop", "nvtx.range", "nvtx.mark",
    "FloatTensor", "HalfTensor", "BFloat16Tensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor",
    "BoolTensor", "CharTensor", "ShortTensor",
})

# Attributes of data (tensors, modules' parameters, packed sequences) that say whether it is on CUDA: False
# wherever there is no CUDA.
ON_CUDA_FLAGS = frozenset({"is_cuda"})

# Calls that answer a process's rank or a count of processes: an int, not negative.
RANKS = frozenset({"torch.distributed.get_rank", "torch.distributed.get_world_size",
                   "torch.distributed.get_local_rank"})

# Keyword arguments that place data on the device they name (``device_type=`` only labels an autocast).
PLACEMENT_KEYWORDS = frozenset({"device", "map_location"})

# Keyword arguments with which a library places a model itself (Hugging Face's `from_pretrained(device_map=...)`):
# a guard that sets one chooses where the model goes, as `.to(device)` does.
LIBRARY_PLACEMENT_KEYWORDS = frozenset({"device_map"})

# Keyword arguments that name the accelerator a framework must find (Lightning's Trainer and Fabric), and the
# values that ask for CUDA: without it the framework raises.
ACCELERATOR_KEYWORDS = frozenset({"accelerator"})
CUDA_ACCELERATORS = frozenset({"cuda", "gpu"})

# Layers that, in a process group, take only CUDA (or XPU) input in training: SyncBatchNorm raises on CPU and MPS.
GROUP_CUDA_LAYERS = frozenset({"torch.nn.SyncBatchNorm", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
                               "torch.nn.modules.batchnorm.SyncBatchNorm"})

# Calls whose arguments are text or container keys, not devices: a CUDA device string given to them places
# nothing. Given positionally to any other call the model cannot follow, it is where that call puts data.
TEXT_CALLS = frozenset({"print", "format", "join", "startswith", "endswith", "replace", "split", "append", "write",
                        "info", "debug", "warning", "warn", "error", "get", "setdefault", "pop", "index", "count",
                        "add_argument", "set_defaults", "add", "extend", "insert", "remove", "str", "isinstance",
                        "getattr", "hasattr", "setattr"})
CUDA_SPEC = re.compile(r"cuda(?::\d+)?")

# Process-group backends that need CUDA.
CUDA_BACKENDS = frozenset({"nccl"})

# A test that fakes `torch.cuda` (patches it): what it calls sees CUDA where there is none, and the CUDA
# devices it names are descriptors that need no GPU.
FAKES_CUDA = re.compile(r"""patch(?:\.object)?\(\s*(?:torch\.cuda\s*,|["']torch\.cuda\.)""")

# Calls that end a path on purpose: a program's exit, a test's skip.
EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})
SKIPS = frozenset({"pytest.skip", "unittest.SkipTest", "pytest.xfail"})
# Skip marks, each -> whether its condition says when to run (skipUnless) rather than when to skip.
SKIP_IF = {"pytest.mark.skipif": False, "unittest.skipIf": False, "unittest.skipUnless": True}
SKIP_ALWAYS = frozenset({"pytest.mark.skip", "unittest.skip"})
# Exception names whose handler catches what a call off CUDA raises (AssertionError, RuntimeError).
CATCHES_CUDA_ERRORS = frozenset({"Exception", "BaseException", "RuntimeError", "AssertionError"})


def query(name: str, target: str) -> object:
    """What ``name`` (a qualified call such as ``torch.cuda.is_available``) returns on ``target``, or `UNKNOWN`.

    Covers torch's own device queries, ``torch.accelerator`` and torchport's runtime (``torchport.runtime``, the
    vendored ``_torchport_runtime`` and its native helpers); a CUDA device count is unknown (one or more).
    """
    from torchport.model.values import INDEX, UNKNOWN, Device

    accelerator = target != "cpu"
    tail = name.rsplit(".", 1)[-1]
    if name in ("torch.cuda.is_available", "torch.cuda.is_initialized"):
        return target == "cuda"
    if name == "torch.cuda.device_count":
        return INDEX if target == "cuda" else 0
    if name in ("torch.backends.mps.is_available", "torch.backends.mps.is_built", "torch.mps.is_available"):
        return target == "mps"
    if name in ("torch.xpu.is_available",):
        return target == "xpu"
    if name == "torch.xpu.device_count":
        return UNKNOWN if target == "xpu" else 0
    if name == "torch.accelerator.is_available":
        return accelerator
    if name == "torch.accelerator.device_count":
        return UNKNOWN if accelerator else 0
    if name == "torch.accelerator.current_accelerator":
        return Device(target) if accelerator else None
    if _runtime(name):
        if tail in ("device", "available_device", "accelerator_device", "nth_device"):
            return Device(target)
        if tail in ("device_str", "available_device_str", "device_type", "available_device_type", "nth_device_str"):
            return target
        if tail == "is_available":
            return accelerator
        if tail == "device_count":
            return {"cpu": 0, "mps": 1}.get(target, INDEX)
        if tail in ("current_device", "process_count", "local_rank"):
            return INDEX if target == "cuda" else 0 if tail == "current_device" else INDEX
    return UNKNOWN


def _runtime(name: str) -> bool:
    head = name.split(".", 1)[0]
    return name.startswith("torchport.runtime.") or head.endswith("torchport_runtime")
