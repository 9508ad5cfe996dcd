"""Report which PyTorch ops run on a device, and from which line: ``DeviceOpTrace``.

A ``TorchDispatchMode`` in the style of pt-cpu's ``pt_cpu.device_trace.DeviceOpTrace``
(same arguments, same ``[DeviceOpTrace] PyTorch op on cpu: aten.randn.default`` header),
with device-type matching, per-op or per-site "once", trimmed stacks and a summary.

Not imported by ``torchport.runtime``; import it explicitly (torch and stdlib only)::

    from torchport.checks.trace import DeviceOpTrace
    with DeviceOpTrace("cpu", once="site") as tr:
        model(x)
    tr.summary().hits_per_op
"""

from __future__ import annotations

import importlib.util
import json
import linecache
import os
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from types import FrameType
from typing import IO, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchport.checks.names import BOOTSTRAP as BOOTSTRAP  # the command that runs _child_main below
from torchport.checks.names import CHILD_ENV

__all__ = ["DeviceOpTrace", "TraceSummary", "op_names", "user_frame"]

HEADER = "[DeviceOpTrace] PyTorch op on {device}: {op}"
ONCE_MODES = (None, "op", "site", "all")

# Frames from these files are "not the user's": torch, torchport's runtime and these checks (the
# mode itself, the audit, the CLI bootstrap), runpy and frozen importlib, triton.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCHPORT_DIRS = (os.path.join(_PACKAGE_DIR, "checks") + os.sep, os.path.join(_PACKAGE_DIR, "runtime") + os.sep)
_TRITON = importlib.util.find_spec("triton")  # found, not imported: compiled GPU kernels launch through it
_INTERNAL_PREFIXES = (os.path.dirname(torch.__file__) + os.sep, *TORCHPORT_DIRS, "<frozen ",
                      *(os.path.join(d, "") for d in ((_TRITON.submodule_search_locations or ()) if _TRITON else ())))
_INTERNAL_FILES = {os.path.join(os.path.dirname(os.__file__), "runpy.py")}
_internal_cache: dict[str, bool] = {}
_STOP_CODES: set = set()  # stacks end here: the `python -c` frame of the CLI bootstrap


def is_internal(filename: str) -> bool:
    """Whether a frame's ``co_filename`` belongs to torch, torchport.runtime or .checks, runpy or importlib,
    or to what torch.compile runs on a GPU: triton and the modules Inductor generates.

    Cached per file name, so a stack walk costs one dict lookup per frame.
    """
    internal = _internal_cache.get(filename)
    if internal is None:
        internal = filename.startswith(_INTERNAL_PREFIXES) or filename in _INTERNAL_FILES or _inductor_code(filename)
        _internal_cache[filename] = internal
    return internal


def _inductor_code(filename: str) -> bool:
    """Whether ``filename`` is code Inductor generated (a module in its cache folder, which launches the kernels)."""
    utils = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    if utils is None:
        return False
    try:
        folder = os.path.abspath(utils.cache_dir())
    except Exception:  # noqa: BLE001 - an internal helper; without it such frames count as the user's
        return False
    return os.path.abspath(filename).startswith(os.path.join(folder, ""))


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above ``frame`` that is not internal (see :func:`is_internal`).

    Args:
        frame: where to start, usually ``sys._getframe(1)``.

    Returns:
        The first frame of user (or third-party) code, or None if the whole stack is internal.
    """
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def op_names(func: Any) -> frozenset[str]:
    """Every spelling under which an op can be named in ``include_ops``/``exclude_ops``.

    For ``torch.ops.aten.randn.default``: ``aten.randn.default``, ``aten::randn``,
    ``aten::randn.default``, ``aten.randn``, ``randn.default`` and ``randn`` (pt-cpu's four
    documented forms and their obvious mixes). Unlike pt-cpu, the bare namespace (``aten``)
    is not a name, so it does not match every op.

    Args:
        func: a ``torch._ops.OpOverload`` (what ``__torch_dispatch__`` receives); other
            callables fall back to ``str(func)``.
    """
    names = {str(func)}
    ns, op = getattr(func, "namespace", None), getattr(func, "_opname", None)
    overload = getattr(func, "_overloadname", None)
    if ns and op:
        names.update((f"{ns}.{op}", f"{ns}::{op}", op))
        if overload:
            names.update((f"{ns}.{op}.{overload}", f"{ns}::{op}.{overload}", f"{op}.{overload}"))
    return frozenset(names)


def _normalise_ops(ops: Iterable[str] | None) -> frozenset[str] | None:
    if ops is None:
        return None
    if isinstance(ops, str):
        ops = [ops]
    return frozenset(o.strip() for o in ops if o.strip())


def _collect(obj: Any, devices: set) -> None:
    """Add the device of every tensor in ``obj`` (nested list/tuple/dict) to ``devices``."""
    if isinstance(obj, torch.Tensor):
        devices.add(obj.device)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            if isinstance(item, (torch.Tensor, list, tuple, dict)):
                _collect(item, devices)
    elif isinstance(obj, dict):
        for item in obj.values():
            _collect(item, devices)


def _short_path(path: str) -> str:
    """``path`` relative to the working directory when it lies under it (for display)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith(os.pardir) else rel


