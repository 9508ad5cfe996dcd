"""Reading a module's source the same way on Python 3.11, 3.12 and 3.13.

`generate_tokens`: Python's tokens as CPython 3.11 gives them. From 3.12 (PEP 701) `tokenize` splits
an f-string into ``FSTRING_START``, ``FSTRING_MIDDLE``, the tokens of each replacement field and
``FSTRING_END``; 3.11 gives one ``STRING`` token for the whole literal. The token readers (leftover
CUDA sites, suppression comments, the style pass) count and wrap by the 3.11 shape, so each f-string
is joined back into one ``STRING`` token: a string, name or comment inside a replacement field is
never a token of its own. The end column of a string spanning lines is taken from its text: 3.12.1
gives a wrong one after non-ASCII characters on its first line.

`parse`: CPython's tree, printing nothing about the user's code. From 3.12 an invalid escape such as
``"\\d"`` is a `SyntaxWarning` (shown) where 3.11 gave a `DeprecationWarning` (hidden).
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Iterator

_START = getattr(tokenize, "FSTRING_START", None)  # None before 3.12: nothing to join
_END = getattr(tokenize, "FSTRING_END", None)


def generate_tokens(code: str) -> Iterator[tokenize.TokenInfo]:
    """`tokenize.generate_tokens` over ``code`` (a module's text), with each f-string one ``STRING`` token
    spanning the whole literal, prefix and quotes included, as on Python 3.11.

    Raises:
        tokenize.TokenError, SyntaxError: as `tokenize.generate_tokens` does for code it cannot tokenize
            (on 3.12+ also for some code 3.11 gives ``ERRORTOKEN`` tokens for).
    """
    lines = io.StringIO(code).readlines()
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    if _START is None:
        yield from tokens
        return
    depth, first = 0, None
    for token in tokens:
        if token.type == _START:
            depth += 1
            first = token if depth == 1 else first
        elif token.type == _END:
            depth -= 1
            if depth == 0 and first is not None:
                yield _joined(lines, first, token)
        elif depth == 0 and token.type == tokenize.STRING and token.start[0] != token.end[0]:
            yield token._replace(end=(token.end[0], len(token.string) - token.string.rfind("\n") - 1))
        elif depth == 0:
            yield token


def _joined(lines: list[str], first: tokenize.TokenInfo, last: tokenize.TokenInfo) -> tokenize.TokenInfo:
    """One ``STRING`` token from ``first`` (an ``FSTRING_START``) to ``last`` (its ``FSTRING_END``);
    positions are (1-based row, column in characters), as `tokenize` gives them."""
    (row, column), (end_row, end_column) = first.start, last.end
    spanned = lines[row - 1:end_row]
    if len(spanned) == 1:
        text = spanned[0][column:end_column]
    else:
        text = spanned[0][column:] + "".join(spanned[1:-1]) + spanned[-1][:end_column]
    return tokenize.TokenInfo(tokenize.STRING, text, first.start, last.end, "".join(spanned))


def parse(text: str) -> ast.Module | None:
    """`ast.parse` of ``text`` with its warnings silenced; None when CPython cannot parse it (a syntax error,
    syntax newer than the interpreter, nesting past CPython's limits, a null byte)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
