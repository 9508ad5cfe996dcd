"""Read a project's import-sorting and line-length settings the way ruff, isort, black and flake8 find them.

Each tool's configuration is the nearest one up from the file's folder. Ruff wins over isort for import
order, and ruff's or black's line length (the formatter's) over flake8's ``max-line-length``.
"""

from __future__ import annotations

import configparser
import functools
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# isort's and ruff's default section order.
SECTIONS = ("future", "stdlib", "third-party", "first-party", "local-folder")


@dataclass(frozen=True)
class Style:
    """A project's lint settings that a port can break.

    Args:
        sort_imports: whether the project configures an import sorter (ruff or isort); added imports are
            only moved when it does.
        line_length: the formatter's (or linter's) maximum line length in characters; None when nothing
            configures one (then no line is wrapped).
        known_first_party, known_third_party, known_local_folder: top-level module names forced into a section.
        src: folders whose top-level modules and packages are first-party (ruff's ``src``, isort's ``src_paths``).
        force_sort_within_sections: ``import x`` and ``from x import y`` sorted together by module.
        case_sensitive: module names compared case-sensitively.
        from_first: ``from`` imports before plain ones within a section.
        no_sections: one section for everything but ``__future__``.
        formatter: black or ``ruff format`` formats the project (magic trailing commas are expected).
        force_single_line: one imported name per ``from`` import (isort's ``force_single_line``, ruff's
            ``force-single-line``).
        single_quotes: the project's strings are single-quoted (ruff format's ``quote-style = "single"``,
            flake8-quotes' ``inline-quotes``), so added code is too.
    """

    sort_imports: bool = False
    line_length: int | None = None
    known_first_party: frozenset[str] = frozenset()
    known_third_party: frozenset[str] = frozenset()
    known_local_folder: frozenset[str] = frozenset()
    src: tuple[Path, ...] = ()
    force_sort_within_sections: bool = False
    case_sensitive: bool = False
    from_first: bool = False
    no_sections: bool = False
    formatter: bool = False
    force_single_line: bool = False
    single_quotes: bool = False


NO_STYLE = Style()


def _toml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None


def _ini(path: Path) -> configparser.ConfigParser | None:
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    return parser


def _up(folder: Path) -> Iterator[Path]:
    yield folder
    yield from folder.parents


