"""Automatic mixed precision: `torch.cuda.amp` and `"cuda"` autocast become device-generic `torch.amp`.

| Code  | Before                                        | After                                                  |
|-------|-----------------------------------------------|--------------------------------------------------------|
| TP020 | torch.cuda.amp.autocast(dtype=torch.float16)  | torch.amp.autocast(tp.device_type(), dtype=torch.float16, |
|       |                                               |     enabled=tp.device_type() != "cpu")                 |
| TP021 | torch.cuda.amp.GradScaler(enabled=use_amp)    | torch.amp.GradScaler(tp.device_type(),                 |
|       |                                               |     enabled=use_amp and tp.device_type() != "cpu")     |
| TP022 | @torch.cuda.amp.custom_fwd                    | @torch.amp.custom_fwd(device_type=tp.device_type())    |
| TP023 | torch.autocast("cuda", dtype=torch.bfloat16)  | torch.autocast(tp.device_type(), dtype=torch.bfloat16, |
|       |                                               |     enabled=tp.device_type() != "cpu")                 |

Where the runtime's device is the CPU, CUDA's autocast and scaler disabled themselves (no CUDA) and the program ran
in fp32: the port keeps them off there, so only an accelerator gets mixed precision.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods.analysis.names import ast_chain, qualify
from torchport.codemods.core.base import keyword_arg, not_cpu, older_torch, requires_older_torch
from torchport.codemods.core.reasons import HELD_CHOICE, MOVES_TOGETHER, PROJECT_TORCH, SEVERAL_BACKENDS
from torchport.codemods.core.rule import Example, Rule
from torchport.codemods.device import rewrite_string
from torchport.model import torch_facts

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

_AUTOCAST = torch_facts.of_rule("TP020")
_GRADSCALER = torch_facts.of_rule("TP021")
_CUSTOM = {name: str(torch_facts.CUDA_APIS[name].becomes).removeprefix("torch.amp.")
           for name in sorted(torch_facts.of_rule("TP022"))}

# Generic APIs whose first argument (or device_type=/device=) names the device type.
_GENERIC_SCALER = torch_facts.named("generic_scaler")
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): positionals become keywords, as
# torch.amp.autocast takes device_type first.
_AUTOCAST_POSITIONALS = next(torch_facts.CUDA_APIS[name].params for name in sorted(_AUTOCAST))



_GENERIC_AUTOCAST = torch_facts.named("generic_autocast")
_GENERIC_TYPED = _GENERIC_AUTOCAST | _GENERIC_SCALER
_SCALER_ALONE = ("no autocast in this module moves to the runtime's device type with it: off CUDA the original "
                 "scaler disables itself, and one enabled on MPS without autocast there scales fp32 gradients "
                 "(and fails on torch 2.7)")


def _scaler_alone(m: Migrator) -> bool:
    """Whether the module has no autocast that the port moves to the runtime's device type (a
    ``torch.cuda.amp.autocast``, or a generic one given ``"cuda"``): its GradScaler then keeps CUDA's (they move
    together). Read once per module from CPython's tree."""
    if m.shared.scaler_alone is None:
        m.shared.scaler_alone = m.syntax is not None and (m.names_mps or not any(
            isinstance(node, ast.Call) and _moved_autocast(node, m) for node in ast.walk(m.syntax)))
    return m.shared.scaler_alone


_OWN_MPS_CHOICE = "this module makes its own choice for MPS (its code names MPS): its CUDA autocast stays as written"


