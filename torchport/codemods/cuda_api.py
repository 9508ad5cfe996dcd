"""`torch.cuda.*` device, stream, event, memory, RNG and NVTX calls; guards; default types; checkpoints.

| Code  | Before                                   | After                              |
|-------|------------------------------------------|------------------------------------|
| TP010 | torch.cuda.synchronize()                 | tp.synchronize()                   |
| TP011 | torch.cuda.Event(enable_timing=True)     | tp.Event(enable_timing=True)       |
| TP012 | torch.cuda.mem_get_info()                | tp.mem_get_info()                  |
| TP013 | torch.cuda.manual_seed_all(0)            | tp.manual_seed_all(0)              |
| TP014 | except torch.cuda.OutOfMemoryError:      | except torch.OutOfMemoryError:     |
| TP015 | x.type(torch.cuda.FloatTensor)           | x.to(tp.device(), torch.float32)   |
| TP016 | torch.cuda.nvtx.range_push("step")       | tp.range_push("step")              |
| TP017 | torch.set_default_tensor_type(torch.cuda.HalfTensor) | tp.set_default_tensor_type(torch.cuda.HalfTensor) |
| TP018 | torch.load(path)                         | torch.load(path, map_location=tp.map_location()) |
| TP101 | torch.cuda.get_arch_list()               | (reported)                         |
| TP109 | if torch.cuda.is_available:              | (reported: a bug)                  |

Every runtime function a rename lands on is, on CUDA, the `torch.cuda` call it replaced.

`torch.cuda.is_available()` and `torch.cuda.device_count()` are rewritten only where `guards` says so.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst
import libcst.matchers as matchers

from torchport.codemods.analysis.names import Imports, ast_chain, own_nodes, qualify
from torchport.codemods.core.base import (
    append_arg,
    dotted_name,
    keyword_arg,
    none_parameter,
    older_torch,
    string_value,
    tried_alone,
)
from torchport.codemods.core.reasons import (
    CUDA_SETTING,
    INDEX_BOOKKEEPING,
    MOVES_TOGETHER,
    QUIET_OFF_CUDA,
    SAVED_HERE,
    SEEDED,
)
from torchport.codemods.core.rule import Example, Rule
from torchport.codemods.unported import cuda_api_rule
from torchport.model import torch_facts
from torchport.model.trees import enclosing_scope, parent_map

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

cuda_tail = torch_facts.cuda_tail


_EMPTY = cst.Module([])


def _lone_call(statement: cst.BaseStatement) -> cst.Call | None:
    """The call that makes up a whole statement line (``torch.manual_seed(0)``), if it is one."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return small.value
    return None


def _dominated(statement: cst.BaseStatement) -> Iterator[cst.BaseStatement]:
    """``statement`` and the statements of the blocks it holds (branches, loops, ``with``, ``try``), not those of
    nested functions or classes, which run later if at all."""
    yield statement
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) or not isinstance(statement, cst.BaseCompoundStatement):
        return
    blocks = [statement.body]
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:
        blocks.append(orelse.body)
        orelse = getattr(orelse, "orelse", None) if isinstance(orelse, cst.If) else None
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    if (final := getattr(statement, "finalbody", None)) is not None:
        blocks.append(final.body)
    for block in blocks:
        if isinstance(block, cst.IndentedBlock):
            for inner in block.body:
                yield from _dominated(inner)


class _Rename(Rule):
    """Renames ``torch.cuda.<name>`` to the runtime's (or torch's) name, by its ``renames``."""

    to_torch = False  # the new name is under torch, not the runtime

    def _lookup(self, m: Migrator, original: cst.CSTNode) -> str | None:
        for name in m.qnames(original):
            tail = cuda_tail(name)
            if tail is not None and tail in self.renames:
                return self.renames[tail]
        return None

    def _rename(self, m: Migrator, original: cst.CSTNode) -> cst.BaseExpression | None:
        new = self._lookup(m, original)
        if new is None or not m.apply(self.code, original):
            return None
        return m.torch_attr(new) if self.to_torch else m.runtime_attr(new)

    def leave_Attribute(self, m: Migrator, original: cst.Attribute,
                        updated: cst.Attribute) -> cst.BaseExpression | None:
        return self._rename(m, original)

    def leave_Name(self, m: Migrator, original: cst.Name, updated: cst.Name) -> cst.BaseExpression | None:
        return self._rename(m, original) if m.is_name(original) else None


_QUERIES = torch_facts.named("available", "count")  # renamed only where the guards say so
_INDEX_CALLS = torch_facts.named("index")


class CudaDeviceApi(_Rename):
    code = "TP010"
    moves_data = False
    name = "cuda-device-api"
    summary = "`torch.cuda` device management becomes the runtime's."
    before, after = "torch.cuda.synchronize()", "tp.synchronize()"
    renames = torch_facts.renames(code)
    names = frozenset(f"torch.cuda.{n}" for n in torch_facts.names_of(code))
    examples = (
        Example("import torch\ntorch.cuda.synchronize()\n", "import torch\ntp.synchronize()\n"),
        Example("import torch\nif torch.cuda.is_available():\n    model.cuda()\n",
                "import torch\nif tp.is_available():\n    model.cuda()\n"),
        # Simple-CenterNet: data brought back to the CPU where the guarded moves sent it to the device
        Example("import torch\nif torch.cuda.is_available():\n    x = x.cuda()\ny = f(x)\n"
                "if torch.cuda.is_available():\n    y = y.cpu()\nprint(y.numpy())\n",
                "import torch\nif tp.is_available():\n    x = x.cuda()\ny = f(x)\nif tp.is_available():\n"
                "    y = y.cpu()\nprint(y.numpy())\n"),
        Example("import torch.multiprocessing as mp\nimport torch\nmp.spawn(main, nprocs=torch.cuda.device_count())\n",
                "import torch.multiprocessing as mp\nimport torch\nmp.spawn(main, nprocs=tp.process_count())\n"),
        Example("import torch\nn = torch.cuda.device_count() // local_world_size\n",
                "import torch\nn = tp.process_count() // local_world_size\n"),
        # a number shared among the devices: CUDA's count of 0 raises ZeroDivisionError (a tensor's `/ 0` is inf)
        Example("import torch\nlr = args.batch_size / 32.0 / torch.cuda.device_count() * args.lr\n"
                "rows = int(batch / torch.cuda.device_count())\nscaled = loss / torch.cuda.device_count()\n",
                "import torch\nlr = args.batch_size / 32.0 / tp.process_count() * args.lr\n"
                "rows = int(batch / tp.process_count())\nscaled = loss / torch.cuda.device_count()\n"),
        # named a process count: a launcher's script divides its batch by it (none off CUDA: ZeroDivisionError)
        Example("import torch\nargs.nprocs = torch.cuda.device_count()\nbatch = args.batch_size // args.nprocs\n",
                "import torch\nargs.nprocs = tp.process_count()\nbatch = args.batch_size // args.nprocs\n"),
        # A scope-correct name: this `synchronize` is a parameter, not torch's.
        Example("from torch.cuda import synchronize\n\n\ndef timer(fn, synchronize=True):\n    return synchronize\n"),
        # A guard of CUDA-only code stays a CUDA guard.
        Example("import torch\nif torch.cuda.is_available():\n    import pynvml\n"),
        Example("import torch\nif torch.cuda.device_count() > 0:\n    torch.cuda.synchronize()\n"),
        # Device indices as keys: off CUDA a tensor's index is None, never the 0 `current_device()` gives there.
        Example("import torch\ndevices = {torch.cuda.current_device(): []}\nfor p in params:\n"
                "    devices[p.device.index].append(p)\n"),
    )

    def _rename(self, m: Migrator, original: cst.CSTNode) -> cst.BaseExpression | None:
        names = m.qnames(original)
        if names & _QUERIES:
            new = m.shared.guard_renames.get(id(original))
            if new is None:
                return None
            return m.runtime_attr(new) if m.apply(self.code, original) else None
        if names & _INDEX_CALLS and _INDEX_BOOKKEEPING.search(m.source):
            m.leave_as_written(self.code, original, INDEX_BOOKKEEPING)
            return None
        return super()._rename(m, original)


