"""Check a port before it is written: no half ports.

The migrated module is evaluated on the targets a port adds (`OFF_CUDA`). Each hunk of the port (a run of changed
lines, as `difflib` finds them) stays only where some path that runs it runs clean off CUDA after the port: no
``.cuda()``, CUDA placement, CUDA-only call or device gate stops that path later. A hunk that only paths which
still stop run (a removed assert before a placement the port kept, a rewrite after a line that still fails, a
test a skip mark skips there) changes nothing anywhere but the way the program fails, so it goes back to the
original lines, and the stop is reported once with its line.

Each hunk keeps CUDA's behaviour on its own, so any mix of them does; a kept hunk's clean path runs no reverted
hunk, so it stays clean in the mix.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from torchport.model import torch_facts
from torchport.model.checkpoints import loaded_file, saved_on
from torchport.model.evaluate import Evaluator, Stop, Unit, defaults, dotted, imported, qualified
from torchport.model.torch_facts import is_runtime, text
from torchport.model.trees import parent_map
from torchport.model.unbound import main_guard
from torchport.results import OWN

OFF_CUDA = ("cpu", "mps")  # in this order; xpu answers as mps does for every query the model reads, bar its name


@dataclass(frozen=True)
class Held:
    """Original lines ``first``..``last`` (1-based) kept as written, because every path off CUDA that runs their
    port stops at ``stop`` (None: no path off CUDA runs them), or for ``why`` (a test that needs no port)."""

    first: int
    last: int
    stop: Stop | None
    why: str = ""


@dataclass
class Checked:
    """The port as it may be written (``code``) and the hunks held back from it."""

    code: str
    held: list[Held]


def check_port(original: str, migrated: str, exempt: frozenset[int] = frozenset(),
               syntax: ast.Module | None = None, tree: ast.Module | None = None,
               gates: frozenset[str] = frozenset(), closed: bool = False, tests: bool = False,
               unused: frozenset[str] = frozenset(), folder: Path | None = None) -> Checked:
    """Hold back the hunks of ``migrated`` (the rules' output for ``original``) that no clean path off CUDA runs.

    ``exempt``: lines of ``migrated`` whose stops do not count (CUDA on purpose: ``# torchport: ignore``).
    ``syntax``, ``tree``: the parses of ``original`` and ``migrated`` when the caller has them. ``gates``: local
    names of the CUDA gates and CUDA-only functions other modules define (see `Evaluator`). ``closed``: nothing
    imports the module (a notebook): a module-level function it never names never runs. ``tests``: a test
    module: a test that already runs clean off CUDA as written and asks no device query keeps its CUDA devices,
    values it checks (tnt's ``get_process_group_backend_from_device(torch.device("cuda")) == "nccl"``).
    ``unused``: the module's top-level functions and classes that no program of the project runs, and its
    module-level names that hold a device value nothing reads (`torchport.pipeline.unused`). ``folder``: where
    the module is, to read the checkpoints of the repository it loads (`checkpoints.saved_on`).
    A port that unbinds a name its code still reads (an import removed, a use kept) is refused whole.
    Returns ``migrated`` unchanged when every hunk stays, ``original`` when none does (its support, such as an
    added import, goes with it), else the mix. Never raises: code CPython cannot parse is returned as given.
    """
    if migrated == original:
        return Checked(migrated, [])
    try:
        tree = tree or ast.parse(migrated)
        parsed = syntax or ast.parse(original)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Checked(migrated, [])
    if (lost := unbound(parsed, tree)):
        return Checked(original, [Held(1, len(original.splitlines()) or 1,
                                       Stop("raise", 1, f"the port unbinds `{lost}`, which the code still reads"))])
    old, new = original.splitlines(keepends=True), migrated.splitlines(keepends=True)
    hunks = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    starts = _statement_starts(tree)
    guards = [n for n in ast.walk(tree) if isinstance(n, ast.If)]
    runtime = frozenset(local for local, name in imported(tree).items() if is_runtime(name))  # `tp`
    support, old_support = _support_lines(tree), _support_lines(parsed, imports_only=True)
    # a statement's first line -> None if a clean path runs it, else a stop: on the CPU, and on MPS for what the
    # CPU never runs (a branch for MPS); an int device, MPS's index 0, is no port for the CPU
    runs: dict[int, Stop | None] = {}
    before: list[tuple[int, int, Stop]] = []  # (first, last line) of a unit -> a stop of its paths
    failing: list[tuple[set[int], Stop]] = []  # the lines of each path that stops needing CUDA, and that stop
    gated: list[tuple[set[int], Stop]] = []  # ... and of each that a gate or a raise stops
    taken: dict[tuple[int, int, int, int], bool] = {}  # branches of conditional expressions, on any target
    module_stops: list[Stop] | None = []  # where every path of the module body stops, on every target
    skipped: set[int] | None = None  # the units a skip mark skips on every target
    deciders: list[Evaluator] = []
    own = OWN in gates or closed  # a notebook: nothing imports it either
    for target in OFF_CUDA:
        evaluator = Evaluator(tree, target, exempt, gates, own=own)
        deciders.append(evaluator)
        try:
            units = evaluator.units()
        except RecursionError:
            return Checked(migrated, [])
        found: dict[int, Stop | None] = {}
        _record(units, found, before, failing, gated)
        skipped_here = {id(u.node) for u in units if u.skipped is not None}
        skipped = skipped_here if skipped is None else skipped & skipped_here
        # a path the author's own `raise` or exit ends (DoLipReading's unknown `--dataset`) runs nothing after it either
        if module_stops is not None and units[0].paths and all(p.stop is not None for p in units[0].paths) \
                and not all(p.clean for p in units[0].paths):
            module_stops.extend(p.stop for p in units[0].paths if p.stop is not None)
        else:
            module_stops = None
        for line, stop in found.items():
            first = runs.setdefault(line, stop)
            if stop is None and first is not None and first.kind == "gate":
                runs[line] = None  # a gate that stops the CPU alone (`if opt.cuda: if not tp.is_available(): raise`)
        for span, was in evaluator.taken.items():
            taken[span] = taken.get(span, False) or was
    dead = [span for span, was in taken.items() if not was] + _unread_defaults(tree)
    overwritten = _overwritten_options(tree, deciders)
    passed = _passed_defaults(tree, unused)
    if closed:
        dead += _never_named(tree)
    never = [(s.lineno, s.end_lineno or s.lineno, s.name) for s in tree.body
             if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name in unused]
    never += [(f.lineno, f.end_lineno or f.lineno, f"{s.name}.{f.name}") for s in tree.body
              if isinstance(s, ast.ClassDef) and s.name not in unused for f in s.body
              if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f"{s.name}.{f.name}" in unused]
    if module_stops:
        dead += _never_run_after(tree, max(stop.line for stop in module_stops), closed)
    if tests:
        dead += _helpers_of_skipped_tests(tree, skipped or set())
    unread = _unread_stores(tree, runtime, closed or tests, unused)
    labels = _label_stores(tree, runtime, closed or tests, unused)
    shadowed = _shadowed_stores(tree, runtime)
    on_cuda = _read_on_cuda(tree, runtime, closed or tests or own, runs, starts)
    on_cpu = _cpu_saved_loads(tree, folder, runtime) if folder is not None and ".map_location()" in migrated else []
    # lines changed one for one are read one by one: a rewrite never run (llm.c's DDP line, beside a memory query
    # that runs) stays out alone
    hunks = [single for op in hunks for single in (
        [(op[0], op[1] + k, op[1] + k + 1, op[3] + k, op[3] + k + 1) for k in range(op[2] - op[1])]
        if op[0] == "replace" and op[2] - op[1] == op[4] - op[3] else [op])]
    passing = _passing_tests(parsed, exempt) if tests else []
    held: list[Held] = []
    kept_code = False
    kept_assert = False  # an assert whose removal, or a query whose port, is held: what it stops is checked again
    decisions: dict[int, bool] = {}
    for index, (_, i1, i2, j1, j2) in enumerate(hunks):
        # a removal (an assert): the statement that runs next in its place, past blank and comment lines
        lines = set(range(j1 + 1, j2 + 1)) or {next((n for n in range(j1 + 1, len(new) + 1) if n in starts and new[
            n - 1].strip() and not new[n - 1].lstrip().startswith("#")), j1 + 1)}
        new_support = all(line in support or not new[line - 1].strip() for line in range(j1 + 1, j2 + 1))
        if new_support and all(line in old_support or not old[line - 1].strip() for line in range(i1 + 1, i2 + 1)):
            continue  # an import or helper added, changed or removed: it goes with the rest
        statements = {starts[line] for line in lines if line in starts}
        if any(first <= i1 + 1 and max(i2, i1 + 1) <= last for first, last in passing):
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, _PASSES))
            continue
        gate = _opened_gate(old[i1:i2], new[j1:j2], tree, j1 + 1, runtime)
        if _removes_gate(old[i1:i2], new[j1:j2]) or gate:  # a gate goes only where no path past it still fails
            at = min(lines)
            later = next((stop for path, stop in failing if at in path and stop.line > at), None)
            if later is None and gate:  # past an opened gate, another one the port kept stops the path too
                # (Holocron's `if gpu >= torch.cuda.device_count(): raise ValueError(...)`); inside it, an assert of
                # its own (tabular-dl-tabr's), unlike a `raise` there, which is the gate
                end = gate.end_lineno or gate.lineno
                checks = {s.lineno for s in gate.body if isinstance(s, ast.Assert)}
                later = next((stop for path, stop in gated if at in path and (
                    stop.line > end or stop.line in checks)), None)
            if later is not None:
                decisions[index], kept_assert = False, True
                held.append(Held(i1 + 1, max(i2, i1 + 1), _on_original(later, hunks)))
                continue
        loaded = next((name for first, last, name in on_cpu if first <= min(lines) and max(lines) <= last), None)
        if loaded is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"`{loaded}` {CPU_SAVED}"))
            continue
        store = next((name for first, last, name in unread if first <= min(lines) and max(lines) <= last), None)
        if store is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"`{store}` {UNREAD}"))
            continue
        store = next((name for first, last, name in labels if first <= min(lines) and max(lines) <= last), None)
        if store is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"`{store}` {LABEL}"))
            continue
        store = next((name for first, last, name in shadowed if first <= min(lines) and max(lines) <= last), None)
        if store is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"`{store}` {SHADOWED}"))
            continue
        store = next((name for first, last, name in on_cuda if first <= min(lines) and max(lines) <= last), None)
        if store is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"`{store}` {CUDA_READ}"))
            continue
        option = next((name for first, last, name in overwritten if first <= min(lines) and max(lines) <= last), None)
        if option is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"the default of `{option}` {OVERWRITTEN}"))
            continue
        owner = next((name for first, last, name in never if first <= min(lines) and max(lines) <= last), None)
        if owner is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"{UNUSED} `{owner}`"))
            continue
        given = next((label for span, label in passed if _inside([span], old[i1:i2], new[j1:j2], j1 + 1)), None)
        if given is not None:
            decisions[index] = False
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, f"{given} {PASSED}"))
            continue
        opened = _opens_cuda(lines, guards, runtime)
        if opened is not None:
            decisions[index], kept_assert = False, True
            held.append(Held(i1 + 1, max(i2, i1 + 1), None, "the branch it opens off CUDA still names the device "
                             f"{opened.value!r} (line {_original_line(opened.lineno, hunks)})"))
            continue
        if not statements or (any(runs.get(s, _NEVER) is None for s in statements)
                              and not _inside(dead, old[i1:i2], new[j1:j2], j1 + 1)
                              and not _guard_for_nothing(lines, guards, runs)):
            decisions[index] = True
            kept_code = True
            continue
        stops = [runs[s] for s in sorted(statements) if runs.get(s, _NEVER) is not _NEVER]
        # never run: the stop of the innermost unit around it that ends its paths first
        stops += [stop for first, last, stop in sorted(before, key=lambda b: b[0] - b[1])
                  if first <= min(statements) <= last and stop.line < min(statements)]
        decisions[index] = False
        stop = next((s for s in stops if s is not None), None)
        if stop is not None:  # reported on the original's lines
            stop = _on_original(stop, hunks)
        held.append(Held(i1 + 1, max(i2, i1 + 1), stop))
    # a GradScaler moves with its autocast: where every autocast the port changed is held, its scalers stay too
    autocasts = [index for index, (_, i1, i2, _, _) in enumerate(hunks) if any("autocast" in t for t in old[i1:i2])]
    if autocasts and not any(decisions.get(index, False) for index in autocasts):
        for index, (_, i1, i2, j1, j2) in enumerate(hunks):
            if decisions.get(index) and any("GradScaler(" in t for t in new[j1:j2]):
                decisions[index] = False
                held.append(Held(i1 + 1, max(i2, i1 + 1), None, SCALER))
        kept_code = any(decisions.values())
    if not held:
        return Checked(migrated, [])
    merged: dict[int, list[str]] = {}  # a hunk put back with the imports it adds (the runtime's)
    for _ in range(4):  # an import the port removed goes back where a use of its name was put back (CCT's `cuda`)
        out: list[str] = []
        last = 0
        for index, (_, i1, i2, j1, j2) in enumerate(hunks):
            out.extend(old[last:i1])
            out.extend(merged[index] if index in merged else new[j1:j2] if decisions.get(index, kept_code)
                       else old[i1:i2])
            last = i2
        out.extend(old[last:])
        code = "".join(out)
        try:
            lost = unbound(parsed, ast.parse(code))
        except SyntaxError:
            return Checked(original, [Held(1, len(old), None)])
        binding = next((index for index, (_, i1, i2, _, _) in enumerate(hunks) if lost is not None
                        and index not in merged and decisions.get(index, kept_code)
                        and re.search(rf"\b{re.escape(lost)}\b", "".join(old[i1:i2]))), None)
        if lost is None or binding is None:
            break
        _, i1, i2, j1, j2 = hunks[binding]
        modules = {_imported_module(line) for line in old[i1:i2]} - {None}
        merged[binding] = old[i1:i2] + [line for line in new[j1:j2] if line not in old[i1:i2] and (
            module := _imported_module(line)) is not None and module not in modules]
    if lost is not None:
        return Checked(original, [Held(1, len(old), Stop("raise", 1, f"the port unbinds `{lost}`, which the code "
                                                                     "still reads"))])
    if kept_assert and code != original:  # the assert or query kept stops what runs after it: checked again with it
        again = check_port(original, code, exempt, parsed, None, gates, closed, tests, unused, folder)
        return Checked(again.code, held + [h for h in again.held if h not in held])
    return Checked(code, held)


def _imported_module(line: str) -> str | None:
    """The module a one-line import statement imports from (``from torch import cuda``: ``torch``), else None."""
    words = line.split()
    return words[1] if len(words) > 1 and words[0] in ("import", "from") else None


def _cpu_saved_loads(tree: ast.Module, folder: Path, runtime: frozenset[str]) -> list[tuple[int, int, str]]:
    """``(first, last line, file name)`` of each ``torch.load`` the port gave a plain ``map_location=tp.map_location()``
    where the file it loads is one of the repository's, saved from CPU tensors (`checkpoints.saved_on`)."""
    imports = imported(tree)
    scopes: dict[int, ast.AST] = {}
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        scopes.update((id(n), scope) for n in ast.walk(scope) if isinstance(n, ast.Call))
    found = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        mapped = next((k.value for k in call.keywords if k.arg == "map_location"), None)
        head, _, tail = (dotted(mapped.func) or "" if isinstance(mapped, ast.Call) else "").partition(".")
        if not (qualified(call.func, imports) == "torch.load" and isinstance(mapped, ast.Call) and not mapped.args
                and not mapped.keywords and head in runtime and tail == "map_location"):
            continue
        path = loaded_file(call, scopes[id(call)], folder, imports)
        if path is not None and (saved := saved_on(path)) is not None and "cuda" not in saved:
            found.append((call.lineno, call.end_lineno or call.lineno, path.name))
    return found


def _unread_stores(tree: ast.Module, runtime: frozenset[str], module: bool,
                   globals_: frozenset[str] = frozenset()) -> list[tuple[int, int, str]]:
    """``(first, last line, name)`` of each assignment of a device value to a name its scope never reads
    (``device = tp.available_device()`` in an example that places nothing): a port of it changes nothing. A
    function's locals; with ``module`` (nothing imports the module: a notebook, a test module), its globals too. The
    value must do nothing but answer (device queries, the runtime's calls, ``torch.device``): ``m = model.cuda()``
    moves the model. A scope that reads names dynamically (``locals()``, ``eval``) reads them all. ``globals_``: the
    module-level names the project never reads (`torchport.pipeline.unused.unread_globals`)."""
    return [(s.lineno, s.end_lineno or s.lineno, name) for _, stores, read in _scoped_stores(
        tree, runtime, module, globals_) for s, name in stores if name not in read]


def _scoped_stores(tree: ast.Module, runtime: frozenset[str], module: bool, globals_: frozenset[str]
                   ) -> Iterator[tuple[ast.AST, list[tuple[ast.Assign, str]], set[str]]]:
    """Each scope of ``tree`` with device stores (`device_stores`), those stores and the names the scope reads
    (`reads`); not a scope that reads names dynamically. Arguments as `_unread_stores` takes them."""
    scopes: list[ast.AST] = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    imports = imported(tree)
    for scope in ([tree] if module or globals_ else []) + scopes:
        stores = [(s, name) for s, name in device_stores(scope, runtime, imports)
                  if module or scope is not tree or name in globals_]
        if not stores:  # most scopes: no device value stored, nothing more to read
            continue
        read = reads(scope)
        if read is not None:
            yield scope, stores, read


def _label_stores(tree: ast.Module, runtime: frozenset[str], module: bool,
                  globals_: frozenset[str] = frozenset()) -> list[tuple[int, int, str]]:
    """``(first, last line, name)`` of each assignment of a device value (see `only_answers`) whose every read in
    its scope is a label: compared (``device == "cuda"``) or written into text (``f"pybind_{device}.cu"``,
    ``print(device)``), never handed to a placement (torchsparse's ``setup.py`` picks its extension's sources and
    type by it). Its port changes only which text and branches the comparisons kept as written pick. A function's
    locals; with ``module`` (nothing imports the module), its globals too; ``globals_`` as `_unread_stores`."""
    found: list[tuple[int, int, str]] = []
    for scope, stores, _ in _scoped_stores(tree, runtime, module, globals_):
        labels = _label_names(scope)
        found.extend((s.lineno, s.end_lineno or s.lineno, name) for s, name in stores if name in labels)
    return found


def _shadowed_stores(tree: ast.Module, runtime: frozenset[str]) -> list[tuple[int, int, str]]:
    """``(first, last line, name)`` of each device store that the statements after it in its block read only as
    labels before they set the name again (AI_Action_Recognition's notebook: ``device = "cuda" if ... else "cpu"``,
    ``print(device)``, ``device = "cpu"``): whatever it picks, only text changes. Any scope, imported or not: the
    name is set again before the block ends."""
    imports = imported(tree)
    found: list[tuple[int, int, str]] = []
    blocks = [(node, body) for node in ast.walk(tree) for field in ("body", "orelse", "finalbody")
              if isinstance(body := getattr(node, field, None), list) and body and isinstance(body[0], ast.stmt)]
    parents: dict[int, ast.AST] | None = None  # made where a block stores a device: most modules store none
    closures: dict[int, bool] = {}  # per scope: whether another function may read its names meanwhile
    for owner, body in blocks:
        for index, statement in enumerate(body):
            if (name := _device_store(statement, runtime, imports)) is None:
                continue
            if parents is None:
                parents = parent_map(tree)
            scope = owner
            while not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                scope = parents[id(scope)]
            # a global may be read by any function called meanwhile; a local only by a closure
            if id(scope) not in closures:
                closures[id(scope)] = isinstance(scope, ast.Module) or any(
                    isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not scope
                    for n in ast.walk(scope))
            for later in body[index + 1:]:
                if closures[id(scope)] and any(isinstance(n, ast.Call) and not (
                        isinstance(n.func, ast.Name) and n.func.id == "print") for n in ast.walk(later)):
                    break
                loads = [n for n in ast.walk(later) if isinstance(n, ast.Name) and n.id == name
                         and not isinstance(n.ctx, ast.Store)]
                if any(not _labels(n, parents) for n in loads):
                    break  # read: the store matters
                if isinstance(later, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                         for t in later.targets):
                    found.append((statement.lineno, statement.end_lineno or statement.lineno, name))
                    break
                if isinstance(later, (ast.Global, ast.Nonlocal, ast.FunctionDef, ast.AsyncFunctionDef,
                                      ast.ClassDef)) or any(isinstance(n, ast.Call) and isinstance(
                                          n.func, ast.Name) and n.func.id in _DYNAMIC_READS for n in ast.walk(later)):
                    break  # a definition may read it later; `locals()` may read it now
    return found


def _text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def labelled(tree: ast.Module) -> set[str] | None:
    """The names read anywhere in ``tree`` only as labels (`_labels`): compared with text, formatted into it,
    printed; None where the module looks names up at run time."""
    return None if reads(tree) is None else _label_names(tree)


def _label_names(scope: ast.AST) -> set[str]:
    """The names ``scope`` (with what it nests) reads, and only as labels (`_labels`)."""
    parents = parent_map(scope)
    loads: dict[str, bool] = {}
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads[n.id] = loads.get(n.id, True) and _labels(n, parents)
    return {name for name, label in loads.items() if label}


def _labels(load: ast.Name, parents: Mapping[int, ast.AST]) -> bool:
    """Whether this read of a name only labels: an operand of a comparison with text, a value formatted into an
    f-string, or an argument of ``print``."""
    parent = parents.get(id(load))
    if isinstance(parent, ast.Compare):
        return all(_text(n) or isinstance(n, (ast.List, ast.Tuple, ast.Set)) and all(_text(e) for e in n.elts)
                   for n in (parent.left, *parent.comparators) if n is not load)
    if isinstance(parent, ast.FormattedValue):
        return True
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "print" \
        and load in parent.args


def _read_on_cuda(tree: ast.Module, runtime: frozenset[str], module: bool, runs: Mapping[int, Stop | None],
                  starts: Mapping[int, int]) -> list[tuple[int, int, str]]:
    """``(first, last line, name)`` of each assignment of a device value (see `only_answers`) that no clean path
    off CUDA reads: every read of the name is on a line that runs only on CUDA (under a kept
    ``if cuda_available:``) or hands it to a parameter of the module's own function that is read only there
    (SimCTG's ``device = torch.device('cuda')``, read by ``model.to(device)`` and
    ``evaluate_dev_set_ppl(..., cuda_available, device)`` under such guards). Its port changes nothing. A function's
    locals; with ``module`` (nothing imports the module), its globals too. ``runs``: `check_port`'s statements
    run off CUDA; ``starts``: each line's statement."""
    imports = imported(tree)
    functions = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def live(node: ast.expr, parents: Mapping[int, ast.AST], depth: int) -> bool:
        if runs.get(starts.get(node.lineno, node.lineno), _NEVER) is not None:
            return False  # that line runs on no clean path off CUDA
        parent = parents.get(id(node))
        param: str | int | None
        if isinstance(parent, ast.keyword):
            param = parent.arg
            parent = parents.get(id(parent))
        elif isinstance(parent, ast.Call) and node in parent.args:
            param = parent.args.index(node)
        else:
            return True
        if not isinstance(parent, ast.Call) or not isinstance(parent.func, ast.Name) or param is None:
            return True
        called = functions.get(parent.func.id)
        if called is None or depth > 2 or any(isinstance(a, ast.Starred) for a in parent.args):
            return True
        names = [a.arg for a in (*called.args.posonlyargs, *called.args.args, *called.args.kwonlyargs)]
        if isinstance(param, int):
            if param >= len(called.args.posonlyargs) + len(called.args.args):
                return True
            param = names[param]
        return param not in names or read_live(called, param, depth + 1)

    read: dict[int, tuple[dict[int, ast.AST], dict[str, list[ast.Name]], set[str]] | None] = {}

    def read_live(scope: ast.AST, name: str, depth: int) -> bool:
        if id(scope) not in read:  # once a scope: its parents, its reads by name, its declared names
            declared = {n for d in ast.walk(scope) if isinstance(d, (ast.Global, ast.Nonlocal)) for n in d.names}
            loads: dict[str, list[ast.Name]] = {}
            for n in ast.walk(scope):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
                    loads.setdefault(n.id, []).append(n)
            read[id(scope)] = None if reads(scope) is None else (
                {id(child): node for node in ast.walk(scope) for child in ast.iter_child_nodes(node)}, loads, declared)
        known = read[id(scope)]
        if known is None or name in known[2]:
            return True
        return any(live(n, known[0], depth) for n in known[1].get(name, ()))

    found: list[tuple[int, int, str]] = []
    scopes: list[ast.AST] = [*([tree] if module else []), *functions.values()]
    scopes += [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n not in functions.values()]
    for scope in scopes:
        found.extend((s.lineno, s.end_lineno or s.lineno, name) for s, name in device_stores(scope, runtime, imports)
                     if not read_live(scope, name, 0))
    return found


def device_stores(scope: ast.AST, runtime: frozenset[str], imports: Mapping[str, str]) -> list[tuple[ast.Assign, str]]:
    """Each ``name = <device value>`` of ``scope`` (a module or a function, not what it defines), with the name: a
    value that does nothing but answer (`only_answers`)."""
    return [(s, name) for s in own_statements(scope.body)  # type: ignore[attr-defined]
            if isinstance(s, ast.Assign) and (name := _device_store(s, runtime, imports)) is not None]


def _device_store(statement: ast.stmt, runtime: frozenset[str], imports: Mapping[str, str]) -> str | None:
    """The name ``statement`` binds, where it is ``name = <device value>`` (`only_answers`); else None."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(
            target := statement.targets[0], ast.Name) and only_answers(statement.value, runtime, imports):
        return target.id
    return None


def reads(scope: ast.AST) -> set[str] | None:
    """The names ``scope`` (a module or a function, with what it nests) may read: those it loads, the words of its
    strings (``__all__``, ``getattr(m, "device")``), those it declares ``global`` or ``nonlocal``; None where it
    looks names up at run time (``locals()``, ``eval``): then it may read any."""
    found: set[str] = set()
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            found.add(n.id)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            found.add(n.value)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            found.update(n.names)  # declared: the module's
    return None if found & _DYNAMIC_READS else found


_DYNAMIC_READS = frozenset(torch_facts.words("name_lookup_builtin"))


def own_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of one scope, in its blocks too, not those of the functions and classes it defines."""
    for statement in body:
        yield statement
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in ("body", "orelse", "finalbody"):
                yield from own_statements(getattr(statement, block, None) or [])
            for handler in getattr(statement, "handlers", None) or []:
                yield from own_statements(handler.body)


def only_answers(value: ast.expr, runtime: frozenset[str], imports: Mapping[str, str]) -> bool:
    """Whether evaluating ``value`` does nothing but answer: its calls are the runtime's, device queries
    (`torch_facts.named("available", "count")`), ``torch.device``, or ``str``; and it names a device somewhere."""
    calls = [n for n in ast.walk(value) if isinstance(n, ast.Call)]
    for call in calls:
        chain = dotted(call.func)
        if chain is None:
            return False
        if chain.partition(".")[0] in runtime or chain == "str":
            continue
        if qualified(call.func, imports) not in _ANSWERS:
            return False
    return bool(calls) or any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                              and torch_facts.CUDA_SPEC.fullmatch(n.value) for n in ast.walk(value))


_ANSWERS = torch_facts.named("available", "count", "accelerator_available") | {"torch.device"}



def _never_named(tree: ast.Module) -> list[tuple[int, int, int, int]]:
    """The spans of the module-level functions the module never names (a notebook's copy of a training loop that
    no cell calls)."""
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return [(f.lineno, 0, f.end_lineno or f.lineno, _WHOLE) for f in tree.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name not in named
            and not any(isinstance(c, ast.Constant) and c.value == f.name for c in ast.walk(tree))]


def _helpers_of_skipped_tests(tree: ast.Module, skipped: set[int]) -> list[tuple[int, int, int, int]]:
    """In a test module, the spans of the module-level helpers (functions not named ``test*``, undecorated) that
    only tests a skip mark skips off CUDA name, directly or through other helpers (fairscale's ``_init()``, called by
    ``@skip_if_no_cuda`` tests alone): they never run there. The module body, every test and method not skipped and
    every decorated function (a fixture, a hook) may run."""
    helpers = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
               and not s.name.startswith("test") and not s.decorator_list}
    if not helpers:
        return []

    def reads(node: ast.AST) -> set[str]:
        """The helpers ``node`` names, outside the units a skip mark skips."""
        if id(node) in skipped:
            return set()
        if isinstance(node, ast.Name) and node.id in helpers:
            return {node.id}
        return set().union(*(reads(child) for child in ast.iter_child_nodes(node)))

    def names(node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in helpers}

    named = set().union(*(reads(s) for s in tree.body if getattr(s, "name", None) not in helpers))
    # only what skipped tests name, in turn: a helper no test names (DF-GAN's lib/modules.py `train`, beside its
    # `test` helper) is for other modules
    by_skipped = _reached(helpers, set().union(*(names(node) for node in ast.walk(tree) if id(node) in skipped)),
                          names)
    lines = {helpers[name].lineno for name in by_skipped}
    return [span for span in _unnamed_spans(helpers, named, reads) if span[0] in lines]


def _passing_tests(original: ast.Module, exempt: frozenset[int]) -> list[tuple[int, int]]:
    """The line spans of the tests of ``original`` (functions and methods named ``test*``) that run clean on the CPU
    and on MPS as written, with no device query in them: nothing there needs CUDA, so what names it is a value the
    test checks, not a placement (a placement of CUDA would stop the path)."""
    spans = []
    clean: dict[int, bool] = {}
    for target in OFF_CUDA:
        for unit in Evaluator(original, target, exempt).units():
            node = unit.node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                clean[id(node)] = clean.get(id(node), True) and unit.skipped is None and bool(unit.paths) and all(
                    p.stop is None for p in unit.paths)
    for node in ast.walk(original):
        if clean.get(id(node)) and not _QUERY.search(ast.unparse(node)):
            spans.append((node.lineno, node.end_lineno or node.lineno))  # type: ignore[attr-defined]
    return spans


_QUERY = text("availability_query")
UNREAD = "is never read: the value changes nothing"  # the note of a device value nothing reads
CUDA_READ = "is read only where CUDA runs: its port changes nothing"  # a device value read under CUDA guards
LABEL = "is only compared and written into text, never placed: its port changes nothing it moves"  # a label
SHADOWED = "is only written into text before it is set again: its port changes nothing it moves"
CPU_SAVED = "holds CPU tensors: it loads the same on every backend"  # the note of a repository's checkpoint
PASSED = "is passed by every call in the project: its default changes nothing"  # a default no call reaches
OVERWRITTEN = "is set again off CUDA before anything reads it: its port changes nothing"  # an option's default
UNUSED = "nothing in the project runs"  # the note of a definition no program runs, said once per module
SCALER = "a GradScaler moves with its autocast, which stays CUDA's here"  # the note of a scaler held with it
_PASSES = "the test passes off CUDA as written: its CUDA devices are values it checks"


def _guard_for_nothing(lines: set[int], guards: Sequence[ast.If], runs: dict[int, Stop | None]) -> bool:
    """Whether the changed ``lines`` lie in the test of an ``if`` with no ``else`` whose body no clean path off
    CUDA runs (fairscale's ``if tp.is_available(): devices.append("cuda")`` on MPS): the port of the test only
    opens a path that still fails, or none."""
    for guard in guards:
        test = range(guard.test.lineno, (guard.test.end_lineno or guard.test.lineno) + 1)
        if not guard.orelse and lines <= set(test):
            if all(isinstance(s, ast.Raise) for s in guard.body):
                return False  # a check (RTVC's `if batch_size % tp.process_count() != 0: raise`): its port is
                # for the path that goes on, which the kept test would stop (a division by CUDA's count of 0)
            return not any(runs.get(s.lineno, _NEVER) is None for s in guard.body)
    return False


def _opened_gate(old: Sequence[str], new: Sequence[str], tree: ast.Module, first: int,
                 runtime: frozenset[str]) -> ast.If | None:
    """The gate whose CUDA query a one-line hunk gives to the runtime (``if not torch.cuda.is_available(): raise
    ...`` -> ``if not tp.is_available(): raise ...``; tabular-dl-tabr's ``if tp.is_available(): assert
    os.environ.get('CUDA_VISIBLE_DEVICES') ...``): on MPS it now lets the path through. None for none."""
    if len(old) != 1 or len(new) != 1 or not old[0].lstrip().startswith("if ") or not new[0].lstrip().startswith(
            "if "):
        return None
    gate = next((n for n in ast.walk(tree) if isinstance(n, ast.If) and n.lineno == first), None)
    if gate is None or not any(isinstance(s, (ast.Raise, ast.Assert)) for s in gate.body) or not any(
            isinstance(n, ast.Name) and n.id in runtime for n in ast.walk(gate.test)):
        return None
    return gate


def _removes_gate(old: Sequence[str], new: Sequence[str]) -> bool:
    """Whether a hunk takes out a gate (TP009's CUDA ``assert``, or its ``if not torch.cuda.is_available():`` that
    exits) and writes none in its place."""
    return any(line.lstrip().startswith(("assert ", "if ")) for line in old) and not any(
        line.lstrip().startswith(("assert ", "if ")) for line in new)


def _opens_cuda(lines: set[int], guards: Sequence[ast.If], runtime: frozenset[str]) -> ast.Constant | None:
    """The CUDA device (``"cuda"``, ``"cuda:1"``) still named outside a comparison in the branch a port of the test
    of an ``if`` (the changed ``lines``) opens (kymatio's ``if tp.is_available(): devices = ['cuda', 'cpu']``), or
    None: off CUDA that branch would run where the device is not there. ``runtime``: the local names of
    torchport's runtime, whose calls map the devices they are given."""
    for guard in guards:
        if lines & set(range(guard.test.lineno, (guard.test.end_lineno or guard.test.lineno) + 1)):
            nodes = [n for s in guard.body for n in ast.walk(s)]
            # a comparison asks, a runtime call maps what it is given (`tp.device(f'cuda:{i}')`): neither places
            compared = {id(n) for node in nodes if isinstance(node, ast.Compare) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in runtime) for n in ast.walk(node)}
            # a string, or an f-string's text before its first field (nnAudio's f'cuda:{gpu_idx}')
            texts = [n.values[0] if isinstance(n, ast.JoinedStr) and n.values else n for n in nodes]
            named = next((n for n in texts if isinstance(n, ast.Constant) and isinstance(n.value, str)
                          and id(n) not in compared and (n.value == "cuda" or n.value.startswith("cuda:"))), None)
            if named is not None:
                return named
    return None


