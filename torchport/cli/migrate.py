"""`torchport migrate`: its options, read group by group (`Mode`, `Output`, the settings), and the run.

Exit codes: `EXIT_OK`, `EXIT_PENDING` (``--check`` with changes pending), `EXIT_FAILED`; 128+N on signal N.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import Enum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from torchport import config
from torchport.cli.common import EXIT_FAILED, EXIT_PENDING, lines, usage
from torchport.emit.vendor import MODULE_NAME
from torchport.errors import TorchportError, UsageError
from torchport.pipeline import cache as cache_module
from torchport.pipeline import runner, writes
from torchport.pipeline.files import Found, check_paths, discover
from torchport.pipeline.notebooks import not_migrated
from torchport.report import formats
from torchport.report.console import print_diff, print_statistics, print_summary, progress_bar, unified_diff
from torchport.results import FileResult, check_fails

if TYPE_CHECKING:
    from torchport.report import baseline as baselines

VENDORED_FILE = f"{MODULE_NAME}.py"


class OutputFormat(str, Enum):
    full = "full"
    concise = "concise"
    json = "json"
    sarif = "sarif"
    github = "github"
    text = "text"  # the default before --output-format: full on a terminal, concise elsewhere


@dataclass(frozen=True)
class Mode:
    """What the run does: ``name`` is ``dry-run``, ``apply`` (also with ``--output-dir``) or ``check``.

    Args:
        name: the mode.
        diff: ``--diff``: also print the diff with ``--check`` or ``--apply``.
        exit_zero: ``--exit-zero``: exit 0 with changes pending.
        allow_dirty: ``--allow-dirty``: rewrite files with uncommitted changes.
        output_dir: ``--output-dir``: write a migrated copy there instead.
        baseline: ``--baseline``: report and fail only on findings this baseline file does not hold.
        write_baseline: ``--write-baseline``: record today's findings in this file (and write nothing else).
    """

    name: str
    diff: bool
    exit_zero: bool
    allow_dirty: bool
    output_dir: Path | None
    baseline: Path | None = None
    write_baseline: Path | None = None

    @classmethod
    def read(cls, err: Console, *, dry_run: bool, apply: bool, check: bool, diff: bool, output_dir: Path | None,
             allow_dirty: bool, exit_zero: bool, baseline: Path | None = None,
             write_baseline: Path | None = None) -> Mode:
        """The mode the options ask for; a usage error (exit 2) when they exclude each other."""
        if sum((dry_run, apply, check)) > 1:
            usage(err, "--dry-run, --apply and --check exclude each other")
        if output_dir is not None and (dry_run or check):
            usage(err, "--output-dir writes a migrated copy: it excludes --dry-run and --check")
        if (baseline or write_baseline) and (apply or output_dir is not None):
            usage(err, "--baseline and --write-baseline read the findings: they exclude --apply and --output-dir")
        if baseline and write_baseline:
            usage(err, "--baseline and --write-baseline exclude each other (--write-baseline starts it afresh)")
        name = "apply" if apply or output_dir is not None else "check" if check else "dry-run"
        return cls(name, diff, exit_zero, allow_dirty, output_dir, baseline, write_baseline)


@dataclass(frozen=True)
class Output:
    """How the run reports: the format (``text`` resolved), ``--statistics``, ``--quiet``, and whether
    diffs are printed (``shows_diff``)."""

    fmt: OutputFormat
    statistics: bool
    quiet: bool
    shows_diff: bool

    @classmethod
    def read(cls, out: Console, output_format: OutputFormat | None, *, statistics: bool, quiet: bool,
             mode: Mode) -> Output:
        """``text`` (the default) is ``full`` on a terminal and ``concise`` elsewhere."""
        fmt = output_format or OutputFormat.text
        if fmt == OutputFormat.text:
            fmt = OutputFormat.full if out.is_terminal else OutputFormat.concise
        shows_diff = (fmt in (OutputFormat.full, OutputFormat.concise) and not statistics
                      and (mode.name == "dry-run" or mode.diff))
        return cls(fmt, statistics, quiet, shows_diff)


def migrate(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to migrate; - reads one file from standard "
                                                     "input and writes the result to standard output.",
                                                show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run",
                                          help="Show the diff and summary; write nothing (default).")] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Write the changes.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if a rewrite is pending or a "
                                                         "finding other than an info note remains.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Also print the diff with --check or --apply.")] = False,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", metavar="GLOB", help="Skip paths matching this gitignore-style glob (repeatable).")] = None,
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
    show_statistics: Annotated[bool, typer.Option(
        "--statistics", help="Print only counts per rule and the share of sites accounted for.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q",
                                        help="Print findings, diffs and errors, nothing else.")] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when --check finds something "
                                                                "(failures still exit 2).")] = False,
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", metavar="FILE", help="Report and fail only on findings this baseline does not hold; "
        "its entries that match nothing any more (fixed) fail too, until it is written again.")] = None,
    write_baseline: Annotated[Path | None, typer.Option(
        "--write-baseline", metavar="FILE", help="Record today's findings in FILE (a JSON baseline for "
        "--baseline) and exit; writes nothing else.")] = None,
    stdin_filename: Annotated[str | None, typer.Option(
        "--stdin-filename", metavar="PATH", help="The name of the file read from standard input "
        "(for the config, per-file ignores, reports, .ipynb).")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="A pyproject.toml to read "
                                                        "\\[tool.torchport] from (default: the nearest one).")] = None,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="With --apply, also rewrite files that have "
                                                                    "uncommitted changes in git.")] = False,
    output_dir: Annotated[Path | None, typer.Option(
        "--output-dir", metavar="DIR", help="Write a migrated copy of the whole folder to DIR (which "
        "must not exist or be empty); the source is left untouched.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache "
                                                              "(.torchport_cache/, or $TORCHPORT_CACHE_DIR).")] = False,
    runtime: Annotated[str | None, typer.Option("--runtime", metavar="package|vendor|native",
                                                   help="How runtime calls are written: the torchport package "
                                                        "(default), a generated copy vendored into the project, "
                                                        "or plain PyTorch.")] = None,
    vendor_path: Annotated[Path | None, typer.Option(
        "--vendor-path", metavar="PATH", help="Where the vendored runtime goes (a .py file or a "
        "folder); default: beside scripts, inside packages.")] = None,
    add_dependency: Annotated[bool, typer.Option(
        "--add-dependency", help="When the ported code is an installable package (package mode), add torchport "
        "to its dependencies in pyproject.toml, setup.py or setup.cfg.")] = False,
    torch_version: Annotated[str | None, typer.Option(
        "--torch-version", metavar="X.Y", help="Oldest torch native output must run on (default: "
        "the project's torch requirement, else the installed torch).")] = None,
) -> None:
    """Rewrite CUDA-specific code into calls of [bold]torchport.runtime[/].

    Exit codes: 0 nothing left to do or changes applied; 1 under --check, a rewrite pending or a finding that
    is not an info note; 2 a file (or notebook cell) failed, a path is bad, or the usage was wrong; 128+N when
    interrupted by signal N (130 for Ctrl-C).
    """
    err, out = Console(stderr=True), Console()
    mode = Mode.read(err, dry_run=dry_run, apply=apply, check=check, diff=diff, output_dir=output_dir,
                     allow_dirty=allow_dirty, exit_zero=exit_zero, baseline=baseline, write_baseline=write_baseline)
    output = Output.read(out, output_format, statistics=show_statistics, quiet=quiet, mode=mode)
    try:
        stdin, named = _inputs(paths, stdin_filename, mode)
        if not stdin:
            check_paths(paths)
        start = named or (Path.cwd() if stdin else paths[0])
        settings = read_settings(start, config_file, select, ignore, unsafe_fixes, target)
        settings = _runtime_settings(settings, start, runtime, vendor_path, torch_version)
        if stdin:
            _migrate_stdin(err, named, settings, mode, output.fmt)
            return
        if mode.output_dir is not None:
            writes.check_output_dir(paths, mode.output_dir)
        found = list(discover(paths, exclude or (), (settings.root, settings.exclude)))
        if settings.runtime != "package":
            from torchport.pipeline import vendoring  # the copy's place: decided from every file

            settings = vendoring.place(settings, [f.path for f in found if f.problem is None])
    except TorchportError as exc:
        usage(err, str(exc))
    cache = open_cache(paths, no_cache, mode.output_dir is not None)
    results, copy_problems = _run(out, err, paths, found, settings, mode, output, jobs, cache, add_dependency)
    results.sort(key=lambda r: r.display)  # as ruff: findings by path, then position
    if mode.write_baseline is not None:
        _write_baseline(err, mode.write_baseline, results, output.quiet)
    applied = _read_baseline(err, mode.baseline, results) if mode.baseline is not None else None
    if applied is not None:
        results = applied.results

    root = paths[0] if len(paths) == 1 and paths[0].is_dir() else Path.cwd()
    _report(out, err, results, mode.name, output, root, cache, read=[f.display for f in found])
    if applied is not None:
        _report_baseline(err, mode.baseline, applied, output.quiet)
    for library in (r for r in results if any(d.code == "TP210" for d in r.diagnostics)):
        if not output.quiet and output.fmt not in (OutputFormat.json, OutputFormat.sarif):
            err.print(f"note: {escape(library.diagnostics[0].message)}", highlight=False)
    if settings.runtime == "native" and not output.quiet and output.fmt not in (OutputFormat.json, OutputFormat.sarif):
        from torchport.emit.torch_version import fallback_note

        note = fallback_note(results, settings.torch_version)
        if note is not None:
            err.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)
    for problem in copy_problems:
        err.print(f"[red]error:[/] {escape(problem)}", highlight=False)
    if mode.output_dir is not None and not output.quiet:
        err.print(f"migrated copy written to {escape(str(mode.output_dir))}; {escape(str(paths[0]))} is untouched",
                  highlight=False)
    if copy_problems or any(r.error or not_migrated(r) for r in results):
        raise typer.Exit(EXIT_FAILED)
    if mode.name == "check" and not mode.exit_zero and (check_fails(results) or (applied and applied.stale)):
        raise typer.Exit(EXIT_PENDING)


def _write_baseline(err: Console, path: Path, results: list[FileResult], quiet: bool) -> None:
    """``--write-baseline``: record the findings, say how many, and stop (exit 2 if a file failed)."""
    from torchport.report import baseline as baselines  # only with --write-baseline

    try:
        count = baselines.write(path, results)
    except baselines.BaselineError as exc:
        usage(err, str(exc))
    lines(err, formats.error_lines(results))
    if not quiet:
        err.print(f"torchport: {count} finding(s) recorded in {escape(str(path))}; "
                  f"check against it with --check --baseline {escape(str(path))}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_FAILED if any(r.error or not_migrated(r) for r in results) else 0)


def _read_baseline(err: Console, path: Path, results: list[FileResult]) -> baselines.Applied:
    """``--baseline``: the run less the findings the baseline holds (a usage error when it cannot be read)."""
    from torchport.report import baseline as baselines  # only with --baseline

    try:
        return baselines.apply(baselines.read(path), path, results)
    except baselines.BaselineError as exc:
        usage(err, str(exc))


def _report_baseline(err: Console, path: Path | None, applied: baselines.Applied, quiet: bool) -> None:
    """The stale entries, one line each, and a count of the findings the baseline held (unless quiet)."""
    for entry, count in applied.stale:
        times = f" ({count}x)" if count > 1 else ""
        err.file.write(f"{entry.path}: stale baseline entry{times}: {entry.code} `{entry.text}` is fixed\n")
    if applied.stale:
        err.file.write(f"torchport: {len(applied.stale)} baseline entry(ies) match nothing any more: "
                       f"run with --write-baseline {path} to drop them\n")
    elif not quiet:
        err.file.write(f"torchport: {applied.known} finding(s) are in the baseline {path}.\n")
    err.file.flush()


def _inputs(paths: list[Path], stdin_filename: str | None, mode: Mode) -> tuple[bool, Path | None]:
    """The paths given: ``(whether standard input is read, the name it is given or None)``.

    Raises:
        UsageError: ``-`` beside other paths, or with ``--output-dir``.
    """
    stdin = [str(p) for p in paths] == ["-"]
    if "-" in map(str, paths) and not stdin:
        raise UsageError("- (standard input) cannot be given with other paths")
    if stdin and mode.output_dir is not None:
        raise UsageError("- (standard input) cannot be migrated with --output-dir")
    return stdin, Path(stdin_filename) if stdin and stdin_filename else None


def _run(out: Console, err: Console, paths: list[Path], found: list[Found], settings: config.Settings, mode: Mode,
         output: Output, jobs: int, cache: cache_module.Cache | None,
         add_dependency: bool = False) -> tuple[list[FileResult], list[str]]:
    """Migrate ``found``, show the diffs, write what ``mode`` asks for: ``(results, problems of the copy)``.

    Raises:
        typer.Exit: 128 + N when signal N interrupts the run (every file is wholly old or wholly new).
    """
    written: list[FileResult] = []
    copy_problems: list[str] = []
    with _signals_interrupt() as interrupted:
        try:
            bar = partial(progress_bar, err) if err.is_terminal else None
            results = runner.run(found, settings, jobs=jobs, cache=cache, progress=bar)
            generated = [] if settings.runtime == "package" else _vendored(results, settings, paths, mode)
            results += generated
            if settings.runtime == "package":
                from torchport.pipeline.library import dependency_result  # a library needs torchport then

                library = dependency_result(results, add_dependency)
                generated += [library] if library is not None else []
                results += [library] if library is not None else []
            refused = any(r.error for r in generated)  # then nothing is written: the files would not run
            changed = [r for r in results if r.changed]
            if mode.name == "apply" and mode.output_dir is None and not mode.allow_dirty:
                _refuse_dirty(err, [r for r in changed if r.path.name != VENDORED_FILE])
            for result in changed:
                if output.shows_diff:
                    print_diff(out, result)
                if mode.name == "check" and output.fmt == OutputFormat.full and not (output.quiet or output.statistics):
                    err.print(f"would migrate {escape(result.display)}", highlight=False)
            if refused:
                pass
            elif mode.output_dir is not None:
                try:
                    copy_problems = writes.write_tree(paths[0], mode.output_dir, results)
                except (OSError, ValueError) as exc:
                    usage(err, f"cannot write the migrated copy to {mode.output_dir}: {exc}; nothing was written")
            elif mode.name == "apply":
                writes.write_in_place(paths, changed, written, also=[r.path for r in generated])
                _note_outside_git(err, written, output.quiet)
        except KeyboardInterrupt:
            signum = interrupted[0] if interrupted else signal.SIGINT
            done = (f"{len(written)} file(s) had been written, the others are untouched" if written
                    else "nothing was written")
            err.print(f"[red]interrupted[/] ({signal.Signals(signum).name}): {done}; every file is either "
                      "wholly old or wholly new.", highlight=False)
            raise typer.Exit(128 + signum) from None
    return results, copy_problems


def _vendored(results: list[FileResult], settings: config.Settings, paths: list[Path], mode: Mode) -> list[FileResult]:
    """The vendored runtime the migrated files import (`torchport.pipeline.vendoring`), or why it cannot be
    written (then nothing is)."""
    from torchport.pipeline import vendoring

    return vendoring.vendored_results(results, settings.vendor_path,
                                      paths[0] if mode.output_dir is not None else None, settings.vendor_scripts)


def _report(out: Console, err: Console, results: Sequence[FileResult], mode: str, output: Output, root: Path,
            cache: cache_module.Cache | None = None, read: Sequence[str] | None = None) -> None:
    """Print the run's report in ``fmt``: machine formats and ``--statistics`` alone on stdout; the concise
    findings on stdout, or on stderr when stdout carries the diff; summaries on stderr. ``read``: the displays of
    the files the run read, in its order (`_print_programs`)."""
    fmt, quiet, shows_diff = output.fmt, output.quiet, output.shows_diff
    if output.statistics:
        if fmt == OutputFormat.full:
            print_statistics(out, results)
        else:
            lines(out, formats.statistics_lines(results))
        return
    if fmt in (OutputFormat.json, OutputFormat.sarif):
        render = formats.to_sarif if fmt == OutputFormat.sarif else formats.to_json
        out.file.write(render(results, root, mode) + "\n")
        return
    if fmt == OutputFormat.github:
        lines(out, formats.github_lines(results, root, mode))
    elif fmt == OutputFormat.concise:
        lines(err if shows_diff else out, formats.concise_lines(results, mode))
        lines(err, formats.error_lines(results))
    if fmt == OutputFormat.full:
        print_summary(err, results, mode, quiet=quiet)
    elif not quiet:
        err.file.write(formats.summary_line(results, mode) + "\n")
    if not quiet and fmt in (OutputFormat.full, OutputFormat.concise):
        _print_programs(err, results, root, cache, read)


_PROGRAMS_SHOWN = 12


def _print_programs(err: Console, results: Sequence[FileResult], root: Path,
                    cache: cache_module.Cache | None = None, read: Sequence[str] | None = None) -> None:
    """One line per program whose files the run changes: where it runs once ported (`torchport programs`). The
    model reads every file of the run (seconds on a big project): the lines are cached under all files' text."""
    if not any(r.changed for r in results):
        return
    digest = hashlib.sha256(f"{cache_module.fingerprint()}\0{root.resolve()}".encode())  # a new rule: new lines
    for result in results:
        digest.update(f"\0{result.display}\0{result.changed}\0".encode() + (result.original or "").encode()
                      + b"\0" + (result.migrated or "").encode())
    key = digest.hexdigest()
    cached = cache.get_decisions(key) if cache is not None else None
    if cached is not None:
        shown = json.loads(cached.get("lines", "[]"))
    else:
        from torchport.pipeline.programs import programs

        # the files as the run read them, in its order, without what it generated (the runtime, a dependency
        # added to a setup.py it also read, which comes after the file read): the run's model of them is reused
        first = {r.display: r for r in reversed(results)}
        ran = [first[display] for display in read if display in first] if read is not None else list(results)
        changed = [p for p in programs(ran, root) if p.kind != "library" and any(ran[i].changed for i in p.reached)]
        shown = [f"programs changed: {len(changed)}"] if changed else []  # plain lines, never wrapped
        shown += [f"  {p.path} ({p.kind}): {p.verdict()}; {p.rewrites} rewrite(s)" for p in changed[:_PROGRAMS_SHOWN]]
        if len(changed) > _PROGRAMS_SHOWN:
            shown.append(f"  ... and {len(changed) - _PROGRAMS_SHOWN} more: `torchport programs` lists them all")
        if cache is not None:
            cache.put_decisions(key, {"lines": json.dumps(shown)})
    if shown:
        err.file.write("\n".join(shown) + "\n")