# A module that reads tensors' device indices (`p.device.index`) keys data by them: off CUDA they are None.
_INDEX_BOOKKEEPING = torch_facts.text("index_bookkeeping")


class CudaStreamApi(_Rename):
    code = "TP011"
    moves_data = False
    name = "cuda-stream-api"
    summary = "`torch.cuda` streams and events become the runtime's; `x.record_stream(s)` too."
    before, after = "torch.cuda.Event(enable_timing=True)", "tp.Event(enable_timing=True)"
    renames = torch_facts.renames(code)
    names = frozenset(f"torch.cuda.{n}" for n in renames)
    triggers = (r"cuda", r"\brecord_stream\b")
    examples = (
        Example("import torch\ne = torch.cuda.Event(enable_timing=True)\n",
                "import torch\ne = tp.Event(enable_timing=True)\n"),
        Example("import torch\nx.record_stream(torch.cuda.current_stream())\n",
                "import torch\ntp.record_stream(x, tp.current_stream())\n"),
        Example("from torch.cuda import Event\n\n\ndef f(events):\n    for Event in events:\n        print(Event)\n"),
    )

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        func = updated.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "record_stream" and len(updated.args) == 1
                and not updated.args[0].keyword and not updated.args[0].star
                and m.qname_startswith(original.args[0].value, "torch.cuda.")  # a CUDA stream, not another backend's
                and not m.qname_startswith(original.func, "torch.") and m.apply(self.code, original)):
            return m.runtime_call("record_stream", [func.value, updated.args[0].value])
        return None


class CudaMemoryApi(_Rename):
    code = "TP012"
    moves_data = False
    name = "cuda-memory-api"
    summary = ("`torch.cuda` memory calls that raise without CUDA become the runtime's, as does a `memory_stats()` "
               "whose counters are read by key; those that return quietly there (`empty_cache`, the counters) stay.")
    before, after = "torch.cuda.mem_get_info()", "tp.mem_get_info()"
    renames = torch_facts.renames(code)
    names = frozenset(f"torch.cuda.{n}" for n in renames)
    examples = (
        Example("import torch\nfree, total = torch.cuda.mem_get_info()\n",
                "import torch\nfree, total = tp.mem_get_info()\n"),
        Example("import torch\ntorch.cuda.reset_peak_memory_stats()\n", "import torch\ntp.reset_peak_memory_stats()\n"),
        # quiet without CUDA (nothing to empty, counters of 0): nothing changes that matters off CUDA
        Example("import torch\ntorch.cuda.empty_cache()\nprint(torch.cuda.max_memory_allocated() / 2**20)\n"),
        Example("import torch\nprint(len(torch.cuda.memory_stats()))\n"),
        # ... but a counter a test asserts measures the device it runs on (pytorch-grad-cam's leak test)
        Example("import torch\n\n\ndef test_leak():\n    start = torch.cuda.memory_allocated()\n"
                "    assert torch.cuda.memory_allocated() <= start * 1.5\n",
                "import torch\n\n\ndef test_leak():\n    start = tp.memory_allocated()\n"
                "    assert tp.memory_allocated() <= start * 1.5\n"),
        # ... but a counter read by its key raises KeyError off CUDA, where torch's dict is empty
        Example("import torch\nstats = torch.cuda.memory_stats()\nprint(stats['allocated_bytes.all.peak'])\n",
                "import torch\nstats = tp.memory_stats()\nprint(stats['allocated_bytes.all.peak'])\n"),
    )

    def _rename(self, m: Migrator, original: cst.CSTNode) -> cst.BaseExpression | None:
        if m.qnames(original) & _QUIET_MEMORY and not (
                m.qnames(original) & torch_facts.named("counters") and _counters_read(m, m.start(original).line)) \
                and not _asserted(m, m.start(original).line):
            m.leave_as_written(self.code, original, QUIET_OFF_CUDA)
            return None
        return super()._rename(m, original)


def _counters_read(m: Migrator, line: int) -> bool:
    """Whether the ``memory_stats()`` called at ``line`` gives counters read by their key (``stats["num_ooms"]``,
    directly or through the name it is bound to in its scope): off CUDA torch's dict is empty and the read raises
    KeyError, the runtime's reads 0 (distributed-training-guide's ``get_mem_stats``)."""
    if m.syntax is None:
        return False
    parents = parent_map(m.syntax)
    for call in (n for n in ast.walk(m.syntax) if isinstance(n, ast.Call) and n.lineno == line
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "memory_stats"):
        parent = parents.get(id(call))
        if isinstance(parent, ast.Subscript) and parent.value is call and isinstance(parent.slice, ast.Constant):
            return True
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            scope = enclosing_scope(parent, parents)
            name = parent.targets[0].id
            if any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name
                   and isinstance(n.slice, ast.Constant) for n in ast.walk(scope or m.syntax)):
                return True
    return False


def _asserted(m: Migrator, line: int) -> bool:
    """Whether the value of the call at ``line`` is asserted (``assert torch.cuda.memory_allocated() <= limit``, or a
    name bound to it that an ``assert`` of its scope reads): pytorch-grad-cam's leak test, whose port runs it on MPS,
    would compare CUDA's 0 with 0 there; the runtime's counters measure MPS."""
    if m.syntax is None:
        return False
    parents = parent_map(m.syntax)
    for statement in (n for n in ast.walk(m.syntax) if isinstance(n, (ast.Assert, ast.Assign)) and n.lineno == line):
        if isinstance(statement, ast.Assert):
            return True
        names = {t.id for t in statement.targets if isinstance(t, ast.Name)}
        scope = enclosing_scope(statement, parents)
        if names and any(isinstance(n, ast.Name) and n.id in names for a in ast.walk(scope or m.syntax)
                         if isinstance(a, ast.Assert) for n in ast.walk(a.test)):
            return True
    return False


