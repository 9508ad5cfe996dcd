"""CLI commands that verify a port: trace, compare, verify. Registered on the main app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the trace, compare and verify commands to ``app``."""
    from torchport.checks import compare, trace_cli, verify

    trace_cli.register(app)
    compare.register(app)
    verify.register(app)
