"""Jupyter notebooks: their code cells are migrated as one module, cell by cell on the way out.

The code cells of a notebook are joined into one Python module (so that ``import torch`` in the
first cell names ``torch`` in the others), each cell after a marker comment. IPython syntax that
is not Python (``%magic``, ``!shell``, ``x = !cmd``, ``obj?``) is masked with a ``pass``
placeholder so that LibCST can parse the cell, and restored afterwards; a cell whose cell magic runs another
language (``%%bash``) is left out, and one that still does not parse is left out and reported (`not_migrated`):
its CUDA code is neither rewritten nor reported, so the notebook counts as not migrated. After migration the
module is split at the markers and each cell's new source replaces its old one in the notebook's
JSON: outputs, execution counts and metadata are not touched, and the file keeps its JSON layout
(indent, key order, escaping) wherever it can be read back exactly. Notebooks are read and checked
with nbformat.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchport.codemods.analysis.programs import NOTEBOOK_CELL, cell_at
from torchport.emit.patterns import PATH_CHANGE
from torchport.results import FileResult

SUFFIX = ".ipynb"
_MARKER = NOTEBOOK_CELL + " {}"
_MARKER_RE = re.compile(r"^# torchport-notebook-cell (\d+)$", re.MULTILINE)
_MAGIC_RE = re.compile(r"^# torchport-magic (\d+)$")
# Lines IPython reads that Python cannot: %magic, !shell, x = !cmd / %magic, help: obj? / obj?? / ?obj / ??obj
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!]|[\w.,\[\]\s]+=\s*[%!]|[\w.*]+\?\??\s*$|\?\??[\w.*]+\s*$)")
# Cell magics whose body is Python, run by IPython (timed, captured, profiled).
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})


@dataclass
class NotebookResult(FileResult):
    """A `FileResult` for a notebook; ``original`` and ``migrated`` are the joined code cells.

    Args:
        raw: the notebook file's text, as read (the JSON written back is built from it).
        magics: the IPython lines masked in ``original``, by placeholder number.
        unparsed: the code cells left out because they do not parse: ``(cell index, line in the cell,
            column from 1, reason)``.
    """

    raw: str = ""
    magics: tuple[str, ...] = ()
    unparsed: tuple[tuple[int, int, int, str], ...] = ()


def not_migrated(result: FileResult) -> list[tuple[str, int, int, str]]:
    """The cells of a notebook left unmigrated because they do not parse, as ``("cell_N:", line, column,
    reason)``; empty for a Python file. Such a notebook counts as failed: its CUDA code there went unseen."""
    if not isinstance(result, NotebookResult):
        return []
    return [(f"cell_{index + 1}:", line, column, reason) for index, line, column, reason in result.unparsed]


def is_notebook(path: Path) -> bool:
    """Whether ``path`` names a Jupyter notebook (by its suffix)."""
    return path.suffix == SUFFIX


def _mask(source: str, magics: list[str]) -> str | SyntaxError | None:
    """``source`` with its IPython lines masked (appending them to ``magics``); None for a cell in another
    language (a non-Python cell magic); the error when the masked code still does not parse."""
    lines = source.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)[0] if lines[first].strip() != "%%" else ""
        if name not in _PYTHON_CELL_MAGICS:
            return None
    out = []
    continued, indent = False, ""
    for line in lines:
        if continued or _IPYTHON_LINE.match(line):
            body = line.rstrip("\r\n")
            ending = line[len(body):]
            if not continued:  # a continuation line (`!cmd \`) keeps the placeholder at its first line's indent
                indent = body[:len(body) - len(body.lstrip())]
            continued = body.endswith("\\")
            out.append(f"{indent}pass  # torchport-magic {len(magics)}{ending}")
            magics.append(body)
        else:
            out.append(line)
    masked = "".join(out)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(masked)
    except SyntaxError as exc:
        return exc
    except ValueError as exc:  # a null byte
        return SyntaxError(str(exc), ("<cell>", 1, 1, ""))
    return masked


def _unmask(code: str, magics: tuple[str, ...]) -> str:
    def restore(line: str) -> str:
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        if stripped.startswith("pass  # torchport-magic "):
            match = _MAGIC_RE.match(stripped[len("pass  "):])
            if match and int(match.group(1)) < len(magics):
                return magics[int(match.group(1))] + line[len(body):]
        return line
    return "".join(map(restore, code.splitlines(keepends=True)))


def _is_python(notebook: dict[str, Any]) -> bool:
    metadata = notebook.get("metadata", {})
    language = (metadata.get("kernelspec", {}).get("language") or metadata.get("language_info", {}).get("name")
                or "python")
    return str(language).lower() == "python"


def _cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def read_notebook(path: Path, display: str | None = None, data: bytes | None = None
                  ) -> tuple[NotebookResult, bytes | None]:
    """Read a notebook (from ``data`` when given) and join its code cells; nothing is parsed by LibCST.

    Returns the result and the joined code as bytes (the text the prefilter and cache key read), or
    None when there is nothing to migrate or the notebook cannot be read (then ``error`` says why).
    """
    result = NotebookResult(path=path, display=display or str(path))
    try:
        raw = (path.read_bytes() if data is None else data).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        result.error = f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        return result, None
    # Read as plain JSON: nbformat (and the jsonschema it loads, ~70 ms) is needed only to write a notebook back,
    # and a run the cache answers writes nothing.
    try:
        notebook = json.loads(raw)
    except ValueError as exc:
        result.error = f"1:0: not a valid notebook: {type(exc).__name__}: {exc}"
        return result, None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells", []), list):
        result.error = "1:0: not a valid notebook: not a JSON object with a list of cells"
        return result, None
    result.raw = raw
    if notebook.get("nbformat") != 4:
        result.error = f"1:0: nbformat {notebook.get('nbformat')} notebooks are not migrated (only nbformat 4)"
        return result, None
    parts: list[str] = []
    magics: list[str] = []
    unparsed: list[tuple[int, int, int, str]] = []
    if _is_python(notebook):
        for index, cell in enumerate(notebook.get("cells", [])):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            masked = _mask(_cell_source(cell), magics)
            if isinstance(masked, SyntaxError):
                reason = f"cell not migrated: it does not parse ({masked.msg})"
                unparsed.append((index, masked.lineno or 1, masked.offset or 1, reason))
                continue
            if masked is None or not masked.strip():
                continue  # a blank cell has nothing to port (and a marker last after blank lines trips LibCST)
            parts.append(_MARKER.format(index) + "\n" + masked + ("" if masked.endswith("\n") or not masked else "\n"))
    result.magics = tuple(magics)
    result.unparsed = tuple(unparsed)
    result.original = result.migrated = "".join(parts)
    return result, result.original.encode("utf-8")


def split_cells(code: str) -> dict[int, tuple[int, str]]:
    """``{cell index: (first line of the cell in code, 1-based; source)}`` of a joined module (masked)."""
    cells: dict[int, tuple[int, str]] = {}
    matches = list(_MARKER_RE.finditer(code))
    for i, match in enumerate(matches):
        start = match.end() + 1
        end = matches[i + 1].start() if i + 1 < len(matches) else len(code)
        cells[int(match.group(1))] = (code.count("\n", 0, start) + 1, code[start:end])
    if matches and matches[0].start() > 0:  # lines added above the first cell (an import) belong to it
        first = int(matches[0].group(1))
        cells[first] = (cells[first][0], code[:matches[0].start()] + cells[first][1])
    return cells


_RUNTIME_IMPORT = re.compile(r"^from torchport import runtime as (\w+)\n(?:\n)?", re.MULTILINE)
_TORCH_IMPORT = re.compile(r"^(?:import torch\b|from torch\b)[^(\\\n]*$", re.MULTILINE)


def _move_runtime_import(before: dict[int, tuple[int, str]], after: dict[int, tuple[int, str]]) -> None:
    """Move an added ``from torchport import runtime as tp`` from the cell it was added to (after the leading
    imports: often a first cell that installs packages, or one that restarts the kernel, as ``condacolab.install()``
    does) to just after the first ``import torch`` of the notebook, where torch's own setup is; or to the top of the
    first cell that uses it, where that comes first (a cell that builds a model through the project's own code)."""
    added_in = next((index for index, (_, source) in after.items() if _RUNTIME_IMPORT.search(source)
                     and not _RUNTIME_IMPORT.search(before[index][1])), None)
    if added_in is None:
        return
    added = _RUNTIME_IMPORT.search(after[added_in][1])
    assert added is not None
    used = re.compile(rf"\b{added.group(1)}\.")
    if any(PATH_CHANGE.search(source) for index, (_, source) in after.items() if index < added_in) or \
            PATH_CHANGE.search(after[added_in][1][:added.start()]):
        return  # placed after a sys.path change (`torchport.emit.placement`): moved up, it may not import
    for index, (start, source) in after.items():
        text = source if index != added_in else source[:added.start()] + source[added.end():]
        torch_import = _TORCH_IMPORT.search(text)
        if index == added_in and used.search(source, added.end()) and (
                torch_import is None or torch_import.start() >= added.start()):
            return  # its own cell uses it before any `import torch`: moved past that use, the cell would fail
        if torch_import is not None:
            if index == added_in and torch_import.start() < added.start():
                return  # already after the notebook's first `import torch`
            at = torch_import.end() + 1
            if (first := used.search(text[:at])) is not None:
                # a use above that `import torch` (a `tp.avoid_mps(...)` put above an import that picks the device
                # when imported, Handwriting-Transformers' demo): the import goes just above that use
                at = text.rfind("\n", 0, first.start()) + 1
        elif used.search(text) and index != added_in:
            at = 0
        else:
            continue
        after[index] = (start, text[:at] + added.group(0).rstrip("\n") + "\n" + text[at:])
        if index != added_in:
            after[added_in] = (after[added_in][0], after[added_in][1][:added.start()]
                               + after[added_in][1][added.end():])
        return


def _new_sources(result: NotebookResult) -> dict[int, str]:
    """The cells ``result`` changes: ``{cell index: new source}`` (original ending kept).

    Raises:
        ValueError: when the migrated module does not split back into the same cells.
    """
    before = split_cells(result.original or "")
    after = split_cells(result.migrated or "")
    if list(before) != list(after):
        raise ValueError("the migrated cells do not line up with the notebook's cells")
    _move_runtime_import(before, after)
    changed = {}
    for index, (_, old) in before.items():
        new = after[index][1]
        if new != old and _lines(new) != _lines(old):  # blank lines alone (left by a moved import) are no change
            changed[index] = _magic_first(_unmask(old, result.magics), _unmask(new, result.magics))
    return changed


def _magic_first(old: str, new: str) -> str:
    """``new`` with the cell magic that opens cell ``old`` (``%%capture``, ``%%time``) back on its first line:
    IPython reads a cell magic only there, and an import the port put at the top of the cell (AQLM's notebook, whose
    cells never import torch themselves) or a blank line a moved import left must go below it."""
    opening = next((line for line in old.splitlines(keepends=True) if line.strip()), "")
    if not opening.lstrip().startswith("%%"):
        return new
    lines = new.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.rstrip("\r\n") == opening.rstrip("\r\n")), None)
    if at is None or at == 0:
        return new
    rest = [*lines[:at], *lines[at + 1:]]
    while rest and not rest[0].strip():
        rest.pop(0)
    ending = opening[len(opening.rstrip("\r\n")):] or "\n"
    return lines[at].rstrip("\r\n") + ending + "".join(rest)