def _migrate_stdin(err: Console, named: Path | None, settings: config.Settings, mode: Mode,
                   fmt: OutputFormat) -> None:
    """``-``: one file from standard input; the migrated source (or with --check, nothing; with --diff, the
    diff) on standard output, the findings on standard error."""
    data = sys.stdin.buffer.read()
    display = str(named) if named else "-"
    result = runner.run_bytes(data, named or Path("-.py"), display, settings)
    diff, exit_zero = mode.diff, mode.exit_zero
    if fmt == OutputFormat.full:
        print_summary(err, [result], mode.name, quiet=True)
    else:
        lines(err, formats.concise_lines([result], mode.name))
        lines(err, formats.error_lines([result]))
    stdout = sys.stdout.buffer
    if diff or mode.name == "check":
        if diff and result.changed:
            try:
                stdout.write(unified_diff(result).encode())
            except ValueError as exc:  # a notebook whose cells cannot be put back
                result.error = str(exc)
                err.print(f"[red]error:[/] {escape(display)}: {escape(result.error)}", highlight=False, soft_wrap=True)
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
    if not_migrated(result):
        raise typer.Exit(EXIT_FAILED)
    if mode.name == "check" and check_fails([result]) and not exit_zero:
        raise typer.Exit(EXIT_PENDING)


