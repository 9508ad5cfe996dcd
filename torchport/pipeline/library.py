"""A library ported in package mode: its modules now import ``torchport.runtime``, so its users need torchport.

When a migrated module that imports torchport lies in a package that the project's metadata makes
installable (``pyproject.toml`` with ``[project]`` or ``[tool.poetry]`` naming it, ``setup.py`` calling
``setup(name=...)``, ``setup.cfg`` with ``[metadata] name``) and that metadata does not name torchport,
`dependency_result` reports it once (TP210) and, with ``--add-dependency``, adds ``torchport>=VERSION``
to the dependency list, keeping the file's own layout (one element per line, or all on one line, as
the list already is).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from torchport import __version__
from torchport.emit.vendor import package_root
from torchport.results import Diagnostic, FileResult

CODE = "TP210"
_USES = re.compile(r"^[ \t]*(?:from[ \t]+torchport(?:\.runtime)?[ \t]+import|import[ \t]+torchport)\b", re.M)
_METADATA = ("pyproject.toml", "setup.py", "setup.cfg")
REQUIREMENT = f"torchport>={__version__}"


def _names_project(path: Path, text: str) -> bool:
    if path.name == "pyproject.toml":
        return re.search(r"^\[(?:project|tool\.poetry)\]\s*$(?:(?!^\[).)*?^name\s*=", text, re.M | re.S) is not None
    if path.name == "setup.cfg":
        return re.search(r"^\[metadata\]\s*$(?:(?!^\[).)*?^name\s*=", text, re.M | re.S) is not None
    return re.search(r"\bsetup\s*\((?:.|\n)*?\bname\s*=", text) is not None


def find_metadata(start: Path) -> Path | None:
    """The nearest project metadata file at or above the folder ``start`` that names a project."""
    for folder in (start, *start.parents):
        for name in _METADATA:
            candidate = folder / name
            if candidate.is_file():
                try:
                    text = candidate.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if _names_project(candidate, text):
                    return candidate
    return None


def installable(paths: Iterable[Path]) -> set[Path]:
    """Those of the files ``paths`` that packaging metadata at or above their folder makes installable
    (`find_metadata`); each folder is read once."""
    folders: dict[Path, bool] = {}
    found: set[Path] = set()
    for path in paths:
        folder = path.resolve().parent
        if folder not in folders:
            folders[folder] = find_metadata(folder) is not None
        if folders[folder]:
            found.add(path)
    return found


def _list_span(text: str, opening: re.Match[str]) -> tuple[int, int] | None:
    """The offsets of ``[`` and its ``]`` for the list that ``opening`` ends at (strings may hold brackets)."""
    start = opening.end() - 1
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            index = text.find("\n", index)
            if index < 0:
                return None
            continue
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return start, index
        index += 1
    return None


def _add_to_list(text: str, opening: re.Match[str], quote: str = '"') -> str | None:
    """``text`` with the requirement added as the last element of the list that ``opening`` opens."""
    span = _list_span(text, opening)
    if span is None:
        return None
    start, end = span
    inner = text[start + 1:end]
    item = f"{quote}{REQUIREMENT}{quote}"
    if "\n" not in inner:  # on one line
        body = inner.rstrip()
        sep = "" if not body.strip() else (" " if body.endswith(",") else ", ")
        return text[:start + 1] + body + sep + item + text[end:]
    lines = inner.rstrip(" \t").split("\n")
    elements = [line for line in lines if line.strip() and not line.strip().startswith("#")]
    indent = re.match(r"[ \t]*", elements[-1]).group(0) if elements else "    "  # type: ignore[union-attr]
    before = text[:start + 1] + inner.rstrip(" \t\n")
    if elements and not before.rstrip().endswith((",", "[")):
        before += ","
    closing_indent = inner[len(inner.rstrip(" \t")):]
    return f"{before}\n{indent}{item},\n{closing_indent}" + text[end:]


def add_dependency(path: Path, text: str) -> str | None:
    """``text`` (the metadata file ``path``) with torchport added to the dependencies; None when there
    is no dependency list this can extend without rewriting the file's layout."""
    if path.name == "pyproject.toml":
        section = re.search(r"^\[project\]\s*$", text, re.M)
        if section is None:
            return None
        end = re.search(r"^\[", text[section.end():], re.M)
        limit = section.end() + (end.start() if end else len(text) - section.end())
        opening = re.compile(r"^dependencies\s*=\s*\[", re.M).search(text, section.end(), limit)
        if opening is not None:
            return _add_to_list(text, opening)
        name = re.compile(r"^name\s*=.*\n", re.M).search(text, section.end(), limit)
        if name is None:
            return None
        return text[:name.end()] + f'dependencies = ["{REQUIREMENT}"]\n' + text[name.end():]
    if path.name == "setup.py":
        opening = re.search(r"\binstall_requires\s*=\s*\[", text)
        if opening is None:
            return None
        quote = "'" if text.count("'") > text.count('"') else '"'
        return _add_to_list(text, opening, quote)
    match = re.search(r"^install_requires\s*=[^\n]*\n((?:[ \t]+[^\n]*\n)*)", text, re.M)
    if match is None:
        return None
    lines = [line for line in match.group(1).splitlines() if line.strip()]
    indent = re.match(r"[ \t]*", lines[-1]).group(0) if lines else "    "  # type: ignore[union-attr]
    return text[:match.end()] + f"{indent}{REQUIREMENT}\n" + text[match.end():]


def _declares(text: str) -> bool:
    return re.search(r"""(?:^|["'\s,\[])torchport(?:\s*[<>=!~\[;"',]|\s*$)""", text, re.M) is not None


def dependency_result(results: Sequence[FileResult], add: bool) -> FileResult | None:
    """The project metadata file, with the TP210 finding (and the dependency added if ``add``), when a
    migrated module of an installable package imports torchport that the metadata does not declare."""
    users = [r for r in results if r.error is None and _USES.search(r.migrated or r.original or "")
             and r.path.suffix == ".py"]
    packages = sorted({top for r in users if (top := package_root(Path(os.path.abspath(r.path)).parent))})
    if not packages:
        return None
    metadata = find_metadata(packages[0].parent)
    if metadata is None:
        return None
    text = metadata.read_text(encoding="utf-8")
    if _declares(text):
        return None
    user = next(r for r in users if package_root(Path(os.path.abspath(r.path)).parent) == packages[0])
    display = os.path.normpath(os.path.join(os.path.dirname(user.display),
                                            os.path.relpath(metadata, Path(os.path.abspath(user.path)).parent)))
    added = add_dependency(metadata, text) if add else None
    how = ("torchport is added to its dependencies" if added is not None else
           "add torchport to its dependencies (--add-dependency), or port it with --runtime vendor or native"
           if not add else "add torchport to its dependencies by hand (no dependency list to extend), or port "
           "it with --runtime vendor or native")
    names = ", ".join(p.name for p in packages)
    line = next((i for i, s in enumerate(text.splitlines(), 1)
                 if re.match(r"\s*(?:dependencies|install_requires)\s*=", s)), 1)
    message = (f"{names}: an installable package ({metadata.name} names it) whose ported modules import "
               f"torchport.runtime, which it does not depend on, so its users' imports would fail: {how}")
    return FileResult(path=metadata, display=display, original=text, migrated=added or text,
                      diagnostics=[Diagnostic(CODE, line, 0, message)])
