"""What every command shares: exit codes, the usage error, plain line output."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

EXIT_OK, EXIT_PENDING, EXIT_FAILED = 0, 1, 2


def usage(err: Console, message: str) -> NoReturn:
    """Print ``error: message`` on ``err`` and exit with `EXIT_FAILED` (raises `typer.Exit`)."""
    err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)  # path:line:col unbroken
    raise typer.Exit(EXIT_FAILED)


def lines(console: Console, found: Iterator[str]) -> None:
    """Write each line of ``found`` to ``console``'s file as it is (no wrapping, no markup), then flush."""
    for line in found:
        console.file.write(line + "\n")
    console.file.flush()
