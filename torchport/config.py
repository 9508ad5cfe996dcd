"""Run settings: which rules apply, for which targets. Built from `[tool.torchport]` and the CLI."""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pathspec

from torchport.errors import TorchportError

ALL_TARGETS = ("mps", "xpu", "cpu")
_KEYS = frozenset({"select", "ignore", "exclude", "per-file-ignores", "target", "unsafe-fixes", "runtime",
                   "torch-version", "vendor-path"})
RUNTIMES = ("package", "vendor", "native")


class ConfigError(TorchportError, ValueError):
    """A `[tool.torchport]` table or a command-line value that torchport cannot use."""


@functools.lru_cache(maxsize=256)
def pattern(glob: str) -> pathspec.GitIgnoreSpec:
    """One gitignore-style pattern, as `exclude` and `per-file-ignores` both use it (``*.py`` at any depth,
    ``scripts/*.py`` from the root, ``third_party/`` a folder)."""
    return pathspec.GitIgnoreSpec.from_lines([glob])


def relative_to(path: Path, root: str) -> str:
    """``path`` relative to ``root`` (the current folder when empty), with ``/`` separators."""
    try:
        return os.path.relpath(path.resolve(), root or os.getcwd()).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        return path.as_posix()


@dataclass(frozen=True)
class Settings:
    """What a run applies. Frozen and hashable, so it can key a cache and cross process boundaries.

    Args:
        select: rule codes or code prefixes to enable (``("TP0", "TP101")``); empty means every rule.
        ignore: rule codes or prefixes to disable; wins over ``select``.
        unsafe_fixes: also apply rewrites whose safety class is ``unsafe``.
        targets: backends to report per-target problems for (a subset of ``ALL_TARGETS``).
        exclude: gitignore-style patterns of paths to skip, relative to ``root`` (from the config).
        per_file_ignores: ``(pattern, codes)`` pairs; files matching the gitignore-style pattern (relative to
            ``root``) also ignore the codes.
        root: the folder the config was found in; the config's patterns are relative to it.
        runtime: how runtime calls are written: ``package`` (``from torchport import runtime as tp``),
            ``vendor`` (a generated copy in the project) or ``native`` (plain PyTorch).
        torch_version: ``(major, minor)``, the oldest torch native output must run on; ``(0, 0)``: not set
            (the command line then reads the project's requirement, see `torchport.emit.torch_version`).
        vendor_path: ``--vendor-path`` (empty: the default placement, see `torchport.emit.vendor`).
        vendor_scripts: with the default placement, the copy that files in no package import (set by
            `torchport.pipeline.vendoring.place`; empty: one beside each file).
        vendor_module: the vendored module's import name for one file (set by `for_file`).
        vendor_bootstrap: the expression of the folder that the file puts on ``sys.path`` before importing
            the vendored module; empty when it imports as it is (set by `for_file`).
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    targets: tuple[str, ...] = ALL_TARGETS
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    root: str = field(default="", compare=False)
    runtime: str = "package"
    torch_version: tuple[int, int] = (0, 0)
    vendor_path: str = ""
    vendor_scripts: str = ""
    vendor_module: str = ""
    vendor_bootstrap: str = ""

    def for_file(self, path: Path) -> Settings:
        """These settings with the per-file ignores that match ``path`` added (and its vendored module)."""
        if self.runtime != "package":
            from torchport.emit.vendor import bootstrap_folder, vendor_import

            module, folder = vendor_import(path, self.vendor_path, self.vendor_scripts)
            bootstrap = bootstrap_folder(folder, notebook=path.suffix == ".ipynb") if folder else ""
            self = replace(self, vendor_module=module, vendor_bootstrap=bootstrap)
        if not self.per_file_ignores:
            return self
        rel = relative_to(path, self.root)
        extra = tuple(code for glob, codes in self.per_file_ignores if pattern(glob).match_file(rel) for code in codes)
        return replace(self, ignore=self.ignore + extra, per_file_ignores=()) if extra else self


DEFAULT = Settings()


def _strings(value: object, where: str, what: str) -> tuple[str, ...]:
    """A TOML array of strings; a bare string is an error (it would be read letter by letter)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        raise ConfigError(f"{where} must be a list of {what}, e.g. [{shown if isinstance(value, str) else '...'}]; "
                          f"got {shown}")
    return tuple(value)


