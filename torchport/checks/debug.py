"""Per-module value debugging: stats of every module's outputs (and gradients), printed or saved.

Modelled on Inductor's intermediate-value debug printer
(``torch._inductor.config.aot_inductor.debug_intermediate_value_printer``: levels OFF / SAVE_ONLY /
PRINT_ONLY / PRINT_KERNEL_NAMES_ONLY; numel, size, dtype, mean, min, max, std), but per
``nn.Module`` and for any backend, so that a CUDA run and its port can be compared with
``torchport compare``::

    from torchport.checks import debug
    with debug.watch(model, level=debug.Level.SAVE, run_dir="runs/cuda", grads=True):
        loss = model(x).sum(); loss.backward()

Any tensor, anywhere (also as ``torchport.debug.inspect``): :func:`inspect` reports stats of the
tensors it is given (and, in backward, of their gradients), or calls your callbacks, and returns the
tensors unchanged, in eager code and under ``torch.compile(fullgraph=True)`` without a graph break::

    h = debug.inspect(h, tag="attn.out")                       # prints, or saves into active watches
    q, k = debug.inspect(q, k, tag="qk", fwd=check, bwd=check_grads, ranks=[0])

Not imported by ``import torchport.runtime``; imports torch and the standard library only.

How it survives ``torch.compile(fullgraph=True)``: forward hooks (which Dynamo inlines) pass each
output tensor through the custom op ``torchport::debug_record``. A ``torch.library.custom_op`` is
opaque to Dynamo, AOTAutograd and Inductor, so its Python body runs at run time, with real values,
in eager and compiled code alike, and never breaks the graph. It returns a clone of its input (a
custom op may not return an alias), which the hook substitutes for the output so the op is never
dead-code-eliminated. Its autograd formula records the incoming gradient with
``torchport::debug_record_grad``. Call counters live in the op's Python state, not in the hooks,
so a compiled run numbers repeated calls (``block#1``) exactly like eager.

Saved format (``RUN_DIR/stats.pt``, readable with ``torch.load(path, weights_only=True)``)::

    {"format": "torchport-debug-values", "version": 1, "torch": "2.13.0",
     "records": [  # in call order (forward hooks fire when a module *finishes*)
        {"name": "fc1", "call": 0, "key": "fc1", "kind": "output", "step": 0, "order": 0,
         "shape": [3, 8], "dtype": "float32", "device": "cpu", "numel": 24,
         "mean": float, "min": float, "max": float, "std": float, "nan": int, "inf": int,
         "values": Tensor | None},  # the CPU tensor itself when numel <= max_values (64)
        ...]}

``name`` is the qualified module name (``named_modules()``; the root is ``<root>``), with
``.0``/``.key`` appended for tensors inside tuples, lists and dicts; ``key`` is ``name`` plus
``#k`` from the second call of the same module in a step onwards; ``kind`` is ``"output"`` or
``"grad"`` (the gradient with respect to that output, i.e. ``grad_output`` of
``register_full_backward_hook``). :func:`inspect` records use its ``tag`` as ``name`` (``tag.0``,
``tag.1`` for several tensors). ``values`` is kept up to ``watch(max_values=...)`` elements (64 by
default; ``None``: every tensor whole).

:func:`inspect` lives in :mod:`torchport.checks.inspect_values` (how it survives compilation is told
there) and is re-exported here.

A model compiled and run before the watch began: Dynamo does not guard on module hooks
(``torch._dynamo.config.skip_nnmodule_hook_guards``, on by default), so its compiled code would never
call hooks added later. So when a watch adds or removes hooks while compiled code exists, it drops
Dynamo's compiled code (``torch._dynamo.reset_code_caches()``): every compiled function recompiles once
on its next call, with the hooks in, and once more after the watch ends, without them.
"""

from __future__ import annotations

import enum
import fnmatch
import functools
import itertools
import math
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, Union

import torch
from torch import nn

__all__ = ["ENV_DIR", "ENV_LEVEL", "ENV_NAMES", "FORMAT", "Level", "MAX_VALUES", "Watch", "flush", "inspect",
           "level_from_env", "load", "name_filter", "tensor_stats", "value_stats", "watch"]

