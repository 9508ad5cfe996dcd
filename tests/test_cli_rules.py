"""Rule selection, configuration and report formats, through the command line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchport.cli import app

SOURCE = "import torch\n\nx = torch.zeros(2).cuda()\nif x.is_cuda:\n    pass\ntorch.cuda.get_arch_list()\n"
WIDE = {"COLUMNS": "200"}


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path


def test_select_and_ignore(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    runner = CliRunner()
    # --check fails on any finding that is not an info note: TP101 (get_arch_list) is one
    assert runner.invoke(app, ["migrate", str(repo), "--check", "--select", "TP1"]).exit_code == 1
    assert runner.invoke(app, ["migrate", str(repo), "--check", "--select", "TP0,TP110"]).exit_code == 1
    assert runner.invoke(app, ["migrate", str(repo), "--check", "--ignore", "TP001,TP007,TP101"]).exit_code == 0
    assert runner.invoke(app, ["migrate", str(repo), "--check"]).exit_code == 1
    unknown = runner.invoke(app, ["migrate", str(repo), "--select", "TP999"])
    assert unknown.exit_code == 2 and "unknown rule code" in unknown.stderr


def test_unsafe_fixes_flag(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    runner = CliRunner()
    runner.invoke(app, ["migrate", str(repo), "--apply"])
    assert "x.is_cuda" in (repo / "m.py").read_text()
    runner.invoke(app, ["migrate", str(repo), "--apply", "--unsafe-fixes"])
    assert "tp.on_accelerator(x)" in (repo / "m.py").read_text()


def test_pyproject_config_applies_and_cli_overrides(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text('[tool.torchport]\nignore = ["TP001"]\nunsafe-fixes = true\n')
    result = CliRunner().invoke(app, ["migrate", str(repo), "--format", "json"])
    (entry,) = json.loads(result.stdout)["files"]
    assert [r["code"] for r in entry["rewrites"]] == ["TP007"]
    added = CliRunner().invoke(app, ["migrate", str(repo), "--format", "json", "--ignore", "TP007"])
    (entry,) = json.loads(added.stdout)["files"]
    assert entry["rewrites"] == []  # as in ruff, --ignore adds to the file's ignores
    override = CliRunner().invoke(app, ["migrate", str(repo), "--format", "json", "--select", "TP0",
                                        "--ignore", "TP007"])
    (entry,) = json.loads(override.stdout)["files"]
    assert [r["code"] for r in entry["rewrites"]] == ["TP001"]  # --select starts afresh: the file's ignore is gone
    (repo / "pyproject.toml").write_text('[tool.torchport]\nselect = "TP0"\nbogus = 1\n')
    bad = CliRunner().invoke(app, ["migrate", str(repo)])
    assert bad.exit_code == 2 and "unknown key 'bogus'" in bad.stderr


def test_sarif_goes_to_stdout_with_relative_uris(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    result = CliRunner().invoke(app, ["migrate", str(repo), "--format", "sarif"])
    assert result.exit_code == 0
    log = json.loads(result.stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"m.py"}
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"TP001", "TP007", "TP101"}


def test_statistics_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["migrate", str(_repo(tmp_path)), "--statistics", "--output-format", "full"],
                                env=WIDE)
    assert "CUDA-specific sites" in result.stdout and "100.0%" in result.stdout
    assert result.stderr == "" and "---" not in result.stdout  # the statistics alone: no diff, no summary
    plain = CliRunner().invoke(app, ["migrate", str(_repo(tmp_path)), "--statistics"])
    lines = plain.stdout.splitlines()
    assert plain.stderr == "" and lines[-1] == "1\t2\t0\t100.0%\ttotal (1 files)"
    header = lines.index("rewritten\treported\tunreported\taccounted\tfile")
    assert lines[header + 1:-1] == [f"1\t2\t0\t100.0%\t{tmp_path / 'm.py'}"]  # the path last, 100.0% as the total
    assert any(line.split("\t")[1:3] == ["TP001", "[*] cuda-method"] for line in lines)


def test_suppression_comment(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch\nx = torch.zeros(2).cuda()  # torchport: ignore[TP001]\n")
    assert CliRunner().invoke(app, ["migrate", str(tmp_path), "--check"]).exit_code == 0


def test_explain(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["explain", "tp007"], env=WIDE)
    assert result.exit_code == 0
    assert "is-cuda" in result.stdout and "unsafe" in result.stdout and "tp.on_accelerator(x)" in result.stdout
    assert CliRunner().invoke(app, ["explain", "TP999"]).exit_code == 2


def test_explain_says_what_every_rule_does_in_whole_lines() -> None:
    from torchport.codemods.api import RULES

    for code, rule in RULES.items():
        result = CliRunner().invoke(app, ["explain", code])  # piped: 80 columns, which must not cut a line
        lines = result.stdout.splitlines()
        assert result.exit_code == 0 and lines[1] == rule.summary, code
        label = "before:" if rule.kind == "rewrite" else "reported:"
        shown = lines[lines.index(label) + 1:]
        example = shown[:shown.index("after:")] if rule.after else shown[:len(rule.before.splitlines())]
        assert example == ["    " + line for line in rule.before.splitlines()], code
        if rule.after:
            after = shown[shown.index("after:") + 1:][:len(rule.after.splitlines())]
            assert after == ["    " + line for line in rule.after.splitlines()], code


def test_explain_tp009_says_which_asserts_go_by_default() -> None:
    out = CliRunner().invoke(app, ["explain", "TP009"]).stdout
    assert "Applied by default to `assert torch.cuda.is_available()`, and to an `if not" in out
    assert "Applied only with --unsafe-fixes" not in out
    assert "Applied only with --unsafe-fixes" in CliRunner().invoke(app, ["explain", "TP007"]).stdout
