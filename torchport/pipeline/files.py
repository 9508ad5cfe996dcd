"""Find the Python files to migrate: honour .gitignore, skip virtualenvs and build folders."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from torchport.emit.vendor import GENERATED, MODULE_NAME
from torchport.errors import TorchportError

# Folders that never hold the user's own code (`env/` may: haq's and many RL projects' environments; an `env`
# virtualenv has `pyvenv.cfg`, `_is_virtualenv`).
GENERATED_NAME = f"{MODULE_NAME}.py"
GENERATED_MARK = GENERATED.encode()
SKIP_DIRS = frozenset({
    "__pycache__", "build", "dist", "site-packages", "node_modules", "venv",
    "__pypackages__", "_build", "buck-out",
})


class PathError(TorchportError):
    """A path given on the command line does not exist, is a symlink loop, or cannot be read."""


def check_paths(paths: Iterable[Path]) -> None:
    """Refuse, before anything runs, a path given that is missing, a symlink loop, or unreadable.

    Raises:
        PathError: naming the first such path and why (the command line prints it as one ``error:`` line).
    """
    for given in paths:
        try:
            mode = os.stat(given).st_mode
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathError(f"{given}: a symlink loop (too many levels of symbolic links)") from None
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                raise PathError(f"{given}: no such file or folder") from None
            raise PathError(f"{given}: cannot read: {exc.strerror or exc}") from None
        wanted = os.R_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)
        if not os.access(given, wanted):
            raise PathError(f"{given}: cannot read: permission denied")


@dataclass(frozen=True)
class Found:
    """A file to migrate, or one that must be reported instead.

    Args:
        path: the file.
        display: the path relative to the directory the user named (or as given).
        problem: why the file is reported and not read (e.g. a symlink out of the tree), else None.
        named: the user named the file itself, not a folder holding it.
    """

    path: Path
    display: str
    problem: str | None = None
    named: bool = False


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _gitignore(folder: Path) -> pathspec.PathSpec | None:
    ignore = folder / ".gitignore"
    try:
        return _spec(ignore.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


def _generated(path: Path) -> bool:
    """Whether ``path`` is a copy of the runtime that torchport wrote (`torchport.emit.vendor`)."""
    try:
        with path.open("rb") as file:
            return file.read(len(GENERATED_MARK)) == GENERATED_MARK
    except OSError:
        return False


def _is_virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def discover(paths: Iterable[Path], exclude: Iterable[str] = (), rooted: tuple[str, Sequence[str]] = ("", ()),
             notebooks: bool = True) -> Iterator[Found]:
    """Yield the ``.py`` files (and ``.ipynb`` notebooks) under ``paths``, in a stable order.

    Args:
        paths: files or folders. A file named explicitly is always taken.
        exclude: gitignore-style patterns (the command line's), matched against paths relative to each
            folder given.
        rooted: ``(root, patterns)``: the config file's patterns, matched against paths relative to its
            folder, as its ``per-file-ignores`` are.
        notebooks: also yield Jupyter notebooks.

    In a folder, a symlinked file is not migrated through the link (its target is, where the walk
    meets it, so no file is written twice); one that points out of the folder, or nowhere, is
    reported, as is anything that is not a regular file (a FIFO would block the run).

    Raises:
        PathError: when a path does not exist.
    """
    excluded = _spec(exclude)
    root, patterns = rooted
    config = (os.path.abspath(root or os.curdir), _spec(patterns)) if patterns else None
    suffixes = (".py", ".ipynb") if notebooks else (".py",)
    for given in paths:
        if not given.exists():
            raise PathError(f"{given}: no such file or folder")
        if given.is_dir():
            yield from _walk(given, excluded, config, suffixes)
        else:
            yield Found(given, str(given), _not_regular(given), named=True)


def _not_regular(path: Path) -> str | None:
    """Why ``path`` (followed if a link) must not be read, or None for a regular file."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    # A FIFO would block the run forever; a device or socket is no source file either.
    return None if stat.S_ISREG(mode) else "not a regular file; not read"


def _loops(path: Path) -> bool:
    """Whether following the symlink ``path`` never ends (``ELOOP``: a loop, or too many links in a row)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _walk(root: Path, excluded: pathspec.PathSpec, config: tuple[str, pathspec.PathSpec] | None,
          suffixes: tuple[str, ...]) -> Iterator[Found]:
    real_root = root.resolve()
    from_config = ""  # the walked folder relative to the config's folder
    if config is not None:
        from_config = os.path.relpath(os.path.abspath(root), config[0]).replace(os.sep, "/") + "/"
        from_config = "" if from_config == "./" else from_config
    # (folder relative to root, its .gitignore rules)
    ignores: list[tuple[str, pathspec.PathSpec]] = []
    unreadable: list[OSError] = []
    for folder, dirs, files in os.walk(root, onerror=unreadable.append):
        while unreadable:  # a folder os.walk could not list: reported, not silently skipped
            exc = unreadable.pop()
            yield Found(Path(exc.filename), str(exc.filename), f"cannot read this folder: {exc.strerror or exc}")
        here = Path(folder)
        rel_here = here.relative_to(root).as_posix()
        rel_here = "" if rel_here == "." else rel_here + "/"
        spec = _gitignore(here)
        if spec is not None:
            ignores.append((rel_here, spec))

        def ignored(rel: str, is_dir: bool) -> bool:
            probe = rel + "/" if is_dir else rel
            if excluded.match_file(probe) or (config is not None and config[1].match_file(from_config + probe)):
                return True
            return any(rel.startswith(base) and spec.match_file(probe[len(base):]) for base, spec in ignores)

        dirs[:] = sorted(
            d for d in dirs
            if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info")
            and not _is_virtualenv(here / d) and not ignored(rel_here + d, True)
        )
        for name in sorted(files):
            if not name.endswith(suffixes) or ignored(rel_here + name, False):
                continue
            path = here / name
            if name == GENERATED_NAME and _generated(path):
                continue  # torchport's vendored runtime: its CUDA branches are the port, not CUDA-only code
            display = str(root / (rel_here + name))
            if path.is_symlink():
                try:
                    target: Path | None = path.resolve()
                except (OSError, RuntimeError):  # Python 3.11 and 3.12 raise RuntimeError on a loop
                    target = None
                if target is None or _loops(path):  # from 3.13 a loop resolves to a path that does not exist
                    yield Found(path, display, "cannot read: a symlink loop")
                    continue
                if not target.is_relative_to(real_root):
                    yield Found(path, display, "symlink points outside the tree; not followed")
                elif not target.exists():
                    yield Found(path, display, "cannot read: broken symlink")
                # else: a link within the tree is skipped; its target is migrated where the walk meets it
                continue
            yield Found(path, display, _not_regular(path))
    for exc in unreadable:  # the last folder listed may have failed too
        yield Found(Path(exc.filename), str(exc.filename), f"cannot read this folder: {exc.strerror or exc}")


_NAMING_FILES_AT_MOST = 20_000  # a bigger tree is no loose set of scripts: nothing is decided from its texts


def naming_files(paths: Sequence[Path], sources: bool = False) -> list[Path] | None:
    """The files under the common folder of the run's ``paths`` that are not in the run and whose words may name a
    module of it (code the run skipped, configs, shell scripts, docs: ``torch_facts`` ``naming_file``), hidden
    folders, caches (``CACHEDIR.TAG``: torchport's own) and virtual environments aside; None past
    `_NAMING_FILES_AT_MOST`. Sorted. ``sources``: C++ sources too (whether an extension builds without CUDA reads
    them: `analysis.requirements.cuda_extensions`)."""
    from torchport.model import torch_facts

    resolved = [p.resolve() for p in paths]
    if not resolved:
        return []
    run = set(resolved)
    naming, skipped = torch_facts.text("naming_file"), torch_facts.text("skipped_folder")
    cpp = tuple(torch_facts.words("cpp_source"))
    found: list[Path] = []
    for folder, dirs, files in os.walk(os.path.commonpath([p.parent for p in resolved])):
        dirs[:] = sorted(d for d in dirs if not skipped.match(d) and not any(  # a virtual environment, a cache
            os.path.exists(os.path.join(folder, d, marker)) for marker in ("pyvenv.cfg", "CACHEDIR.TAG")))
        for name in sorted(files):
            path = Path(folder, name)
            if (naming.search(name) or sources and name.endswith(cpp)) and path not in run:
                found.append(path)
                if len(found) > _NAMING_FILES_AT_MOST:
                    return None
    return found


def naming_files_key(paths: Sequence[Path]) -> str:
    """What decides whether `naming_files` (or the C++ sources beside them) changed: their paths, sizes and
    modification times, for the key of a decision that reads them (a config naming a module the run left
    unreached, a C++ source that includes CUDA's headers)."""
    found = naming_files(paths, sources=True)
    if found is None:
        return "many"
    parts = []
    for path in found:
        try:
            info = path.stat()
        except OSError:
            continue
        parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
    import hashlib

    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

