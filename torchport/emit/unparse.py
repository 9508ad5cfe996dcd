"""`ast.unparse` as Python 3.11 writes it, on every supported version.

From 3.12 (PEP 701) `ast.unparse` writes an f-string's fields with the f-string's own quotes
(``f'{d['k']}'``), which Python 3.11 and older cannot parse. Code torchport writes from an unparse
must run where the project runs, so `unparse` writes f-strings as 3.11 did (``f"{d['k']}"``): a
quote the fields use is not the f-string's, and a field holds no backslash.
"""

from __future__ import annotations

import ast
import sys
from typing import Any


def unparse(node: ast.AST) -> str:
    """``node`` as source text, exactly as Python 3.11's `ast.unparse` writes it (CPython's own there).

    Falls back to the running Python's `ast.unparse` for an f-string 3.11 could not write (a backslash
    in a field: code that only parses from 3.12).
    """
    if sys.version_info < (3, 12):
        return ast.unparse(node)
    try:
        return _Unparser311().visit(node)
    except ValueError:
        return ast.unparse(node)


class _Unparser311(ast._Unparser):  # type: ignore[name-defined]  # 3.11's f-string methods, over 3.12+'s
    """Python 3.11's f-string writing (its ``visit_JoinedStr``, ``visit_FormattedValue``), on 3.12+."""

    def __init__(self, avoid_backslashes: bool = False) -> None:
        super().__init__()
        self._no_backslashes = avoid_backslashes  # inside a field: strings avoid backslashes

    def _write_constant(self, value: Any) -> None:
        if self._no_backslashes and isinstance(value, str):
            self._write_str_avoiding_backslashes(value)
        else:
            super()._write_constant(value)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.write("f")
        if self._no_backslashes:
            with self.buffered() as buffer:
                self._write_fstring_inner(node)
            self._write_str_avoiding_backslashes("".join(buffer))
            return
        parts = []
        for value in node.values:
            with self.buffered() as buffer:
                self._write_fstring_inner(value)
            parts.append(("".join(buffer), isinstance(value, ast.Constant)))
        written, quotes, fallback = [], list(ast._ALL_QUOTES), False  # type: ignore[attr-defined]
        for text, constant in parts:
            text, usable = self._str_literal_helper(text, quote_types=quotes, escape_special_whitespace=constant)
            written.append(text)
            if set(usable).isdisjoint(quotes):
                fallback = True
                break
            quotes = usable
        if fallback:  # no quote fits every part: repr's escapes in triple single quotes
            quotes = ["'''"]
            written = [repr('"' + text)[2:-1] for text, _ in parts]
        self.write(f"{quotes[0]}{''.join(written)}{quotes[0]}")

    def _write_fstring_inner(self, node: ast.AST, *_: Any, **__: Any) -> None:
        if isinstance(node, ast.JoinedStr):  # the f-string itself, or a format spec
            for value in node.values:
                self._write_fstring_inner(value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.write(node.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(node, ast.FormattedValue):
            self.visit_FormattedValue(node)
        else:
            raise ValueError(f"Unexpected node inside JoinedStr, {node!r}")

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        inner = _Unparser311(avoid_backslashes=True)
        inner.set_precedence(ast._Precedence.TEST.next(), node.value)  # type: ignore[attr-defined]
        with self.delimit("{", "}"):
            expr = inner.visit(node.value)
            if "\\" in expr:
                raise ValueError("Unable to avoid backslash in f-string expression part")
            if expr.startswith("{"):
                self.write(" ")  # "{ {" : not an escaped brace
            self.write(expr)
            if node.conversion != -1:
                self.write(f"!{chr(node.conversion)}")
            if node.format_spec:
                self.write(":")
                self._write_fstring_inner(node.format_spec)
