"""The `torchport` command line (typer). Wiring only: work is in engine/files, display in report."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from torchport import __version__, config
from torchport.emit.torch_version import project_torch_version
from torchport.emit.vendor import MODULE_NAME, vendored_results
from torchport.errors import TorchportError, UsageError
from torchport.pipeline import cache as cache_module
from torchport.pipeline import gitstate, runner, writes
from torchport.pipeline.files import discover
from torchport.report import formats
from torchport.report.console import (
    print_diff,
    print_statistics,
    print_summary,
    progress_bar,
    unified_diff,
)
from torchport.results import FileResult

VENDORED_FILE = f"{MODULE_NAME}.py"

_app = typer.Typer(  # migrate, rules, explain; `app` adds the checking tools
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


@_app.callback()
def _main(
    version: Annotated[bool | None, typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Show the version and exit.")] = None,
) -> None:
    """Port CUDA-only PyTorch code so it runs on CUDA, MPS, XPU or CPU."""


class OutputFormat(str, Enum):
    full = "full"
    concise = "concise"
    json = "json"
    sarif = "sarif"
    github = "github"
    text = "text"  # the default before --output-format: full on a terminal, concise elsewhere


@_app.command()
def migrate(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to migrate; - reads one file from standard "
                                                     "input and writes the result to standard output.",
                                                show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the diff and summary; write nothing (default).")] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Write the changes.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if any file would change.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Also print the diff with --check or --apply.")] = False,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", metavar="GLOB",
                                                         help="Skip paths matching this gitignore-style glob (repeatable).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Worker processes; 0 means one per core.")] = 0,
    select: Annotated[list[str] | None, typer.Option("--select", metavar="CODES",
                                                        help="Only these rule codes or prefixes (TP0,TP101; ALL); "
                                                             "replaces the config's select and ignore.")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", metavar="CODES",
                                                        help="Skip these rule codes or prefixes.")] = None,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply unsafe rewrites.")] = False,
    target: Annotated[str | None, typer.Option("--target", metavar="mps,xpu,cpu",
                                                  help="Backends to report per-target problems for (or none).")] = None,
    output_format: Annotated[OutputFormat | None, typer.Option(
        "--output-format", "--format", help="full (rich; the default on a terminal), concise (one "
        "path:line:col: TPnnn line per finding; the default elsewhere), json, sarif or github (workflow "
        "annotations).", show_default=False)] = None,
    show_statistics: Annotated[bool, typer.Option("--statistics",
                                                  help="Print only counts per rule and the share of sites accounted for.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print findings, diffs and errors, nothing else.")] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when changes are pending "
                                                                "(failures still exit 2).")] = False,
    stdin_filename: Annotated[str | None, typer.Option("--stdin-filename", metavar="PATH",
                                                          help="The name of the file read from standard input "
                                                               "(for the config, per-file ignores, reports, .ipynb).")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="A pyproject.toml to read "
                                                        "[tool.torchport] from (default: the nearest one).")] = None,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="With --apply, also rewrite files that have "
                                                                    "uncommitted changes in git.")] = False,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", metavar="DIR",
                                                       help="Write a migrated copy of the whole folder to DIR (which "
                                                            "must not exist or be empty); the source is left untouched.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache "
                                                              "(.torchport_cache/, or $TORCHPORT_CACHE_DIR).")] = False,
    runtime: Annotated[str | None, typer.Option("--runtime", metavar="package|vendor|native",
                                                   help="How runtime calls are written: the torchport package "
                                                        "(default), a generated copy vendored into the project, "
                                                        "or plain PyTorch.")] = None,
    vendor_path: Annotated[Path | None, typer.Option("--vendor-path", metavar="PATH",
                                                        help="Where the vendored runtime goes (a .py file or a "
                                                             "folder); default: beside scripts, inside packages.")] = None,
    torch_version: Annotated[str | None, typer.Option("--torch-version", metavar="X.Y",
                                                         help="Oldest torch native output must run on (default: "
                                                              "the project's torch requirement, else the installed torch).")] = None,
) -> None:
    """Rewrite CUDA-specific code into calls of [bold]torchport.runtime[/].

    Exit codes: 0 nothing left to do or changes applied; 1 changes pending under --check;
    2 a file failed or the usage was wrong; 128+N when interrupted by signal N (130 for Ctrl-C).
    """
    err = Console(stderr=True)
    out = Console()
    if sum((dry_run, apply, check)) > 1:
        _usage(err, "--dry-run, --apply and --check exclude each other")
    if output_dir is not None and (dry_run or check):
        _usage(err, "--output-dir writes a migrated copy: it excludes --dry-run and --check")
    mode = "apply" if apply or output_dir is not None else "check" if check else "dry-run"
    fmt = output_format or OutputFormat.text
    if fmt == OutputFormat.text:
        fmt = OutputFormat.full if out.is_terminal else OutputFormat.concise
    stdin = [str(p) for p in paths] == ["-"]
    try:
        if "-" in map(str, paths) and not stdin:
            raise UsageError("- (standard input) cannot be given with other paths")
        if stdin and output_dir is not None:
            raise UsageError("- (standard input) cannot be migrated with --output-dir")
        named = Path(stdin_filename) if stdin and stdin_filename else None
        settings = _settings(named or (Path.cwd() if stdin else paths[0]), config_file, select, ignore,
                             unsafe_fixes, target)
        settings = _runtime_settings(settings, named or (Path.cwd() if stdin else paths[0]), runtime, vendor_path,
                                     torch_version)
        if stdin:
            _migrate_stdin(err, named, settings, mode, diff, fmt, exit_zero)
            return
        if output_dir is not None:
            writes.check_output_dir(paths, output_dir)
        found = list(discover(paths, exclude or (), (settings.root, settings.exclude)))
    except TorchportError as exc:
        _usage(err, str(exc))
    cache = _open_cache(paths, no_cache, output_dir is not None)

    written: list[FileResult] = []
    copy_problems: list[str] = []
    shows_diff = fmt in (OutputFormat.full, OutputFormat.concise) and not show_statistics and (mode == "dry-run" or diff)
    with _signals_interrupt() as interrupted:
        try:
            bar = partial(progress_bar, err) if err.is_terminal else None
            results = runner.run(found, settings, jobs=jobs, cache=cache, progress=bar)
            if settings.runtime != "package":
                results += vendored_results(results, settings.vendor_path)
            changed = [r for r in results if r.changed]
            if mode == "apply" and output_dir is None and not allow_dirty:
                _refuse_dirty(err, [r for r in changed if r.path.name != VENDORED_FILE])
            for result in changed:
                if shows_diff:
                    print_diff(out, result)
                if mode == "check" and fmt == OutputFormat.full and not (quiet or show_statistics):
                    err.print(f"would migrate {escape(result.display)}", highlight=False)
            if output_dir is not None:
                try:
                    copy_problems = writes.write_tree(paths[0], output_dir, results)
                except (OSError, ValueError) as exc:
                    _usage(err, f"cannot write the migrated copy to {output_dir}: {exc}; nothing was written")
            elif mode == "apply":
                writes.write_in_place(paths, changed, written)
        except KeyboardInterrupt:
            signum = interrupted[0] if interrupted else signal.SIGINT
            done = (f"{len(written)} file(s) had been written, the others are untouched" if written
                    else "nothing was written")
            err.print(f"[red]interrupted[/] ({signal.Signals(signum).name}): {done}; every file is either "
                      "wholly old or wholly new.", highlight=False)
            raise typer.Exit(128 + signum) from None

    root = paths[0] if len(paths) == 1 and paths[0].is_dir() else Path.cwd()
    _report(out, err, results, mode, fmt, root, show_statistics=show_statistics, quiet=quiet, shows_diff=shows_diff)
    for problem in copy_problems:
        err.print(f"[red]error:[/] {escape(problem)}", highlight=False)
    if output_dir is not None and not quiet:
        err.print(f"migrated copy written to {escape(str(output_dir))}; {escape(str(paths[0]))} is untouched",
                  highlight=False)
    if copy_problems or any(r.error for r in results):
        raise typer.Exit(EXIT_FAILED)
    if mode == "check" and any(r.changed for r in results) and not exit_zero:
        raise typer.Exit(EXIT_PENDING)


def _report(out: Console, err: Console, results: Sequence[FileResult], mode: str, fmt: OutputFormat, root: Path, *,
            show_statistics: bool, quiet: bool, shows_diff: bool) -> None:
    """Print the run's report in ``fmt``: machine formats and ``--statistics`` alone on stdout; the concise
    findings on stdout, or on stderr when stdout carries the diff; summaries on stderr."""
    if show_statistics:
        if fmt == OutputFormat.full:
            print_statistics(out, results)
        else:
            _lines(out, formats.statistics_lines(results))
        return
    if fmt in (OutputFormat.json, OutputFormat.sarif):
        render = formats.to_sarif if fmt == OutputFormat.sarif else formats.to_json
        out.file.write(render(results, root, mode) + "\n")
        return
    if fmt == OutputFormat.github:
        _lines(out, formats.github_lines(results, root, mode))
    elif fmt == OutputFormat.concise:
        _lines(err if shows_diff else out, formats.concise_lines(results, mode))
        _lines(err, formats.error_lines(results))
    if fmt == OutputFormat.full:
        print_summary(err, results, mode, quiet=quiet)
    elif not quiet:
        err.file.write(formats.summary_line(results, mode) + "\n")


def _lines(console: Console, lines: Iterator[str]) -> None:
    for line in lines:
        console.file.write(line + "\n")
    console.file.flush()


def _migrate_stdin(err: Console, named: Path | None, settings: config.Settings, mode: str, diff: bool,
                   fmt: OutputFormat, exit_zero: bool) -> None:
    """``-``: one file from standard input; the migrated source (or with --check, nothing; with --diff, the
    diff) on standard output, the findings on standard error."""
    data = sys.stdin.buffer.read()
    display = str(named) if named else "-"
    result = runner.run_bytes(data, named or Path("-.py"), display, settings)
    if fmt == OutputFormat.full:
        print_summary(err, [result], mode, quiet=True)
    else:
        _lines(err, formats.concise_lines([result], mode))
        _lines(err, formats.error_lines([result]))
    stdout = sys.stdout.buffer
    if diff or mode == "check":
        if diff and result.changed:
            stdout.write(unified_diff(result).encode())
    elif result.changed:
        try:
            stdout.write(writes.output_text(result).encode(result.encoding))
        except ValueError as exc:
            result.error = str(exc)
            stdout.write(data)
    else:
        stdout.write(data)  # unchanged, or failed: the input passes through as it was
    stdout.flush()
    if result.error:
        raise typer.Exit(EXIT_FAILED)
    if mode == "check" and result.changed and not exit_zero:
        raise typer.Exit(EXIT_PENDING)


def _runtime_settings(settings: config.Settings, root: Path, runtime: str | None, vendor_path: Path | None,
                      torch_version: str | None) -> config.Settings:
    """``--runtime``, ``--vendor-path`` and ``--torch-version`` over the config; the torch version
    defaults to the project's requirement (`torchport.emit.torch_version`)."""
    if runtime is not None and runtime not in config.RUNTIMES:
        raise UsageError(f"--runtime must be one of {', '.join(config.RUNTIMES)}")
    version = config.parse_version(torch_version) if torch_version else settings.torch_version
    runtime = runtime or settings.runtime
    settings = replace(settings, runtime=runtime,
                       vendor_path=str(vendor_path.absolute()) if vendor_path else settings.vendor_path,
                       torch_version=version if version != (0, 0) or runtime != "native" else project_torch_version(root))
    return settings