# The memory calls that return quietly without CUDA (measured on torch 2.13's CPU build): churn to port.
_QUIET_MEMORY = frozenset(name for name, api in torch_facts.CUDA_APIS.items()
                          if api.rule == "TP012" and api.off_cuda == "quiet")


# CUDA generator state set or read where the runtime has no equivalent: a module using one keeps every CUDA RNG call
# (reading, seeding and setting state move together, or a tracker draws from the wrong generator off CUDA).
_UNPORTABLE_RNG = torch_facts.UNPORTABLE_RNG
_UNPORTABLE_RNG_TEXT = re.compile("|".join(sorted({name.rsplit(".", 1)[-1] for name in _UNPORTABLE_RNG})))


def _unportable_rng_state(m: Migrator, rule: Rule) -> str | None:
    """Why the module's CUDA RNG calls stay as written (an RNG API with no portable equivalent, and its line),
    else None. Read once per module from CPython's tree."""
    store = m.store(rule)
    if "blocker" not in store:
        store["blocker"] = None
        if m.syntax is not None and _UNPORTABLE_RNG_TEXT.search(m.source):
            for node in ast.walk(m.syntax):
                dotted = ast_chain(node) if isinstance(node, (ast.Attribute, ast.Name)) else None
                found = sorted(qualify(dotted, m.imports) & _UNPORTABLE_RNG) if dotted else []
                if found:
                    line = getattr(node, "lineno", 0)
                    store["blocker"] = (f"the module also handles CUDA RNG state through `{found[0]}` (line "
                                        f"{line}), which has no portable equivalent; its reads, seeds and "
                                        "sets of that state stay together, on CUDA")
                    break
    blocker: str | None = store["blocker"]
    return blocker


_EVERY_DEVICE_STATE = torch_facts.named("every_device_state")


def _restored_in_place(m: Migrator, rule: Rule) -> frozenset[int]:
    """The lines of ``states = torch.cuda.get_rng_state_all()`` and ``torch.cuda.set_rng_state_all(states)`` that
    pair in one function (a fork and restore of every generator: ported, the draws repeat on any device). Others
    store the states (a checkpoint), where a port would feed one backend's state to another's generator."""
    store = m.store(rule)
    if "restored" not in store:
        lines: set[int] = set()
        tree = m.syntax
        functions = [] if tree is None else [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                                                        ast.AsyncFunctionDef))]
        for scope in [] if tree is None else [tree, *functions]:
            got: dict[str, int] = {}
            restored: dict[str, int] = {}
            for node in own_nodes(scope):  # a save in one function and a load in another do not pair
                # the read takes no argument, the set one: the states
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    if isinstance(node.value, ast.Call) and not node.value.args and _called(m, node.value):
                        got[node.targets[0].id] = node.value.func.lineno
                elif isinstance(node, ast.Call) and len(node.args) == 1 and _called(m, node):
                    if isinstance(node.args[0], ast.Name):
                        restored[node.args[0].id] = node.func.lineno
            lines.update(line for name in got.keys() & restored.keys() for line in (got[name], restored[name]))
        store["restored"] = frozenset(lines)
    found: frozenset[int] = store["restored"]
    return found


def _every_device_state(m: Migrator, node: cst.CSTNode) -> bool:
    """Whether ``node`` names ``torch.cuda[.random].get_rng_state_all`` or ``set_rng_state_all``."""
    return any(f"torch.cuda.{cuda_tail(name)}" in _EVERY_DEVICE_STATE for name in m.qnames(node))


def _called(m: Migrator, call: ast.Call) -> bool:
    """Whether ``call`` calls ``torch.cuda[.random].get_rng_state_all`` or ``set_rng_state_all``."""
    dotted = ast_chain(call.func) if isinstance(call.func, (ast.Attribute, ast.Name)) else None
    names = qualify(dotted, m.imports) if dotted else set()
    return any(f"torch.cuda.{cuda_tail(name)}" in _EVERY_DEVICE_STATE for name in names)


_SEEDS = frozenset(torch_facts.cuda_tail(name) for name in torch_facts.named("seed"))
_GLOBAL_SEEDS = torch_facts.named("global_seed")


class CudaRngApi(_Rename):
    code = "TP013"
    moves_data = False
    name = "cuda-rng-api"
    summary = "`torch.cuda` seeds and RNG state become the runtime's."
    before, after = "torch.cuda.manual_seed_all(0)", "tp.manual_seed_all(0)"
    renames = torch_facts.renames(code)
    names = frozenset(f"torch.cuda.{n}" for n in renames)
    examples = (
        Example("import torch\ntorch.cuda.manual_seed_all(0)\n", "import torch\ntp.manual_seed_all(0)\n"),
        # A fork and restore of every device's state moves with the tensors: on the CPU a list of one, the CPU's.
        Example("import torch\nstates = torch.cuda.get_rng_state_all()\ntorch.cuda.random.set_rng_state_all(states)\n",
                "import torch\nstates = tp.get_rng_state_all()\ntp.set_rng_state_all(states)\n"),
        # ... while states a checkpoint stores stay: quiet off CUDA, and no backend's state reaches another's.
        Example("import torch\ndef save(path):\n    torch.save({'cuda': torch.cuda.get_rng_state_all()}, path)\n"
                "def load(path):\n    torch.cuda.set_rng_state_all(torch.load(path)['cuda'])\n"),
        Example("import torch\ndef save(path):\n    states = torch.cuda.get_rng_state_all()\n"
                "    torch.save(states, path)\ndef load(states):\n    torch.cuda.set_rng_state_all(states)\n"),
        # `torch.manual_seed(seed)` already seeds every device, the picked one included.
        Example("import torch\ntorch.manual_seed(seed)\ntorch.cuda.manual_seed_all(seed)\n"),
        Example("import torch\ntorch.manual_seed(seed + 1)\ntorch.cuda.manual_seed_all(seed)\n"),
        Example("import torch\ntorch.random.manual_seed(seed)\ntorch.cuda.random.manual_seed(seed)\n"),
        # ... and it dominates the branches that follow it (honk, TuckER, mcan-vqa).
        Example("import torch\ntorch.manual_seed(seed)\nif torch.cuda.is_available():\n"
                "    torch.cuda.manual_seed_all(seed)\n"),
        Example("import torch\ntorch.manual_seed(s)\nif n < 2:\n    torch.cuda.manual_seed(s)\n"
                "else:\n    torch.cuda.manual_seed_all(s)\n"),
        # A seed in a function defined later runs later, maybe after another seed: it is ported.
        Example("import torch\ntorch.manual_seed(0)\ndef reseed(s):\n    torch.cuda.manual_seed_all(s)\n",
                "import torch\ntorch.manual_seed(0)\ndef reseed(s):\n    tp.manual_seed_all(s)\n"),
        # The state is also set where the runtime cannot follow: reading and seeding stay with it.
        Example("import torch\nstate = torch.cuda.get_rng_state()\ntorch.cuda.manual_seed(seed)\n"
                "torch.cuda.default_generators[0].set_state(state)\n"),
    )

    def _rename(self, m: Migrator, original: cst.CSTNode) -> cst.BaseExpression | None:
        blocker = _unportable_rng_state(m, self)
        if blocker is not None and self._lookup(m, original) is not None:
            m.leave_as_written(self.code, original, MOVES_TOGETHER, blocker)  # portable by itself: not a TP101 either
            return None
        if _every_device_state(m, original) and m.start(original).line not in _restored_in_place(m, self):
            m.leave_as_written(self.code, original, QUIET_OFF_CUDA, "every device's RNG state is a list of none off "
                               "CUDA; kept where it is not restored in the same function (a checkpoint would carry "
                               "one backend's state to another's generator)")
            return None
        return super()._rename(m, original)

    def visit_FunctionDef(self, m: Migrator, node: cst.FunctionDef) -> None:
        """A function that sets or reads generator state through such an API runs only on CUDA: left whole."""
        if _unportable_rng_state(m, self) is None or m.in_skipped_region:
            return
        for found in matchers.findall(node, matchers.Attribute() | matchers.Name()):
            names = m.qnames(found) & _UNPORTABLE_RNG
            if names:
                m.skip_region(node, MOVES_TOGETHER, f"this function handles CUDA generator state through "
                              f"`{min(names)}`, which has no portable equivalent: it runs only on CUDA")
                return

    def visit_IndentedBlock(self, m: Migrator, node: cst.IndentedBlock) -> None:
        self._after_global_seed(m, node.body)

    def visit_Module(self, m: Migrator, node: cst.Module) -> None:
        self._after_global_seed(m, node.body)

    def _after_global_seed(self, m: Migrator, body: Sequence[cst.BaseStatement]) -> None:
        """``torch.cuda.manual_seed[_all](y)`` after ``torch.manual_seed(x)`` in the same block: on CUDA it stays as
        written; elsewhere it seeded nothing, and a port would seed again what ``torch.manual_seed`` seeded (with
        ``y``, where the program gave that generator ``x``)."""
        seeded: str | None = None
        for statement in body:
            call = _lone_call(statement)
            if call is not None and len(call.args) == 1 and m.qnames(call.func) & _GLOBAL_SEEDS:
                seeded = _EMPTY.code_for_node(call.args[0].value)
                continue
            if seeded is None:
                continue
            # The global seed dominates what follows, inside branches and blocks too (`if cuda: ...seed(s)`).
            for inner in _dominated(statement):
                call = _lone_call(inner)
                if call is not None and len(call.args) == 1 and any(
                        torch_facts.cuda_tail(name) in _SEEDS for name in m.qnames(call.func)):
                    m.skip_region(inner, SEEDED, f"torch.manual_seed({seeded}) above already seeds every device")


