"""The `torchport` command line (typer). Wiring only: work is in engine/files, display in report."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from torchport import __version__
from torchport.codemods import RULES
from torchport.engine import FileResult, migrate_file, write_atomic
from torchport.files import Found, PathError, discover
from torchport.report import print_diff, print_summary

app = typer.Typer(
    name="torchport",
    help="Port CUDA-only PyTorch code so it runs on CUDA, MPS, XPU or CPU.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
)

EXIT_OK, EXIT_PENDING, EXIT_FAILED = 0, 1, 2


def _version(value: bool) -> None:
    if value:
        typer.echo(f"torchport {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Show the version and exit.")] = None,
) -> None:
    """Port CUDA-only PyTorch code so it runs on CUDA, MPS, XPU or CPU."""


@app.command()
def migrate(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to migrate.", show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the diff and summary; write nothing (default).")] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Write the changes.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if any file would change.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Also print the diff with --check or --apply.")] = False,
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", metavar="GLOB",
                                                         help="Skip paths matching this gitignore-style glob (repeatable).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Worker processes; 0 means one per core.")] = 0,
) -> None:
    """Rewrite CUDA-specific code into calls of [bold]torchport.runtime[/].

    Exit codes: 0 nothing left to do or changes applied; 1 changes pending under --check;
    2 a file failed or the usage was wrong.
    """
    err = Console(stderr=True)
    out = Console()
    if sum((dry_run, apply, check)) > 1:
        err.print("[red]error:[/] --dry-run, --apply and --check exclude each other")
        raise typer.Exit(EXIT_FAILED)
    mode = "apply" if apply else "check" if check else "dry-run"
    try:
        found = list(discover(paths, exclude or ()))
    except PathError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_FAILED) from None

    results: list[FileResult] = []
    for result in _migrate_all(found, jobs or os.cpu_count() or 1):
        results.append(result)
        if not result.changed:
            continue
        if mode == "dry-run" or diff:
            print_diff(out, result)
        if mode == "check":
            err.print(f"would migrate {result.display}")
        elif mode == "apply":
            try:
                write_atomic(result.path, result.migrated or "", result.encoding)
            except (OSError, UnicodeError) as exc:
                result.error = f"cannot write: {exc}"

    print_summary(err, results, mode)
    if any(r.error for r in results):
        raise typer.Exit(EXIT_FAILED)
    if mode == "check" and any(r.changed for r in results):
        raise typer.Exit(EXIT_PENDING)


def _migrate_one(item: Found) -> FileResult:
    if item.problem:
        return FileResult(path=item.path, display=item.display, error=item.problem)
    return migrate_file(item.path, item.display)


def _migrate_all(found: Sequence[Found], jobs: int) -> Iterator[FileResult]:
    """Migrate in memory, in the order found; in worker processes when there is enough to share."""
    if jobs == 1 or len(found) < 2:
        yield from map(_migrate_one, found)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(found))) as pool:
        yield from pool.map(_migrate_one, found, chunksize=max(1, min(16, len(found) // (4 * jobs))))


@app.command()
def rules() -> None:
    """List every rule: its code, name, kind and what it does."""
    table = Table(show_edge=False)
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("summary")
    for rule in RULES.values():
        table.add_row(rule.code, rule.name, rule.kind, rule.summary)
    Console().print(table)


def main() -> None:
    """Console-script entry point."""
    app()


# Commands that verify a port (trace, compare, verify) live in their own module.
from torchport.tools_cli import register as _register_tools  # noqa: E402

_register_tools(app)
