"""The one error base class the command line catches: a problem with the input, not a bug (exit 2)."""

from __future__ import annotations


class TorchportError(Exception):
    """A usage, path or configuration problem; its message is shown to the user as is."""


class UsageError(TorchportError):
    """Options or paths that do not go together (e.g. ``--output-dir`` inside the folder migrated)."""