def _kept(m: Migrator, code: str, node: cst.CSTNode) -> bool:
    """Whether only programs kept CUDA-or-CPU reach the module (`Migrator.kept`), or the project keeps its own device
    choices CUDA-or-CPU (`Migrator.hold`: CanglongPhysics' training scripts, whose choice stays beside a model
    module's): its AMP call at ``node`` stays CUDA's, with a TP110 note of rule ``code``. There data is on CUDA or
    the CPU, where CUDA's autocast and scaler run as the moved ones would (enabled on CUDA, off on the CPU)."""
    if m.kept is not None:
        m.leave_as_written(code, node, HELD_CHOICE, f"{m.kept}: there CUDA's autocast and scaler already run as "
                           "moved ones would")
    elif m.hold is not None:
        m.leave_as_written(code, node, HELD_CHOICE, f"{m.hold}; its data is on CUDA or the CPU, where CUDA's "
                           "autocast and scaler already run as moved ones would")
    return m.kept is not None or m.hold is not None


def _autocast_stays(m: Migrator, code: str, call: cst.Call, node: cst.CSTNode) -> bool:
    """Whether rule ``code`` leaves the CUDA autocast ``call`` (at ``node``: the call, or its ``"cuda"``) as
    written, with its TP110 note: its scaler is made elsewhere (`_autocast_alone`), or the module's code names MPS
    (``if torch.backends.mps.is_available(): accelerator.native_amp = False``: it decides about mixed precision on a
    Mac itself, and the CUDA autocast, which does nothing there, is part of that decision), or only programs kept
    CUDA-or-CPU reach it (`_kept`)."""
    if _kept(m, code, node):
        return True
    if _autocast_alone(m, call):
        m.leave_as_written(code, node, MOVES_TOGETHER, _AUTOCAST_ALONE)
        return True
    if (line := _another_stays(m)) is not None:
        m.leave_as_written(code, node, MOVES_TOGETHER, f"the autocast at line {line} stays for CUDA (its scaler is "
                           "made elsewhere): this module's mixed precision moves as one, or evaluation would run in "
                           "another precision than training off CUDA")
        return True
    if m.names_mps:
        m.leave_as_written(code, node, SEVERAL_BACKENDS, _OWN_MPS_CHOICE)
        return True
    if requires_older_torch(m, _SCALER_TORCH) and _makes_scaler(m):
        m.leave_as_written(code, node, PROJECT_TORCH, "its GradScaler stays CUDA's: the project requires torch "
                           f"{m.renderer.version[0]}.{m.renderer.version[1]}, which lacks torch.amp.GradScaler on MPS")
        return True
    return False


# the first torch with torch.amp.GradScaler usable on MPS (2.8; torch.amp.GradScaler itself came with 2.3)
_SCALER_TORCH = (2, 8)
# the first torch with autocast on MPS (2.5; torch.amp.autocast came with 1.10): before it, `autocast("mps")` raises
# even where it is disabled (protein_generator pins torch 2.0), so a port to the runtime's type would break a Mac
_AUTOCAST_TORCH = (2, 5)


def _makes_scaler(m: Migrator) -> bool:
    """Whether the module makes a CUDA GradScaler (CPython's tree)."""
    return m.syntax is not None and any(isinstance(node, ast.Call) and qualify(ast_chain(node.func) or "", m.imports)
                                        & _GRADSCALER for node in ast.walk(m.syntax))


_AUTOCAST_ALONE = ("this step hands its loss to a scaler it was given (`loss_scaler(loss, optimizer)`, "
                   "`scaler.scale(loss)`), made "
                   "elsewhere and kept for CUDA there: an fp16 autocast moved without it would train unscaled on MPS")


def _autocast_alone(m: Migrator, call: cst.Call) -> bool:
    """Whether the autocast ``call`` is one of `_staying_autocasts`."""
    return m.start(call).line in _staying_autocasts(m)


def _another_stays(m: Migrator) -> int | None:
    """The line of an autocast of the module that stays for CUDA because its scaler is made elsewhere
    (`_staying_autocasts`: deit's ``train_one_epoch``), if any: the module's other autocasts stay with it."""
    lines = _staying_autocasts(m)
    return lines[0] if lines else None


