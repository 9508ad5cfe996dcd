"""Streams and events (``torch.cuda.Stream``/``Event`` and the stream functions).

On CUDA and XPU these are torch's own classes and functions. On MPS and CPU,
which have no stream objects in torch 2.13, they are small Python classes: one
in-order queue per device (MPS has a single command queue; CPU ops are
synchronous), so waiting between streams only needs event ordering.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import torch

from ._backend import _INDEXED, _MODULE, _TYPE
from ._device import _arg

_MPS = _TYPE == "mps"
_TIMING_ERROR = "Both events must be created with argument 'enable_timing=True'."
_RECORD_ERROR = "Both events must be recorded before calculating elapsed time."
_tls = threading.local()  # per-thread current stream, as in torch


class _HostEvent:
    """Shared part of the MPS and CPU events: flags and ``elapsed_time`` checks."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
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

    Timing is host wall-clock (``time.perf_counter``), which on CPU is the
    device time because CPU ops run synchronously. ``record()`` inside
    ``torch.compile``d code is a no-op (host clocks are not traceable), so the
    event stays unrecorded there.

    Args:
        enable_timing: allow :meth:`elapsed_time` (bool).
        blocking, interprocess: accepted and ignored (no device to wait on, no IPC).
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

    Timing is measured by the GPU. ``torch.mps.Event`` takes no stream:
    ``stream`` arguments are accepted and ignored (MPS has one queue).
    ``blocking`` and ``interprocess`` are ignored. Inside ``torch.compile``d
    code ``record()`` is a no-op, as on CPU.

    Raises:
        RuntimeError: from ``torch.mps.Event`` if MPS is unusable.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
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


class HostStream:
    """Stream for the MPS and CPU backends; mirrors ``torch.cuda.Stream``.

    Each device has one in-order queue, so all streams share it. ``with s:``
    makes ``s`` the thread's current stream and restores the previous one on
    exit.

    Args:
        device: ``None``, an index or a device of the picked backend
            (CUDA-style specs are mapped).
        priority: stored as :attr:`priority`; has no effect.
        **kwargs: accepted and ignored (``torch.cuda.Stream`` internals).

    Raises:
        ValueError: ``device`` is of another backend.
    """

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = _arg(device)
        self.priority = priority

    def query(self) -> bool:
        """Return True if all work queued so far has completed."""
        return self.record_event().query() if _MPS else True

    def synchronize(self) -> None:
        """Block the host until queued work has completed (MPS: ``torch.mps.synchronize``)."""
        if _MPS:
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
            event = Event()
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


if _INDEXED:
    Stream = _MODULE.Stream
    Event = _MODULE.Event
    _DEFAULT_STREAM = None
else:
    Stream = HostStream
    Event = MpsEvent if _MPS else CpuEvent
    _DEFAULT_STREAM = HostStream()


def stream(stream: Any) -> contextlib.AbstractContextManager:
    """Context manager selecting ``stream``; mirrors ``torch.cuda.stream``.

    ``None`` is a no-op. On MPS/CPU the stream is its own context manager.
    """
    if stream is None:
        return contextlib.nullcontext()
    return _MODULE.stream(stream) if _INDEXED else stream


def current_stream(device: Any = None) -> Any:
    """Return the thread's current stream; mirrors ``torch.cuda.current_stream``.

    Raises:
        ValueError: ``device`` is of another backend (MPS/CPU; torch raises on CUDA/XPU).
    """
    dev = _arg(device)
    if _INDEXED:
        return _MODULE.current_stream(dev)
    return getattr(_tls, "stream", None) or _DEFAULT_STREAM


def default_stream(device: Any = None) -> Any:
    """Return the device's default stream; mirrors ``torch.cuda.default_stream``.

    CUDA: ``torch.cuda.default_stream``. XPU (torch has no such function): the
    stream every thread starts on (stream id 0 of the normal-priority pool, per
    c10/xpu/XPUStream.cpp). MPS/CPU: one per-process stream object, distinct
    from user-created streams.

    Raises:
        ValueError: as :func:`current_stream`.
    """
    dev = _arg(device)
    if _TYPE == "cuda":
        return torch.cuda.default_stream(dev)
    if _TYPE == "xpu":
        cur = torch.xpu.current_stream(dev)
        return torch.xpu.Stream(stream_id=0, device_index=cur.device_index,
                                device_type=cur.device_type)
    return _DEFAULT_STREAM


def set_stream(stream: Any) -> None:
    """Make ``stream`` the thread's current stream; mirrors ``torch.cuda.set_stream``.

    ``None`` is a no-op. Prefer ``with stream(s):``.
    """
    if stream is None:
        return
    if _INDEXED:
        _MODULE.set_stream(stream)
    else:
        _tls.stream = stream

