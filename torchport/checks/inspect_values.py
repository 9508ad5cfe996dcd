"""``inspect``: look at tensors, Python scalars and SymInts anywhere, eager or compiled, and pass them on.

Re-exported as ``torchport.debug.inspect`` and ``torchport.checks.debug.inspect``.

How it survives compilation: under ``torch.compile`` (and under a raw ``make_fx`` trace) it calls the custom
op ``torchport::inspect`` (a registered *ordered side effect*, like ``torch._higher_order_ops.print``, so
AOTAutograd and Inductor keep it even when its result is unused); scalars enter the op as 0-d tensors and
leave it as Python numbers again; constants (strings, ``None``) never enter it. The callbacks, the format
string and the constants are Python objects the op finds in a registry by an integer id that is a constant of
the graph. Under Dynamo the id is made at trace time by a ``comptime`` callback, which can read the real object
behind any callable Dynamo holds (a function, a closure, a bound method, a callable object, a
``functools.partial``). The op's autograd formula calls ``torchport::inspect_grad``, also ordered and opaque,
so the backward callback runs inside the compiled backward. In eager code no op is involved: the callbacks run
directly and the backward one is a ``register_multi_grad_hook`` on the returned tensors.

Whether a call runs inside a backward pass (an ``autograd.Function.backward``, a backward hook) is read when it
runs, also inside compiled code: the autograd engine is executing a graph task
(``torch._C._current_graph_task_id() != -1``) with grad mode off.

A result that is not used gets no gradient, so no backward action. That is detected where it can be: in eager
code (and in graphs that run under eager autograd: ``backend="eager"``, ``make_fx`` graphs) by a one-shot
pre-hook on the autograd node of each input, which fires when a backward pass reaches the input and finds that
no gradient came through the result; under AOTAutograd (``aot_eager``, ``inductor``) when the op's autograd
formula was traced in forward but never in backward, told at the first run. Either way one ``UserWarning`` per tag.
"""

from __future__ import annotations

import builtins
import functools
import inspect as pyinspect
import itertools
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch

from torchport.checks.debug import _LOCK, _header, _rank, _register_effects, _report

__all__ = ["inspect"]

Callback = Callable[..., Any]
PHASES = (None, "fwd", "bwd")


class _Entry(NamedTuple):
    """What one call site does; hashable when its callbacks and constants are (then one id per site)."""

    tag: str
    fwd: Callback | None
    bwd: Callback | None
    fmt: str | None
    kinds: tuple[str, ...]  # per item (positional values, then keyword fields): "t", "i", "f", "b" or "c"
    consts: tuple[Any, ...]  # the item itself where its kind is "c" (a constant), else None
    keys: tuple[str, ...]  # the names of the keyword fields (the last len(keys) items)
    phase: str | None
    header: bool  # a tag was given: callbacks run under a "[tag][fwd]" line, as torch's inspector prints


_HOOKS: dict[int, _Entry] = {}
_HOOK_KEYS: dict[Any, int] = {}
_HOOK_IDS = itertools.count(1)
_LAST_ID = [0]  # the id the last comptime registration made, read back as a graph constant
_SCALAR_DTYPES = {"i": torch.int64, "f": torch.float64, "b": torch.bool}
_CONSTANT_TYPES = (str, bytes, type(None), torch.dtype, torch.device)
_STATE = threading.local()  # .trace_time: an op call that make_fx records with real tensors (no action)
# Unused results under AOTAutograd: (hook, item) traced with a gradient in forward / in backward.
_AOT_NEEDS: set[tuple[int, int]] = set()
_AOT_USED: set[tuple[int, int]] = set()
_WARNED: set[str] = set()
_SIGNATURES: dict[Any, frozenset[str] | None] = {}
_INFO_KEYS = frozenset({"tag", "phase", "rank"})


# ---------------------------------------------------------------- callbacks


def _signature_key(cb: Callback) -> Any:
    """What a callback's parameter names depend on, so a lambda made anew at each call is looked at once."""
    if isinstance(cb, types.FunctionType):
        return cb.__code__
    if isinstance(cb, types.MethodType) and isinstance(cb.__func__, types.FunctionType):
        return ("method", cb.__func__.__code__)
    if isinstance(cb, functools.partial):
        return None  # its bound keywords change what is left: looked at each time
    return type(cb)


