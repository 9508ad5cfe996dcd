"""Streams and events (``torch.cuda.Stream``/``Event`` and the stream functions).

On CUDA these are exactly torch's classes and functions (``torch.cuda.Stream``,
``torch.cuda.Event``, ``torch.cuda.stream``...). On XPU they are
``torch.xpu``'s, with an ``Event`` that also accepts the CUDA-only keywords. On
MPS and CPU, which have no stream objects in torch 2.13, they are small Python
classes: one in-order queue per device (MPS has a single command queue; CPU ops
are synchronous), so waiting between streams only needs event ordering.

``Stream`` and ``Event`` are resolved when first read (module ``__getattr__``),
which picks the device.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, final

import torch

from . import _backend as _b
from ._device import _arg

_TIMING_ERROR = "Both events must be created with argument 'enable_timing=True'."
_RECORD_ERROR = "Both events must be recorded before calculating elapsed time."
_tls = threading.local()  # per-thread current stream, as in torch


class _HostEvent:
    """Shared part of the MPS and CPU events: flags and ``elapsed_time`` checks."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False) -> None:
        self.enable_timing = enable_timing
        self._stamp: float | None = None  # set by record()

    def _check_pair(self, end_event: Any) -> None:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError(_TIMING_ERROR)
        if self._stamp is None or end_event._stamp is None:
            raise ValueError(_RECORD_ERROR)

    def __repr__(self) -> str:
        return (f"<torchport {type(self).__name__} enable_timing={self.enable_timing} "
                f"recorded={self._stamp is not None}>")


class CpuEvent(_HostEvent):
    """Event for the CPU backend; mirrors ``torch.cuda.Event``.

    ``tp.Event`` is this class on CPU. On CUDA ``tp.Event`` is exactly
    ``torch.cuda.Event``; on XPU ``torch.xpu.Event`` (CUDA-only keywords ignored).

    Timing is host wall-clock (``time.perf_counter``), which on CPU is the
    device time because CPU ops run synchronously. ``record()`` inside
    ``torch.compile``d code is a no-op (host clocks are not traceable), so the
    event stays unrecorded there.

    Args:
        enable_timing: allow :meth:`elapsed_time` (bool).
        blocking, interprocess, external: the CUDA-only keywords of
            ``torch.cuda.Event``; accepted and ignored (no device to wait on, no IPC).
    """

    def record(self, stream: Any = None) -> None:
        """Record the current host time; ``stream`` is ignored."""
        if torch.compiler.is_compiling():
            return
        self._stamp = time.perf_counter()

    def elapsed_time(self, end_event: CpuEvent) -> float:
        """Return milliseconds (float) from this event's record() to ``end_event``'s.

        Raises:
            RuntimeError: either event was created without ``enable_timing=True``.
            ValueError: either event has not been recorded.
        """
        self._check_pair(end_event)
        assert self._stamp is not None and end_event._stamp is not None  # _check_pair raised otherwise
        return (end_event._stamp - self._stamp) * 1000.0

    def query(self) -> bool:
        """Return True: CPU work is always complete."""
        return True

    def synchronize(self) -> None:
        """No-op: CPU work is always complete."""

    def wait(self, stream: Any = None) -> None:
        """No-op: CPU work is always complete."""