class CudaOomError(_Rename):
    code = "TP014"
    moves_data = False
    name = "cuda-oom-error"
    summary = "`torch.cuda.OutOfMemoryError` is `torch.OutOfMemoryError`."
    before, after = "except torch.cuda.OutOfMemoryError:", "except torch.OutOfMemoryError:"
    renames = torch_facts.renames(code)
    names = frozenset(f"torch.cuda.{n}" for n in renames)
    to_torch = True
    examples = (Example("import torch\ntry:\n    f()\nexcept torch.cuda.OutOfMemoryError:\n    pass\n",
                        "import torch\ntry:\n    f()\nexcept torch.OutOfMemoryError:\n    pass\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> bool:
        if self._lookup(m, node) is not None:
            older_torch(m, node, (2, 5), "torch.OutOfMemoryError")
        return True


LEGACY_TYPES = torch_facts.LEGACY_TYPES


def legacy_dtype(m: Migrator, node: cst.CSTNode) -> str | None:
    """The dtype of ``torch.cuda.FloatTensor`` & co (or their names as strings), else None."""
    text = string_value(node)
    names = {text} if text else m.qnames(node)
    if isinstance(node, cst.Name) and (named := _type_names(m).get(node.value)) is not None:
        return named
    for name in names:
        if name.startswith("torch.cuda.") and name[len("torch.cuda."):] in LEGACY_TYPES:
            return LEGACY_TYPES[name[len("torch.cuda."):]]
    return None


class CudaLegacyTensorType(Rule):
    code = "TP015"
    moves_data = False
    places_data = True
    name = "cuda-legacy-tensor-type"
    summary = "Legacy `torch.cuda.FloatTensor` and friends become a dtype on the runtime device."
    before, after = "x.type(torch.cuda.FloatTensor)", "x.to(tp.device(), torch.float32)"
    names = frozenset(f"torch.cuda.{n}" for n in LEGACY_TYPES)
    triggers = ("cuda", r"\.type\(\s*\w+\s*\)")  # `.type(dtype)` of a name bound to a CUDA type
    examples = (
        Example("import torch\ny = x.type(torch.cuda.FloatTensor)\n",
                "import torch\ny = x.to(tp.device(), torch.float32)\n"),
        # moved, then cast: one call casts as it moves (MHFormer's float64 batches would meet MPS first)
        Example("import torch\ny = x.contiguous().cuda().type(torch.cuda.FloatTensor)\n",
                "import torch\ny = x.contiguous().to(tp.device(), torch.float32)\n", with_rules=("TP001",)),
        Example("import torch\nt = torch.cuda.LongTensor([1, 2])\n",
                "import torch\nt = torch.tensor([1, 2], dtype=torch.int64, device=tp.device())\n"),
        # two or more arguments are sizes (fairseq's `th.cuda.FloatTensor(n_chunk, 512).fill_(0)`)
        Example("import torch\nt = torch.cuda.FloatTensor(n, 512).fill_(0)\n",
                "import torch\nt = torch.empty(n, 512, dtype=torch.float32, device=tp.device()).fill_(0)\n"),
        # one argument given as an `out=` buffer is its size
        Example("import torch\nids = torch.arange(0, n, out=torch.cuda.LongTensor(n))\n",
                "import torch\nids = torch.arange(0, n, out=torch.empty(n, dtype=torch.int64, device=tp.device()))\n"),
        # one argument may be data or a size: left, and reported (TP101)
        Example("import torch\nt = torch.cuda.ByteTensor(n)\n"),
        # a name for the type, read only by `.type(...)`: each is a move (deep-image-prior's notebooks)
        Example("import torch\ndtype = torch.cuda.FloatTensor\nnet = net.type(dtype)\nx = noise().type(dtype)\n",
                "import torch\ndtype = torch.cuda.FloatTensor\nnet = net.to(tp.device(), torch.float32)\n"
                "x = noise().to(tp.device(), torch.float32)\n"),
        Example("import torch\nif big:\n    dtype = torch.cuda.FloatTensor\nelse:\n    dtype = torch.cuda.FloatTensor\n"
                "y = x.type(dtype)\n",
                "import torch\nif big:\n    dtype = torch.cuda.FloatTensor\nelse:\n    dtype = torch.cuda.FloatTensor\n"
                "y = x.to(tp.device(), torch.float32)\n"),
        # ... or to one of two types: the name's `.dtype` says which (YOLOX's evaluators)
        Example("import torch\ntensor_type = torch.cuda.HalfTensor if half else torch.cuda.FloatTensor\n"
                "imgs = imgs.type(tensor_type)\n",
                "import torch\ntensor_type = torch.cuda.HalfTensor if half else torch.cuda.FloatTensor\n"
                "imgs = imgs.to(tp.device(), tensor_type.dtype)\n"),
        # ... also made with it, or bound to another type, or the name of a parameter or loop variable: left
        Example("import torch\ndtype = torch.cuda.FloatTensor\nnet = net.type(dtype)\nx = dtype(3)\n"),
        Example("import torch\ndtype = torch.cuda.FloatTensor\ndtype = torch.cuda.HalfTensor\ny = x.type(dtype)\n"),
        Example("import torch\ndtype = torch.cuda.FloatTensor\nnet = net.type(dtype)\n\n\ndef cast(x, dtype):\n"
                "    return x.type(dtype)\n"),
        Example("import torch\ndtype = torch.cuda.FloatTensor\nys = [x.type(dtype) for dtype in kinds]\n"),
    )

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        ("""``torch.cuda.FloatTensor([1, 2])`` -> ``torch.tensor(...)``; """
         """``x.type(torch.cuda.FloatTensor)`` -> ``x.to(...)``.""")
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "type" and len(original.args) == 1:
            dtype = legacy_dtype(m, original.args[0].value)
            if dtype is None or not m.apply(self.code, original.args[0].value):
                return None
            moved = func.value  # `x.cuda().type(torch.cuda.FloatTensor)`, its move made `x.to(tp.device())` (TP001):
            if isinstance(moved, cst.Call) and isinstance(moved.func, cst.Attribute) \
                    and moved.func.attr.value == "to" and len(moved.args) == 1 and not moved.args[0].keyword \
                    and isinstance(target := moved.args[0].value, cst.Call) \
                    and m.runtime_call_name(target) == "device" and not target.args:
                func = func.with_changes(value=moved.func.value)  # one cast and move: a float64 batch never meets MPS
            cast = cst.Attribute(updated.args[0].value, cst.Name("dtype")) if dtype == CHOSEN_TYPE else \
                m.torch_attr(dtype)
            return updated.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[
                cst.Arg(m.runtime_call("device", [])), cst.Arg(cast)])
        dtype = legacy_dtype(m, original.func)
        if dtype is None or dtype == CHOSEN_TYPE or any(a.keyword or a.star for a in updated.args):
            return None
        values = [a.value for a in updated.args]
        if len(values) == 1 and isinstance(values[0], (cst.List, cst.Tuple)):
            factory = "tensor"
        elif all(isinstance(v, cst.Integer) for v in values) or len(values) >= 2 or _out_buffer(m, original):
            # two or more arguments are sizes (data is one); so is one of a buffer given as `out=`, which the
            # call resizes anyway (Tacotron 2's `torch.arange(0, n, out=torch.cuda.LongTensor(n))`)
            factory, values = "empty", values or [cst.Integer("0")]
        else:
            return None  # data or size? torchport cannot tell; TP101 reports it
        if not m.apply(self.code, original):
            return None
        return cst.Call(func=m.torch_attr(factory), args=[
            *(cst.Arg(v) for v in values), keyword_arg("dtype", m.torch_attr(dtype)),
            keyword_arg("device", m.runtime_call("device", []))])


def _type_names(m: Migrator) -> dict[str, str]:
    """Names bound only to one legacy CUDA tensor type and read only as the argument of ``.type(...)``
    (deep-image-prior's ``dtype = torch.cuda.FloatTensor``, then ``net.type(dtype)``), by name -> its dtype
    (`CHOSEN_TYPE` for one of two: ``torch.cuda.HalfTensor if half else torch.cuda.FloatTensor``): each such
    ``.type(name)`` is a move, as ``.type(torch.cuda.FloatTensor)`` is."""
    store = m.shared.type_names
    if store is None:
        store = m.shared.type_names = {}
        if m.syntax is not None and "Tensor" in m.source:
            typed: dict[int, str | None] = {}  # `dtype = torch.cuda.FloatTensor`: its target -> the dtype
            for node in ast.walk(m.syntax):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    chosen = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else []
                    found = [_legacy_name(m, value) for value in chosen or [node.value]]
                    # one of two types (YOLOX's `torch.cuda.HalfTensor if half else torch.cuda.FloatTensor`): the
                    # name's own `.dtype` says which
                    typed[id(node.targets[0])] = (CHOSEN_TYPE if all(found) else None) if chosen else found[0]
            bound: dict[str, list[str | None]] = {}  # every binding of a name, anywhere: a parameter named `dtype`
            for node in ast.walk(m.syntax):         # of one function is another value
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                    bound.setdefault(node.id, []).append(typed.get(id(node)))
                elif isinstance(node, ast.arg):
                    bound.setdefault(node.arg, []).append(None)
                elif isinstance(node, ast.alias):
                    bound.setdefault((node.asname or node.name).split(".")[0], []).append(None)
            candidates = {name: kinds[0] for name, kinds in bound.items() if kinds[0] and len(set(kinds)) == 1}
            if candidates:
                as_type = {id(c.args[0]) for c in ast.walk(m.syntax) if isinstance(c, ast.Call) and len(c.args) == 1
                           and not c.keywords and isinstance(c.func, ast.Attribute) and c.func.attr == "type"}
                for node in ast.walk(m.syntax):
                    if isinstance(node, ast.Name) and node.id in candidates and isinstance(node.ctx, ast.Load) \
                            and id(node) not in as_type:
                        candidates.pop(node.id)
                store.update(candidates)
    return store


CHOSEN_TYPE = "*"  # `_type_names`: a name bound to one of two legacy CUDA types, whose `.dtype` says which


def _legacy_name(m: Migrator, value: ast.expr) -> str | None:
    """The dtype of ``value`` (CPython's tree) where it names a legacy CUDA tensor type, else None."""
    dotted = ast_chain(value)
    kinds = [q[len("torch.cuda."):] for q in (qualify(dotted, m.imports) if dotted else ())
             if q.startswith("torch.cuda.")]
    return next((LEGACY_TYPES.get(k) for k in kinds), None)


def _out_buffer(m: Migrator, node: cst.Call) -> bool:
    """Whether ``node`` is the value of an ``out=`` argument."""
    parent = next((a for a in reversed(m.ancestors) if a is not node), None)
    return isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "out"


class CudaNvtx(_Rename):
    code = "TP016"
    moves_data = False
    name = "cuda-nvtx"
    summary = "NVTX ranges stay NVTX ranges on CUDA and become profiler ranges (`record_function`) elsewhere."
    before, after = 'torch.cuda.nvtx.range_push("step")', 'tp.range_push("step")'
    renames = torch_facts.renames(code)
    names = frozenset(f"torch.cuda.{n}" for n in renames)
    examples = (
        Example('import torch\ntorch.cuda.nvtx.range_push("step")\n', 'import torch\ntp.range_push("step")\n'),
        Example('import torch\nwith torch.cuda.nvtx.range("fwd"):\n    pass\n',
                'import torch\nwith tp.range("fwd"):\n    pass\n'),
    )


class DefaultTensorType(Rule):
    code = "TP017"
    moves_data = False
    places_data = True
    name = "default-tensor-type"
    summary = ("`torch.set_default_tensor_type` with a CUDA type sets the dtype and the runtime device; the CPU "
               "types that undo it go through the runtime too.")
    before, after = ("torch.set_default_tensor_type(torch.cuda.HalfTensor)",
                     "tp.set_default_tensor_type(torch.cuda.HalfTensor)")
    names = frozenset({"torch.set_default_tensor_type"})
    examples = (
        Example("import torch\ntorch.set_default_tensor_type(torch.cuda.HalfTensor)\nm = M()\n"
                "torch.set_default_tensor_type(torch.FloatTensor)\n",
                "import torch\ntp.set_default_tensor_type(torch.cuda.HalfTensor)\nm = M()\n"
                "tp.set_default_tensor_type(torch.FloatTensor)\n"),
        Example("import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\n"),
    )

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        # tp.set_default_tensor_type(torch.cuda.HalfTensor) is this rule's own output: its type is no finding.
        ours = m.runtime_call_name(node) == "set_default_tensor_type"
        if (ours or m.has_qname(node.func, "torch.set_default_tensor_type")) and len(node.args) == 1:
            if legacy_dtype(m, node.args[0].value) is not None:
                m.store(self)["cuda"] = True
                m.mark_handled(node.args[0].value)

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        if not (m.has_qname(original.func, "torch.set_default_tensor_type") and len(original.args) == 1):
            return None
        if not m.store(self).get("cuda") or not m.apply(self.code, original):
            return None
        if legacy_dtype(m, original.args[0].value) is not None:  # a CUDA type: new tensors go to the runtime's
            m.fact("moves", original)  # device, so a program MPS cannot run gets its call (nerf-pytorch's train)
        return updated.with_changes(func=m.runtime_attr("set_default_tensor_type"))


def _mapped_on_failure(m: Migrator) -> bool:
    """Whether the ``torch.load`` being left is alone in a ``try`` whose handler of what it raises off CUDA loads
    again with a ``map_location`` (torch_seq2rec's ``except: torch.load(p, map_location=lambda s, loc: s)``): the
    author's fallback already restores it off CUDA, and where the code after it expects."""
    found = tried_alone(m)
    return found is not None and any(
        isinstance(n, cst.Call) and m.has_qname(n.func, "torch.load") and any(
            (a.keyword is not None and a.keyword.value == "map_location") or (a.keyword is None and i == 1)
            for i, a in enumerate(n.args))
        for h in found[1] for n in matchers.findall(h.body, matchers.Call()))


class LoadMapLocation(Rule):
    code = "TP018"
    moves_data = True  # where loaded tensors go: with a held choice, they stay where it keeps the rest
    name = "load-map-location"
    summary = ("`torch.load` of a checkpoint saved on a GPU restores it where it was saved on CUDA and on the "
               "runtime device elsewhere.")
    before, after = "torch.load(path)", "torch.load(path, map_location=tp.map_location())"
    names = frozenset({"torch.load"})
    triggers = (r"\.load\b",)
    examples = (
        Example("# runs on CUDA\nimport torch\nstate = torch.load(path)\n",
                "# runs on CUDA\nimport torch\nstate = torch.load(path, map_location=tp.map_location())\n"),
        Example("import torch\nstate = torch.load(path, map_location={'cuda:1': 'cuda:0'})\n",
                "import torch\nstate = torch.load(path, map_location=tp.map_location({'cuda:1': 'cuda:0'}))\n"),
        Example("import torch\nstate = torch.load(path, map_location='cpu')\n"),
        Example("import torch\nstate = torch.load(path, map_location=lambda s, loc: s.cuda(rank))\n",
                "import torch\nstate = torch.load(path, map_location=tp.device(rank))\n"),
        Example("import torch\nstate = torch.load(path, map_location=lambda s, loc: s.cuda(loc))\n",
                "import torch\nstate = torch.load(path, map_location=tp.map_location(lambda s, loc: s.cuda(loc)))\n"),
        Example("import torch\nmap_location = {'cuda:%d' % 0: 'cuda:%d' % rank}\n"
                "state = torch.load(path, map_location=map_location)\n",
                "import torch\nmap_location = tp.map_location({'cuda:%d' % 0: 'cuda:%d' % rank})\n"
                "state = torch.load(path, map_location=map_location)\n"),
        Example("import torch\nstate = torch.load(path, map_location=device)\n"),
        # a parameter whose default is None: a caller that leaves it out loads CUDA storages where they were saved
        Example("# runs on CUDA\nimport torch\n\n\ndef load(path, map_location=None):\n"
                "    return torch.load(path, map_location=map_location)\n",
                "# runs on CUDA\nimport torch\n\n\ndef load(path, map_location=None):\n"
                "    return torch.load(path, map_location=tp.map_location(map_location))\n"),
        Example("import torch\ntorch.save(model.state_dict(), 'best.pkl')\nstate = torch.load('best.pkl')\n"),
        # tgn: the best epoch's checkpoint, saved by this run (a later line of the loop ran in an earlier round)
        Example("# runs on CUDA\nimport torch\n\n\ndef train(model, epochs, best):\n    for epoch in range(epochs):\n"
                "        if epoch == 3:\n            path = path_of(best)\n"
                "            model.load_state_dict(torch.load(path))\n"
                "        torch.save(model.state_dict(), path_of(epoch))\n"),
        # ... not a file another join of the same folder names
        Example("# runs on CUDA\nimport os\nimport torch\n\n\ndef train(model, d):\n"
                "    torch.save(model.state_dict(), os.path.join(d, 'last.pt'))\n"
                "    model.load_state_dict(torch.load(os.path.join(d, 'pretrained.pt')))\n",
                "# runs on CUDA\nimport os\nimport torch\n\n\ndef train(model, d):\n"
                "    torch.save(model.state_dict(), os.path.join(d, 'last.pt'))\n"
                "    model.load_state_dict(torch.load(os.path.join(d, 'pretrained.pt'), "
                "map_location=tp.map_location()))\n"),
        # a cache the function writes itself where it places nothing on a device (radtts' attention priors)
        Example("import os\nimport torch\n\n\ndef prior(path, n):\n    if os.path.exists(path):\n"
                "        return torch.load(path)\n    p = torch.ones(n)\n    torch.save(p, path)\n    return p\n"),
        # ... one that moves what it caches may have saved it from the GPU
        Example("# runs on CUDA\nimport os\nimport torch\n\n\ndef prior(path, n, device):\n"
                "    if os.path.exists(path):\n        return torch.load(path)\n    p = torch.ones(n).to(device)\n"
                "    torch.save(p, path)\n    return p\n",
                "# runs on CUDA\nimport os\nimport torch\n\n\ndef prior(path, n, device):\n"
                "    if os.path.exists(path):\n        return torch.load(path, map_location=tp.map_location())\n"
                "    p = torch.ones(n).to(device)\n    torch.save(p, path)\n    return p\n"),
        # torch_seq2rec: the author's fallback loads onto the CPU where the first load fails
        Example("# runs on CUDA\nimport torch\ntry:\n    state = torch.load(path)\nexcept:\n"
                "    state = torch.load(path, map_location=lambda s, loc: s)\n"),
        Example("# runs on CUDA\nimport torch\nstate = torch.load(\n    path\n)\n",
                "# runs on CUDA\nimport torch\n"
                "state = torch.load(\n    path,\n    map_location=tp.map_location()\n)\n"),
        Example("# runs on CUDA\nimport torch\nstate = torch.load(\n    path,\n)\n",
                "# runs on CUDA\nimport torch\n"
                "state = torch.load(\n    path,\n    map_location=tp.map_location(),\n)\n"),
    )

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        """A CUDA mapping given to ``torch.load`` is wrapped whole: the code inside it stays as it is (it is
        what runs on CUDA), and its strings are not reported."""
        if not m.has_qname(node.func, "torch.load"):
            return
        for index, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "map_location" or (keyword is None and index == 1):
                if _names_cuda_mapping(arg.value) or m.runtime_call_name(arg.value) == "map_location":
                    self._leave_alone(m, arg.value)  # the second form: a port's own output

    def _leave_alone(self, m: Migrator, node: cst.BaseExpression) -> None:
        m.skip_region(node, CUDA_SETTING)
        strings = _Strings()
        node.visit(strings)
        for string in strings.found:
            m.handled.add(id(string))

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        if not any(isinstance(t.target, cst.Name) and t.target.value == "map_location" for t in node.targets):
            return
        if _names_cuda_mapping(node.value):
            self._leave_alone(m, node.value)
            m.store(self)[id(node.value)] = True
        elif m.runtime_call_name(node.value) == "map_location":
            self._leave_alone(m, node.value)

    def leave_Assign(self, m: Migrator, original: cst.Assign, updated: cst.Assign) -> cst.Assign | None:
        """``map_location = {"cuda:0": ...}``, later given to ``torch.load``."""
        if id(original.value) not in m.store(self) or not m.apply(self.code, original.value):
            return None
        return updated.with_changes(value=m.runtime_call("map_location", [updated.value]))

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        if not m.has_qname(original.func, "torch.load") or any(a.star for a in original.args):
            return None
        for index, (old, arg) in enumerate(zip(original.args, updated.args)):
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "map_location" or (keyword is None and index == 1):
                if not (_names_cuda_mapping(old.value) or none_parameter(m, old.value)) \
                        or not m.apply(self.code, old.value):
                    return None
                args = list(updated.args)
                moved = _storages_moved_to(old.value)
                # `lambda storage, loc: storage.cuda(device_id)` moves every storage to one CUDA device: that device
                # is the mapping (the runtime's callable wrapper would still call `.cuda` off CUDA)
                args[index] = arg.with_changes(value=m.runtime_call("device", moved) if moved is not None else
                                               m.runtime_call("map_location", [arg.value]))
                return updated.with_changes(args=args)
        if not updated.args or updated.args[0].keyword is not None:
            return None
        if self._saved_here(m, original):
            m.leave_as_written(self.code, original, SAVED_HERE)
            return None
        if _mapped_on_failure(m):
            return None
        if not m.apply(self.code, original):
            return None
        if _into_state_dict(m) or _bound_for_state_dict(m, m.start(original).line):
            m.fact("state_loads", original)  # copied into the module's own tensors: wherever they are
        return append_arg(updated, keyword_arg("map_location", m.runtime_call("map_location", [])))

    def _saved_here(self, m: Migrator, call: cst.Call) -> bool:
        """Whether the scope around ``call`` (a ``torch.load``) saved to the same path expression on an earlier line,
        in the same run: the checkpoint holds tensors where this run keeps them."""
        store = m.store(self)
        if "saves" not in store:
            store["saves"] = _saves(m.syntax, m.imports) if m.syntax is not None else []
        line = m.start(call).line
        scopes = [scope for scope in store["saves"] if scope[0] <= line <= scope[1]]
        if not scopes:
            return False
        first, last, saved, places = min(scopes, key=lambda s: s[1] - s[0])  # the innermost function around it
        try:
            target = ast.unparse(ast.parse(cst.Module([]).code_for_node(call.args[0].value).strip(), mode="eval"))
        except SyntaxError:
            return False
        targets = {target}
        if isinstance(call.args[0].value, cst.Name) and m.syntax is not None:  # `best = path_of(epoch)`, then loaded
            targets.update(ast.unparse(n.value) for n in ast.walk(m.syntax) if isinstance(n, ast.Assign)
                           and first <= n.lineno < line and [ast.unparse(t) for t in n.targets] == [target])
        if _written_by_trainer(m.syntax, m.imports, target, first, line):
            return True
        makers = {maker for t in targets if (maker := _path_maker(t))}
        loops = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(m.syntax) if isinstance(n, (ast.For, ast.While))
                 and n.lineno <= line <= (n.end_lineno or n.lineno)] if m.syntax is not None else []

        def earlier(at: int) -> bool:  # a save later in the loop around the load ran in an earlier round
            return at < line or any(start <= at <= end for start, end in loops)

        # saved earlier in this run, to the same path or one the same function of the path names (tgn's
        # `get_checkpoint_path(epoch)`, then `get_checkpoint_path(best_epoch)`); or a cache the function writes when
        # the file is missing (radtts' `if os.path.exists(p): x = torch.load(p) else: x = f(); torch.save(x, p)`),
        # where it places nothing on a device
        return any((path in targets or makers and _path_maker(path) in makers) and (earlier(at) or not places)
                   for at, path in saved)


