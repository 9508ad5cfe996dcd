"""Run settings: which rules apply and for which targets. Built from `[tool.torchport]` and the CLI."""

from __future__ import annotations

from dataclasses import dataclass

ALL_TARGETS = ("mps", "xpu", "cpu")


@dataclass(frozen=True)
class Settings:
    """What a run applies. Frozen and hashable, so it can key a cache and cross process boundaries.

    Args:
        select: rule codes or code prefixes to enable (``("TP0", "TP101")``); empty means the defaults.
        ignore: rule codes or prefixes to disable; wins over ``select``.
        unsafe_fixes: also apply rewrites whose safety class is ``unsafe``.
        targets: backends to report per-target problems for (subset of ``ALL_TARGETS``).
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    targets: tuple[str, ...] = ALL_TARGETS


DEFAULT = Settings()
