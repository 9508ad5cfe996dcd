"""What needs a person: CUDA-only features, hard GPU requirements, and what breaks on one target.

| Code  | Before                                             | After                               |
|-------|----------------------------------------------------|-------------------------------------|
| TP009 | assert torch.cuda.is_available()                   | (removed; unsafe)                   |
| TP107 | torch.backends.cudnn.benchmark = True              | (noted once per file)               |
| TP108 | activities=[ProfilerActivity.CUDA]                 | (noted: torch drops it off CUDA)    |
| TP201 | g = torch.cuda.CUDAGraph()                         | (reported, high effort)             |
| TP202 | pool = torch.cuda.MemPool()                        | (reported, high effort)             |
| TP203 | s = torch.cuda.ExternalStream(ptr)                 | (reported, medium effort)           |
| TP204 | torch.cuda.memory._record_memory_history()         | (reported, low effort)              |
| TP205 | os.environ["CUDA_VISIBLE_DEVICES"] = "0"           | (reported, medium effort)           |
| TP206 | CUDAExtension("ops", ["ops.cu"])                   | (reported, high effort)             |
| TP207 | import triton                                      | (reported, high effort)             |
| TP208 | import apex                                        | (reported, medium effort)           |
| TP209 | if not torch.cuda.is_available(): raise ...        | (reported, low effort)              |
| TP210 | a library's modules import torchport undeclared    | (reported once per project)         |
| TP301 | x = x.double()                                     | (reported for --target mps)         |
| TP302 | z = torch.zeros(2, dtype=torch.complex128)         | (reported for --target mps)         |
| TP321 | torch.autocast(tp.device_type(), dtype=torch.float16) | (reported for --target cpu)      |
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

import libcst as cst
from libcst import matchers

from torchport.codemods.analysis.programs import removable_exit
from torchport.codemods.analysis.requirements import CUDA_ONLY_APIS, CUDA_ONLY_MODULES, KERNEL_MODULES
from torchport.codemods.core.base import dotted_name, string_value
from torchport.codemods.core.rule import Example, Rule
from torchport.model import torch_facts

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

_GPU_TESTS = torch_facts.named("available", "count")
_EXTENSIONS = torch_facts.named("cuda_extension")
_EXTENSION_LOADERS = torch_facts.named("extension_loader")
_FLOAT64 = torch_facts.named("float64")
_COMPLEX128 = torch_facts.named("complex128")


_INFO_FLAGS = tuple(sorted(torch_facts.named("cuda_flags")))


def cuda_api_rule(name: str) -> str | None:
    """The TP2xx rule for a ``torch.cuda.<name>`` that needs a person, else None."""
    tail = name[len("torch.cuda."):]
    for code, names in CUDA_ONLY_APIS.items():
        if any(tail == n or tail.startswith(n + ".") for n in names):
            return code
    return None


def _mentions_gpu_test(m: Migrator, node: cst.BaseExpression) -> cst.Call | None:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if isinstance(node, cst.Comparison):
        node = node.left
    return node if isinstance(node, cst.Call) and m.qnames(node.func) & _GPU_TESTS else None


_TEST_MODULES = torch_facts.named("test_framework")


_AVAILABLE = torch_facts.named("available")


def removable_assert(m: Migrator, node: cst.Assert) -> bool:
    """``assert torch.cuda.is_available()`` outside tests: it stops the code only where CUDA is not, so removing
    it is safe (TP009 applies without ``--unsafe-fixes``). A count (``device_count() > rank``) also stops CUDA
    runs and stays unsafe; a test's assert is what the test checks (a module importing pytest or unittest, a
    ``test*`` function, a ``Test*`` class)."""
    test = node.test
    if not (isinstance(test, cst.Call) and not test.args and any(m.has_qname(test.func, name) for name in _AVAILABLE)):
        return False
    return _goes_here(m)


def _goes_here(m: Migrator) -> bool:
    """Whether a CUDA assert or exit gate being visited may go: not in a test (a module importing pytest or
    unittest, a ``test*`` function, a ``Test*`` class), before no CUDA-only library in its block, in a function that
    does not ask CUDA again."""
    if any(root in _TEST_MODULES for root in (name.split(".", 1)[0] for name in m.imports)):
        return False
    if any(isinstance(a, (cst.FunctionDef, cst.ClassDef)) and a.name.value.lower().startswith("test")
           for a in m.ancestors):
        return False
    return not _guards_cuda_only_code(m) and not _asked_again(m)


def _asked_again(m: Migrator) -> bool:
    """Whether the function around the assert being visited asks whether CUDA is there again after the statement
    that holds it (yolov7's ``select_device``: ``elif device: assert torch.cuda.is_available(), 'invalid device'``,
    then ``cuda = not cpu and torch.cuda.is_available()``): the assert checks a device the user asked for, and
    without it the function would fall back to another device silently."""
    function = next((a for a in reversed(m.ancestors) if isinstance(a, cst.FunctionDef)), None)
    if function is None or not isinstance(function.body, cst.IndentedBlock):
        return False
    inside = {id(a) for a in m.ancestors}
    body = list(function.body.body)
    holder = next((i for i, s in enumerate(body) if id(s) in inside), None)
    if holder is None:
        return False
    # the query ported by an earlier run (`tp.is_available()`) asks again too: a second run leaves what the first did
    return any(any(m.has_qname(call.func, name) for name in _AVAILABLE) or any(
        torch_facts.is_runtime(name) and name.rsplit(".", 1)[-1] == "is_available" for name in m.qnames(call.func))
               for statement in body[holder + 1:] for call in matchers.findall(statement, matchers.Call(args=[]))
               if isinstance(call, cst.Call))


# (`cuda`, the cuda-python package, only where imported: `torch.cuda` is no such use)
_CUDA_ONLY_NAMES = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in (*CUDA_ONLY_MODULES, *KERNEL_MODULES)
                                                  if n != "cuda") + r")\b|\b(?:from|import)\s+cuda\b")


def exit_gate_at(m: Migrator, node: cst.If) -> bool:
    """Whether ``node`` is `analysis.programs.removable_exit` (asked of the module's CPython tree, whose ``if``
    statements are indexed by line once per module; only an ``if not <x>.is_available():`` with no ``else`` is
    looked up)."""
    test = node.test
    if not (node.orelse is None and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Call) and isinstance(test.expression.func, cst.Attribute)
            and test.expression.func.attr.value == "is_available") or m.syntax is None:
        return False
    ifs = m.shared.ifs
    if ifs is None:
        ifs = m.shared.ifs = {n.lineno: n for n in ast.walk(m.syntax) if isinstance(n, ast.If)}
    syntax = ifs.get(m.start(node).line)
    return syntax is not None and removable_exit(syntax)


def removable_exit_gate(m: Migrator, node: cst.If) -> bool:
    """``if not torch.cuda.is_available():`` that only reports and exits (`analysis.programs.removable_exit`), being
    visited: TP009 removes it by default, as `removable_assert` an assert, outside tests, before no CUDA-only
    library in its block, in a function that does not ask CUDA again."""
    return exit_gate_at(m, node) and _goes_here(m)


def _guards_cuda_only_code(m: Migrator) -> bool:
    """Whether the statements after the assert (or exit gate) being visited, in its block, name a CUDA-only library
    (``assert torch.cuda.is_available(), 'CUDA required for APEX'`` then apex): it is that code's clear error."""
    statement = next((a for a in reversed(m.ancestors) if isinstance(a, (cst.SimpleStatementLine, cst.If))), None)
    block = next((a for a in reversed(m.ancestors) if isinstance(a, (cst.IndentedBlock, cst.Module))), None)
    if statement is None or block is None:
        return False
    body = list(block.body)
    after = body[body.index(statement) + 1:] if statement in body else []
    return any(_CUDA_ONLY_NAMES.search(cst.Module([]).code_for_node(s)) for s in after)