def _lines(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.strip()]


def locate(result: FileResult, line: int) -> tuple[str, int]:
    """Where line ``line`` of a result's ``original`` is: ``("cell_N:", line in the cell)`` for a notebook
    (N counts every cell from 1), ``("", line)`` for a Python file."""
    found = cell_at(result.original or "", line) if isinstance(result, NotebookResult) else None
    if found is None:
        return "", line
    return f"cell_{found[0] + 1}:", found[1]


def _dumps(notebook: Any, layout: tuple[int | str | None, bool], ending: str) -> str:
    if layout[0] is None:  # Colab's: one line, no spaces
        return json.dumps(notebook, separators=(",", ":"), ensure_ascii=layout[1]) + ending
    if layout[0] == "":  # `json.dump(notebook, f)`'s: one line, spaces after separators (maxjcohen's exports)
        return json.dumps(notebook, ensure_ascii=layout[1]) + ending
    return json.dumps(notebook, indent=layout[0], ensure_ascii=layout[1]) + ending


def not_writable(result: NotebookResult) -> str | None:
    """Why `render` could never write ``result`` back, whatever its cells become: the notebook as read is not valid
    (nbformat's schema: PyEPO's markdown cell with ``outputs``); None where it is. Read only for a notebook the
    run parses, so a warm run loads no nbformat."""
    import nbformat

    try:
        nbformat.validate(nbformat.from_dict(json.loads(result.raw)))
    except nbformat.ValidationError as exc:
        return f"cannot write: the notebook is not valid as read: {exc.message}"
    return None


