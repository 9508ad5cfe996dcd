"""``inspect``: look at tensors, Python scalars and SymInts anywhere, eager or compiled, and pass them on.

Re-exported as ``torchport.debug.inspect`` and ``torchport.checks.debug.inspect``.

How it survives compilation: under ``torch.compile`` (and under a raw ``make_fx`` trace) it calls the custom
op ``torchport::inspect`` (a registered *ordered side effect*, like ``torch._higher_order_ops.print``, so
AOTAutograd and Inductor keep it even when its result is unused); scalars enter the op as 0-d tensors and
leave it as Python numbers again. The callbacks and the format string are Python objects the op finds in a
registry by an integer id that is a constant of the graph. Under Dynamo the id is made at trace time by a
``comptime`` callback, which can read the real object behind any callable Dynamo holds (a function, a
closure, a bound method, a callable object, a ``functools.partial``). The op's autograd formula calls
``torchport::inspect_grad``, also ordered and opaque, so the backward callback runs inside the compiled
backward. In eager code no op is involved: the callbacks run directly and the backward one is a
``register_multi_grad_hook`` on the returned tensors.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchport.checks.debug import _LOCK, _rank, _report

__all__ = ["inspect"]

Callback = Callable[..., Any]
# One registry entry per traced call: (tag, fwd, bwd, fmt, kinds); kinds[i] is "t" (tensor), "i", "f" or "b".
_Entry = tuple[str, "Callback | None", "Callback | None", "str | None", tuple[str, ...]]
_HOOKS: dict[int, _Entry] = {}
_HOOK_KEYS: dict[Any, int] = {}
_HOOK_IDS = itertools.count(1)
_LAST_ID = [0]  # the id the last comptime registration made, read back as a graph constant
_EFFECTS_REGISTERED = False
_SCALAR_DTYPES = {"i": torch.int64, "f": torch.float64, "b": torch.bool}


def _register_effects() -> None:
    """Mark the inspect ops as ordered side effects, so that AOTAutograd and Inductor never drop them.

    The API is private and has moved between torch releases; without it, an ``inspect`` whose result
    is unused may be dead-code-eliminated by AOTAutograd-based backends (use the result).
    """
    global _EFFECTS_REGISTERED
    if _EFFECTS_REGISTERED:
        return
    _EFFECTS_REGISTERED = True
    try:
        from torch._higher_order_ops.effects import _EffectType, _register_effectful_op

        for op in (torch.ops.torchport.inspect.default, torch.ops.torchport.inspect_grad.default):
            _register_effectful_op(op, _EffectType.ORDERED)
    except Exception:  # noqa: BLE001 - best effort, see above
        pass


def _hook_id(entry: _Entry) -> int:
    """Id of one (tag, fwd, bwd, fmt, kinds) entry, the same id for an equal entry when it is hashable."""
    _register_effects()
    try:
        hash(entry)
        key: Any = entry
    except TypeError:  # an unhashable callable: one id per trace
        key = None
    with _LOCK:
        if key is not None and key in _HOOK_KEYS:
            return _HOOK_KEYS[key]
        hid = next(_HOOK_IDS)
        _HOOKS[hid] = entry
        if key is not None:
            _HOOK_KEYS[key] = hid
        return hid


def _held(var: Any) -> Any:
    """The Python object behind a ComptimeVar of a callable (``None`` stays ``None``).

    Raises ``TypeError`` naming what to pass instead when Dynamo holds no real object for it
    (a callable built in the compiled code from values of the graph).
    """
    vt = var._i_will_not_complain_if_bc_breaks_VariableTracker()
    return _value(vt.realize() if hasattr(vt, "realize") else vt)


def _value(vt: Any) -> Any:
    if not hasattr(vt, "as_python_constant"):  # already the object (a method variable's function)
        return vt
    try:
        return vt.as_python_constant()
    except Exception:  # noqa: BLE001 - not a constant: look at what kind of variable it is
        pass
    kind = type(vt).__name__
    if kind == "UserMethodVariable":  # obj.method: rebuild the bound method from its two halves
        return types.MethodType(_value(vt.fn), _value(vt.obj))
    if kind == "FunctoolsPartialVariable":
        return functools.partial(_value(vt.func), *map(_value, vt.args),
                                 **{k: _value(v) for k, v in vt.keywords.items()})
    if kind != "LazyVariableTracker" and hasattr(vt, "value") and not isinstance(vt.value, torch.Tensor):
        return vt.value  # a user object (a callable instance, the self of a method)
    raise TypeError(f"torchport.debug.inspect: under torch.compile a callback must be an object that exists "
                    f"outside the compiled code (got a {kind}): pass a function, a bound method, a callable "
                    f"object or functools.partial made before compiling, not one built from tensors of the graph")


def _register_traced(ctx: Any) -> None:
    """Run by Dynamo at trace time (``comptime``): register this call's callbacks and remember the id."""
    entry = (ctx.get_local("tag").as_python_constant(), _held(ctx.get_local("fwd")), _held(ctx.get_local("bwd")),
             ctx.get_local("fmt").as_python_constant(), ctx.get_local("kinds").as_python_constant())
    _LAST_ID[0] = _hook_id(entry)


