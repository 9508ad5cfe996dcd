"""Writing results: in place (atomically, never outside the folders given) or as a migrated copy of
the whole tree (`--output-dir`)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from torchport.errors import UsageError
from torchport.pipeline import cache as cache_module
from torchport.pipeline.notebooks import NotebookResult, render
from torchport.results import FileResult


def output_text(result: FileResult) -> str:
    """The text to write for a changed file: its migrated source, or a notebook's whole new JSON.

    Raises:
        ValueError: for a notebook whose migrated cells cannot be put back (see `notebooks.render`).
    """
    return render(result) if isinstance(result, NotebookResult) else result.migrated or ""


def read_only(path: Path) -> bool:
    """Whether ``path`` is marked read-only: no write permission for us, or (for root) no write bit at all."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == root or real.is_relative_to(root) for root in roots)


def write_in_place(paths: Sequence[Path], changed: Sequence[FileResult], written: list[FileResult],
                   also: Sequence[Path] = ()) -> None:
    """Write each changed file atomically; never outside the paths given (but for the files ``also``
    names: the vendored runtime the migrated files import), never over a read-only file.

    Appends to ``written`` as it goes; a file not written gets an ``error`` (so it counts as failed).
    """
    roots = [Path(os.path.realpath(p)) for p in paths]
    for result in changed:
        if result.path not in also and not _inside(result.path, roots):
            result.error = "not written: it resolves to a path outside the folders given"
            continue
        if read_only(result.path):
            result.error = "not written: the file is read-only"
            continue
        try:
            write_atomic(result.path, output_text(result), result.encoding)
        except (OSError, ValueError) as exc:
            result.error = f"cannot write: {exc}"
            continue
        written.append(result)


def check_output_dir(paths: Sequence[Path], output_dir: Path) -> None:
    """Check `--output-dir` before anything is migrated.

    Raises:
        UsageError: unless ``paths`` is one folder and ``output_dir`` is new or empty and neither
            inside it nor containing it.
    """
    if len(paths) != 1 or not paths[0].is_dir():
        raise UsageError("--output-dir needs exactly one folder to migrate")
    source, target = Path(os.path.realpath(paths[0])), Path(os.path.realpath(output_dir))
    if target == source or target.is_relative_to(source) or source.is_relative_to(target):
        raise UsageError(f"--output-dir {output_dir} must be outside {paths[0]} (and not contain it)")
    if output_dir.is_symlink() or (output_dir.exists() and (not output_dir.is_dir() or any(output_dir.iterdir()))):
        raise UsageError(f"--output-dir {output_dir} exists and is not an empty folder")


# Never copied into a migrated copy: version-control data and torchport's own cache.
_NOT_COPIED = frozenset({".git", ".hg", ".svn", cache_module.FOLDER_NAME})


def write_tree(source: Path, output_dir: Path, results: Sequence[FileResult]) -> list[str]:
    """Copy the whole of ``source`` to ``output_dir`` with each changed file migrated.

    Every file is copied (Python or not, ignored or not); links stay links, and anything that is
    not a regular file, link or folder (a FIFO, a socket) is left out. The copy is built in a
    temporary folder beside ``output_dir`` and renamed into place, so that ``output_dir`` is
    either the whole copy or absent, even if the run is interrupted.

    Returns the files that could not be copied (unreadable), one message each.

    Raises:
        OSError: when the copy cannot be written (e.g. a full disk); nothing is left behind.
    """
    problems: list[str] = []
    migrated = {os.path.relpath(r.path, source): r for r in results if r.changed}
    output_dir = output_dir.absolute()
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=output_dir.parent, prefix=f".{output_dir.name}.", suffix=".torchport-tmp"))
    folders: list[tuple[Path, Path]] = [(source, staging)]
    try:
        for folder, dirs, files in os.walk(source):
            here = Path(folder)
            rel_here = os.path.relpath(here, source)
            into = staging if rel_here == "." else staging / rel_here
            for name in list(dirs):
                if name in _NOT_COPIED:
                    dirs.remove(name)
                elif (here / name).is_symlink():  # not followed: recreated as a link
                    os.symlink(os.readlink(here / name), into / name)
                    dirs.remove(name)
                else:
                    (into / name).mkdir()
                    folders.append((here / name, into / name))
            for name in files:
                src, dst = here / name, into / name
                rel = os.path.normpath(os.path.join(rel_here, name))
                if src.is_symlink():
                    os.symlink(os.readlink(src), dst)
                elif rel in migrated:
                    result = migrated[rel]
                    dst.write_bytes(output_text(result).encode(result.encoding))
                    shutil.copymode(src, dst)  # new content, new time: build tools must see the change
                elif src.is_file():
                    try:
                        shutil.copy2(src, dst)
                    except PermissionError as exc:  # an unreadable file: the rest of the copy goes on
                        problems.append(f"{os.path.join(source, rel)}: cannot copy: {exc.strerror or exc}")
        for rel, result in migrated.items():  # new files (the vendored runtime)
            if not (source / rel).exists() and not rel.startswith(".."):
                (staging / rel).write_bytes((result.migrated or "").encode(result.encoding))
        for src_folder, copy in reversed(folders):  # modes and times, once their files are in
            shutil.copystat(src_folder, copy)
        if output_dir.is_dir():
            output_dir.rmdir()  # empty, as checked before the run
        os.rename(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return problems


# Suffix of the temporary file `write_atomic` writes next to the file it replaces.
TEMP_SUFFIX = ".torchport-tmp"


def write_atomic(path: Path, text: str, encoding: str) -> None:
    """Replace ``path`` with ``text`` so that it is always either wholly old or wholly new.

    Writes a temporary file in the same folder, keeps the original file mode (and owner, where it
    may), then ``os.replace``-s it over the original. A symlink is written through: its target
    changes and the link stays.

    Raises:
        OSError: when the folder is not writable or the disk is full; the original is untouched.
        UnicodeEncodeError: when ``text`` cannot be encoded in ``encoding``.
    """
    data = text.encode(encoding)
    path = Path(os.path.realpath(path))  # through a symlink to its file: the link stays a link
    info = path.stat() if path.exists() else None  # None: a new file (the vendored runtime)
    # Ctrl-C and SIGTERM wait until the file is written: one landing between creating the temporary
    # file and the `try` below would leave it behind. They are delivered when the mask is restored.
    blocked = {signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM)}
    if not (hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()):
        _replace(path, data, info)
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        _replace(path, data, info)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _replace(path: Path, data: bytes, info: os.stat_result | None) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if info is None:  # the mode a new file gets
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        else:
            os.chmod(tmp, info.st_mode & 0o7777)
        if info is not None and hasattr(os, "chown") and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            try:  # keep the owner when root migrates someone else's tree
                os.chown(tmp, info.st_uid, info.st_gid)
            except OSError:
                pass
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