ENV_LEVEL = "TORCHPORT_DEBUG_VALUES"
ENV_DIR = "TORCHPORT_DEBUG_DIR"
ENV_NAMES = "TORCHPORT_DEBUG_NAMES"
FORMAT = "torchport-debug-values"
VERSION = 1
STATS_FILE = "stats.pt"
MAX_VALUES = 64  # tensors with at most this many elements are printed (and, by default, saved) in full
ROOT_NAME = "<root>"


class Level(enum.IntEnum):
    """What a watch does, like Inductor's ``IntermediateValueDebuggingLevel``.

    OFF (0) installs nothing; SAVE (1) keeps stats and writes them to ``run_dir``; PRINT (2) prints
    stats as modules run; NAMES (3) prints only the module names, in call order.
    """

    OFF = 0
    SAVE = 1
    PRINT = 2
    NAMES = 3


def _searches(pattern: re.Pattern[str], name: str) -> bool:
    return pattern.search(name) is not None


def _glob(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name.lower(), pattern)


def level_from_env(default: Level = Level.OFF) -> Level:
    """The level in ``TORCHPORT_DEBUG_VALUES`` (``0``-``3`` or ``off``/``save``/``print``/``names``).

    Returns ``default`` when the variable is unset or empty; raises ``ValueError`` on other values.
    """
    raw = os.environ.get(ENV_LEVEL, "").strip()
    if not raw:
        return default
    try:
        return Level(int(raw)) if raw.isdigit() else Level[raw.upper()]
    except (KeyError, ValueError):
        raise ValueError(f"{ENV_LEVEL}={raw!r}: expected 0-3 or off/save/print/names") from None


def tensor_stats(t: torch.Tensor, max_values: int | None = MAX_VALUES) -> dict[str, Any]:
    """Stats of one tensor as plain Python values (eager; no autograd; breaks a compiled graph: use
    :func:`inspect` there).

    Args:
        t: any tensor, any shape, dtype and device.
        max_values: keep the values when ``numel <= max_values``; ``None`` keeps them always.

    Returns a dict with ``shape`` (list of int), ``dtype`` (``"float32"``), ``device`` (``"cpu"``),
    ``numel``, ``mean``, ``min``, ``max``, ``std`` (floats, computed in float64; ``std`` is
    ``torch.std`` with ``correction=0`` so one element gives 0; NaN when the tensor is empty),
    ``nan`` and ``inf`` (counts) and ``values`` (a detached CPU copy when ``numel <= max_values``,
    else ``None``). Integer and bool tensors are cast to float64; complex ones use ``abs()``.
    """
    t = t.detach()
    info: dict[str, Any] = {
        "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "device": str(t.device),
        "numel": t.numel(),
        "values": t.cpu().clone() if max_values is None or t.numel() <= max_values else None,
    }
    x = t.abs() if t.is_complex() else t
    x = x.to(torch.float64) if x.device.type != "mps" else x.to(torch.float32)  # MPS has no float64
    if x.numel() == 0:
        info.update(mean=math.nan, min=math.nan, max=math.nan, std=math.nan, nan=0, inf=0)
        return info
    # One host transfer for all stats, not seven .item() syncs.
    packed = torch.stack([x.mean(), x.min(), x.max(), x.std(correction=0),
                          x.isnan().sum().to(x.dtype), x.isinf().sum().to(x.dtype)]).tolist()
    info.update(mean=packed[0], min=packed[1], max=packed[2], std=packed[3],
                nan=int(packed[4]), inf=int(packed[5]))
    return info


# ---------------------------------------------------------------- module-name filters

NameFilter = Union[str, "re.Pattern[str]", Sequence[Union[str, "re.Pattern[str]"]], Callable[[str], bool], None]