def _ruff(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest ruff configuration: ``.ruff.toml``, ``ruff.toml`` or a pyproject with ``[tool.ruff]``."""
    for here in _up(folder):
        for name in (".ruff.toml", "ruff.toml"):
            if (data := _toml(here / name)) is not None:
                return here, _extended(here, data)
        if (data := _toml(here / "pyproject.toml")) is not None and "ruff" in data.get("tool", {}):
            return here, _extended(here, data["tool"]["ruff"])
    return None


def _extended(here: Path, data: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """``data`` over the configuration its ``extend`` names (merged option by option, as ruff does)."""
    base_name = data.get("extend")
    if not isinstance(base_name, str) or depth > 4:
        return data
    base_path = (here / base_name).expanduser()
    base = _toml(base_path)
    if base is None:
        return data
    if base_path.name == "pyproject.toml":
        base = base.get("tool", {}).get("ruff", {})
    return _merged(_extended(base_path.parent, base, depth + 1), data)


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged(merged[key], value) if both else value
    return merged


def _isort(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest isort configuration, keys with ``_`` (isort's spelling)."""
    for here in _up(folder):
        if (cfg := _ini(here / ".isort.cfg")) is not None and cfg.has_section("settings"):
            return here, dict(cfg["settings"])
        if (data := _toml(here / "pyproject.toml")) is not None and "isort" in data.get("tool", {}):
            return here, data["tool"]["isort"]
        for name in ("setup.cfg", "tox.ini"):
            cfg = _ini(here / name)
            for section in ("isort", "tool:isort"):
                if cfg is not None and cfg.has_section(section):
                    return here, dict(cfg[section])
    return None


def _black_length(folder: Path) -> int | None:
    for here in _up(folder):
        if (data := _toml(here / "pyproject.toml")) is not None:
            black = data.get("tool", {}).get("black")
            if black is not None:
                return _int(black.get("line-length", black.get("line_length")), 88)
    return None


def _flake8_length(folder: Path) -> int | None:
    for here in _up(folder):
        for name in ("setup.cfg", "tox.ini", ".flake8"):
            cfg = _ini(here / name)
            if cfg is not None and cfg.has_section("flake8"):
                section = cfg["flake8"]  # only an explicit length: many set E501 aside for another formatter
                value = section.get("max-line-length", section.get("max_line_length"))
                return None if value is None else _int(value, 79)
    return None


def _flake8_single_quotes(folder: Path) -> bool:
    """flake8-quotes' ``inline-quotes`` asks for single quotes."""
    for here in _up(folder):
        for name in ("setup.cfg", "tox.ini", ".flake8"):
            cfg = _ini(here / name)
            if cfg is not None and cfg.has_section("flake8"):
                value = cfg["flake8"].get("inline-quotes", cfg["flake8"].get("inline_quotes", ""))
                return value.strip() in ("'", "single")
    return False


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _names(value: Any) -> frozenset[str]:
    """A list option: a TOML list, or isort's comma-separated string."""
    if isinstance(value, str):
        value = value.replace("\n", ",").split(",")
    if not isinstance(value, list):
        return frozenset()
    return frozenset(str(v).strip() for v in value if str(v).strip())


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _from_ruff(root: Path, ruff: dict[str, Any]) -> Style:
    lint = ruff.get("lint", {})
    isort = {**ruff.get("isort", {}), **lint.get("isort", {})}  # top-level `isort` is ruff's older spelling
    src = ruff.get("src", [".", "src"])
    return Style(
        sort_imports=True,
        line_length=_int(ruff.get("line-length"), 88),
        known_first_party=_names(isort.get("known-first-party")),
        known_third_party=_names(isort.get("known-third-party")),
        known_local_folder=_names(isort.get("known-local-folder")),
        src=tuple(root / s for s in src if isinstance(s, str)),
        force_sort_within_sections=_bool(isort.get("force-sort-within-sections", False)),
        case_sensitive=_bool(isort.get("case-sensitive", False)),
        from_first=_bool(isort.get("from-first", False)),
        no_sections=_bool(isort.get("no-sections", False)),
        formatter=True,
        force_single_line=_bool(isort.get("force-single-line", False)),
        single_quotes=str(ruff.get("format", {}).get("quote-style", "")).strip() == "single",
    )


def _from_isort(root: Path, isort: dict[str, Any], length: int | None, formatter: bool, quotes: bool) -> Style:
    profile = str(isort.get("profile", "")).strip()
    google = profile == "google"
    src = isort.get("src_paths", [".", "src"])
    if length is None:  # isort's own length (its profile's), what the project wraps its imports at
        default = {"black": 88, "google": 1000, "django": 79, "pycharm": 79}.get(profile)
        length = _int(isort.get("line_length", isort.get("line-length")), default or 79) if (
            "line_length" in isort or "line-length" in isort or default) else None
        formatter = formatter or profile == "black"
    return Style(
        sort_imports=True,
        line_length=length,
        known_first_party=_names(isort.get("known_first_party")),
        known_third_party=_names(isort.get("known_third_party")),
        known_local_folder=_names(isort.get("known_local_folder")),
        src=tuple(root / s for s in sorted(_names(src))),
        force_sort_within_sections=_bool(isort.get("force_sort_within_sections", google)),
        case_sensitive=_bool(isort.get("case_sensitive", False)),
        from_first=_bool(isort.get("from_first", False)),
        no_sections=_bool(isort.get("no_sections", False)),
        formatter=formatter,
        force_single_line=_bool(isort.get("force_single_line", google)),
        single_quotes=quotes,
    )


@functools.lru_cache(maxsize=512)
def _style_in(folder: Path) -> Style:
    if (ruff := _ruff(folder)) is not None:
        return _from_ruff(*ruff)
    black = _black_length(folder)
    length = black or _flake8_length(folder)
    quotes = black is None and _flake8_single_quotes(folder)
    if (isort := _isort(folder)) is not None:
        return _from_isort(*isort, length, black is not None, quotes)
    if length or quotes:
        return Style(line_length=length, formatter=black is not None, single_quotes=quotes)
    return NO_STYLE


def style_for(path: Path) -> Style:
    """The lint settings that apply to the file ``path`` (cached per folder; `NO_STYLE` when none do)."""
    try:
        folder = Path(path).resolve().parent
    except (OSError, RuntimeError):
        return NO_STYLE
    return _style_in(folder)