def render(result: NotebookResult) -> str:
    """The notebook file with ``result``'s migrated cells in place of the old ones.

    Only the changed cells' ``source`` fields change; a source stored as a list of lines stays one.
    The JSON layout of the file read is kept when one of the usual layouts reproduces it exactly
    (else nbformat's own: indent 1).

    Raises:
        ValueError: when the cells do not line up or the result is not a valid notebook (nbformat).
    """
    import nbformat

    notebook = json.loads(result.raw)
    ending = "\n" if result.raw.endswith("\n") else ""
    layouts: list[tuple[int | str | None, bool]] = [(1, False), (2, False), (1, True), (2, True), (4, False),
                                                    (4, True), ("\t", False), (None, False), (None, True),
                                                    ("", False), ("", True)]
    layout = next((lay for lay in layouts if _dumps(notebook, lay, ending) == result.raw), None)
    # no usual layout reproduces the file (`[ ]`, `\u001B`): its lines are kept wherever the cells did not change
    unchanged = _dumps(notebook, (1, False), ending) if layout is None else None
    for index, source in _new_sources(result).items():
        cell = notebook["cells"][index]
        if source.endswith("\n") and not _cell_source(cell).endswith("\n"):
            # joining the cells ended each with a newline; an import added last leaves a blank line to drop too
            source = source.rstrip("\n")
        cell["source"] = source.splitlines(keepends=True) if isinstance(cell.get("source"), list) else source
    try:
        nbformat.validate(nbformat.from_dict(notebook))
    except nbformat.ValidationError as exc:
        raise ValueError(f"the migrated notebook is not valid: {exc.message}") from None
    if unchanged is None:
        return _dumps(notebook, layout or (1, False), ending)
    return _splice(result.raw, unchanged, _dumps(notebook, (1, False), ending))