class MpsEvent(_HostEvent):
    """Event for the MPS backend wrapping ``torch.mps.Event``; mirrors ``torch.cuda.Event``.

    ``tp.Event`` is this class on MPS (on CUDA exactly ``torch.cuda.Event``).

    Timing is measured by the GPU. ``torch.mps.Event`` takes no stream:
    ``stream`` arguments are accepted and ignored (MPS has one queue).
    The CUDA-only keywords ``blocking``, ``interprocess`` and ``external`` are
    accepted and ignored. Inside ``torch.compile``d code ``record()`` is a
    no-op, as on CPU.

    Raises:
        RuntimeError: from ``torch.mps.Event`` if MPS is unusable.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False) -> None:
        super().__init__(enable_timing)
        self._event = torch.mps.Event(enable_timing=enable_timing)

    def record(self, stream: Any = None) -> None:
        """Record the event in the MPS queue."""
        if torch.compiler.is_compiling():
            return
        self._event.record()
        self._stamp = 0.0  # marks "recorded"; the GPU keeps the time

    def elapsed_time(self, end_event: MpsEvent) -> float:
        """Return GPU milliseconds between the two events (errors as :class:`CpuEvent`)."""
        self._check_pair(end_event)
        return self._event.elapsed_time(end_event._event)

    def query(self) -> bool:
        """Return True if the work captured by the event has completed."""
        return self._event.query()

    def synchronize(self) -> None:
        """Block the host until the event has completed."""
        self._event.synchronize()

    def wait(self, stream: Any = None) -> None:
        """Make work queued later wait for this event (device-side)."""
        self._event.wait()


@final  # its __enter__ returns a HostStream (a subclass would want typing.Self, from Python 3.11)
class HostStream:
    """Stream for the MPS and CPU backends; mirrors ``torch.cuda.Stream``.

    ``tp.Stream`` is this class on MPS and CPU. On CUDA ``tp.Stream`` is exactly
    ``torch.cuda.Stream`` (on XPU ``torch.xpu.Stream``).

    Each device has one in-order queue, so all streams share it. ``with s:``
    makes ``s`` the thread's current stream and restores the previous one on
    exit.

    Args:
        device: ``None``, an index or a device of the picked backend
            (CUDA-style specs are mapped).
        priority: stored as :attr:`priority` (int, lower is higher priority as
            in CUDA); has no effect.
        **kwargs: accepted and ignored (``torch.cuda.Stream`` internals).

    Raises:
        ValueError: ``device`` is of another backend.
    """

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = _arg(device)
        self.priority = priority

    def query(self) -> bool:
        """Return True if all work queued so far has completed."""
        return self.record_event().query() if _b._TYPE == "mps" else True

    def synchronize(self) -> None:
        """Block the host until queued work has completed (MPS: ``torch.mps.synchronize``)."""
        if _b._TYPE == "mps":
            torch.mps.synchronize()

    def wait_event(self, event: Any) -> None:
        """Make work queued on this stream later wait for ``event``."""
        event.wait(self)

    def wait_stream(self, stream: Any) -> None:
        """Make work queued on this stream later wait for work queued on ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Any = None) -> Any:
        """Record ``event`` (a new :data:`Event` if None) on this stream and return it."""
        if event is None:
            event = _classes()[1]()
        event.record(self)
        return event

    def __enter__(self) -> HostStream:
        _saved().append(getattr(_tls, "stream", None))
        _tls.stream = self
        return self

    def __exit__(self, *exc: object) -> None:
        _tls.stream = _saved().pop()

    def __repr__(self) -> str:
        return f"<torchport HostStream device={self.device} priority={self.priority} at {id(self):#x}>"


def _saved() -> list:
    saved = getattr(_tls, "saved", None)
    if saved is None:
        saved = _tls.saved = []
    return saved


def _xpu_event_class() -> type:
    """``torch.xpu.Event`` subclass that accepts (and ignores) the CUDA-only keywords."""

    class XpuEvent(torch.xpu.Event):
        """``torch.xpu.Event``; ``blocking``, ``interprocess`` and ``external`` are ignored.

        ``torch.xpu.Event`` takes only ``enable_timing``; code written for
        ``torch.cuda.Event(enable_timing=True, blocking=True)`` runs unchanged.
        """

        def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                    interprocess: bool = False, external: bool = False) -> Any:
            return super().__new__(cls, enable_timing=enable_timing)

    XpuEvent.__module__, XpuEvent.__qualname__ = __name__, "XpuEvent"
    return XpuEvent


_CLASSES: tuple[type, type] | None = None
_DEFAULT_HOST_STREAM: HostStream | None = None


def _classes() -> tuple[type, type]:
    """Return ``(Stream, Event)`` for the picked backend (picks it on first call)."""
    global _CLASSES
    if _CLASSES is None:
        kind = _b._TYPE
        if kind == "cuda":
            _CLASSES = (torch.cuda.Stream, torch.cuda.Event)
        elif kind == "xpu":
            _CLASSES = (torch.xpu.Stream, _xpu_event_class())
        else:
            _CLASSES = (HostStream, MpsEvent if kind == "mps" else CpuEvent)
    return _CLASSES


def _host_default() -> HostStream:
    """The per-process default stream of the MPS/CPU backends."""
    global _DEFAULT_HOST_STREAM
    if _DEFAULT_HOST_STREAM is None:
        _DEFAULT_HOST_STREAM = HostStream()
    return _DEFAULT_HOST_STREAM


