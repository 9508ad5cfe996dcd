"""The `torchport migrate` command as a user runs it: streams, exit codes, files on disk."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchport.cli import app

CUDA_CODE = "import torch\n\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(CUDA_CODE)
    (tmp_path / "clean.py").write_text("import torch\n\nx = torch.zeros(2)\n")
    return tmp_path


def test_dry_run_is_default_prints_diff_and_writes_nothing(runner: CliRunner, repo: Path) -> None:
    result = runner.invoke(app, ["migrate", str(repo)])
    assert result.exit_code == 0
    assert "+x = torch.zeros(2).to(tp.device())" in result.stdout
    assert "-torch.cuda.synchronize()" in result.stdout
    assert "file(s) scanned" in result.stderr and "file(s) scanned" not in result.stdout
    assert (repo / "train.py").read_text() == CUDA_CODE


def test_check_exits_1_when_changes_pending_and_0_after_apply(runner: CliRunner, repo: Path) -> None:
    check = runner.invoke(app, ["migrate", str(repo), "--check"])
    assert check.exit_code == 1
    assert check.stdout.startswith(f"{repo / 'train.py'}:3:5: TP001 [*] ")  # concise, off a terminal
    assert "1 file(s) would change" in check.stderr
    full = runner.invoke(app, ["migrate", str(repo), "--check", "--output-format", "full"])
    assert full.exit_code == 1 and full.stdout == "" and "would migrate" in full.stderr
    applied = runner.invoke(app, ["migrate", str(repo), "--apply"])
    assert applied.exit_code == 0
    assert applied.stdout == ""  # every finding was a rewrite, now applied
    assert "from torchport import runtime as tp" in (repo / "train.py").read_text()
    assert runner.invoke(app, ["migrate", str(repo), "--check"]).exit_code == 0


def test_diff_flag_adds_the_diff_to_check(runner: CliRunner, repo: Path) -> None:
    result = runner.invoke(app, ["migrate", str(repo), "--check", "--diff"])
    assert result.exit_code == 1
    assert "+++ b/" in result.stdout


def test_unparsable_file_is_reported_left_untouched_and_run_goes_on(runner: CliRunner, repo: Path) -> None:
    broken = "import torch\nx = torch.zeros(2).cuda(\n"
    (repo / "broken.py").write_text(broken)
    result = runner.invoke(app, ["migrate", str(repo), "--apply"])
    assert result.exit_code == 2
    assert "broken.py" in result.stderr and "syntax error" in result.stderr
    assert (repo / "broken.py").read_text() == broken
    assert "tp.synchronize()" in (repo / "train.py").read_text()


def test_undecodable_file_is_reported_and_untouched(runner: CliRunner, repo: Path) -> None:
    data = b"# -*- coding: utf-8 -*-\nx = '\xff' # cuda\n"
    (repo / "latin.py").write_bytes(data)
    result = runner.invoke(app, ["migrate", str(repo), "--apply"])
    assert result.exit_code == 2
    assert "cannot decode" in result.stderr
    assert (repo / "latin.py").read_bytes() == data


def test_gitignore_virtualenvs_and_exclude_are_honoured(runner: CliRunner, repo: Path) -> None:
    (repo / ".gitignore").write_text("generated/\n")
    for folder in ("generated", "venv", "build", "keep", "vendored", "env"):
        (repo / folder).mkdir()
        (repo / folder / "m.py").write_text(CUDA_CODE)
    (repo / "custom_env").mkdir()
    (repo / "custom_env" / "pyvenv.cfg").write_text("home = /usr\n")
    (repo / "custom_env" / "m.py").write_text(CUDA_CODE)
    result = runner.invoke(app, ["migrate", str(repo), "--apply", "--exclude", "vendored/"])
    assert result.exit_code == 0
    assert "tp." in (repo / "keep" / "m.py").read_text()
    assert "tp." in (repo / "env" / "m.py").read_text()  # haq's lib/env: code, not a virtualenv
    for folder in ("generated", "venv", "build", "vendored", "custom_env"):
        assert (repo / folder / "m.py").read_text() == CUDA_CODE, folder


def test_missing_path_and_conflicting_modes_are_usage_errors(runner: CliRunner, repo: Path) -> None:
    missing = runner.invoke(app, ["migrate", str(repo / "nope")])
    assert missing.exit_code == 2
    conflicting = runner.invoke(app, ["migrate", str(repo), "--apply", "--check"])
    assert conflicting.exit_code == 2
    assert (repo / "train.py").read_text() == CUDA_CODE


def test_apply_keeps_crlf_bom_and_file_mode(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "win.py"
    path.write_bytes(b"\xef\xbb\xbfimport torch\r\n\r\nx = torch.zeros(2).cuda()\r\n")
    os.chmod(path, 0o751)
    assert runner.invoke(app, ["migrate", str(tmp_path), "--apply"]).exit_code == 0
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"x = torch.zeros(2).to(tp.device())\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == [".torchport_cache", "win.py"], "no temporary file left behind"


def test_no_final_newline_is_kept(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import torch\nx = torch.zeros(2).cuda()")
    assert runner.invoke(app, ["migrate", str(tmp_path), "--apply"]).exit_code == 0
    assert path.read_text().endswith("x = torch.zeros(2).to(tp.device())")


def test_diagnostics_are_in_the_summary_with_file_and_line(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch\n\ntorch.cuda.get_arch_list()\n")
    result = runner.invoke(app, ["migrate", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "TP101" in result.stderr and "m.py:3:1" in result.stderr


def test_rules_lists_every_code(runner: CliRunner) -> None:
    from torchport.codemods.api import RULES

    result = runner.invoke(app, ["rules"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for code in RULES:
        assert code in result.stdout


def test_apply_keeps_a_pep263_latin1_file_in_latin1(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "old.py"
    source = "# -*- coding: latin-1 -*-\nimport torch\n\nname = 'café'  # déjà vu\nx = torch.zeros(2).cuda()\n"
    path.write_bytes(source.encode("latin-1"))
    assert runner.invoke(app, ["migrate", str(tmp_path), "--apply"]).exit_code == 0
    data = path.read_bytes()
    assert data.startswith(b"# -*- coding: latin-1 -*-\n")
    assert b"name = 'caf\xe9'  # d\xe9j\xe0 vu\n" in data  # still latin-1, not UTF-8
    assert data.decode("latin-1").endswith("x = torch.zeros(2).to(tp.device())\n")
    assert runner.invoke(app, ["migrate", str(tmp_path), "--check"]).exit_code == 0


def test_jobs_one_and_many_give_the_same_output(runner: CliRunner, tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(CUDA_CODE + f"y{i} = torch.ones({i}, device='cuda')\n")
    one = runner.invoke(app, ["migrate", str(tmp_path), "-j", "1", "--no-cache"])
    many = runner.invoke(app, ["migrate", str(tmp_path), "-j", "3", "--no-cache"])
    assert one.exit_code == many.exit_code == 0
    assert one.stdout == many.stdout and one.stdout.count("+++ b/") == 6
    assert one.stdout.index("m0.py") < one.stdout.index("m5.py"), "diffs come in the order the files were found"


def test_progress_bar_only_on_a_terminal() -> None:
    import io

    from rich.console import Console

    from torchport.report.console import PROGRESS_MIN_FILES, progress_bar

    shown = io.StringIO()
    terminal = Console(file=shown, force_terminal=True, width=100)
    with progress_bar(terminal, PROGRESS_MIN_FILES) as advance:
        for _ in range(PROGRESS_MIN_FILES):
            advance()
    assert "migrating" in shown.getvalue()
    hidden = io.StringIO()
    with progress_bar(Console(file=hidden, force_terminal=False), 10 * PROGRESS_MIN_FILES) as advance:
        advance()
    assert hidden.getvalue() == ""
    small = io.StringIO()
    with progress_bar(Console(file=small, force_terminal=True), PROGRESS_MIN_FILES - 1) as advance:
        advance()
    assert small.getvalue() == ""


AMP_AND_OOM = """import torch