def _written_by_trainer(tree: ast.Module | None, imports: Imports, target: str, first: int, line: int) -> bool:
    """Whether ``target`` (a loaded path's source) is ``<name>.best_model_path`` (or ``last_model_path``) of a
    Lightning ``ModelCheckpoint`` bound to ``<name>`` between lines ``first`` and ``line`` (asteroid's recipes:
    ``checkpoint = ModelCheckpoint(...)``, ``trainer.fit(...)``, ``torch.load(checkpoint.best_model_path)``): the
    run's own trainer wrote it, with its tensors where this run keeps them."""
    owner, _, attr = target.rpartition(".")
    if tree is None or attr not in ("best_model_path", "last_model_path") or not owner.isidentifier():
        return False
    return any(isinstance(n, ast.Assign) and first <= n.lineno < line and [ast.unparse(t) for t in n.targets] == [owner]
               and isinstance(n.value, ast.Call) and any(name.endswith(".ModelCheckpoint") and "lightning" in name
                                                          for name in qualify(ast_chain(n.value.func) or "", imports))
               for n in ast.walk(tree))


def _path_maker(source: str) -> str | None:
    """The function a path expression calls to make the path (``get_checkpoint_path`` of
    ``get_checkpoint_path(epoch)``), or None."""
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    return ast.unparse(node.func) if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) \
        and not (isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "format")) else None


