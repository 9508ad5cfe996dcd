"""The command line in a pipe and in CI: concise and GitHub output, stdin, exit codes, configuration
errors, read-only files, SARIF against its schema, and what a run imports."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchport.cli import app
from torchport.report.formats import github_lines

CUDA = "import torch\n\nx = torch.zeros(2).cuda()\ntorch.cuda.get_arch_list()\n"
# The SARIF 2.1.0 schema (OASIS, sarif-spec Schemata/sarif-schema-2.1.0.json), vendored: tests run offline.
SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
CONCISE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>TP\d{3}) ")


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "b.py").write_text("import torch\ny = torch.ones(1, device='cuda')\n")
    return tmp_path


def test_off_a_terminal_each_finding_is_one_concise_line(cli: CliRunner, repo: Path) -> None:
    result = cli.invoke(app, ["migrate", str(repo), "--check"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines and all(CONCISE.match(line) for line in lines), lines
    assert [CONCISE.match(line)["code"] for line in lines] == ["TP001", "TP101", "TP002"]  # type: ignore[index]
    assert lines[0] == f"{repo / 'a.py'}:3:5: TP001 [*] `.cuda(...)` on a tensor or module becomes " \
                       "`.to(<runtime device>, ...)`."
    assert "─" not in result.stdout + result.stderr and "┃" not in result.stderr  # no table, no box


def test_exit_zero_and_quiet(cli: CliRunner, repo: Path) -> None:
    result = cli.invoke(app, ["migrate", str(repo), "--check", "--exit-zero", "-q"])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 3 and result.stderr == ""
    (repo / "bad.py").write_text("x = torch.zeros(2).cuda(\n")
    failed = cli.invoke(app, ["migrate", str(repo), "--check", "--exit-zero"])
    assert failed.exit_code == 2 and f"{repo / 'bad.py'}:1:" in failed.stderr  # failures still fail


def test_github_annotations_one_per_finding_with_escaping(cli: CliRunner, repo: Path) -> None:
    result = cli.invoke(app, ["migrate", str(repo), "--check", "--output-format", "github"])
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("::warning file=") for line in lines)
    assert lines[0].startswith("::warning file=a.py,line=3,col=5,title=TP001::TP001 ")
    from torchport.results import Diagnostic, FileResult

    odd = FileResult(path=repo / "x,y:z%.py", display="x", original="a", migrated="a",
                     diagnostics=[Diagnostic("TP101", 2, 0, "50% off\nnext line: a, b")])
    (line,) = github_lines([odd], repo, "check")
    assert line == "::warning file=x%2Cy%3Az%25.py,line=2,col=1,title=TP101::TP101 50%25 off%0Anext line: a, b"


def test_markup_in_file_names_and_messages_is_shown_as_is(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "[bold]train.py").write_text("import torch\ntorch.cuda.get_arch_list()\n")
    (tmp_path / "[red]bad.py").write_text("import torch\nx = torch.zeros(2).cuda(\n")
    result = cli.invoke(app, ["migrate", str(tmp_path), "--output-format", "full"], env={"COLUMNS": "250"})
    assert "[bold]train.py:2:1" in result.stderr and "[red]bad.py" in result.stderr


def test_stdin_to_stdout(cli: CliRunner, tmp_path: Path) -> None:
    migrated = cli.invoke(app, ["migrate", "-"], input=CUDA)
    assert migrated.exit_code == 0 and "x = torch.zeros(2).to(tp.device())" in migrated.stdout
    assert "-:3:5: TP001 [*]" in migrated.stderr
    check = cli.invoke(app, ["migrate", "-", "--check", "--stdin-filename", str(tmp_path / "m.py")], input=CUDA)
    assert check.exit_code == 1 and check.stdout == "" and "m.py:3:5: TP001" in check.stderr
    diff = cli.invoke(app, ["migrate", "-", "--check", "--diff"], input=CUDA)
    assert "+x = torch.zeros(2).to(tp.device())" in diff.stdout
    plain = cli.invoke(app, ["migrate", "-"], input="x = 1\n")
    assert plain.exit_code == 0 and plain.stdout == "x = 1\n"
    assert cli.invoke(app, ["migrate", "-", str(tmp_path)]).exit_code == 2


def test_malformed_pyproject_is_an_error_with_its_line(cli: CliRunner, repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.torchport]\nselect = ["TP0"\nignore = []\n')
    result = cli.invoke(app, ["migrate", str(repo)])
    assert result.exit_code == 2
    assert re.search(r"pyproject\.toml:3:\d+: invalid TOML", result.stderr), result.stderr


def test_a_string_where_a_list_is_expected_is_an_error(cli: CliRunner, repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.torchport]\nexclude = "third_party/"\n')
    result = cli.invoke(app, ["migrate", str(repo)], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "exclude must be a list" in result.stderr


def test_command_line_select_wins_over_the_file_ignore(cli: CliRunner, repo: Path) -> None:
    (repo / "a.py").write_text("import torch\nx = torch.zeros(2, dtype=torch.float64)\n")
    (repo / "b.py").unlink()
    (repo / "pyproject.toml").write_text('[tool.torchport]\nignore = ["TP3"]\n')
    assert cli.invoke(app, ["migrate", str(repo), "--check"]).stdout == ""
    result = cli.invoke(app, ["migrate", str(repo), "--check", "--select", "TP3"])
    assert ": TP301 " in result.stdout


def test_exclude_and_per_file_ignores_use_the_same_patterns(cli: CliRunner, repo: Path) -> None:
    for folder in ("third_party", "pkg/scripts"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "run.py").write_text(CUDA)
    (repo / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.torchport]
        exclude = ["third_party/", "b.py"]
        [tool.torchport.per-file-ignores]
        "scripts/" = ["TP001"]
        "a.py" = ["TP1"]
    """))
    result = cli.invoke(app, ["migrate", str(repo), "--check", "--output-format", "json"])
    files = {f["path"]: f for f in json.loads(result.stdout)["files"]}
    assert set(files) == {"a.py", "pkg/scripts/run.py"}  # a folder pattern at any depth, a name anywhere
    assert [r["code"] for r in files["pkg/scripts/run.py"]["rewrites"]] == []
    assert files["a.py"]["diagnostics"] == [] and [r["code"] for r in files["a.py"]["rewrites"]] == ["TP001"]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_apply_does_not_write_a_read_only_file(cli: CliRunner, repo: Path) -> None:
    locked = repo / "b.py"
    before = locked.read_text()
    locked.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        result = cli.invoke(app, ["migrate", str(repo), "--apply"])
    finally:
        locked.chmod(0o644)
    assert result.exit_code == 2
    assert "b.py:1:1: error: not written: the file is read-only" in result.stderr
    assert "1 file(s) changed, 1 rewrite(s)" in result.stderr  # only a.py counts
    assert locked.read_text() == before and "tp.device()" in (repo / "a.py").read_text()


