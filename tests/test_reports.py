"""Configuration, --statistics accounting, and the JSON and SARIF reports."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from torchport.codemods.api import RULES, migrate_code
from torchport.config import ConfigError, Settings, find_pyproject, load, parse_targets
from torchport.pipeline.engine import migrate_file
from torchport.pipeline.notebooks import text_diff
from torchport.report.formats import to_json, to_sarif
from torchport.report.statistics import file_statistics, leftover_sites

SOURCE = """import torch

x = torch.zeros(2).cuda()
torch.cuda.get_arch_list()
if x.is_cuda:
    pass
"""


def test_select_ignore_and_unknown_codes() -> None:
    only_strings = migrate_code(SOURCE, Settings(select=("TP1",)))
    assert only_strings.rewrites == {} and only_strings.code == SOURCE
    assert {d.code for d in only_strings.diagnostics} == {"TP101"}
    no_method = migrate_code(SOURCE, Settings(ignore=("TP001",)))
    assert ".cuda()" in no_method.code and "TP001" not in no_method.rewrites
    with pytest.raises(ValueError, match="unknown rule code"):
        migrate_code(SOURCE, Settings(select=("TP9",)))


def test_unsafe_fixes_apply_only_when_asked() -> None:
    default = migrate_code(SOURCE)
    assert "x.is_cuda" in default.code
    assert any(d.code == "TP007" and "--unsafe-fixes" in d.message for d in default.diagnostics)
    unsafe = migrate_code(SOURCE, Settings(unsafe_fixes=True))
    assert "tp.on_accelerator(x)" in unsafe.code and unsafe.rewrites["TP007"] == 1


def test_targets_select_per_target_diagnostics() -> None:
    code = "import torch\nx = torch.zeros(2, dtype=torch.float64)\n"
    assert [d.code for d in migrate_code(code).diagnostics] == ["TP301"]
    assert migrate_code(code, Settings(targets=("cpu",))).diagnostics == []
    assert parse_targets("mps, cpu") == ("mps", "cpu") and parse_targets("none") == ()
    with pytest.raises(ConfigError, match="unknown target"):
        parse_targets("tpu")


def test_pyproject_table_and_per_file_ignores(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchport]\nignore = ["TP3"]\ntarget = ["mps"]\nexclude = ["vendored/"]\n'
        '[tool.torchport.per-file-ignores]\n"scripts/*.py" = ["TP001"]\n'
    )
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "run.py"
    script.write_text(SOURCE)
    found = find_pyproject(script)
    assert found == tmp_path / "pyproject.toml"
    settings = load(found)
    assert settings.ignore == ("TP3",) and settings.targets == ("mps",) and settings.exclude == ("vendored/",)
    result = migrate_file(script, settings=settings)
    assert ".cuda()" in (result.migrated or "")  # TP001 ignored for scripts/*.py
    other = tmp_path / "train.py"
    other.write_text(SOURCE)
    assert "tp.device()" in (migrate_file(other, settings=settings).migrated or "")


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.torchport]\nselct = ["TP0"]\n')
    with pytest.raises(ConfigError, match="unknown key 'selct'"):
        load(path)
    path.write_text('[tool.torchport]\ntarget = ["rocm"]\n')
    with pytest.raises(ConfigError, match="unknown target"):
        load(path)


def test_statistics_count_rewritten_reported_and_unreported(tmp_path: Path) -> None:
    assert leftover_sites('x.cuda()\ny = "cuda:1"\nz = f"cuda:{r}"\nt.is_cuda\nb = "nccl"\n') == 5
    assert leftover_sites("torch.backends.cuda.matmul.allow_tf32 = True\n# x.cuda()\n") == 0
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    stats = file_statistics(migrate_file(path))
    assert (stats.rewritten, stats.reported, stats.unreported) == (1, 2, 0)
    assert stats.accounted == 1.0


def test_an_f_string_is_one_site_at_most_on_every_python() -> None:
    # from 3.12 (PEP 701) tokenize gives the fields' own tokens; the count is 3.11's: only f"cuda:..." counts
    code = 'a = f"{x.cuda()}"\nb = f"{d[\'cuda\']}"\nc = f"cuda:{r}"\nd = f"""\n{x}\ncuda:0"""\n'
    assert leftover_sites(code) == 1


def test_json_report_lists_rewrites_and_diagnostics(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    report = json.loads(to_json([migrate_file(path)], tmp_path, "dry-run"))
    (entry,) = report["files"]
    assert entry["path"] == "m.py" and entry["changed"] is True
    assert [r["code"] for r in entry["rewrites"]] == ["TP001"]
    assert {d["code"] for d in entry["diagnostics"]} == {"TP101", "TP007"}


def test_sarif_has_rules_results_relative_uris_and_fixes(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    path = tmp_path / "pkg" / "m.py"
    path.write_text(SOURCE)
    broken = tmp_path / "broken.py"
    broken.write_text("x = torch.zeros(2).cuda(\n")
    log = json.loads(to_sarif([migrate_file(path), migrate_file(broken)], tmp_path, "dry-run"))
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == set(RULES)
    results = run["results"]
    assert {r["ruleId"] for r in results} == {"TP001", "TP101", "TP007"}
    for r in results:
        location = r["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "pkg/m.py"
        assert location["region"]["startLine"] >= 1
    rewrite = next(r for r in results if r["ruleId"] == "TP001")
    replacements = rewrite["fixes"][0]["artifactChanges"][0]["replacements"]
    texts = "".join(r["insertedContent"]["text"] for r in replacements)
    assert "from torchport import runtime as tp" in texts and "to(tp.device())" in texts
    assert run["invocations"][0]["executionSuccessful"] is False  # broken.py is a notification


def _apply_sarif(source: str, replacements: list[dict]) -> str:
    """Apply SARIF replacements (1-based lines and columns, end exclusive) to ``source``, last first."""
    lines = source.splitlines(keepends=True) + [""]
    offsets = [sum(map(len, lines[:i])) for i in range(len(lines))]

    def at(line: int, column: int) -> int:
        return offsets[line - 1] + column - 1

    text = source
    for rep in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"],
                                                   r["deletedRegion"]["startColumn"]), reverse=True):
        region = rep["deletedRegion"]
        start, end = at(region["startLine"], region["startColumn"]), at(region["endLine"], region["endColumn"])
        text = text[:start] + rep["insertedContent"]["text"] + text[end:]
    return text


TWO_ON_A_LINE = 'import torch\n\nx = torch.zeros(2).cuda()\ny = torch.ones(2, device="cuda").cuda(non_blocking=True)\n'


def test_each_sarif_fix_applies_its_own_rewrite_only(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(TWO_ON_A_LINE)
    result = migrate_file(path)
    log = json.loads(to_sarif([result], tmp_path, "dry-run"))
    fixed = [r for r in log["runs"][0]["results"] if r.get("fixes")]
    assert sorted(r["ruleId"] for r in fixed) == ["TP001", "TP001", "TP002"]  # two rewrites on line 4
    everything: dict[str, dict] = {}
    for r in fixed:
        (change,) = r["fixes"][0]["artifactChanges"]
        alone = _apply_sarif(TWO_ON_A_LINE, change["replacements"])
        compile(alone, "m.py", "exec")  # one fix alone gives code that runs: its import comes with it
        changed = [line for line in alone.splitlines() if line not in TWO_ON_A_LINE.splitlines()]
        assert len(changed) == 2 and "from torchport import runtime as tp" in changed  # its line and the import
        everything.update((json.dumps(rep, sort_keys=True), rep) for rep in change["replacements"])
    assert _apply_sarif(TWO_ON_A_LINE, list(everything.values())) == result.migrated  # all of them: the port
    line4 = [r for r in fixed if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 4]
    texts = {r["ruleId"]: _apply_sarif(TWO_ON_A_LINE, r["fixes"][0]["artifactChanges"][0]["replacements"])
             for r in line4}
    assert 'torch.ones(2, device=tp.device()).cuda(non_blocking=True)' in texts["TP002"]
    assert 'torch.ones(2, device="cuda").to(tp.device(), non_blocking=True)' in texts["TP001"]


def test_prefilter_skips_only_files_no_rule_can_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torchport.pipeline.engine as engine

    calls: list[str] = []
    real = engine.migrate_code

    def spy(source: str, settings: Settings, **kwargs: object) -> object:
        calls.append(source)
        return real(source, settings, **kwargs)

    monkeypatch.setattr(engine, "migrate_code", spy)
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\n\nx = torch.zeros(2).to(torch.float32)\n")
    assert migrate_file(plain).error is None and calls == []
    ranked = tmp_path / "ranked.py"
    body = "import torch\n\nmodel = torch.nn.Linear(2, 2).to(local_rank)\nb = x.pin_memory()\n"
    ranked.write_text("# one process per CUDA device\n" + body)
    result = migrate_file(ranked)
    assert len(calls) == 1 and "tp.device(local_rank)" in (result.migrated or "")
    assert "tp.pin_memory(x)" in (result.migrated or "")
    ranked.write_text(body)  # no mention of CUDA: parsed, reported, left unchanged
    result = migrate_file(ranked)
    assert len(calls) == 2 and result.migrated == body
    assert {d.code for d in result.diagnostics} == {"TP006", "TP041"}


def test_the_diff_shows_each_change_in_place_in_a_long_file_of_alike_functions() -> None:
    """Two alike training loops, one ported line for line: difflib.unified_diff junks their frequent lines in a
    long file and showed the ported loop as a block moved (graph-generation's train.py, 127 lines each way); the
    diff stays near the lines changed (a repeated line may still pair with its twin)."""
    draw = random.Random(0)
    body = []
    for i in range(39):
        body += [draw.choice([f"    v{i}_{k} = g(v)\n", "    h = h.cuda()\n", "    loss.backward()\n",
                              f"    w{i} = h.cuda()\n"]) for k in range(5)] + ["\n"]
    train = ["def train():\n", *body, "\n"]
    ported = [line.replace(".cuda()", ".to(d)") if draw.random() < .5 else line for line in train]
    before = "".join(["import torch\n", *train, "def evaluate():\n", *body])
    after = "".join(["import torch\n", *ported, "def evaluate():\n", *body])
    diff = text_diff(before, after, "train.py").splitlines()
    removed = [line for line in diff if line.startswith("-") and not line.startswith("---")]
    changed = sum(old != new for old, new in zip(train, ported))
    assert changed == 52 and len(removed) < 1.5 * changed  # difflib.unified_diff: 236 lines removed
    assert text_diff(before, before, "train.py") == ""