def _runtime_map(value: ast.expr) -> bool:
    """``tp.map_location()``: a port's own map, which places nothing (a second run reads the first one's output)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "map_location"


def _saves(tree: ast.Module, imports: Imports) -> list[tuple[int, int, list[tuple[int, str]], bool]]:
    """Per scope (the module, each function), its span, its ``torch.save`` calls (line, the path's source,
    normalised by `ast.unparse`), and whether it places anything on a device (``.cuda()``, ``.to(...)``,
    ``device=``)."""
    scopes = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in [tree, *functions]:
        saved = []
        places = False
        nodes = list(ast.iter_child_nodes(scope))
        while nodes:
            node = nodes.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            nodes.extend(ast.iter_child_nodes(node))
            places = places or isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "to")
                or any(k.arg in ("device", "map_location") and not _runtime_map(k.value) for k in node.keywords))
            if isinstance(node, ast.Call) and "torch.save" in qualify(ast_chain(node.func) or "", imports):
                path = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "f"), None)
                if path is not None:
                    saved.append((node.lineno, ast.unparse(path)))
        first, last = (1, 10**9) if isinstance(scope, ast.Module) else (scope.lineno, scope.end_lineno or scope.lineno)
        scopes.append((first, last, saved, places))
    return scopes


def _into_state_dict(m: Migrator) -> bool:
    """Whether the call being left is given to ``load_state_dict`` (``m.load_state_dict(torch.load(p)["model"])``),
    which copies the tensors into the module's own, on its device."""
    for node in reversed(m.ancestors):
        if isinstance(node, cst.Call):
            return isinstance(node.func, cst.Attribute) and node.func.attr.value == "load_state_dict"
        if not isinstance(node, (cst.Arg, cst.Subscript, cst.SubscriptElement, cst.Index)):
            return False
    return False


