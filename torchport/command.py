"""The `torchport` console script. The command line needs the `cli` extra; `pip install torchport` alone is the
runtime a ported project imports, so without the extra the command says how to get it instead of a traceback."""

from __future__ import annotations

import sys

# What the command line imports that the runtime does not (the `cli` extra of pyproject.toml).
_CLI_MODULES = frozenset({"libcst", "typer", "rich", "pathspec", "nbformat", "click"})


def main() -> None:
    """Run the command line (`torchport.cli.main`).

    Raises:
        SystemExit: 2, with a message naming the `cli` extra, when a module of the command line is missing.
    """
    try:
        from torchport.cli import main as run
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".", 1)[0] not in _CLI_MODULES:
            raise
        print(f"torchport: the command line needs {exc.name}, which `pip install torchport` (the runtime alone) "
              "does not install: pip install 'torchport[cli]'", file=sys.stderr)
        raise SystemExit(2) from None
    run()