def name_filter(names: NameFilter) -> Callable[[str], bool] | None:
    """A predicate on names from a filter spec, like Inductor's kernel-name filter; ``None``: no filter.

    ``names`` is a glob (``fnmatch`` against the whole name: ``"encoder.*.attn"``; ``*`` also crosses dots),
    several globs in one string separated by commas (``"fc1,head*"``, the form ``TORCHPORT_DEBUG_NAMES``
    takes), a regular expression as ``"re:PATTERN"`` (``search``: anchor it with ``^``/``$`` to match whole
    names), a compiled ``re.Pattern`` (its own flags), a list mixing these, or any callable ``name -> bool``.
    Globs and ``"re:"`` patterns ignore case, as Inductor's kernel-name filter does (it lowercases both
    sides). Raises ``ValueError`` on a bad regular expression.
    """
    if names is None or callable(names) and not isinstance(names, re.Pattern):
        return names
    specs: list[Any] = []
    for item in ([names] if isinstance(names, (str, re.Pattern)) else list(names)):
        if isinstance(item, str) and not item.startswith("re:"):
            specs.extend(part.strip() for part in item.split(",") if part.strip())
        else:
            specs.append(item)
    tests: list[Callable[[str], bool]] = []
    for spec in specs:
        if isinstance(spec, str) and spec.startswith("re:"):
            try:
                spec = re.compile(spec[3:], re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"bad name filter {spec!r}: {exc}") from None
        if isinstance(spec, re.Pattern):
            tests.append(functools.partial(_searches, spec))
        elif isinstance(spec, str):
            tests.append(functools.partial(_glob, pattern=spec.lower()))
        else:
            raise ValueError(f"bad name filter item {spec!r}: expected a glob, 're:PATTERN' or re.Pattern")
    return lambda name: any(test(name) for test in tests)


# ---------------------------------------------------------------- run-time state (outside any graph)

_LOCK = threading.Lock()
_WATCHES: dict[int, Watch] = {}
_IDS = itertools.count(1)


def _fmt_values(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt_values(x) for x in v) + "]"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _format(rec: dict[str, Any], prefix: str = "[torchport]") -> str:
    head = f"{prefix} {rec['key']} {rec['kind']}:"
    if "value" in rec:  # a number or a constant, as Inductor's printer prints "Value: arg" for non-tensors
        return f"{head} value={rec['value']!r} ({rec['type']})"
    if rec["numel"] == 0:
        return f"{head} shape={tuple(rec['shape'])} dtype={rec['dtype']} device={rec['device']} numel=0"
    text = (f"{head} shape={tuple(rec['shape'])} dtype={rec['dtype']} device={rec['device']} "
            f"numel={rec['numel']} mean={rec['mean']:.6g} min={rec['min']:.6g} max={rec['max']:.6g} "
            f"std={rec['std']:.6g} nan={rec['nan']} inf={rec['inf']}")
    if rec["values"] is not None and rec["numel"] <= MAX_VALUES:  # whole saved tensors are not printed
        text += f"\n  values={_fmt_values(rec['values'].tolist())}"
    return text


# Non-tensor values a record keeps as they are (weights_only-loadable); other constants are kept as their repr.
_PLAIN = (bool, int, float, str, type(None))


def value_stats(value: Any, max_values: int | None = MAX_VALUES) -> dict[str, Any]:
    """Stats of a module output or :func:`inspect` value that is not a tensor (eager; plain Python values).

    A number (``int``, ``float``, ``bool``, or a SymInt/SymFloat/SymBool already made concrete) gets the stats of
    a 0-d tensor of it (as :func:`tensor_stats`: ``dtype`` ``"int64"``, ``"float64"`` or ``"bool"``) plus
    ``value`` (the number) and ``type`` (``"int"``, ...), so ``torchport compare`` checks it as a tensor. Any
    other value (a string, ``None``, a dtype) gets ``shape`` ``[]``, ``dtype`` and ``type`` its type's name,
    ``device`` ``""``, ``numel`` 0, NaN stats and ``value``: the value itself when it is a ``str``/``None``,
    else its ``repr``.
    """
    if isinstance(value, (bool, int, float)):
        return {**tensor_stats(torch.tensor(value), max_values), "value": value, "type": type(value).__name__}
    kind = type(value).__name__
    return {"shape": [], "dtype": kind, "device": "", "numel": 0, "values": None, "mean": math.nan,
            "min": math.nan, "max": math.nan, "std": math.nan, "nan": 0, "inf": 0,
            "value": value if isinstance(value, _PLAIN) else repr(value), "type": kind}