def _never_run_after(tree: ast.Module, stop: int, closed: bool) -> list[tuple[int, int, int, int]]:
    """The spans of the module-level functions and classes that never run off CUDA because the module body always
    stops at line ``stop`` before anything names them (vae.py's ``VAE`` class, used only after a line that still
    needs CUDA): importing the module stops there too. A stop under ``if __name__ == "__main__":`` counts only in a
    module nothing imports (``closed``): an importer may call the functions."""
    if not closed and any(isinstance(s, ast.If) and main_guard(s.test) and s.lineno <= stop <= (s.end_lineno or 0)
                          for s in tree.body):
        return []
    defined = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    run: list[ast.AST] = []  # what the module body runs up to the stop: decorators, defaults, bases of definitions
    for statement in tree.body:
        if statement.lineno > stop:
            break
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            run.extend(statement.decorator_list)
            run.extend(statement.args.defaults + [d for d in statement.args.kw_defaults if d is not None]
                       if not isinstance(statement, ast.ClassDef) else [*statement.bases, *statement.keywords])
        else:
            run.append(statement)
    # in the module body, what comes after the stop's line does not run; in a definition that runs, all may
    named = {n.id for part in run for n in ast.walk(part) if isinstance(n, ast.Name) and n.lineno <= stop
             and n.id in defined}
    return _unnamed_spans(defined, named, lambda node: {  # one defined after the stop is never defined
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defined})


