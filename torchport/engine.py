"""Migrate one file: read it faithfully, run the codemods, check the output, write it atomically.

`migrate_file` never raises: every problem with one file becomes a `FileResult` with an error,
and the file is left untouched.
"""

from __future__ import annotations

import ast
import io
import os
import signal
import tempfile
import threading
import tokenize
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchport.config import DEFAULT, Settings
from torchport.style import restyle

if TYPE_CHECKING:  # LibCST and the rules load only when a file is parsed (a warm-cache run needs neither)
    import libcst as cst

    from torchport.codemods import Migration
    from torchport.diagnostic import Diagnostic

# Suffix of the temporary file `write_atomic` writes next to the file it replaces.
TEMP_SUFFIX = ".torchport-tmp"

@dataclass
class FileResult:
    """What migrating one file gave.

    Args:
        path: the file on disk.
        display: the path as shown to the user (relative to where the run started).
        original: the decoded source, or None if it could not be read.
        migrated: the new source (equal to ``original`` when nothing changed), or None on error.
        encoding: the codec the file was read with (``utf-8-sig`` keeps a BOM).
        rewrites: rewrite counts per rule code.
        diagnostics: sites left unchanged, with their rule codes.
        sites: one entry per rewrite made (code, line, column, rule summary), for reports.
        error: why the file could not be migrated, as ``line:col: reason`` where a line is known.
        facts: where the module chooses a device from CUDA's availability (`Migration.facts`).
        hold: why the project-level pass kept this module's device choices CUDA-or-CPU, or None.
    """

    path: Path
    display: str
    original: str | None = None
    migrated: str | None = None
    encoding: str = "utf-8"
    rewrites: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sites: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    facts: dict[str, list[int]] = field(default_factory=dict)
    hold: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.migrated is not None and self.migrated != self.original


