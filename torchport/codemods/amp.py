"""Automatic mixed precision: `torch.cuda.amp` and `"cuda"` autocast become device-generic `torch.amp`.

| Code  | Before                                        | After                                                  |
|-------|-----------------------------------------------|--------------------------------------------------------|
| TP020 | torch.cuda.amp.autocast(dtype=torch.float16)  | torch.amp.autocast(tp.device_type(), dtype=torch.float16) |
| TP021 | torch.cuda.amp.GradScaler(enabled=use_amp)    | torch.amp.GradScaler(tp.device_type(), enabled=use_amp) |
| TP022 | @torch.cuda.amp.custom_fwd                    | @torch.amp.custom_fwd(device_type=tp.device_type())    |
| TP023 | torch.autocast("cuda", dtype=torch.bfloat16)  | torch.autocast(tp.device_type(), dtype=torch.bfloat16) |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods._base import Rule, keyword_arg

if TYPE_CHECKING:
    from torchport.codemods._transformer import MigrateCodemod

RULES = (
    Rule("TP020", "cuda-amp-autocast", "`torch.cuda.amp.autocast` becomes `torch.amp.autocast` on the runtime's device type.",
         "torch.cuda.amp.autocast(dtype=torch.float16)", "torch.amp.autocast(tp.device_type(), dtype=torch.float16)"),
    Rule("TP021", "cuda-amp-gradscaler", "`torch.cuda.amp.GradScaler` becomes `torch.amp.GradScaler` on the runtime's device type.",
         "torch.cuda.amp.GradScaler()", "torch.amp.GradScaler(tp.device_type())"),
    Rule("TP022", "cuda-amp-custom-fwd-bwd", "`torch.cuda.amp.custom_fwd/custom_bwd` become `torch.amp`'s with `device_type=`.",
         "@torch.cuda.amp.custom_fwd", "@torch.amp.custom_fwd(device_type=tp.device_type())"),
    Rule("TP023", "amp-device-type", '`"cuda"` given to `torch.autocast` or `torch.amp.GradScaler` becomes the runtime type.',
         'torch.autocast("cuda")', "torch.autocast(tp.device_type())"),
)

TRIGGERS = (r"cuda", r"GradScaler")

_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
_GRADSCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})
_CUSTOM = {
    "torch.cuda.amp.custom_fwd": "custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_fwd": "custom_fwd",
    "torch.cuda.amp.custom_bwd": "custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "custom_bwd",
}
CUDA_AMP_NAMES = _AUTOCAST | _GRADSCALER | frozenset(_CUSTOM)

# Generic APIs whose first argument (or device_type=/device=) names the device type.
_GENERIC_TYPED = frozenset({
    "torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast",
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
})
_GENERIC_SCALER = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"})
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): positionals become keywords, as
# torch.amp.autocast takes device_type first.
_AUTOCAST_POSITIONALS = ("enabled", "dtype", "cache_enabled")


def classify_call(m: MigrateCodemod, node: cst.Call) -> None:
    """Mark `"cuda"` given as the device type of a generic AMP call."""
    if not m.qnames(node.func) & _GENERIC_TYPED:
        return
    for index, arg in enumerate(node.args):
        keyword = arg.keyword.value if arg.keyword else None
        if (keyword is None and index == 0) or keyword in ("device_type", "device"):
            m.set_context(arg.value, "type", "TP023")


def rewrite_call(m: MigrateCodemod, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """Rewrite calls of `torch.cuda.amp.*`, and `torch.amp.GradScaler()` with its CUDA default."""
    names = m.qnames(original.func)
    args = list(updated.args)

    def device_type() -> cst.Arg:
        return cst.Arg(m.runtime_call("device_type", []))

    if names & _AUTOCAST:
        positional = [a for a in args if a.keyword is None and not a.star]
        if len(positional) > len(_AUTOCAST_POSITIONALS) or any(a.star for a in args):
            return None
        keywords = [keyword_arg(name, a.value) for name, a in zip(_AUTOCAST_POSITIONALS, positional)]
        if not m.apply("TP020", original):
            return None
        return cst.Call(func=m.torch_attr("amp.autocast"), args=[device_type(), *keywords, *args[len(positional):]])
    if names & _GRADSCALER:
        if not m.apply("TP021", original):
            return None
        return cst.Call(func=m.torch_attr("amp.GradScaler"), args=[device_type(), *args])
    for name in names:
        if name in _CUSTOM:
            if not m.apply("TP022", original):
                return None
            return cst.Call(func=m.torch_attr(f"amp.{_CUSTOM[name]}"),
                            args=[*args, keyword_arg("device_type", device_type().value)])
    if names & _GENERIC_SCALER and not any(a.keyword is None or a.keyword.value == "device" for a in args):
        if not m.apply("TP023", original):
            return None
        return updated.with_changes(args=[device_type(), *args])
    return None


def rewrite_decorator(m: MigrateCodemod, original: cst.Decorator, updated: cst.Decorator) -> cst.Decorator | None:
    """Bare ``@torch.cuda.amp.custom_fwd`` -> ``@torch.amp.custom_fwd(device_type=tp.device_type())``."""
    if isinstance(original.decorator, cst.Call):
        return None
    for name in m.qnames(original.decorator):
        if name in _CUSTOM:
            if not m.apply("TP022", original.decorator):
                return None
            call = cst.Call(func=m.torch_attr(f"amp.{_CUSTOM[name]}"),
                            args=[keyword_arg("device_type", m.runtime_call("device_type", []))])
            return updated.with_changes(decorator=call)
    return None
