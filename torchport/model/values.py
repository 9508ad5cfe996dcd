"""The abstract values the evaluator computes with (`torchport.model.evaluate`).

A value is a Python constant (str, int, float, bool, None), or one of these: `UNKNOWN` (anything), `Name` (an
imported module or object, by qualified name), `Device` (a ``torch.device``), `Prefix` (a string known to start
with a prefix, such as ``f"cuda:{rank}"``), `INDEX` (an int not known), `NOT_CUDA` (the device type of data
off CUDA: some type, not ``"cuda"``), `Items` (a list or tuple), `Mark` (a
pytest or unittest skip mark), `Function` (a function the module defines).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class _Index:
    def __repr__(self) -> str:
        return "INDEX"


INDEX = _Index()  # an int not known, not negative: a rank, a count, a device index


class _Count:
    def __repr__(self) -> str:
        return "COUNT"


COUNT = _Count()  # an int not known, at least 1: the processes of a group that exists (its world size)


class _NotCuda:
    def __repr__(self) -> str:
        return "NOT_CUDA"


NOT_CUDA = _NotCuda()  # the device type of data where there is no CUDA: a str, not "cuda"


@dataclass(frozen=True)
class Name:
    """An imported name, qualified: ``torch.cuda``, ``torchport.runtime.device``."""

    qualified: str


@dataclass(frozen=True)
class Device:
    """A ``torch.device`` of type ``type`` (``cuda``, ``mps``, ``xpu``, ``cpu``), index ``index`` (or None)."""

    type: str
    index: object = None


@dataclass(frozen=True)
class Prefix:
    """A string known only to start with ``text``."""

    text: str


@dataclass(frozen=True)
class Items:
    """A list or tuple of values."""

    values: tuple[object, ...]


@dataclass(frozen=True)
class Mark:
    """A skip mark: ``skip`` is True, False or `UNKNOWN` (whether it skips on the target evaluated)."""

    skip: object


@dataclass(frozen=True)
class Function:
    """A function the module defines."""

    node: ast.FunctionDef | ast.AsyncFunctionDef


def truth(value: object) -> object:
    """``bool(value)``: True, False or `UNKNOWN`."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return bool(value)
    if value is NOT_CUDA:
        return True
    if isinstance(value, (Device, Prefix, Function, Name)):
        return True
    if isinstance(value, Items):
        return bool(value.values)
    return UNKNOWN


def device_type(value: object) -> str | None:
    """The device type ``value`` names where it is a device (``"cuda:1"``, ``Device("cuda")``, ``f"cuda:{r}"``), or
    ``"index"`` for an int (torch reads it as an index of the current accelerator), else None."""
    if isinstance(value, Device):
        return value.type
    if isinstance(value, bool):
        return None
    if value is INDEX:
        return "index"
    if isinstance(value, int):
        return "index" if value >= 0 else None  # -1 is the CPU where libraries take one
    if isinstance(value, (str, Prefix)):
        text = value if isinstance(value, str) else value.text
        head = text.split(":", 1)[0]
        if head in ("cuda", "mps", "xpu", "cpu", "meta"):
            return head if (":" in text or isinstance(value, str)) else None
    return None