class GpuRequiredAssert(Rule):
    code = "TP009"
    moves_data = False
    name = "gpu-required-assert"
    summary = ("An assert that CUDA is there (`assert torch.cuda.is_available()`, a GPU count), or an `if not "
               "torch.cuda.is_available():` that only reports and exits, stops every run off CUDA; the fix removes "
               "it.")
    before, after = "assert torch.cuda.is_available()", "(removed)"
    safety = "unsafe"
    safety_note = ("Applied by default to `assert torch.cuda.is_available()`, and to an `if not "
                   "torch.cuda.is_available():` whose body only prints or logs and then exits (`sys.exit`), outside "
                   "tests where no CUDA-only library "
                   "(apex, triton, ...) follows it in its block. An assert that counts GPUs (`device_count() > rank`), "
                   "a test's assert, one before CUDA-only code, or one in a function that asks CUDA again after it is "
                   "removed only with --unsafe-fixes (else reported).")
    names = _GPU_TESTS
    examples = (
        Example("import torch\n# needs a GPU\nassert torch.cuda.is_available()  # hard requirement\nrun()\n",
                "import torch\n# needs a GPU\n# hard requirement\nrun()\n"),
        Example("import torch\n\n\ndef f():\n    assert torch.cuda.is_available()\n",
                "import torch\n\n\ndef f():\n    pass\n"),
        Example("import torch\nassert torch.cuda.device_count() > rank\n",
                "import torch\n", unsafe=True),
        # Counting GPUs stops CUDA runs too: only with --unsafe-fixes. A test checks what it asserts.
        Example("import torch\nassert torch.cuda.device_count() > rank\n"),
        Example("import pytest\nimport torch\n\n\ndef test_gpu():\n    assert torch.cuda.is_available()\n"),
        # The clear error of CUDA-only code that follows it.
        Example("import torch\n\n\ndef fused(name):\n    assert torch.cuda.is_available(), 'CUDA required for APEX'\n"
                "    import apex\n    return apex.optimizers.FusedAdam\n"),
        # A script's own exit without CUDA (PC-DARTS): it only reports and exits, as an assert would.
        Example("import logging\nimport sys\nimport torch\n\n\ndef main():\n    # a GPU is required\n"
                "    if not torch.cuda.is_available():\n        logging.info('no gpu device available')\n"
                "        sys.exit(1)\n    model = torch.nn.Linear(2, 2)\n",
                "import logging\nimport sys\nimport torch\n\n\ndef main():\n    # a GPU is required\n"
                "    model = torch.nn.Linear(2, 2)\n"),
        # A raise is an error a caller may catch, or a library's own statement that it needs CUDA: it stays.
        Example("import torch\n\n\ndef train():\n    if not torch.cuda.is_available():\n"
                "        raise NotImplementedError('Training on CPU is not supported')\n"),
        # It checks a device the user asked for; the function asks CUDA again, so without it, it would fall back.
        Example("import torch\n\n\ndef select_device(device=''):\n    if device:\n"
                "        assert torch.cuda.is_available(), f'invalid device {device} requested'\n"
                "    cuda = device != 'cpu' and torch.cuda.is_available()\n"
                "    return torch.device('cuda:0' if cuda else 'cpu')\n"),
        # ... the runtime's query too, where an earlier run ported that one (a second run changes nothing)
        Example("import torch\nfrom torchport import runtime as tp\n\n\ndef select_device(device=''):\n"
                "    if device:\n        assert torch.cuda.is_available(), f'invalid device {device} requested'\n"
                "    cuda = device != 'cpu' and tp.is_available()\n    return cuda\n"),
    )

    def visit_Assert(self, m: Migrator, node: cst.Assert) -> None:
        call = _mentions_gpu_test(m, node.test)
        if call is not None:
            m.mark_handled(call)
            m.store(self)[id(node)] = True

    def visit_If(self, m: Migrator, node: cst.If) -> None:
        if removable_exit_gate(m, node):  # decided here, where its block and function are known
            call = _mentions_gpu_test(m, node.test)
            if call is not None:
                m.mark_handled(call)
            m.store(self)[("exit", id(node))] = True

    def leave_If(self, m: Migrator, original: cst.If, updated: cst.If) -> cst.SimpleStatementLine | None:
        if m.store(self).pop(("exit", id(original)), False) and m.apply(self.code, original, safe=True):
            marker = cst.SimpleStatementLine([cst.Pass()], leading_lines=original.leading_lines)
            m.store(self)[("removed", id(marker))] = True  # the block drops it below, keeping its comments
            return marker
        return None

    def _strip(self, m: Migrator, body: list[cst.BaseStatement]) -> tuple[list, list[cst.EmptyLine], bool]:
        """Drop the statements that are only a removed assert; their comments go to the next statement."""
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        changed = False
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
                    m.store(self).get(("removed", id(statement))):
                carried += list(statement.leading_lines)
                comment = statement.trailing_whitespace.comment
                if comment is not None:
                    carried.append(cst.EmptyLine(indent=True, comment=comment))
                changed = True
                continue
            if changed and not out:  # what was first in the block went: no blank line opens the block now
                own = list(statement.leading_lines)  # type: ignore[attr-defined]
                while own and own[0].comment is None:
                    own.pop(0)
                statement = statement.with_changes(leading_lines=own)
            if carried:
                statement = statement.with_changes(  # every concrete statement node has leading_lines
                    leading_lines=[*carried, *statement.leading_lines])  # type: ignore[attr-defined]
                carried = []
            out.append(statement)
        return out, carried, changed

    def leave_Assert(self, m: Migrator, original: cst.Assert, updated: cst.Assert) -> cst.Pass | None:
        if id(original) in m.store(self) and m.apply(self.code, original, safe=removable_assert(m, original)):
            m.store(self)["pending"] = True
            return cst.Pass()  # marks the line; the block below removes it, keeping its comments
        return None

    def leave_SimpleStatementLine(self, m: Migrator, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> None:
        if m.store(self).pop("pending", False) and len(updated.body) == 1 and isinstance(updated.body[0], cst.Pass):
            m.store(self)[("removed", id(updated))] = True
        return None

    def leave_IndentedBlock(self, m: Migrator, original: cst.IndentedBlock,
                            updated: cst.IndentedBlock) -> cst.IndentedBlock | None:
        body, carried, changed = self._strip(m, list(updated.body))
        if not changed:
            return None
        if not body:  # a block cannot be empty: keep a `pass`, with the comments
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=carried)])
        return updated.with_changes(body=body, footer=[*carried, *updated.footer])

    def leave_Module(self, m: Migrator, original: cst.Module, updated: cst.Module) -> cst.Module | None:
        body, carried, changed = self._strip(m, list(updated.body))
        if not changed:
            return None
        return updated.with_changes(body=body, footer=[*carried, *updated.footer])


