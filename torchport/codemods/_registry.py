"""Every rule, by code, collected from the family modules' ``RULES`` tuples."""

from __future__ import annotations

from torchport.codemods import amp, cuda_api, device, distributed, pinned, unported
from torchport.codemods._base import Rule

FAMILIES = (device, cuda_api, amp, distributed, pinned, unported)

# What any rule can match, as one regular expression: text that matches none of it needs no parse.
TRIGGERS = "|".join(dict.fromkeys(t for family in FAMILIES for t in family.TRIGGERS))

RULES_BY_CODE: dict[str, Rule] = dict(sorted((rule.code, rule) for family in FAMILIES for rule in family.RULES))


def matches(code: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``code`` matches one of ``patterns`` (codes, code prefixes such as ``TP0``, or ``ALL``)."""
    return any(p == "ALL" or code.startswith(p) for p in patterns)


def check_patterns(patterns: tuple[str, ...]) -> None:
    """Raise ValueError naming the valid codes if a pattern selects no rule."""
    for pattern in patterns:
        if pattern != "ALL" and not any(code.startswith(pattern) for code in RULES_BY_CODE):
            raise ValueError(f"unknown rule code or prefix {pattern!r}; valid codes: {', '.join(RULES_BY_CODE)}")