def _reset_streams() -> None:
    global _CLASSES, _DEFAULT_HOST_STREAM
    _CLASSES = _DEFAULT_HOST_STREAM = None
    globals().pop("Stream", None)
    globals().pop("Event", None)
    for name in ("stream", "saved"):
        if hasattr(_tls, name):
            delattr(_tls, name)


_b._resets.append(_reset_streams)


def __getattr__(name: str) -> Any:
    """``Stream`` and ``Event``, resolved (and cached here) on first read."""
    if name == "Stream":
        value = _classes()[0]
    elif name == "Event":
        value = _classes()[1]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def stream(stream: Any) -> contextlib.AbstractContextManager:
    """Context manager selecting ``stream``; mirrors ``torch.cuda.stream``.

    On CUDA: exactly ``torch.cuda.stream(stream)``. XPU: ``torch.xpu.stream``.
    ``None`` is a no-op. On MPS/CPU the stream is its own context manager.
    """
    if _b._CUDA:
        return torch.cuda.stream(stream)
    if stream is None:
        return contextlib.nullcontext()
    return _b._MODULE.stream(stream) if _b._INDEXED else stream


def current_stream(device: Any = None) -> Any:
    """Return the thread's current stream; mirrors ``torch.cuda.current_stream``.

    On CUDA: exactly ``torch.cuda.current_stream(device)``. XPU:
    ``torch.xpu.current_stream`` (spec mapped). MPS/CPU: the stream set by
    ``with stream(s):``/:func:`set_stream` in this thread, else the default stream.

    Raises:
        ValueError: ``device`` is of another backend (MPS/CPU; torch raises on CUDA/XPU).
    """
    if _b._CUDA:
        return torch.cuda.current_stream(device)
    dev = _arg(device)
    if _b._INDEXED:
        return _b._MODULE.current_stream(dev)
    return getattr(_tls, "stream", None) or _host_default()


def default_stream(device: Any = None) -> Any:
    """Return the device's default stream; mirrors ``torch.cuda.default_stream``.

    On CUDA: exactly ``torch.cuda.default_stream(device)``. XPU (torch has no
    such function): the stream every thread starts on (stream id 0 of the
    normal-priority pool, per c10/xpu/XPUStream.cpp). MPS/CPU: one per-process
    stream object, distinct from user-created streams.

    Raises:
        ValueError: as :func:`current_stream`.
    """
    if _b._CUDA:
        return torch.cuda.default_stream(device)
    dev = _arg(device)
    if _b._TYPE == "xpu":
        cur = torch.xpu.current_stream(dev)
        return torch.xpu.Stream(stream_id=0, device_index=cur.device_index,
                                device_type=cur.device_type)
    return _host_default()


def set_stream(stream: Any) -> None:
    """Make ``stream`` the thread's current stream; mirrors ``torch.cuda.set_stream``.

    On CUDA: exactly ``torch.cuda.set_stream(stream)``. Elsewhere ``None`` is a
    no-op (as in torch). Prefer ``with stream(s):``.
    """
    if _b._CUDA:
        return torch.cuda.set_stream(stream)
    if stream is None:
        return None
    if _b._INDEXED:
        _b._MODULE.set_stream(stream)
    else:
        _tls.stream = stream
    return None


def record_stream(tensor: torch.Tensor, stream: Any) -> None:
    """Mark ``tensor`` as used by ``stream``; mirrors ``Tensor.record_stream``.

    Tells the caching allocator not to reuse the tensor's memory until the work
    queued on ``stream`` when the tensor is freed has completed.

    On CUDA: exactly ``tensor.record_stream(stream)``. XPU: the same (torch's
    XPU allocator supports it). MPS and CPU: a no-op for the runtime's
    emulated streams and for ``torch.Stream`` objects (one in-order queue per
    device, nothing to protect); it never calls torch's ``record_stream``,
    which raises for CPU tensors.

    Args:
        tensor: the tensor used on ``stream``.
        stream: a stream from :data:`Stream`, :func:`current_stream` ...

    Raises:
        TypeError: on MPS/CPU, ``stream`` is not a stream (as torch raises).
    """
    if _b._INDEXED:
        return tensor.record_stream(stream)
    if not isinstance(stream, (HostStream, torch.Stream)):
        raise TypeError(f"record_stream(): argument 'stream' must be a Stream, not {type(stream).__name__}")
    return None