def _record_into(w: Watch, t: Any, name: str, kind: str) -> None:
    with _LOCK:
        counter = w._calls.setdefault((kind, name), 0)
        w._calls[(kind, name)] = counter + 1
    key = name if counter == 0 else f"{name}#{counter}"
    if w.level == Level.NAMES:
        print(f"[torchport] {key}" + ("" if kind == "output" else f" ({kind})"), file=w.stream or sys.stdout)
        return
    stats = tensor_stats(t, w.max_values) if isinstance(t, torch.Tensor) else value_stats(t, w.max_values)
    rec = {"name": name, "call": counter, "key": key, "kind": kind, "step": w._step, "order": len(w.records),
           **stats}
    w.records.append(rec)
    if w.level == Level.PRINT:
        print(_format(rec), file=w.stream or sys.stdout)


def _record(t: Any, name: str, watch_id: int, kind: str) -> None:
    w = _WATCHES.get(watch_id)
    if w is None:  # a removed watch whose compiled graph is still cached
        return
    _record_into(w, t, name, kind)


def _rank() -> int | None:
    dist = torch.distributed
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else None


def _header(tag: str, phase: str) -> str:
    """``[tag][fwd]`` (``[rank N][tag][fwd]`` in a distributed run), as torch's opaque tensor inspector labels."""
    rank = _rank()
    return ("" if rank is None else f"[rank {rank}]") + (f"[{tag}]" if tag else "") + f"[{phase}]"


def _report(values: Sequence[Any], names: Sequence[str], kind: str, header: str) -> None:
    """Default action of :func:`inspect`: into every active watch whose filter takes the name, else printed
    under ``header`` (``[tag][fwd]``), one indented stats line per value."""
    watches = list(_WATCHES.values())
    if watches:
        for v, name in zip(values, names):
            for w in watches:
                if (w.match is None or w.match(name)) and (kind == "output" or w.grads):
                    _record_into(w, v, name, kind)
        return
    lines = [header]
    for v, name in zip(values, names):
        stats = tensor_stats(v) if isinstance(v, torch.Tensor) else value_stats(v)
        lines.append(_format({"key": name, "kind": kind, **stats}, " ").replace("\n", "\n  "))
    print("\n".join(lines), flush=True)


_EFFECTS_DONE: set[Any] = set()


def _register_effects(*ops: Any) -> None:
    """Mark ops as ordered side effects (as ``torch._higher_order_ops.print`` is), so that AOTAutograd and
    Inductor keep them when their result is unused. The API is private and has moved between releases: best
    effort, only when something will be traced."""
    todo = [op for op in ops if op not in _EFFECTS_DONE]
    if not todo:
        return
    _EFFECTS_DONE.update(todo)
    try:
        from torch._higher_order_ops.effects import _EffectType, _register_effectful_op

        for op in todo:
            _register_effectful_op(op, _EffectType.ORDERED)
    except Exception:  # noqa: BLE001 - best effort, see above
        pass