def _bound_for_state_dict(m: Migrator, line: int) -> bool:
    """Whether the statement at ``line`` binds one name (``model_dict = util.transfer(self.model,
    torch.load(path))``, openpose's ``Body``) that its function reads only as what it gives ``load_state_dict``: the
    loaded tensors are copied into the module's own, wherever they are."""
    if m.syntax is None:
        return False
    scope = next((f for f in ast.walk(m.syntax) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and f.lineno < line <= (f.end_lineno or f.lineno)), m.syntax)
    bound = next((s for s in ast.walk(scope) if isinstance(s, ast.Assign) and s.lineno == line), None)
    if bound is None or len(bound.targets) != 1 or not isinstance(name := bound.targets[0], ast.Name):
        return False
    given = {id(a) for c in ast.walk(scope) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
             and c.func.attr == "load_state_dict" for a in c.args}
    reads = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Load)]
    return bool(reads) and all(id(n) in given for n in reads)


class _Strings(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.CSTNode] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.found.append(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.found.append(node)


def _storages_moved_to(node: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The arguments of ``.cuda(...)`` where ``node`` is ``lambda storage, loc: storage.cuda(...)``, each argument
    naming neither parameter (``s.cuda(rank)``: every storage goes to CUDA device ``rank``); else None."""
    if not isinstance(node, cst.Lambda) or len(node.params.params) != 2 or not isinstance(node.body, cst.Call):
        return None
    func, first = node.body.func, node.params.params[0].name.value
    if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda" and isinstance(func.value, cst.Name)
            and func.value.value == first) or len(node.body.args) > 1 or any(a.keyword or a.star
                                                                              for a in node.body.args):
        return None
    params = {p.name.value for p in node.params.params}
    if any(cst.ensure_type(n, cst.Name).value in params
           for a in node.body.args for n in matchers.findall(a.value, matchers.Name())):
        return None
    return [a.value for a in node.body.args]


def _names_cuda_mapping(node: cst.BaseExpression) -> bool:
    """A ``map_location`` dict or callable that mentions CUDA devices (plain strings are TP002's)."""
    if not isinstance(node, (cst.Dict, cst.Lambda)):
        return False
    text = cst.Module([]).code_for_node(node)
    return "cuda" in text


class CudaApiUnported(Rule):
    code = "TP101"
    moves_data = False
    name = "cuda-api-unported"
    summary = "A `torch.cuda` API with no portable equivalent; left unchanged."
    before = "torch.cuda.get_arch_list()"
    safety, effort = "manual", "medium"
    triggers = (r"cuda",)
    examples = (Example("import torch\narch = torch.cuda.get_arch_list()\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if id(node) not in m.inner:
            self._collect(m, node)
        names = m.qnames(node)
        if any(n == "torch.version.cuda" or n.startswith("torch.version.cuda.") for n in names) \
                and id(node) not in m.inner:
            m.report(self.code, node, "`torch.version.cuda` is None on builds without CUDA; left unchanged")

    def visit_Name(self, m: Migrator, node: cst.Name) -> None:
        if id(node) not in m.inner and m.is_name(node):
            self._collect(m, node)

    def _collect(self, m: Migrator, node: cst.CSTNode) -> None:
        if dotted_name(node) is None:  # a chain through a call, e.g. current_stream().wait_stream
            return
        for name in m.qnames(node):
            if name == "torch.cuda" or name.startswith("torch.cuda."):
                m.store(self).setdefault("refs", []).append((node, name, m.region_reason))
                m.remember_statement(node)
                return

    def finish(self, m: Migrator, module: cst.Module) -> None:
        for node, name, skipped in m.store(self).get("refs", ()):
            if id(node) in m.handled:
                continue
            code = cuda_api_rule(name) if name != "torch.cuda" else None
            if code is not None:
                m.report(code, node, f"`{name}`: {m.rule_summary(code)}")
            elif skipped is not None:
                m.report("TP110", node, f"`{name}` left as written: {skipped}")
            elif name == "torch.cuda":
                m.report(self.code, node, "`torch.cuda` used as an object has no portable equivalent; left unchanged")
            else:
                m.report(self.code, node, f"`{name}` has no portable equivalent in torchport.runtime; left unchanged")


class IsAvailableNotCalled(Rule):
    code = "TP109"
    moves_data = False
    name = "is-available-not-called"
    summary = "`torch.cuda.is_available` without a call is always true: a bug."
    before = "if torch.cuda.is_available:"
    safety, effort = "manual", "low"
    names = torch_facts.named("available")
    examples = (Example("import torch\nif torch.cuda.is_available:\n    pass\n"),)

    def visit_Attribute(self, m: Migrator, node: cst.Attribute) -> None:
        if id(node) not in m.called and id(node) not in m.inner and m.qnames(node) & self.names:
            m.mark_handled(node)
            m.report(self.code, node, "`torch.cuda.is_available` without a call is always true: call it")

