"""Nothing lost: per-file failure isolation, no writes outside the root, the dirty-tree guard,
--output-dir, the cache, and interruption by a real signal during --apply."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import torchport.pipeline.engine as engine
from torchport.cli import app
from torchport.config import Settings
from torchport.pipeline import cache as cache_module
from torchport.pipeline import runner
from torchport.pipeline.engine import migrate_file, read_file
from torchport.pipeline.files import discover
from torchport.pipeline.writes import TEMP_SUFFIX, write_in_place

CUDA_CODE = "import torch\n\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
MIGRATED_MARK = "tp.synchronize()"


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (links as their target text), by relative path."""
    files: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != cache_module.FOLDER_NAME]
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                files[rel] = b"-> " + os.readlink(path).encode()
            elif path.is_file():
                files[rel] = path.read_bytes()
    return files


# ---- per-file failure isolation -----------------------------------------------------------


def test_fifo_is_reported_not_read_and_the_run_goes_on(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA_CODE)
    os.mkfifo(tmp_path / "pipe.py")  # reading it would block the run forever
    result = cli.invoke(app, ["migrate", str(tmp_path), "--apply"])
    assert result.exit_code == 2
    assert "pipe.py" in result.stderr and "not a regular file" in result.stderr
    assert MIGRATED_MARK in (tmp_path / "train.py").read_text()
    assert stat.S_ISFIFO((tmp_path / "pipe.py").lstat().st_mode)


def test_a_folder_named_like_a_python_file_is_not_a_file(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "odd.py").mkdir()
    (tmp_path / "odd.py" / "inner.py").write_text(CUDA_CODE)
    result = cli.invoke(app, ["migrate", str(tmp_path), "--apply"])
    assert result.exit_code == 0, result.stderr
    assert MIGRATED_MARK in (tmp_path / "odd.py" / "inner.py").read_text()


def test_unreadable_path_gives_a_per_file_error(tmp_path: Path) -> None:
    # A path that exists but cannot be read as a file (root can read any file, so no chmod here).
    folder = tmp_path / "folder.py"
    folder.mkdir()
    result = migrate_file(folder)
    assert result.error is not None and result.error.startswith("cannot read:")
    assert result.migrated is None and not result.changed