def _define_ops() -> None:
    # Guarded so that re-importing this module (importlib.reload) does not register twice.
    if hasattr(torch.ops, "torchport") and hasattr(torch.ops.torchport, "debug_record"):
        return

    @torch.library.custom_op("torchport::debug_record_grad", mutates_args=())
    def debug_record_grad(grad: torch.Tensor, name: str, watch_id: int) -> torch.Tensor:
        _record(grad, name, watch_id, "grad")
        return grad.clone()

    @debug_record_grad.register_fake
    def _(grad: torch.Tensor, name: str, watch_id: int) -> torch.Tensor:
        return torch.empty_like(grad)

    @torch.library.custom_op("torchport::debug_record", mutates_args=())
    def debug_record(x: torch.Tensor, name: str, watch_id: int, grads: bool) -> torch.Tensor:
        _record(x, name, watch_id, "output")
        return x.clone()

    @debug_record.register_fake
    def _(x: torch.Tensor, name: str, watch_id: int, grads: bool) -> torch.Tensor:
        return torch.empty_like(x)

    def setup_context(ctx: Any, inputs: tuple[torch.Tensor, str, int, bool], output: torch.Tensor) -> None:
        ctx.name, ctx.watch_id, ctx.grads = inputs[1], inputs[2], inputs[3]

    def backward(ctx: Any, grad: torch.Tensor | None) -> tuple[torch.Tensor | None, None, None, None]:
        if ctx.grads and grad is not None:
            grad = torch.ops.torchport.debug_record_grad(grad, ctx.name, ctx.watch_id)
        return grad, None, None, None

    debug_record.register_autograd(backward, setup_context=setup_context)

    # A number (as a 0-d tensor) or a constant (its text) that a module returned; no result: an ordered effect.
    @torch.library.custom_op("torchport::debug_record_value", mutates_args=())
    def debug_record_value(x: torch.Tensor | None, text: str, type_name: str, name: str, watch_id: int) -> None:
        _record(_untensor(x, text, type_name), name, watch_id, "output")

    @debug_record_value.register_fake
    def _(x: torch.Tensor | None, text: str, type_name: str, name: str, watch_id: int) -> None:
        return None


_define_ops()


_NUMBERS = {"bool": torch.bool, "int": torch.int64, "float": torch.float64}


def _number_type(value: Any) -> str | None:
    """``"bool"``, ``"int"`` or ``"float"`` for a Python number or a SymBool/SymInt/SymFloat, else ``None``."""
    for types_, name in (((bool, torch.SymBool), "bool"), ((int, torch.SymInt), "int"),
                         ((float, torch.SymFloat), "float")):
        if isinstance(value, types_):
            return name
    return None


def _untensor(x: torch.Tensor | None, text: str, type_name: str) -> Any:
    """The value :func:`_record_value_op` took apart: a number again, or the constant (a string, else its repr)."""
    if x is not None:
        return {"bool": bool, "int": int, "float": float}[type_name](x.item())
    return None if type_name == "NoneType" else text


def _record_value_op(value: Any, name: str, watch_id: int) -> None:
    """Record a non-tensor output at run time, also inside a compiled graph (numbers enter as 0-d tensors)."""
    number = _number_type(value)
    if not torch.compiler.is_compiling():  # eager: no op needed
        _record(value, name, watch_id, "output")
    elif number is not None:
        torch.ops.torchport.debug_record_value(torch.scalar_tensor(value, dtype=_NUMBERS[number]), "", number,
                                               name, watch_id)
    else:
        torch.ops.torchport.debug_record_value(None, value if isinstance(value, str) else repr(value),
                                               type(value).__name__, name, watch_id)


# Non-tensor outputs that are recorded ("Value: arg", as Inductor's debug printer): numbers and these constants.
_CONSTANTS = (str, bytes, type(None), torch.dtype, torch.device)


def _wrap(value: Any, name: str, watch_id: int, grads: bool, depth: int = 0) -> Any:
    """Pass every tensor in ``value`` (tensor, tuple, list, dict, nested) through the record op; record numbers
    and constants (strings, ``None``, dtypes, devices) as they are."""
    if isinstance(value, torch.Tensor):
        return torch.ops.torchport.debug_record(value, name, watch_id, grads and value.requires_grad)
    if _number_type(value) is not None or isinstance(value, _CONSTANTS):
        _record_value_op(value, name, watch_id)
        return value
    if depth > 4:
        return value
    if isinstance(value, (tuple, list)):
        items = [_wrap(v, f"{name}.{i}", watch_id, grads, depth + 1) for i, v in enumerate(value)]
        if isinstance(value, list):
            return items
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)  # namedtuple
    if isinstance(value, dict):
        return {k: _wrap(v, f"{name}.{k}", watch_id, grads, depth + 1) for k, v in value.items()}
    return value  # other objects are passed through unrecorded


