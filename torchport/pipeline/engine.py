"""Migrate one file: read it faithfully, run the codemods, check the output, write it atomically.

`migrate_file` never raises: every problem with one file becomes a `FileResult` with an error,
and the file is left untouched.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from torchport.config import DEFAULT, Settings
from torchport.model.torch_facts import text
from torchport.results import FileResult
from torchport.style import restyle

if TYPE_CHECKING:  # LibCST and the rules load only when a file is parsed (a warm-cache run needs neither)
    import libcst as cst

    from torchport.codemods.api import Migration


def read_source(data: bytes) -> tuple[str, str]:
    """Decode Python source bytes the way the interpreter would.

    Returns ``(text, encoding)``; a UTF-8 BOM gives the encoding ``utf-8-sig`` so that writing
    the text back with it keeps the BOM. Line endings are kept as they are.

    Raises:
        SyntaxError: for an unknown or inconsistent PEP 263 coding cookie.
        UnicodeDecodeError: when the bytes are not valid in the declared encoding.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def _syntax_error(text: str, error: cst.ParserSyntaxError) -> str:
    # CPython's own message is the one users know; LibCST's is the fallback for syntax
    # CPython accepts but LibCST does not.
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"{exc.lineno}:{(exc.offset or 1) - 1}: syntax error: {exc.msg}"
    return f"{error.raw_line}:{error.raw_column}: LibCST cannot parse this file: {error.message}"


