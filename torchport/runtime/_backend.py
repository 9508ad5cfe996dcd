"""Pick the device lazily, on first use: ``TORCHPORT_DEVICE``, else CUDA > MPS > XPU > CPU (the CPU where
``CUDA_VISIBLE_DEVICES`` hides every GPU, as it did for the unmigrated program; no MPS in one of several processes
a launcher started, which will join a process group).

Importing the runtime touches no device backend: no ``torch.cuda.is_available()``,
no CUDA context, so ``import torchport.runtime`` is fork safe. The pick itself is
fork safe too: it asks ``torch.cuda.device_count() > 0``, which counts through NVML
(no ``cuInit``) and is what ``torch.cuda.is_available()`` means under
``PYTORCH_NVML_BASED_CUDA_CHECK=1``. A migrated ``def f(device="cuda")`` becomes
``device=tp.device_str()``, evaluated at import, so a pick that initialised the
CUDA driver would break a later ``fork`` whose child uses CUDA; the original did
not touch CUDA at import. Where NVML cannot count, torch falls back to
``cudaGetDeviceCount``, exactly as ``torch.cuda.is_available()`` does.

The rest of the runtime reads the state below as attributes of this module
(``_b._TYPE``). Until the pick they do not exist, so the first read goes through
the module ``__getattr__`` (PEP 562), which picks and stores them as plain module
globals; every later read is an ordinary module-dict lookup. ``torch.compile``
(Dynamo) evaluates module attributes for real, so the first use may also happen
inside compiled code (``fullgraph=True`` still holds) and picked values are
constants with guards.

State (set together, once):

* ``_TYPE``: ``"cuda"``, ``"mps"``, ``"xpu"`` or ``"cpu"``.
* ``_DEVICE``: the picked :class:`torch.device` (index ``None`` unless
  ``TORCHPORT_DEVICE`` gave one); ``_DEVICE_STR``: ``str(_DEVICE)``.
* ``_MODULE``: ``torch.cuda``, ``torch.mps``, ``torch.xpu``, or ``None`` on CPU.
* ``_CUDA``: CUDA picked; ``_INDEXED``: CUDA or XPU (several devices);
  ``_ACCEL``: not CPU.
* ``_SPECS``: ``{"cuda": ..., "cuda:0": ..., ..., "cuda:63": ...}``, what
  ``device()`` returns for those strings (never mutated after the pick).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch

ENV_VAR = "TORCHPORT_DEVICE"
_ACCELERATORS = ("cuda", "mps", "xpu")  # probe order
_STATE = frozenset(
    {"_TYPE", "_DEVICE", "_DEVICE_STR", "_MODULE", "_CUDA", "_INDEXED", "_ACCEL", "_SPECS"}
)
_SPEC_INDICES = range(64)  # "cuda:0" .. "cuda:63" are looked up without parsing
_lock = threading.RLock()
_resets: list[Callable[[], None]] = []  # other modules' caches of picked values (see _forget)
_avoided: str | None = None  # why this program keeps off MPS (`avoid_mps`); survives `_forget`
_avoided_xpu = False  # it keeps off XPU too (`keep_cuda_or_cpu`); survives `_forget`
# The pick where nothing can change it later (CUDA or the CPU: no process group moves it), else None (also before
# the pick): `_device.device()` returns it with no other check.
_FIXED: torch.device | None = None


def _available(kind: str) -> bool:
    """Return whether backend ``kind`` is usable, never raising.

    CUDA is probed by ``torch.cuda.device_count() > 0`` (fork safe, see the
    module docstring); a machine whose NVML sees a GPU that the CUDA runtime
    cannot use picks CUDA and fails there, as the unmigrated ``"cuda"`` did.
    A CPU-only build raises ``AssertionError`` ("Torch not compiled with CUDA
    enabled") and a GPU-less CUDA build ``RuntimeError`` from some probes.
    """
    try:
        if kind == "cuda":
            return torch.cuda.device_count() > 0
        if kind == "mps":
            return torch.backends.mps.is_available()
        if kind == "xpu":
            return torch.xpu.is_available()
    except (AssertionError, RuntimeError):
        return False
    return kind == "cpu"


def _from_env(value: str) -> torch.device:
    """Parse and check ``TORCHPORT_DEVICE``; raise instead of falling back."""
    try:
        dev = torch.device(value)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", *_ACCELERATORS):
        raise ValueError(
            f"{ENV_VAR}={value!r} is not supported; use one of "
            "'cpu', 'mps', 'cuda', 'cuda:N', 'xpu', 'xpu:N', or unset it."
        )
    if dev.type == "mps" and dev.index not in (None, 0):
        raise ValueError(f"{ENV_VAR}={value!r}: MPS has a single device, use 'mps'.")
    if not _available(dev.type):
        raise RuntimeError(
            f"{ENV_VAR}={value!r} requests the {dev.type} backend, which is not "
            "available in this process (torch build "
            f"{torch.__version__}). Unset {ENV_VAR} to pick the best available "
            "device, or set it to 'cpu'."
        )
    if dev.type in ("cpu", "mps"):
        return torch.device(dev.type)  # never 'cpu:0' when 'cpu' is meant
    if dev.index is not None:
        module = getattr(torch, dev.type)
        count = module.device_count()
        if dev.index >= count:
            raise RuntimeError(
                f"{ENV_VAR}={value!r}: only {count} {dev.type} device(s) are visible."
            )
        # Make it the current device too, so streams, events, seeds and
        # current_device() agree with device(). This initialises the backend.
        module.set_device(dev.index)
    return dev


def _pick() -> torch.device:
    """Return the device named by ``TORCHPORT_DEVICE``, else the best available.

    Pure apart from probing (and ``set_device`` for an indexed variable); it
    does not store anything, see :func:`_select`.

    Raises:
        ValueError: ``TORCHPORT_DEVICE`` is malformed or names an unsupported device.
        RuntimeError: ``TORCHPORT_DEVICE`` names a backend or index that is not available.
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        return _from_env(value)
    if _hides_every_gpu(os.environ.get("CUDA_VISIBLE_DEVICES")):
        return torch.device("cpu")  # the program asked for no GPU (EfficientDet's `num_gpus: 0` sets "-1")
    for kind in _ACCELERATORS:  # (the launcher's variables are read only where MPS would be asked)
        if kind == "mps" and (_avoided is not None or _one_of_several_processes()) or kind == "xpu" and _avoided_xpu:
            continue
        if _available(kind):
            return torch.device(kind)
    return torch.device("cpu")


def _one_of_several_processes() -> bool:
    """Whether a launcher started this process to join a process group: as one of several (``WORLD_SIZE`` above 1:
    torchrun, ``torch.distributed.launch``), or under torchrun at all (``TORCHELASTIC_RUN_ID``, also for one
    process, whose DDP still checks its parameters over gloo). A group carries no MPS tensors, so on a Mac the pick
    is the CPU from the start (a device taken before ``init_process_group`` would stay MPS)."""
    if "TORCHELASTIC_RUN_ID" in os.environ:
        return True
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def _hides_every_gpu(visible: str | None) -> bool:
    """Whether ``CUDA_VISIBLE_DEVICES`` = ``visible`` leaves no GPU: set but empty, or a first entry CUDA cannot
    parse as a device (``-1``; CUDA reads the list up to its first invalid entry). The unmigrated program ran on
    the CPU then, whatever accelerator the machine has."""
    if visible is None:
        return False
    first = visible.split(",")[0].strip()
    return not first or first.startswith("-")


def _specs(kind: str, dev: torch.device) -> dict[str, torch.device]:
    """What ``device()`` returns for ``"cuda"`` and ``"cuda:i"`` on backend ``kind``."""
    if kind == "cuda":  # exactly torch.device(spec)
        table = {"cuda": torch.device("cuda")}
        table.update({f"cuda:{i}": torch.device("cuda", i) for i in _SPEC_INDICES})
    elif kind == "xpu":
        table = {"cuda": dev}
        table.update({f"cuda:{i}": torch.device("xpu", i) for i in _SPEC_INDICES})
    else:  # one device; an indexed spec gives MPS's indexed device, as a tensor there reports it (`mps:0`), so that
        # `t.device == tp.device(0)` holds where `t.device == torch.device("cuda", 0)` did (torcheval's tests)
        one = torch.device("mps", 0) if kind == "mps" and dev.index is None else dev
        table = {"cuda": dev, **dict.fromkeys((f"cuda:{i}" for i in _SPEC_INDICES), one)}
    return table


def _publish(dev: torch.device) -> None:
    """Store the state globals for ``dev`` (``_TYPE`` last: its presence means the state is complete)."""
    kind = dev.type
    g = globals()
    g.update(
        _DEVICE=dev,
        _DEVICE_STR=str(dev),
        _MODULE=getattr(torch, kind) if kind != "cpu" else None,
        _CUDA=kind == "cuda",
        _INDEXED=kind in ("cuda", "xpu"),
        _ACCEL=kind != "cpu",
        _SPECS=_specs(kind, dev),
        _FIXED=dev if kind in ("cuda", "cpu") else None,
    )
    g["_TYPE"] = kind


def _select() -> None:
    """Pick the device once and publish the state globals (thread safe, idempotent)."""
    with _lock:
        if "_TYPE" in globals():
            return
        _publish(_pick())  # raises before anything is stored


def _cpu_instead_of(kind: str) -> None:
    """Make the pick the CPU if it is ``kind`` (thread safe; a pick of anything else stays)."""
    with _lock:
        if globals().get("_TYPE") == kind:
            _forget()
            _publish(torch.device("cpu"))


_checked_group: object = None  # the XPU process group whose backend was read (`_in_a_group`)


def _in_a_group() -> None:
    """A process group exists and MPS or XPU is picked: the pick becomes the CPU on MPS, and on XPU when the group's
    backend is gloo. Called by `_device.device`, `device_str` and `device_type`; never on CUDA.

    torch.distributed has no MPS backend: gloo carries CPU (and CUDA) tensors only, so DDP, FSDP and collectives
    over MPS tensors raise "No backend type associated with device type mps"; a process that joined a group
    computes on the CPU instead (as ``fsdp_device_id`` already arranges for FSDP). gloo carries no XPU tensors
    either: code that chose gloo because CUDA was missing ran on the CPU. The XPU backend is read once per group."""
    global _checked_group
    if globals().get("_TYPE") == "mps":
        _cpu_instead_of("mps")
        return
    group = torch.distributed.distributed_c10d._get_default_group()
    if group is _checked_group:
        return
    _checked_group = group
    if torch.distributed.get_backend(group) == "gloo":
        _cpu_instead_of("xpu")


def avoid_mps(reason: str) -> None:
    """Keep this program off MPS: on a Mac it runs on the CPU, as the unmigrated program did.

    Written once at the entry point of a program that uses something MPS lacks (float64 or complex128
    tensors on the device, sparse tensors...). Before the pick, the pick skips MPS; after an MPS pick, the
    pick becomes the CPU (values computed from the earlier pick, such as defaults evaluated at import, keep
    it: a RuntimeWarning says so). ``TORCHPORT_DEVICE=mps`` still wins. On CUDA, XPU and CPU it changes nothing
    and touches no backend. No ``torch`` counterpart.

    Args:
        reason: what MPS lacks and where, for readers and ``tp.avoided_mps()`` (e.g. ``"float64 at
            diffusion.py:870"``).
    """
    _keep_off(("mps",), reason)


def keep_cuda_or_cpu(reason: str) -> None:
    """Keep this program on CUDA or the CPU: on a Mac and on an Intel GPU it runs on the CPU, as the unmigrated
    program did there.

    Written once at the entry point of a program that keeps a device choice CUDA-or-CPU as written (a choice, guard
    or placement the port leaves, being CUDA-only or someone else's) while the port moves its other data to the
    runtime's device, or that calls kernels only the CPU and CUDA have: on MPS or XPU the two would meet on different
    devices. Like `avoid_mps`, for XPU as well: before the pick, the pick skips both; after an MPS or XPU pick, the
    pick becomes the CPU (with the same RuntimeWarning). ``TORCHPORT_DEVICE`` still wins. On CUDA and the CPU it
    changes nothing and touches no backend. No ``torch`` counterpart.

    Args:
        reason: why and where, for readers and ``tp.avoided_mps()`` (e.g. ``"a device choice kept CUDA-or-CPU
            beside data moved to the picked device, options.py:115"``).
    """
    _keep_off(("mps", "xpu"), reason)


def _keep_off(kinds: tuple[str, ...], reason: str) -> None:
    """Make the pick skip the accelerators ``kinds`` (``"mps"``, ``"xpu"``), or turn a pick of one into the CPU,
    warning that values made from the earlier pick keep it (the caller's caller is the line warned about)."""
    global _avoided, _avoided_xpu
    with _lock:
        _avoided = reason
        _avoided_xpu = _avoided_xpu or "xpu" in kinds
        if os.environ.get(ENV_VAR, "").strip():
            return
        for kind in kinds:
            if globals().get("_TYPE") == kind:  # something read the pick already: what it made stays there
                warnings.warn(f"tp.{'avoid_mps' if kinds == ('mps',) else 'keep_cuda_or_cpu'}() came after "
                              f"{kind.upper()} was picked: values made from that pick (a device a module imported "
                              "before it chose at import) stay there; call it before those imports",
                              RuntimeWarning, stacklevel=3)
            _cpu_instead_of(kind)


def avoided_mps() -> str | None:
    """Why this program keeps off MPS (the reason given to `avoid_mps` or `keep_cuda_or_cpu`), or None."""
    return _avoided


def _forget() -> None:
    """Forget the pick and every cache of it, so that the next use picks again.

    For tests that simulate backends in one process. Not thread safe with
    concurrent runtime calls; compiled code must be reset too (``torch._dynamo.reset()``).
    """
    with _lock:
        g = globals()
        g["_FIXED"] = None
        g.pop("_TYPE", None)  # first: the state is incomplete from here on
        for name in _STATE:
            g.pop(name, None)
        for reset in _resets:
            reset()


def _picked() -> bool:
    """Whether the device has been picked already (does not pick)."""
    return "_TYPE" in globals()


def __getattr__(name: str) -> Any:
    """Pick the device on the first read of a state attribute (PEP 562)."""
    if name in _STATE:
        _select()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
