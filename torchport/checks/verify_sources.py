"""Each side of `torchport verify` imports its own copy of the project, and the report says which it imported.

A project installed in development mode (``pip install -e .``: a ``.pth`` path or an import finder that points
at the original tree), a ``src/`` layout, or a ``PYTHONPATH`` entry that points into the original tree would
otherwise make the migrated copy's tests import the original package: a test the port fixes would read
"unchanged". So each side runs with ``PYTHONPATH`` starting with its copy's source roots (the copy itself and
its ``src/``), followed by the user's entries with those that point into the project mapped into the copy.
``PYTHONPATH`` comes before site-packages and before the finders editable installs add, so the copy wins.

Which file each of the project's top-level packages resolves to is then asked of the same interpreter, in the
same folder and environment as the command (``importlib.util.find_spec``, which imports the parent packages
only), and recorded per side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_NOT_PACKAGES = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "scripts", "benchmarks",
                           "build", "dist", "setup", "conftest", "noxfile", "tasks"})
# Run as `python -c PROBE NAME...`: prints {name: file or null} as one JSON line.
_PROBE = ("import importlib.util, json, sys\n"
          "out = {}\n"
          "for name in sys.argv[1:]:\n"
          "    try:\n"
          "        spec = importlib.util.find_spec(name)\n"
          "    except Exception:\n"
          "        spec = None\n"
          "    out[name] = None if spec is None else (spec.origin if spec.origin not in (None, 'namespace')\n"
          "                                           else next(iter(spec.submodule_search_locations or []), None))\n"
          "print(json.dumps(out))\n")


def source_roots(copy: Path) -> list[Path]:
    """The folders of ``copy`` that hold its importable sources: ``src/`` (when it exists) and the copy itself."""
    return [p for p in (copy / "src", copy) if p.is_dir()]


def top_level_names(copy: Path, limit: int = 20) -> list[str]:
    """The project's own top-level packages (folders with ``__init__.py`` in the source roots) or, when it has
    none, its top-level modules; without tests, docs, setup scripts and the like; at most ``limit``, sorted."""
    packages: set[str] = set()
    names: set[str] = set()
    for root in source_roots(copy):
        for entry in root.iterdir():
            stem = entry.name[:-3] if entry.name.endswith(".py") and entry.is_file() else entry.name
            if stem in _NOT_PACKAGES or stem.startswith(("test_", ".", "_")) or not stem.isidentifier():
                continue
            if entry.is_dir() and (entry / "__init__.py").is_file():
                packages.add(stem)
            elif entry.name.endswith(".py") and entry.is_file():
                names.add(stem)
    return sorted(packages or names)[:limit]


def isolated_env(copy: Path, project: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """``PYTHONPATH`` for a side that runs in ``copy`` (a copy of ``project``): its source roots first, then the
    user's entries, those under ``project`` mapped to the same place in ``copy``.

    Args:
        copy: the side's copy of the project.
        project: the original project root (resolved).
        environ: the environment to read ``PYTHONPATH`` from (default ``os.environ``).

    Returns:
        ``{"PYTHONPATH": ...}``, to add to the command's environment.
    """
    entries = [str(p) for p in source_roots(copy)]
    for entry in (environ if environ is not None else os.environ).get("PYTHONPATH", "").split(os.pathsep):
        if not entry:
            continue
        path = Path(entry).absolute()
        try:
            mapped = copy / path.resolve().relative_to(project)
        except ValueError:  # outside the project: kept as it is
            mapped = path
        if str(mapped) not in entries:
            entries.append(str(mapped))
    return {"PYTHONPATH": os.pathsep.join(entries)}


def imported_sources(copy: Path, names: list[str], env: dict[str, str], python: str = sys.executable,
                     timeout_s: float = 60.0) -> dict[str, str | None]:
    """Where each of ``names`` resolves for a command run in ``copy`` with ``env`` (a file or folder path, or
    None when it cannot be found). Returns {} when the probe fails or times out."""
    if not names:
        return {}
    try:
        proc = subprocess.run([python, "-c", _PROBE, *names], cwd=copy, env=env, capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL)
        found = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}
    return {str(k): (str(v) if v else None) for k, v in found.items()}


def outside(sources: dict[str, str | None], copy: Path) -> list[str]:
    """The names in ``sources`` that resolve to a file outside ``copy`` (what the side did not test)."""
    root = copy.resolve()
    bad = []
    for name, origin in sources.items():
        if origin is None:
            continue
        try:
            Path(origin).resolve().relative_to(root)
        except ValueError:
            bad.append(name)
    return bad
