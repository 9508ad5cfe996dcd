"""Pinned host memory: exists on CUDA and XPU only; a CPU-only `Tensor.pin_memory()` raises.

A DataLoader's ``pin_memory=True`` is left alone: off CUDA and XPU the DataLoader itself turns pinning off
(with a warning), so a rewrite would change nothing.

| Code  | Before                                   | After                                              |
|-------|------------------------------------------|----------------------------------------------------|
| TP040 | torch.empty(n, pin_memory=True)          | torch.empty(n, pin_memory=tp.pin_memory_available()) |
| TP041 | batch = batch.pin_memory()               | batch = tp.pin_memory(batch)                       |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods.core.base import dotted_name
from torchport.codemods.core.rule import Example, Rule

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

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
    )

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        """``torch.empty(n, pin_memory=True)`` -> ``pin_memory=tp.pin_memory_available()``."""
        names = m.qnames(original.func)
        if not any(n.startswith("torch.") and not n.endswith("DataLoader") for n in names):
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
                        "# runs on CUDA\nimport torch\nx = tp.pin_memory(torch.empty(4).fill_(1))\n"))

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``x.pin_memory()`` -> ``tp.pin_memory(x)``."""
        func = updated.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "pin_memory"
            and not updated.args
            # torch.Tensor.pin_memory(x) is unbound; `torch.empty(4).fill_(1).pin_memory()` pins a tensor
            and not (dotted_name(func.value) is not None and m.qname_startswith(original.func, "torch."))
            and m.apply(self.code, original)
        ):
            return m.runtime_call("pin_memory", [func.value])
        return None
