"""A rule: one class with its code, name, safety, message, what it matches, its fix and its examples.

Learnt from Fixit 2. A rule declares the node types it wants as methods, ``visit_<Node>(self, m, node)``
and ``leave_<Node>(self, m, original, updated)``, where ``m`` is the `Migrator` running the pass (the
shared facts: qualified names, where each CUDA string is used, what was handled). The engine builds
its dispatch tables from those methods; no central transformer wires a rule in. A ``leave_`` method
returns a replacement node or None. Rules whose ``replaces`` is False only change a node's children
(arguments) and run first, composing; then the first replacing rule that returns a node wins.

``triggers`` (regular expressions) and ``names`` (qualified names, whose last part becomes a trigger)
say which source text a rule can match at all: the engine's prefilter and its statement skipping are
built from them, and a test checks every example of every rule against them.

``examples`` are the rule's inline tests: `Example(before, after)` is a rewrite (``after=None``: the
code must stay as it is). The test suite runs each with only this rule selected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    import libcst as cst

    from torchport.codemods.core.transformer import Migrator

Kind = Literal["rewrite", "diagnostic"]
Safety = Literal["safe", "unsafe", "manual"]
Effort = Literal["info", "low", "medium", "high"]


@dataclass(frozen=True)
class Example:
    """One inline test of a rule.

    Args:
        before: a whole module (imports included).
        after: the exact output, leaving out the added ``from torchport import runtime as tp`` line;
            None when the module must come out unchanged.
        unsafe: run with ``--unsafe-fixes``.
        with_rules: other rule codes selected too (a rule that acts on what other rewrites did).
    """

    before: str
    after: str | None = None
    unsafe: bool = False
    with_rules: tuple[str, ...] = ()


class Rule:
    """Base class of every rewrite and diagnostic; subclass it in a family module.

    Class attributes:
        code: stable identifier, ``TP0xx`` rewrites, ``TP1xx``/``TP2xx`` diagnostics, ``TP3xx`` per target.
        name: kebab-case slug, e.g. ``cuda-method``.
        summary: the one-line message.
        before, after: the one-line example shown by ``torchport rules`` and the README (``after`` is
            empty for diagnostics).
        safety: ``safe`` rewrites apply by default, ``unsafe`` ones only with ``--unsafe-fixes``
            (reported otherwise), ``manual`` rules only report.
        safety_note: for an ``unsafe`` rule whose fix is safe at some sites (applied there by default), which
            sites those are, as ``torchport explain`` says it.
        effort: for manual rules, how much work a person needs (``info``/``low``/``medium``/``high``).
        triggers: regular expressions; source matching none of them cannot hold a site of this rule.
            Without them, they are derived from ``names`` (see `trigger_patterns`).
        names: the qualified names the rule matches.
        replaces: whether ``leave_`` methods replace the node (True) or only its children (False).
        moves_data: required: whether its rewrite chooses where tensors go (``.cuda()``, a device literal or
            string, an integer device id). A module the project pass holds keeps these as written.
        places_data: whether its rewrite may send data to the runtime's device beyond the sites of
            ``moves_data`` (an availability idiom, a tensor type, a default tensor type, an ``is_cuda`` test).
        renames: the ``torch.cuda`` names it renames into portable calls, after ``torch.cuda.`` (``synchronize``,
            ``amp.autocast``), with the new name. Code under a CUDA guard that calls only these is portable.
        examples: inline tests (see `Example`).
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    before: ClassVar[str]
    after: ClassVar[str] = ""
    safety: ClassVar[Safety] = "safe"
    safety_note: ClassVar[str] = ""
    effort: ClassVar[Effort | None] = None
    triggers: ClassVar[tuple[str, ...]] = ()
    names: ClassVar[frozenset[str]] = frozenset()
    replaces: ClassVar[bool] = True
    moves_data: ClassVar[bool]  # no default: every rule says (the registry checks)
    places_data: ClassVar[bool] = False
    renames: ClassVar[Mapping[str, str]] = {}
    examples: ClassVar[tuple[Example, ...]] = ()

    @property
    def kind(self) -> Kind:
        return "diagnostic" if self.safety == "manual" else "rewrite"

    def trigger_patterns(self) -> list[str]:
        """The rule's triggers plus, for each qualified name it matches, what its spelling must contain:
        ``cuda`` for a ``torch.cuda`` name (``from torch.cuda import Event`` makes ``Event`` a trigger of its
        own, see `_quiet.code_trigger_lines`), else its last part as a word."""
        if self.triggers:  # the rule says what its spellings contain
            return list(self.triggers)
        parts = sorted({"cuda" if name.startswith("torch.cuda.") else name.rsplit(".", 1)[-1] for name in self.names})
        return [rf"\b{re.escape(part)}\b" if part != "cuda" else "cuda" for part in parts]

    def finish(self, m: Migrator, module: cst.Module) -> None:
        """Called once after the whole module was visited (for diagnostics about what is left)."""

    def __repr__(self) -> str:
        return f"<{self.code} {self.name}>"
