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
    if any(t.type in (tokenize.ERRORTOKEN, _FSTRING) or t.string == ";" or t.start[0] != 1 or t.end[0] != 1
           for t in code):
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


def _elements(code: list[tokenize.TokenInfo], start: int, end: int, fragment: str) -> tuple[list[str], bool]:
    """The comma-separated elements between tokens ``start`` and ``end``, and whether a trailing comma
    is there already (black's magic trailing comma)."""
    elements, depth, begin = [], 0, code[start].end[1]
    for t in code[start + 1: end]:
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth == 0 and t.type == tokenize.OP and t.string == ",":
            elements.append(fragment[begin: t.start[1]].strip())
            begin = t.end[1]
    last = fragment[begin: code[end].start[1]].strip()
    trailing = not last
    if last:
        elements.append(last)
    return elements, trailing


# black's delimiter priorities (linegen's brackets.py): a split happens at the highest one present.
_COMMA, _TERNARY, _LOGIC, _COMPARATOR, _DOT = 18, 16, 14, 10, 1
_MATH = {"|": 9, "^": 8, "&": 7, "<<": 6, ">>": 6, "+": 5, "-": 5, "*": 4, "/": 4, "//": 4, "%": 4, "@": 4, "**": 1}
_COMPARE = {"<", ">", "==", ">=", "<=", "!=", "in", "not", "is"}
_COMPARE_EQ = {"==", "<=", ">=", "!="}
_HEADS = {"return", "if", "elif", "while", "del"}


def _operand_end(t: tokenize.TokenInfo) -> bool:
    """Whether ``t`` can end an operand (so an operator after it is binary)."""
    if t.type == tokenize.NAME:
        return not keyword.iskeyword(t.string) or t.string in ("None", "True", "False")
    return t.type in (tokenize.NUMBER, tokenize.STRING) or t.string in ")]}"


def _value(code: list[tokenize.TokenInfo]) -> tuple[int, int] | None:
    """Token indices ``[start, end)`` of the value black wraps in invisible parentheses: the right side
    of one ``=`` (or an augmented one), or what follows ``return``/``if``/``elif``/``while``/``del``."""
    end = len(code) - 1 if code[-1].string == ":" else len(code)
    if code[0].type == tokenize.NAME and code[0].string in _HEADS:
        return (1, end) if end > 1 else None
    depth, found = 0, []
    for i, t in enumerate(code):
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth == 0 and t.type == tokenize.OP and t.string.endswith("=") and t.string not in _COMPARE_EQ:
            found.append(i)
    return (found[0] + 1, len(code)) if len(found) == 1 and found[0] + 1 < len(code) else None


def _delimiters(code: list[tokenize.TokenInfo], start: int, end: int) -> list[tuple[int, int]]:
    """``(priority, index)`` of each depth-0 delimiter in ``code[start:end]``; a split goes before the
    token at ``index`` (after it for a comma)."""
    depth, found = 0, []
    for i in range(start, end):
        t, previous = code[i], code[i - 1]
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth or i == start:
            continue
        elif t.string == ",":
            found.append((_COMMA, i))
        elif t.type == tokenize.NAME and t.string in ("if", "else"):
            found.append((_TERNARY, i))
        elif t.type == tokenize.NAME and t.string in ("and", "or"):
            found.append((_LOGIC, i))
        elif t.string in _COMPARE and _operand_end(previous):
            found.append((_COMPARATOR, i))  # `not in` and `is not` split before their first word
        elif t.type == tokenize.OP and t.string in _MATH and _operand_end(previous):
            found.append((_MATH[t.string], i))
        elif t.string == "." and previous.string in ")]}":
            found.append((_DOT, i))
    return found


def _keeps_parens(code: list[tokenize.TokenInfo], start: int, end: int, limit: int, indent: str,
                  found: list[tuple[int, int]]) -> bool:
    """Black's ``can_omit_invisible_parens``, negated: whether the value is split inside its own
    parentheses rather than at its last bracket."""
    top = max(p for p, _ in found)
    count = sum(p == top for p, _ in found)
    if count > 1:
        return True
    if top == _DOT:
        return False  # a single method call after a bracket
    if code[end - 1].string in ")]}" and code[end - 2].string not in _OPEN:
        opener, depth = end - 1, 0
        for i in range(end - 1, start - 1, -1):
            depth += code[i].string in ")]}"
            depth -= code[i].string in _OPEN
            if depth == 0:
                opener = i
                break
        brackets_before = any(t.string in _OPEN for t in code[start:opener])
        return not (brackets_before or len(indent) + code[opener].end[1] <= limit)
    return True


def _optional_parens(fragment: str, indent: str, code: list[tokenize.TokenInfo], limit: int) -> list[str] | None:
    """The value split inside black's invisible parentheses made visible, when black would: ``x = (`` /
    the value, or split at its delimiters one part a line / ``)``."""
    span = _value(code)
    if span is None or any(t.type == tokenize.COMMENT or t.string == "lambda" for t in code):
        return None
    start, end = span
    pairs = [p for p in _pairs(code) if p[0] == start]
    if pairs and pairs[0][1] == end - 1:
        return None  # already in brackets of its own
    found = _delimiters(code, start, end)
    if not found or not _keeps_parens(code, start, end, limit, indent, found):
        return None
    inner = indent + _INDENT
    begin, stop = code[start].start[1], code[end - 1].end[1]
    head = indent + fragment[:begin].rstrip() + " ("
    tail = indent + ")" + fragment[stop:].rstrip()
    value = fragment[begin:stop].strip()
    if len(inner + value) <= limit:
        return [head, inner + value, tail]
    top = max(p for p, _ in found)
    if top == _COMMA:
        cuts = [begin, *(code[i].end[1] for p, i in found if p == top), stop]
        parts = [fragment[a:b].strip().rstrip(",") for a, b in zip(cuts, cuts[1:])]
        parts = [inner + part + "," for part in parts if part]
    else:
        cuts = [begin, *(code[i].start[1] for p, i in found if p == top), stop]
        parts = [inner + fragment[a:b].strip() for a, b in zip(cuts, cuts[1:])]
    return [head, *parts, tail]


def wrap(line: str, limit: int) -> list[str] | None:
    """``line`` (no line ending) split into lines of at most ``limit`` characters where it can be;
    None when it cannot be split."""
    fragment = line.lstrip()
    indent = line[: len(line) - len(fragment)]
    code = _tokens(fragment)
    if not code:
        return None
    parenthesized = _optional_parens(fragment, indent, code, limit)
    if parenthesized is not None:
        return _again(parenthesized, limit)
    for start, end in reversed(_pairs(code)):
        head = indent + fragment[: code[start].end[1]].rstrip()
        tail = indent + fragment[code[end].start[1]:].rstrip()
        if len(head) > limit or len(tail) > limit or end == start + 1:
            continue
        inner = indent + _INDENT
        body = fragment[code[start].end[1]: code[end].start[1]].strip()
        elements, trailing = _elements(code, start, end, fragment)
        if not trailing and len(inner + body) <= limit:
            return [head, inner + body, tail]
        if len(elements) == 1 and not trailing:
            lines = [head, inner + body, tail]  # one element: split inside it, no comma (black's rhs)
        else:
            lines = [head, *(inner + e + "," for e in elements), tail]
        return _again(lines, limit)
    return None


def _again(lines: list[str], limit: int) -> list[str]:
    """``lines`` with each one still too long wrapped in turn."""
    return [piece for part in lines for piece in (wrap(part, limit) if len(part) > limit else None) or [part]]
