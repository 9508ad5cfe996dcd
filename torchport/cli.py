"""The `torchport` command line (typer). Wiring only: work is in engine/files, display in report."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from torchport import __version__
from torchport import config, formats, statistics
from torchport.codemods import RULES
from torchport.codemods._registry import check_patterns
from torchport.engine import FileResult, migrate_file, write_atomic
from torchport.files import Found, PathError, discover
from torchport.report import print_diff, print_statistics, print_summary

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


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"


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
    select: Annotated[Optional[list[str]], typer.Option("--select", metavar="CODES",
                                                        help="Only these rule codes or prefixes (TP0,TP101; ALL).")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option("--ignore", metavar="CODES",
                                                        help="Skip these rule codes or prefixes.")] = None,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply unsafe rewrites.")] = False,
    target: Annotated[Optional[str], typer.Option("--target", metavar="mps,xpu,cpu",
                                                  help="Backends to report per-target problems for (or none).")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="Report format on stdout.")] = OutputFormat.text,
    show_statistics: Annotated[bool, typer.Option("--statistics",
                                                  help="Counts per rule and the share of sites accounted for.")] = False,
    config_file: Annotated[Optional[Path], typer.Option("--config", help="A pyproject.toml to read "
                                                        "[tool.torchport] from (default: the nearest one).")] = None,
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
        settings = _settings(paths, config_file, select, ignore, unsafe_fixes, target)
        found = list(discover(paths, (*settings.exclude, *(exclude or ()))))
    except (PathError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_FAILED) from None
    text = output_format == OutputFormat.text

    results: list[FileResult] = []
    for result in _migrate_all(found, jobs or os.cpu_count() or 1, settings):
        results.append(result)
        if not result.changed:
            continue
        if text and (mode == "dry-run" or diff):
            print_diff(out, result)
        if mode == "check":
            err.print(f"would migrate {result.display}")
        elif mode == "apply":
            try:
                write_atomic(result.path, result.migrated or "", result.encoding)
            except (OSError, UnicodeError) as exc:
                result.error = f"cannot write: {exc}"

    print_summary(err, results, mode)
    if show_statistics:
        print_statistics(err, results)
    if not text:
        render = formats.to_sarif if output_format == OutputFormat.sarif else formats.to_json
        root = paths[0] if len(paths) == 1 and paths[0].is_dir() else Path.cwd()
        out.file.write(render(results, root, mode) + "\n")
    if any(r.error for r in results):
        raise typer.Exit(EXIT_FAILED)
    if mode == "check" and any(r.changed for r in results):
        raise typer.Exit(EXIT_PENDING)


def _codes(values: list[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    return tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())


def _settings(paths: Sequence[Path], config_file: Path | None, select: list[str] | None,
              ignore: list[str] | None, unsafe_fixes: bool, target: str | None) -> config.Settings:
    """``[tool.torchport]`` (from ``--config`` or the nearest pyproject.toml), then the CLI on top."""
    if config_file is not None and not config_file.is_file():
        raise ValueError(f"{config_file}: no such file")
    settings = config.load(config_file or config.find_pyproject(paths[0]))
    settings = replace(
        settings,
        select=_codes(select) if select is not None else settings.select,
        ignore=_codes(ignore) if ignore is not None else settings.ignore,
        unsafe_fixes=settings.unsafe_fixes or unsafe_fixes,
        targets=config.parse_targets(target) if target is not None else settings.targets,
    )
    check_patterns(settings.select + settings.ignore)
    return settings


def _migrate_one(item: Found, settings: config.Settings) -> FileResult:
    if item.problem:
        return FileResult(path=item.path, display=item.display, error=item.problem)
    return migrate_file(item.path, item.display, settings)


def _migrate_all(found: Sequence[Found], jobs: int, settings: config.Settings) -> Iterator[FileResult]:
    """Migrate in memory, in the order found; in worker processes when there is enough to share."""
    one = functools.partial(_migrate_one, settings=settings)
    if jobs == 1 or len(found) < 2:
        yield from map(one, found)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(found))) as pool:
        yield from pool.map(one, found, chunksize=max(1, min(16, len(found) // (4 * jobs))))


@app.command()
def rules() -> None:
    """List every rule: its code, name, safety class and what it does."""
    table = Table(show_edge=False)
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("safety", no_wrap=True)
    table.add_column("summary")
    for rule in RULES.values():
        table.add_row(rule.code, rule.name, rule.safety + (f" ({rule.effort})" if rule.effort else ""), rule.summary)
    Console().print(table)


@app.command()
def explain(code: Annotated[str, typer.Argument(help="A rule code, e.g. TP007.")]) -> None:
    """Show one rule: what it does, its safety class, and an example."""
    rule = RULES.get(code.strip().upper())
    if rule is None:
        Console(stderr=True).print(f"[red]error:[/] unknown rule {code!r}; `torchport rules` lists them")
        raise typer.Exit(EXIT_FAILED)
    console = Console()
    console.print(f"[bold]{rule.code}[/] {rule.name}  ({rule.kind}, {rule.safety}"
                  + (f", effort {rule.effort}" if rule.effort else "") + ")", highlight=False)
    console.print(rule.summary, highlight=False)
    console.print("\n[dim]before:[/]")
    console.print(f"    {rule.before}", highlight=False, markup=False)
    if rule.after:
        console.print("[dim]after:[/]")
        console.print(f"    {rule.after}", highlight=False, markup=False)
    if rule.safety == "unsafe":
        console.print("\nApplied only with --unsafe-fixes; otherwise the site is reported.")


def main() -> None:
    """Console-script entry point."""
    app()


# Commands that verify a port (trace, compare, verify) live in their own module.
from torchport.tools_cli import register as _register_tools  # noqa: E402

_register_tools(app)