def _usage(err: Console, message: str) -> NoReturn:
    err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)  # path:line:col unbroken
    raise typer.Exit(EXIT_FAILED)


def _open_cache(paths: Sequence[Path], no_cache: bool, copy: bool) -> cache_module.Cache | None:
    """The run's cache; a migrated copy leaves the source untouched, so it has one only in $TORCHPORT_CACHE_DIR."""
    if no_cache or (copy and not os.environ.get(cache_module.ENV_VAR)):
        return None
    return cache_module.Cache.open(cache_module.default_folder(list(paths)))


@contextmanager
def _signals_interrupt() -> Iterator[list[int]]:
    """While migrating, SIGTERM and SIGHUP stop the run as Ctrl-C does (cleanly, between two files).

    Yields a list that receives the number of the signal that arrived.
    """
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous: dict[int, object] = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread: keep the defaults
            break
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)  # type: ignore[arg-type]


def _refuse_dirty(err: Console, changed: Sequence[FileResult]) -> None:
    """Stop before writing anything when a file to rewrite has uncommitted changes (as ``cargo fix`` does)."""
    try:
        dirty = gitstate.dirty_files([r.path for r in changed])
    except gitstate.GitError as exc:
        _usage(err, f"cannot tell whether the files to rewrite have uncommitted changes: {exc}\n"
                    "Commit them first, or run again with --allow-dirty.")
    if not dirty:
        return
    shown = {r.path: r.display for r in changed}
    err.print(f"[red]error:[/] {len(dirty)} file(s) to rewrite have uncommitted changes; nothing was written:",
              highlight=False)
    for path in dirty:
        err.print(f"  {escape(shown.get(path, str(path)))}", highlight=False)
    err.print("Commit or stash them first, or run again with --allow-dirty "
              "(--dry-run shows what would change).", highlight=False)
    raise typer.Exit(EXIT_FAILED)


