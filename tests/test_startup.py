"""A run the cache answers imports only what it uses: the modules a warm `migrate --check` loads, checked in a
fresh interpreter. A new import on that path fails here; move it into the function that needs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """import json, sys
from torchport.cli import main
sys.argv = ["torchport", "migrate", sys.argv[1], "--check", "--exit-zero", "-q"]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

# What a warm --check needs: the command line (each command module is small: what it runs loads on use), the
# settings, discovery, the cache and the concise report; in package mode, whether a library now needs torchport.
WARM_CHECK = {
    "torchport", "torchport.cli", "torchport.cli.common", "torchport.cli.migrate", "torchport.cli.programs",
    "torchport.cli.rules",
    "torchport.codemods", "torchport.codemods.analysis", "torchport.codemods.analysis.lacks",
    "torchport.codemods.analysis.source",
    "torchport.codemods.analysis.programs",
    "torchport.config", "torchport.emit", "torchport.emit.patterns", "torchport.emit.vendor", "torchport.errors",
    "torchport.emit.torch_version",  # the torch the project requires: no rewrite writes an API it lacks
    "torchport.model", "torchport.model.torch_facts",  # the program model's decisions come from the cache
    "torchport.model.installed",  # the cache key holds the installed torch's version
    "torchport.model.trees",  # a parent map: ast and weakref alone
    "torchport.pipeline", "torchport.pipeline.cache", "torchport.pipeline.engine", "torchport.pipeline.files",
    "torchport.pipeline.library", "torchport.pipeline.notebooks", "torchport.pipeline.programs",
    "torchport.pipeline.project",
    "torchport.pipeline.runner",
    "torchport.pipeline.writes", "torchport.report", "torchport.report.console", "torchport.report.formats",
    "torchport.report.statistics", "torchport.results", "torchport.style", "torchport.style._config",
    "torchport.style._imports", "torchport.style._wrap",
}
# Never on that path: the parser and the rules, torch, notebook validation, the checking tools.
HEAVY = ("libcst", "torch", "nbformat", "jsonschema", "torchport.codemods.api", "torchport.codemods.core",
         "torchport.checks", "torchport.runtime",
         "rich.syntax", "rich.table")

NOTEBOOK = {"cells": [{"cell_type": "code", "metadata": {}, "source": ["import torch\n", "x = torch.zeros(2).cuda()"],
                       "outputs": [], "execution_count": None}],
            "metadata": {"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}},
            "nbformat": 4, "nbformat_minor": 5}


def _modules(folder: Path, cache: Path) -> set[str]:
    env = {**os.environ, "TORCHPORT_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(folder)], capture_output=True, text=True, env=env,
                          check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (folder / "plain.py").write_text("x = 1\n")
    # a device choice: the project pass reads every file again (for what MPS lacks) on each run
    (folder / "pick.py").write_text('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n')
    (folder / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    return folder


def test_a_warm_check_imports_only_what_it_uses(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = _modules(project, cache)
    assert "libcst" in cold and "torchport.codemods" in cold  # the first run parses: the probe sees imports
    warm = _modules(project, cache)
    assert {m for m in warm if m == "torchport" or m.startswith("torchport.")} == WARM_CHECK
    assert [m for m in HEAVY if m in warm] == []


def test_the_cache_key_is_the_same_in_every_process(tmp_path: Path) -> None:
    # lint settings that name packages give sets; their order follows the per-process string hash
    (tmp_path / "setup.cfg").write_text("[isort]\nknown_third_party = numpy,scipy,yaml,tqdm,pandas,requests\n")
    (tmp_path / "m.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    code = ("import sys; from pathlib import Path; from torchport.pipeline import cache; "
            "from torchport.config import Settings; from torchport.style import style_for; "
            "p = Path(sys.argv[1]); print(cache.key(p.read_bytes(), Settings(), style_for(p)))")
    keys = {subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.py")], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(keys) == 1


def test_without_the_cli_extra_the_command_says_how_to_get_it() -> None:
    """`pip install torchport` is the runtime alone (what `--add-dependency` adds to a ported project): the command
    then names the `cli` extra instead of failing with a traceback."""
    code = "import sys; sys.modules['typer'] = None; from torchport.command import main; main()"
    done = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'torchport[cli]'" in done.stderr and "Traceback" not in done.stderr


def test_the_runtime_distribution_depends_on_nothing() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    cli = set(project["optional-dependencies"]["cli"])
    assert cli and cli <= set(project["optional-dependencies"]["test"])  # the README's install runs the CLI
