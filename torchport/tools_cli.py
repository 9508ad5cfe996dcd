"""CLI commands that verify a port: trace, compare, verify (issue 5). Registered on the main app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
