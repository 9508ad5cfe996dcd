"""Run settings: which rules apply, for which targets. Built from `[tool.torchport]` and the CLI."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ALL_TARGETS = ("mps", "xpu", "cpu")
_KEYS = frozenset({"select", "ignore", "exclude", "per-file-ignores", "target", "unsafe-fixes", "runtime",
                   "torch-version", "vendor-path"})
RUNTIMES = ("package", "vendor", "native")


class ConfigError(ValueError):
    """A `[tool.torchport]` table or a command-line value that torchport cannot use."""


@dataclass(frozen=True)
class Settings:
    """What a run applies. Frozen and hashable, so it can key a cache and cross process boundaries.

    Args:
        select: rule codes or code prefixes to enable (``("TP0", "TP101")``); empty means every rule.
        ignore: rule codes or prefixes to disable; wins over ``select``.
        unsafe_fixes: also apply rewrites whose safety class is ``unsafe``.
        targets: backends to report per-target problems for (a subset of ``ALL_TARGETS``).
        exclude: gitignore-style patterns of paths to skip (from the config; the CLI adds its own).
        per_file_ignores: ``(glob, codes)`` pairs; files matching the glob also ignore the codes.
        root: the folder the config was found in; per-file globs are relative to it.
        runtime: how runtime calls are written: ``package`` (``from torchport import runtime as tp``),
            ``vendor`` (a generated copy in the project) or ``native`` (plain PyTorch).
        torch_version: ``(major, minor)``, the oldest torch native output must run on; ``(0, 0)``: not set
            (the command line then reads the project's requirement, see `torchport.torch_version`).
        vendor_path: ``--vendor-path`` (empty: the default placement, see `torchport.vendor`).
        vendor_module: the vendored module's import name for one file (set by `for_file`).
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
    vendor_module: str = ""

    def for_file(self, path: Path) -> Settings:
        """These settings with the per-file ignores that match ``path`` added (and its vendored module)."""
        if self.runtime != "package":
            from torchport.vendor import vendor_location

            self = replace(self, vendor_module=vendor_location(path, self.vendor_path)[1])
        if not self.per_file_ignores:
            return self
        try:
            rel = os.path.relpath(path.resolve(), self.root or os.getcwd()).replace(os.sep, "/")
        except ValueError:  # another drive on Windows
            rel = path.as_posix()
        extra = tuple(code for glob, codes in self.per_file_ignores
                      if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(path.name, glob) for code in codes)
        return replace(self, ignore=self.ignore + extra, per_file_ignores=()) if extra else self


DEFAULT = Settings()


def _codes(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.torchport] {key} must be a list of rule codes")
    return tuple(v.strip().upper() for v in value)


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
    """The nearest ``pyproject.toml`` with a ``[tool.torchport]`` table, from ``start`` upwards."""
    folder = start.resolve()
    folder = folder if folder.is_dir() else folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            try:
                if "torchport" in tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}):
                    return path
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
    return None


def load(pyproject: Path | None) -> Settings:
    """Settings from the ``[tool.torchport]`` table of ``pyproject`` (defaults when None).

    Raises:
        ConfigError: for unknown keys, wrong types or unknown targets, naming the key.
    """
    if pyproject is None:
        return DEFAULT
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("torchport", {})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: {exc}") from None
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{pyproject}: unknown key {unknown[0]!r} in [tool.torchport]; "
                          f"valid keys: {', '.join(sorted(_KEYS))}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{pyproject}: per-file-ignores must be a table of glob = [codes]")
    unsafe = table.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError(f"{pyproject}: unsafe-fixes must be true or false")
    runtime = table.get("runtime", "package")
    if runtime not in RUNTIMES:
        raise ConfigError(f"{pyproject}: runtime must be one of {', '.join(RUNTIMES)}")
    return Settings(
        runtime=runtime,
        torch_version=parse_version(str(table["torch-version"])) if "torch-version" in table else DEFAULT.torch_version,
        vendor_path=str(pyproject.parent / table["vendor-path"]) if "vendor-path" in table else "",
        select=_codes(table.get("select", []), "select"),
        ignore=_codes(table.get("ignore", []), "ignore"),
        unsafe_fixes=unsafe,
        targets=parse_targets(table["target"]) if "target" in table else ALL_TARGETS,
        exclude=tuple(table.get("exclude", [])),
        per_file_ignores=tuple((glob, _codes(codes, f"per-file-ignores.{glob}")) for glob, codes in per_file.items()),
        root=str(pyproject.parent.resolve()),
    )
