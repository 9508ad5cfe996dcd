"""`Diagnostic`, the one record every report is built from; free of LibCST so that reading results back
from the cache loads no rule."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    """A CUDA-specific site that was left unchanged (or, in ``FileResult.sites``, rewritten), with the reason.

    Args:
        code: the rule code, e.g. ``TP101``.
        line: 1-based line number in the original source.
        column: 0-based column in the original source.
        message: one-line reason.
    """

    code: str
    line: int
    column: int
    message: str