scaler = torch.cuda.amp.GradScaler()
model = torch.nn.Linear(2, 2).cuda()


@torch.cuda.amp.custom_fwd
def step(x):
    try:
        with torch.cuda.amp.autocast():
            return model(x.cuda())
    except torch.cuda.OutOfMemoryError:
        return None
"""


@pytest.mark.parametrize(("requirement", "held"), [
    ("torch==1.13.1", {"TP014", "TP021", "TP022"}),  # Chinese-Vicuna's pin (the autocast is in custom_fwd's region)
    ("torch>=2.3,<2.5", {"TP014", "TP021", "TP022"}),  # torch.amp.GradScaler is there, not on MPS; custom_fwd's type
    ("torch>=2.5", {"TP020", "TP021"}),  # autocast on MPS is there, GradScaler on MPS not: they move together
    ("torch>=2.8", set()),
    ("numpy", set()),  # no torch requirement: the installed torch decides nothing either
])
def test_no_rewrite_writes_a_torch_api_the_projects_torch_lacks(runner: CliRunner, tmp_path: Path,
                                                                 requirement: str, held: set[str]) -> None:
    (tmp_path / "requirements.txt").write_text(requirement + "\n")
    (tmp_path / "m.py").write_text(AMP_AND_OOM)
    done = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    notes = [line for line in done.output.splitlines() if "[R26 project-torch]" in line]
    assert {line.split("(")[1].split(" ")[0] for line in notes} == held, done.output
    assert all(f"requires torch {requirement[7:11].rstrip(',')}" in line for line in notes)


@pytest.mark.parametrize(("requirement", "held"), [("torch>=1.7", True), ("torch>=2.0", True), ("torch>=2.5", False)])
def test_an_autocast_stays_where_the_projects_torch_has_no_torch_amp(runner: CliRunner, tmp_path: Path,
                                                                     requirement: str, held: bool) -> None:
    """ByteTrack (torch>=1.7, its Dockerfile pins 1.9.1): `torch.amp.autocast` came with torch 1.10; protein_generator
    (torch 2.0): `autocast("mps")` raises before torch 2.5, even disabled, so the port would break a Mac."""
    (tmp_path / "requirements.txt").write_text(requirement + "\n")
    (tmp_path / "m.py").write_text("import torch\n\n\ndef iou(a, b):\n"
                                   "    with torch.cuda.amp.autocast(enabled=False):\n        return (a * b).sum()\n")
    done = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache"])
    assert ("TP020 would apply): [R26 project-torch]" in done.output) is held, done.output
    assert ("torch.amp.autocast(tp.device_type(), enabled=False)" in done.output) is not held, done.output