@dataclass
class TraceSummary:
    """What a :class:`DeviceOpTrace` saw; ``to_dict``/``from_dict`` round-trip through JSON.

    Attributes:
        device: the traced device spec, as given (``"cpu"``, ``"cuda"``, ``"cuda:0"``).
        total_ops: ops dispatched while the mode was active, on any device.
        hits: ops that touched the traced device and passed the include/exclude filters.
        factories: hits with no tensor input whose ``device=`` argument named the device
            (``torch.randn(..., device=...)``, ``torch.empty``, ``torch.zeros``...).
        ops_per_device: ops per device string (``"cpu"``, ``"cuda:0"``); an op touching
            two devices counts for both. Filters do not apply here.
        hits_per_op: hits per op name (``"aten.randn.default"``).
        call_sites: hits per user call site, ``"path:line"`` (the innermost non-torch frame).
    """

    device: str
    total_ops: int = 0
    hits: int = 0
    factories: int = 0
    ops_per_device: dict[str, int] = field(default_factory=dict)
    hits_per_op: dict[str, int] = field(default_factory=dict)
    call_sites: dict[str, int] = field(default_factory=dict)

    def top_ops(self, n: int = 10) -> list[tuple[str, int]]:
        """The ``n`` most frequent hit ops, most frequent first (ties by name)."""
        return sorted(self.hits_per_op.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def top_sites(self, n: int = 10) -> list[tuple[str, int]]:
        """The ``n`` call sites with most hits, most first (ties by ``path:line``)."""
        return sorted(self.call_sites.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceSummary:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def format(self, top: int = 10) -> str:
        """The plain-text summary printed when the trace exits (several lines, no colour)."""
        per_dev = ", ".join(f"{d} {n}" for d, n in sorted(self.ops_per_device.items(), key=lambda kv: -kv[1]))
        lines = [
            f"[DeviceOpTrace] summary: {self.total_ops} ops dispatched, {self.hits} matched on "
            f"{self.device} (factory calls: {self.factories})",
            f"  ops per device: {per_dev or 'none'}",
        ]
        if self.hits_per_op:
            lines.append("  top ops: " + ", ".join(f"{op} {n}" for op, n in self.top_ops(top)))
        if self.call_sites:
            lines.append("  top call sites:")
            for site, n in self.top_sites(top):
                path, _, line = site.rpartition(":")
                lines.append(f"    {_short_path(path)}:{line}  {n}")
        return "\n".join(lines)


class DeviceOpTrace(TorchDispatchMode):
    """Report every PyTorch op that touches ``device``, with the user's call stack.

    Mirrors pt-cpu's ``DeviceOpTrace(device="cpu", print_once=False, enabled=True,
    include_ops=None, exclude_ops=None)``; each report is the line
    ``[DeviceOpTrace] PyTorch op on cpu: aten.randn.default`` on stderr, then the stack.
    Differences from pt-cpu:

    * the device type matches any index: ``"cuda"`` matches ``cuda:0`` and ``cuda:1``;
      ``"cuda:0"`` matches only index 0 (a CPU tensor counts as index 0);
    * an op is judged on its tensor inputs and its ``device=`` argument *before* it runs
      (so an op that then raises is still reported), and on its result only when it has
      neither (pt-cpu runs the op first);
    * the stack is innermost first and leaves out torch's, runpy's and torchport.runtime's
      frames, so the first frame printed is the user's line;
    * ``once`` limits reports per op or per call site, and a summary (ops per device, top
      ops, top call sites) is printed on exit and returned by :meth:`summary`.

    Args:
        device: ``str`` or ``torch.device`` to watch (default ``"cpu"``). Raises
            ``RuntimeError`` (from ``torch.device``) if malformed.
        include_ops: op names to report (any of the forms of :func:`op_names`:
            ``"aten.randn.default"``, ``"aten::randn"``, ``"randn.default"``, ``"randn"``);
            None reports all ops.
        exclude_ops: op names never reported (wins over ``include_ops``).
        print_once: pt-cpu's flag: report only the first hit of all. Same as ``once="all"``.
        enabled: False makes the mode a no-op that is never pushed (zero cost), as in pt-cpu.
        once: ``None`` (every hit), ``"op"`` (first hit of each op), ``"site"`` (first hit of
            each op at each call site) or ``"all"``. Raises ``ValueError`` otherwise.
            Counting is never limited, only printing.
        quiet: print no per-hit reports (count only; the summary still prints).
        summary: print the summary to ``file`` on exit.
        stack_limit: at most this many user frames per report (None: all; 0: header only).
        file: text stream for reports and the summary; None means ``sys.stderr`` at print time.
        top: rows of top ops and top call sites in the printed summary.
    """

    def __init__(
        self,
        device: str | torch.device = "cpu",
        include_ops: Iterable[str] | None = None,
        exclude_ops: Iterable[str] | None = None,
        print_once: bool = False,
        enabled: bool = True,
        *,
        once: str | None = None,
        quiet: bool = False,
        summary: bool = True,
        stack_limit: int | None = None,
        file: IO[str] | None = None,
        top: int = 10,
    ) -> None:
        super().__init__()
        if once not in ONCE_MODES:
            raise ValueError(f"once={once!r}: use one of {ONCE_MODES}")
        self.device = torch.device(device)
        self.device_spec = str(device)
        self.enabled = enabled
        self.include_ops = _normalise_ops(include_ops)
        self.exclude_ops = _normalise_ops(exclude_ops)
        self.once = "all" if print_once else once
        self.quiet = quiet
        self.print_summary = summary
        self.stack_limit = stack_limit
        self.file = file
        self.top = top
        self._type, self._index = self.device.type, self.device.index
        self._filter: dict[Any, tuple[str, bool]] = {}  # func -> (name, passes filters)
        self._reset()

    def _reset(self) -> None:
        self._total = 0
        self._hits = 0
        self._factories = 0
        self._per_device: dict[torch.device, int] = {}
        self._per_op: dict[str, int] = {}
        self._sites: dict[tuple[str, int], int] = {}
        self._printed: set = set()

    # -- context manager -------------------------------------------------
    def __enter__(self) -> DeviceOpTrace:
        if not self.enabled:
            return self
        self._reset()
        return super().__enter__()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self.enabled:
            return
        super().__exit__(exc_type, exc, tb)
        if self.print_summary:
            print(self.summary().format(self.top), file=self.file or sys.stderr)

    # -- per op ----------------------------------------------------------
    def _matches(self, dev: torch.device) -> bool:
        if dev.type != self._type:
            return False
        return self._index is None or (dev.index or 0) == self._index

    def _name(self, func: Any) -> tuple[str, bool]:
        entry = self._filter.get(func)
        if entry is None:
            names = op_names(func)
            ok = self.include_ops is None or not names.isdisjoint(self.include_ops)
            ok = ok and (self.exclude_ops is None or names.isdisjoint(self.exclude_ops))
            entry = self._filter[func] = (str(func), ok)
        return entry

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        devices: set = set()
        for a in args:
            if isinstance(a, (torch.Tensor, list, tuple, dict)):
                _collect(a, devices)
        factory = False
        if kwargs:
            for key, value in kwargs.items():
                if key == "device":
                    if value is not None:
                        if not devices:
                            factory = True
                        devices.add(value if type(value) is torch.device else torch.device(value))
                elif isinstance(value, (torch.Tensor, list, tuple, dict)):
                    _collect(value, devices)
        if devices:
            self._record(func, devices, factory)
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        _collect(out, devices)
        self._record(func, devices, False)
        return out

    def _record(self, func: Any, devices: set, factory: bool) -> None:
        self._total += 1
        hit = None
        for dev in devices:
            self._per_device[dev] = self._per_device.get(dev, 0) + 1
            if hit is None and self._matches(dev):
                hit = dev
        if hit is None:
            return
        name, ok = self._name(func)
        if not ok:
            return
        self._hits += 1
        self._factories += factory
        self._per_op[name] = self._per_op.get(name, 0) + 1
        frame = user_frame(sys._getframe(2))
        site = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<unknown>", 0)
        self._sites[site] = self._sites.get(site, 0) + 1
        if self.quiet:
            return
        if self.once is not None:
            key = None if self.once == "all" else name if self.once == "op" else (name, site)
            if key in self._printed:
                return
            self._printed.add(key)
        self._report(str(hit), name, frame)

    def _report(self, device: str, name: str, frame: FrameType | None) -> None:
        lines = [HEADER.format(device=device, op=name)]
        limit = self.stack_limit
        while frame is not None and (limit is None or limit > 0):
            code = frame.f_code
            if code in _STOP_CODES:
                break
            if not is_internal(code.co_filename):
                lines.append(f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}')
                text = linecache.getline(code.co_filename, frame.f_lineno).strip()
                if text:
                    lines.append(f"    {text}")
                if limit is not None:
                    limit -= 1
            frame = frame.f_back
        print("\n".join(lines), file=self.file or sys.stderr, flush=True)

    # -- results ---------------------------------------------------------
    def summary(self) -> TraceSummary:
        """The counts so far (during or after the ``with`` block) as a :class:`TraceSummary`."""
        return TraceSummary(
            device=self.device_spec,
            total_ops=self._total,
            hits=self._hits,
            factories=self._factories,
            ops_per_device={str(d): n for d, n in self._per_device.items()},
            hits_per_op=dict(self._per_op),
            call_sites={f"{f}:{line}": n for (f, line), n in self._sites.items()},
        )


# -- `torchport trace` child bootstrap -----------------------------------------
# The CLI runs `python [opts] -c BOOTSTRAP KIND TARGET ARGS...` with the settings in
# CHILD_ENV (`torchport.checks.names`), so the user's command sees its own argv and exit code.


def _child_main() -> None:
    """Run a script, module or code string under DeviceOpTrace (and Audit), then write JSON.

    ``sys.argv`` is ``["-c", KIND, TARGET, *ARGS]`` with KIND one of ``script``, ``module``,
    ``code``; settings come from ``$TORCHPORT_TRACE_CHILD`` (JSON). Exceptions and
    ``SystemExit`` propagate, so the exit code is the script's.
    """
    import runpy
    from contextlib import ExitStack

    cfg = json.loads(os.environ.pop(CHILD_ENV))
    _STOP_CODES.add(sys._getframe(1).f_code)
    kind, target, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    tracer = DeviceOpTrace(
        cfg.get("device", "cpu"),
        include_ops=cfg.get("include") or None,
        exclude_ops=cfg.get("exclude") or None,
        once=cfg.get("once"),
        quiet=not cfg.get("stacks", True),
        stack_limit=cfg.get("stack_limit"),
        summary=False,
    )
    audit = None
    compiled = _watch_compile()
    try:
        with ExitStack() as stack:
            if cfg.get("audit"):
                from .audit import Audit

                audit = stack.enter_context(Audit(report=False))
            stack.enter_context(tracer)
            if kind == "script":
                sys.argv = [target, *rest]
                sys.path[0] = os.path.dirname(os.path.abspath(target))
                runpy.run_path(target, run_name="__main__")
            elif kind == "module":
                sys.argv = [target, *rest]
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                sys.argv = ["-c", *rest]
                exec(compile(target, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    finally:
        torch.compile = compiled.pop("original")
        result: dict[str, Any] = {"trace": tracer.summary().to_dict(), "compiled": compiled["sites"]}
        if audit is not None:
            result["audit"] = [{**f.to_dict(), "text": f.format()} for f in audit.findings]
        with open(cfg["out"], "w", encoding="utf-8") as fh:
            json.dump(result, fh)


def _watch_compile() -> dict[str, Any]:
    """Record where the traced program calls ``torch.compile`` (``Module.compile`` too): under the trace's dispatch
    mode Dynamo does not compile, so what runs, and is traced, is the eager code. The CLI says so."""
    state: dict[str, Any] = {"original": torch.compile, "sites": []}

    def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - stands in for torch.compile
        frame = user_frame(sys._getframe(1))
        site = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"
        if site not in state["sites"]:
            state["sites"].append(site)
        return state["original"](*args, **kwargs)

    torch.compile = compile
    return state
