"""Every rule, collected from the family modules: each `Rule` subclass with a code is registered."""

from __future__ import annotations

import ast
import inspect
import re
from types import ModuleType

from torchport.codemods import (
    amp,
    cuda_api,
    device,
    distributed,
    entry,
    guards,
    pinned,
    unported,
)
from torchport.codemods.core.rule import Rule

FAMILIES = (device, cuda_api, amp, distributed, pinned, unported, guards, entry)


# Declarations other parts derive their lists from; a rule class without one is refused.
REQUIRED = ("moves_data",)


def family_rules(family: ModuleType) -> tuple[Rule, ...]:
    """One instance of each rule class defined in ``family``, in source order."""
    classes = [
        cls for cls in vars(family).values()
        if inspect.isclass(cls) and issubclass(cls, Rule) and cls.__module__ == family.__name__ and "code" in vars(cls)
    ]
    for cls in classes:
        missing = [name for name in REQUIRED if not hasattr(cls, name)]
        if missing:
            raise TypeError(f"rule {cls.__name__} ({cls.code}) does not declare {', '.join(missing)}: "
                            "the engine and the guards derive their lists from it")
    lines = _class_lines(family)
    classes.sort(key=lambda cls: lines[cls.__qualname__] if cls.__qualname__ in lines
                 else inspect.getsourcelines(cls)[1])
    return tuple(cls() for cls in classes)


def _class_lines(family: ModuleType) -> dict[str, int]:
    """The line each top-level class of ``family`` starts on, as `inspect.getsourcelines` gives it (its first
    decorator's, the first definition of a name), from one parse of the module: asking ``inspect`` per class
    parses the module again for each (a third of a second per run)."""
    lines: dict[str, int] = {}
    for node in ast.parse(inspect.getsource(family)).body:
        if isinstance(node, ast.ClassDef):
            lines.setdefault(node.name, node.decorator_list[0].lineno if node.decorator_list else node.lineno)
    return lines


RULES_IN_ORDER: tuple[Rule, ...] = tuple(rule for family in FAMILIES for rule in family_rules(family))
RULES_BY_CODE: dict[str, Rule] = dict(sorted((rule.code, rule) for rule in RULES_IN_ORDER))
# Rewrites that choose where tensors go: a module the project pass holds keeps them as written.
DATA_MOVES = frozenset(rule.code for rule in RULES_IN_ORDER if rule.moves_data)
# Rewrites after which data may be on the runtime's device: those and the ones that pick or test it.
PLACES_DATA = DATA_MOVES | frozenset(rule.code for rule in RULES_IN_ORDER if rule.places_data)
# The torch.cuda names (after "torch.cuda.") some rule renames into a portable call.
RENAMED = frozenset(name for rule in RULES_IN_ORDER for name in rule.renames)

# What any rule can match, as one regular expression: text that matches none of it needs no parse.
TRIGGERS = "|".join(dict.fromkeys(t for rule in RULES_IN_ORDER for t in rule.trigger_patterns()))


def loosen(pattern: str) -> list[str]:
    """The alternatives of a trigger without word boundaries, flattened: a superset of its matches that
    Python's ``re`` scans several times faster (a leading ``\\b`` or group defeats its first-character
    search), each match then confirmed with the exact triggers on its lines (see `_quiet.trigger_lines`)."""
    pattern = pattern.replace(r"\b", "").replace("(?i:nccl)", "nccl|NCCL|Nccl")
    inner = re.fullmatch(r"\(\?:([^()]*)\)", pattern)
    return (inner.group(1) if inner else pattern).split("|") if "(" not in pattern or inner else [pattern]


LOOSE_TRIGGERS = "|".join(dict.fromkeys(a for rule in RULES_IN_ORDER for t in rule.trigger_patterns()
                                        for a in loosen(t)))


def matches(code: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``code`` matches one of ``patterns`` (codes, code prefixes such as ``TP0``, or ``ALL``)."""
    return any(p == "ALL" or code.startswith(p) for p in patterns)


def check_patterns(patterns: tuple[str, ...]) -> None:
    """Raise ValueError naming the valid codes if a pattern selects no rule."""
    for pattern in patterns:
        if pattern != "ALL" and not any(code.startswith(pattern) for code in RULES_BY_CODE):
            raise ValueError(f"unknown rule code or prefix {pattern!r}; valid codes: {', '.join(RULES_BY_CODE)}")
