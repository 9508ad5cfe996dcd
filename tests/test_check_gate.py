"""`--check` as a CI gate (issue 21): it fails on every finding but an info note, a baseline lets a project with
findings today turn it on, and bad input (paths, notebook cells that do not parse) is an error, never a pass."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchport.cli import app
from torchport.codemods.api import migrate_code
from torchport.pipeline.files import PathError, check_paths

CUDA_GRAPH = "import torch\ng = torch.cuda.CUDAGraph()\n"  # TP201, effort high: no rewrite, a finding
ONLY_NOTES = "import torch\ntorch.backends.cudnn.benchmark = True\n"  # TP107: an info note
TRAIN = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\narch = torch.cuda.get_arch_list()\n"


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def _check(cli: CliRunner, *args: str) -> tuple[int, list[str], str]:
    result = cli.invoke(app, ["migrate", *args, "--check", "--no-cache", "--output-format", "concise"])
    return result.exit_code, result.stdout.splitlines(), result.stderr


# ---- 1. check semantics ----------------------------------------------------------------------------------------


def test_a_finding_without_a_rewrite_fails_the_check(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "graphs.py").write_text(CUDA_GRAPH)
    code, lines, _ = _check(cli, str(tmp_path))
    assert code == 1 and [line.split(" ")[1] for line in lines] == ["TP201"]
    assert _check(cli, str(tmp_path), "--exit-zero")[0] == 0
    assert _check(cli, str(tmp_path), "--ignore", "TP201")[0] == 0
    github = cli.invoke(app, ["migrate", str(tmp_path), "--check", "--no-cache", "--output-format", "github"])
    assert github.exit_code == 1 and github.stdout.startswith("::warning file=graphs.py,line=2,")
    stdin = cli.invoke(app, ["migrate", "-", "--check"], input=CUDA_GRAPH)
    assert stdin.exit_code == 1


def test_info_notes_never_fail_the_check(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "flags.py").write_text(ONLY_NOTES)
    code, lines, _ = _check(cli, str(tmp_path))
    assert code == 0 and [line.split(" ")[1] for line in lines] == ["TP107"]  # reported, and the check passes


# ---- 2. baseline -----------------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "graphs.py").write_text(CUDA_GRAPH)
    (tmp_path / "flags.py").write_text(ONLY_NOTES)
    return tmp_path


def test_a_baseline_passes_today_and_fails_on_exactly_the_new_finding(cli: CliRunner, project: Path) -> None:
    baseline = project / "torchport-baseline.json"
    written = cli.invoke(app, ["migrate", str(project), "--write-baseline", str(baseline), "--no-cache"])
    assert written.exit_code == 0 and "4 finding(s) recorded" in written.stderr
    entries = json.loads(baseline.read_text())["findings"]
    assert {(e["path"], e["code"], e["text"]) for e in entries} == {
        ("flags.py", "TP107", "torch.backends.cudnn.benchmark = True"),  # a note: shown no more, never failing
        ("graphs.py", "TP201", "g = torch.cuda.CUDAGraph()"),
        ("train.py", "TP001", "model = torch.nn.Linear(2, 2).cuda()"),
        ("train.py", "TP101", "arch = torch.cuda.get_arch_list()")}
    assert not (project / "train.py").read_text() != TRAIN  # writing a baseline writes nothing else
    assert _check(cli, str(project))[0] == 1
    assert _check(cli, str(project), "--baseline", str(baseline))[:2] == (0, [])

    # lines move (a docstring above them): still the same findings
    (project / "train.py").write_text('"""Train."""\n\n' + TRAIN)
    assert _check(cli, str(project), "--baseline", str(baseline))[:2] == (0, [])

    # one new .cuda() line: that finding alone
    (project / "train.py").write_text('"""Train."""\n\n' + TRAIN + "extra = torch.zeros(2).cuda()\n")
    code, lines, _ = _check(cli, str(project), "--baseline", str(baseline))
    assert code == 1 and lines == [f"{project / 'train.py'}:7:9: TP001 [*] `.cuda(...)` on a tensor or module "
                                   "becomes `.to(<runtime device>, ...)`."]


def test_a_fixed_finding_is_a_stale_entry_until_the_baseline_shrinks(cli: CliRunner, project: Path) -> None:
    baseline = project / "baseline.json"
    cli.invoke(app, ["migrate", str(project), "--write-baseline", str(baseline), "--no-cache"])
    (project / "graphs.py").write_text("import torch\n")
    code, lines, err = _check(cli, str(project), "--baseline", str(baseline))
    assert code == 1 and lines == []
    assert "graphs.py: stale baseline entry: TP201 `g = torch.cuda.CUDAGraph()` is fixed" in err
    # a run on some files only (a pre-commit hook) says nothing of the others' entries
    assert _check(cli, str(project / "train.py"), "--baseline", str(baseline))[0] == 0
    cli.invoke(app, ["migrate", str(project), "--write-baseline", str(baseline), "--no-cache"])
    assert len(json.loads(baseline.read_text())["findings"]) == 3
    (project / "flags.py").write_text("import torch\n")  # a note gone: no stale entry
    assert _check(cli, str(project), "--baseline", str(baseline))[0] == 0
    assert _check(cli, str(project), "--baseline", str(baseline))[0] == 0


def test_a_baseline_counts_repeated_lines(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch\nx = x.cuda()\nx = x.cuda()\n")
    baseline = tmp_path / "b.json"
    cli.invoke(app, ["migrate", str(tmp_path), "--write-baseline", str(baseline), "--no-cache"])
    assert json.loads(baseline.read_text())["findings"][0]["count"] == 2
    (tmp_path / "m.py").write_text("import torch\nx = x.cuda()\nx = x.cuda()\nx = x.cuda()\n")
    code, lines, _ = _check(cli, str(tmp_path), "--baseline", str(baseline))
    assert code == 1 and len(lines) == 1  # the third copy is new


def test_a_bad_baseline_or_mode_is_a_usage_error(cli: CliRunner, project: Path) -> None:
    (project / "b.json").write_text("[1, 2]")
    bad = cli.invoke(app, ["migrate", str(project), "--check", "--baseline", str(project / "b.json")])
    assert bad.exit_code == 2 and "not a torchport baseline" in bad.stderr
    missing = cli.invoke(app, ["migrate", str(project), "--check", "--baseline", str(project / "none.json")])
    assert missing.exit_code == 2 and "cannot read the baseline" in missing.stderr
    applying = cli.invoke(app, ["migrate", str(project), "--apply", "--baseline", str(project / "b.json")])
    assert applying.exit_code == 2 and "exclude --apply" in applying.stderr


# ---- 6. what must never pass silently ---------------------------------------------------------------------------


def _notebook(path: Path, *cells: str) -> None:
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None}
                  for c in cells],
        "metadata": {"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 5}, indent=1))


def test_notebook_cells_that_do_not_parse_are_errors(cli: CliRunner, tmp_path: Path) -> None:
    _notebook(tmp_path / "nb.ipynb", "import torch\n?torch.cuda\ntorch.cuda.memory_summary??\n! apt-get install \\\n"
              "    libsndfile1-dev", "x = torch.zeros(2).cuda()", "y = torch.ones(2).cuda(\nz = 1")
    code, lines, err = _check(cli, str(tmp_path))
    assert code == 2  # a cell went unseen: not a pass, whatever else is found
    assert lines == [f"{tmp_path / 'nb.ipynb'}:cell_2:1:5: TP001 [*] `.cuda(...)` on a tensor or module becomes "
                     "`.to(<runtime device>, ...)`."]  # help syntax is IPython's: that cell is read, not reported
    assert f"{tmp_path / 'nb.ipynb'}:cell_3:1:" in err and "error: cell not migrated: it does not parse" in err
    assert "1 failed" in err
    report = json.loads(cli.invoke(app, ["migrate", str(tmp_path), "--format", "json", "--no-cache"]).stdout)
    assert [c["cell"] for c in report["files"][0]["not_migrated"]] == [3]


@pytest.mark.parametrize("source", [
    "import torch\ntorch.set_default_tensor_type(torch.cuda.BFloat16Tensor)\n",
    'import torch\nrank = 1\nx = torch.zeros(2).to(f"cuda:{rank}")\n',
    'import torch.distributed as dist\ndist.init_process_group(backend="nccl" if use_cuda else "gloo")\n',
    "import torch\nwith torch.cuda.amp.autocast(True, torch.float16):\n    pass\n",
])
def test_the_ports_own_output_is_no_new_finding(source: str) -> None:
    first = migrate_code(source)
    second = migrate_code(first.code)
    assert first.code != source and second.code == first.code
    assert {(d.code, d.message) for d in second.diagnostics} <= {(d.code, d.message) for d in first.diagnostics}


def test_bad_paths_are_one_error_line_and_exit_2(cli: CliRunner, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    os.symlink(tmp_path / "loop_b", tmp_path / "loop_a")
    os.symlink(tmp_path / "loop_a", tmp_path / "loop_b")
    for path, reason in ((tmp_path / "loop_a", "symlink loop"), (tmp_path / "missing", "no such file or folder")):
        for command in ("migrate", "programs"):
            result = cli.invoke(app, [command, str(path)])
            assert result.exit_code == 2, result.output
            (line,) = result.stderr.splitlines()
            assert line.startswith(f"error: {path}: ") and reason in line and "Traceback" not in result.output
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "ok.py").write_text("x = 1\n")
    os.symlink("b.py", tmp_path / "tree" / "a.py")
    os.symlink("a.py", tmp_path / "tree" / "b.py")
    inside = cli.invoke(app, ["migrate", str(tmp_path / "tree"), "--check", "--no-cache"])
    assert inside.exit_code == 2 and "a.py:1:1: error: cannot read: a symlink loop" in inside.stderr
    real_access = os.access  # the tests may run as root, who reads everything: say it cannot
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith("ok.py") else real_access(p, mode))
    with pytest.raises(PathError, match=r"ok.py: cannot read: permission denied"):
        check_paths([tmp_path / "tree" / "ok.py"])


def test_an_unlistable_folder_is_reported(cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.py").write_text("x = 1\n")
    real_scandir = os.scandir

    def scandir(path: object) -> object:
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    result = cli.invoke(app, ["migrate", str(tmp_path), "--check", "--no-cache"])
    assert result.exit_code == 2 and "sub:1:1: error: cannot read this folder: Permission denied" in result.stderr


# ---- 8. smaller things ------------------------------------------------------------------------------------------


def test_rules_off_a_terminal_are_lines_and_json(cli: CliRunner) -> None:
    concise = cli.invoke(app, ["rules"]).stdout.splitlines()
    assert concise[0].split("\t")[:3] == ["TP001", "cuda-method", "safe"] and all("│" not in x for x in concise)
    assert any(line.startswith("TP201\tcuda-graphs\tmanual (high)\t") for line in concise)
    rows = json.loads(cli.invoke(app, ["rules", "--output-format", "json"]).stdout)
    assert len(rows) == len(concise) and rows[0]["code"] == "TP001" and rows[0]["after"]


def test_findings_are_sorted_by_path_then_position(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text(TRAIN)
    (tmp_path / "a.py").write_text(CUDA_GRAPH)
    code, lines, _ = _check(cli, str(tmp_path / "b.py"), str(tmp_path / "a.py"))
    assert [line.split(":")[0].rsplit("/", 1)[1] + ":" + line.split(":")[1] for line in lines] == [
        "a.py:2", "b.py:3", "b.py:4"]


def test_tp003_says_what_it_writes(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('device = "cuda"\n')
    code, lines, _ = _check(cli, str(tmp_path))
    assert "TP003 [*]" in lines[0] and "stays a str" not in lines[0] and "becomes" in lines[0]


def test_apply_outside_version_control_says_so(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(TRAIN)
    outside = cli.invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"])
    assert outside.exit_code == 0
    assert "note: 1 file(s) written are not under version control (git)" in outside.stderr
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text(TRAIN)
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "m.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    inside = cli.invoke(app, ["migrate", str(repo), "--apply", "--no-cache"])
    assert inside.exit_code == 0 and "note:" not in inside.stderr


def test_the_test_extra_has_what_the_tests_use() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    names = {dep.split("=")[0].split(">")[0].split("<")[0].strip() for dep in
             pyproject["project"]["optional-dependencies"]["test"]}
    assert {"pytest", "ruff", "numpy", "jsonschema", "hypothesis"} <= names
