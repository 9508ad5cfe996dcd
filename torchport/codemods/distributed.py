"""Distributed training: the NCCL backend, process-group device ids and DDP's CUDA device ids.

| Code  | Before                                            | After                                                   |
|-------|---------------------------------------------------|---------------------------------------------------------|
| TP030 | init_process_group(backend="nccl")                | init_process_group(backend=tp.distributed_backend())    |
| TP031 | DDP(model, device_ids=[rank])                     | DDP(model, device_ids=tp.ddp_device_ids([rank]))        |
| TP032 | init_process_group("nccl", device_id=dev)         | init_process_group(tp.distributed_backend(), \
device_id=tp.process_group_device_id(dev)) |
| TP105 | if backend == "nccl":                             | (reported)                                              |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
import libcst.matchers as cst_matchers

from torchport.codemods.core.base import string_value
from torchport.codemods.core.reasons import SEVERAL_BACKENDS
from torchport.codemods.core.rule import Example, Rule
from torchport.codemods.device import is_current_device_call, is_index
from torchport.model import torch_facts

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

# Not DataParallel: without CUDA it ignores `device_ids` (CPU, MPS: the module is returned as is) or uses
# them as given (XPU), so wrapping them would change nothing anywhere.
_PARALLEL = torch_facts.named("ddp")
_BARRIER = torch_facts.named("barrier")
_INIT = torch_facts.named("init_process_group")
_DEVICE_KEYWORDS = torch_facts.words("ddp_device_keyword")
_FSDP = torch_facts.named("fsdp")
_BACKEND_SETTING = torch_facts.text("backend_setting")


def is_nccl(node: cst.CSTNode) -> bool:
    """``"nccl"`` in any case, or a device map naming it (``"cuda:nccl,cpu:gloo"``)."""
    value = string_value(node)
    return value is not None and "nccl" in value.lower() and (
        value.lower() == "nccl" or all(":" in part for part in value.split(",")))


def _mentions_nccl(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.IfExp):
        return _mentions_nccl(node.body) or _mentions_nccl(node.orelse)
    return is_nccl(node)


class NcclBackend(Rule):
    code = "TP030"
    moves_data = False
    name = "nccl-backend"
    summary = '`"nccl"` as a process-group backend becomes the runtime\'s backend for its device.'
    before, after = 'init_process_group(backend="nccl")', "init_process_group(backend=tp.distributed_backend())"
    triggers = (r"(?i:nccl)",)
    examples = (
        Example('import torch.distributed as dist\ndist.init_process_group(backend="nccl")\n',
                "import torch.distributed as dist\ndist.init_process_group(backend=tp.distributed_backend())\n"),
        Example('import torch.distributed as dist\ndist.init_process_group("NCCL")\n',
                'import torch.distributed as dist\ndist.init_process_group(tp.distributed_backend("NCCL"))\n'),
        Example('import torch.distributed as dist\ndist.init_process_group(backend="cuda:nccl,cpu:gloo")\n',
                'import torch.distributed as dist\n'
                'dist.init_process_group(backend=tp.distributed_backend("cuda:nccl,cpu:gloo"))\n'),
        Example('import torch.distributed as dist\ndist.init_process_group(backend="nccl" if cuda else "gloo")\n',
                'import torch.distributed as dist\n'
                'dist.init_process_group(backend=tp.distributed_backend("nccl" if cuda else "gloo"))\n'),
        Example('import torch\nimport torch.distributed as dist\n'
                'dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")\n'),
    )

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        init = bool(m.qnames(node.func) & _INIT)
        for index, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword else None
            names_option = keyword == "default" and any(
                "backend" in (string_value(a.value) or "") for a in node.args if a.keyword is None)
            if (keyword == "backend" or names_option or (init and keyword is None and index == 0)) \
                    and _mentions_nccl(arg.value):
                self._mark(m, arg.value)
                return

    def _chooses_without_cuda(self, m: Migrator, value: cst.BaseExpression) -> bool:
        """``"nccl" if torch.cuda.is_available() else "gloo"``: the code already picks another backend wherever CUDA
        is missing (gloo on CPU, MPS and XPU), so a rewrite would change nothing anywhere."""
        if not isinstance(value, cst.IfExp):
            return False
        test, without = value.test, value.orelse
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, without = test.expression, value.body
        asks = isinstance(test, cst.Call) and bool(m.qnames(test.func) & torch_facts.named("available"))
        return asks and not _mentions_nccl(without)

    def _mark(self, m: Migrator, value: cst.BaseExpression) -> None:
        """``value`` is a backend setting: rewritten whole on leave (a conditional's branches with it)."""
        if self._chooses_without_cuda(m, value):
            m.leave_as_written(self.code, value, SEVERAL_BACKENDS, "the backend is already chosen by whether CUDA is "
                               "there: without it, another than nccl")
            m.mark_handled(value.body)  # type: ignore[attr-defined]
            m.mark_handled(value.orelse)  # type: ignore[attr-defined]
            return
        m.store(self)[id(value)] = True
        if isinstance(value, cst.IfExp):
            m.mark_handled(value.body)
            m.mark_handled(value.orelse)

    def _setting(self, m: Migrator, name: str, value: cst.BaseExpression | None) -> None:
        if value is not None and _BACKEND_SETTING.match(name) and _mentions_nccl(value):
            self._mark(m, value)

    def visit_Assign(self, m: Migrator, node: cst.Assign) -> None:
        for target in node.targets:
            t = target.target
            name = t.attr.value if isinstance(t, cst.Attribute) else t.value if isinstance(t, cst.Name) else ""
            self._setting(m, name, node.value)

    def visit_Param(self, m: Migrator, node: cst.Param) -> None:
        self._setting(m, node.name.value, node.default)

    def visit_DictElement(self, m: Migrator, node: cst.DictElement) -> None:
        self._setting(m, string_value(node.key) or "", node.value)

    def _rewrite(self, m: Migrator, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.Call | None:
        if id(original) not in m.store(self) or not m.apply(self.code, original):
            return None
        if string_value(original) == "nccl":
            return m.runtime_call("distributed_backend", [])
        return m.runtime_call("distributed_backend", [updated])

    def leave_SimpleString(self, m: Migrator, original: cst.SimpleString, updated: cst.SimpleString) -> cst.Call | None:
        return self._rewrite(m, original, updated)

    def leave_IfExp(self, m: Migrator, original: cst.IfExp, updated: cst.IfExp) -> cst.Call | None:
        return self._rewrite(m, original, updated)


class DdpDeviceIds(Rule):
    code = "TP031"
    moves_data = False
    name = "ddp-device-ids"
    summary = ("DDP `device_ids` and `output_device`, and a barrier's `device_ids`, are dropped off CUDA/XPU at run "
               "time (DataParallel already ignores them).")
    before, after = "DDP(model, device_ids=[rank])", "DDP(model, device_ids=tp.ddp_device_ids([rank]))"
    triggers = (r"\b(?:device_ids|output_device)\b", r"DistributedDataParallel")
    names = _PARALLEL
    replaces = False
    examples = (
        Example("# runs on CUDA\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "m = DDP(model, device_ids=[rank])\n",
                "# runs on CUDA\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "m = DDP(model, device_ids=tp.ddp_device_ids([rank]))\n"),
        Example("# runs on CUDA\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "m = DDP(model, [rank])\n",
                "# runs on CUDA\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "m = DDP(model, tp.ddp_device_ids([rank]))\n"),
        Example('# runs on CUDA\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n'
                'kwargs["device_ids"] = [rank]\nm = DDP(model, **kwargs)\n',
                '# runs on CUDA\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n'
                'kwargs["device_ids"] = tp.ddp_device_ids([rank])\nm = DDP(model, **kwargs)\n'),
        # a module that makes no DDP: the keyword is some other object's device
        Example('# runs on CUDA\nnew_kwargs["output_device"] = device_id\nop = CatOperator(**new_kwargs)\n'),
        Example("# runs on CUDA\nimport torch\nm = torch.nn.DataParallel(model, device_ids=[0, 1])\n"),
        # a barrier's ids: `[device.index]` is `[None]` for the CPU device, which gloo refuses
        Example("# runs on CUDA\nimport torch.distributed as dist\ndist.barrier(device_ids=[device.index])\n",
                "# runs on CUDA\nimport torch.distributed as dist\n"
                "dist.barrier(device_ids=tp.ddp_device_ids([device.index]))\n"),
    )

    def _wrap(self, m: Migrator, old: cst.BaseExpression, value: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(value, cst.Name) and value.value == "None":
            return None
        if m.runtime_call_name(value) == "ddp_device_ids" or not m.apply(self.code, old):
            return None
        return m.runtime_call("ddp_device_ids", [value])

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        names = m.qnames(original.func)
        barrier = bool(names & _BARRIER)
        if not (names & _PARALLEL or barrier):
            return None
        changed, args = False, []
        for index, (old, arg) in enumerate(zip(original.args, updated.args)):
            keyword = arg.keyword.value if arg.keyword else None
            if keyword == "device_ids" if barrier else (
                    keyword in _DEVICE_KEYWORDS or (keyword is None and not arg.star and index in (1, 2))):
                wrapped = self._wrap(m, old.value, arg.value)
                if wrapped is not None:
                    arg, changed = arg.with_changes(value=wrapped), True
            args.append(arg)
        return updated.with_changes(args=args) if changed else None

    def leave_Assign(self, m: Migrator, original: cst.Assign, updated: cst.Assign) -> cst.Assign | None:
        """``kwargs["device_ids"] = [rank]``, later passed as ``**kwargs``, in a module that wraps a model in DDP
        (linear_operator's ``new_kwargs["output_device"] = device_id`` is its own operator's device)."""
        for target in original.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index):
                if string_value(sub.slice[0].slice.value) in _DEVICE_KEYWORDS and self._makes_ddp(m):
                    wrapped = self._wrap(m, original.value, updated.value)
                    return updated.with_changes(value=wrapped) if wrapped is not None else None
        return None

    def _makes_ddp(self, m: Migrator) -> bool:
        """Whether the module names DDP or DataParallel (read once per module)."""
        store = m.store(self)
        if "ddp" not in store:
            store["ddp"] = any(name.rsplit(".", 1)[-1] in m.source for name in _PARALLEL)
        return bool(store["ddp"])


class ProcessGroupDeviceId(Rule):
    code = "TP032"
    moves_data = False
    name = "process-group-device-id"
    summary = ("`init_process_group(device_id=...)` with a backend torchport rewrote, and FSDP's CUDA `device_id`: "
               "gloo takes no CUDA device; FSDP on the CPU takes the CPU device.")
    before = 'init_process_group("nccl", device_id=dev)'
    after = "init_process_group(tp.distributed_backend(), device_id=tp.process_group_device_id(dev))"
    names = _INIT | _FSDP
    replaces = False
    examples = (
        Example("import torch\nimport torch.distributed as dist\n"
                "dist.init_process_group(backend='nccl', device_id=torch.device('cuda', rank))\n",
                "import torch\nimport torch.distributed as dist\n"
                "dist.init_process_group(backend='nccl', "
                "device_id=tp.process_group_device_id(torch.device('cuda', rank)))\n"),
        Example("import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, device_id=torch.cuda.current_device())\n",
                "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, device_id=tp.fsdp_device_id(torch.cuda.current_device()))\n"),
    )

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        if m.qnames(original.func) & _FSDP:
            return self._fsdp(m, original, updated)
        if not m.qnames(original.func) & _INIT:
            return None
        if not any(_mentions_nccl(a.value) for a in original.args
                   if (a.keyword and a.keyword.value == "backend") or (a.keyword is None and a is original.args[0])):
            return None
        args, changed = [], False
        for old, arg in zip(original.args, updated.args):
            if (arg.keyword is not None and arg.keyword.value == "device_id"
                    and m.runtime_call_name(arg.value) != "process_group_device_id"):
                if m.apply(self.code, old.value):
                    arg, changed = arg.with_changes(value=m.runtime_call("process_group_device_id", [arg.value])), True
            args.append(arg)
        return updated.with_changes(args=args) if changed else None


    def _fsdp(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        """FSDP's ``device_id``: a CUDA index (an int means CUDA) that FSDP cannot use on CPU or MPS."""
        args, changed = [], False
        for old, arg in zip(original.args, updated.args):
            if (arg.keyword is not None and arg.keyword.value == "device_id"
                    and (is_index(old.value) or is_current_device_call(m, old.value))
                    and m.runtime_call_name(arg.value) != "fsdp_device_id" and m.apply(self.code, old.value)):
                arg, changed = arg.with_changes(value=m.runtime_call("fsdp_device_id", [arg.value])), True
            args.append(arg)
        return updated.with_changes(args=args) if changed else None


class NcclString(Rule):
    code = "TP105"
    moves_data = False
    name = "nccl-string"
    summary = '`"nccl"` outside a backend setting (a comparison, a list); left unchanged.'
    before = 'if backend == "nccl":'
    safety, effort = "manual", "low"
    triggers = (r"(?i:nccl)",)
    examples = (Example('if backend == "nccl":\n    pass\n'),)

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        if m.runtime_call_name(node) == "distributed_backend":  # the port's own output: no finding next run
            m.handled.update(id(s) for s in cst_matchers.findall(node, cst_matchers.SimpleString()))

    def visit_SimpleString(self, m: Migrator, node: cst.SimpleString) -> None:
        if string_value(node) == "nccl" and not m.in_skipped_region:
            m.store(self).setdefault("strings", []).append(node)
            m.remember_statement(node)

    def finish(self, m: Migrator, module: cst.Module) -> None:
        for node in m.store(self).get("strings", ()):
            if id(node) not in m.handled:
                m.report(self.code, node, '"nccl" outside a backend setting; left unchanged')