def _last_id() -> int:
    """The id :func:`_register_traced` just made; Dynamo calls it at trace time and bakes in the result."""
    return _LAST_ID[0]


# What torch.compiler.assume_constant_result sets, without importing torch._dynamo (~1 s) here.
_last_id._dynamo_marked_constant = True  # type: ignore[attr-defined]


def _names(tag: str, n: int) -> list[str]:
    return [tag] if n == 1 else [f"{tag}.{i}" for i in range(n)]


def _rank0() -> int:
    rank = _rank()
    return 0 if rank is None else rank


def _print_format(fmt: str, values: Sequence[Any]) -> None:
    """``fmt.format(*values)``, printed as ``torch._higher_order_ops.print`` does (``[rank N] `` when N > 0)."""
    rank = _rank()
    text = fmt.format(*values)
    builtins.print(text if not rank else f"[rank {rank}] {text}", flush=True)


def _run_fwd(entry: _Entry, values: Sequence[Any]) -> None:
    """The forward action on real values: print the format, report stats, or call ``fwd`` once per value."""
    tag, fwd, bwd, fmt, kinds = entry
    if fmt is not None:
        _print_format(fmt, values)
    names = _names(tag, len(values))
    if fwd is None and bwd is None and fmt is None:
        for v, name in zip(values, names):
            _report(v if isinstance(v, torch.Tensor) else torch.tensor(v), name, "output")
    elif fwd is not None:
        rank = _rank0()
        for v, name in zip(values, names):
            fwd(v, tag=name, phase="fwd", rank=rank)


def _run_bwd(entry: _Entry, grads: Sequence[torch.Tensor | None]) -> None:
    """The backward action: report each gradient's stats, or call ``bwd`` once per gradient received."""
    tag, fwd, bwd, fmt, _ = entry
    names = _names(tag, len(grads))
    if bwd is not None:
        rank = _rank0()
        for g, name in zip(grads, names):
            if g is not None:
                bwd(g, tag=name, phase="bwd", rank=rank)
    elif fwd is None and fmt is None:
        for g, name in zip(grads, names):
            if g is not None:
                _report(g, name, "grad")


def _wants_grad(entry: _Entry) -> bool:
    _, fwd, bwd, fmt, _ = entry
    return bwd is not None or (fwd is None and fmt is None)


def _from_tensors(xs: Sequence[torch.Tensor], kinds: Sequence[str]) -> list[Any]:
    """The op's inputs as the user gave them: tensors, and scalars back as Python numbers."""
    out: list[Any] = []
    for x, kind in zip(xs, kinds):
        out.append(x if kind == "t" else int(x.item()) if kind == "i" else float(x.item()) if kind == "f"
                   else bool(x.item()))
    return out


