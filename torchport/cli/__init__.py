"""The `torchport` command line (typer): one module per command; the checking tools register their own.

Wiring only: the work is in `torchport.pipeline`, the display in `torchport.report`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from torchport import __version__
from torchport.cli.migrate import migrate
from torchport.cli.programs import programs
from torchport.cli.rules import explain, rules

_app = typer.Typer(  # migrate, rules, explain; `app` adds the checking tools
    name="torchport",
    help="Port CUDA-only PyTorch code so it runs on CUDA, MPS, XPU or CPU.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"torchport {__version__}")
        raise typer.Exit()


@_app.callback()
def _main(
    version: Annotated[bool | None, typer.Option("--version", callback=_version, is_eager=True,
                                                 help="Show the version and exit.")] = None,
) -> None:
    """Port CUDA-only PyTorch code so it runs on CUDA, MPS, XPU or CPU."""


_app.command()(migrate)
_app.command()(programs)
_app.command()(rules)
_app.command()(explain)


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:2] in (["migrate"], ["programs"], ["rules"], ["explain"]):
        _app()  # the checking tools (trace, compare, verify) and their imports are not needed: start faster
    else:
        _full_app()()


def _full_app() -> typer.Typer:
    """The command line with the commands that check a port (trace, compare, verify) added, once."""
    if "verify" not in {c.name or c.callback.__name__ for c in _app.registered_commands if c.callback}:
        from torchport.checks.commands import register

        register(_app)
    return _app


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # `from torchport.cli import app`: every command
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