class Watch:
    """Hooks on the submodules of a model; see :func:`watch`. A context manager.

    Attributes:
        level: the :class:`Level` in force.
        run_dir: where :meth:`flush` writes ``stats.pt`` (``None``: nothing is written).
        records: list of record dicts (format in the module docstring), in call order.
        match: the name predicate (``None``: every name), see :func:`name_filter`.
        max_values: the largest tensor whose values are kept (``None``: all).
    """

    def __init__(self, model: nn.Module | None, level: Level, run_dir: Path | None, grads: bool,
                 stream: TextIO | None = None, match: Callable[[str], bool] | None = None,
                 max_values: int | None = MAX_VALUES) -> None:
        self.level, self.run_dir, self.grads, self.stream = level, run_dir, grads, stream
        self.match, self.max_values = match, max_values
        self.records: list[dict[str, Any]] = []
        self.id = next(_IDS)
        self._calls: dict[tuple[str, str], int] = {}
        self._step = 0
        self._handles: list[Any] = []
        self._active = False
        if level == Level.OFF:
            return
        _WATCHES[self.id] = self
        self._active = True
        if model is None:  # records only what inspect() reports
            return
        _register_effects(torch.ops.torchport.debug_record_value.default)
        # A torch.compile'd module (OptimizedModule) wraps the model as `_orig_mod`: hook the model itself
        # so that names do not depend on whether it was compiled.
        if type(model).__name__ == "OptimizedModule":  # by name: importing torch._dynamo costs ~1 s
            model = model._orig_mod  # type: ignore[assignment]  # a Module, by OptimizedModule's contract
        for qualname, module in model.named_modules():
            name = qualname or ROOT_NAME
            if match is None or match(name):
                self._handles.append(module.register_forward_hook(self._hook(name)))
        if self._handles:
            _drop_compiled_code()

    def _hook(self, name: str) -> Callable[[nn.Module, Any, Any], Any]:
        watch_id, grads = self.id, self.grads  # plain constants: Dynamo bakes them into the graph

        def hook(module: nn.Module, args: Any, output: Any) -> Any:
            return _wrap(output, name, watch_id, grads)

        return hook

    @property
    def active(self) -> bool:
        """True until :meth:`remove` (hooks installed, :func:`inspect` reports taken)."""
        return self._active

    def step(self) -> None:
        """Start a new step: later records get ``step + 1`` and call indices restart at 0."""
        self._step += 1
        self._calls.clear()

    def flush(self) -> Path | None:
        """Write ``run_dir/stats.pt`` (all records so far, atomically); return its path or ``None``.

        Raises ``OSError`` if the folder cannot be created or written.
        """
        if self.run_dir is None or self.level not in (Level.SAVE, Level.PRINT):
            return None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        target = self.run_dir / STATS_FILE
        tmp = target.with_suffix(".pt.tmp")
        torch.save({"format": FORMAT, "version": VERSION, "torch": str(torch.__version__),
                    "records": list(self.records)}, tmp)
        os.replace(tmp, target)
        return target

    def remove(self) -> None:
        """Remove the hooks and write the file (as :meth:`flush`). Safe to call twice."""
        for handle in self._handles:
            handle.remove()
        if self._handles:
            _drop_compiled_code()
        was_active = self._active
        self._handles.clear()
        self._active = False
        _WATCHES.pop(self.id, None)
        if was_active:
            self.flush()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def watch(model: nn.Module | None, level: Level | int | None = None,
          run_dir: str | os.PathLike | None = None, grads: bool = False, stream: TextIO | None = None,
          names: NameFilter = None, max_values: int | None = MAX_VALUES) -> Watch:
    """Record the output (and, with ``grads=True``, the output gradient) of every module of ``model``.

    Args:
        model: the ``nn.Module`` to watch; every module of ``named_modules()`` gets a forward hook
            (``register_forward_hook``), the root included (named ``<root>``). Compile the model
            (``torch.compile(model, fullgraph=True)``) before or after, even compile and run it before
            the watch begins, and pass either the model or the compiled module: the hooks trace without
            a graph break. Adding or removing hooks while compiled code exists drops Dynamo's compiled
            code (``torch._dynamo.reset_code_caches()``): each compiled function recompiles once. The
            root's hook runs outside the compiled forward, as torch runs a compiled module's own hooks,
            so it is compiled as a second graph. ``None``: no hooks;
            the watch collects only what :func:`inspect` reports.
        level: a :class:`Level` or int 0-3; ``None`` reads ``TORCHPORT_DEBUG_VALUES`` (default OFF).
            OFF installs no hook at all.
        run_dir: folder for ``stats.pt``. With SAVE and no ``run_dir``, ``TORCHPORT_DEBUG_DIR`` or
            ``./torchport_debug`` is used; with PRINT the file is written only if ``run_dir`` is given.
        grads: also record the gradient with respect to each floating output that requires grad
            (the ``grad_output`` of ``register_full_backward_hook``), during ``backward()``.
        stream: text stream for PRINT/NAMES (default ``sys.stdout``, as Inductor's printer).
        names: hook only the modules (and take only the :func:`inspect` tags) whose name matches,
            as Inductor's kernel-name filter: globs, ``"re:REGEX"``, a compiled pattern, a list of
            these or a callable (see :func:`name_filter`); ``None`` reads ``TORCHPORT_DEBUG_NAMES``
            (unset: every module); globs and ``"re:"`` patterns ignore case. Filtered-out modules get
            no hook, so no op in a compiled graph. A filter that matches no module warns
            (``UserWarning``).
        max_values: keep a record's ``values`` (the CPU tensor itself) when it has at most this many
            elements (default 64); ``None`` keeps every tensor whole (memory: one CPU copy of each
            recorded output). PRINT still prints values only up to 64 elements.

    Returns a :class:`Watch`; use it as a context manager or call ``.remove()``; both write the file.
    Raises ``ValueError`` if ``level``, the environment variable or the name filter is invalid.
    """
    lvl = level_from_env() if level is None else Level(int(level))
    if run_dir is None and lvl == Level.SAVE:
        run_dir = os.environ.get(ENV_DIR) or "torchport_debug"
    if names is None:
        names = os.environ.get(ENV_NAMES, "").strip() or None
    if max_values is not None and max_values < 0:
        raise ValueError(f"max_values must be >= 0 or None, got {max_values}")
    match = name_filter(names)
    w = Watch(model, lvl, Path(run_dir) if run_dir is not None else None, grads, stream, match, max_values)
    if w.active and model is not None and match is not None and not w._handles:
        warnings.warn(f"torchport.debug.watch: the name filter {names!r} matched no module of "
                      f"{type(model).__name__} (names as named_modules() gives them, the root is {ROOT_NAME!r})",
                      UserWarning, stacklevel=2)
    return w