class BackendFlags(Rule):
    code = "TP107"
    moves_data = False
    name = "backend-flags"
    summary = "`torch.backends.cudnn`/`cuda` flags are left as they are: harmless elsewhere (one note per file)."
    before = "torch.backends.cudnn.benchmark = True"
    safety, effort = "manual", "info"
    triggers = (r"\bcudnn\b|backends\.cuda",)
    examples = (Example("import torch\ntorch.backends.cudnn.benchmark = True\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if "site" not in m.store(self) and id(node) not in m.inner and any(
                n.startswith(_INFO_FLAGS) for n in m.qnames(node)):
            m.store(self)["site"] = node
            m.remember_statement(node)

    def finish(self, m: Migrator, module: cst.Module) -> None:
        site = m.store(self).get("site")
        if site is not None:
            m.report(self.code, site, "torch.backends.cudnn/cuda flags left unchanged: "
                     "they are harmless on other backends")


# torch.profiler's CUDA activity, under each name torch exports it.
_CUDA_ACTIVITY = torch_facts.named("cuda_activity")


class CudaProfilerActivity(Rule):
    code = "TP108"
    moves_data = False
    name = "cuda-profiler-activity"
    summary = ("`ProfilerActivity.CUDA` is left as it is: where CUDA is not available torch drops CUDA profiling "
               "(it only warns) and the profile has CPU events only.")
    before = "profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"
    safety, effort = "manual", "info"
    names = _CUDA_ACTIVITY
    examples = (
        Example("from torch.profiler import ProfilerActivity, profile\n\n"
                "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):\n    step()\n"),
        # Asked for only where CUDA is: nothing is dropped.
        Example("import torch\nfrom torch.profiler import ProfilerActivity\n\nactivities = [ProfilerActivity.CPU]\n"
                "if torch.cuda.is_available():\n    activities.append(ProfilerActivity.CUDA)\n"),
    )

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if id(node) in m.inner or not m.qnames(node) & _CUDA_ACTIVITY or m.in_skipped_region:
            return
        m.report(self.code, node, "`ProfilerActivity.CUDA` left unchanged: where CUDA is not available torch drops "
                 "CUDA profiling with only a warning (the profile has CPU events only; the audit reports it as "
                 "TPA07); on XPU profile `ProfilerActivity.XPU`")


class _CudaOnlyApi(Rule):
    """``torch.cuda`` APIs with no portable equivalent, reported under this rule's code."""

    safety = "manual"

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if id(node) not in m.inner:
            self._check(m, node)

    def visit_Name(self, m: Migrator, node: cst.Name) -> None:
        if id(node) not in m.inner and m.is_name(node):
            self._check(m, node)

    def _check(self, m: Migrator, node: cst.CSTNode) -> None:
        if dotted_name(node) is None:
            return
        for name in m.qnames(node):
            if name.startswith("torch.cuda.") and cuda_api_rule(name) == self.code:
                m.mark_handled(node)
                m.report(self.code, node, f"`{name}`: {self.summary}")
                return

    def visit_Import(self, m: Migrator, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name.startswith("torch.cuda.") and cuda_api_rule(name) == self.code:
                m.report(self.code, node, f"`{name}`: {self.summary}")

    def visit_ImportFrom(self, m: Migrator, node: cst.ImportFrom) -> None:
        name = dotted_name(node.module) if node.module is not None and not node.relative else None
        if name and name.startswith("torch.cuda.") and cuda_api_rule(name) == self.code:
            m.report(self.code, node, f"`{name}`: {self.summary}")


class CudaGraphs(_CudaOnlyApi):
    code = "TP201"
    moves_data = False
    name = "cuda-graphs"
    summary = "CUDA graph capture and replay has no portable equivalent."
    before = "g = torch.cuda.CUDAGraph()"
    effort = "high"
    names = frozenset(f"torch.cuda.{n}" for n in CUDA_ONLY_APIS["TP201"])
    examples = (Example("import torch\ng = torch.cuda.CUDAGraph()\n"),)


class CudaMemoryPool(_CudaOnlyApi):
    code = "TP202"
    moves_data = False
    name = "cuda-memory-pool"
    summary = "CUDA memory pools and custom allocators have no portable equivalent."
    before = "pool = torch.cuda.MemPool()"
    effort = "high"
    names = frozenset(f"torch.cuda.{n}" for n in CUDA_ONLY_APIS["TP202"])
    examples = (Example("import torch\npool = torch.cuda.MemPool()\n"),)


class CudaInterop(_CudaOnlyApi):
    code = "TP203"
    moves_data = False
    name = "cuda-interop"
    summary = "cudart, external streams and CUDA IPC have no portable equivalent."
    before = "s = torch.cuda.ExternalStream(ptr)"
    effort = "medium"
    names = frozenset(f"torch.cuda.{n}" for n in CUDA_ONLY_APIS["TP203"])
    examples = (Example("import torch\ns = torch.cuda.ExternalStream(ptr)\n"),)


class CudaMemoryHistory(_CudaOnlyApi):
    code = "TP204"
    moves_data = False
    name = "cuda-memory-history"
    summary = "The CUDA memory-history recorder is CUDA-only (a debugging aid)."
    before = "torch.cuda.memory._record_memory_history()"
    effort = "low"
    names = frozenset(f"torch.cuda.{n}" for n in CUDA_ONLY_APIS["TP204"])
    examples = (Example("import torch\ntorch.cuda.memory._record_memory_history()\n"),)


class CudaVisibleDevices(Rule):
    code = "TP205"
    moves_data = False
    name = "cuda-visible-devices"
    summary = "Setting `CUDA_VISIBLE_DEVICES` picks GPUs only on CUDA."
    before = 'os.environ["CUDA_VISIBLE_DEVICES"] = "0"'
    safety, effort = "manual", "medium"
    triggers = (r"CUDA_VISIBLE_DEVICES",)
    examples = (Example('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'),)

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1:
                index = sub.slice[0].slice
                if isinstance(index, cst.Index) and string_value(index.value) == "CUDA_VISIBLE_DEVICES":
                    m.report(self.code, node, "sets CUDA_VISIBLE_DEVICES, which selects GPUs only on CUDA")

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value in ("setdefault", "putenv", "__setitem__")
                and node.args and string_value(node.args[0].value) == "CUDA_VISIBLE_DEVICES"):
            m.report(self.code, node, "sets CUDA_VISIBLE_DEVICES, which selects GPUs only on CUDA")


class CudaExtension(Rule):
    code = "TP206"
    moves_data = False
    name = "cuda-extension"
    summary = "A C++/CUDA extension with `.cu` sources builds only with nvcc."
    before = 'CUDAExtension("ops", ["ops.cu"])'
    safety, effort = "manual", "high"
    names = _EXTENSIONS | _EXTENSION_LOADERS
    triggers = (r"\.cuh?\b", r"cuda_sources|with_cuda|CUDAExtension|cpp_extension")
    examples = (Example('from torch.utils.cpp_extension import CUDAExtension\n'
                        'ext = CUDAExtension("ops", ["ops.cu"])\n'),)

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        names = m.qnames(node.func)
        if names & _EXTENSIONS:
            m.report(self.code, node, "CUDAExtension builds with nvcc; other backends need another kernel")
        elif names & _EXTENSION_LOADERS and _has_cuda_sources(node):
            m.report(self.code, node, "this extension compiles CUDA sources; other backends need another kernel")


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


def _imported(node: cst.Import | cst.ImportFrom) -> list[str]:
    if isinstance(node, cst.Import):
        return [dotted_name(alias.name) or "" for alias in node.names]
    if node.relative or node.module is None:
        return []
    module = dotted_name(node.module) or ""
    if module == "numba" and not isinstance(node.names, cst.ImportStar):
        return [f"numba.{alias.evaluated_name}" for alias in node.names]
    return [module]


def _catches_import_error(node: cst.Try) -> bool:
    for handler in node.handlers:
        text = cst.Module([]).code_for_node(handler.type) if handler.type is not None else "Exception"
        if "ImportError" in text or "ModuleNotFoundError" in text or "Exception" in text:
            return True
    return False


class TritonKernel(Rule):
    code = "TP207"
    moves_data = False
    name = "triton-kernel"
    summary = "Triton kernels need a GPU backend Triton supports."
    before = "import triton"
    safety, effort = "manual", "high"
    triggers = (r"\btriton\b",)
    examples = (Example("import triton\n"),)

    def visit_Import(self, m: Migrator, node: cst.Import) -> None:
        self._check(m, node)

    def visit_ImportFrom(self, m: Migrator, node: cst.ImportFrom) -> None:
        self._check(m, node)

    def _check(self, m: Migrator, node: cst.Import | cst.ImportFrom) -> None:
        for name in _imported(node):
            if name == "triton" or name.startswith("triton."):
                m.report(self.code, node, f"`{name}`: Triton kernels need a GPU backend Triton supports")


class CudaOnlyImport(Rule):
    code = "TP208"
    moves_data = False
    name = "cuda-only-import"
    summary = ("An import of a CUDA-only library (apex, flash_attn, xformers, bitsandbytes, transformer_engine, "
               "pynvml, cupy, numba.cuda): the code that uses it runs only on CUDA.")
    before = "import apex"
    safety, effort = "manual", "medium"
    # the libraries' own names (`from spikingjelly.cext.neuron import ...` names no `cuda`); `from numba import cuda`
    triggers = (r"\b(?:" + "|".join(re.escape(name) for name, library in sorted(
        torch_facts.CUDA_LIBRARIES.items(), key=lambda item: -len(item[0])) if name != "cuda" and not library.kernels)
        + r")\b", r"numba")
    examples = (Example("import apex\n"), Example("import cupy\nx = cupy.cuda.Device(0)\n"))

    def visit_Import(self, m: Migrator, node: cst.Import) -> None:
        self._check(m, node)

    def visit_ImportFrom(self, m: Migrator, node: cst.ImportFrom) -> None:
        self._check(m, node)

    def _check(self, m: Migrator, node: cst.Import | cst.ImportFrom) -> None:
        if any(isinstance(a, cst.If) for a in m.ancestors) or any(
                isinstance(a, cst.Try) and _catches_import_error(a) for a in m.ancestors):
            return  # already guarded: under a check (`elif engine:  # TensorRT`), or in `try: ... except ImportError:`
        for name in _imported(node):
            if (library := torch_facts.cuda_library(name)) is not None and not library.kernels:
                m.report(self.code, node, f"`{name}` is a CUDA-only library; guard it or find a portable alternative")

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if id(node) in m.inner or not dotted_name(node):
            return
        if any(n.startswith(torch_facts.CUDA_LIBRARY_USES) for n in m.qnames(node)):
            m.report(self.code, node, f"`{dotted_name(node)}` uses a CUDA-only library")


class GpuRequired(Rule):
    code = "TP209"
    moves_data = False
    name = "gpu-required"
    summary = "Code that raises when CUDA is missing."
    before = "if not torch.cuda.is_available(): raise RuntimeError()"
    safety, effort = "manual", "low"
    names = _GPU_TESTS
    examples = (Example("import torch\nif not torch.cuda.is_available():\n    raise SystemExit('GPU needed')\n"),)

    def leave_If(self, m: Migrator, node: cst.If, updated: cst.If) -> None:
        """``if not torch.cuda.is_available(): raise ...`` makes the port fail off CUDA (once the visits decided
        whether the guards port it)."""
        test = node.test
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return
        call = _mentions_gpu_test(m, test.expression)
        if call is None or id(call.func) in m.shared.guard_renames:  # ported: it asks the runtime
            return
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in statement.body):
                m.mark_handled(call)
                m.report(self.code, node, "raises when CUDA is missing; the runtime's device works without it")
                return


