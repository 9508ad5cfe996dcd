"""A ruff-style cache of per-file results, so that a re-run over an unchanged tree parses nothing.

An entry is keyed by the file's content hash, the settings that apply to the file, the tool version
and a fingerprint of the code that computes results (the rules, the engine, the settings type, the
interpreter and LibCST versions), so a changed file, a changed rule set or a new torchport never
reads a stale entry. Entries are small JSON files written atomically; a missing, unreadable or
corrupt entry is a miss, and a cache that cannot be written is switched off for the run: the cache
never changes what a run does, only how fast it is.

The folder is ``TORCHPORT_CACHE_DIR`` when set, else ``.torchport_cache/`` in the folder migrated.
It holds a ``.gitignore`` of ``*`` (so git never sees it) and a ``CACHEDIR.TAG``; delete it at will.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

from torchport import __version__
from torchport.config import Settings
from torchport.model import installed
from torchport.results import Diagnostic, FileResult

ENV_VAR = "TORCHPORT_CACHE_DIR"
FOLDER_NAME = ".torchport_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchport.\n"


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """What, besides a file and its settings, decides a result: versions and the rules' own code."""
    digest = hashlib.sha256()
    digest.update(f"torchport {__version__}\npython {sys.version_info[:2]}\n".encode())
    # LibCST's version file, read without importing LibCST (or importlib.metadata: 20 ms at start-up)
    spec = importlib.util.find_spec("libcst")
    for folder in spec.submodule_search_locations or () if spec else ():
        version = Path(folder) / "_version.py"
        if version.is_file():
            digest.update(b"libcst " + version.read_bytes())
    # which torch modules and names exist decides whether a program runs at all (`torchport.model.installed`)
    digest.update(f"torch {installed.version()}\n".encode())
    package = Path(__file__).parent.parent
    # An editable install changes rules without changing the version: hash their source too.
    sources = [*package.rglob("codemods/**/*.py"), *package.glob("style/*.py"), *package.glob("emit/*.py"),
               *package.glob("model/*.py"), *package.glob("pipeline/*.py"), package / "config.py"]
    for source in sorted(sources):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def settings_key(settings: Settings) -> str:
    """A stable text for the settings value (its compared fields), the same in every process."""
    fields = [(f.name, getattr(settings, f.name)) for f in dataclasses.fields(settings) if f.compare]
    return repr(fields)


def key(data: bytes, settings: Settings, style: object = None) -> str:
    """The cache key for a file with content ``data`` migrated with ``settings`` (already per file) and the
    project's lint ``style`` (`torchport.style.style_for`; its repr is part of the key)."""
    digest = hashlib.sha256()
    for part in (fingerprint().encode(), settings_key(settings).encode(), _stable(style).encode(),
                 hashlib.sha256(data).digest()):
        digest.update(len(part).to_bytes(8, "little") + part)
    return digest.hexdigest()


def _stable(value: object) -> str:
    """``repr(value)`` with sets sorted, through dataclass fields: a set's order follows the per-process string
    hash, so its repr would give another key in every process (every warm run of a project whose lint settings
    name packages missed the cache)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={_stable(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(map(repr, value))) + "}"
    return repr(value)


def default_folder(paths: list[Path]) -> Path:
    """``$TORCHPORT_CACHE_DIR``, else ``.torchport_cache`` in the first folder given (a file's folder)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    first = paths[0]
    return (first if first.is_dir() else first.parent) / FOLDER_NAME


def cacheable(result: FileResult) -> bool:
    """Results worth keeping: success, or a failure the file's content alone decides (it does not parse)."""
    return result.original is not None and not (result.error or "").startswith("internal error")


class Cache:
    """Per-file results on disk, in one folder per torchport version.

    Use `Cache.open`; ``get`` and ``put`` never raise.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries = folder / __version__
        self.enabled = True
        self.hits = 0
        self.misses = 0

    @classmethod
    def open(cls, folder: Path) -> Cache | None:
        """The cache in ``folder``, created if need be; None when it cannot be created (read-only tree)."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in ((".gitignore", "# Created by torchport.\n*\n"), ("CACHEDIR.TAG", _TAG)):
                if not (folder / name).exists():
                    (folder / name).write_text(text, encoding="utf-8")
            (folder / __version__).mkdir(exist_ok=True)
        except OSError:
            return None
        return cls(folder)

    def _path(self, entry: str) -> Path:
        return self.entries / f"{entry}.json"

    def get(self, entry: str, result: FileResult) -> bool:
        """Fill ``result`` (as read: ``original`` set) from the entry ``entry``; False on a miss."""
        try:
            data = json.loads(self._path(entry).read_text(encoding="utf-8"))
            migrated = data["migrated"]
            rewrites = {str(code): int(count) for code, count in data["rewrites"].items()}
            diagnostics = [Diagnostic(*d) for d in data["diagnostics"]]
            sites = [Diagnostic(*d) for d in data["sites"]]
            error = data["error"]
            facts = {str(kind): [int(line) for line in lines] for kind, lines in data.get("facts", {}).items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.misses += 1
            return False
        result.migrated = None if error else result.original if migrated is None else migrated
        result.error = error
        result.rewrites, result.diagnostics, result.sites = rewrites, diagnostics, sites
        result.facts = facts
        self.hits += 1
        return True

    def get_decisions(self, entry: str) -> dict[str, str] | None:
        """A project-level decision stored by `put_decisions` (file display path -> reason); None on a miss."""
        try:
            data = json.loads(self._path(entry).read_text(encoding="utf-8"))
            return {str(path): str(reason) for path, reason in data["decisions"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put_decisions(self, entry: str, decisions: dict[str, str]) -> None:
        """Store a project-level decision (display path -> reason) under ``entry``; never raises."""
        if self.enabled:
            self._write(entry, {"decisions": decisions})

    def put(self, entry: str, result: FileResult) -> None:
        """Store ``result`` under ``entry`` (atomically); a cache that cannot be written turns itself off."""
        if not self.enabled or not cacheable(result):
            return
        data = {
            "migrated": None if result.migrated == result.original else result.migrated,
            "rewrites": result.rewrites,
            "diagnostics": [dataclasses.astuple(d) for d in result.diagnostics],
            "sites": [dataclasses.astuple(d) for d in result.sites],
            "error": result.error,
            "facts": result.facts,
        }
        self._write(entry, data)

    def _write(self, entry: str, data: object) -> None:
        try:
            fd, tmp = tempfile.mkstemp(dir=self.entries, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(data, handle, ensure_ascii=False)
                os.replace(tmp, self._path(entry))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            self.enabled = False
