"""Wrap a line the port made too long, the way black and ``ruff format`` would.

Black's right-hand split: break inside the last bracket pair whose opening line fits (trying earlier
pairs when it does not), indent the contents one level, and when they still do not fit put one element
a line with a magic trailing comma. Only single physical lines with balanced brackets are wrapped.
"""

from __future__ import annotations

import io
import keyword
import tokenize

_OPEN = {"(": ")", "[": "]", "{": "}"}
_INDENT = "    "
_FSTRING = getattr(tokenize, "FSTRING_START", None)


def _tokens(fragment: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of one line's code (no indentation), or None when it is not self-contained."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(fragment + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    code = [t for t in tokens if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                                tokenize.INDENT, tokenize.DEDENT)]
    if any(t.type in (tokenize.ERRORTOKEN, _FSTRING) or t.start[0] != 1 or t.end[0] != 1 for t in code):
        return None
    depth = 0
    for t in code:
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
            if depth < 0:
                return None
    return code if depth == 0 else None


def _pairs(code: list[tokenize.TokenInfo]) -> list[tuple[int, int]]:
    """Token indices of the outermost bracket pairs."""
    pairs, depth, start = [], 0, 0
    for i, t in enumerate(code):
        if t.type != tokenize.OP:
            continue
        if t.string in _OPEN:
            if depth == 0:
                start = i
            depth += 1
        elif t.string in ")]}":
            depth -= 1
            if depth == 0:
                pairs.append((start, i))
    return pairs


def _elements(code: list[tokenize.TokenInfo], start: int, end: int, fragment: str) -> tuple[list[str], bool, bool]:
    """The comma-separated elements between tokens ``start`` and ``end``, whether a trailing comma is
    there already, and whether an element is a bare generator (which cannot take one)."""
    elements, depth, begin, generator = [], 0, code[start].end[1], False
    for t in code[start + 1: end]:
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth == 0 and t.type == tokenize.OP and t.string == ",":
            elements.append(fragment[begin: t.start[1]].strip())
            begin = t.end[1]
        elif depth == 0 and t.type == tokenize.NAME and t.string == "for":
            generator = True
    last = fragment[begin: code[end].start[1]].strip()
    trailing = not last
    if last:
        elements.append(last)
    return elements, trailing, generator


def _is_call(code: list[tokenize.TokenInfo], start: int) -> bool:
    """Whether the bracket at ``start`` follows an expression (a call or a subscript), not an operator."""
    if start == 0:
        return False
    before = code[start - 1]
    if before.type == tokenize.NAME:
        return not keyword.iskeyword(before.string) or before.string in ("None", "True", "False")
    return before.type == tokenize.STRING or (before.type == tokenize.OP and before.string in ")]}")


def wrap(line: str, limit: int) -> list[str] | None:
    """``line`` (no line ending) split into lines of at most ``limit`` characters where it can be;
    None when it cannot be split."""
    fragment = line.lstrip()
    indent = line[: len(line) - len(fragment)]
    code = _tokens(fragment)
    if not code:
        return None
    for start, end in reversed(_pairs(code)):
        head = indent + fragment[: code[start].end[1]].rstrip()
        tail = indent + fragment[code[end].start[1]:].rstrip()
        if len(head) > limit or len(tail) > limit or end == start + 1:
            continue
        inner = indent + _INDENT
        body = fragment[code[start].end[1]: code[end].start[1]].strip()
        elements, trailing, generator = _elements(code, start, end, fragment)
        if not trailing and len(inner + body) <= limit:
            return [head, inner + body, tail]
        bracket = code[start].string
        subscript = bracket == "[" and _is_call(code, start)
        if len(elements) == 1 and (generator or subscript or (bracket == "(" and not _is_call(code, start))):
            lines = [head, inner + body, tail]  # a comma would change what it means
        else:
            lines = [head, *(inner + e + "," for e in elements), tail]
        return [piece for part in lines for piece in (wrap(part, limit) if len(part) > limit else None) or [part]]
    return None