def _staying_autocasts(m: Migrator) -> list[int]:
    """The lines of the fp16 autocasts (no dtype, or float16) that the port moves, in a module that makes no
    GradScaler, inside a function that hands its loss to a callable it was given (``loss_scaler(loss, opt)``, two or
    more positional arguments) or to a scaler it was given (``scaler.scale(loss)``): their scaler is made elsewhere,
    where the port may keep it for CUDA. Read once per module from CPython's tree."""
    if m.shared.staying_autocasts is not None:
        return m.shared.staying_autocasts
    lines: list[int] = []
    scalers = torch_facts.named("scaler")
    if m.syntax is not None and not any(isinstance(n, ast.Call) and qualify(ast_chain(n.func) or "", m.imports)
                                        & scalers for n in ast.walk(m.syntax)):
        for function in ast.walk(m.syntax):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = {a.arg for a in (*function.args.args, *function.args.kwonlyargs)}
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in params
                   and sum(not isinstance(a, ast.Starred) for a in n.args) >= 2 or _given_scaler(n, params)
                   for n in ast.walk(function)):
                # (or a GradScaler it was given: FreeYOLO's `train_one_epoch(..., scaler)`, `scaler.scale(losses)`)
                lines.extend(node.lineno for node in _own_nodes(function) if isinstance(node, ast.Call)
                             and _moved_autocast(node, m) and not any(
                                 k.arg == "dtype" and "bfloat16" in ast.unparse(k.value) for k in node.keywords))
    m.shared.staying_autocasts = sorted(lines)
    return m.shared.staying_autocasts