def read_source(data: bytes) -> tuple[str, str]:
    """Decode Python source bytes the way the interpreter would.

    Returns ``(text, encoding)``; a UTF-8 BOM gives the encoding ``utf-8-sig`` so that writing
    the text back with it keeps the BOM. Line endings are kept as they are.

    Raises:
        SyntaxError: for an unknown or inconsistent PEP 263 coding cookie.
        UnicodeDecodeError: when the bytes are not valid in the declared encoding.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def _syntax_error(text: str, error: cst.ParserSyntaxError) -> str:
    # CPython's own message is the one users know; LibCST's is the fallback for syntax
    # CPython accepts but LibCST does not.
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"{exc.lineno}:{(exc.offset or 1) - 1}: syntax error: {exc.msg}"
    return f"{error.raw_line}:{error.raw_column}: LibCST cannot parse this file: {error.message}"


def read_file(path: Path, display: str | None = None) -> tuple[FileResult, bytes | None]:
    """Read and decode one file; nothing is parsed.

    Returns the result (``original`` and ``migrated`` both the decoded text, or an error) and the raw
    bytes (None when the file could not be read or decoded).
    """
    result = FileResult(path=path, display=display or str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        result.error = f"cannot read: {exc.strerror or exc}"
        return result, None
    try:
        text, result.encoding = read_source(data)
    except (SyntaxError, UnicodeDecodeError) as exc:
        result.error = f"cannot decode: {exc}"
        return result, None
    result.original = result.migrated = text
    return result, data


def needs_parse(data: bytes) -> bool:
    """Whether any rule could match ``data``; a file that fails this is not parsed at all."""
    from torchport.codemods import PREFILTER

    return PREFILTER.search(data) is not None


# CPython's own limits; LibCST's native parser has none and overflows the C stack (a segfault) on such input.
_TOO_DEEP = ("too many nested", "too many statically nested", "too complex")


def _compile(code: str, path: Path) -> ast.Module:
    """CPython's parse of ``code``, without the SyntaxWarnings it would print about the user's code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = compile(code, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    assert isinstance(tree, ast.Module)  # "exec" mode
    return tree


def _precheck(text: str, path: Path) -> tuple[ast.Module | None, str | None]:
    """Parse ``text`` with CPython first: ``(tree, error)``; ``tree`` is None where CPython cannot parse it.

    ``error`` is set when the file must not reach LibCST at all: nesting so deep that LibCST's
    native parser would crash the process. A plain syntax error is left for LibCST to confirm,
    since LibCST knows syntax newer than the running interpreter.
    """
    try:
        return _compile(text, path), None
    except SyntaxError as exc:
        if any(marker in (exc.msg or "") for marker in _TOO_DEEP):
            return None, f"{exc.lineno}:{(exc.offset or 1) - 1}: syntax error: {exc.msg}"
        return None, None
    except (RecursionError, MemoryError):
        return None, "1:0: nested too deeply for Python's parser; not parsed"
    except ValueError as exc:  # e.g. NUL bytes in the source
        return None, f"1:0: syntax error: {exc}"


def _parses(code: str, path: Path, cpython: bool) -> str | None:
    """Why ``code`` does not parse (None when it does), with the parser the input was checked with."""
    if cpython:
        try:
            _compile(code, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None)
            return f"{getattr(exc, 'msg', None) or exc}" + (f" at line {line}" if line else "")
        return None
    import libcst as cst

    try:
        cst.parse_module(code)
    except cst.ParserSyntaxError as exc:
        return f"{exc.message} at line {exc.raw_line}"
    return None


def migrate_code(source: str, settings: Settings = DEFAULT, syntax: ast.Module | None = None,
                 hold: str | None = None) -> Migration:
    """`torchport.codemods.migrate_code`, loading the rules (and LibCST) on first use."""
    from torchport.codemods import migrate_code as run

    return run(source, settings, syntax=syntax, hold=hold)


def migrate_source(result: FileResult, settings: Settings = DEFAULT, hold: str | None = None) -> FileResult:
    """Run the rules over ``result.original`` (as read by `read_file`), filling in the rest of ``result``.

    ``hold``: why the module's device choices stay CUDA-or-CPU (see `torchport.project`), or None.

    Never raises for a problem with the file: it becomes ``result.error`` and ``result.migrated``
    is None. The output is re-parsed; a rewrite that does not parse is an internal error.
    """
    text = result.original
    if text is None or result.error:
        return result
    import libcst as cst

    syntax, refused = _precheck(text, result.path)
    if refused:
        result.migrated, result.error = None, refused
        return result
    try:
        migration = migrate_code(text, settings.for_file(result.path), syntax=syntax, hold=hold)
    except cst.ParserSyntaxError as exc:
        result.migrated = None
        result.error = _syntax_error(text, exc)
        return result
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        result.migrated = None
        result.error = f"internal error while migrating: {type(exc).__name__}: {exc}"
        return result
    if migration.code != text:
        if not migration.exact:
            # LibCST does not regenerate every file byte for byte (e.g. a blank line before an
            # indented comment at the end of a module); a rewrite would silently change more.
            result.migrated = None
            result.error = ("LibCST does not reproduce this file exactly, so a rewrite could change "
                            "lines it does not touch; left unchanged (please report this file)")
            return result
        migration.code = restyle(text, migration.code, result.path)
        broken = _parses(migration.code, result.path, syntax is not None)
        if broken is not None:
            result.migrated = None
            result.error = f"internal error: the rewrite does not parse ({broken}); file left unchanged"
            return result
    result.migrated = migration.code
    result.rewrites = migration.rewrites
    result.diagnostics = migration.diagnostics
    result.sites = migration.sites
    result.facts, result.hold = migration.facts, hold
    return result


def migrate_file(path: Path, display: str | None = None, settings: Settings = DEFAULT) -> FileResult:
    """Migrate one file in memory; nothing is written.

    Args:
        path: a ``.py`` file.
        display: how to show the path; defaults to ``str(path)``.
        settings: which rules apply.
    """
    result, data = read_file(path, display)
    if data is None or not needs_parse(data):  # nothing any rule could match: not parsed at all
        return result
    return migrate_source(result, settings)


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
