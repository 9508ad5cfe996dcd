"""Distributed training: the NCCL backend and DDP's CUDA device ids.

| Code  | Before                                            | After                                                   |
|-------|---------------------------------------------------|---------------------------------------------------------|
| TP030 | init_process_group(backend="nccl")                | init_process_group(backend=tp.distributed_backend())    |
| TP031 | DDP(model, device_ids=[rank])                     | DDP(model, device_ids=tp.ddp_device_ids([rank]))        |
| TP105 | if backend == "nccl":                             | (reported)                                              |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods._base import Rule

if TYPE_CHECKING:
    from torchport.codemods._transformer import MigrateCodemod

RULES = (
    Rule("TP030", "nccl-backend", '`"nccl"` as a process-group backend becomes the runtime\'s backend for its device.',
         'init_process_group(backend="nccl")', "init_process_group(backend=tp.distributed_backend())"),
    Rule("TP031", "ddp-device-ids", "DDP/DataParallel `device_ids=` and `output_device=` are dropped off CUDA/XPU at run time.",
         "DDP(model, device_ids=[rank])", "DDP(model, device_ids=tp.ddp_device_ids([rank]))"),
    Rule("TP105", "nccl-string", '`"nccl"` outside a backend setting (a comparison, a list); left unchanged.',
         'if backend == "nccl":', safety="manual", effort="low"),
)

TRIGGERS = (r"nccl", r"device_ids|output_device")

_PARALLEL = frozenset({
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})
_INIT = frozenset({"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"})


def is_nccl(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "nccl"


def classify_call(m: MigrateCodemod, node: cst.Call) -> None:
    """`backend="nccl"` anywhere, and `init_process_group("nccl")`."""
    init = bool(m.qnames(node.func) & _INIT)
    for index, arg in enumerate(node.args):
        keyword = arg.keyword.value if arg.keyword else None
        if keyword == "backend" or (init and keyword is None and index == 0):
            m.set_context(arg.value, "str", "TP030")


def rewrite_call(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """Wrap DDP's `device_ids=`/`output_device=` in `tp.ddp_device_ids(...)`."""
    if not m.qnames(original.func) & _PARALLEL:
        return None
    changed = False
    args = []
    for old, arg in zip(original.args, updated.args):
        keyword = arg.keyword.value if arg.keyword else None
        value = arg.value
        if (
            keyword in ("device_ids", "output_device")
            and not (isinstance(value, cst.Name) and value.value == "None")
            and m.runtime_call_name(value) != "ddp_device_ids"
            and m.apply("TP031", old.value)
        ):
            arg = arg.with_changes(value=m.runtime_call("ddp_device_ids", [value]))
            changed = True
        args.append(arg)
    return updated.with_changes(args=args) if changed else None


def rewrite_literal(m: MigrateCodemod, original: cst.BaseExpression) -> cst.BaseExpression | None:
    """`"nccl"` in a backend or string-setting context -> `tp.distributed_backend()`."""
    context = m.contexts.get(id(original))
    if context is None or context[0] != "str" or not is_nccl(original):
        return None
    if not m.apply("TP030", original):
        return None
    return m.runtime_call("distributed_backend", [])
