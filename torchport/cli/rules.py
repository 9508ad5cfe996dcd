"""`torchport rules` and `torchport explain`: the rule registry, for people."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from torchport.cli.common import EXIT_FAILED, lines


class RulesFormat(str, Enum):
    full = "full"
    concise = "concise"
    json = "json"


def rules(
    output_format: Annotated[RulesFormat | None, typer.Option(
        "--output-format", "--format", help="full (a table; the default on a terminal), concise (one "
        "tab-separated line per rule: code, name, safety, summary; the default elsewhere) or json.",
        show_default=False)] = None,
) -> None:
    """List every rule: its code, name, safety class and what it does."""
    from torchport.codemods.api import RULES

    console = Console()
    fmt = output_format or (RulesFormat.full if console.is_terminal else RulesFormat.concise)
    if fmt == RulesFormat.json:
        rows = [{"code": r.code, "name": r.name, "kind": r.kind, "safety": r.safety, "effort": r.effort,
                 "summary": r.summary, "before": r.before, "after": r.after or None} for r in RULES.values()]
        console.file.write(json.dumps(rows, indent=2) + "\n")
        return
    if fmt == RulesFormat.concise:  # one line per rule, never wrapped: for grep, cut and less
        lines(console, (f"{r.code}\t{r.name}\t{r.safety}{f' ({r.effort})' if r.effort else ''}\t{r.summary}"
                        for r in RULES.values()))
        return
    from rich.table import Table

    table = Table(show_edge=False)
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("safety", no_wrap=True)
    table.add_column("summary")
    for rule in RULES.values():
        table.add_row(rule.code, escape(rule.name), rule.safety + (f" ({rule.effort})" if rule.effort else ""),
                      escape(rule.summary))
    console.print(table)


def explain(code: Annotated[str, typer.Argument(help="A rule code or name (TP007, is-cuda), or a reason id (R03)")]
            ) -> None:
    """Show one rule (what it does, its safety class, an example) or one reason code is left as written."""
    from torchport.codemods.api import RULES
    from torchport.codemods.core.reasons import BY_ID

    reason = BY_ID.get(code.strip().upper()) or next((r for r in BY_ID.values() if r.slug == code.strip().lower()),
                                                     None)
    if reason is not None:
        console = Console(soft_wrap=True)
        console.print(f"[bold]{reason.id}[/] {escape(reason.slug)}  (a reason code is left as written; TP110)",
                      highlight=False)
        console.print(escape(reason.sentence), highlight=False)
        console.print("\n[dim]left as written:[/]")
        _code(console, reason.example)
        return

    wanted = code.strip().lower().replace("_", "-")
    rule = RULES.get(code.strip().upper()) or next(
        (r for r in RULES.values() if r.name.lower().replace("_", "-") == wanted), None)
    if rule is None:
        Console(stderr=True).print(f"[red]error:[/] unknown rule {escape(repr(code))}; `torchport rules` lists them",
                                   highlight=False)
        raise typer.Exit(EXIT_FAILED)
    console = Console(soft_wrap=True)  # lines whole when piped; a terminal wraps them itself
    console.print(f"[bold]{rule.code}[/] {escape(rule.name)}  ({rule.kind}, {rule.safety}"
                  + (f", effort {rule.effort}" if rule.effort else "") + ")", highlight=False)
    console.print(escape(rule.summary), highlight=False)
    console.print("\n[dim]before:[/]" if rule.after else "\n[dim]reported:[/]")
    _code(console, rule.before)
    if rule.after:
        console.print("[dim]after:[/]")
        _code(console, rule.after)
    if rule.safety == "unsafe":
        console.print("\n" + escape(rule.safety_note or "Applied only with --unsafe-fixes; otherwise the site is "
                                     "reported."), highlight=False)
    if rule.code == "TP110":
        console.print("\nEach note names its reason (`[R03 cuda-gate]`): `torchport explain R03` shows one, "
                      "docs/reasons.md lists them all.", highlight=False, markup=False)


def _code(console: Console, code: str) -> None:
    """Print ``code`` indented, every line of it, as it is (no markup, no highlighting)."""
    for line in code.splitlines():
        console.print(f"    {line}", highlight=False, markup=False)
