"""The rule registry agrees with the README, the family docstrings, and the runtime's API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import torchport.runtime as runtime
from torchport.codemods import FAMILIES, RULES
from torchport.codemods.core.registry import family_rules

ROOT = Path(__file__).parent.parent


def test_codes_are_unique_and_well_formed() -> None:
    codes = [rule.code for family in FAMILIES for rule in family_rules(family)]
    assert len(codes) == len(set(codes))
    for code, rule in RULES.items():
        assert re.fullmatch(r"TP[0-3]\d\d", code)
        assert rule.kind == ("rewrite" if code.startswith("TP0") else "diagnostic")
        assert (rule.effort is not None) == (rule.safety == "manual"), code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
        assert rule.summary and rule.before
        assert bool(rule.after) == (rule.kind == "rewrite"), code


def test_readme_table_matches_the_registry() -> None:
    rows = re.findall(r"^\| (TP\d{3}) \| ([a-z0-9-]+) \| (\w+)[^|]* \| (.*?) \| ", (ROOT / "README.md").read_text(),
                      re.M)
    assert {code: (name, safety, summary) for code, name, safety, summary in rows} == {
        code: (rule.name, rule.safety, rule.summary) for code, rule in RULES.items()
    }


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__.rsplit(".", 1)[-1])
def test_family_docstring_table_lists_its_rules(family: object) -> None:
    documented = set(re.findall(r"^\| (TP\d{3}) ", family.__doc__ or "", re.M))
    assert documented == {rule.code for rule in family_rules(family)}


def test_every_runtime_name_the_rewrites_emit_exists() -> None:
    emitted: set[str] = set()
    for path in (ROOT / "tests" / "fixtures").rglob("*.expected.py"):
        emitted |= set(re.findall(r"\btp\.(\w+)", path.read_text()))
    for rule in RULES.values():
        emitted |= set(re.findall(r"\btp\.(\w+)", rule.after))
    assert emitted, "the fixtures emit runtime calls"
    missing = sorted(name for name in emitted if name not in runtime.__all__)
    assert missing == []