def _unnamed_spans(defined: Mapping[str, ast.stmt], named: set[str],
                   reads: Callable[[ast.AST], set[str]]) -> list[tuple[int, int, int, int]]:
    """The whole-line spans of the module-level ``defined`` functions and classes that neither ``named`` (what
    runs names) nor the definitions it names, in turn (``reads``: the names of ``defined`` a definition reads)
    ever name: they never run."""
    named = _reached(defined, named, reads)
    return [(d.lineno, 0, d.end_lineno or d.lineno, _WHOLE) for name, d in defined.items() if name not in named]


def _reached(defined: Mapping[str, ast.stmt], named: set[str], reads: Callable[[ast.AST], set[str]]) -> set[str]:
    """``named`` and the ``defined`` names its definitions name (``reads``), in turn (``named`` grows in place)."""
    todo = list(named)
    while todo:
        for other in reads(defined[todo.pop()]) - named:
            named.add(other)
            todo.append(other)
    return named


def _unread_defaults(tree: ast.Module) -> list[tuple[int, int, int, int]]:
    """The spans of the defaults of parameters their function never reads (``def render(self, device="cuda")``
    whose body uses ``self.device``, or rebinds ``device`` before any use): no call is changed by them. A
    function that reads ``locals()`` or ``vars()`` reads every parameter."""
    spans: list[tuple[int, int, int, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        pairs = defaults(node.args)
        if not pairs or any(isinstance(n, ast.Name) and n.id in ("locals", "vars")
                            for stmt in node.body for n in ast.walk(stmt)):
            continue
        spans.extend((d.lineno, d.col_offset, d.end_lineno or d.lineno, d.end_col_offset or 0)
                     for a, d in pairs if not _reads_first(node.body, a.arg))
    return spans


def _overwritten_options(tree: ast.Module, deciders: Sequence[Evaluator]) -> list[tuple[int, int, str]]:
    """The first and last lines, and the option, of each default of a command-line option that every path off
    CUDA sets again before anything reads it (Deep-SAD's ``@click.option('--device', default='cuda')``, then ``if
    not torch.cuda.is_available(): device = 'cpu'``; argparse's ``args.device`` alike): on CUDA the default stays,
    elsewhere it is never read, so its port changes nothing. ``deciders``: one evaluator per target off CUDA
    (`Evaluator.decided`)."""
    def option(call: ast.Call) -> tuple[str, ast.expr] | None:
        """The destination and the default of ``add_argument(...)`` or ``click.option(...)``, if it has one."""
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)
                     and isinstance(k.value.value, str)), None)
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        name = dest or next((n.lstrip("-").replace("-", "_") for n in names if n.startswith("--")), None)
        return (name, default) if default is not None and name else None

    # argparse's options, read as `args.<name>`; click's, the parameters of the function they decorate
    parsed: dict[str, list[ast.expr]] = {}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "add_argument"):
        if (found := option(call)) is not None:
            parsed.setdefault(found[0], []).append(found[1])
    scopes: list[tuple[list[ast.stmt], dict[str, list[ast.expr]]]] = [(tree.body, {})] if parsed else []
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        given: dict[str, list[ast.expr]] = {}
        for decorator in function.decorator_list:
            if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) \
                    and decorator.func.attr == "option" and (found := option(decorator)) is not None:
                given.setdefault(found[0], []).append(found[1])
        if parsed or given:
            scopes.append((function.body, given))
    spans: list[tuple[int, int, str]] = []
    for body, given in scopes:
        for index, statement in enumerate(body):
            if not isinstance(statement, ast.If) or statement.orelse:
                continue
            for assign in statement.body:
                if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                        and isinstance(assign.value, ast.Constant)):
                    continue
                target = assign.targets[0]
                name, table = (target.attr, parsed) if isinstance(target, ast.Attribute) else (
                    target.id, given) if isinstance(target, ast.Name) else ("", {})
                if name not in table or any(  # read before: the default mattered
                        (isinstance(n, ast.Attribute) and n.attr == name or isinstance(n, ast.Name) and n.id == name)
                        and isinstance(n.ctx, ast.Load) for s in body[:index] for n in ast.walk(s)) or not all(
                        d.decided(statement.test) is True for d in deciders):  # asked last: evaluation costs most
                    continue
                spans.extend((d.lineno, d.end_lineno or d.lineno, name) for d in table[name])
    return spans


