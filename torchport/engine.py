"""Migrate one file: read it faithfully, run the codemods, check the output, write it atomically.

`migrate_file` never raises: every problem with one file becomes a `FileResult` with an error,
and the file is left untouched.
"""

from __future__ import annotations

import ast
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from torchport.codemods import PREFILTER, Diagnostic, migrate_code
from torchport.config import DEFAULT, Settings



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


def migrate_file(path: Path, display: str | None = None, settings: Settings = DEFAULT) -> FileResult:
    """Migrate one file in memory; nothing is written.

    Args:
        path: a ``.py`` file.
        display: how to show the path; defaults to ``str(path)``.
        settings: which rules apply.
    """
    result = FileResult(path=path, display=display or str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        result.error = f"cannot read: {exc.strerror or exc}"
        return result
    try:
        text, result.encoding = read_source(data)
    except (SyntaxError, UnicodeDecodeError) as exc:
        result.error = f"cannot decode: {exc}"
        return result
    result.original = result.migrated = text
    if not PREFILTER.search(data):  # nothing any rule could match: not parsed at all
        return result
    try:
        migration = migrate_code(text, settings.for_file(path))
    except cst.ParserSyntaxError as exc:
        result.migrated = None
        result.error = _syntax_error(text, exc)
        return result
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        result.migrated = None
        result.error = f"internal error while migrating: {type(exc).__name__}: {exc}"
        return result
    if migration.code != text:
        try:
            compile(migration.code, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            result.migrated = None
            result.error = f"internal error: the rewrite does not parse ({exc.msg} at line {exc.lineno}); file left unchanged"
            return result
    result.migrated = migration.code
    result.rewrites = migration.rewrites
    result.diagnostics = migration.diagnostics
    result.sites = migration.sites
    return result


def write_atomic(path: Path, text: str, encoding: str) -> None:
    """Replace ``path`` with ``text`` so that it is always either wholly old or wholly new.

    Writes a temporary file in the same folder, keeps the original file mode, then
    ``os.replace``-s it over the original.

    Raises:
        OSError: when the folder is not writable or the disk is full; the original is untouched.
        UnicodeEncodeError: when ``text`` cannot be encoded in ``encoding``.
    """
    data = text.encode(encoding)
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".torchport")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
