"""Every fixture pair: exact output, exact diagnostics, idempotency, and output that compiles.

`tests/fixtures/<family>/<case>.py` is the input and `<case>.expected.py` the exact output.
Fixtures under `unsafe/` run with `--unsafe-fixes`; under `vendor/` with `--runtime vendor`; under
`native/` with `--runtime native --torch-version 2.9` (`torch26_<case>`: 2.6); all others with the defaults.
`noop_<case>.py` must come out byte-identical and has no expected file. `<case>.diagnostics.txt`
lists the diagnostics as `line:col CODE message`; a fixture without one must raise none.
"""

from __future__ import annotations

import difflib
from collections import Counter
from pathlib import Path

import pytest

from torchport.codemods.api import Migration, migrate_code
from torchport.config import Settings
from torchport.results import INFO_CODES

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(  # projects/ holds whole projects for `torchport programs` (tests/test_programs_command.py)
    p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".expected.py") and "projects" not in p.parts
)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _diagnostics_text(migration: Migration) -> str:
    return "".join(f"{d.line}:{d.column} {d.code} {d.message}\n" for d in migration.diagnostics)


def test_there_are_fixtures_for_every_family() -> None:
    families = {p.parent.name for p in CASES}
    assert {"device", "cuda_api", "amp", "distributed", "pipeline", "unported", "unsafe"} <= families
    for family in families - {"unported"}:  # unported is mostly report-only
        names = [p.name for p in CASES if p.parent.name == family]
        assert any(not n.startswith("noop_") for n in names), family


def _diff(expected: str, got: str) -> str:
    """What a fixture's output got wrong, as a unified diff (a failure in a parallel run says where)."""
    return "".join(difflib.unified_diff(expected.splitlines(True), got.splitlines(True), "expected", "got"))


def _settings(case: Path) -> Settings:
    family = case.parent.name
    if family == "native":
        return Settings(runtime="native", torch_version=(2, 6) if case.name.startswith("torch26_") else (2, 9))
    return Settings(unsafe_fixes=family == "unsafe", runtime="vendor" if family == "vendor" else "package")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fixture(case: Path, request: pytest.FixtureRequest) -> None:
    source = case.read_text()
    settings = _settings(case)
    migration = migrate_code(source, settings)
    expected_path = case.with_name(case.stem + ".expected.py")
    diagnostics_path = case.with_name(case.stem + ".diagnostics.txt")
    if request.config.getoption("--update-fixtures"):
        if not case.name.startswith("noop_"):
            expected_path.write_text(migration.code)
        if migration.diagnostics:
            diagnostics_path.write_text(_diagnostics_text(migration))
        elif diagnostics_path.exists():
            diagnostics_path.unlink()

    if case.name.startswith("noop_"):
        assert not expected_path.exists(), "a noop fixture has no expected file"
        assert migration.code == source, _diff(source, migration.code)
        assert migration.rewrites == {}
    else:
        assert expected_path.exists(), f"missing {expected_path.name}: a rewrite fixture needs its expected output"
        expected = expected_path.read_text()
        assert expected != source, "a rewrite fixture must change something; name it noop_* otherwise"
        assert migration.code == expected, _diff(expected, migration.code)
        compile(expected, str(expected_path), "exec")

    expected_diagnostics = diagnostics_path.read_text() if diagnostics_path.exists() else ""
    assert _diagnostics_text(migration) == expected_diagnostics

    second = migrate_code(migration.code, settings)
    assert second.code == migration.code, "not idempotent: a second run changed the output"
    assert second.rewrites == {}
    # torchport's own output is never a finding on the next run: what it reports then, it reported the first time.
    # (Info notes excepted: native output's DDP guard is noted TP110, which never fails a check.)
    first_found = Counter((d.code, d.message) for d in migration.diagnostics)
    new_found = Counter((d.code, d.message) for d in second.diagnostics if d.code not in INFO_CODES) - first_found
    assert not new_found, f"a second run reports the port's own output: {sorted(new_found)}"