def _accepted(cb: Callback) -> frozenset[str] | None:
    """The info keywords (tag, phase, rank) ``cb`` takes after the value; ``None``: all (it has ``**kwargs``)."""
    key = _signature_key(cb)
    if key is not None and key in _SIGNATURES:
        return _SIGNATURES[key]
    try:
        params = list(pyinspect.signature(cb).parameters.values())
    except (TypeError, ValueError):  # no signature (a builtin such as print): the value only
        names: frozenset[str] | None = frozenset()
    else:
        if any(p.kind is p.VAR_KEYWORD for p in params):
            names = None
        else:
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            taken = positional[0].name if positional else None  # the parameter the value goes to
            names = frozenset(p.name for p in params if p.name in _INFO_KEYS and p.name != taken
                              and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    if key is not None:
        _SIGNATURES[key] = names
    return names


def _call(cb: Callback, value: Any, **info: Any) -> None:
    """``cb(value, **info)`` with only the keywords its signature takes (``lambda t: ...`` gets the value only)."""
    names = _accepted(cb)
    cb(value, **(info if names is None else {k: v for k, v in info.items() if k in names}))


# ---------------------------------------------------------------- the actions, on real values


def _hook_id(entry: _Entry) -> int:
    """Id of one entry, the same id for an equal entry when it is hashable."""
    _register_effects(torch.ops.torchport.inspect.default, torch.ops.torchport.inspect_grad.default)
    try:
        hash(entry)
        key: Any = entry
    except TypeError:  # an unhashable callable or constant: one id per trace
        key = None
    with _LOCK:
        if key is not None and key in _HOOK_KEYS:
            return _HOOK_KEYS[key]
        hid = next(_HOOK_IDS)
        _HOOKS[hid] = entry
        if key is not None:
            _HOOK_KEYS[key] = hid
        return hid


def _names(tag: str, n: int) -> list[str]:
    return [tag] if n == 1 else [f"{tag}.{i}" for i in range(n)]


def _rank0() -> int:
    rank = _rank()
    return 0 if rank is None else rank


def _in_backward() -> bool:
    """Whether the autograd engine is running a backward pass here (not a checkpoint's recomputed forward,
    which runs with grad mode on; nor a ``create_graph=True`` backward, which does too)."""
    return torch._C._current_graph_task_id() != -1 and not torch.is_grad_enabled()


def _split(entry: _Entry, items: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    """The positional values and the keyword fields of a call."""
    n = len(items) - len(entry.keys)
    return list(items[:n]), dict(zip(entry.keys, items[n:]))


def _print_format(fmt: str, values: Sequence[Any], fields: dict[str, Any]) -> None:
    """``fmt.format(*values, **fields)``, printed as ``torch._higher_order_ops.print`` prints it (``[rank N] ``
    before it when N > 0)."""
    rank = _rank()
    text = fmt.format(*values, **fields)
    builtins.print(text if not rank else f"[rank {rank}] {text}", flush=True)


def _run_now(entry: _Entry, items: Sequence[Any], back: bool) -> None:
    """The action on the values of a call as it runs: print the format, report stats or call a callback once
    per value. In a backward pass the values are gradients: ``bwd`` (else ``fwd``) gets them, told ``"bwd"``."""
    if entry.phase == "bwd" and not back:
        return  # only their gradients, later
    values, fields = _split(entry, items)
    if entry.fmt is not None:
        _print_format(entry.fmt, values, fields)
    phase = "bwd" if back else "fwd"
    cb = (entry.bwd or entry.fwd) if back else entry.fwd
    if cb is None:
        if entry.fwd is None and entry.bwd is None and entry.fmt is None:
            _report(values, _names(entry.tag, len(values)), "grad" if back else "output",
                    _header(entry.tag, phase))
        return
    if entry.header:
        builtins.print(_header(entry.tag, phase), flush=True)
    rank = _rank0()
    for v, name in zip(values, _names(entry.tag, len(values))):
        _call(cb, v, tag=name, phase=phase, rank=rank)


def _run_bwd(entry: _Entry, grads: Sequence[torch.Tensor | None]) -> None:
    """The action on the gradients through the returned tensors: ``bwd`` once per gradient received, or stats."""
    names = [n for g, n in zip(grads, _names(entry.tag, len(grads))) if g is not None]
    got = [g for g in grads if g is not None]
    if entry.bwd is not None:
        if entry.header:
            builtins.print(_header(entry.tag, "bwd"), flush=True)
        rank = _rank0()
        for g, name in zip(got, names):
            _call(entry.bwd, g, tag=name, phase="bwd", rank=rank)
    elif entry.fwd is None and entry.fmt is None:
        _report(got, names, "grad", _header(entry.tag, "bwd"))


def _wants_grad(entry: _Entry) -> bool:
    return entry.phase != "fwd" and (entry.bwd is not None or (entry.fwd is None and entry.fmt is None))


_UNUSED = {
    "eager": "a backward pass reached a tensor given to inspect but no gradient came through the tensor it returned",
    "aot": "the compiled graph does not use the tensor it returned, so no gradient comes through it",
}


def _warn_unused(tag: str, where: str) -> None:
    if tag in _WARNED:
        return
    _WARNED.add(tag)
    warnings.warn(f"torchport.debug.inspect(tag={tag!r}): {_UNUSED[where]}, and its backward action runs only on "
                  f"that gradient: use the returned value in place of the input (x = inspect(x, ...))",
                  UserWarning, stacklevel=2)


class _Seen:
    """Which results of one call got a gradient, and in which backward pass (graph task)."""

    def __init__(self) -> None:
        self.task = -2
        self.got: set[int] = set()

    def note(self, mask: Sequence[bool]) -> None:
        task = torch._C._current_graph_task_id()
        if task != self.task:
            self.task, self.got = task, set()
        self.got.update(i for i, m in enumerate(mask) if m)


def _watch_inputs(tag: str, pairs: Sequence[tuple[int, torch.Tensor, torch.Tensor]], seen: _Seen,
                  below_autograd: bool = False) -> None:
    """Pre-hooks on the autograd nodes of the inputs of one call: a backward pass that reaches input ``i`` after
    no gradient came through result ``i``, which no longer exists (so no later pass can use it), warns that the
    result was unused, once. ``pairs``: (index, input, result). The hooks hold no tensor; an input used nowhere
    else dies with the unused result, and its hook with it. ``below_autograd``: called inside the op's autograd
    formula, where a leaf's AccumulateGrad node cannot be reached, so a leaf gets a tensor hook instead."""
    handles: list[Any] = []

    def make(i: int, result: weakref.ref[torch.Tensor]) -> Callable[..., None]:
        def pre(grad_outputs: Any) -> None:
            got = seen.task == torch._C._current_graph_task_id() and i in seen.got
            if not got and result() is not None:
                return  # the result may still be used by a later backward pass
            if not got:
                _warn_unused(tag, "eager")
            for h in handles:
                h.remove()
        return pre

    for i, x, out in pairs:
        pre = make(i, weakref.ref(out))
        if x.grad_fn is not None:
            handles.append(x.grad_fn.register_prehook(pre))
        elif below_autograd:  # a leaf seen inside the op's autograd formula: its AccumulateGrad is out of reach
            handles.append(x.register_hook(pre))
        else:
            handles.append(torch.autograd.graph.get_gradient_edge(x).node.register_prehook(pre))


def _from_tensors(entry: _Entry, xs: Sequence[torch.Tensor]) -> list[Any]:
    """The items as the user gave them: tensors, numbers back as Python numbers, constants from the entry."""
    it = iter(xs)
    out: list[Any] = []
    for kind, const in zip(entry.kinds, entry.consts):
        if kind == "c":
            out.append(const)
            continue
        x = next(it)
        out.append(x.detach() if kind == "t" else int(x.item()) if kind == "i" else float(x.item()) if kind == "f"
                   else bool(x.item()))
    return out


def _tracing(xs: Sequence[Any]) -> bool:
    """Whether these are values of a trace (fake, functional or proxy), not real values."""
    key = torch._C._TorchDispatchModeKey
    if any(torch._C._get_dispatch_mode(k) is not None for k in (key.PROXY, key.FAKE, key.FUNCTIONAL)):
        return True
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    fake_type = getattr(fake, "FakeTensor", None)
    return any((fake_type is not None and isinstance(v, fake_type))
               or isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) for v in xs)


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
        if not getattr(_STATE, "trace_time", False):  # make_fx records the call: act when the graph runs
            if any(k in _AOT_NEEDS and k not in _AOT_USED for k in ((hook, i) for i in range(len(xs)))):
                _warn_unused(entry.tag, "aot")
            back = _in_backward()
            with torch.no_grad():
                _run_now(entry, _from_tensors(entry, xs), back)
        return [x.clone() for x in xs]

    @inspect_op.register_fake
    def _(xs: list[torch.Tensor], hook: int) -> list[torch.Tensor]:
        return [torch.empty_like(x) for x in xs]

    def inspect_setup(ctx: Any, inputs: tuple[list[torch.Tensor], int], output: list[torch.Tensor]) -> None:
        xs, hook = inputs
        ctx.hook, ctx.rg, ctx.seen = hook, [x.requires_grad for x in xs], _Seen()
        ctx.mark_non_differentiable(*[o for o, rg in zip(output, ctx.rg) if not rg])
        if not _wants_grad(_HOOKS[hook]) or not any(ctx.rg):
            return
        key = torch._C._TorchDispatchModeKey
        if _tracing(xs):
            if torch._C._get_dispatch_mode(key.FUNCTIONAL) is not None:  # AOTAutograd, not Dynamo's fake run
                _AOT_NEEDS.update((hook, i) for i, rg in enumerate(ctx.rg) if rg)
        elif torch._C._current_graph_task_id() == -1:  # a graph that runs under eager autograd
            _watch_inputs(_HOOKS[hook].tag, [(i, x, o) for i, (x, o) in enumerate(zip(xs, output)) if ctx.rg[i]],
                          ctx.seen, below_autograd=True)

    def inspect_backward(ctx: Any, grads: list[torch.Tensor | None]) -> tuple[list[torch.Tensor | None], None]:
        mask = [rg and g is not None for rg, g in zip(ctx.rg, grads)]
        if _wants_grad(_HOOKS[ctx.hook]) and any(mask):
            if _tracing([g for g in grads if g is not None]):
                _AOT_USED.update((ctx.hook, i) for i, m in enumerate(mask) if m)
            ctx.seen.note(mask)
            seen = iter(torch.ops.torchport.inspect_grad([g for g, m in zip(grads, mask) if m], ctx.hook, mask))
            grads = [next(seen) if m else g for g, m in zip(grads, mask)]
        return [g if rg else None for g, rg in zip(grads, ctx.rg)], None

    inspect_op.register_autograd(inspect_backward, setup_context=inspect_setup)


_define_ops()


# ---------------------------------------------------------------- the call


def _rank_selected(ranks: int | Sequence[int] | None) -> bool:
    if ranks is None:
        return True
    return _rank0() in ((ranks,) if isinstance(ranks, int) else ranks)


def _constant(value: Any) -> bool:
    if isinstance(value, _CONSTANT_TYPES):
        return True
    if isinstance(value, (tuple, list)):
        return all(_constant(v) or type(v) in (bool, int, float) for v in value)
    return False


def _kind(value: Any) -> str:
    """``"t"``, ``"i"``, ``"f"``, ``"b"`` or ``"c"`` (a constant); raises ``TypeError`` for anything else."""
    if isinstance(value, torch.Tensor):
        return "t"
    if isinstance(value, (bool, torch.SymBool)):
        return "b"
    if isinstance(value, (int, torch.SymInt)):
        return "i"
    if isinstance(value, (float, torch.SymFloat)):
        return "f"
    if _constant(value):
        return "c"
    raise TypeError(f"torchport.debug.inspect takes tensors, Python numbers, SymInts and constants (str, bytes, "
                    f"None, dtype, device, tuples of these and numbers), got {type(value).__name__}")


def inspect(*values: Any, tag: str | None = None, fmt: str | None = None, ranks: int | Sequence[int] | None = None,
            fwd: Callback | None = None, bwd: Callback | None = None, phase: str | None = None,
            **fields: Any) -> Any:
    """Look at tensors and numbers anywhere -- eager, compiled with ``fullgraph=True``, traced by ``make_fx`` --
    and pass them on unchanged.

    Mirrors torch's two compile-safe printers: ``torch._higher_order_ops.print(format_str, *args, **kwargs)``
    (``fmt`` and keyword fields) and the opaque tensor inspector of torch's "Printing and Inspecting Tensors
    Inside torch.compile" (``make_opaque_inspect_tensor_fn(fwd_f, bwd_f)(*tensors, tag=, ranks=, phase=)``:
    one-argument callbacks, ``[tag][fwd]`` labels, ``phase``).

    Without ``fmt`` or callbacks, each value's stats (as :func:`tensor_stats`; a number counts as a 0-d tensor,
    a constant is shown as its value) go into every active :func:`watch` whose name filter takes the tag (keys
    ``tag``, ``tag#1``, ...), or are printed to stdout under a ``[tag][fwd]`` line when no watch is active
    (``[rank N][tag][fwd]`` in a distributed run); so is the gradient of each tensor that requires grad, in
    backward, under ``[tag][bwd]`` (kind ``"grad"``; into watches made with ``grads=True``).

    Args:
        values: tensors, Python ``int``/``float``/``bool``, ``torch.SymInt``/``SymFloat``/``SymBool``, and
            constants (``str``, ``bytes``, ``None``, ``torch.dtype``, ``torch.device``, tuples and lists of
            these and plain numbers), which are passed through and never traced as tensors.
        tag: the name of the values (``tag.0``, ``tag.1``, ... for several) in records and callbacks; default
            ``"inspect"``. Given, callbacks run under a ``[tag][fwd]`` / ``[tag][bwd]`` line, as torch's
            inspector prints it.
        fmt: a format string printed as ``torch._higher_order_ops.print`` prints it:
            ``print(fmt.format(*values, **fields))`` when the call runs, with the real values, under Inductor
            too (``[rank N] `` before it on ranks above 0). With ``fmt`` and no callbacks no stats are taken.
        ranks: which distributed ranks act: ``None`` (default) every rank; else an int or a collection of
            ints, checked against ``torch.distributed.get_rank()`` when the default process group is
            initialised, a process without one counting as rank 0. Other ranks only return their inputs.
        fwd: called once per value as ``fwd(value, tag=name, phase="fwd", rank=rank)``, with only those keywords
            its signature takes (``lambda t: print(t.shape)`` gets the value alone; ``**kwargs`` gets all): a
            detached tensor, a Python number or a constant, its name (``tag`` or ``tag.i``) and the rank (0
            without a process group). Under compilation it runs at run time inside an opaque op (its result
            ignored; it must not modify the tensor). Called inside a backward pass with no ``bwd``, it gets the
            values there, told ``phase="bwd"``.
        bwd: called in backward once per gradient received, as ``bwd(grad, tag=name, phase="bwd", rank=rank)``
            (keywords as for ``fwd``). It sees the gradient that flows through the *returned* tensor, in eager
            and compiled code alike; only when grad mode is on at the call. A call made inside a backward pass
            (an ``autograd.Function.backward``) hands it the values it is given there, which are gradients.
        phase: ``None`` (default) acts on the values and, in backward, on their gradients. ``"fwd"``: on the
            values only, no backward action. ``"bwd"``: on gradients only: in forward code no action until the
            gradient comes; in code that runs in a backward pass, on the values it is given.
        fields: keyword fields of ``fmt`` (``fmt="shape={s} val={v}", s=x.shape[0], v=x.sum()``), of the same
            kinds as ``values``; they are only printed: not returned, no stats, no callbacks, no gradient.

    Callbacks may be functions, closures, lambdas, bound methods, callable objects or ``functools.partial``;
    under compilation they must exist outside the compiled code or be built there from such objects (a
    callable built from tensors of the graph raises ``TypeError`` saying so).

    Returns the value (one argument) or a tuple of them: numbers and constants as given; in eager code the
    same tensor objects, except that a tensor that requires grad comes back as a view of itself
    (``t.view_as(t)``) when a backward action applies, so that the gradient seen is the one that flows through
    the result. A backward pass that reaches an input but gets no gradient through its result (the result is
    unused) warns once per tag. Under compilation tensors are copies with the same values, and the call stays
    in the graph even if the result is unused (ordered side effect). The rank test is made when Dynamo
    traces. Under ``make_fx`` (any tracing mode) nothing runs at trace time: the call is recorded and acts when
    the graph runs.

    Raises:
        TypeError: on a value of another type, or keyword fields without ``fmt``.
        ValueError: on a ``phase`` other than ``None``, ``"fwd"`` or ``"bwd"``.
    """
    if phase not in PHASES:
        raise ValueError(f"torchport.debug.inspect: phase must be None, 'fwd' or 'bwd', got {phase!r}")
    if fields and fmt is None:
        raise TypeError(f"torchport.debug.inspect: keyword fields ({', '.join(fields)}) are fields of fmt: "
                        f"pass fmt= as well, or pass the values positionally")
    items = (*values, *fields.values())
    kinds = tuple(_kind(v) for v in items)
    if not items or not _rank_selected(ranks):
        return values[0] if len(values) == 1 else tuple(values)
    name = "inspect" if tag is None else tag
    consts = tuple(v if k == "c" else None for v, k in zip(items, kinds))
    keys = tuple(fields)
    if torch.compiler.is_compiling() or _tracing(items):
        return _inspect_in_graph(values, items, kinds, name, fmt, fwd, bwd, consts, keys, phase, tag is not None)
    entry = _Entry(name, fwd, bwd, fmt, kinds, consts, keys, phase, tag is not None)
    back = _in_backward()
    with torch.no_grad():
        _run_now(entry, [v.detach() if isinstance(v, torch.Tensor) else v for v in items], back)
    outs = list(values)
    rg = [isinstance(v, torch.Tensor) and v.requires_grad for v in values]
    if any(rg) and torch.is_grad_enabled() and not back and _wants_grad(entry):
        outs = [v.view_as(v) if r else v for v, r in zip(values, rg)]
        seen = _Seen()

        def hook(grads: Sequence[torch.Tensor | None]) -> None:
            it = iter(grads)
            full = [next(it) if r else None for r in rg]
            seen.note([g is not None for g in full])
            _run_bwd(entry, full)

        torch.autograd.graph.register_multi_grad_hook([o for o, r in zip(outs, rg) if r], hook, mode="all")
        _watch_inputs(name, [(i, v, o) for i, (v, o) in enumerate(zip(values, outs)) if rg[i]], seen)
    return outs[0] if len(outs) == 1 else tuple(outs)


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
    """Run by Dynamo at trace time (``comptime``): register this call's entry and remember the id."""
    const = {n: ctx.get_local(n).as_python_constant() for n in ("name", "fmt", "kinds", "consts", "keys", "phase",
                                                                "header")}
    _LAST_ID[0] = _hook_id(_Entry(const["name"], _held(ctx.get_local("fwd")), _held(ctx.get_local("bwd")),
                                  const["fmt"], const["kinds"], const["consts"], const["keys"], const["phase"],
                                  const["header"]))


def _last_id() -> int:
    """The id :func:`_register_traced` just made; Dynamo calls it at trace time and bakes in the result."""
    return _LAST_ID[0]


# What torch.compiler.assume_constant_result sets, without importing torch._dynamo (~1 s) here.
_last_id._dynamo_marked_constant = True  # type: ignore[attr-defined]


def _inspect_in_graph(values: Sequence[Any], items: Sequence[Any], kinds: tuple[str, ...], name: str,
                      fmt: str | None, fwd: Callback | None, bwd: Callback | None, consts: tuple[Any, ...],
                      keys: tuple[str, ...], phase: str | None, header: bool) -> Any:
    """The traced form: numbers become 0-d tensors, constants stay in the entry, the rest goes through
    ``torchport::inspect``."""
    xs = [v if k == "t" else torch.scalar_tensor(v, dtype=_SCALAR_DTYPES[k])
          for v, k in zip(items, kinds) if k != "c"]
    if not xs:  # constants only: Inductor places an op by its tensors, so give it one (ignored)
        xs = [torch.zeros(())]
    if torch.compiler.is_dynamo_compiling():
        torch._dynamo.comptime.comptime(_register_traced)  # reads the locals named in it
        hook = _last_id()
        outs = torch.ops.torchport.inspect(xs, hook)
    else:
        hook = _hook_id(_Entry(name, fwd, bwd, fmt, kinds, consts, keys, phase, header))
        # make_fx in real mode runs the op on real tensors to record it: no action then (torch's print op
        # does not print at trace time either).
        real = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.PROXY) is not None
        _STATE.trace_time = real
        try:
            outs = torch.ops.torchport.inspect(xs, hook)
        finally:
            _STATE.trace_time = False
    traced = iter(outs)
    result: list[Any] = []
    for v, k in zip(values, kinds):  # numbers come back as given (their 0-d tensors are dropped)
        out = next(traced) if k != "c" else v
        result.append(out if k == "t" else v)
    return result[0] if len(result) == 1 else tuple(result)