def _codes(value: object, where: str) -> tuple[str, ...]:
    return tuple(v.strip().upper() for v in _strings(value, where, "rule codes"))


def parse_targets(value: str | Sequence[str]) -> tuple[str, ...]:
    """``"mps,cpu"`` or ``["mps", "cpu"]`` -> ``("mps", "cpu")``; ``"none"`` -> ``()``.

    Raises:
        ConfigError: for a name that is not one of ``ALL_TARGETS``.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(i.strip().lower() for i in items if i.strip())
    if names == ("none",):
        return ()
    unknown = [n for n in names if n not in ALL_TARGETS]
    if unknown:
        raise ConfigError(f"unknown target {unknown[0]!r}; choose from {', '.join(ALL_TARGETS)} (or none)")
    return names


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file.

    Raises:
        ConfigError: when it cannot be read or is not valid TOML, as ``path:line:col: reason``.
    """
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        where = _TOML_POSITION.search(str(exc))
        position = f":{where.group(1)}:{where.group(2)}" if where else ""
        reason = _TOML_POSITION.sub("", str(exc)).strip()
        raise ConfigError(f"{path}{position}: invalid TOML: {reason}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None


def parse_version(value: str) -> tuple[int, int]:
    """``"2.9"`` (or ``"2.9.1"``) -> ``(2, 9)``.

    Raises:
        ConfigError: for anything else.
    """
    parts = value.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ConfigError(f"torch version {value!r} must look like 2.9")
    return int(parts[0]), int(parts[1])


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.torchport]`` table, from ``start`` upwards.

    Raises:
        ConfigError: when a ``pyproject.toml`` on the way is not valid TOML (it could hold the table).
    """
    folder = start.resolve()
    folder = folder if folder.is_dir() else folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() and "torchport" in read_toml(path).get("tool", {}):
            return path
    return None


def load(pyproject: Path | None) -> Settings:
    """Settings from the ``[tool.torchport]`` table of ``pyproject`` (defaults when None).

    Raises:
        ConfigError: for invalid TOML (with its line), unknown keys, wrong types or unknown targets,
            naming the file and the key.
    """
    if pyproject is None:
        return DEFAULT
    table = read_toml(pyproject).get("tool", {}).get("torchport", {})
    where = f"{pyproject}: [tool.torchport]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(_KEYS))}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where} per-file-ignores must be a table of pattern = [codes]")
    unsafe = table.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError(f"{where} unsafe-fixes must be true or false")
    runtime = table.get("runtime", "package")
    if runtime not in RUNTIMES:
        raise ConfigError(f"{where} runtime must be one of {', '.join(RUNTIMES)}")
    return Settings(
        runtime=runtime,
        torch_version=parse_version(str(table["torch-version"])) if "torch-version" in table else DEFAULT.torch_version,
        vendor_path=str(pyproject.parent / table["vendor-path"]) if "vendor-path" in table else "",
        select=_codes(table.get("select", []), f"{where} select"),
        ignore=_codes(table.get("ignore", []), f"{where} ignore"),
        unsafe_fixes=unsafe,
        targets=parse_targets(_strings(table["target"], f"{where} target", "targets")) if "target" in table
        else ALL_TARGETS,
        exclude=_strings(table.get("exclude", []), f"{where} exclude", "gitignore-style patterns"),
        per_file_ignores=tuple((glob, _codes(codes, f"{where} per-file-ignores.{glob!r}"))
                               for glob, codes in per_file.items()),
        root=str(pyproject.parent.resolve()),
    )


def with_command_line(settings: Settings, select: tuple[str, ...] | None, ignore: tuple[str, ...] | None,
                      unsafe_fixes: bool, targets: tuple[str, ...] | None) -> Settings:
    """The command line on top of the file, as ruff combines them: a ``--select`` starts the rule set
    afresh (the file's ``select`` and ``ignore`` no longer apply, only ``--ignore``); a ``--ignore``
    alone adds to the file's ignores."""
    if select is not None:
        settings = replace(settings, select=select, ignore=ignore or ())
    elif ignore is not None:
        settings = replace(settings, ignore=settings.ignore + ignore)
    return replace(settings, unsafe_fixes=settings.unsafe_fixes or unsafe_fixes,
                   targets=settings.targets if targets is None else targets)
