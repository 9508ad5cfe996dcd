"""Keep a port clean under the project's own lint (ruff, isort, black, flake8 settings).

`restyle` runs after the codemods on each changed file: it removes the imports the port left unused,
moves the imports it added where the project's import sorter would put them, and wraps the lines it
made longer than the configured limit. Projects that configure none of these tools are left as the
codemods wrote them.
"""

from __future__ import annotations

import ast
import difflib
import tokenize
from pathlib import Path

from torchport.codemods.analysis.source import generate_tokens
from torchport.style._config import NO_STYLE, Style, style_for
from torchport.style._imports import place_added, remove_unused
from torchport.style._wrap import _tokens, wrap


def _rows(code: str) -> tuple[set[int], dict[int, int]]:
    """1-based rows a line-by-line wrap must not touch (inside a multi-line token or a backslash
    continuation), and the bracket depth each row starts at."""
    unsafe: set[int] = set()
    depth_at: dict[int, int] = {}
    depth = 0
    for token in generate_tokens(code):
        depth_at.setdefault(token.start[0], depth)
        if token.start[0] != token.end[0]:
            unsafe.update(range(token.start[0], token.end[0] + 1))
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
    for number, line in enumerate(code.splitlines(), 1):
        if line.rstrip().endswith("\\"):
            unsafe.update((number, number + 1))
    return unsafe, depth_at


def _last_element(lines: list[str], row: int) -> bool:
    """Whether ``lines[row]`` is a whole last element of brackets exploded one element a line, without
    the trailing comma: the row above ends with a comma at the same indentation, the row below closes."""
    if not 0 < row < len(lines) - 1:
        return False
    text, above, below = lines[row].rstrip(), lines[row - 1].rstrip(), lines[row + 1].strip()
    indent = len(text) - len(text.lstrip())
    return (
        not text.endswith((",", "(", "[", "{")) and "#" not in text and above.endswith(",")
        and len(above) - len(above.lstrip()) == indent and below[:1] in (")", "]", "}")
        and len(lines[row + 1]) - len(lines[row + 1].lstrip()) == indent - 4
        and _tokens(text.strip()) is not None
    )


def wrap_changed(original: str, migrated: str, limit: int, commas: bool = False) -> str:
    """``migrated`` with each line the port changed that is longer than ``limit`` wrapped; a line whose
    original was already over the limit, and no shorter, is left as the project had it. ``commas``: a last
    element the port added to brackets exploded one element a line gets the trailing comma black would give it."""
    old, new = original.splitlines(keepends=True), migrated.splitlines(keepends=True)
    rows: tuple[set[int], dict[int, int]] | None = None
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        for row in range(j1, j2):
            # a line replaced one for one is judged against its own original, others against the chunk's
            pair = old[i1 + row - j1: i1 + row - j1 + 1] if i2 - i1 == j2 - j1 else old[i1:i2]
            line = new[row]
            text = line.rstrip("\r\n")
            # the project's own long line, not made longer
            tolerated = any(limit < len(old_line.rstrip("\r\n")) >= len(text) for old_line in pair)
            if op != "equal" and commas and _last_element(new, row):
                rows = _rows(migrated) if rows is None else rows
                if row + 1 not in rows[0] and rows[1].get(row + 1, 0) > 0:
                    line = text + "," + line[len(text):]  # black's trailing comma after a last element added
                    text += ","
            if op == "equal" or tolerated or len(text) <= limit:
                out.append(line)
                continue
            rows = _rows(migrated) if rows is None else rows
            unsafe, depth_at = rows
            # a row inside an open bracket (a call's arguments on a line of their own) splits at its commas;
            # the whole contents of brackets (`(` above, `)` below) at any delimiter, as black would
            alone = 0 < row < len(new) - 1 and new[row - 1].rstrip().endswith(("(", "[", "{")) and (
                new[row + 1].lstrip().startswith((")", "]", "}")))
            nested = depth_at.get(row + 1, 0) > 0
            pieces = None if row + 1 in unsafe else wrap(text, limit, inside=alone, elements=nested and not alone)
            ending = line[len(text):]
            out.extend([line] if pieces is None else [p + (ending or "\n") for p in pieces])
    return "".join(out)


def _mostly_single(code: str) -> bool:
    """Whether the module's plain string literals are single-quoted (its own quote style): five or more, and
    more than three in four."""
    counts = {"'": 0, '"': 0}
    try:
        for token in generate_tokens(code):
            if token.type == tokenize.STRING and token.string[:1] in counts and token.string[:3] not in ('"""', "'''"):
                counts[token.string[0]] += 1
    except (tokenize.TokenError, SyntaxError):
        return False
    return counts["'"] >= 5 and counts["'"] > 3 * counts['"']  # a habit, not one `'__main__'`


def requote(original: str, migrated: str) -> str:
    """``migrated`` with the double-quoted strings the port added (``"cpu"``, with no quote or backslash
    inside) single-quoted, on the lines it changed; strings the original chunk had are left as they were."""
    old, new = original.splitlines(keepends=True), migrated.splitlines(keepends=True)
    unsafe = _rows(migrated)[0]
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(new[j1:j2])
            continue
        before = "".join(old[i1:i2])
        for row, line in enumerate(new[j1:j2], j1 + 1):
            tokens = None if row in unsafe else _tokens(line.strip())
            indent = len(line) - len(line.lstrip())
            for token in reversed(tokens or []):
                text = token.string
                if token.type == tokenize.STRING and len(text) >= 2 and text[0] == text[-1] == '"' \
                        and not any(c in text[1:-1] for c in "'\"\\") and text not in before:
                    start, end = indent + token.start[1], indent + token.end[1]
                    line = line[:start] + "'" + text[1:-1] + "'" + line[end:]
            out.append(line)
    return "".join(out)


def restyle(original: str, migrated: str, path: Path, style: Style | None = None) -> str:
    """``migrated`` (the codemods' output for ``original``, the file at ``path``) made to pass the
    project's own import sorting, unused-import and line-length checks where the port broke them.

    ``style`` defaults to the configuration found up from ``path`` (`style_for`). Returns ``migrated``
    unchanged when the result would not parse or anything goes wrong: a style pass never costs a port.
    """
    style = style_for(path) if style is None else style
    single = style.single_quotes or (not style.formatter and _mostly_single(original))
    if style == NO_STYLE and not single:
        return migrated
    try:
        if style == NO_STYLE:
            code = requote(original, migrated)
            ast.parse(code)
            return code
        code = remove_unused(original, migrated, path)
        if single:
            code = requote(original, code)
        if style.sort_imports:
            code = place_added(original, code, style, path)
        if style.line_length:
            code = wrap_changed(original, code, style.line_length, commas=style.formatter)
        ast.parse(code)
    except Exception:  # noqa: BLE001 - see the docstring
        return migrated
    return code


__all__ = ["NO_STYLE", "Style", "restyle", "style_for", "wrap"]
