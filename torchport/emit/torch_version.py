"""The oldest torch a project supports: the default of ``--torch-version`` for ``--runtime native``.

The lower bound of the project's own torch requirement (``pyproject.toml`` dependencies,
``requirements*.txt``, ``setup.py``, a conda ``environment.yml``, the ``conda install`` of an install script),
else the installed torch's version, else 2.6
(the first with ``torch.accelerator``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchport.results import FileResult

FALLBACK = (2, 6)
# `torch>=2.4`, `torch==2.5.1`, `torch~=2.3`, `torch >= 2.1, < 3`: the bound a requirement starts from.
_LOWER = re.compile(r"""(?<![\w.-])torch\s*(?:\[[^\]]*\])?\s*(?:>=|==|~=|>)\s*(\d+)\.(\d+)""", re.IGNORECASE)


# conda's `- pytorch=1.13.1`, `- pytorch::pytorch=1.13.1`, `- pytorch>=2.1` (not `pytorch-cuda=11.7`), and a
# `conda install pytorch==1.12.1` a setup script or shell script runs (PyTorch-SVGRender's setup.py)
_CONDA = re.compile(r"""(?:^\s*-\s*|(?<![\w.:-]))(?:[\w-]+::)?pytorch\s*(?:>=|==|=|~=|>)\s*(\d+)\.(\d+)""",
                    re.MULTILINE)  # conda's names are lower case: `export PYTORCH=2.3` is none


def _from_text(text: str) -> tuple[int, int] | None:
    bounds = [(int(a), int(b)) for a, b in (*_LOWER.findall(text), *_CONDA.findall(text))]
    return max(bounds) if bounds else None


def _candidates(root: Path) -> list[str]:
    texts = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            project = data.get("project", {})
            deps = list(project.get("dependencies", []))
            for extra in project.get("optional-dependencies", {}).values():
                deps.extend(extra)
            texts.append("\n".join(deps))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            pass
    for path in [*sorted(root.glob("requirements*.txt")), root / "setup.py", root / "environment.yml",
                 root / "environment.yaml", *sorted(root.glob("*.sh")), *sorted(root.glob("script*/*.sh"))]:
        if path.is_file():
            try:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                pass
    return texts


def declared_torch_version(root: Path) -> tuple[int, int] | None:
    """``(major, minor)`` of the lowest torch the project at ``root`` (a folder or a file in it) declares, or None.
    Reads files only; imports nothing."""
    root = root if root.is_dir() else root.parent
    for text in _candidates(root):
        found = _from_text(text)
        if found is not None:
            return found
    return None


def project_torch_version(root: Path) -> tuple[int, int]:
    """`declared_torch_version`, else the installed torch's, else `FALLBACK`."""
    from torchport.model.installed import version_tuple

    return declared_torch_version(root) or version_tuple() or FALLBACK


def fallback_note(results: Iterable[FileResult], version: tuple[int, int]) -> str | None:
    """The summary's one line on the native run's sites that call the vendored runtime instead (None if none):
    how many, why, and the ``--torch-version`` that would make those held back by ``version`` native.

    Args:
        results: the run's results; `torchport.emit.native` records each such site in ``facts["vendored"]``,
            and the torch version its native form needs (``major * 100 + minor``) in ``facts["vendored_needs"]``.
        version: ``(major, minor)``, the torch version the native output was written for.
    """
    results = list(results)
    total = sum(len(r.facts.get("vendored", ())) for r in results if r.changed)
    if not total:
        return None
    needs = [n for r in results if r.changed for n in r.facts.get("vendored_needs", ())]
    parts = [f"native mode: {total} site(s) call the vendored runtime instead of plain PyTorch"]
    if needs:
        top = max(needs)
        parts.append(f"{len(needs)} because their plain form needs a newer torch than {version[0]}.{version[1]}, "
                     "the oldest this project supports (its torch requirement, or --torch-version); "
                     f"--torch-version {top // 100}.{top % 100} makes them native, if the project can require "
                     f"torch>={top // 100}.{top % 100}")
    if total > len(needs):
        parts.append(f"{total - len(needs)} because no plain-PyTorch form keeps their CUDA behaviour "
                     "(each site's note says why)")
    return "; ".join(parts)