def _drop_compiled_code() -> None:
    """Make compiled code recompile on its next call, so that it sees hooks added or removed since.

    Dynamo does not guard on module hooks by default (``skip_nnmodule_hook_guards``): code compiled before
    a watch would never call its hooks. Nothing to do while Dynamo is not loaded (nothing was compiled).
    """
    dynamo = sys.modules.get("torch._dynamo")
    convert = sys.modules.get("torch._dynamo.convert_frame")
    if dynamo is None or convert is None or not getattr(getattr(convert, "input_codes", None), "seen", None):
        return
    dynamo.reset_code_caches()


def flush() -> list[Path]:
    """Write the files of every active watch (as :meth:`Watch.flush`); return the paths written."""
    return [p for w in list(_WATCHES.values()) if (p := w.flush()) is not None]


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Load a run: ``path`` is a run folder or its ``stats.pt``; ``torch.load(weights_only=True)``.

    Raises ``FileNotFoundError`` if there is no such file and ``ValueError`` if it is not a
    torchport stats file (any ``torch.load`` error propagates).
    """
    p = Path(path)
    if p.is_dir():
        p = p / STATS_FILE
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such stats file")
    data = torch.load(p, weights_only=True, map_location="cpu")
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("records"), list):
        raise ValueError(f"{p}: not a {FORMAT} file")
    return data


# At the end: inspect_values imports the run-time state above from this module.
from torchport.checks.inspect_values import inspect  # noqa: E402
