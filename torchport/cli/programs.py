"""`torchport programs PATH...`: the preflight: one row per program, where it runs once ported, and why not.

The files are read and migrated in memory as `torchport migrate --dry-run` does (through the same cache), so a
row can count the rewrites its program takes; nothing is written.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from torchport.cli.common import lines, usage
from torchport.cli.migrate import open_cache, read_settings
from torchport.errors import TorchportError
from torchport.pipeline import runner
from torchport.pipeline.files import check_paths, discover

# The width of a table written to a pipe or file: wide enough that no row is folded.
_PIPED_WIDTH = 10_000


class ProgramsFormat(str, Enum):
    full = "full"
    concise = "concise"
    json = "json"


def programs(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders of the project.", show_default=False)],
    output_format: Annotated[ProgramsFormat | None, typer.Option(
        "--output-format", "--format", help="full (a table; the default on a terminal), concise (a line per "
        "program; the default elsewhere) or json.", show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", metavar="GLOB", help="Skip paths matching this gitignore-style glob (repeatable).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Worker processes; 0 means one per core.")] = 0,
    config_file: Annotated[Path | None, typer.Option("--config", help="A pyproject.toml to read "
                                                     "\\[tool.torchport] from (default: the nearest one).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
) -> None:
    """Tell which programs can run where once ported: one row per script, test module, notebook or library
    module, with the devices it runs on and what keeps it off the others (file:line).

    Exit codes: 0 the report was made; 2 the usage was wrong.
    """
    from torchport.pipeline.programs import programs as find_programs  # loads the analysis (and LibCST)

    err, out = Console(stderr=True), Console()
    if not out.is_terminal:  # piped: a table as wide as its rows, not cut to 80 columns
        out = Console(width=_PIPED_WIDTH)
    try:
        if any(str(p) == "-" for p in paths):
            raise TorchportError("- (standard input) holds no project: give files or folders")
        check_paths(paths)
        settings = read_settings(paths[0], config_file, None, None, False, None)
        found = list(discover(paths, exclude or (), (settings.root, settings.exclude)))
    except TorchportError as exc:
        usage(err, str(exc))
    results = runner.run(found, settings, jobs=jobs, cache=open_cache(paths, no_cache, False))
    root = paths[0] if len(paths) == 1 and paths[0].is_dir() else Path.cwd()
    made = find_programs(results, root)
    fmt = output_format or (ProgramsFormat.full if out.is_terminal else ProgramsFormat.concise)
    if fmt == ProgramsFormat.json:
        out.file.write(json.dumps({"programs": [p.as_json() for p in made]}, indent=2) + "\n")
    elif fmt == ProgramsFormat.concise:
        lines(out, (f"{p.path}: {p.kind}: {p.verdict(every=True)}; {p.rewrites} rewrite(s)" for p in made))
    else:
        from rich.table import Table

        table = Table(show_edge=False)
        for column in ("program", "kind", "runs on", "what keeps it off the others", "rewrites"):
            table.add_column(column, overflow="fold")
        for p in made:
            kept = "\n".join(escape(reason) for reason in p.reasons(every=True))
            table.add_row(escape(p.path), p.kind, ", ".join(p.runs_on), kept, str(p.rewrites))
        out.print(table)
    failed = sum(1 for r in results if r.error)
    err.file.write(f"torchport: {len(made)} program(s) in {len(results)} file(s)"
                   + (f"; {failed} file(s) could not be read" if failed else "") + "\n")