def _runtime_settings(settings: config.Settings, root: Path, runtime: str | None, vendor_path: Path | None,
                      torch_version: str | None) -> config.Settings:
    """``--runtime``, ``--vendor-path`` and ``--torch-version`` over the config; the torch version
    defaults to the project's requirement (`torchport.emit.torch_version`)."""
    if runtime is not None and runtime not in config.RUNTIMES:
        raise UsageError(f"--runtime must be one of {', '.join(config.RUNTIMES)}")
    version = config.parse_version(torch_version) if torch_version else settings.torch_version
    runtime = runtime or settings.runtime
    if version == (0, 0):  # the project's own requirement: no rewrite writes an API its torch lacks
        from torchport.emit.torch_version import declared_torch_version, project_torch_version

        version = project_torch_version(root) if runtime == "native" else declared_torch_version(root) or (0, 0)
    settings = replace(settings, runtime=runtime,
                       vendor_path=str(vendor_path.absolute()) if vendor_path else settings.vendor_path,
                       torch_version=version)
    return settings


def open_cache(paths: Sequence[Path], no_cache: bool, copy: bool) -> cache_module.Cache | None:
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


def _note_outside_git(err: Console, written: Sequence[FileResult], quiet: bool) -> None:
    """One line when files were rewritten that no git work tree holds (``cargo fix`` asks for --allow-no-vcs)."""
    from torchport.pipeline import gitstate  # only when --apply wrote something

    outside = gitstate.outside_git([r.path for r in written]) if written and not quiet else []
    if outside:
        err.print(f"note: {len(outside)} file(s) written are not under version control (git); there is no "
                  "committed copy to go back to", highlight=False, soft_wrap=True)


def _refuse_dirty(err: Console, changed: Sequence[FileResult]) -> None:
    """Stop before writing anything when a file to rewrite has uncommitted changes (as ``cargo fix`` does)."""
    from torchport.pipeline import gitstate  # only when --apply writes in place

    try:
        dirty = gitstate.dirty_files([r.path for r in changed])
    except gitstate.GitError as exc:
        usage(err, f"cannot tell whether the files to rewrite have uncommitted changes: {exc}\n"
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


def read_settings(start: Path, config_file: Path | None, select: list[str] | None,
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


