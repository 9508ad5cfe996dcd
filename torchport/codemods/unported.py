"""What needs a person: CUDA-only features, hard GPU requirements, and what breaks on one target.

| Code  | Before                                             | After                               |
|-------|----------------------------------------------------|-------------------------------------|
| TP009 | assert torch.cuda.is_available()                   | (removed; unsafe)                   |
| TP107 | torch.backends.cudnn.benchmark = True              | (noted once per file)               |
| TP109 | if torch.cuda.is_available:                        | (reported: a bug)                   |
| TP201 | g = torch.cuda.CUDAGraph()                         | (reported, high effort)             |
| TP202 | pool = torch.cuda.MemPool()                        | (reported, high effort)             |
| TP203 | s = torch.cuda.ExternalStream(ptr)                 | (reported, medium effort)           |
| TP204 | torch.cuda.memory._record_memory_history()         | (reported, low effort)              |
| TP205 | os.environ["CUDA_VISIBLE_DEVICES"] = "0"           | (reported, medium effort)           |
| TP206 | CUDAExtension("ops", ["ops.cu"])                   | (reported, high effort)             |
| TP207 | import triton                                      | (reported, high effort)             |
| TP208 | import apex                                        | (reported, medium effort)           |
| TP209 | if not torch.cuda.is_available(): raise ...        | (reported, low effort)              |
| TP301 | x = x.double()                                     | (reported for --target mps)         |
| TP302 | z = torch.zeros(2, dtype=torch.complex128)         | (reported for --target mps)         |
| TP321 | torch.autocast(tp.device_type(), dtype=torch.float16) | (reported for --target cpu)      |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods._base import Rule, string_value

if TYPE_CHECKING:
    from torchport.codemods._transformer import MigrateCodemod

RULES = (
    Rule("TP009", "gpu-required-assert", "`assert torch.cuda.is_available()` stops the port on any other device; "
         "the fix removes it.", "assert torch.cuda.is_available()", "(removed)", safety="unsafe"),
    Rule("TP107", "backend-flags", "`torch.backends.cudnn`/`cuda` flags are left as they are: harmless elsewhere "
         "(one note per file).", "torch.backends.cudnn.benchmark = True", safety="manual", effort="info"),
    Rule("TP109", "is-available-not-called", "`torch.cuda.is_available` without a call is always true: a bug.",
         "if torch.cuda.is_available:", safety="manual", effort="low"),
    Rule("TP201", "cuda-graphs", "CUDA graph capture and replay has no portable equivalent.",
         "g = torch.cuda.CUDAGraph()", safety="manual", effort="high"),
    Rule("TP202", "cuda-memory-pool", "CUDA memory pools and custom allocators have no portable equivalent.",
         "pool = torch.cuda.MemPool()", safety="manual", effort="high"),
    Rule("TP203", "cuda-interop", "cudart, external streams and CUDA IPC have no portable equivalent.",
         "s = torch.cuda.ExternalStream(ptr)", safety="manual", effort="medium"),
    Rule("TP204", "cuda-memory-history", "The CUDA memory-history recorder is CUDA-only (a debugging aid).",
         "torch.cuda.memory._record_memory_history()", safety="manual", effort="low"),
    Rule("TP205", "cuda-visible-devices", "Setting `CUDA_VISIBLE_DEVICES` picks GPUs only on CUDA.",
         'os.environ["CUDA_VISIBLE_DEVICES"] = "0"', safety="manual", effort="medium"),
    Rule("TP206", "cuda-extension", "A C++/CUDA extension with `.cu` sources builds only with nvcc.",
         'CUDAExtension("ops", ["ops.cu"])', safety="manual", effort="high"),
    Rule("TP207", "triton-kernel", "Triton kernels need a GPU backend Triton supports.",
         "import triton", safety="manual", effort="high"),
    Rule("TP208", "cuda-only-import", "A CUDA-only library (apex, flash_attn, xformers, bitsandbytes, "
         "transformer_engine, pynvml, cupy, numba.cuda).", "import apex", safety="manual", effort="medium"),
    Rule("TP209", "gpu-required", "Code that raises when CUDA is missing.",
         "if not torch.cuda.is_available(): raise RuntimeError()", safety="manual", effort="low"),
    Rule("TP301", "mps-float64", "[mps] float64 tensors are not supported on MPS.",
         "x = x.double()", safety="manual", effort="medium"),
    Rule("TP302", "mps-complex128", "[mps] complex128 tensors are not supported on MPS.",
         "z = torch.zeros(2, dtype=torch.complex128)", safety="manual", effort="medium"),
    Rule("TP321", "cpu-float16-autocast", "[cpu] float16 autocast on CPU is slow and lacks ops; bfloat16 is "
         "CPU autocast's type.", "torch.autocast(tp.device_type(), dtype=torch.float16)", safety="manual",
         effort="low"),
)

TRIGGERS = (r"cuda|CUDA|cudnn|\.cuh?\b", r"triton|apex|flash_attn|xformers|bitsandbytes|transformer_engine|pynvml|cupy",
            r"float64|double|complex128", r"autocast")

# torch.cuda names (after "torch.cuda.") that need a person, by rule.
CUDA_ONLY_APIS = {
    "TP201": ("CUDAGraph", "graph", "graphs", "make_graphed_callables", "graph_pool_handle",
              "is_current_stream_capturing"),
    "TP202": ("MemPool", "use_mem_pool", "CUDAPluggableAllocator", "change_current_allocator",
              "memory.CUDAPluggableAllocator", "memory.change_current_allocator", "set_per_process_memory_fraction",
              "caching_allocator_alloc", "caching_allocator_delete"),
    "TP203": ("cudart", "ExternalStream", "ipc_collect", "get_stream_from_external", "can_device_access_peer",
              "comm", "nccl"),
    "TP204": ("memory._record_memory_history", "memory._dump_snapshot", "memory._snapshot", "memory_snapshot",
              "_record_memory_history", "_dump_snapshot"),
}
CUDA_ONLY_MODULES = ("apex", "flash_attn", "xformers", "bitsandbytes", "transformer_engine", "pynvml", "cupy",
                     "numba.cuda", "pycuda")
_GPU_TESTS = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
_EXTENSIONS = frozenset({"torch.utils.cpp_extension.CUDAExtension"})
_EXTENSION_LOADERS = frozenset({"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"})
_FLOAT64 = frozenset({"torch.float64", "torch.double"})
_COMPLEX128 = frozenset({"torch.complex128", "torch.cdouble"})


def cuda_api_rule(name: str) -> str | None:
    """The TP2xx rule for a ``torch.cuda.<name>`` that needs a person, else None."""
    tail = name[len("torch.cuda."):]
    for code, names in CUDA_ONLY_APIS.items():
        if any(tail == n or tail.startswith(n + ".") for n in names):
            return code
    return None


def check_import(m: MigrateCodemod, node: cst.Import | cst.ImportFrom) -> None:
    """Report imports of Triton and of CUDA-only libraries."""
    if isinstance(node, cst.Import):
        names = [m.dotted(alias.name) for alias in node.names]
    elif node.relative:
        return
    else:
        names = [m.dotted(node.module)]
        if names[0] == "numba" and not isinstance(node.names, cst.ImportStar):
            names = [f"numba.{alias.evaluated_name}" for alias in node.names]
    for name in names:
        if not name:
            continue
        code = cuda_api_rule(name) if name.startswith("torch.cuda.") else None
        if code is not None:
            m.report(code, node, f"`{name}`: {m.rule_summary(code)}")
        elif name == "triton" or name.startswith("triton."):
            m.report("TP207", node, f"`{name}`: Triton kernels need a GPU backend Triton supports")
        elif any(name == mod or name.startswith(mod + ".") for mod in CUDA_ONLY_MODULES):
            m.report("TP208", node, f"`{name}` is a CUDA-only library; guard it or find a portable alternative")


def _mentions_gpu_test(m: MigrateCodemod, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if isinstance(node, cst.Comparison):
        node = node.left
    return isinstance(node, cst.Call) and bool(m.qnames(node.func) & _GPU_TESTS)


def rewrite_assert(m: MigrateCodemod, original: cst.Assert) -> bool:
    """True when ``assert torch.cuda.is_available()`` (or a device_count check) is to be removed."""
    return _mentions_gpu_test(m, original.test) and m.apply("TP009", original)


def check_if(m: MigrateCodemod, node: cst.If) -> None:
    """``if not torch.cuda.is_available(): raise ...`` makes the port fail off CUDA."""
    test = node.test
    if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
        return
    if not _mentions_gpu_test(m, test.expression):
        return
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in statement.body):
            m.report("TP209", node, "raises when CUDA is missing; the runtime's device works without it")
            return


def check_call(m: MigrateCodemod, node: cst.Call) -> None:
    """CUDA extensions, CUDA_VISIBLE_DEVICES set through os.environ, and fp16 autocast on CPU."""
    names = m.qnames(node.func)
    if names & _EXTENSIONS:
        m.report("TP206", node, "CUDAExtension builds with nvcc; other backends need another kernel")
    elif names & _EXTENSION_LOADERS and _has_cuda_sources(node):
        m.report("TP206", node, "this extension compiles CUDA sources; other backends need another kernel")
    func = node.func
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("setdefault", "putenv", "__setitem__")
        and node.args
        and string_value(node.args[0].value) == "CUDA_VISIBLE_DEVICES"
    ):
        m.report("TP205", node, "sets CUDA_VISIBLE_DEVICES, which selects GPUs only on CUDA")
    if "cpu" in m.targets and names & {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"}:
        dtype = next((a.value for a in node.args if a.keyword and a.keyword.value == "dtype"), None)
        if dtype is not None and m.qnames(dtype) & {"torch.float16", "torch.half"}:
            m.report("TP321", node, "[cpu] float16 autocast on CPU is slow and lacks ops; bfloat16 is CPU's type")


def _has_cuda_sources(node: cst.Call) -> bool:
    for arg in node.args:
        keyword = arg.keyword.value if arg.keyword else None
        if keyword == "cuda_sources" or (keyword == "with_cuda" and cst.Module([]).code_for_node(arg.value) == "True"):
            return True
        values = arg.value.elements if isinstance(arg.value, (cst.List, cst.Tuple)) else [arg.value]
        for value in values:
            text = string_value(getattr(value, "value", value))
            if text and text.endswith((".cu", ".cuh")):
                return True
    return False


def check_assign(m: MigrateCodemod, node: cst.Assign) -> None:
    """``os.environ["CUDA_VISIBLE_DEVICES"] = ...``."""
    for target in node.targets:
        sub = target.target
        if isinstance(sub, cst.Subscript) and len(sub.slice) == 1:
            index = sub.slice[0].slice
            if isinstance(index, cst.Index) and string_value(index.value) == "CUDA_VISIBLE_DEVICES":
                m.report("TP205", node, "sets CUDA_VISIBLE_DEVICES, which selects GPUs only on CUDA")


def check_dtype(m: MigrateCodemod, node: cst.CSTNode, names: set[str]) -> None:
    """Per-target dtype problems: float64 and complex128 on MPS."""
    if "mps" not in m.targets:
        return
    if names & _FLOAT64:
        m.report("TP301", node, "[mps] float64 is not supported on MPS; use float32 there")
    elif names & _COMPLEX128:
        m.report("TP302", node, "[mps] complex128 is not supported on MPS; use complex64 there")


def check_double_call(m: MigrateCodemod, node: cst.Call) -> None:
    """``x.double()`` makes a float64 tensor (per-target: MPS)."""
    func = node.func
    if "mps" in m.targets and isinstance(func, cst.Attribute) and func.attr.value == "double" and not node.args:
        m.report("TP301", node, "[mps] .double() makes float64, which MPS does not support")
