"""The full, terminal form of the report (rich): coloured diffs, tables, the progress bar.

rich's tables, syntax highlighting and progress bar are imported where they are drawn, so that a run
whose output is concise (piped, or in CI) never loads them. Text from files and rules is escaped, so
that ``[mps]`` in a message or a file name is shown as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

from torchport.pipeline.notebooks import NotebookResult, cell_diffs, file_diff, not_migrated, text_diff
from torchport.report.formats import findings
from torchport.report.statistics import file_statistics, rule_counts
from torchport.results import FileResult


def unified_diff(result: FileResult) -> str:
    """The change to one file as a unified diff (``a/`` and ``b/`` prefixes, like git) that ``git apply``
    takes; for a notebook, the diff of its JSON file.

    Raises:
        ValueError: for a notebook whose migrated cells cannot be put back (`notebooks.render`).
    """
    if isinstance(result, NotebookResult):
        return file_diff(result)
    return text_diff(result.original or "", result.migrated or "", result.display)


def print_diff(out: Console, result: FileResult) -> None:
    """Print one file's diff: coloured when ``out`` is a terminal (a notebook's per cell, to be read), else
    as a patch (`unified_diff`). A notebook that cannot be put back gets an ``error`` and no diff."""
    try:
        if not out.is_terminal:
            out.file.write(unified_diff(result))
            out.file.flush()
            return
        diff = cell_diffs(result) if isinstance(result, NotebookResult) else unified_diff(result)
    except ValueError as exc:
        result.error = str(exc)
        return
    from rich.syntax import Syntax

    out.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))


def print_summary(err: Console, results: Sequence[FileResult], mode: str, quiet: bool = False) -> None:
    """The summary table: files, rewrites per rule, diagnostics and failures.

    Args:
        err: the stderr console.
        results: one result per file scanned.
        mode: ``"dry-run"``, ``"check"`` or ``"apply"``; says whether changes are pending or written.
        quiet: show only the diagnostics and failures.
    """
    from rich.table import Table

    from torchport.codemods.api import RULES

    changed = [r for r in results if r.changed]
    failed = [r for r in results if r.error or not_migrated(r)]
    rewrites: Counter[str] = Counter()
    for result in results:
        if not result.error:  # a file not written (read-only, say) counts no rewrite
            rewrites.update(result.rewrites)
    diagnostics = [f for r in results for f in findings(r) if not f.fix]

    if diagnostics:
        table = Table(title="Left unchanged (diagnostics)", title_justify="left", show_edge=False)
        table.add_column("code", style="yellow", no_wrap=True)
        table.add_column("location", overflow="fold")
        table.add_column("message")
        for diag in diagnostics:
            table.add_row(diag.code, escape(f"{diag.path}:{diag.cell}{diag.line}:{diag.column}"), escape(diag.message))
        err.print(table)
    for result in failed:  # one clickable `path:line:col: reason` line each, like a compiler
        if result.error:
            separator = ":" if result.error[:1].isdigit() else ": "
            err.print(f"[red]error:[/] {escape(result.display)}{separator}{escape(result.error)} "
                      "[dim](file left untouched)[/]", highlight=False, soft_wrap=True)
        for cell, line, column, reason in not_migrated(result):
            err.print(f"[red]error:[/] {escape(f'{result.display}:{cell}{line}:{column}: {reason}')}",
                      highlight=False, soft_wrap=True)
    if quiet:
        return
    if rewrites:
        table = Table(title="Rewrites per rule", title_justify="left", show_edge=False)
        table.add_column("code", style="green", no_wrap=True)
        table.add_column("rule")
        table.add_column("count", justify="right")
        for code, count in sorted(rewrites.items()):
            table.add_row(code, RULES[code].name, str(count))
        err.print(table)

    verb = {"apply": "changed", "check": "would change", "dry-run": "would change"}[mode]
    summary = Table.grid(padding=(0, 2))
    summary.add_row("files scanned", str(len(results)))
    summary.add_row(f"files {verb}", f"[green]{len(changed)}[/]" if changed else "0")
    summary.add_row("files failed", f"[red]{len(failed)}[/]" if failed else "0")
    summary.add_row("rewrites", str(sum(rewrites.values())))
    summary.add_row("diagnostics", f"[yellow]{len(diagnostics)}[/]" if diagnostics else "0")
    err.print(summary)
    if mode == "dry-run" and changed:
        err.print("[dim]Dry run: nothing was written. Run again with --apply to write these changes.[/]")


def print_statistics(err: Console, results: Sequence[FileResult]) -> None:
    """``--statistics``: counts per rule, then rewritten/reported/unreported sites per file and in total."""
    from rich.table import Table

    from torchport.codemods.api import RULES

    counts = Table(title="Statistics per rule", title_justify="left", show_edge=False)
    for column in ("code", "rule", "safety", "count"):
        counts.add_column(column, justify="right" if column == "count" else "left", no_wrap=column != "rule")
    for code, count in sorted(rule_counts(results).items()):
        counts.add_row(code, escape(RULES[code].name), RULES[code].safety, str(count))
    err.print(counts)
    files = Table(title="CUDA-specific sites", title_justify="left", show_edge=False)
    for column in ("file", "rewritten", "reported", "unreported", "accounted"):
        files.add_column(column, justify="left" if column == "file" else "right", overflow="fold")
    totals = [0, 0, 0]
    for stats in map(file_statistics, results):
        if stats.total:
            files.add_row(escape(stats.display), str(stats.rewritten), str(stats.reported),
                          str(stats.unreported), f"{stats.accounted:.1%}")
        totals = [totals[0] + stats.rewritten, totals[1] + stats.reported, totals[2] + stats.unreported]
    total = sum(totals)
    share = 1.0 if total == 0 else (totals[0] + totals[1]) / total
    files.add_row("[bold]total[/]", *map(str, totals), f"[bold]{share:.1%}[/]")
    err.print(files)


# Fewer files than this to parse finish before a bar would be worth drawing.
PROGRESS_MIN_FILES = 20


@contextmanager
def progress_bar(err: Console, total: int) -> Iterator[Callable[[], None]]:
    """A progress bar on ``err`` for ``total`` files to parse; yields ``advance()``.

    Drawn only when ``err`` is a terminal and the run is long enough; it disappears when done.
    """
    if not err.is_terminal or total < PROGRESS_MIN_FILES:
        yield lambda: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("migrating"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("migrating", total=total)
        yield lambda: bar.advance(task)