class MpsFloat64(Rule):
    code = "TP301"
    moves_data = False
    name = "mps-float64"
    summary = "[mps] float64 tensors are not supported on MPS."
    before = "x = x.double()"
    safety, effort = "manual", "medium"
    names = _FLOAT64
    triggers = (r"\bdouble\b", r"\bfloat64\b")
    examples = (Example("import torch\nx = torch.zeros(2, dtype=torch.float64)\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if "mps" in m.targets and id(node) not in m.inner and m.qnames(node) & _FLOAT64:
            m.report(self.code, node, "[mps] float64 is not supported on MPS; use float32 there")

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        func = node.func
        if "mps" in m.targets and isinstance(func, cst.Attribute) and func.attr.value == "double" and not node.args:
            m.report(self.code, node, "[mps] .double() makes float64, which MPS does not support")


class MpsComplex128(Rule):
    code = "TP302"
    moves_data = False
    name = "mps-complex128"
    summary = "[mps] complex128 tensors are not supported on MPS."
    before = "z = torch.zeros(2, dtype=torch.complex128)"
    safety, effort = "manual", "medium"
    names = _COMPLEX128
    examples = (Example("import torch\nz = torch.zeros(2, dtype=torch.complex128)\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if "mps" in m.targets and id(node) not in m.inner and m.qnames(node) & _COMPLEX128:
            m.report(self.code, node, "[mps] complex128 is not supported on MPS; use complex64 there")


_CHECKED_AUTOCASTS = torch_facts.named("autocast")


class CpuFloat16Autocast(Rule):
    code = "TP321"
    moves_data = False
    name = "cpu-float16-autocast"
    summary = "[cpu] float16 autocast on CPU is slow and lacks ops; bfloat16 is CPU autocast's type."
    before = "torch.autocast(tp.device_type(), dtype=torch.float16)"
    safety, effort = "manual", "low"
    triggers = (r"\bautocast\b",)
    examples = (Example("import torch\nwith torch.autocast('cpu', dtype=torch.float16):\n    pass\n"),)

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        names = m.qnames(node.func)
        if "cpu" in m.targets and names & _CHECKED_AUTOCASTS:
            dtype = next((a.value for a in node.args if a.keyword and a.keyword.value == "dtype"), None)
            if dtype is None and len(node.args) > 1 and not (node.args[1].keyword or node.args[1].star):
                dtype = node.args[1].value  # dtype is the second parameter of every autocast
            if dtype is not None and m.qnames(dtype) & {"torch.float16", "torch.half"}:
                m.report(self.code, node, "[cpu] float16 autocast on CPU is slow and lacks ops; bfloat16 is CPU's type")


class UndeclaredRuntimeDependency(Rule):
    """Reported once per project, by the project-level pass (`torchport.pipeline.library`), not per module."""

    code = "TP210"
    moves_data = False
    name = "undeclared-runtime-dependency"
    summary = ("An installable package whose ported modules import torchport.runtime does not depend on torchport "
               "(--add-dependency adds it; vendor or native mode needs none).")
    before = 'pyproject.toml: [project] name = "mylib", dependencies = ["torch"]'
    safety, effort = "manual", "low"
    examples = (Example("from torchport import runtime as tp\n\nx = tp.device()\n"),)