def _passed_defaults(tree: ast.Module, unused: frozenset[str]) -> list[tuple[tuple[int, int, int, int], str]]:
    """The span of each default ``unused`` names as ``"function(parameter)"`` (every call in the project passes
    the parameter: `torchport.pipeline.unused.passed_defaults`), with the words that name it."""
    if not any(name.endswith(")") for name in unused):
        return []
    functions = [(s.name, s) for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    functions += [(c.name, f) for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
                  if isinstance(f, ast.FunctionDef) and f.name == "__init__"]  # `Class(param)`: its constructor's
    return [((d.lineno, d.col_offset, d.end_lineno or d.lineno, d.end_col_offset or 0), f"`{a.arg}` of `{name}`")
            for name, s in functions for a, d in defaults(s.args) if f"{name}({a.arg})" in unused]


def _reads_first(body: list[ast.stmt], name: str) -> bool:
    """Whether ``body`` may read ``name`` before a statement of its own level binds it (``x = ...``)."""
    for stmt in body:
        loads = any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Store)
                    or isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
                    for n in ast.walk(stmt))
        if loads:
            return True
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, ast.AnnAssign) and stmt.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return False
    return False


def _inside(spans: Sequence[tuple[int, int, int, int]], old: Sequence[str], new: Sequence[str], first: int) -> bool:
    """Whether every change from ``old`` to ``new`` (lines of one hunk, the new ones from line ``first``) lies
    inside one of ``spans`` (branches no evaluation took): a rewrite of ``x.cuda() if use_cuda else x`` off CUDA.
    Only hunks that change lines one for one, in ASCII (columns of `ast` are UTF-8 offsets), are read."""
    if not spans or len(old) != len(new):
        return False
    if all(any(line <= number <= end and column == 0 and end_column >= _WHOLE for line, column, end, end_column
               in spans) for number in range(first, first + len(new))):
        return True  # whole lines (a function never run): no column to read
    if not all(line.isascii() for line in (*old, *new)):
        return False
    for number, (a, b) in enumerate(zip(old, new, strict=True), first):
        for tag, _, _, c1, c2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag != "equal" and not any((line, column) <= (number, c1) and (number, c2) <= (end, end_column)
                                          for line, column, end, end_column in spans):
                return False
    return True