def _given_scaler(node: ast.AST, params: set[str]) -> bool:
    """``scaler.scale(loss).backward()`` with ``scaler`` a parameter (not ``self``), or an attribute of ``self``
    in a module that makes no GradScaler (CellViT's trainers: ``self.scaler``, made by their base class in another
    module): a GradScaler's step."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"
            and isinstance(scaled := node.func.value, ast.Call) and isinstance(scaled.func, ast.Attribute)
            and scaled.func.attr == "scale"):
        return False
    owner = scaled.func.value
    return isinstance(owner, ast.Name) and owner.id in params - {"self", "cls"} or isinstance(
        owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self"


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of ``function``'s body outside the functions nested in it (theirs are read with them)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        found.append(node)
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return found


def _moved_autocast(call: ast.Call, m: Migrator) -> bool:
    dotted = ast_chain(call.func)
    names = qualify(dotted, m.imports) if dotted else set()
    if names & _AUTOCAST:
        return True
    if not names & _GENERIC_AUTOCAST:
        return False
    device = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device_type"), None)
    return isinstance(device, ast.Constant) and isinstance(device.value, str) and device.value.startswith("cuda")


def _off_the_cpu(m: Migrator, args: list[cst.Arg]) -> list[cst.Arg]:
    """``args`` of a ported autocast or GradScaler with ``enabled=`` false where the runtime's device is the CPU:
    there CUDA's own disabled itself (no CUDA) and the program ran in fp32, unscaled; a CPU autocast would change
    the numbers (bf16) where nothing else changed. ``enabled=X`` -> ``enabled=X and tp.device_type() != "cpu"``;
    none -> ``enabled=tp.device_type() != "cpu"``; ``enabled=False`` stays."""
    accelerated = not_cpu(m.runtime_call("device_type", []))
    for index, arg in enumerate(args):
        if arg.keyword is None or arg.keyword.value != "enabled":
            continue
        value = arg.value
        if isinstance(value, cst.Name) and value.value in ("True", "False"):
            return args if value.value == "False" else [*args[:index], arg.with_changes(value=accelerated),
                                                        *args[index + 1:]]
        if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        joined = cst.BooleanOperation(left=value, operator=cst.And(), right=accelerated)
        return [*args[:index], arg.with_changes(value=joined), *args[index + 1:]]
    return [*args, keyword_arg("enabled", accelerated)]


class CudaAmpAutocast(Rule):
    code = "TP020"
    moves_data = False
    name = "cuda-amp-autocast"
    summary = "`torch.cuda.amp.autocast` becomes `torch.amp.autocast` on the runtime's device type."
    before, after = ("torch.cuda.amp.autocast(dtype=torch.float16)",
                     'torch.amp.autocast(tp.device_type(), dtype=torch.float16, enabled=tp.device_type() != "cpu")')
    names = _AUTOCAST
    renames = {n.removeprefix("torch.cuda."): "torch.amp.autocast" for n in _AUTOCAST}
    examples = (Example("import torch\nwith torch.cuda.amp.autocast(True):\n    pass\n",
                        'import torch\nwith torch.amp.autocast(tp.device_type(), enabled=tp.device_type() != "cpu"):\n'
                        "    pass\n"),
                # Its GradScaler is made elsewhere and given to the training step (it may stay CUDA's there).
                Example("import torch\n\n\ndef step(model, x, optimizer, loss_scaler):\n"
                        "    with torch.cuda.amp.autocast():\n        loss = model(x)\n"
                        "    loss_scaler(loss, optimizer)\n"),
                # FreeYOLO's train_one_epoch: the GradScaler itself is given
                Example("import torch\n\n\ndef step(model, x, optimizer, scaler):\n"
                        "    with torch.cuda.amp.autocast():\n        loss = model(x)\n"
                        "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n"),
                # CellViT's trainer: `self.scaler`, which its base class makes in another module
                Example("import torch\n\n\nclass Trainer(BaseTrainer):\n    def step(self, x):\n"
                        "        with torch.cuda.amp.autocast():\n            loss = self.model(x)\n"
                        "        self.scaler.scale(loss).backward()\n"),
                # a module's own `scale` is no GradScaler
                Example("import torch\n\n\ndef forward(self, x):\n    with torch.cuda.amp.autocast(True):\n"
                        "        return self.scale(x)\n",
                        "import torch\n\n\ndef forward(self, x):\n"
                        '    with torch.amp.autocast(tp.device_type(), enabled=tp.device_type() != "cpu"):\n'
                        "        return self.scale(x)\n"))

    def visit_Call(self, m: Migrator, node: cst.Call) -> bool:
        if m.qnames(node.func) & _AUTOCAST:
            older_torch(m, node, _AUTOCAST_TORCH, "autocast on MPS")
        return True

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        if not m.qnames(original.func) & _AUTOCAST:
            return None
        args = list(updated.args)
        positional = [a for a in args if a.keyword is None and not a.star]
        if len(positional) > len(_AUTOCAST_POSITIONALS) or any(a.star for a in args):
            return None
        keywords = [keyword_arg(name, a.value) for name, a in zip(_AUTOCAST_POSITIONALS, positional)]
        if _autocast_stays(m, self.code, original, original) or not m.apply(self.code, original):
            return None
        return cst.Call(func=m.torch_attr("amp.autocast"), args=_off_the_cpu(
            m, [cst.Arg(m.runtime_call("device_type", [])), *keywords, *args[len(positional):]]))


class CudaAmpGradScaler(Rule):
    code = "TP021"
    moves_data = False
    name = "cuda-amp-gradscaler"
    summary = "`torch.cuda.amp.GradScaler` becomes `torch.amp.GradScaler` on the runtime's device type."
    before, after = ("torch.cuda.amp.GradScaler()",
                     'torch.amp.GradScaler(tp.device_type(), enabled=tp.device_type() != "cpu")')
    names = _GRADSCALER
    renames = {n.removeprefix("torch.cuda."): "torch.amp.GradScaler" for n in _GRADSCALER}
    examples = (Example("import torch\ns = torch.cuda.amp.GradScaler(enabled=amp)\n"
                        "with torch.cuda.amp.autocast():\n    pass\n",
                        "import torch\n"
                        's = torch.amp.GradScaler(tp.device_type(), enabled=amp and tp.device_type() != "cpu")\n'
                        "with torch.cuda.amp.autocast():\n    pass\n"),
                # The autocast it scales for is not moved with it (elsewhere, or on a device chosen otherwise).
                Example("import torch\ns = torch.cuda.amp.GradScaler(enabled=amp)\n"))

    def visit_Call(self, m: Migrator, node: cst.Call) -> bool:
        if m.qnames(node.func) & _GRADSCALER:
            older_torch(m, node, _SCALER_TORCH, "torch.amp.GradScaler on MPS")
        return True

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        if not m.qnames(original.func) & _GRADSCALER or _kept(m, self.code, original):
            return None
        if _scaler_alone(m):
            m.leave_as_written(self.code, original, MOVES_TOGETHER, _SCALER_ALONE)
            return None
        if sum(a.keyword is None for a in updated.args) > 4 or not m.apply(self.code, original):
            return None  # `enabled` given by position: no keyword can join it
        return cst.Call(func=m.torch_attr("amp.GradScaler"),
                        args=_off_the_cpu(m, [cst.Arg(m.runtime_call("device_type", [])), *updated.args]))


class CudaAmpCustomFwdBwd(Rule):
    code = "TP022"
    moves_data = False
    name = "cuda-amp-custom-fwd-bwd"
    summary = "`torch.cuda.amp.custom_fwd/custom_bwd` become `torch.amp`'s with `device_type=`."
    before, after = "@torch.cuda.amp.custom_fwd", "@torch.amp.custom_fwd(device_type=tp.device_type())"
    names = frozenset(_CUSTOM)
    renames = {n.removeprefix("torch.cuda."): f"torch.amp.{new}" for n, new in _CUSTOM.items()}
    examples = (Example("import torch\n\n\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n",
                        "import torch\n\n\n@torch.amp.custom_fwd(device_type=tp.device_type())\n"
                        "def f(x):\n    return x\n"),)

    def visit_Decorator(self, m: Migrator, node: cst.Decorator) -> bool:
        target = node.decorator.func if isinstance(node.decorator, cst.Call) else node.decorator
        if m.qnames(target) & _CUSTOM.keys():
            older_torch(m, node, (2, 4), "torch.amp.custom_fwd(device_type=...)")
        return True

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        for name in m.qnames(original.func):
            if name in _CUSTOM:
                if not m.apply(self.code, original):
                    return None
                return cst.Call(func=m.torch_attr(f"amp.{_CUSTOM[name]}"),
                                args=[*updated.args, keyword_arg("device_type", m.runtime_call("device_type", []))])
        return None

    def leave_Decorator(self, m: Migrator, original: cst.Decorator, updated: cst.Decorator) -> cst.Decorator | None:
        """Bare ``@torch.cuda.amp.custom_fwd`` -> ``@torch.amp.custom_fwd(device_type=tp.device_type())``."""
        if isinstance(original.decorator, cst.Call):
            return None
        for name in m.qnames(original.decorator):
            if name in _CUSTOM:
                if not m.apply(self.code, original.decorator):
                    return None
                call = cst.Call(func=m.torch_attr(f"amp.{_CUSTOM[name]}"),
                                args=[keyword_arg("device_type", m.runtime_call("device_type", []))])
                return updated.with_changes(decorator=call)
        return None


class AmpDeviceType(Rule):
    code = "TP023"
    moves_data = False
    name = "amp-device-type"
    summary = '`"cuda"` given to `torch.autocast` or `torch.amp.GradScaler` becomes the runtime type.'
    before, after = 'torch.autocast("cuda")', 'torch.autocast(tp.device_type(), enabled=tp.device_type() != "cpu")'
    names = _GENERIC_TYPED
    examples = (Example('import torch\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    pass\n',
                        "import torch\nwith torch.autocast(tp.device_type(), dtype=torch.bfloat16, "
                        'enabled=tp.device_type() != "cpu"):\n    pass\n'),
                Example("# runs on CUDA\nimport torch\nscaler = torch.amp.GradScaler()\n"
                        "with torch.autocast('cuda'):\n    pass\n",
                        "# runs on CUDA\nimport torch\n"
                        'scaler = torch.amp.GradScaler(tp.device_type(), enabled=tp.device_type() != "cpu")\n'
                        'with torch.autocast(tp.device_type(), enabled=tp.device_type() != "cpu"):\n    pass\n'),
                # Its autocast is not moved with it (nanoGPT's `device_type` stays 'cpu' off CUDA): it stays CUDA's.
                Example("# runs on CUDA\nimport torch\nscaler = torch.amp.GradScaler('cuda', enabled=fp16)\n"),
                # The module decides about mixed precision on MPS itself (diffusers' training scripts).
                Example("import torch\namp = not torch.backends.mps.is_available()\nscaler = torch.amp.GradScaler()\n"
                        "with torch.autocast('cuda', enabled=amp):\n    pass\n"))

    def visit_Call(self, m: Migrator, node: cst.Call) -> None:
        """Mark `"cuda"` given as the device type of a generic AMP call."""
        names = m.qnames(node.func)
        if not names & _GENERIC_TYPED:
            return
        if names & _GENERIC_SCALER and older_torch(m, node, _SCALER_TORCH, "torch.amp.GradScaler on MPS") \
                or names & _GENERIC_AUTOCAST and older_torch(m, node, _AUTOCAST_TORCH, "autocast on MPS"):
            return
        for index, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword else None
            if (keyword is None and index == 0) or keyword in ("device_type", "device"):
                m.set_context(arg.value, "type", self.code)

    def leave_SimpleString(self, m: Migrator, original: cst.SimpleString,
                           updated: cst.SimpleString) -> cst.BaseExpression | None:
        call = next((a for a in reversed(m.ancestors) if isinstance(a, cst.Call)), None)
        if call is not None and id(original) in m.contexts and (
                m.qnames(call.func) & _GENERIC_AUTOCAST and _autocast_stays(m, self.code, call, original)
                or m.qnames(call.func) & _GENERIC_SCALER and _kept(m, self.code, original)):
            return None
        if call is not None and id(original) in m.contexts and m.qnames(call.func) & _GENERIC_SCALER \
                and _scaler_alone(m):  # MARS's train_mars_fw.py: `GradScaler('cuda', ...)`, its autocast not moved
            m.leave_as_written(self.code, original, MOVES_TOGETHER, _SCALER_ALONE)
            return None
        return rewrite_string(m, self.code, original, updated)

    def leave_Call(self, m: Migrator, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``torch.amp.GradScaler()`` defaults to CUDA: give it the runtime's type."""
        names = m.qnames(original.func)
        if names & _GENERIC_SCALER and not any(a.keyword is None or a.keyword.value == "device" for a in updated.args):
            if _kept(m, self.code, original):
                return None
            if _scaler_alone(m):
                m.leave_as_written(self.code, original, MOVES_TOGETHER, _SCALER_ALONE)
                return None
            if not m.apply(self.code, original):
                return None
            return updated.with_changes(args=_off_the_cpu(m, [cst.Arg(m.runtime_call("device_type", [])),
                                                              *updated.args]))
        if names & _GENERIC_TYPED and any(  # its "cuda" became the runtime's type: off on the CPU, as CUDA's was
                isinstance(a.value, cst.SimpleString) and not isinstance(b.value, cst.SimpleString)
                for a, b in zip(original.args, updated.args, strict=False)):
            if sum(a.keyword is None for a in updated.args) > (4 if names & _GENERIC_SCALER else 2):
                return None  # `enabled` given by position
            return updated.with_changes(args=_off_the_cpu(m, list(updated.args)))
        return None
