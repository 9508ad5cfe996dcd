"""Pinned host memory: exists on CUDA and XPU only; a CPU-only `Tensor.pin_memory()` raises.

A DataLoader's ``pin_memory=True`` is left alone: off CUDA and XPU the DataLoader itself turns pinning off
(with a warning), so a rewrite would change nothing. So is pinning that is the whole body of a ``try`` whose
handlers catch what it raises and do nothing (ffcv's ``try: x = x.pin_memory()`` / ``except: pass``): off CUDA the
original already keeps the tensor unpinned.

| Code  | Before                                   | After                                              |
|-------|------------------------------------------|----------------------------------------------------|
| TP040 | torch.empty(n, pin_memory=True)          | torch.empty(n, pin_memory=tp.pin_memory_available()) |
| TP041 | batch = batch.pin_memory()               | batch = tp.pin_memory(batch)                       |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods.core.base import dotted_name, tried_alone
from torchport.codemods.core.rule import Example, Rule

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator


def _pinned_anyway(m: Migrator) -> bool:
    """Whether the call being left is in the one statement of a ``try`` body whose every handler catches what
    pinning raises without CUDA (bare, ``Exception``, ``RuntimeError``) and only passes: off CUDA the original
    already goes on unpinned, as the runtime's pinning would."""
    found = tried_alone(m)
    return found is not None and len(found[1]) == len(found[0].handlers) and all(
        isinstance(h.body, cst.IndentedBlock) and all(
            isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, cst.Pass) for x in s.body)
            for s in h.body.body) for h in found[1])


class PinMemoryFlag(Rule):
    code = "TP040"
    moves_data = False
    name = "pin-memory-flag"
    summary = "`pin_memory=True` in a torch tensor factory, which raises on a CPU-only machine, pins only where it can."
    before, after = "torch.empty(n, pin_memory=True)", "torch.empty(n, pin_memory=tp.pin_memory_available())"
    triggers = (r"\bpin_memory\b",)
    replaces = False
    examples = (
        Example("# runs on CUDA\nimport torch\nbuf = torch.empty(4, pin_memory=True)\n",
                "# runs on CUDA\nimport torch\nbuf = torch.empty(4, pin_memory=tp.pin_memory_available())\n"),
        # The DataLoader turns pinning off by itself where it cannot pin.
        Example("# runs on CUDA\nimport torch\nloader = torch.utils.data.DataLoader(ds, pin_memory=True)\n"),
        Example("# runs on CUDA\nloader = make_loader(ds, pin_memory=True)\n"),
        # Off CUDA the original already goes on with an unpinned buffer.
        Example("# runs on CUDA\nimport torch\ntry:\n    buf = torch.empty(4, pin_memory=True)\n"
                "except RuntimeError:\n    pass\n"),
    )

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        """``torch.empty(n, pin_memory=True)`` -> ``pin_memory=tp.pin_memory_available()``."""
        names = m.qnames(original.func)
        if not any(n.startswith("torch.") and not n.endswith("DataLoader") for n in names) or _pinned_anyway(m):
            return None
        changed = False
        args = []
        for old, arg in zip(original.args, updated.args):
            if (
                arg.keyword is not None
                and arg.keyword.value == "pin_memory"
                and isinstance(arg.value, cst.Name)
                and arg.value.value == "True"
                and m.apply(self.code, old.value)
            ):
                arg = arg.with_changes(value=m.runtime_call("pin_memory_available", []))
                changed = True
            args.append(arg)
        return updated.with_changes(args=args) if changed else None


class PinMemoryCall(Rule):
    code = "TP041"
    moves_data = False
    name = "pin-memory-call"
    summary = "`x.pin_memory()`, which raises on a CPU-only machine, pins only where it can."
    before, after = "batch = batch.pin_memory()", "batch = tp.pin_memory(batch)"
    triggers = (r"\bpin_memory\b",)
    examples = (Example("# runs on CUDA\nbatch = batch.pin_memory()\n",
                        "# runs on CUDA\nbatch = tp.pin_memory(batch)\n"),
                Example("# runs on CUDA\nimport torch\nx = torch.empty(4).fill_(1).pin_memory()\n",
                        "# runs on CUDA\nimport torch\nx = tp.pin_memory(torch.empty(4).fill_(1))\n"),
                # ffcv: the original already keeps the tensor unpinned off CUDA
                Example("# runs on CUDA\ntry:\n    batch = batch.pin_memory()\nexcept:\n    pass\n"),
                # the handler does more than pass, or more than the pinning is skipped: the port differs
                Example("# runs on CUDA\ntry:\n    batch = batch.pin_memory()\n    pinned = True\n"
                        "except Exception:\n    pass\n",
                        "# runs on CUDA\ntry:\n    batch = tp.pin_memory(batch)\n    pinned = True\n"
                        "except Exception:\n    pass\n"))

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``x.pin_memory()`` -> ``tp.pin_memory(x)``."""
        func = updated.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "pin_memory"
            and not updated.args
            # torch.Tensor.pin_memory(x) is unbound; `torch.empty(4).fill_(1).pin_memory()` pins a tensor
            and not (dotted_name(func.value) is not None and m.qname_startswith(original.func, "torch."))
            and not _pinned_anyway(m)
            and m.apply(self.code, original)
        ):
            return m.runtime_call("pin_memory", [func.value])
        return None