_WHOLE = 10**6  # the end column of a span of whole lines
_CALLED = " stops at line "  # `Evaluator`'s message for a stop inside a called function


def _on_original(stop: Stop, hunks: Sequence[tuple[str, int, int, int, int]]) -> Stop:
    """``stop`` (on the migrated code's lines) on the original's, the line inside a called function too."""
    if not stop.origin:
        return replace(stop, line=_original_line(stop.line, hunks))
    head, *called = stop.message.split(_CALLED)  # each call on the way names the line it stops at
    message = _CALLED.join([head, *(f"{_original_line(int(n), hunks)}:{rest}" if n.isdigit() else f"{n}:{rest}"
                                    for n, _, rest in (part.partition(":") for part in called))])
    return replace(stop, line=_original_line(stop.line, hunks), origin=_original_line(stop.origin, hunks),
                   message=message)


def _original_line(line: int, hunks: Sequence[tuple[str, int, int, int, int]]) -> int:
    """Line ``line`` of the migrated code as a line of the original (a changed line: its hunk's first)."""
    shift = 0
    for _, i1, i2, j1, j2 in hunks:
        if line <= j1:
            break
        if line <= j2:
            return i1 + 1
        shift = i2 - j2
    return line + shift


class _Never:
    pass


_NEVER = _Never()  # no path off CUDA runs the statement