def _define_ops() -> None:
    # Guarded so that re-importing this module (importlib.reload) does not register twice.
    if hasattr(torch.ops, "torchport") and hasattr(torch.ops.torchport, "inspect"):
        return

    # A list of tensors in, clones out (a custom op may not return its inputs).
    @torch.library.custom_op("torchport::inspect_grad", mutates_args=())
    def inspect_grad(grads: list[torch.Tensor], hook: int, mask: list[bool]) -> list[torch.Tensor]:
        it = iter(grads)
        _run_bwd(_HOOKS[hook], [next(it) if m else None for m in mask])
        return [g.clone() for g in grads]

    @inspect_grad.register_fake
    def _(grads: list[torch.Tensor], hook: int, mask: list[bool]) -> list[torch.Tensor]:
        return [torch.empty_like(g) for g in grads]

    @torch.library.custom_op("torchport::inspect", mutates_args=())
    def inspect_op(xs: list[torch.Tensor], hook: int) -> list[torch.Tensor]:
        entry = _HOOKS[hook]
        with torch.no_grad():
            _run_fwd(entry, _from_tensors(xs, entry[4]))
        return [x.clone() for x in xs]

    @inspect_op.register_fake
    def _(xs: list[torch.Tensor], hook: int) -> list[torch.Tensor]:
        return [torch.empty_like(x) for x in xs]

    def inspect_setup(ctx: Any, inputs: tuple[list[torch.Tensor], int], output: list[torch.Tensor]) -> None:
        ctx.hook, ctx.rg = inputs[1], [x.requires_grad for x in inputs[0]]
        ctx.mark_non_differentiable(*[o for o, rg in zip(output, ctx.rg) if not rg])

    def inspect_backward(ctx: Any, grads: list[torch.Tensor | None]) -> tuple[list[torch.Tensor | None], None]:
        mask = [rg and g is not None for rg, g in zip(ctx.rg, grads)]
        if _wants_grad(_HOOKS[ctx.hook]) and any(mask):
            seen = iter(torch.ops.torchport.inspect_grad([g for g, m in zip(grads, mask) if m], ctx.hook, mask))
            grads = [next(seen) if m else g for g, m in zip(grads, mask)]
        return [g if rg else None for g, rg in zip(grads, ctx.rg)], None

    inspect_op.register_autograd(inspect_backward, setup_context=inspect_setup)


_define_ops()


def _rank_selected(ranks: int | Sequence[int] | None) -> bool:
    if ranks is None:
        return True
    return _rank0() in ((ranks,) if isinstance(ranks, int) else ranks)


def _kind(value: Any) -> str:
    """``"t"``, ``"i"``, ``"f"`` or ``"b"``; raises ``TypeError`` for anything else."""
    if isinstance(value, torch.Tensor):
        return "t"
    if isinstance(value, (bool, torch.SymBool)):
        return "b"
    if isinstance(value, (int, torch.SymInt)):
        return "i"
    if isinstance(value, (float, torch.SymFloat)):
        return "f"
    raise TypeError(f"torchport.debug.inspect takes tensors, Python numbers and SymInts, got {type(value).__name__}")


def _traced(values: Sequence[Any]) -> bool:
    """Whether a graph is being traced outside Dynamo (``make_fx``, fake tensors): then the op must be recorded,
    or the callbacks would run once, at trace time, on tensors without values."""
    key = torch._C._TorchDispatchModeKey
    if torch._C._get_dispatch_mode(key.PROXY) is not None or torch._C._get_dispatch_mode(key.FAKE) is not None:
        return True
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    fake_type = getattr(fake, "FakeTensor", None)
    return any((fake_type is not None and isinstance(v, fake_type))
               or isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) for v in values)


