"""What torch does off CUDA, and what each target answers: the facts no evaluation of a project's code can know.

Every word list and regular expression the rules and the program model decide with is here, in a few tables, each
entry with the reason it exists (``scripts/count_word_lists.py`` counts what is left elsewhere):

- `CUDA_APIS`: one `Api` record per CUDA API, by qualified name (``api("torch.cuda.synchronize").off_cuda ==
  "raises"``): the rule that ports it, the name it becomes, what it does off CUDA, its roles.
- `TORCH_NAMES`: other qualified names (torch's, pytest's, ...) -> their roles; `WORDS`: bare words (keyword,
  attribute and call names, device types) -> their roles; `ROLES`: why each role matters. Ask `named` and `words`.
- `CUDA_LIBRARIES`: the libraries that need an NVIDIA GPU; `TEXT`: the patterns searched in source text (`text`).

Measured on torch 2.13's CPU build (a Mac's build has no CUDA either): the calls in `RAISES_OFF_CUDA` raise ("Torch
not compiled with CUDA enabled" or a lazy-init error); the other ``torch.cuda`` calls return quietly. The names
below the tables (`RAISES_OFF_CUDA`, `EXITS`, ...) are views of them, by role.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

TARGETS = ("cuda", "mps", "xpu", "cpu")
OFF_CUDA = TARGETS[1:]  # the targets a port adds

class Api(NamedTuple):
    """What torchport knows of one CUDA API (a name under ``torch.cuda``, or torch's private CUDA state).

    rule: the rule that ports or reports it (``"TP010"``); None where none does.
    becomes: the name the rule renames it to (the runtime's; torch's for TP014); None where it is not renamed.
    off_cuda: ``"raises"`` where CUDA is not there ("Torch not compiled with CUDA enabled" or a lazy-init
        error, measured on torch 2.13's CPU build), ``"quiet"`` where it returns or does nothing.
    why: the reason it is in the table.
    dtype: for a legacy tensor type (TP015), the dtype it means.
    portable: False for state the runtime has no equivalent of (a module using it keeps its CUDA RNG calls).
    roles: what the rules ask of it by name (`ROLES`).
    params: its positional parameters, where a rule turns them into keywords.
    no_plain_form: why native mode has no plain PyTorch form of the runtime call it becomes ("" where it has one).
    """

    rule: str | None
    becomes: str | None
    off_cuda: str
    why: str
    dtype: str | None = None
    portable: bool = True
    roles: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    no_plain_form: str = ""


_DEVICE = "device management: the runtime's is the same call on CUDA"
_STREAMS = "streams and events: the runtime's are CUDA's on CUDA"
_MEMORY = "memory queries: the runtime's are CUDA's on CUDA (renamed where torch renamed them)"
_RNG = "seeds and RNG state: the runtime's are CUDA's on CUDA"
_OOM = "the out-of-memory error: torch's catches CUDA's"
_TYPES = "legacy CUDA tensor types: a dtype on the runtime device"
_NVTX = "NVTX ranges: the runtime's are NVTX on CUDA, profiler ranges elsewhere"
_QUERY = "availability queries: ported only where the guards say so"
_GRAPHS = "CUDA graphs: no portable equivalent"
_ALLOCATOR = "memory pools and allocators: no portable equivalent"
_INTEROP = "CUDA interop: no portable equivalent"
_SNAPSHOT = "memory snapshots: no portable equivalent"
_RAISES = "raises off CUDA; no rule rewrites it"
_AMP = "CUDA automatic mixed precision: torch.amp's on the runtime's device type (autocast and scaler move together)"

R, Q = "raises", "quiet"
# Every CUDA API torchport decides on, by qualified name; in each rule's order (its renames keep it).
CUDA_APIS: dict[str, Api] = {
    "torch.cuda.current_device": Api("TP010", "current_device", R, _DEVICE, roles=("index",)),
    "torch.cuda.set_device": Api("TP010", "set_device", R, _DEVICE),
    "torch.cuda.get_device_name": Api("TP010", "get_device_name", R, _DEVICE),
    "torch.cuda.get_device_properties": Api("TP010", "get_device_properties", R, _DEVICE),
    "torch.cuda.get_device_capability": Api("TP010", "get_device_capability", R, _DEVICE),
    "torch.cuda.synchronize": Api("TP010", "synchronize", R, _DEVICE),
    "torch.cuda.is_bf16_supported": Api("TP010", "is_bf16_supported", Q, _DEVICE),
    "torch.cuda.device": Api("TP010", "device_index", R, _DEVICE + " (`device` is the runtime's selector)"),
    "torch.cuda.is_available": Api("TP010", None, Q, _QUERY, roles=("available",)),
    "torch.cuda.device_count": Api("TP010", None, Q, _QUERY, roles=("count",)),
    "torch.cuda.is_initialized": Api(None, None, Q, _QUERY),
    "torch.cuda.Stream": Api("TP011", "Stream", R, _STREAMS, no_plain_form=(
        "torch.cuda.Stream has no plain form that works on every device (torch.Stream on the CPU cannot record or "
        "wait for events)")),
    "torch.cuda.stream": Api("TP011", "stream", Q, _STREAMS),
    "torch.cuda.current_stream": Api("TP011", "current_stream", R, _STREAMS, no_plain_form=(
        "torch.accelerator.current_stream() raises on the CPU, torch.cpu's stream has no synchronize() or query(), "
        "and torch.mps has no current_stream: no plain form works on every device")),
    "torch.cuda.default_stream": Api("TP011", "default_stream", R, _STREAMS),
    "torch.cuda.set_stream": Api("TP011", "set_stream", Q, _STREAMS),
    "torch.cuda.Event": Api("TP011", "Event", R, _STREAMS, no_plain_form=(
        "torch.Event cannot record on the CPU (torch 2.13: \"cpu backend doesn't support events\") and "
        "torch.cpu.Event has no elapsed_time: no plain form works on every device")),
    "torch.cuda.empty_cache": Api("TP012", "empty_cache", Q, _MEMORY),
    "torch.cuda.ipc_collect": Api("TP012", "ipc_collect", R, _MEMORY),
    "torch.cuda.set_per_process_memory_fraction": Api("TP012", "set_per_process_memory_fraction", R, _MEMORY),
    "torch.cuda.memory_allocated": Api("TP012", "memory_allocated", Q, _MEMORY),
    "torch.cuda.max_memory_allocated": Api("TP012", "max_memory_allocated", Q, _MEMORY),
    "torch.cuda.memory_reserved": Api("TP012", "memory_reserved", Q, _MEMORY),
    "torch.cuda.max_memory_reserved": Api("TP012", "max_memory_reserved", Q, _MEMORY),
    "torch.cuda.reset_peak_memory_stats": Api("TP012", "reset_peak_memory_stats", R, _MEMORY),
    "torch.cuda.reset_max_memory_allocated": Api("TP012", "reset_max_memory_allocated", R, _MEMORY),
    "torch.cuda.memory_stats": Api("TP012", "memory_stats", Q, _MEMORY, roles=("counters",)),
    "torch.cuda.memory_summary": Api("TP012", "memory_summary", R, _MEMORY),
    "torch.cuda.mem_get_info": Api("TP012", "mem_get_info", R, _MEMORY),
    "torch.cuda.memory_cached": Api("TP012", "memory_reserved", Q, _MEMORY),
    "torch.cuda.max_memory_cached": Api("TP012", "max_memory_reserved", Q, _MEMORY),
    "torch.cuda.reset_max_memory_cached": Api("TP012", "reset_peak_memory_stats", R, _MEMORY),
    "torch.cuda.reset_accumulated_memory_stats": Api(None, None, R, _RAISES),
    "torch.cuda.manual_seed": Api("TP013", "manual_seed", Q, _RNG, roles=("seed",)),
    "torch.cuda.manual_seed_all": Api("TP013", "manual_seed_all", Q, _RNG, roles=("seed",)),
    "torch.cuda.seed": Api("TP013", "seed", Q, _RNG),
    "torch.cuda.initial_seed": Api("TP013", "initial_seed", R, _RNG),
    "torch.cuda.get_rng_state": Api("TP013", "get_rng_state", R, _RNG),
    "torch.cuda.set_rng_state": Api("TP013", "set_rng_state", Q, _RNG),
    "torch.cuda.get_rng_state_all": Api("TP013", "get_rng_state_all", Q, _RNG, roles=("every_device_state",)),
    "torch.cuda.set_rng_state_all": Api("TP013", "set_rng_state_all", Q, _RNG, roles=("every_device_state",)),
    "torch.cuda.seed_all": Api("TP013", "seed", Q, _RNG),
    "torch.cuda.default_generators": Api("TP013", None, Q, _RNG, portable=False),
    "torch.cuda.random.default_generators": Api("TP013", None, Q, _RNG, portable=False),
    "torch._C._cuda_setRNGState": Api("TP013", None, Q, _RNG, portable=False),
    "torch._C._cuda_getRNGState": Api("TP013", None, Q, _RNG, portable=False),
    "torch.cuda.OutOfMemoryError": Api("TP014", "OutOfMemoryError", Q, _OOM),
    "torch.cuda.FloatTensor": Api("TP015", None, R, _TYPES, "float32"),
    "torch.cuda.DoubleTensor": Api("TP015", None, R, _TYPES, "float64"),
    "torch.cuda.HalfTensor": Api("TP015", None, R, _TYPES, "float16"),
    "torch.cuda.BFloat16Tensor": Api("TP015", None, R, _TYPES, "bfloat16"),
    "torch.cuda.ByteTensor": Api("TP015", None, R, _TYPES, "uint8"),
    "torch.cuda.CharTensor": Api("TP015", None, R, _TYPES, "int8"),
    "torch.cuda.ShortTensor": Api("TP015", None, R, _TYPES, "int16"),
    "torch.cuda.IntTensor": Api("TP015", None, R, _TYPES, "int32"),
    "torch.cuda.LongTensor": Api("TP015", None, R, _TYPES, "int64"),
    "torch.cuda.BoolTensor": Api("TP015", None, R, _TYPES, "bool"),
    "torch.cuda.nvtx.range_push": Api("TP016", "range_push", R, _NVTX),
    "torch.cuda.nvtx.range_pop": Api("TP016", "range_pop", R, _NVTX),
    "torch.cuda.nvtx.range": Api("TP016", "range", R, _NVTX),
    "torch.cuda.nvtx.mark": Api("TP016", "mark", R, _NVTX),
    "torch.cuda.amp.autocast": Api("TP020", "torch.amp.autocast", Q, _AMP, roles=("autocast",),
                                   params=("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.autocast_mode.autocast": Api("TP020", "torch.amp.autocast", Q, _AMP,
                                                 params=("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.GradScaler": Api("TP021", "torch.amp.GradScaler", Q, _AMP, roles=("scaler",)),
    "torch.cuda.amp.grad_scaler.GradScaler": Api("TP021", "torch.amp.GradScaler", Q, _AMP, roles=("scaler",)),
    "torch.cuda.amp.custom_fwd": Api("TP022", "torch.amp.custom_fwd", Q, _AMP),
    "torch.cuda.amp.autocast_mode.custom_fwd": Api("TP022", "torch.amp.custom_fwd", Q, _AMP),
    "torch.cuda.amp.custom_bwd": Api("TP022", "torch.amp.custom_bwd", Q, _AMP),
    "torch.cuda.amp.autocast_mode.custom_bwd": Api("TP022", "torch.amp.custom_bwd", Q, _AMP),
    "torch.cuda.init": Api("TP010", "init", R, _DEVICE),
    "torch.cuda.utilization": Api(None, None, R, _RAISES),
    "torch.cuda.CUDAGraph": Api("TP201", None, R, _GRAPHS),
    "torch.cuda.graph": Api("TP201", None, R, _GRAPHS),
    "torch.cuda.graphs": Api("TP201", None, Q, _GRAPHS),
    "torch.cuda.make_graphed_callables": Api("TP201", None, R, _GRAPHS),
    "torch.cuda.graph_pool_handle": Api("TP201", None, Q, _GRAPHS),
    "torch.cuda.is_current_stream_capturing": Api("TP201", None, Q, _GRAPHS),
    "torch.cuda.MemPool": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.use_mem_pool": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.CUDAPluggableAllocator": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.change_current_allocator": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.memory.CUDAPluggableAllocator": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.memory.change_current_allocator": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.caching_allocator_alloc": Api("TP202", None, R, _ALLOCATOR),
    "torch.cuda.caching_allocator_delete": Api("TP202", None, Q, _ALLOCATOR),
    "torch.cuda.cudart": Api("TP203", None, Q, _INTEROP),
    "torch.cuda.ExternalStream": Api("TP203", None, Q, _INTEROP),
    "torch.cuda.get_stream_from_external": Api("TP203", None, Q, _INTEROP),
    "torch.cuda.can_device_access_peer": Api("TP203", None, Q, _INTEROP),
    "torch.cuda.comm": Api("TP203", None, Q, _INTEROP),
    "torch.cuda.nccl": Api("TP203", None, Q, _INTEROP),
    "torch.cuda.memory._record_memory_history": Api("TP204", None, Q, _SNAPSHOT),
    "torch.cuda.memory._dump_snapshot": Api("TP204", None, Q, _SNAPSHOT),
    "torch.cuda.memory._snapshot": Api("TP204", None, Q, _SNAPSHOT),
    "torch.cuda.memory_snapshot": Api("TP204", None, Q, _SNAPSHOT),
    "torch.cuda._record_memory_history": Api("TP204", None, Q, _SNAPSHOT),
    "torch.cuda._dump_snapshot": Api("TP204", None, Q, _SNAPSHOT),
}
# Other names the rules decide on, by qualified name -> their roles (`ROLES`).
TORCH_NAMES: dict[str, tuple[str, ...]] = {
    "torch.autocast": ("autocast", "generic_autocast"), "torch.amp.autocast": ("autocast", "generic_autocast"),
    "torch.amp.autocast_mode.autocast": ("generic_autocast",), "torch.amp.GradScaler": ("scaler", "generic_scaler"),
    "torch.amp.grad_scaler.GradScaler": ("scaler", "generic_scaler"), "torch.GradScaler": ("scaler",),
    "torch.float64": ("float64",), "torch.double": ("float64",), "torch.complex128": ("complex128",),
    "torch.cdouble": ("complex128",), "torch.backends.cudnn": ("cuda_flags",), "torch.backends.cuda": ("cuda_flags",),
    "torch.profiler.ProfilerActivity.CUDA": ("cuda_activity",),
    "torch.autograd.ProfilerActivity.CUDA": ("cuda_activity",),
    "torch.autograd.profiler.ProfilerActivity.CUDA": ("cuda_activity",),
    "torch._C._profiler.ProfilerActivity.CUDA": ("cuda_activity",),
    "torch.utils.cpp_extension.CUDAExtension": ("cuda_extension",),
    "torch.utils.cpp_extension.CppExtension": ("cpp_extension",),
    "torch.utils.ffi.create_extension": ("cpp_extension",),  # torch < 1.0; CUDA where `with_cuda=True`
    "torch.utils.cpp_extension.load": ("extension_loader",),
    "torch.jit.script": ("scripting",), "torch.jit.script_method": ("scripting",),
    "torch.jit.interface": ("scripting",),
    "torch.utils.cpp_extension.load_inline": ("extension_loader",),
    "torch.nn.parallel.data_parallel": ("needs_gpu",), "torch.nn.parallel.data_parallel.data_parallel": ("needs_gpu",),
    # NeuralKG's `pl.Trainer.from_argparse_args(args, gpus="0,")`: Lightning before 2.0 asks CUDA for those GPUs
    "pytorch_lightning.Trainer": ("gpus_trainer",), "pytorch_lightning.Trainer.from_argparse_args": ("gpus_trainer",),
    "pytorch_lightning.trainer.Trainer": ("gpus_trainer",), "lightning.Trainer": ("gpus_trainer",),
    "lightning.pytorch.Trainer": ("gpus_trainer",),
    "torch.backends.mps.is_available": ("accelerator_available",), "torch.mps.is_available": ("accelerator_available",),
    "torch.xpu.is_available": ("accelerator_available",), "torch.accelerator.is_available": ("accelerator_available",),
    "torch.device": ("device_first",), "torch.set_default_device": ("device_first",),
    "torch.Generator": ("device_first",),
    "torch.get_device_module": ("device_first",), "torch.multiprocessing.spawn": ("spawn",),
    "torch.multiprocessing.start_processes": ("spawn",), "torch.multiprocessing.spawn.spawn": ("spawn",),
    "torch.multiprocessing.spawn.start_processes": ("spawn",), "torch._C.": ("cuda_internals",),
    "torch.utils.cpp_extension.": ("cuda_internals",), "torch.distributed.get_rank": ("rank",),
    "torch.distributed.get_world_size": ("world_size",), "torch.distributed.get_local_rank": ("rank",),
    "torch.nn.SyncBatchNorm": ("group_cuda_layer",), "torch.nn.Module": ("module_base",),
    "GPUtil.getGPUs": ("nvidia_gpu_list",), "GPUtil.getAvailable": ("nvidia_gpu_list",),
    "GPUtil.GPUtil.getGPUs": ("nvidia_gpu_list",), "GPUtil.GPUtil.getAvailable": ("nvidia_gpu_list",),
    "GPUtil.getFirstAvailable": ("driver_call",), "GPUtil.GPUtil.getFirstAvailable": ("driver_call",),
    "torch.nn.modules.module.Module": ("module_base",),
    "torch.nn.SyncBatchNorm.convert_sync_batchnorm": ("group_cuda_layer",),
    "torch.nn.modules.batchnorm.SyncBatchNorm": ("group_cuda_layer",), "sys.exit": ("exit",), "exit": ("exit",),
    "quit": ("exit",), "os._exit": ("exit",), "pytest.skip": ("skip",), "unittest.SkipTest": ("skip",),
    "pytest.xfail": ("skip",), "pytest.mark.skipif": ("skip_if",), "unittest.skipIf": ("skip_if",),
    "unittest.skipUnless": ("skip_unless",), "pytest.mark.skip": ("skip_always",), "unittest.skip": ("skip_always",),
    "torch.testing._internal.common_distributed.skip_if_lt_x_gpu": ("skip_below_gpus",),
    "torch.testing._internal.distributed._tensor.common_dtensor.skip_if_lt_x_gpu": ("skip_below_gpus",),
    "pytest": ("test_framework",), "unittest": ("test_framework",),
    "torch.nn.parallel.DistributedDataParallel": ("ddp",),
    "torch.nn.parallel.distributed.DistributedDataParallel": ("ddp",),
    "torch.no_grad": ("transparent_decorator",), "torch.inference_mode": ("transparent_decorator",),
    "torch.enable_grad": ("transparent_decorator",), "torch.autograd.no_grad": ("transparent_decorator",),
    "torch.autograd.grad_mode.no_grad": ("transparent_decorator",),
    "torch.nn.DataParallel": ("data_parallel",), "torch.nn.parallel.DataParallel": ("data_parallel",),
    "torch.nn.parallel.data_parallel.DataParallel": ("data_parallel",),
    "torch.library.impl": ("kernel_registration",), "torch.library.register_kernel": ("kernel_registration",),
    "torch.library.register_autocast": ("kernel_registration",), "torch.distributed.barrier": ("barrier",),
    "torch.distributed.distributed_c10d.barrier": ("barrier",),
    "torch.distributed.init_process_group": ("init_process_group",),
    "torch.distributed.distributed_c10d.init_process_group": ("init_process_group",),
    "torch.distributed.fsdp.FullyShardedDataParallel": ("fsdp",),
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel": ("fsdp",),
    "subprocess.run": ("process_runner",), "subprocess.call": ("process_runner",),
    "subprocess.check_call": ("process_runner", "checks_exit"),
    "subprocess.check_output": ("process_runner", "checks_exit"),
    "subprocess.Popen": ("process_runner",), "subprocess.getoutput": ("process_runner", "shell_runner"),
    "subprocess.getstatusoutput": ("process_runner", "shell_runner"),
    "fire.Fire": ("cli_runner",), "jsonargparse.CLI": ("cli_runner",), "jsonargparse.cli.CLI": ("cli_runner",),
    "jsonargparse.auto_cli": ("cli_runner",), "typer.run": ("cli_runner",), "defopt.run": ("cli_runner",),
    "torch.manual_seed": ("global_seed",), "torch.random.manual_seed": ("global_seed",),
    "os.environ.get": ("env_read",), "os.getenv": ("env_read",),
    **{f"torch.nn.{name}": ("holds_nothing",) for name in (
        "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss",
        "HuberLoss", "KLDivLoss", "CTCLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss",
        "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "HingeEmbeddingLoss", "PoissonNLLLoss",
        "ReLU", "LeakyReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "GELU", "SiLU", "Dropout", "Identity",
        "AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "Upsample", "Flatten")},
}
# Each role -> why the rules ask for the names that have it.
ROLES = {
    "available": "asks whether CUDA is there: a guard or an assert tests it",
    "count": "counts CUDA devices: a guard or an assert tests it",
    "index": "returns a device index: off CUDA a tensor's `.device.index` is None, never that 0",
    "seed": "seeds what `torch.manual_seed` already seeds on every device",
    "counters": "the caching allocator's counters, by key: an empty dict off CUDA, where reading one raises KeyError",
    "every_device_state": "every device's RNG state, a list of none off CUDA: ported only as a fork and restore in "
                          "one function (a checkpoint would carry one backend's state to another's generator)",
    "global_seed": "seeds every device's generator (`torch.random.manual_seed` is `torch.manual_seed`)",
    "env_read": "reads an environment variable, with a default for one that is not set",
    "cuda_env": "an environment variable machines set for CUDA alone: unset where there is none (torch-fidelity's "
                "`cuda = os.environ.get('CUDA_VISIBLE_DEVICES', '') != ''`)",
    "holds_nothing": "a torch.nn module that, built from constants, holds no tensor: its `.cuda()` moves nothing on "
                     "any backend (tests build each and count its parameters and buffers)",
    "autocast": "an autocast TP321 checks for float16 on the CPU",
    "generic_autocast": "torch.amp's autocast: its first argument names the device type",
    "scaler": "a GradScaler (its autocast moves with it)",
    "generic_scaler": "torch.amp's GradScaler: its first argument names the device type",
    "float64": "float64, which MPS does not support",
    "complex128": "complex128, which MPS does not support",
    "python_float64": "Python's `float` given as a torch dtype: torch reads it as float64",
    "python_complex128": "Python's `complex` given as a torch dtype: torch reads it as complex128",
    "cuda_flags": "cuDNN/CUDA backend flags (a prefix): harmless elsewhere, left as they are",
    "cuda_activity": "the profiler's CUDA activity, under each name torch exports it",
    "cuda_extension": "builds a CUDA extension",
    "cpp_extension": "a setuptools extension built from C++ sources alone: it builds without CUDA",
    "extension_loader": "builds an extension from sources, CUDA ones where it is given them",
    "needs_gpu": "raises without a GPU (functional `data_parallel`: \"device type could not be determined\" on the "
                 "CPU, no scatter to MPS): a port has nothing to give it",
    "gpus_trainer": "a Lightning trainer, whose `gpus=` asks CUDA for GPUs (it raises without them; Lightning 2 has no "
                    "`gpus`)",
    "scripting": "TorchScript compiles what it decorates: that code cannot call torchport.runtime",
    "test_framework": "a module importing it is a test: its asserts are what it checks",
    "accelerator_available": "asks whether another accelerator is there: with CUDA's, the availability idiom",
    "device_first": "a torch function whose first positional argument is a device",
    "spawn": "starts processes, each running `fn(i, *args)`: its process count sizes a process group",
    "cuda_internals": "a prefix of torch's CUDA kernels, compiled or built here: CUDA-only under a guard",
    "rank": "answers a process's rank or a count of processes: an int, not negative",
    "world_size": "answers how many processes the group has, which exists once it answers: an int, at least 1",
    "module_base": "torch's base of modules: it calls `forward` alone of a subclass's own methods",
    "name_lookup": "finds a definition by a name computed at run time (`importlib.import_module`, hydra's "
                   "`instantiate`): a definition no code names may still run",
    "name_lookup_builtin": "a builtin that finds names at run time (`eval`, `globals()`), called by its bare name",
    "code_builtin": "a builtin that runs code it is given as text (`eval`, `exec`): any name may be built there",
    "tensor_attribute": "an attribute of a tensor (`x.is_sparse`, `x.dtype`): a branch on one is a branch on data",
    "file_loader": "loads a module from a file's path (`spec_from_file_location`, `runpy.run_path`): any file may run",
    "group_cuda_layer": "in a process group, takes only CUDA (or XPU) input in training: SyncBatchNorm raises on "
                        "CPU and MPS",
    "exit": "ends a program on purpose",
    "skip": "ends a test on purpose (a skip)",
    "skip_if": "a skip mark whose condition says when to skip",
    "skip_unless": "a skip mark whose condition says when to run",
    "skip_always": "a skip mark without a condition",
    "skip_below_gpus": "torch's own test decorator that skips where there are fewer CUDA devices than it is given "
                       "(`skip_if_lt_x_gpu(4)`): off CUDA there are none",
    # roles of words (`WORDS`)
    "cuda_submodule": "a submodule of torch.cuda whose names torch.cuda re-exports (`torch.cuda.memory.empty_cache`)",
    "on_cuda_flag": "an attribute of data (tensors, parameters, packed sequences) that says whether it is on CUDA: "
                    "False wherever there is no CUDA",
    "placement_keyword": "a keyword argument that places data on the device it names (``device_type=`` only labels "
                         "an autocast)",
    "library_placement_keyword": "a keyword argument with which a library places a model itself (Hugging Face's "
                                 "`from_pretrained(device_map=...)`): a guard that sets one chooses where the "
                                 "model goes",
    "accelerator_keyword": "a keyword argument that names the accelerator a framework must find (Lightning's "
                           "Trainer and Fabric)",
    "cuda_accelerator": "a value of such a keyword that asks for CUDA: without it the framework raises",
    "any_gpu_accelerator": "such a value that Lightning (1.7 on) answers with MPS as well as CUDA: only the CPU and "
                           "XPUs lack it",
    "text_call": "a call whose arguments are text or container keys, not devices: a CUDA device string given to it "
                 "places nothing (given positionally to any other call the model cannot follow, it is where that "
                 "call puts data)",
    "cuda_backend": "a process-group backend that needs CUDA",
    "catches_cuda_error": "an exception whose handler catches what a call off CUDA raises (AssertionError, "
                          "RuntimeError)",
    "index_name": "a name that holds an integer device index in real code (`model.to(self.gpu_id)`)",
    "index_list": "a name that holds a list of device indices",
    "other_accelerator": "a device type the port's targets include besides the CPU",
    "other_device": "a device type of another backend: a branch that names it is that backend's",
    "string_keyword": "a keyword argument whose CUDA string is a device kept as text",
    "message_call": "a call whose arguments are messages (logging, printing, skipping): a label, never a device",
    "process_count": "a keyword argument of torch.distributed/multiprocessing (or their wrappers) that sizes processes",
    "collective": "a collective: its tensor is for NCCL, which gloo on MPS or XPU could not take",
    "exit_method": "a method that ends a path (a test's skip or fail, an exit)",
    "list_grower": "a list method that changes its length: a list a loop grows has no known length after it",
    "missing_api": "what an older torch raises for an API it lacks",
    "cpu_factory": "makes a tensor on the CPU unless given a device (a float64 tensor made there is not on MPS)",
    "numpy_maker": "a numpy call whose arrays are float64 unless given a dtype (`np.random.randn`, `np.linspace`)",
    "module_method": "a method of a torch module (`model.eval()`, `model.parameters()`): what it is called on is one",
    "own_names_base": "a base class torch or Python calls no method of a subclass by a name of the subclass's own "
                      "(`nn.Module` calls `forward`, a `Dataset` its dunders): a method nothing names never runs",
    "attribute_lookup": "finds an object's attribute by a name given at run time (`operator.attrgetter`)",
    "dtype_keeping": "a method of an array or tensor whose result keeps its dtype (`x.abs()`, `x.reshape(...)`)",
    "numpy_math": "a numpy function whose result of Python numbers is a float64 scalar (`np.log(0.5)`): a tensor "
                  "made of it without a dtype is float64",
    "parses_command_line": "an argparse call that reads the command line: a module that makes it at its top level "
                           "is a script, whatever imports it",
    "expects_error": "a test's context manager that expects its block to raise (pytest's and unittest's)",
    "cuda_source": "the suffix of a CUDA source file: an extension built from one needs CUDA",
    "cpp_source": "the suffix of a C++ source file: an extension built from these alone needs a compiler, not a GPU",
    "float64_solver": "an ODE solver call of torchdiffeq: its adaptive methods (dopri5, the default) make float64 "
                      "tensors on the device of the state they are given (torchdiffeq#223)",
    "fixed_grid_method": "a torchdiffeq method on a fixed grid: it keeps the state's dtype",
    "cpu_or_cuda_inputs": "a library whose `summary(model, ...)` makes its model's inputs on CUDA or the CPU alone "
                          "(torchsummary: `torch.cuda.FloatTensor` where CUDA is there, else the CPU's)",
    "cpu_cuda_library": "a compiled library (installed on its own) whose kernels are the CPU's and CUDA's alone: a "
                        "tensor on MPS or an XPU meets none (DCNv2's `dcn_v2`; PyG's torch_scatter and torch_sparse)",
    "plain_torch_function": "a function of such a library written in torch alone, which runs on any device "
                            "(torch_scatter's `scatter_add`, `scatter_mean`: `scatter_add_` and a division; its "
                            "`scatter` with the default `reduce='sum'`)",
    "plain_reduction": "a `reduce` of torch_scatter's `scatter` that it computes in torch alone",
    "float64_env": "a reinforcement-learning environment library whose `step()` gives rewards as float64 numpy arrays "
                   "(gymnasium's vector environments)",
    "cast": "a tensor method that changes a dtype on the way to the device",
    "ddp": "DistributedDataParallel (not DataParallel: without CUDA it ignores `device_ids` (CPU, MPS) or uses them "
           "as given (XPU), so wrapping them would change nothing anywhere)",
    "transparent_decorator": "a decorator that only sets autograd's mode around each call (`@torch.no_grad()`): it "
                             "registers the function nowhere, so what calls it is all its project's code",
    "data_parallel": "DataParallel: on an XPU it takes its `device_ids` as given (CPU, MPS: it ignores them), so a "
                     "count of CUDA's devices there makes none (`range(torch.cuda.device_count())`: an IndexError)",
    "init_process_group": "makes the process group: its backend is ported",
    "kernel_registration": "registers a kernel for a dispatch key or device type (`\"AutocastCUDA\"`): one registered "
                           "for CUDA's runs only on CUDA, and its `autocast(\"cuda\")` names that key",
    "barrier": "a process group's barrier: its `device_ids` must be ints (a CPU device's `.index` is None)",
    "fsdp": "FullyShardedDataParallel: its `device_id` is ported",
    "ddp_device_keyword": "a keyword argument of DistributedDataParallel that names devices",
    "program_exit": "a call that ends a program or a test (`sys.exit`, `os._exit`, `pytest.skip`, `self.fail`)",
    "gpu_only_call": "a call that needs a CUDA GPU whatever torch picks: faiss's GPU index resources",
    "gate_skip": "a call or mark with which a gate skips or stops (a test helper's `pytest.skip`, `skipif`)",
    "plain_decorator": "a decorator that returns the function unchanged for callers (others may register it to be "
                       "called elsewhere)",
    "runtime_device": "a runtime call that returns the device (or, ending in `_str`, its string): "
                      "`torch.device(<it>)` is the call that returns the device itself",
    "runtime_group_call": "a runtime call that makes a process group or wraps a model for one",
    "process_runner": "runs a program as a process: one that is not there raises (FileNotFoundError), unless a shell "
                      "runs it",
    "checks_exit": "a process runner that raises when the program fails (CalledProcessError)",
    "shell_runner": "a process runner that always goes through a shell: a missing program is an exit status",
    "nvidia_tool": "a program only a machine with NVIDIA's driver has (`nvidia-smi`)",
    "host_copy": "a method or attribute of a chain that copies a tensor to the host and reads it there "
                 "(`t.detach().cpu().numpy()`), and calls nothing else",
    "nvidia_gpu_list": "lists NVIDIA's GPUs through their driver: an empty list where it is not installed (GPUtil "
                       "catches the missing `nvidia-smi`), so indexing the list raises there",
    "driver_call": "raises where NVIDIA's driver is not installed (GPUtil's `getFirstAvailable`: no GPU is free)",
    "cli_runner": "calls the function it is given with the command line's arguments (lit-llama's `CLI(main)`): run "
                  "with none, the function's defaults",
}

# Bare words (argument, keyword, attribute and call names, device types) -> their roles (`ROLES`).
WORDS: dict[str, tuple[str, ...]] = {
    "rank": ("index_name",), "local_rank": ("index_name",),
    "gpu": ("index_name", "cuda_accelerator", "any_gpu_accelerator"),
    "gpu_id": ("index_name",), "gpu_idx": ("index_name",), "gpu_index": ("index_name",), "local_gpu": ("index_name",),
    "device_id": ("index_name",), "device_idx": ("index_name",), "device_index": ("index_name",),
    "cuda_device": ("index_name",), "gpu_rank": ("index_name",), "device_ids": ("index_list", "ddp_device_keyword"),
    "gpu_ids": ("index_list",), "gpus": ("index_list",), "mps": ("other_accelerator", "other_device"),
    "xpu": ("other_accelerator", "other_device"), "npu": ("other_device",), "hpu": ("other_device",),
    "mlu": ("other_device",), "musa": ("other_device",), "xla": ("other_device",),
    "device": ("string_keyword", "placement_keyword", "runtime_device", "tensor_attribute"),
    "default": ("string_keyword",),
    "map_location": ("string_keyword", "placement_keyword"), "device_name": ("string_keyword",),
    "device_str": ("string_keyword", "runtime_device"), "print": ("message_call", "text_call"),
    "warn": ("message_call", "text_call"), "debug": ("message_call", "text_call"),
    "info": ("message_call", "text_call"), "warning": ("message_call", "text_call"),
    "error": ("message_call", "text_call"), "exception": ("message_call",), "critical": ("message_call",),
    "log": ("message_call", "numpy_math"), "write": ("message_call", "text_call"), "echo": ("message_call",),
    "secho": ("message_call",), "fail": ("message_call", "exit_method", "program_exit", "gate_skip"),
    "skip": ("message_call", "exit_method", "program_exit", "gate_skip"), "xfail": ("message_call",),
    "world_size": ("process_count",), "nprocs": ("process_count",), "nproc_per_node": ("process_count",),
    "num_processes": ("process_count",), "all_reduce": ("collective",), "all_gather": ("collective",),
    "all_gather_into_tensor": ("collective",), "reduce_scatter": ("collective",), "broadcast": ("collective",),
    "reduce": ("collective",), "all_to_all": ("collective",), "all_to_all_single": ("collective",),
    "gather": ("collective",), "scatter": ("collective",), "send": ("collective",), "recv": ("collective",),
    "isend": ("collective",), "irecv": ("collective",), "all_gather_list": ("collective",),
    "all_reduce_dict": ("collective",), "exit": ("exit_method", "program_exit", "gate_skip"),
    "skipTest": ("exit_method", "program_exit", "gate_skip"), "AttributeError": ("missing_api",),
    "ImportError": ("missing_api",), "ModuleNotFoundError": ("missing_api",), "memory": ("cuda_submodule",),
    "random": ("cuda_submodule",), "streams": ("cuda_submodule",), "is_cuda": ("on_cuda_flag", "tensor_attribute"),
    "is_sparse": ("tensor_attribute",), "dtype": ("tensor_attribute",), "shape": ("tensor_attribute",),
    "ndim": ("tensor_attribute",), "data": ("tensor_attribute", "host_copy"),
    "grad": ("tensor_attribute",), "requires_grad": ("tensor_attribute",), "is_leaf": ("tensor_attribute",),
    "layout": ("tensor_attribute",), "T": ("tensor_attribute",), "is_quantized": ("tensor_attribute",),
    "device_map": ("library_placement_keyword",), "accelerator": ("accelerator_keyword",),
    "cuda": ("cuda_accelerator",), "nccl": ("cuda_backend",), "format": ("text_call",), "join": ("text_call",),
    "startswith": ("text_call",), "endswith": ("text_call",), "replace": ("text_call",), "split": ("text_call",),
    "append": ("text_call", "list_grower"), "get": ("text_call",), "setdefault": ("text_call",),
    "pop": ("text_call", "list_grower"),
    "index": ("text_call",), "count": ("text_call",), "add_argument": ("text_call",), "set_defaults": ("text_call",),
    "add": ("text_call", "plain_reduction"), "sum": ("plain_reduction", "dtype_keeping"), "mean": ("plain_reduction",),
    "extend": ("text_call", "list_grower"), "insert": ("text_call", "list_grower"),
    "remove": ("text_call", "list_grower"),
    "str": ("text_call",), "isinstance": ("text_call",), "getattr": ("text_call",), "hasattr": ("text_call",),
    "setattr": ("text_call",), "Exception": ("catches_cuda_error",), "BaseException": ("catches_cuda_error",),
    "RuntimeError": ("catches_cuda_error",), "AssertionError": ("catches_cuda_error",), "float64": ("float64",),
    "double": ("float64",), "DoubleTensor": ("float64",), "complex128": ("complex128",),
    "cdouble": ("complex128",), "tensor": ("cpu_factory",),
    "complex": ("python_complex128",),
    "as_tensor": ("cpu_factory",), "zeros": ("cpu_factory", "numpy_maker"),
    "ones": ("cpu_factory", "numpy_maker"), "full": ("cpu_factory",),
    "empty": ("cpu_factory",), "arange": ("cpu_factory",), "linspace": ("cpu_factory", "numpy_maker"),
    "logspace": ("cpu_factory", "numpy_maker"), "rand": ("cpu_factory", "numpy_maker"),
    "randn": ("cpu_factory", "numpy_maker"), "randint": ("cpu_factory",), "eye": ("cpu_factory",),
    "from_numpy": ("cpu_factory",), "Tensor": ("cpu_factory",), "zeros_like": ("cpu_factory",),
    "ones_like": ("cpu_factory",),
    "full_like": ("cpu_factory",), "empty_like": ("cpu_factory",), "rand_like": ("cpu_factory",),
    "randn_like": ("cpu_factory",), "normal": ("numpy_maker",), "uniform": ("numpy_maker",),
    # numpy's other samplers of floats (Mixup-Inference's `np.random.beta(alpha, alpha, [n, 1])`)
    "beta": ("numpy_maker",), "gamma": ("numpy_maker",), "exponential": ("numpy_maker",),
    "dirichlet": ("numpy_maker",), "lognormal": ("numpy_maker",), "laplace": ("numpy_maker",),
    "random_sample": ("numpy_maker",), "gumbel": ("numpy_maker",), "logistic": ("numpy_maker",),
    "weibull": ("numpy_maker",), "rayleigh": ("numpy_maker",), "standard_exponential": ("numpy_maker",),
    "standard_gamma": ("numpy_maker",), "standard_cauchy": ("numpy_maker",), "chisquare": ("numpy_maker",),
    "multivariate_normal": ("numpy_maker",), "triangular": ("numpy_maker",),
    "standard_normal": ("numpy_maker",), "gym": ("float64_env",), "gymnasium": ("float64_env",),
    "train": ("module_method",), "parameters": ("module_method",), "named_parameters": ("module_method",),
    "state_dict": ("module_method",), "load_state_dict": ("module_method",), "modules": ("module_method",),
    "children": ("module_method",), "forward": ("module_method",), "zero_grad": ("module_method",),
    "abs": ("dtype_keeping",), "neg": ("dtype_keeping",), "clone": ("dtype_keeping", "host_copy"),
    "detach": ("dtype_keeping", "host_copy"), "contiguous": ("dtype_keeping", "host_copy"),
    "squeeze": ("dtype_keeping",),
    "unsqueeze": ("dtype_keeping",), "reshape": ("dtype_keeping",), "view": ("dtype_keeping",),
    "flatten": ("dtype_keeping",), "transpose": ("dtype_keeping",), "t": ("dtype_keeping",),
    "copy": ("dtype_keeping",), "clip": ("dtype_keeping",),
    "log2": ("numpy_math",), "log10": ("numpy_math",), "log1p": ("numpy_math",),
    "exp": ("numpy_math",), "expm1": ("numpy_math",), "sqrt": ("numpy_math",), "sin": ("numpy_math",),
    "cos": ("numpy_math",), "tan": ("numpy_math",), "arctan": ("numpy_math",), "tanh": ("numpy_math",),
    "torchsummary": ("cpu_or_cuda_inputs",),
    "torch_scatter.scatter_add": ("plain_torch_function",), "torch_scatter.scatter_sum": ("plain_torch_function",),
    "torch_scatter.scatter_mean": ("plain_torch_function",), "torch_scatter.scatter": ("plain_torch_function",),
    "dcn_v2": ("cpu_cuda_library",), "torch_scatter": ("cpu_cuda_library",), "torch_sparse": ("cpu_cuda_library",),
    "torch_spline_conv": ("cpu_cuda_library",), "torch_cluster": ("cpu_cuda_library",),
    "warpctc_pytorch": ("cpu_cuda_library",),  # Baidu warp-ctc: `cpu_ctc` for any tensor not on CUDA
    "dgl": ("cpu_cuda_library",),  # DGL's graphs live on the CPU or CUDA alone (`to_dgl_context`)
    "pytorch3d.renderer": ("cpu_cuda_library",),  # its rasterizers' kernels (`pytorch3d._C`); transforms are torch
    "pytorch3d.ops": ("cpu_cuda_library",), "pytorch3d.loss": ("cpu_cuda_library",),  # knn_points, ball_query, the
    # chamfer and point-mesh distances: `pytorch3d._C` too
    "odeint": ("float64_solver",), "odeint_adjoint": ("float64_solver",), "odeint_event": ("float64_solver",),
    "euler": ("fixed_grid_method",), "midpoint": ("fixed_grid_method",), "rk4": ("fixed_grid_method",),
    "explicit_adams": ("fixed_grid_method",), "implicit_adams": ("fixed_grid_method",),
    "parse_args": ("parses_command_line",), "parse_known_args": ("parses_command_line",),
    "raises": ("expects_error",), "assertRaises": ("expects_error",), "assertRaisesRegex": ("expects_error",),
    ".cu": ("cuda_source",), ".cuh": ("cuda_source",), ".cpp": ("cpp_source",), ".cc": ("cpp_source",),
    ".cxx": ("cpp_source",), ".c": ("cpp_source",),
    "float": ("cast", "python_float64"), "half": ("cast",), "bfloat16": ("cast",),
    "type": ("cast",), "int": ("cast",), "long": ("cast",), "bool": ("cast",), "to": ("cast",),
    "output_device": ("ddp_device_keyword",), "_exit": ("program_exit",), "StandardGpuResources": ("gpu_only_call",),
    "index_cpu_to_gpu": ("gpu_only_call",), "index_cpu_to_all_gpus": ("gpu_only_call",), "skipif": ("gate_skip",),
    "skipIf": ("gate_skip",), "skipUnless": ("gate_skip",), "SkipTest": ("gate_skip",), "no_grad": ("plain_decorator",),
    "inference_mode": ("plain_decorator",), "enable_grad": ("plain_decorator",), "wraps": ("plain_decorator",),
    "lru_cache": ("plain_decorator",), "cache": ("plain_decorator",), "available_device": ("runtime_device",),
    "available_device_str": ("runtime_device",), "nth_device": ("runtime_device",),
    "nth_device_str": ("runtime_device",), "distributed_backend": ("runtime_group_call",),
    "ddp_device_ids": ("runtime_group_call",), "process_group_device_id": ("runtime_group_call",),
    "fsdp_device_id": ("runtime_group_call",), "nvidia-smi": ("nvidia_tool",), "cpu": ("host_copy",),
    "numpy": ("host_copy",), "tolist": ("host_copy",), "item": ("host_copy",),
    "eval": ("name_lookup_builtin", "module_method", "code_builtin"), "exec": ("name_lookup_builtin", "code_builtin"),
    "globals": ("name_lookup_builtin",),
    "object": ("own_names_base",), "Module": ("own_names_base",), "Dataset": ("own_names_base",),
    "IterableDataset": ("own_names_base",), "attrgetter": ("attribute_lookup",), "methodcaller": ("attribute_lookup",),
    "vars": ("name_lookup_builtin",), "locals": ("name_lookup_builtin",), "CUDA_VISIBLE_DEVICES": ("cuda_env",),
    "__import__": ("name_lookup_builtin",), "import_module": ("name_lookup",),
    "instantiate": ("name_lookup",), "locate": ("name_lookup",), "get_class": ("name_lookup",),
    "import_string": ("name_lookup",), "get_obj_from_str": ("name_lookup",),
    "spec_from_file_location": ("name_lookup", "file_loader"), "run_path": ("name_lookup", "file_loader"),
    "load_source": ("name_lookup", "file_loader"),
}


@functools.cache
def words(*roles: str) -> tuple[str, ...]:
    """The words (`WORDS`) with one of ``roles``, in table order."""
    assert all(role in ROLES for role in roles), roles
    wanted = set(roles)
    return tuple(word for word, has in WORDS.items() if wanted.intersection(has))


# Text the rules search a module's source (or a name) for: name -> (regular expression, why).
TEXT = {
    "torch_import": (r"^[ \t]*(?:from[ \t]+(torch(?:\.\w+)*)[ \t]+import[ \t]+\(?[ \t]*([\w \t,]+)|import[ \t]+"
                     r"(torch\.[\w.]+))",
                     "an import line of a torch module or name: what it names may be missing from the installed torch"),
    "index_bookkeeping": (r"\.device\.index\b|\.get_device\(\)",
                          "a module that reads tensors' device indices keys data by them: off CUDA they are None"),
    "other_backend_module": (r"^torch\.(?:backends\.mps|mps|xpu|accelerator|npu|hpu|mlu|musa)\b|"
                             r"^(?:torch_npu|torch_xla|habana_frameworks|intel_extension_for_pytorch|torch_mlu)\b",
                             "another backend's module: a branch that uses it is that backend's"),
    "other_backend_text": (r"\b(?:mps|xpu|npu|hpu|mlu|musa|xla)\b|accelerator|torch_xla",
                           "text naming another backend: a module without it picks no other backend"),
    "portable_import": (r"^(?:torch_npu|habana_frameworks|intel_extension_for_pytorch|torch_mlu)(?:\.|$)|"
                        r"(?:^|\.)accelerator(?:\.|$)",
                        "an import that adds a backend torch then uses on its own: no CUDA-only code"),
    "cuda_attribute_set": (r"\bcuda\.\w+\s*=[^=]",
                           "an assignment to a `torch.cuda` attribute (`torch.cuda.synchronize = xpu_sync`): the "
                           "module implements torch.cuda for another backend"),
    "device_word": (r"(?i)(?:^|_)(?:device|dev|map_location)(?:$|_)|device$",
                    "assignment targets, parameters and keywords whose CUDA string is a device kept as text"),
    "rank_text": (r"(?i)\brank\b", "an int() of text naming a rank is a device index"),
    "fixed_cuda_index": (r"cuda:\d|\.cuda\(\s*\d|cuda['\"],\s*\d",
                         "text of a fixed CUDA index (`\"cuda:1\"`, `.cuda(1)`): a module may use two GPUs"),
    "cuda_spec": (r"cuda(?::\d+)?", "a CUDA device string (with its index)"),
    "flag_from_query": (r"\w\.(\w+)\s*=[^=].*\bcuda\.(?:is_available|device_count)\(",
                        "an attribute set from a CUDA query (`args.use_gpu = cuda.is_available() and ...`): a flag "
                        "other modules may read"),
    "availability_query": (r"\bcuda\.(?:is_available|device_count)\(", "a CUDA availability query"),
    "kept_placement": (r"\.cuda\(|(?:\btorch\.|(?<![\w.]))device\(\s*f?[\"']cuda|\bdevice\s*=\s*f?[\"']cuda",
                       "data placed on CUDA as written: left in a port, a choice kept CUDA-or-CPU"),
    "fakes_cuda": (r"""(?:patch(?:\.object)?|monkeypatch\.setattr)\(\s*(?:torch\.cuda\s*,|["']torch\.cuda\.)""",
                   "a test that fakes `torch.cuda` (patches it, `monkeypatch.setattr(torch.cuda, ...)` too): what it "
                   "calls sees CUDA where there is none, and the CUDA devices it names are descriptors that need no "
                   "GPU"),
    "native_device_line": (r"(?m)^(\w+) = \w+\.accelerator\.current_accelerator\(\)",
                           "the device line native mode writes: its name is the ported device"),
    "mps_lacks_sparse": (r"\bsparse_(?:coo|csr|csc|bsr|bsc)_tensor\b|\.to_sparse(?:_\w+)?\(|\bsparse\.\w*Tensor\(",
                         "sparse tensors (and the legacy constructors, `torch.sparse.LongTensor(i, v, size)`): MPS "
                         "lacks them"),
    "mps_lacks_forced_align": (r"\bforced_align\b", "torchaudio's forced_align: MPS lacks it"),
    "mps_lacks_ctc": (r"(?<!def )(?<!class )\b(?:CTCLoss|ctc_loss)\(",
                      "CTC loss: MPS has no `aten::_ctc_loss` kernel (pytorch#153976, open; deep_avsr's training "
                      "scripts)"),
    "mps_lacks_quantization": (r"(?<!def )\b(?:prepare_qat(?:_fx)?|quantize_per_tensor|quantize_per_channel|"
                               r"fake_quantize_per_(?:tensor|channel)_affine)\(|\bFakeQuantize\b",
                               "quantization: the fake-quantize and quantize kernels QAT and PTQ run are the CPU's "
                               "and CUDA's alone (`CPU, CUDA` in native_functions.yaml: "
                               "`_fused_moving_avg_obs_fq_helper`, `quantize_per_tensor`); torchvision's "
                               "train_quantization.py"),
    "cuda_header": (r'^\s*#\s*include\s*[<"](?:cuda\.h|cuda_runtime[\w.]*|c10/cuda/|ATen/cuda/|THC/|cublas|cudnn|'
                    r'curand|cusparse|thrust/)',
                    "a C++ include of a CUDA toolkit header (`<c10/cuda/CUDAStream.h>`, `<cuda_runtime.h>`): the file "
                    "compiles only where the toolkit is"),
    "preprocessor_conditional": (r"^\s*#\s*(if|ifdef|ifndef|endif)\b",
                                 "a C preprocessor conditional: what it holds may not be compiled "
                                 "(`#ifdef WITH_CUDA`)"),
    "mps_lacks_lu_solve": (r"(?<!def )\b(?:slogdet|logdet|lu_solve)\(",
                           "a log-determinant's backward and `lu_solve` solve with `aten::linalg_lu_solve`, which had "
                           "no MPS kernel before torch 2.10 (pytorch#167569); GenerativeZoo's Glow trains so"),
    "attribute_lookup_text": (r"getattr|attrgetter|methodcaller|\beval\(|\bexec\(|__dict__",
                              "what a module that finds an attribute by a name computed at run time holds "
                              "(`getattr(obj, name)`, `operator.attrgetter`, `eval`)"),
    "mps_lacks_area": (r"""\bmode\s*=\s*["']area["']""",
                       "area interpolation: it runs MPS's adaptive_avg_pool2d, which takes only sizes that divide "
                       "(pytorch#96056, open in torch 2.13); facenet-pytorch's MTCNN resizes so"),
    "mps_lacks_data_parallel": (r"\bDataParallel\(.*\)\s*\.(?:cuda|to)\(",
                                "DataParallel scatters its inputs to the GPUs only on CUDA: elsewhere it calls the "
                                "module with the inputs where they are (the CPU), so a model moved to MPS meets CPU "
                                "inputs"),
    "mps_lacks_type_string": (r"\.type\(\s*[\w.\[\]]+\.type\(\s*\)\s*\)",
                              "a tensor's type string given back to `.type()` (YOLOX's `x.type(y.type())`): on MPS it "
                              "is 'torch.mps.FloatTensor', which `.type()` rejects (pytorch/pytorch#118517)"),
    "lacks_text": (r"\b(?:float64|double|complex128|cdouble|sparse_\w+_tensor|to_sparse\w*|sparse\.\w*Tensor|"
                   r"slogdet|logdet|lu_solve|"
                   r"forced_align|DataParallel|is_cuda|cpp_extension|from_numpy|CTCLoss|ctc_loss|prepare_qat|"
                   r"prepare_qat_fx|quantize_per_tensor|quantize_per_channel|FakeQuantize|"
                   r"fake_quantize_per_tensor_affine|fake_quantize_per_channel_affine)\b"
                   r"|\.type\(\s*[\w.\[\]]+\.type\("
                   r"|\b(?:tensor|as_tensor)\(\s*(?:np|numpy)\."
                   r"""|\bmode\s*=\s*["']area["']|["'](?:cpu|cuda)["']\s+not\s+in\b|\bnot\s+in\s*[(\[{]\s*["'](?:cpu|cuda)["']"""
                   r"""|\.device\.type\s*[!=]=\s*["']cpu["']""",
                   "text every MPS blocker's module holds (a device check's `'cuda' not in device`, a CPU-only "
                   "fallback's `x.device.type == 'cpu'`, a tensor made of a numpy array too): a run whose files "
                   "hold none of it has no program that "
                   "MPS cannot run"),
    "main_guard": (r"""(?m)^if\s+__name__\s*==\s*["']__main__["']\s*:""",
                   "a `__main__` block, read as text in a module CPython cannot parse: a script that runs nowhere"),
    "cpu_dispatch": (r"""\.device\.type\s*[!=]=\s*["']cpu["']""",
                     "a branch on whether data is on the CPU: a fallback may serve the CPU alone"),
    "collective_call": (r"\b(?:all_reduce|all_gather|all_gather_object|reduce_scatter|broadcast|all_to_all)\(",
                        "a collective call: the arrays it takes are not the ones a module moves"),
    "mentions_mps": (r"(?i)\bmps\b", "a module that mentions MPS handles it itself"),
    "saved_location": (r"(cpu|cuda|mps|xpu)(?::\d+)?", "a storage's device as `torch.save` records it in the pickle"),
    "mps_spec": (r"(?i)mps(?::\d+)?", "an MPS device string (with its index)"),
    "wide_dtype": (r"\b(?:float64|double|DoubleTensor|complex128|cdouble)\b"
                   r"|\bdtype\s*=\s*(?:float|complex)\b(?!\s*[.(\w])",
                   "float64 or complex128, which MPS does not support (torch reads Python's `float` as float64)"),
    "numpy_float64": (r"\b(?:np|numpy)\.(?:float64|double)\b", "numpy's float64"),
    "from_numpy_to_device": (r"(?:\bfrom_numpy\(|\b(?:torch|th)\.(?:as_)?tensor\().*(?:\.to\(|\.cuda\(|device=)",
                             "numpy float64 arrays reach a device where the module moves an array made into a tensor "
                             "there, in one line (``th.from_numpy(arr).to(device=t.device)``)"),
    "numpy_makers": (r"\b(?:randn|rand|normal|uniform|standard_normal|linspace|logspace|zeros|ones|arange|beta|gamma|"
                     r"exponential|dirichlet|lognormal|laplace|random_sample|gumbel|logistic|weibull|rayleigh|"
                     r"standard_exponential|standard_gamma|standard_cauchy|chisquare|multivariate_normal|triangular)\("
                     r"|\.astype\(float\)",
                     "numpy calls whose arrays are float64 unless given a dtype (`np.random.randn`, "
                     "`RandomState(s).randn`, `np.linspace`, `.astype(float)`), or once a float scales them "
                     "(`np.arange`)"),
    "backend_setting": (r"(?i)^(?:dist_|distributed_|ddp_|torch_|process_group_|pg_)?backend$",
                        "a setting that holds a torch.distributed backend (not, e.g., DeepSpeed's "
                        "`comm_backend_name`)"),
    "group_source": (r"\b(?:init_process_group|DistributedDataParallel|FullyShardedDataParallel)\b",
                     "a module that makes a process group or wraps a model for one"),
    "indexed_cuda_literal": (r"[rRuU]?(['\"])cuda:\d+\1", "a CUDA device with an index, as a string literal"),
    "cuda_only_text": (r"\b(?:{libraries}|from cuda import|import cuda|"
                       r"import\s+\w+_cuda|from\s+\w+_cuda\s+import|import_module\(\s*[\"']\w+_cuda|"
                       r"numba|cpp_extension|load_inline|CUDAGraph|cuda\.graphs?|make_graphed_callables|"
                       r"graph_pool_handle|is_current_stream_capturing|MemPool|use_mem_pool|CUDAPluggableAllocator|"
                       r"change_current_allocator|caching_allocator_\w+|"
                       r"data_parallel|load_in_[48]bit|flash_attention_[23]|cuda\.[A-Z]\w*Tensor)\b",
                       "text every CUDA-only requirement's module holds (`requirements.cuda_only_import`, its blocking "
                       "APIs, a CUDA tensor type an assert may test; a test checks it against the tables): a run "
                       "whose files hold none of it has no program that only CUDA can run"),
    "gate_asks": (r"\b(?:is_available|device_count)\b", "text of a module that may define a CUDA gate: it asks CUDA"),
    "gate_stops": (r"\b(?:sys\.exit|exit\(|raise\b)", "text of a module that may define a CUDA gate: it stops"),
    "gate_asks_loose": (r"is_available|device_count", "`gate_asks`, faster"),
    "gate_stops_loose": (r"sys\.exit|exit\(|raise", "`gate_stops`, faster"),
    "places_data": (r"\.to\(|\.cuda\(|\bdevice\b|\bdev\(\)", "text of a module that places data on a device itself"),
    "test_file": (r"^(?:test_.*|.*_test)\.py$", "pytest's names of test files"),
    "cuda_probe": (r"""\.cuda\(|["']cuda(?::\d+)?["']|\bcuda\.\w+\(""",
                   "code that asks CUDA for something: a try of it whose handler answers is a probe"),
    "run_by_name": (r"^(?:__init__|setup|conftest|__main__|hubconf)\.py$",
                    "modules Python, pytest, packaging or torch.hub run by their file's name"),
    "naming_file": (r"\.(?:py|ipynb|ya?ml|json|sh|bash|md|rst|txt|cfg|toml|ini)$",
                    "files whose words may name a module of the project: code, configs, shell scripts, docs"),
    "layout_drawing": ("[\u2502\u251c\u2514]\u2500*", "a line of a README's drawing of the project's layout "
                       "(``│   ├── model_parallel.py``): it lists files, it runs none"),
    "option_name": (r"(?<![\w.])--?[A-Za-z_][\w-]*", "a command-line option's name (``--model``): it names a setting, "
                    "not a module"),
    "skipped_folder": (r"^(?:\..*|node_modules|__pycache__|site-packages)$",
                       "folders that hold no file of the project's own: hidden ones, caches, installed packages"),
    "gate_text": (r"\b(?:is_available|device_count)\b|==\s*[\"']cuda[\"']|[\"']cuda[\"']\s*==",
                  "text a gate's module holds: a module without it defines none"),
    "int_bound": (r"\b([A-Za-z_]\w*)\s*=\s*\d", "a name bound to an integer literal: maybe a device index"),
    "cuda_device": (r"^cuda(?::(\d+))?$", "a CUDA device string, and its index"),
    "cuda_text": (r"(?i)cuda|nccl", "text of a module that may hold CUDA code: one without it is not migrated"),
    "path_change": (r"\bsys\.path\s*(?:\.\s*(?:insert|append|extend)\s*\(|\+=|=[^=]|\[[^\]]*\]\s*=[^=])"
                    r"|\bsite\.addsitedir\s*\(",
                    "`sys.path.insert(...)`, `sys.path += ...`, `site.addsitedir(...)`: what makes a module importable "
                    "that was not"),
    "dynamic_import": (r"\bimport_module\(|\b__import__\(", "a module imported by name at run time"),
    "dynamic_binding": (r"\b(?:globals|vars|locals)\(\)|\bsys\.modules\b|\bsetattr\(|\bexec\(",
                        "a module that may bind names at run time (`globals()[name] = ...`, `setattr(sys.modules[...], "
                        "...)`, `exec`): its names are not all in its source"),
    "raw_kernel": (r"\b(?:data_ptr|mutable_data_ptr|const_data_ptr|accessor|packed_accessor\w*|AT_DISPATCH\w*|"
                   r"AT_PRIVATE\w*)\b|\.data<",
                   "C++ that reads a tensor's memory itself (a kernel of its own): without it, an extension calls "
                   "ATen's operators alone, which dispatch on every device"),
    "builds_cuda_extension": (r"CUDAExtension|create_extension|['\"][\w./-]+\.cu['\"]",
                              "text of a build script that may make an extension for CUDA alone (`CUDAExtension`, "
                              "`.cu` sources, torch.utils.ffi's `create_extension`)"),
    "compares_cuda": (r"""[=!]=\s*["']cuda["']""", "text of a module that compares a value with \"cuda\": it may "
                      "place data by a stored device name"),
    "compares_cpu": (r"""==\s*["']cpu["']""", "text of a module that compares a value with \"cpu\": it may dispatch on "
                     "device names"),
    "cuda_string": (r"""["']cuda["']""", "text of a module that names the device \"cuda\": it may check a device "
                    "it is given against it"),
}


@functools.cache
def text(name: str) -> re.Pattern[str]:
    """The compiled pattern `TEXT` names ``name`` (``{libraries}`` in it: the names of `CUDA_LIBRARIES`, bar the
    bare ``cuda``, which the pattern spells as imports)."""
    libraries = "|".join(re.escape(n) for n in sorted(CUDA_LIBRARIES, key=len, reverse=True) if n != "cuda")
    return re.compile(TEXT[name][0].replace("{libraries}", libraries))


class Library(NamedTuple):
    """A library that needs an NVIDIA GPU.

    kernels: True for a package of GPU kernels (triton: a GPU backend Triton supports, which here means CUDA).
    uses: the prefix of its qualified names whose uses are CUDA-only (``cupy.cuda.``); "" where only its import is
        reported.
    loads: importing it needs CUDA; False where the import works anywhere and only its calls need NVIDIA's driver
        (pynvml: ``nvmlInit()`` raises without it).
    """

    kernels: bool
    uses: str = ""
    loads: bool = True


# Libraries that need an NVIDIA GPU: the rules, the guards and the program model all ask `cuda_only_import`.
CUDA_LIBRARIES = {
    "apex": Library(False), "flash_attn": Library(False), "xformers": Library(False),
    "bitsandbytes": Library(False), "transformer_engine": Library(False),
    "pynvml": Library(False, loads=False),
    # NVML through gpustat: setGPU picks a free GPU when imported; waitGPU's and gpustat's calls query the driver
    "setGPU": Library(False), "waitGPU": Library(False, loads=False), "gpustat": Library(False, loads=False),
    "cupy": Library(False, "cupy.cuda."), "numba.cuda": Library(False, "numba.cuda."),
    "pycuda": Library(False, "pycuda."), "tensorrt": Library(False), "torch2trt": Library(False),
    "polygraphy": Library(False),
    "cuda": Library(False), "megatron": Library(False), "msamp": Library(False),
    "isaacgym": Library(False), "triton": Library(True),
    # spikingjelly's CUDA neurons: `cext` imports its compiled `_C_neuron`, built for CUDA alone
    "spikingjelly.cext": Library(False),
    # extensions built with `CUDAExtension` alone, whose import loads the compiled kernels: Pointnet2_PyTorch's
    # ops, KNN_CUDA, tiny-cuda-nn, the Gaussian-splatting rasterizer and its k-NN, Mamba's scans and convolutions
    "pointnet2_ops": Library(False), "knn_cuda": Library(False), "tinycudann": Library(False),
    "diff_gaussian_rasterization": Library(False), "simple_knn": Library(False), "mamba_ssm": Library(False),
    "causal_conv1d": Library(False),
    # torch-batch-svd: batched SVD through cuSOLVER, a `CUDAExtension` with no CPU kernels
    "torch_batch_svd": Library(False),
    # RAPIDS: GPU data frames, graphs and ML, and their memory manager and Dask cluster, which need NVIDIA's CUDA
    "cudf": Library(False), "cugraph": Library(False), "cuml": Library(False), "cuspatial": Library(False),
    "rmm": Library(False), "dask_cuda": Library(False),
    # NVIDIA DALI's data pipelines: its wheels are built for CUDA alone (`nvidia-dali-cuda120`), none for macOS
    "nvidia.dali": Library(False),
    # Unsloth's fine-tuning kernels: importing it raises without an NVIDIA (or its own list of) GPU
    "unsloth": Library(False),
    # FlashInfer's attention and sampling kernels: CUDA alone (its wheels JIT-compile them with nvcc)
    "flashinfer": Library(False),
}
# The prefixes of the qualified names whose uses need CUDA (`Library.uses`): numba's `numba.cuda.`, CuPy's `cupy.cuda.`
CUDA_LIBRARY_USES = tuple(library.uses for library in CUDA_LIBRARIES.values() if library.uses)
_CUDA = "torch.cuda."
# Keyword options, with the value that picks a CUDA-only library: transformers' `from_pretrained` and
# `BitsAndBytesConfig` (`load_in_8bit=True` quantizes with bitsandbytes; `attn_implementation="flash_attention_2"`
# attends with flash_attn, which raises ImportError where it is not installed, and it installs only with CUDA);
# spikingjelly's neurons (`LIFNode(..., backend="cupy")` runs CuPy kernels).
CUDA_LIBRARY_OPTIONS: dict[tuple[str, object], str] = {
    ("load_in_8bit", True): "bitsandbytes", ("load_in_4bit", True): "bitsandbytes", ("backend", "cupy"): "CuPy",
    ("attn_implementation", "flash_attention_2"): "flash_attn", ("attn_implementation", "flash_attention_3"):
        "flash_attn"}


def cuda_library_option(keyword: str | None, value: object) -> str | None:
    """The CUDA-only library that keyword argument ``keyword=value`` picks (`CUDA_LIBRARY_OPTIONS`), or None."""
    return next((library for (name, wanted), library in CUDA_LIBRARY_OPTIONS.items()
                 if name == keyword and type(value) is type(wanted) and value == wanted), None)


def cuda_library(name: str) -> Library | None:
    """The record of the library in `CUDA_LIBRARIES` that module or name ``name`` comes from
    (``megatron.training.parse_args``: megatron's), or None."""
    return next((lib for module, lib in CUDA_LIBRARIES.items() if name == module or name.startswith(module + ".")),
                None)


def api(name: str) -> Api | None:
    """The record of the qualified CUDA API ``name`` (``"torch.cuda.synchronize"``), or None."""
    return CUDA_APIS.get(name)


@functools.cache
def named(*roles: str) -> frozenset[str]:
    """The qualified names (in `CUDA_APIS` or `TORCH_NAMES`) with one of ``roles`` (`ROLES`)."""
    assert all(role in ROLES for role in roles), roles
    wanted = set(roles)
    return frozenset([*(name for name, a in CUDA_APIS.items() if wanted.intersection(a.roles)),
                      *(name for name, has in TORCH_NAMES.items() if wanted.intersection(has))])


@functools.cache
def of_rule(rule: str) -> frozenset[str]:
    """The qualified names of the CUDA APIs ``rule`` (``"TP020"``) ports or reports."""
    return frozenset(name for name, a in CUDA_APIS.items() if a.rule == rule)


def cuda_tail(qualified_name: str) -> str | None:
    """``torch.cuda.memory.empty_cache`` -> ``empty_cache`` (the name under torch.cuda, through the submodules it
    re-exports); None outside ``torch.cuda``."""
    if not qualified_name.startswith(_CUDA):
        return None
    name = qualified_name[len(_CUDA):]
    head, _, tail = name.partition(".")
    return tail if head in words("cuda_submodule") and tail else name


def renames(rule: str) -> dict[str, str]:
    """The names under ``torch.cuda`` that ``rule`` (``"TP010"``) renames -> the name each becomes, in table order."""
    return {name[len(_CUDA):]: a.becomes for name, a in CUDA_APIS.items() if a.rule == rule and a.becomes}


def names_of(rule: str) -> tuple[str, ...]:
    """The names under ``torch.cuda`` that ``rule`` ports or reports, in table order."""
    return tuple(name[len(_CUDA):] for name, a in CUDA_APIS.items() if a.rule == rule and name.startswith(_CUDA))


# torch.cuda calls (names under ``torch.cuda``) that raise where CUDA is not there.
RAISES_OFF_CUDA = frozenset(name[len(_CUDA):] for name, a in CUDA_APIS.items() if a.off_cuda == R)
# Legacy CUDA tensor types (names under ``torch.cuda``) -> the dtype each means.
LEGACY_TYPES = {name[len(_CUDA):]: a.dtype for name, a in CUDA_APIS.items() if a.dtype is not None}
# CUDA generator state the runtime has no equivalent of, by qualified name.
UNPORTABLE_RNG = frozenset(name for name, a in CUDA_APIS.items() if not a.portable)


# Views of the tables above, by role, under the names the program model reads.
ON_CUDA_FLAGS = frozenset(words("on_cuda_flag"))
RANKS = named("rank")
WORLD_SIZES = named("world_size")
PLACEMENT_KEYWORDS = frozenset(words("placement_keyword"))
LIBRARY_PLACEMENT_KEYWORDS = frozenset(words("library_placement_keyword"))
ACCELERATOR_KEYWORDS = frozenset(words("accelerator_keyword"))
CUDA_ACCELERATORS = frozenset(words("cuda_accelerator"))
ANY_GPU_ACCELERATORS = frozenset(words("any_gpu_accelerator"))
GROUP_CUDA_LAYERS = named("group_cuda_layer")
TEXT_CALLS = frozenset(words("text_call"))
CUDA_SPEC = text("cuda_spec")
CUDA_BACKENDS = frozenset(words("cuda_backend"))
FAKES_CUDA = text("fakes_cuda")
EXITS = named("exit")
SKIPS = named("skip")
# Skip marks, each -> whether its condition says when to run (skipUnless) rather than when to skip.
SKIP_IF = {name: name in named("skip_unless") for name in named("skip_if", "skip_unless")}
SKIP_ALWAYS = named("skip_always")
SKIP_BELOW_GPUS = named("skip_below_gpus")
CATCHES_CUDA_ERRORS = frozenset(words("catches_cuda_error"))
GPU_LISTS = named("nvidia_gpu_list")
HOLDS_NOTHING = named("holds_nothing")
ENV_READS = named("env_read")
CUDA_ENV = frozenset(words("cuda_env"))
# What a star import binds, as the rules read names: ``torch``. A module that reads ``torch`` and imports it no
# other way (YOLOv4's ``from tool.torch_utils import *``) runs only where the star import brought torch; where it
# imports ``torch`` itself, the binding is the same.
STAR_BINDS = {"torch": "torch"}


def query(name: str, target: str) -> object:
    """What ``name`` (a qualified call such as ``torch.cuda.is_available``) returns on ``target``, or `UNKNOWN`.

    Covers torch's own device queries, ``torch.accelerator`` and torchport's runtime (``torchport.runtime``, the
    vendored ``_torchport_runtime`` and its native helpers); a CUDA device count is unknown (one or more).
    """
    from torchport.model.values import INDEX, UNKNOWN, Device, Items

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
    if name in GPU_LISTS:
        return UNKNOWN if target == "cuda" else Items(())
    if name in named("counters"):  # the caching allocator's counters: none without CUDA
        return UNKNOWN if target == "cuda" else {}
    if name == "torch.accelerator.device_count":
        return UNKNOWN if accelerator else 0
    if name == "torch.accelerator.current_accelerator":
        return Device(target) if accelerator else None
    if is_runtime(name):
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


def is_runtime(name: str) -> bool:
    """Whether the qualified ``name`` is torchport's runtime or in it (``torchport.runtime``, ``tp.device`` as
    ``torchport.runtime.device``, the vendored ``_torchport_runtime``)."""
    head = name.split(".", 1)[0]
    return name == "torchport.runtime" or name.startswith("torchport.runtime.") or head.endswith("torchport_runtime")