def _record(units: list[Unit], runs: dict[int, Stop | None], before: list[tuple[int, int, Stop]],
            failing: list[tuple[set[int], Stop]], gated: list[tuple[set[int], Stop]]) -> None:
    for unit in units:
        failing.extend((path.lines, path.stop) for path in unit.paths if path.stop is not None
                       and path.stop.kind == "cuda")
        gated.extend((path.lines, path.stop) for path in unit.paths if path.stop is not None
                     and path.stop.kind in ("gate", "raise"))
        span = (getattr(unit.node, "lineno", 1), getattr(unit.node, "end_lineno", None) or 10**9)
        if unit.skipped is not None:
            before.append((*span, unit.skipped))
        before.extend((*span, path.stop) for path in unit.paths if not path.clean and path.stop is not None)
        for path in unit.paths:
            for line in path.lines:
                if path.clean:
                    runs[line] = None
                elif runs.get(line, _NEVER) is _NEVER:
                    runs[line] = path.stop


def _statement_starts(tree: ast.Module) -> dict[int, int]:
    """Each line of a statement -> the first line of the innermost statement holding it (a compound statement's
    header lines map to the statement; its body's lines to the body's statements)."""
    starts: dict[int, int] = {}

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            end = stmt.end_lineno or stmt.lineno
            first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
            for line in range(first, end + 1):
                starts[line] = stmt.lineno
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(stmt, name, None)
                if isinstance(inner, list):
                    for item in inner:
                        if isinstance(item, (ast.ExceptHandler, ast.match_case)):
                            visit(item.body)
                    visit([s for s in inner if isinstance(s, ast.stmt)])

    visit(tree.body)
    return starts


