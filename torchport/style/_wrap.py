"""Wrap a line the port made too long, the way black and ``ruff format`` would.

Black's right-hand split: break inside the last bracket pair whose opening line fits (trying earlier
pairs when it does not), indent the contents one level, and when they still do not fit put one element
a line with a magic trailing comma. Only single physical lines with balanced brackets are wrapped.
"""

from __future__ import annotations

import keyword
import tokenize

from torchport.codemods.analysis.source import generate_tokens

_OPEN = {"(": ")", "[": "]", "{": "}"}
_INDENT = "    "


def _tokens(fragment: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of one line's code (no indentation), or None when it is not self-contained."""
    try:
        tokens = list(generate_tokens(fragment + "\n"))
    except (tokenize.TokenError, SyntaxError):
        return None
    code = [t for t in tokens if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                                tokenize.INDENT, tokenize.DEDENT)]
    if any(t.type == tokenize.ERRORTOKEN or t.string == ";" or t.start[0] != 1 or t.end[0] != 1
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
    commas = [i for p, i in _delimiters(code, start + 1, end) if p == _COMMA]
    cuts = [code[start].end[1], *(code[i].end[1] for i in commas), code[end].start[1]]
    elements = [fragment[a:b].strip().removesuffix(",").strip() for a, b in zip(cuts, cuts[1:])]
    trailing = code[end - 1].string == "," and end - 1 > start
    return [e for e in elements if e], trailing


# black's delimiter priorities (linegen's brackets.py): a split happens at the highest one present.
_COMPREHENSION, _COMMA, _TERNARY, _LOGIC, _COMPARATOR, _DOT = 20, 18, 16, 14, 10, 1
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
    token at ``index`` (after it for a comma). Commas in a lambda's parameters or a ``for`` target are not."""
    depth, found, in_comprehension, binding = 0, [], False, None
    for i in range(start, end):
        t, previous = code[i], code[i - 1]
        if t.type == tokenize.OP and t.string in _OPEN:
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth or i == start:
            continue
        elif binding is not None:  # inside `lambda ...:` or `for ... in`
            if t.string == binding:
                binding = None
        elif t.string == "lambda":
            binding = ":"
        elif t.string == "," and i < end - 1:
            found.append((_COMMA, i))
        elif t.type == tokenize.NAME and t.string in ("for", "async") and previous.string != "async":
            found.append((_COMPREHENSION, i))
            in_comprehension, binding = True, "in"
        elif t.type == tokenize.NAME and t.string == "if" and in_comprehension:
            found.append((_COMPREHENSION, i))
        elif t.type == tokenize.NAME and t.string in ("if", "else"):
            found.append((_TERNARY, i))
        elif t.type == tokenize.NAME and t.string in ("and", "or"):
            found.append((_LOGIC, i))
        elif t.string in _COMPARE and _operand_end(previous) and not (t.string == "in" and previous.string == "not"):
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
    pairs = [p for p in _pairs(code) if start <= p[0] and p[1] < end]
    if pairs and pairs[0][0] == start and len(indent) + len(_text(code, pairs[0][1], end)) <= limit:
        return False  # black splits inside the brackets the value starts with
    subscript = pairs and code[pairs[-1][0]].string == "[" and _operand_end(code[pairs[-1][0] - 1])
    if pairs and pairs[-1][1] == end - 1 and pairs[-1][0] != end - 2 and not subscript:
        opener = pairs[-1][0]
        brackets_before = len(pairs) > 1
        return not (brackets_before or len(indent) + code[opener].end[1] <= limit)
    return True


def _text(code: list[tokenize.TokenInfo], first: int, end: int) -> str:
    return " ".join(t.string for t in code[first:end])  # only its length matters


def _split_at(fragment: str, indent: str, code: list[tokenize.TokenInfo], found: list[tuple[int, int]],
              begin: int, stop: int) -> list[str] | None:
    """``fragment[begin:stop]`` split at its highest-priority delimiters, one part a line at ``indent``
    (black's delimiter split); a comma split ends with a trailing comma. None when it gives one part."""
    top = max(p for p, _ in found)
    if top == _DOT and sum(p == _DOT for p, _ in found) < 2:
        return None  # "splitting a single attribute from its parent looks wrong"
    if top == _COMMA:
        cuts = [begin, *(code[i].end[1] for p, i in found if p == top), stop]
        parts = [fragment[a:b].strip() for a, b in zip(cuts, cuts[1:])]
        parts = [part if part.endswith(",") else part + "," for part in parts if part.strip(",")]
    else:
        cuts = [begin, *(code[i].start[1] for p, i in found if p == top), stop]
        parts = [fragment[a:b].strip() for a, b in zip(cuts, cuts[1:])]
    return [indent + part for part in parts] if len(parts) > 1 else None


def _optional_parens(fragment: str, indent: str, code: list[tokenize.TokenInfo], limit: int,
                     force: bool = False) -> list[str] | None:
    """The value split inside black's invisible parentheses made visible, when black would (or, with
    ``force``, when nothing else splits it): ``x = (`` / the value, or its parts one a line / ``)``."""
    span = _value(code)
    if span is None:
        return None
    start, end = span
    pairs = [p for p in _pairs(code) if p[0] == start]
    if pairs and pairs[0][1] == end - 1:
        return None  # already in brackets of its own
    found = _delimiters(code, start, end)
    if not force and (not found or not _keeps_parens(code, start, end, limit, indent, found)):
        return None
    inner = indent + _INDENT
    begin, stop = code[start].start[1], code[end - 1].end[1]
    head = indent + fragment[:begin].rstrip() + " ("
    tail = indent + ")" + fragment[stop:].rstrip()
    value = fragment[begin:stop].strip()
    if force and end - start < 2 and len(inner + value) > limit:
        return None  # black leaves a lone name or string that fits nowhere as it is
    top = max((p for p, _ in found), default=0)
    if top != _COMMA and len(inner + value) <= limit:
        return [head, inner + value, tail]
    parts = _split_at(fragment, inner, code, found, begin, stop) if found else None
    return [head, *(parts or [inner + value]), tail]


def wrap(line: str, limit: int, inside: bool = False, elements: bool = False) -> list[str] | None:
    """``line`` (no line ending) split into lines of at most ``limit`` characters where it can be, as
    black would; ``inside``: the line is the contents of brackets (split at its delimiters first);
    ``elements``: the line is some of the comma-separated elements of brackets opened on an earlier
    line (only a split at its commas is made). None when it cannot be split."""
    fragment = line.lstrip()
    indent = line[: len(line) - len(fragment)]
    code = _tokens(fragment)
    if not code or code[-1].type == tokenize.COMMENT:
        return None  # a comment (a noqa directive, `# type: ignore`) speaks about its line: that line stays whole
    if elements:
        found = _delimiters(code, 0, len(code))
        if found and max(p for p, _ in found) != _COMMA:
            return None  # part of an expression split over lines: black would redo it all
        inside = True
    if inside:
        found = _delimiters(code, 0, len(code))
        parts = _split_at(fragment, indent, code, found, 0, len(fragment)) if found else None
        if parts is not None:
            return _again(parts, limit)
    else:
        parenthesized = _optional_parens(fragment, indent, code, limit)
        if parenthesized is not None:
            return _again(parenthesized, limit)
    span = None if inside else _value(code)
    for start, end in reversed(_pairs(code)):
        if span is not None and start < span[0]:
            break  # not inside the assignment's target: black puts the value in parentheses instead
        head = indent + fragment[: code[start].end[1]].rstrip()
        tail = indent + fragment[code[end].start[1]:].rstrip()
        if len(head) > limit or len(tail) > limit or end == start + 1:
            continue
        inner = indent + _INDENT
        body = fragment[code[start].end[1]: code[end].start[1]].strip()
        parts, trailing = _elements(code, start, end, fragment)
        literal = start == 0 or not _operand_end(code[start - 1])  # a display, not a call or subscript
        if trailing or (literal and len(parts) > 1):
            lines = [head, *(inner + e + "," for e in parts), tail]  # black explodes these
        else:
            lines = [head, inner + body, tail]
        return [head, *_again(lines[1:-1], limit, inside=True), tail]
    forced = None if inside else _optional_parens(fragment, indent, code, limit, force=True)
    return None if forced is None else _again(forced, limit)


def _again(lines: list[str], limit: int, inside: bool = True) -> list[str]:
    """``lines`` with each one still too long wrapped in turn."""
    out = []
    for part in lines:
        out.extend((wrap(part, limit, inside) if len(part) > limit else None) or [part])
    return out
