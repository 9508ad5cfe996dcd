"""The project's vendored runtime (``--runtime vendor``, and native's fallback): a copy where the migrated
files can import it, holding only what they call; or the reason it cannot be written.

Placement, unless ``--vendor-path`` names the one copy:

* A file in a package imports the copy in its top-level package (``from mylib import _torchport_runtime as
  tp``), so that the package's wheel ships it.
* Files in no package share one copy (`project_location`, decided from those that mention CUDA or NCCL).
  When they all import a package that has its copy (``projects/adder.py`` doing ``from mingpt import ...``),
  they use that one. Otherwise it goes in the folder that holds them all (the project's root, for loose
  scripts in several folders): a script there imports it as it is (``import _torchport_runtime as tp``); a
  file in a subfolder first puts that folder on ``sys.path``, computed from its own ``__file__``::

      sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
      import _torchport_runtime as tp  # noqa: E402

What it keeps (`vendored_results`): the runtime names the migrated files call through it, with those its
header already lists (a file migrated in an earlier run may call them), so a re-run writes the same text
and a new torchport version rewrites it in place.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from torchport.config import Settings
from torchport.emit.vendor import (
    GENERATED,
    MODULE_NAME,
    kept_names,
    package_root,
    runtime_names,
    vendor_location,
    vendored_source,
)
from torchport.results import FileResult
from torchport.style import style_for

_MAY_NEED = re.compile(rb"(?i)cuda|nccl|torchport import runtime|_torchport_runtime")
_IMPORT = re.compile(rf"^[ \t]*(?:import\s+(?:[\w.]+\.)?{MODULE_NAME}|from\s+[\w.]+\s+import\s+{MODULE_NAME})"
                     rf"\s+as\s+(\w+)", re.MULTILINE)


def _imports(text: str, package: str) -> bool:
    """Whether ``text`` imports ``package`` (a line of a notebook's JSON starts with a quote)."""
    return re.search(rf'^[ \t]*"?(?:from|import)[ \t]+{re.escape(package)}\b', text, re.MULTILINE) is not None


def project_location(files: Iterable[Path]) -> Path | None:
    """Where the copy that files in no package import goes (see the module docstring); None when no such
    file may need it. Files in a package use the copy in their top-level package.

    Args:
        files: the files being migrated (unreadable ones are skipped).
    """
    texts: dict[Path, bytes] = {}
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if _MAY_NEED.search(data):
            texts[Path(os.path.abspath(path))] = data
    tops = {path: package_root(path.parent) for path in texts}
    loose = [path for path, top in tops.items() if top is None]
    if not loose:
        return None
    packages = Counter(top for top in tops.values() if top is not None)
    if packages:
        package = packages.most_common(1)[0][0]
        if all(_imports(texts[path].decode("utf-8", "replace"), package.name) for path in loose):
            return package / f"{MODULE_NAME}.py"
    return Path(os.path.commonpath([str(path.parent) for path in loose])) / f"{MODULE_NAME}.py"


def place(settings: Settings, files: Iterable[Path]) -> Settings:
    """``settings`` with the copy for files in no package placed (``vendor_scripts``), unless ``--vendor-path``
    or the package runtime leaves nothing to decide."""
    if settings.runtime == "package" or settings.vendor_path:
        return settings
    location = project_location(files)
    return settings if location is None else replace(settings, vendor_scripts=str(location))


def called_names(text: str) -> set[str]:
    """The runtime names ``text`` calls through its import of the vendored module (``tp.device`` -> device)."""
    names: set[str] = set()
    for alias in set(_IMPORT.findall(text)):
        names.update(re.findall(rf"(?<![\w.]){re.escape(alias)}\.(\w+)", text))
    return names


def refusal(location: Path, copy_of: Path | None = None) -> str | None:
    """Why the copy at ``location`` cannot be written (None when it can).

    Args:
        location: the vendored module's path.
        copy_of: with ``--output-dir``, the folder being copied (the copy must lie in it).
    """
    if copy_of is not None and not Path(os.path.realpath(location)).is_relative_to(os.path.realpath(copy_of)):
        return f"it lies outside {copy_of}, the folder being copied (--vendor-path can put it inside)"
    if location.is_symlink() or (location.exists() and not location.is_file()):
        return "it exists and is not a plain file"
    if location.is_file():
        try:
            first = location.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"it exists and cannot be read ({exc})"
        if not first.startswith(GENERATED):
            return "it exists and was not generated by torchport (--vendor-path can put the copy elsewhere)"
        if not os.access(location, os.W_OK):
            return "it is read-only"
        return None
    if not location.parent.is_dir():
        return f"its folder {location.parent} does not exist"
    if copy_of is None and not os.access(location.parent, os.W_OK):
        return f"its folder {location.parent} is not writable"
    return None


def vendored_results(results: Sequence[FileResult], vendor_path: str = "",
                     copy_of: Path | None = None, scripts: str = "") -> list[FileResult]:
    """A result per vendored module that the migrated files import: new, updated, unchanged, or refused
    (``error`` says why; then nothing may be written, see `refusal`). ``vendor_path`` and ``scripts``: as
    in `torchport.emit.vendor.vendor_location`."""
    wanted: dict[Path, tuple[str, set[str]]] = {}
    public = set(runtime_names())
    for result in results:
        text = result.migrated if result.migrated is not None else result.original
        if result.error is not None or not text or MODULE_NAME not in text:
            continue
        location, _ = vendor_location(result.path, vendor_path, scripts)
        # shown as the migrated files are: relative to where they are shown from
        beside = os.path.relpath(location, Path(os.path.abspath(result.path)).parent)
        display = os.path.normpath(os.path.join(os.path.dirname(result.display), beside))
        names = wanted.setdefault(location, (display, set()))[1]
        names.update(called_names(text) & public)
    made = []
    for location, (display, names) in sorted(wanted.items()):
        reason = refusal(location, copy_of)
        original = location.read_text(encoding="utf-8") if location.is_file() and reason is None else ""
        result = FileResult(path=location, display=display, original=original)
        if reason is not None:
            result.error = f"the migrated files import this copy of the runtime, which cannot be written: {reason}"
        else:
            result.migrated = _styled(vendored_source(names | (set(kept_names(original)) & public)), location)
        made.append(result)
    return made


def _styled(text: str, location: Path) -> str:
    """The vendored module ``text`` as the project's import sorter wants it at ``location``: one name a
    ``from`` import where it forces single lines (isort's ``force_single_line``, ruff's ``force-single-line``)."""
    if not style_for(location).force_single_line:
        return text
    return re.sub(r"^from (\S+) import ([^(\n]+,[^(\n]+)$",
                  lambda m: "\n".join(f"from {m[1]} import {name.strip()}" for name in m[2].split(",")),
                  text, flags=re.MULTILINE)
