"""Where a node starts, computed only for the top-level statements that hold a site.

LibCST's ``PositionProvider`` generates the code of the whole module with position tracking,
which cost a third of a migration on big files that hold one or two sites. Here each top-level
statement is generated on its own when one of its nodes is asked for, and shifted by the lines
before it; the lines before each statement come from one plain code generation of the module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

_NEWLINE = re.compile(r"\r\n|\r|\n")


class Positions:
    """Start positions of the nodes of ``module``, whose source is ``source``.

    Args:
        module: the original (not transformed) LibCST tree.
        source: the text it was parsed from.
    """

    def __init__(self, module: cst.Module, source: str) -> None:
        self.module = module
        self.source = source
        self._lines_before: dict[int, int] | None = None
        self._by_statement: dict[int, Mapping[cst.CSTNode, CodeRange]] = {}
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None

    def start(self, node: cst.CSTNode, statement: cst.CSTNode | None) -> CodePosition:
        """Where ``node`` starts (line from 1, column from 0); ``statement`` is the top-level
        statement that holds it, or None when unknown."""
        lines_before = self._offsets()
        if statement is not None and lines_before is not None and id(statement) in lines_before:
            ranges = self._by_statement.get(id(statement))
            if ranges is None:
                ranges = self._by_statement[id(statement)] = _generate(self.module, statement)
            found = ranges.get(node)
            if found is not None:
                return CodePosition(found.start.line + lines_before[id(statement)], found.start.column)
        if self._whole is None:
            self._whole = _generate(self.module, self.module)
        return self._whole[node].start

    def _offsets(self) -> dict[int, int] | None:
        """Lines before each top-level statement; None when the pieces do not add up to the source."""
        if self._lines_before is None:
            module = self.module
            text = "".join(module.code_for_node(line) for line in module.header)
            offsets: dict[int, int] = {}
            pieces = [text]
            lines = len(_NEWLINE.findall(text))
            for statement in module.body:
                offsets[id(statement)] = lines
                code = module.code_for_node(statement)
                pieces.append(code)
                lines += len(_NEWLINE.findall(code))
            prefix = "".join(pieces)
            self._lines_before = offsets if self.source.startswith(prefix) else {}
        return self._lines_before or None


def _generate(module: cst.Module, node: cst.CSTNode) -> Mapping[cst.CSTNode, CodeRange]:
    provider = PositionProvider()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline, provider=provider
    )
    node._codegen(state)
    return provider._computed