def _codes(values: list[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    return tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())


def _settings(start: Path, config_file: Path | None, select: list[str] | None,
              ignore: list[str] | None, unsafe_fixes: bool, target: str | None) -> config.Settings:
    """``[tool.torchport]`` (from ``--config`` or the nearest pyproject.toml to ``start``), then the CLI on top."""
    if config_file is not None and not config_file.is_file():
        raise UsageError(f"{config_file}: no such file")
    settings = config.load(config_file or config.find_pyproject(start))
    settings = config.with_command_line(settings, _codes(select), _codes(ignore), unsafe_fixes,
                                        config.parse_targets(target) if target is not None else None)
    if settings.select or settings.ignore or settings.per_file_ignores:
        from torchport.codemods.core.registry import (
            check_patterns,  # loads the rules: only when codes are named
        )

        try:
            check_patterns(settings.select + settings.ignore
                           + tuple(c for _, codes in settings.per_file_ignores for c in codes))
        except ValueError as exc:
            raise config.ConfigError(str(exc)) from None
    return settings


@_app.command()
def rules() -> None:
    """List every rule: its code, name, safety class and what it does."""
    from rich.table import Table

    table = Table(show_edge=False)
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("safety", no_wrap=True)
    table.add_column("summary")
    from torchport.codemods import RULES

    for rule in RULES.values():
        table.add_row(rule.code, escape(rule.name), rule.safety + (f" ({rule.effort})" if rule.effort else ""),
                      escape(rule.summary))
    Console().print(table)


@_app.command()
def explain(code: Annotated[str, typer.Argument(help="A rule code or name, e.g. TP007 or is-cuda.")]) -> None:
    """Show one rule: what it does, its safety class, and an example."""
    from torchport.codemods import RULES

    wanted = code.strip().lower().replace("_", "-")
    rule = RULES.get(code.strip().upper()) or next(
        (r for r in RULES.values() if r.name.lower().replace("_", "-") == wanted), None)
    if rule is None:
        Console(stderr=True).print(f"[red]error:[/] unknown rule {escape(repr(code))}; `torchport rules` lists them",
                                   highlight=False)
        raise typer.Exit(EXIT_FAILED)
    console = Console()
    console.print(f"[bold]{rule.code}[/] {escape(rule.name)}  ({rule.kind}, {rule.safety}"
                  + (f", effort {rule.effort}" if rule.effort else "") + ")", highlight=False)
    console.print(escape(rule.summary), highlight=False)
    console.print("\n[dim]before:[/]")
    console.print(f"    {rule.before}", highlight=False, markup=False)
    if rule.after:
        console.print("[dim]after:[/]")
        console.print(f"    {rule.after}", highlight=False, markup=False)
    if rule.safety == "unsafe":
        console.print("\nApplied only with --unsafe-fixes; otherwise the site is reported.")


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:2] in (["migrate"], ["rules"], ["explain"]):
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
