"""Every rule's inline examples (Fixit style): each rewrite gives its exact output, each must-stay case
stays byte-identical, with only that rule selected; the output compiles and a second run is a no-op.
The prefilter and the statement-skipping shortcut must let every example through."""

from __future__ import annotations

import re

import pytest

import torchport.codemods.api as codemods
import torchport.codemods.core.transformer as transformer
from torchport.codemods.api import PREFILTER, RULES, migrate_code
from torchport.config import Settings

IMPORT = "from torchport import runtime as tp\n"
CASES = [(rule, index, example) for rule in RULES.values() for index, example in enumerate(rule.examples)]


def test_every_rule_has_examples() -> None:
    for rule in RULES.values():
        assert rule.examples, f"{rule.code} has no inline examples"
        if rule.kind == "rewrite":
            assert any(e.after is not None for e in rule.examples), f"{rule.code} has no rewrite example"


def _without_import(code: str) -> set[str]:
    """``code`` without the added runtime import: with and without the blank line the import adds."""
    head, sep, rest = code.partition(IMPORT)
    if not sep:
        return {code}
    return {head + rest, head + rest[1:] if rest.startswith("\n") else head + rest}


@pytest.mark.parametrize(("rule", "index", "example"), CASES, ids=[f"{r.code}-{i}" for r, i, _ in CASES])
def test_rule_example(rule, index, example) -> None:  # noqa: ANN001
    settings = Settings(select=(rule.code, *example.with_rules), unsafe_fixes=example.unsafe)
    migration = migrate_code(example.before, settings)
    if example.after is None:
        assert rule.code not in migration.rewrites
        if not example.with_rules:  # with other rules selected, what they rewrite may change
            assert migration.code == example.before
        return
    assert PREFILTER.search(example.before.encode()), "the prefilter would skip this example"
    assert re.search("|".join(rule.trigger_patterns()), example.before), "the rule's own triggers miss its example"
    assert example.after in _without_import(migration.code), migration.code
    assert migration.rewrites.get(rule.code), "the rule itself made the rewrite"
    compile(migration.code, f"<{rule.code}>", "exec")
    assert migrate_code(migration.code, settings).code == migration.code, "not idempotent"


@pytest.mark.parametrize(("rule", "index", "example"), CASES, ids=[f"{r.code}-{i}" for r, i, _ in CASES])
def test_example_gives_the_same_with_and_without_statement_skipping(rule, index, example, monkeypatch) -> None:  # noqa: ANN001
    settings = Settings(unsafe_fixes=example.unsafe)
    fast = migrate_code(example.before, settings)
    monkeypatch.setattr(codemods, "code_trigger_lines", lambda source, *a: list(range(1, source.count("\n") + 2)))
    monkeypatch.setattr(transformer, "map_statements", lambda *a: (set(), {}))
    assert migrate_code(example.before, settings) == fast
