"""Pinned host memory: exists on CUDA and XPU only; a CPU-only `Tensor.pin_memory()` raises.

| Code  | Before                                   | After                                              |
|-------|------------------------------------------|----------------------------------------------------|
| TP040 | DataLoader(ds, pin_memory=True)          | DataLoader(ds, pin_memory=tp.pin_memory_available()) |
| TP041 | batch = batch.pin_memory()               | batch = tp.pin_memory(batch)                       |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods._base import Rule

if TYPE_CHECKING:
    from torchport.codemods._transformer import MigrateCodemod

RULES = (
    Rule("TP040", "pin-memory-flag", "`pin_memory=True` pins only where pinned memory exists (CUDA, XPU).",
         "DataLoader(ds, pin_memory=True)", "DataLoader(ds, pin_memory=tp.pin_memory_available())"),
    Rule("TP041", "pin-memory-call", "`x.pin_memory()`, which raises on a CPU-only machine, pins only where it can.",
         "batch = batch.pin_memory()", "batch = tp.pin_memory(batch)"),
)


TRIGGERS = (r"pin_memory",)


def rewrite_method(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``x.pin_memory()`` -> ``tp.pin_memory(x)``."""
    func = updated.func
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value == "pin_memory"
        and not updated.args
        and not m.qname_startswith(original.func, "torch.")  # torch.Tensor.pin_memory(x) is unbound
        and m.apply("TP041", original)
    ):
        return m.runtime_call("pin_memory", [func.value])
    return None


def rewrite_arguments(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.Call | None:
    """``pin_memory=True`` -> ``pin_memory=tp.pin_memory_available()``."""
    changed = False
    args = []
    for old, arg in zip(original.args, updated.args):
        if (
            arg.keyword is not None
            and arg.keyword.value == "pin_memory"
            and isinstance(arg.value, cst.Name)
            and arg.value.value == "True"
            and m.apply("TP040", old.value)
        ):
            arg = arg.with_changes(value=m.runtime_call("pin_memory_available", []))
            changed = True
        args.append(arg)
    return updated.with_changes(args=args) if changed else None