def read_file(path: Path, display: str | None = None) -> tuple[FileResult, bytes | None]:
    """Read and decode one file; nothing is parsed.

    Returns the result (``original`` and ``migrated`` both the decoded text, or an error) and the raw
    bytes (None when the file could not be read or decoded).
    """
    result = FileResult(path=path, display=display or str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        result.error = f"cannot read: {exc.strerror or exc}"
        return result, None
    try:
        text, result.encoding = read_source(data)
    except (SyntaxError, UnicodeDecodeError) as exc:
        result.error = f"cannot decode: {exc}"
        return result, None
    result.original = result.migrated = text
    return result, data


def needs_parse(data: bytes) -> bool:
    """Whether any rule could match ``data``, or it uses a runtime; a file that fails this is not parsed at all."""
    from torchport.codemods.api import PREFILTER
    from torchport.emit.patterns import RUNTIME_BYTES

    # a module ported before, which another --runtime may switch (`torchport.emit.switch`)
    return PREFILTER.search(data) is not None or RUNTIME_BYTES.search(data) is not None


# CPython's own limits; LibCST's native parser has none and overflows the C stack (a segfault) on such input.
_TOO_DEEP = ("too many nested", "too many statically nested", "too complex")


def _compile(code: str, path: Path) -> ast.Module:
    """CPython's parse of ``code``, without the SyntaxWarnings it would print about the user's code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = compile(code, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    assert isinstance(tree, ast.Module)  # "exec" mode
    return tree


def _bytecode(tree: ast.Module, path: Path) -> SyntaxError | None:
    """What CPython's compiler (past its parser) refuses in ``tree``, or None. A notebook's top-level ``await``
    is allowed, as IPython runs it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(tree, str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


def _precheck(text: str, path: Path) -> tuple[ast.Module | None, str | None]:
    """Parse ``text`` with CPython first: ``(tree, error)``; ``tree`` is None where CPython cannot parse it.

    ``error`` is set when the file must not reach LibCST at all: nesting so deep that LibCST's
    native parser would crash the process. A plain syntax error is left for LibCST to confirm,
    since LibCST knows syntax newer than the running interpreter.
    """
    try:
        return _compile(text, path), None
    except SyntaxError as exc:
        if any(marker in (exc.msg or "") for marker in _TOO_DEEP):
            return None, f"{exc.lineno}:{(exc.offset or 1) - 1}: syntax error: {exc.msg}"
        return None, None
    except (RecursionError, MemoryError):
        return None, "1:0: nested too deeply for Python's parser; not parsed"
    except ValueError as exc:  # e.g. NUL bytes in the source
        return None, f"1:0: syntax error: {exc}"


def _parses(code: str, path: Path, original: ast.Module | None) -> tuple[str | None, ast.Module | None]:
    """Why ``code`` does not parse (None when it does), with the parser the input was checked with, and CPython's
    tree of it (None when the input, ``original``, was checked with LibCST). Where the input compiles, the rewrite
    must compile too: a keyword given twice (``f(a=1, a=2)``) parses, and fails only there."""
    if original is not None:
        try:
            tree = _compile(code, path)
            refused = _bytecode(tree, path)
            if refused is not None and _bytecode(original, path) is None:
                raise refused
            return None, tree
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None)
            return f"{getattr(exc, 'msg', None) or exc}" + (f" at line {line}" if line else ""), None
    import libcst as cst

    try:
        cst.parse_module(code)
    except cst.ParserSyntaxError as exc:
        return f"{exc.message} at line {exc.raw_line}", None
    return None, None


def migrate_code(source: str, settings: Settings = DEFAULT, syntax: ast.Module | None = None,
                 hold: str | None = None, avoid_mps: str | None = None,
                 gates: frozenset[str] = frozenset(), reached: bool = False) -> Migration:
    """`torchport.codemods.api.migrate_code`, loading the rules (and LibCST) on first use."""
    from torchport.codemods.api import migrate_code as run

    return run(source, settings, syntax=syntax, hold=hold, avoid_mps=avoid_mps, gates=gates, reached=reached)


def migrate_source(result: FileResult, settings: Settings = DEFAULT, hold: str | None = None,
                   avoid_mps: str | None = None, gates: frozenset[str] = frozenset(),
                   reached: bool = False, unused: frozenset[str] = frozenset()) -> FileResult:
    """Run the rules over ``result.original`` (as read by `read_file`), filling in the rest of ``result``.

    ``hold``: why the module's device choices stay CUDA-or-CPU (see `torchport.pipeline.project`), or None.
    ``avoid_mps``: what MPS lacks in the program this entry point starts (see `torchport.pipeline.programs`).
    ``gates``: local names of the CUDA gates other modules of the project define.
    ``reached``: a ported program reaches the module, so its device code is ported even where it never names CUDA.
    ``unused``: its top-level definitions no program of the project runs (`torchport.pipeline.unused`): left as
    written.

    Never raises for a problem with the file: it becomes ``result.error`` and ``result.migrated``
    is None. The output is re-parsed; a rewrite that does not parse is an internal error.
    """
    text = result.original
    if text is None or result.error:
        return result
    import libcst as cst

    syntax, refused = _precheck(text, result.path)
    if refused:
        result.migrated, result.error = None, refused
        return result
    try:
        migration = migrate_code(text, settings.for_file(result.path), syntax=syntax, hold=hold,
                                 avoid_mps=avoid_mps, gates=gates, reached=reached)
    except cst.ParserSyntaxError as exc:
        result.migrated = None
        result.error = _syntax_error(text, exc)
        return result
    except cst.CSTValidationError as exc:  # LibCST's parser refuses valid code (`assert(a if b else c)`)
        result.migrated = None
        result.error = f"LibCST cannot parse this file ({exc}); left unchanged (a LibCST limitation)"
        return result
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        result.migrated = None
        result.error = f"internal error while migrating: {type(exc).__name__}: {exc}"
        return result
    if migration.code != text:
        if not migration.exact:
            # LibCST does not regenerate every file byte for byte (e.g. a blank line before an
            # indented comment at the end of a module); a rewrite would silently change more.
            result.migrated = None
            result.error = ("LibCST does not reproduce this file exactly, so a rewrite could change "
                            "lines it does not touch; left unchanged (please report this file)")
            return result
        migration.code = restyle(text, migration.code, result.path)
        broken, tree = _parses(migration.code, result.path, syntax)
        if broken is not None:
            result.migrated = None
            result.error = f"internal error: the rewrite does not parse ({broken}); file left unchanged"
            return result
        narrowed = settings.for_file(result.path)
        if syntax is not None and tree is not None and narrowed.select in ((), ("ALL",)) and not narrowed.ignore:
            from torchport.codemods.analysis.programs import is_test

            # a module that calls its own `test*` functions uses them as helpers: pytest does not run it
            # (graph-generation's train.py calls `test_rnn_epoch` after each epoch)
            defined = [s for s in syntax.body if is_test(s)]
            called = {n.func.id for n in ast.walk(syntax) if isinstance(n, ast.Call)
                      and isinstance(n.func, ast.Name)} if defined else set()
            _hold_half_ports(text, migration, syntax, tree, gates,  # a narrowed rule set: a partial port asked for
                             closed=result.path.suffix == ".ipynb", unused=unused, folder=result.path.parent,
                             tests=bool(_TEST_FILE.match(result.path.name)) or bool(defined) and not any(
                                 getattr(s, "name", "") in called for s in defined))
    result.migrated = migration.code
    result.rewrites = migration.rewrites
    result.diagnostics = migration.diagnostics
    result.sites = migration.sites
    result.facts, result.hold, result.avoid_mps, result.gates = migration.facts, hold, avoid_mps, gates
    return result


_TEST_FILE = text("test_file")
_KEPT_PLACEMENT = text("kept_placement")
# How the note of a held port that still stops off CUDA begins (`torchport.pipeline.programs.left_whole` reads it).
STILL_STOPS = "off CUDA the path still stops"


def _hold_half_ports(original: str, migration: Migration, syntax: ast.Module, tree: ast.Module,
                     gates: frozenset[str] = frozenset(), closed: bool = False, tests: bool = False,
                     unused: frozenset[str] = frozenset(), folder: Path | None = None) -> None:
    """Put back the hunks of ``migration`` that no path off CUDA runs clean (`torchport.model.check`): their
    sites leave the rewrites, and one TP110 note per stop says where the path still stops. ``gates``: local names
    of the CUDA gates and CUDA-only functions other modules define. ``closed``: nothing imports the module (a
    notebook), so a function it never names never runs. ``tests``: a test module; ``unused``: its definitions no
    program runs; ``folder``: the module's (see `check_port`)."""
    from torchport.codemods.api import suppressions
    from torchport.codemods.core.reasons import DEAD_STORE, HALF_PORT, MOVES_TOGETHER, SAVED_HERE, note
    from torchport.model.check import (
        CPU_SAVED,
        CUDA_READ,
        LABEL,
        OVERWRITTEN,
        PASSED,
        SCALER,
        SHADOWED,
        UNREAD,
        UNUSED,
        check_port,
    )
    from torchport.results import Diagnostic

    checked = check_port(original, migration.code, frozenset(suppressions(migration.code)), syntax, tree, gates,
                         closed, tests, unused, folder)
    if not checked.held:
        return
    migration.code = checked.code
    held = list(checked.held)
    kept = [s for s in migration.sites if not any(h.first <= s.line <= h.last for h in held)]
    if checked.code == original:
        kept = []
    # what a held hunk moved or chose moves nothing now (the project passes read these original lines); a CUDA
    # device no path off CUDA reaches is a choice kept CUDA-or-CPU (focal_calibration's `torch.device("cuda" if
    # cuda else "cpu")`, with `cuda` set under a CUDA check): beside data moved to the picked device, it splits
    lines = original.splitlines()
    arms = _arm_choices(syntax) if syntax is not None else set()
    cuda_only = {line for h in held if h.stop is None and not h.why for line in range(h.first, h.last + 1)
                 if line <= len(lines) and (_KEPT_PLACEMENT.search(lines[line - 1]) or line in arms)}
    cuda_only &= {*migration.facts.get("moves", ()), *migration.facts.get("choices", ())}
    if cuda_only and (cuda_only := _read_where_bound(syntax, cuda_only, arms)):
        migration.facts["kept"] = sorted({*migration.facts.get("kept", ()), *cuda_only})
    for fact in ("moves", "choices"):
        if fact in migration.facts:
            migration.facts[fact] = [line for line in migration.facts[fact] if checked.code != original
                                     and not any(h.first <= line <= h.last for h in held)]
    migration.sites = kept
    migration.rewrites = {}
    for site in kept:
        migration.rewrites[site.code] = migration.rewrites.get(site.code, 0) + 1
    if not kept:  # the whole file stays: said once, with the first stop
        held = [next((h for h in held if h.stop is not None or h.why), held[0])]
        if held[0].stop is not None:  # what `torchport programs` gives as its blocker: the port's stop, not the
            stop = held[0].stop  # original's first CUDA line (dgNN's `.cuda()` before `GPUtil.getGPUs()[0]`)
            migration.facts["held_stop"] = [stop.origin or stop.line]  # its words: the note's
    said: set[object] = set()
    names = list(dict.fromkeys(h.why[len(UNUSED):] for h in held if h.why.startswith(UNUSED)))
    for h in held:
        key = (h.stop.origin or h.stop.line) if h.stop else UNUSED if h.why.startswith(UNUSED) else \
            h.first if h.why else None
        if key in said:
            continue
        said.add(key)
        where = f"{UNUSED}{','.join(names)}" if key == UNUSED else h.why or (
            "no path off CUDA runs it" if h.stop is None else f"{STILL_STOPS} at line {h.stop.line}: {h.stop.message}")
        reason = DEAD_STORE if h.why.endswith((UNREAD, CUDA_READ, LABEL, SHADOWED, PASSED, OVERWRITTEN)) else \
            SAVED_HERE if h.why.endswith(CPU_SAVED) else MOVES_TOGETHER if h.why == SCALER else HALF_PORT
        migration.diagnostics.append(Diagnostic("TP110", h.first, 0, note(reason, f"left as written: {where}")))
    migration.diagnostics.sort(key=lambda d: (d.line, d.column))


def _read_where_bound(syntax: ast.Module, lines: set[int], arms: set[int] | None = None) -> set[int]:
    """The ``lines`` whose statement runs off CUDA and picks its other arm there (a conditional expression:
    ``torch.device("cuda" if cuda else "cpu")``; a statement that never runs off CUDA places nothing there, as
    T2M-GPT's ``except: index_motion = torch.ones(1, 1).cuda().long()``), and is no assignment (a placement) or
    binds a name or attribute the module reads (a choice nothing reads keeps nothing: focal_calibration's
    evaluate.py never uses its ``device``). ``arms``: `_arm_choices` of ``syntax``, where the caller has it."""
    read = {(type(n), n.id if isinstance(n, ast.Name) else n.attr) for n in ast.walk(syntax)
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load)}
    chosen = {s.lineno for s in ast.walk(syntax) if isinstance(s, ast.stmt) and not isinstance(
        s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With, ast.Try))
              and any(isinstance(n, ast.IfExp) for n in ast.walk(s))}
    lines = lines & (chosen | (_arm_choices(syntax) if arms is None else arms))
    bound = {s.lineno: [e for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                        for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
             for s in ast.walk(syntax) if isinstance(s, (ast.Assign, ast.AnnAssign))}
    return {line for line in lines if line not in bound or any(
        (type(t), t.id if isinstance(t, ast.Name) else t.attr) in read for t in bound[line]
        if isinstance(t, (ast.Name, ast.Attribute)))}


def _arm_choices(syntax: ast.Module) -> set[int]:
    """The lines of assignments in one arm of an ``if``/``else`` (nested in it too) whose other arm assigns the same
    name: a choice written as statements (beta-recsys' ``device_str = "cpu"`` where GPUtil finds no GPU, else
    ``device_str = "cuda:" + str(gpu_id)``), which runs off CUDA as a conditional expression does, picking its
    other arm."""
    def assigned(body: list[ast.stmt]) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        todo = list(body)
        while todo:  # nested blocks of the arm too (beta-recsys assigns its CUDA device under a further `if`)
            statement = todo.pop()
            for target in statement.targets if isinstance(statement, ast.Assign) else ():
                if isinstance(target, (ast.Name, ast.Attribute)):
                    found.setdefault(ast.unparse(target), []).append(statement.lineno)
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo.extend(s for field in ("body", "orelse", "finalbody") for s in getattr(statement, field, ()))
        return found

    found: set[int] = set()
    ifs = [node for node in ast.walk(syntax) if isinstance(node, ast.If) and node.orelse]
    elifs = {id(node.orelse[0]) for node in ifs if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)}
    for node in ifs:  # the head of an `elif` chain reads the whole chain once
        if id(node) not in elifs:
            body, orelse = assigned(node.body), assigned(node.orelse)
            found.update(line for name in body.keys() & orelse.keys() for line in (*body[name], *orelse[name]))
    return found


def migrate_file(path: Path, display: str | None = None, settings: Settings = DEFAULT) -> FileResult:
    """Migrate one file in memory; nothing is written.

    Args:
        path: a ``.py`` file.
        display: how to show the path; defaults to ``str(path)``.
        settings: which rules apply.
    """
    result, data = read_file(path, display)
    if data is None or not needs_parse(data):  # nothing any rule could match: not parsed at all
        return result
    return migrate_source(result, settings)
