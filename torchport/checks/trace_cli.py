"""`torchport trace -- python script.py ARGS`: run a command under DeviceOpTrace (and Audit).

The command runs in a child interpreter started with a small bootstrap
(``torchport.checks.trace._child_main``) that writes its counts to a temporary JSON file;
this process then prints the summary tables on stderr and exits with the child's code.
rich is used here only; the runtime imports with torch alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import torchport
from torchport.checks.names import BOOTSTRAP, CHILD_ENV, audit_summary  # torch-free: the child traces

_PY_OPTS_WITH_VALUE = {"-W", "-X", "-Q"}
_ONCE = ("op", "site", "all", "none")


def child_command(cmd: list[str], python: str = sys.executable) -> list[str]:
    """The argv that runs ``cmd`` under the trace bootstrap.

    ``cmd`` is ``python [opts] (script.py | -m module | -c code) ARGS...`` or just
    ``script.py ARGS...``. A bare ``python``/``python3`` means this interpreter (the one
    torchport and torch are installed in); a path is kept. Interpreter options such as ``-u`` or
    ``-X dev`` are kept. Raises ``ValueError`` for anything else (a console script, ``-`` for
    stdin), since the bootstrap must run inside a Python the trace can enter.
    """
    if not cmd:
        raise ValueError("no command given: use `torchport trace -- python script.py ARGS`")
    first = cmd[0]
    name = os.path.basename(first).lower()
    if name.startswith("python") and not name.endswith(".py"):
        interpreter, rest = (python if os.sep not in first else first), cmd[1:]
    else:
        interpreter, rest = python, list(cmd)
    opts: list[str] = []
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
        opt = rest.pop(0)
        opts.append(opt)
        if opt in _PY_OPTS_WITH_VALUE and rest:
            opts.append(rest.pop(0))
    if not rest or rest[0] == "-":
        raise ValueError("give a script, `-m module` or `-c code` to run (stdin is not supported)")
    if rest[0] in ("-m", "-c"):
        if len(rest) < 2:
            raise ValueError(f"{rest[0]} needs an argument")
        kind = "module" if rest[0] == "-m" else "code"
        target, args = rest[1], rest[2:]
    else:
        kind, target, args = "script", rest[0], rest[1:]
    return [interpreter, *opts, "-c", BOOTSTRAP, kind, target, *args]


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N -> 128+N


def _short(site: str) -> str:
    path, _, line = site.rpartition(":")
    try:
        rel = os.path.relpath(path)
        path = path if rel.startswith(os.pardir) else rel
    except ValueError:
        pass
    return f"{path}:{line}"


def _top(counts: dict[str, int], n: int) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _table(title: str, header: str, rows: list[tuple[str, int]]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(header)
    table.add_column("ops", justify="right")
    for key, n in rows:
        table.add_row(escape(key), str(n))
    return table


def print_report(result: dict[str, Any], console: Console, top: int = 10) -> None:
    """Print the child's JSON result on ``console``.

    ``result`` is ``{"trace": TraceSummary.to_dict(), "audit": [Finding.to_dict() + "text"]}``
    (``audit`` only with ``--audit``); read as plain dicts so this process needs no torch.
    """
    trace = result["trace"]
    device = trace["device"]
    console.print(
        f"[bold]torchport trace[/]: {trace['total_ops']} ops dispatched, {trace['hits']} matched on "
        f"[bold]{escape(device)}[/] (factory calls: {trace['factories']})", highlight=False,
    )
    console.print(_table("ops per device", "device", _top(trace["ops_per_device"], 1 << 30)))
    if trace["hits_per_op"]:
        console.print(_table(f"top ops on {device}", "op", _top(trace["hits_per_op"], top)))
    if trace["call_sites"]:
        sites = [(_short(site), n) for site, n in _top(trace["call_sites"], top)]
        console.print(_table("top call sites", "file:line", sites))
    for site in result.get("compiled", []):
        console.print(f"[yellow]note[/]: {escape(_short(site))} calls torch.compile: torchport trace runs it as eager "
                      "code (Dynamo does not compile under a dispatch mode), so the ops above are the eager ones; "
                      "audit compiled code with python -m torchport.checks.audit", highlight=False)
    if "audit" in result:
        findings = result["audit"]
        for finding in findings:
            console.print(escape(finding["text"]), highlight=False)
        summary = audit_summary([(f["code"], f["count"]) for f in findings])
        console.print(f"[bold]torchport audit[/]: {escape(summary)}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``trace`` command to ``app``."""

    @app.command(
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        no_args_is_help=True,
        options_metavar="[OPTIONS] -- python SCRIPT [ARGS]...",
    )
    def trace(
        ctx: typer.Context,
        device: Annotated[str, typer.Option("--device",
                                            help="Device to watch: cpu, cuda (any index), cuda:0, mps...")] = "cpu",
        include: Annotated[list[str] | None, typer.Option("--include", metavar="OP",
                                                             help="Only these ops (aten.randn.default, aten::randn, "
                                                                  "randn.default, randn); repeatable.")] = None,
        exclude: Annotated[list[str] | None, typer.Option("--exclude", metavar="OP",
                                                             help="Never these ops; repeatable.")] = None,
        audit: Annotated[bool, typer.Option("--audit", help="Also report run-time torch.cuda and CUDA-device uses "
                                                            "(TPA0x).")] = False,
        stacks: Annotated[bool, typer.Option("--stacks/--no-stacks",
                                             help="Print a report and stack per hit (see --once).")] = True,
        once: Annotated[str, typer.Option("--once", metavar="op|site|all|none",
                                          help="Print a stack once per op, per op and call site, once overall, "
                                               "or for every hit.")] = "site",
        top: Annotated[int, typer.Option("--top", min=1, help="Rows in the top-ops and call-site tables.")] = 10,
        json_out: Annotated[Path | None, typer.Option("--json", metavar="FILE",
                                                      help="Also write the summary as JSON.")] = None,
    ) -> None:
        """Run [bold]-- python script.py ARGS[/] and report the PyTorch ops that touch a device.

        Exit code: the command's own (2 if it could not be started).
        """
        console = Console(stderr=True)
        if once not in _ONCE:
            console.print(f"[red]error[/]: --once must be one of {', '.join(_ONCE)}")
            raise typer.Exit(2)
        if ctx.args and ctx.args[0].startswith("-"):
            console.print(f"[red]error[/]: unknown option {escape(ctx.args[0])}; "
                          "put the command after `--`: torchport trace -- python script.py")
            raise typer.Exit(2)
        try:
            argv = child_command(list(ctx.args))
        except ValueError as exc:
            console.print(f"[red]error[/]: {escape(str(exc))}")
            raise typer.Exit(2) from None
        with tempfile.TemporaryDirectory(prefix="torchport-trace-") as tmp:
            out = os.path.join(tmp, "trace.json")
            env = dict(os.environ)
            env[CHILD_ENV] = json.dumps({
                "device": device, "include": include or [], "exclude": exclude or [], "audit": audit,
                "stacks": stacks, "once": None if once == "none" else once, "out": out,
            })
            if audit:
                env.pop("TORCHPORT_AUDIT", None)  # one audit, reported here, not also at child exit
            root = str(Path(torchport.__file__).resolve().parent.parent)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
            try:
                proc = subprocess.Popen(argv, env=env)
            except OSError as exc:
                console.print(f"[red]error[/]: cannot run {escape(argv[0])}: {escape(str(exc))}")
                raise typer.Exit(2) from None
            while True:
                try:
                    code = _exit_code(proc.wait())
                    break
                except KeyboardInterrupt:  # the child got the SIGINT too; wait for it to finish
                    continue
            try:
                with open(out, encoding="utf-8") as fh:
                    result = json.load(fh)
            except (OSError, ValueError):
                console.print("[yellow]torchport trace[/]: the command left no trace summary "
                              "(killed, or exited through os._exit)")
                raise typer.Exit(code) from None
        if json_out is not None:
            json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print_report(result, console, top)
        raise typer.Exit(code)


__all__ = ["child_command", "print_report", "register"]
