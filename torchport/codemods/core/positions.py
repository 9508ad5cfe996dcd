"""Where a node starts, computed only for the statements that hold a site.

LibCST's ``PositionProvider`` generates the code of the whole module with position tracking,
which cost a third of a migration on big files that hold one or two sites. Here the innermost
statement known to hold a node (see `_quiet.map_statements`) is generated on its own, inside its
block's indentation, and shifted to the first line CPython gives it. Without that map, the whole
module is generated once, as ``PositionProvider`` does.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from torchport.codemods.core.triggers import Anchors


class Positions:
    """Start positions of the nodes of ``module``.

    Args:
        module: the original (not transformed) LibCST tree.
        anchors: first line and indentation of statements, by ``id()``; may be empty.
    """

    def __init__(self, module: cst.Module, anchors: Anchors) -> None:
        self.module = module
        self.anchors = anchors
        self._by_statement: dict[int, tuple[int, Mapping[cst.CSTNode, CodeRange]]] = {}
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None

    def start(self, node: cst.CSTNode, statement: cst.CSTNode | None) -> CodePosition:
        """Where ``node`` starts (line from 1, column from 0); ``statement`` is the innermost
        anchored statement that holds it, or None when unknown."""
        if statement is not None and id(statement) in self.anchors:
            shift, ranges = self._by_statement.get(id(statement)) or self._generate(statement)
            found = ranges.get(node)
            if found is not None:
                return CodePosition(found.start.line + shift, found.start.column)
        if self._whole is None:
            self._whole = _ranges(self.module, self.module, ())
        return self._whole[node].start

    def _generate(self, statement: cst.CSTNode) -> tuple[int, Mapping[cst.CSTNode, CodeRange]]:
        first, indent = self.anchors[id(statement)]
        ranges = _ranges(self.module, statement, indent)
        shift = first - ranges[statement].start.line
        self._by_statement[id(statement)] = (shift, ranges)
        return shift, ranges


def _ranges(module: cst.Module, node: cst.CSTNode, indent: tuple[str, ...]) -> Mapping[cst.CSTNode, CodeRange]:
    provider = PositionProvider()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline, provider=provider
    )
    state.indent_tokens.extend(indent)
    node._codegen(state)
    return provider._computed  # type: ignore[return-value]  # the provider computed CodeRange values
