"""The rule registry agrees with the rules table (docs/rules.md), the family docstrings, and the runtime's API."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

import torchport.runtime as runtime
from torchport.codemods import guards
from torchport.codemods.api import FAMILIES, RULES
from torchport.codemods.core.registry import DATA_MOVES, RENAMED, family_rules
from torchport.codemods.core.rule import Rule

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


def test_the_info_notes_that_never_fail_a_check_are_the_info_rules() -> None:
    from torchport.results import INFO_CODES  # kept beside the results so that a cached check loads no rule

    assert INFO_CODES == {code for code, rule in RULES.items() if rule.effort == "info"}


def test_readme_table_matches_the_registry() -> None:
    rules_page = (ROOT / "docs" / "rules.md").read_text()
    rows = re.findall(r"^\| (TP\d{3}) \| ([a-z0-9-]+) \| (\w+)[^|]* \| (.*?) \| ", rules_page, re.M)
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


def test_a_rule_without_its_declarations_is_refused() -> None:
    family = types.ModuleType("torchport.codemods.example_family")

    class Undeclared(Rule):
        code = "TP099"
        name = "undeclared"
        summary, before = "x", "y"

    Undeclared.__module__ = family.__name__
    family.Undeclared = Undeclared  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="moves_data"):
        family_rules(family)


def test_every_rule_declares_whether_it_moves_data() -> None:
    for rule in RULES.values():
        assert any("moves_data" in vars(cls) for cls in type(rule).__mro__ if cls is not Rule), rule
    assert DATA_MOVES == {code for code, rule in RULES.items() if rule.moves_data} and DATA_MOVES


@pytest.mark.parametrize("name", sorted(RENAMED))
def test_guards_treat_every_renamed_cuda_call_as_portable(name: str) -> None:
    # the guards read the renames from the registry: a rule's new rename is portable code under a guard
    assert guards._portable_cuda(f"torch.cuda.{name}")


def test_a_cuda_only_call_under_a_guard_is_not_portable() -> None:
    assert not guards._portable_cuda("torch.cuda.CUDAGraph")


def test_every_reason_example_stays_as_written_and_cites_its_reason(tmp_path: Path) -> None:
    """Each example as a project of one file, through the project pass too (R13 is decided there)."""
    from dataclasses import replace

    from torchport.codemods.core.reasons import REASONS
    from torchport.config import DEFAULT
    from torchport.emit.torch_version import declared_torch_version
    from torchport.pipeline import files, runner

    assert [r.id for r in REASONS] == [f"R{i:02d}" for i in range(1, len(REASONS) + 1)]
    for reason in REASONS:
        folder = tmp_path / reason.id
        folder.mkdir()
        (folder / "example.py").write_text(reason.example)
        if reason.requirements:
            (folder / "requirements.txt").write_text(reason.requirements)
        for name, text in reason.beside:
            (folder / name).write_text(text)
        settings = replace(DEFAULT, torch_version=declared_torch_version(folder) or (0, 0))  # as the CLI reads it
        [result] = [r for r in runner.run(list(files.discover([folder])), settings, jobs=1)
                    if r.path.name == "example.py"]
        assert result.migrated == reason.example, reason.id
        assert any(reason.tag in d.message for d in result.diagnostics), (reason.id, result.diagnostics)


def test_the_reasons_page_lists_the_catalogue() -> None:
    from torchport.codemods.core.reasons import REASONS, page

    assert (ROOT / "docs" / "reasons.md").read_text() == page()
    assert len(re.findall(r"^\| R\d\d \|", page(), re.M)) == len(REASONS)


def test_the_program_models_tag_is_the_catalogues() -> None:
    from torchport.codemods.core.reasons import CUDA_ONLY, CUDA_ONLY_LIBRARY, FAKES_CUDA, UNREACHED
    from torchport.pipeline import programs

    assert programs.CUDA_ONLY_LIBRARY_TAG == CUDA_ONLY_LIBRARY.tag
    assert (programs.FAKES_CUDA_TAG, programs.CUDA_ONLY_TAG) == (FAKES_CUDA.tag, CUDA_ONLY.tag)
    assert programs.UNREACHED_TAG == UNREACHED.tag