@pytest.mark.parametrize("mode", ["--check", "--apply"])
def test_sarif_validates_against_the_sarif_2_1_0_schema(cli: CliRunner, repo: Path, mode: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    (repo / "bad.py").write_text("x = torch.zeros(2).cuda(\n")
    result = cli.invoke(app, ["migrate", str(repo), mode, "--output-format", "sarif"])
    log = json.loads(result.stdout)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text()))
    levels = {(r["kind"], r["level"]) for r in log["runs"][0]["results"] if r["ruleId"] == "TP001"}
    assert levels == ({("fail", "note")} if mode == "--check" else {("pass", "none")})


def test_explain_takes_a_rule_name(cli: CliRunner) -> None:
    by_name = cli.invoke(app, ["explain", "cuda-method"])
    assert by_name.exit_code == 0 and by_name.stdout == cli.invoke(app, ["explain", "TP001"]).stdout


def _python(code: str, cwd: Path) -> str:
    env = {**os.environ, "TORCHPORT_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True, timeout=120).stdout


def test_the_command_line_never_imports_torch_and_a_warm_run_loads_no_rule(repo: Path) -> None:
    run = textwrap.dedent(f"""\
        import sys
        from torchport.cli import main
        sys.argv = ["torchport", "migrate", {str(repo)!r}, "--check", "--exit-zero", "-q"]
        try:
            main()
        except SystemExit:
            pass
        print(sorted(m for m in ("torch", "libcst", "torchport.codemods.api", "rich.syntax") if m in sys.modules))
    """)
    assert _python("import sys, torchport.cli; print('torch' in sys.modules)", repo).strip() == "False"
    cold = _python(run, repo).splitlines()[-1]
    assert cold == "['libcst', 'torchport.codemods.api']"  # parsed: the rules load, torch never does
    warm = _python(run, repo).splitlines()[-1]
    assert warm == "[]"  # every result from the cache
