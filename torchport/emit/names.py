"""`dotted_name`, the LibCST name helper that the renderers share with the rules."""

from __future__ import annotations

import libcst as cst


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a chain of Name/Attribute nodes, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None