def test_file_that_cannot_be_read_is_reported_and_the_run_goes_on(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Works as root too (root reads any file whatever its mode): the read itself is made to fail.
    (tmp_path / "train.py").write_text(CUDA_CODE)
    secret = tmp_path / "secret.py"
    secret.write_text(CUDA_CODE)
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = cli.invoke(app, ["migrate", str(tmp_path), "--apply", "-j", "1", "--no-cache"])
    assert result.exit_code == 2
    assert "secret.py" in result.stderr and "cannot read: Permission denied" in result.stderr
    assert MIGRATED_MARK in (tmp_path / "train.py").read_text()
    assert secret.read_text() == CUDA_CODE


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_file_is_reported_and_untouched(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA_CODE)
    secret = tmp_path / "secret.py"
    secret.write_text(CUDA_CODE)
    secret.chmod(0)
    try:
        result = cli.invoke(app, ["migrate", str(tmp_path), "--apply"])
        assert result.exit_code == 2
        assert "secret.py" in result.stderr and "cannot read" in result.stderr
        assert MIGRATED_MARK in (tmp_path / "train.py").read_text()
    finally:
        secret.chmod(0o644)
    assert secret.read_text() == CUDA_CODE


def test_symlink_out_of_the_tree_is_reported_and_its_target_untouched(cli: CliRunner, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text(CUDA_CODE)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "train.py").write_text(CUDA_CODE)
    (tree / "link.py").symlink_to(outside / "victim.py")
    (tree / "dangling.py").symlink_to(tree / "gone.py")
    result = cli.invoke(app, ["migrate", str(tree), "--apply"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "link.py" in result.stderr and "outside the tree" in result.stderr
    assert "dangling.py" in result.stderr and "broken symlink" in result.stderr
    assert (outside / "victim.py").read_text() == CUDA_CODE
    assert (tree / "link.py").is_symlink()
    assert MIGRATED_MARK in (tree / "train.py").read_text()


def test_symlink_inside_the_tree_is_migrated_once_through_its_target(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(CUDA_CODE)
    (tmp_path / "alias.py").symlink_to("real.py")
    result = cli.invoke(app, ["migrate", str(tmp_path), "--check"])
    assert "1 file(s) would change" in result.stderr and "alias.py" not in result.stdout
    assert cli.invoke(app, ["migrate", str(tmp_path), "--apply"]).exit_code == 0
    assert (tmp_path / "alias.py").is_symlink() and os.readlink(tmp_path / "alias.py") == "real.py"
    assert MIGRATED_MARK in (tmp_path / "real.py").read_text()


def test_explicitly_named_symlink_is_written_through_and_stays_a_link(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(CUDA_CODE)
    (tmp_path / "alias.py").symlink_to("real.py")
    assert cli.invoke(app, ["migrate", str(tmp_path / "alias.py"), "--apply"]).exit_code == 0
    assert (tmp_path / "alias.py").is_symlink()
    assert MIGRATED_MARK in (tmp_path / "real.py").read_text()


def test_nothing_is_written_outside_the_roots_given(tmp_path: Path) -> None:
    tree, elsewhere = tmp_path / "tree", tmp_path / "elsewhere"
    tree.mkdir()
    elsewhere.mkdir()
    (elsewhere / "m.py").write_text(CUDA_CODE)
    result = migrate_file(elsewhere / "m.py")
    assert result.changed
    written: list[object] = []
    write_in_place([tree], [result], written)  # type: ignore[list-item]
    assert written == [] and result.error is not None and "outside" in result.error
    assert (elsewhere / "m.py").read_text() == CUDA_CODE


def test_rewrite_that_does_not_parse_is_an_internal_error_and_the_file_is_untouched(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = engine.migrate_code

    def broken(source: str, settings: Settings, **kwargs: object) -> object:
        migration = real(source, settings, **kwargs)
        if "BREAK" in source:
            migration.code += "\ndef broken(:\n"
        return migration

    monkeypatch.setattr(engine, "migrate_code", broken)  # workers are forked, so they see it too
    (tmp_path / "bad.py").write_text(CUDA_CODE + "# BREAK\n")
    (tmp_path / "good.py").write_text(CUDA_CODE)
    assert "internal error: the rewrite does not parse" in (migrate_file(tmp_path / "bad.py").error or "")
    result = cli.invoke(app, ["migrate", str(tmp_path), "--apply", "--no-cache"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "bad.py" in result.stderr and "internal error: the rewrite does not parse" in result.stderr
    assert (tmp_path / "bad.py").read_text() == CUDA_CODE + "# BREAK\n"
    assert MIGRATED_MARK in (tmp_path / "good.py").read_text()


@pytest.mark.parametrize(("appended", "refused"), [
    ("\nprint(sep='', sep=' ')\n", True),  # parses; the compiler refuses a keyword given twice
    ("\nawait print()\n", False),  # a notebook cell's top-level await: allowed
])
def test_rewrite_the_compiler_refuses_is_an_internal_error_unless_the_input_is_refused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, appended: str, refused: bool
) -> None:
    real = engine.migrate_code

    def broken(source: str, settings: Settings, **kwargs: object) -> object:
        migration = real(source, settings, **kwargs)
        migration.code += appended
        return migration

    monkeypatch.setattr(engine, "migrate_code", broken)
    (tmp_path / "m.py").write_text(CUDA_CODE)
    (tmp_path / "already.py").write_text(CUDA_CODE + "\nreturn\n")  # the input fails to compile already
    error = migrate_file(tmp_path / "m.py").error or ""
    assert ("keyword argument repeated" in error) is refused and (not error) is not refused
    assert migrate_file(tmp_path / "already.py").error is None


def test_nesting_that_would_crash_libcst_is_refused_before_parsing(cli: CliRunner, tmp_path: Path) -> None:
    # LibCST's native parser overflows the C stack on this (a segfault); CPython rejects it cleanly.
    deep = "x = " + "(" * 100_000 + "torch.cuda.synchronize()" + ")" * 100_000 + "\n"
    (tmp_path / "deep.py").write_text(deep)
    (tmp_path / "chain.py").write_text("x = torch.cuda" + ".a" * 20_000 + "\n")
    (tmp_path / "good.py").write_text(CUDA_CODE)
    result = cli.invoke(app, ["migrate", str(tmp_path), "--apply", "-j", "1"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "deep.py:1:" in result.stderr and "too many nested parentheses" in result.stderr
    assert "chain.py:1:1: error: nested too deeply" in result.stderr
    assert "worker process died" not in result.stderr  # refused, not crashed
    assert (tmp_path / "deep.py").read_text() == deep
    assert MIGRATED_MARK in (tmp_path / "good.py").read_text()


def test_a_worker_that_dies_costs_only_its_own_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = engine.migrate_code

    def crashing(source: str, settings: Settings, **kwargs: object) -> object:
        if "CRASH" in source:
            os._exit(70)  # as a segfault in native code would end the worker
        return real(source, settings, **kwargs)

    monkeypatch.setattr(engine, "migrate_code", crashing)
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(CUDA_CODE + f"y = {i}\n")
    (tmp_path / "m3.py").write_text(CUDA_CODE + "# CRASH\n")
    results = runner.run(list(discover([tmp_path])), jobs=2)
    by_name = {r.path.name: r for r in results}
    assert "worker process died" in (by_name["m3.py"].error or "")
    for name, result in by_name.items():
        if name != "m3.py":
            assert result.error is None and result.changed, name


# ---- the dirty-tree guard ---------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo), *args],
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "train.py").write_text(CUDA_CODE)
    (repo / "eval.py").write_text(CUDA_CODE)
    (repo / "notes.py").write_text("x = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    return repo


def test_clean_work_tree_is_migrated_and_the_cache_stays_out_of_git(cli: CliRunner, git_repo: Path) -> None:
    result = cli.invoke(app, ["migrate", str(git_repo), "--apply"])
    assert result.exit_code == 0, result.stderr
    assert (git_repo / cache_module.FOLDER_NAME).is_dir()
    status = _git(git_repo, "status", "--porcelain", "--untracked-files=all")
    assert sorted(status.splitlines()) == [" M eval.py", " M train.py"]


@pytest.mark.parametrize("change", ["modified", "staged", "untracked"])
def test_apply_refuses_when_a_file_to_rewrite_has_uncommitted_changes(
    cli: CliRunner, git_repo: Path, change: str
) -> None:
    dirty = git_repo / ("new.py" if change == "untracked" else "train.py")
    dirty.write_text(CUDA_CODE + "y = 1\n")
    if change == "staged":
        _git(git_repo, "add", "train.py")
    before = _snapshot(git_repo)
    result = cli.invoke(app, ["migrate", str(git_repo), "--apply"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "uncommitted changes" in result.stderr and dirty.name in result.stderr
    assert "eval.py" not in result.stderr.split("uncommitted changes")[1]  # clean files are not named
    assert "--allow-dirty" in result.stderr
    assert _snapshot(git_repo) == before, "nothing may be written, not even the clean files"
    allowed = cli.invoke(app, ["migrate", str(git_repo), "--apply", "--allow-dirty"])
    assert allowed.exit_code == 0, allowed.stderr
    assert MIGRATED_MARK in dirty.read_text() and MIGRATED_MARK in (git_repo / "eval.py").read_text()


def test_dirty_files_that_would_not_change_do_not_block(cli: CliRunner, git_repo: Path) -> None:
    (git_repo / "notes.py").write_text("x = 2\n")  # dirty, but torchport would not touch it
    (git_repo / "scratch.txt").write_text("untracked, not Python\n")
    result = cli.invoke(app, ["migrate", str(git_repo), "--apply"])
    assert result.exit_code == 0, result.stderr
    assert MIGRATED_MARK in (git_repo / "train.py").read_text()


def test_dry_run_and_check_ignore_the_dirty_tree(cli: CliRunner, git_repo: Path) -> None:
    (git_repo / "train.py").write_text(CUDA_CODE + "y = 1\n")
    assert cli.invoke(app, ["migrate", str(git_repo)]).exit_code == 0
    assert cli.invoke(app, ["migrate", str(git_repo), "--check"]).exit_code == 1


# ---- --output-dir ---------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "pkg" / "data").mkdir(parents=True)
    (root / "pkg" / "train.py").write_text(CUDA_CODE)
    (root / "pkg" / "clean.py").write_text("import torch\n")
    (root / "pkg" / "data" / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (root / "README.md").write_text("# demo\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "gen.py").write_text(CUDA_CODE)  # ignored: copied as it is
    (root / ".hidden").mkdir()
    (root / ".hidden" / "conf.py").write_text(CUDA_CODE)
    (root / "link.md").symlink_to("README.md")
    (root / "broken.py").write_text("x = torch.zeros(2).cuda(\n")
    return root


def test_output_dir_writes_a_migrated_copy_and_leaves_the_source_untouched(
    cli: CliRunner, tree: Path, tmp_path: Path
) -> None:
    before = _snapshot(tree)
    out = tmp_path / "out"
    result = cli.invoke(app, ["migrate", str(tree), "--output-dir", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.stderr  # broken.py fails, and is copied as it is
    assert "broken.py" in result.stderr
    assert _snapshot(tree) == before
    assert not (tree / cache_module.FOLDER_NAME).exists(), "no cache is written into the source"
    copy = _snapshot(out)
    assert set(copy) == set(before)
    assert MIGRATED_MARK in copy["pkg/train.py"].decode()
    for rel in before:
        if rel != "pkg/train.py":
            assert copy[rel] == before[rel], rel
    assert (out / "link.md").is_symlink()
    assert stat.S_IMODE((out / "run.sh").stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".torchport-tmp")] == []


def test_output_dir_must_be_new_or_empty_and_outside_the_source(cli: CliRunner, tree: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("")
    for out in (taken, tree / "inside", tmp_path):
        result = cli.invoke(app, ["migrate", str(tree), "--output-dir", str(out)])
        assert result.exit_code == 2 and "--output-dir" in result.stderr, out
    assert not (tree / "inside").exists()
    assert cli.invoke(app, ["migrate", str(tree), "--output-dir", str(taken), "--check"]).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.invoke(app, ["migrate", str(tree), "--output-dir", str(empty)]).exit_code == 2  # broken.py
    assert MIGRATED_MARK in (empty / "pkg" / "train.py").read_text()


# ---- the cache ------------------------------------------------------------------------------


def _run_cached(root: Path, folder: Path, settings: Settings = Settings()) -> tuple[list, cache_module.Cache]:
    cache = cache_module.Cache.open(folder)
    assert cache is not None
    return runner.run(list(discover([root])), settings, jobs=2, cache=cache), cache


def _same(a: engine.FileResult, b: engine.FileResult) -> bool:
    return (a.migrated, a.error, a.rewrites, a.diagnostics, a.sites) == (b.migrated, b.error, b.rewrites,
                                                                          b.diagnostics, b.sites)


def test_second_run_reads_every_result_from_the_cache_and_gets_the_same_results(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for i in range(5):
        (root / f"m{i}.py").write_text(CUDA_CODE + f"torch.cuda.nvtx.mark('{i}')\n")
    (root / "plain.py").write_text("x = 1\n")  # not parsed at all, but cached: a warm run then loads no rule
    (root / "bad.py").write_text("x = torch.zeros(2).cuda(\n")  # a parse error is cached too
    folder = tmp_path / "cache"
    cold, cache = _run_cached(root, folder)
    assert (cache.hits, cache.misses) == (0, 7)
    warm, cache = _run_cached(root, folder)
    assert (cache.hits, cache.misses) == (7, 0)
    assert all(_same(a, b) for a, b in zip(cold, warm))
    assert [r.display for r in cold] == [r.display for r in warm]
    (root / "m2.py").write_text(CUDA_CODE)  # content changed: only that file is parsed again
    _, cache = _run_cached(root, folder)
    assert (cache.hits, cache.misses) == (6, 1)
    _, cache = _run_cached(root, folder, Settings(unsafe_fixes=True))  # other settings: other keys
    assert cache.hits == 0


def test_cache_key_covers_content_settings_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    base = cache_module.key(b"x.cuda()", Settings())
    assert base == cache_module.key(b"x.cuda()", Settings())
    assert base != cache_module.key(b"x.cuda() ", Settings())
    assert base != cache_module.key(b"x.cuda()", Settings(ignore=("TP001",)))
    assert base != cache_module.key(b"x.cuda()", Settings(targets=("mps",)))
    assert base == cache_module.key(b"x.cuda()", Settings(root="/elsewhere"))  # not part of the value
    monkeypatch.setattr(cache_module, "__version__", "99.0")
    cache_module.fingerprint.cache_clear()
    try:
        assert base != cache_module.key(b"x.cuda()", Settings())
    finally:
        monkeypatch.undo()
        cache_module.fingerprint.cache_clear()
    # the same in another process (no per-process hash randomisation in the key)
    code = ("from torchport.pipeline import cache; from torchport.config import Settings; "
            "print(cache.key(b'x.cuda()', Settings()))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "123"})
    assert other.stdout.strip() == base


def test_corrupt_cache_entries_are_misses(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "m.py").write_text(CUDA_CODE)
    folder = tmp_path / "cache"
    cold, _ = _run_cached(root, folder)
    for entry in (folder / cache_module.__version__).iterdir():
        entry.write_text('{"migrated": 3')
    warm, cache = _run_cached(root, folder)
    assert (cache.hits, cache.misses) == (0, 1)
    assert _same(cold[0], warm[0])


def test_cache_folder_env_var_and_no_cache(cli: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "m.py").write_text(CUDA_CODE)
    assert cli.invoke(app, ["migrate", str(root), "--no-cache"]).exit_code == 0
    assert not (root / cache_module.FOLDER_NAME).exists()
    elsewhere = tmp_path / "cache-here"
    assert cli.invoke(app, ["migrate", str(root)], env={cache_module.ENV_VAR: str(elsewhere)}).exit_code == 0
    assert not (root / cache_module.FOLDER_NAME).exists()
    # the file; the run's decisions (directives, programs, fakes, amp, follow, unreached); the programs summary
    assert len(list((elsewhere / cache_module.__version__).iterdir())) == 8
    assert (elsewhere / ".gitignore").read_text().splitlines()[-1] == "*"
    cold = cli.invoke(app, ["migrate", str(root)])
    warm = cli.invoke(app, ["migrate", str(root)])
    assert cold.stdout == warm.stdout and "+x = torch.zeros(2).to(tp.device())" in warm.stdout
    assert (root / cache_module.FOLDER_NAME / "CACHEDIR.TAG").is_file()


# ---- interruption by a real signal ---------------------------------------------------------

# Runs the CLI with the first os.replace as usual and every later one held until the test's signal
# arrives, so that the signal lands while files are written however loaded the machine is.
_SLOW_CLI = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell may start us with SIGINT ignored
from torchport.pipeline import writes
real = writes.write_atomic
calls = []
def slow(*args, **kwargs):
    calls.append(1)
    if len(calls) > 1:
        time.sleep(30)  # the test signals once the first file is written: it lands here, mid-run
    return real(*args, **kwargs)
writes.write_atomic = slow
from torchport.cli import main
sys.argv = ["torchport", "migrate", sys.argv[1], "--apply", "--no-cache", "-j", "2"]
main()
"""


@pytest.fixture(scope="module")
def signal_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The 4 files the signal tests migrate: ``(old, new)`` bytes by file name, ported once for all of them. The first
    is written, the second held in its write until the signal: enough for old and new files side by side."""
    root = tmp_path_factory.mktemp("signal") / "src"
    root.mkdir()
    old: dict[str, bytes] = {}
    for i in range(4):
        path = root / f"m{i:02d}.py"
        path.write_text(f"import torch\n\nx{i} = torch.zeros({i}).cuda()\ntorch.cuda.synchronize()\n" + "# pad\n" * i)
        old[path.name] = path.read_bytes()
    new = {r.path.name: (r.migrated or "").encode() for r in runner.run(list(discover([root])), jobs=2)}
    assert all(new[name] != old[name] for name in old)
    return old, new


# SIGKILL in the default run (nothing can clean up after it); SIGINT and SIGTERM by hand (-m slow), as the handlers
# they reach are the ones test_ctrl_c_while_migrating_stops_the_workers_at_once_and_writes_nothing runs
@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, marks=pytest.mark.slow),
                                    pytest.param(signal.SIGTERM, marks=pytest.mark.slow), signal.SIGKILL])
def test_signal_during_apply_leaves_every_file_wholly_old_or_wholly_new(
        tmp_path: Path, signum: int, signal_tree: tuple[dict[str, bytes], dict[str, bytes]]) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for name, text in signal_tree[0].items():
        (root / name).write_bytes(text)
    old = {root / name: text for name, text in signal_tree[0].items()}
    new = {root / name: text for name, text in signal_tree[1].items()}
    first = root / "m00.py"  # written first: the files are written in the order found
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_CLI, str(root)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    while first.read_bytes() == old[first]:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the run never started writing"
        time.sleep(0.002)
    proc.send_signal(signum)
    stderr = proc.communicate(timeout=60)[1].decode()
    if signum == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + signum, stderr
        assert "interrupted" in stderr
    states = {p: "old" if p.read_bytes() == old[p] else "new" if p.read_bytes() == new[p] else "torn" for p in old}
    assert "torn" not in states.values()
    assert {"old", "new"} <= set(states.values()), "the signal must land mid-run"
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(TEMP_SUFFIX)]
    if signum == signal.SIGKILL:
        assert len(leftovers) <= 1  # a kill cannot be caught: at most the one temporary file in flight
    else:
        assert leftovers == []
    assert sorted(p for p in root.iterdir() if p.suffix == ".py") == sorted(old)


def test_interrupted_output_dir_leaves_no_partial_copy(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for i in range(4):  # the second copy is held until the signal
        (root / f"m{i:02d}.py").write_text(CUDA_CODE + f"y = {i}\n")
    out = tmp_path / "out"
    script = _SLOW_CLI.replace("from torchport.pipeline import writes\nreal = writes.write_atomic",
                               "import shutil\nreal = shutil.copymode").replace(
        "writes.write_atomic = slow", "shutil.copymode = slow").replace('"--apply", ',
                                                                        f'"--output-dir", {str(out)!r}, ')
    proc = subprocess.Popen([sys.executable, "-c", script, str(root)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not any(p.name.endswith(".torchport-tmp") for p in tmp_path.iterdir()):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.002)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    stderr = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["src"]
    assert all(read_file(p)[0].original == CUDA_CODE + f"y = {int(p.stem[1:])}\n" for p in root.glob("*.py"))


def test_dry_run_and_check_write_nothing_but_the_cache(cli: CliRunner, tree: Path) -> None:
    digest = hashlib.sha256(repr(sorted(_snapshot(tree).items())).encode()).hexdigest()
    assert "+++ b/" in cli.invoke(app, ["migrate", str(tree)]).stdout
    assert cli.invoke(app, ["migrate", str(tree), "--check", "--diff"]).exit_code == 2  # broken.py
    assert hashlib.sha256(repr(sorted(_snapshot(tree).items())).encode()).hexdigest() == digest


_SLOW_MIGRATION = """
import os, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)
import torchport.pipeline.engine as engine
real = engine.migrate_code
marker = Path(sys.argv[2])
def slow(source, settings, **kwargs):
    marker.touch()
    time.sleep(2)
    return real(source, settings, **kwargs)
engine.migrate_code = slow  # the workers are forked: they run this
from torchport.cli import main
sys.argv = ["torchport", "migrate", sys.argv[1], "--apply", "--no-cache", "-j", "2"]
main()
"""


def test_ctrl_c_while_migrating_stops_the_workers_at_once_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for i in range(8):
        (root / f"m{i}.py").write_text(CUDA_CODE + f"y = {i}\n")
    before = _snapshot(root)
    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_MIGRATION, str(root), str(started)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stderr = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "nothing was written" in stderr
    assert time.monotonic() - sent < 6, "the workers are stopped, not waited for (8 files x 2 s on 2 workers: 8 s)"
    assert _snapshot(root) == before
    assert "Traceback" not in stderr


_SIGNAL_IN_WRITE = """
import os, signal, sys
from pathlib import Path
from torchport.pipeline import writes
signal.signal(signal.SIGINT, signal.default_int_handler)
real = os.replace
def replace(a, b):
    os.kill(os.getpid(), signal.SIGINT)  # lands while the temporary file exists
    return real(a, b)
os.replace = replace
try:
    writes.write_atomic(Path(sys.argv[1]), "new\\n", "utf-8")
except KeyboardInterrupt:
    print("interrupted after the write")
"""


def test_a_signal_during_one_write_is_delivered_once_the_file_is_written(tmp_path: Path) -> None:
    target = tmp_path / "f.py"
    target.write_text("old\n")
    done = subprocess.run([sys.executable, "-c", _SIGNAL_IN_WRITE, str(target)], capture_output=True, text=True)
    assert done.stdout.strip() == "interrupted after the write", done.stderr
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.py"]  # no temporary file left behind


def test_the_programs_lines_of_a_warm_migrate_follow_the_rules_code(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines saying where each changed program runs are cached with the files' text: a new rule (another
    fingerprint of torchport's code) computes them anew, as it computes each file's result anew."""
    (tmp_path / "train.py").write_text(CUDA_CODE)
    monkeypatch.setenv(cache_module.ENV_VAR, str(tmp_path / "cache"))

    def lines() -> list[str]:
        done = CliRunner().invoke(app, ["migrate", str(tmp_path)])
        assert done.exit_code == 0, done.output
        return [line for line in done.stderr.splitlines() if line.startswith("  train.py")]

    cold = lines()
    assert cold and "runs on" in cold[0]
    stale = "  train.py (script): what an older torchport said"
    for entry in (tmp_path / "cache").rglob("*.json"):
        if '"lines"' in entry.read_text():
            entry.write_text(json.dumps({"decisions": {"lines": json.dumps(["programs changed: 1", stale])}}))
    assert lines() == [stale]  # a warm run reads them
    monkeypatch.setattr(cache_module, "fingerprint", lambda: "another torchport")
    assert lines() == cold


def test_valid_code_libcst_cannot_parse_is_reported_and_left_untouched(tmp_path: Path) -> None:
    # wanda's image_classifiers/main.py: `assert(a if b else c)` is Python, but LibCST's parser refuses it
    source = ('import torch\n\n\ndef main(args):\n    assert(args.p == 0 if args.m else True)\n'
              '    torch.ones(2).cuda()\n')
    (tmp_path / "main.py").write_text(source)
    result = migrate_file(tmp_path / "main.py")
    assert result.migrated is None and "LibCST cannot parse this file" in (result.error or "")
    assert (tmp_path / "main.py").read_text() == source