def inspect(*values: Any, tag: str = "inspect", fmt: str | None = None, ranks: int | Sequence[int] | None = None,
            fwd: Callback | None = None, bwd: Callback | None = None) -> Any:
    """Look at tensors and numbers anywhere -- eager, compiled with ``fullgraph=True``, traced by ``make_fx`` --
    and pass them on unchanged.

    Without ``fmt`` or callbacks, each value's stats (as :func:`tensor_stats`; a number counts as a 0-d tensor)
    go into every active :func:`watch` whose name filter takes the tag (keys ``tag``, ``tag#1``, ...), or are
    printed to stdout when no watch is active (prefixed with the rank in a distributed run); so is the
    gradient of each tensor that requires grad, in backward (kind ``"grad"``; into watches made with
    ``grads=True``).

    Args:
        values: tensors, Python ``int``/``float``/``bool`` and ``torch.SymInt``/``SymFloat``/``SymBool``.
        tag: the name of the values (``tag.0``, ``tag.1``, ... for several), in records and callbacks.
        fmt: a format string printed as ``torch._higher_order_ops.print`` prints it: ``print(fmt.format(*values))``
            at run time, with the real values, under Inductor too (``[rank N] `` before it on ranks above 0).
            Forward only; with ``fmt`` and no callbacks no stats are taken.
        ranks: which distributed ranks act: ``None`` (default) every rank; else an int or a collection of
            ints, checked against ``torch.distributed.get_rank()`` when the default process group is
            initialised, a process without one counting as rank 0. Other ranks only return their inputs.
        fwd: called once per value as ``fwd(value, tag=name, phase="fwd", rank=rank)``: a detached tensor or
            a Python number, its name (``tag`` or ``tag.i``) and the rank (0 without a process group). Under
            compilation it runs at run time inside an opaque op (its result ignored; it must not modify the
            tensor).
        bwd: called in backward once per gradient received, as ``bwd(grad, tag=name, phase="bwd", rank=rank)``.
            It sees the gradient that flows through the *returned* tensor, in eager and compiled code alike:
            a result that is not used gets no gradient, so no call. Only when grad mode is on at the call.

    Callbacks may be functions, closures, lambdas, bound methods, callable objects or ``functools.partial``;
    under compilation they must exist outside the compiled code or be built there from such objects (a
    callable built from tensors of the graph raises ``TypeError`` saying so).

    Returns the value (one argument) or a tuple of them: numbers as given; in eager code the same tensor
    objects, except that a tensor that requires grad comes back as a view of itself (``t.view_as(t)``) when a
    backward action applies, so that the gradient seen is the one that flows through the result. Under
    compilation tensors are copies with the same values, and the call stays in the graph even if the result
    is unused (ordered side effect). The rank test is made when Dynamo traces.

    Raises:
        TypeError: on a value that is not a tensor or a number.
    """
    kinds = tuple(_kind(v) for v in values)
    if not values or not _rank_selected(ranks):
        return values[0] if len(values) == 1 else tuple(values)
    if torch.compiler.is_compiling() or _traced(values):
        return _inspect_in_graph(values, kinds, tag, fmt, fwd, bwd)
    entry: _Entry = (tag, fwd, bwd, fmt, kinds)
    with torch.no_grad():
        _run_fwd(entry, [v.detach() if isinstance(v, torch.Tensor) else v for v in values])
    outs = list(values)
    rg = [isinstance(v, torch.Tensor) and v.requires_grad for v in values]
    if any(rg) and torch.is_grad_enabled() and _wants_grad(entry):
        outs = [v.view_as(v) if r else v for v, r in zip(values, rg)]

        def hook(grads: Sequence[torch.Tensor | None]) -> None:
            it = iter(grads)
            _run_bwd(entry, [next(it) if r else None for r in rg])

        torch.autograd.graph.register_multi_grad_hook([o for o, r in zip(outs, rg) if r], hook, mode="all")
    return outs[0] if len(outs) == 1 else tuple(outs)


def _inspect_in_graph(values: Sequence[Any], kinds: tuple[str, ...], tag: str, fmt: str | None,
                      fwd: Callback | None, bwd: Callback | None) -> Any:
    """The traced form: numbers become 0-d tensors, everything goes through ``torchport::inspect``."""
    xs = [v if k == "t" else torch.scalar_tensor(v, dtype=_SCALAR_DTYPES[k]) for v, k in zip(values, kinds)]
    if torch.compiler.is_dynamo_compiling():
        torch._dynamo.comptime.comptime(_register_traced)  # reads tag, fwd, bwd, fmt, kinds
        hook = _last_id()
    else:
        hook = _hook_id((tag, fwd, bwd, fmt, kinds))
    outs = torch.ops.torchport.inspect(xs, hook)
    result = [o if k == "t" else v for o, v, k in zip(outs, values, kinds)]
    return result[0] if len(result) == 1 else tuple(result)