def _splice(raw: str, before: str, after: str) -> str:
    """``after`` (the file written anew) with ``raw``'s own lines wherever ``before`` (the file read, written anew)
    and ``after`` agree; ``after`` itself where ``raw`` and ``before`` do not line up one for one."""
    raw_lines, old = raw.splitlines(keepends=True), before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    if len(raw_lines) != len(old):
        return after
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        out.extend(raw_lines[i1:i2] if tag == "equal" else new[j1:j2])
    return "".join(out)


def text_diff(before: str, after: str, label: str) -> str:
    """``before`` to ``after`` as a unified diff with git's ``a/label`` and ``b/label`` headers; a last line
    without its newline is marked as ``diff`` and ``git apply`` expect."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    # difflib.unified_diff's matcher junks lines frequent in a long file, so that two alike functions, one
    # ported, can show as a block moved; the full match shows each change in place
    groups = difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3)
    lines = [f"--- a/{label}\n", f"+++ b/{label}\n"]
    for group in groups:
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        lines.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, k1, k2, l1, l2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[k1:k2])
                continue
            lines.extend("-" + line for line in a[k1:k2])
            lines.extend("+" + line for line in b[l1:l2])
    if len(lines) == 2:
        return ""
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (``difflib._format_range_unified``)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def file_diff(result: NotebookResult) -> str:
    """The change to a notebook as a patch of its JSON file: the bytes read against those ``--apply`` writes
    (`render`), so that ``git apply`` takes it.

    Raises:
        ValueError: as `render` does.
    """
    return text_diff(result.raw, render(result), result.display)


def cell_diffs(result: NotebookResult) -> str:
    """The change to a notebook as unified diffs, one per changed cell (``a/nb.ipynb:cell_3``): easier to read
    than `file_diff`, but no patch (the paths name cells, not files).

    Raises:
        ValueError: when the migrated cells do not line up with the notebook's.
    """
    old = {index: _unmask(source, result.magics) for index, (_, source) in split_cells(result.original or "").items()}
    return "".join(text_diff(old[index], new, f"{result.display}:cell_{index + 1}")
                   for index, new in _new_sources(result).items())
