"""What keeps a module on CUDA, read from CPython's tree: CUDA-only libraries, kernels and APIs.

Torch-free and LibCST-free: the program model (`torchport.pipeline.programs`) reads every module of a project
with it, and the rules share its lists (`CUDA_ONLY_MODULES`, `CUDA_ONLY_APIS`).

A requirement is *guarded* when the code already has a way around it (an import inside ``try: ... except
ImportError``, or under an ``if``), and then blocks nothing: the program runs without it elsewhere. Only
what a module does whenever it is imported counts here: a CUDA-only import inside a function is taken as a
path the program may not take.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from torchport.codemods.analysis.names import ast_chain, import_map, qualify
from torchport.codemods.analysis.programs import cuda_only_program

OFF_CUDA = ("mps", "xpu", "cpu")

# Libraries that need an NVIDIA GPU (triton: a GPU backend Triton supports, which here means CUDA).
CUDA_ONLY_MODULES = ("apex", "flash_attn", "xformers", "bitsandbytes", "transformer_engine", "pynvml", "cupy",
                     "numba.cuda", "pycuda")
KERNEL_MODULES = ("triton",)
# torch.cuda names (after "torch.cuda.") with no portable equivalent, by the rule that reports them.
CUDA_ONLY_APIS = {
    "TP201": ("CUDAGraph", "graph", "graphs", "make_graphed_callables", "graph_pool_handle",
              "is_current_stream_capturing"),
    "TP202": ("MemPool", "use_mem_pool", "CUDAPluggableAllocator", "change_current_allocator",
              "memory.CUDAPluggableAllocator", "memory.change_current_allocator", "set_per_process_memory_fraction",
              "caching_allocator_alloc", "caching_allocator_delete"),
    "TP203": ("cudart", "ExternalStream", "get_stream_from_external", "can_device_access_peer",
              "comm", "nccl"),
    "TP204": ("memory._record_memory_history", "memory._dump_snapshot", "memory._snapshot", "memory_snapshot",
              "_record_memory_history", "_dump_snapshot"),
}
# The ones a program cannot run without (the others are reported by their rules but only tune or observe).
_BLOCKING_APIS = frozenset(f"torch.cuda.{name}" for code in ("TP201", "TP202") for name in CUDA_ONLY_APIS[code])
_EXTENSION_LOADERS = frozenset({"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"})
# Text those calls need (a bare ``graph`` is too common a word: ``cuda.graph``); a module without it is not walked.
_API_TEXT = re.compile("|".join(sorted({name.rsplit(".", 1)[-1] for name in (*_BLOCKING_APIS, *_EXTENSION_LOADERS)}
                                       - {"graph", "graphs", "load"})) + r"|cuda\.graphs?\b|cpp_extension")

@dataclass(frozen=True)
class Requirement:
    """Something a module does that keeps a program that imports it off some targets.

    Args:
        targets: the targets it blocks (`OFF_CUDA` for a CUDA-only requirement, ``("mps",)`` for what MPS lacks).
            A process group is none: on a Mac the runtime picks the CPU once one exists.
        reason: one sentence, e.g. ``"imports triton (GPU kernels)"``.
        line: 1-based line in the module.
    """

    targets: tuple[str, ...]
    reason: str
    line: int


def requirements(tree: ast.Module, text: str, entry: bool = False) -> list[Requirement]:
    """What keeps a program that imports this module (``tree``, its source ``text``) on CUDA; what MPS lacks is
    `torchport.pipeline.project.blocker`.

    Args:
        tree: CPython's tree of the module.
        text: its source.
        entry: the module is the program's entry point: its own CUDA gate (``assert torch.cuda.is_available()``
            in the ``__main__`` block, an exit without GPUs) counts too.

    Returns:
        The requirements, in line order; CUDA-only ones first on a line.
    """
    found: list[Requirement] = []
    imports = import_map(tree)
    for statement in _unconditional(tree.body):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for name in _imported(statement):
                if _under(name, KERNEL_MODULES):
                    found.append(Requirement(OFF_CUDA, f"imports {name} (GPU kernels)", statement.lineno))
                elif _under(name, CUDA_ONLY_MODULES):
                    found.append(Requirement(OFF_CUDA, f"imports {name}, a CUDA-only library", statement.lineno))
    for node in ast.walk(tree) if _API_TEXT.search(text) else ():  # the walk is the cost: only where it can find
        if isinstance(node, ast.Call):
            dotted = ast_chain(node.func)
            names = qualify(dotted, imports) if dotted else set()
            if names & _EXTENSION_LOADERS:
                found.append(Requirement(OFF_CUDA, "builds a CUDA extension", node.lineno))
        elif isinstance(node, ast.Attribute):
            dotted = ast_chain(node)
            if dotted and qualify(dotted, imports) & _BLOCKING_APIS:
                found.append(Requirement(OFF_CUDA, f"uses {dotted}, which only CUDA has", node.lineno))
    if entry and (line := cuda_only_program(tree)) is not None:
        found.append(Requirement(OFF_CUDA, "stops unless CUDA GPUs are there", line))
    return sorted(set(found), key=lambda r: (r.line, -len(r.targets), r.reason))


def _unconditional(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that run whenever it does: not under ``if``/``try``, nor in a function."""
    run: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            run.extend(_unconditional(statement.body))
        elif not isinstance(statement, (ast.If, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                        ast.For, ast.While)):
            run.append(statement)
    return run


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    return [node.module]


def _under(name: str, modules: tuple[str, ...]) -> bool:
    return any(name == module or name.startswith(module + ".") for module in modules)