def _support_lines(tree: ast.Module, imports_only: bool = False) -> set[int]:
    """Lines of the module's imports (and, unless ``imports_only``, module-level definitions): what a port adds,
    changes or removes to support its rewrites."""
    kinds: tuple[type, ...] = (ast.Import, ast.ImportFrom)
    if not imports_only:
        kinds += (ast.FunctionDef, ast.ClassDef, ast.Try, ast.If)
    lines: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, kinds):
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module binds anywhere at its top level (imports, definitions, assignments, nested blocks)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".", 1)[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound


def unbound(original: ast.Module, migrated: ast.Module) -> str | None:
    """A name ``original`` binds and ``migrated`` still reads but no longer binds (an import a rule removed while
    a use of it stayed), or None."""
    lost = _module_names(original) - _module_names(migrated)
    if not lost:
        return None
    return next((n.id for n in ast.walk(migrated) if isinstance(n, ast.Name) and n.id in lost), None)


_STOPS: dict[tuple[str, str, str, tuple[str, ...], frozenset[str]], tuple[Stop | None, ...]] = {}  # asked again


def program_stops(original: str, migrated: str, kind: str, targets: tuple[str, ...] = ("mps", "xpu", "cpu"),
                  tree: ast.Module | None = None, gates: frozenset[str] = frozenset()) -> tuple[Stop | None, ...]:
    """`program_stop` for each of ``targets``, the port parsed once (``tree``: its parse when the caller has it,
    as for a module the port leaves unchanged; not kept); ``gates`` as `Evaluator` takes them."""
    key = (original, migrated, kind, targets, gates)
    if key in _STOPS:
        return _STOPS[key]
    if tree is None:
        try:
            tree = ast.parse(migrated)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    if len(_STOPS) >= 20_000:  # small values; the texts they key are the run's own
        _STOPS.clear()
    found = _STOPS[key] = tuple(program_stop(original, migrated, target, kind, tree, gates) if tree else None
                                for target in targets)
    return found


def program_stop(original: str, migrated: str, target: str, kind: str,
                 tree: ast.Module | None = None, gates: frozenset[str] = frozenset()) -> Stop | None:
    """Where the ported program ``migrated`` always stops on ``target``, on the original's lines, or None.

    ``kind``: ``test`` (a test module stops where every test is skipped or stops), or a script's kind (it stops
    where every path of its body stops), run with no command-line arguments (its options' defaults). ``tree``: the
    parse of ``migrated`` when the caller has it. ``gates``:
    local names of the CUDA gates other modules define (see `Evaluator`).
    """
    if tree is None:
        try:
            tree = ast.parse(migrated)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    try:
        units = Evaluator(tree, target, gates=gates, defaults=True).units(kind == "test")
    except RecursionError:
        return None
    if kind == "test":
        tests = [u for u in units[1:] if getattr(u.node, "name", "").startswith("test")]
        stops = [u.skipped or next((p.stop for p in u.paths if not p.clean), None) for u in tests]
        if not tests or any(u.skipped is None and any(p.clean for p in u.paths) for u in tests):
            return None
    else:
        paths = units[0].paths
        # a path the author's own `raise` ends (an unknown option) runs nothing: the others decide
        if not paths or any(p.clean and (p.stop is None or p.stop.kind != "raise") for p in paths) \
                or all(p.clean for p in paths):
            return None
        stops = [p.stop for p in paths if not p.clean]
    first = min((s for s in stops if s is not None), key=lambda s: s.line, default=None)
    if first is None or migrated == original:
        return first
    old, new = original.splitlines(keepends=True), migrated.splitlines(keepends=True)
    hunks = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    return _on_original(first, hunks)
