"""The programs of a project and where each can run once ported: the model behind `torchport programs`.

An entry point is a module a person runs: a script (a ``__main__`` block, or calls and loops at its top level), a
module named by
``[project.scripts]``, a test module (``test_*.py``, ``*_test.py``), a notebook. A library module (one that
defines functions or classes) that no module of the project imports is an entry point too (its users' programs
start there), as ``library``. A program is
its entry point and every module of the project it imports, transitively (`Project.reach`).

Each module's requirements (`torchport.codemods.analysis.requirements`) give the program's blockers per
target: a CUDA-only requirement keeps it off MPS, XPU and the CPU; what MPS lacks (float64, sparse tensors)
keeps it on the CPU of a Mac, as the original ran there. A process group is not a blocker: on a Mac the runtime
picks the CPU once one exists. A program runs on every
target without a blocker.
"""

from __future__ import annotations

import ast
import copy
import difflib
import functools
import os
import re
import tomllib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from torchport.codemods.analysis.lacks import LACKS_TEXT, handles_mps
from torchport.codemods.analysis.programs import (
    CUDA_ONLY_TEXT,
    always_run,
    arguments,
    is_main,
    is_script,
    parameters,
    placed_again,
)
from torchport.model import installed, torch_facts
from torchport.model.torch_facts import RAISES_OFF_CUDA, text
from torchport.model.trees import enclosing_scope, parent_map
from torchport.pipeline.engine import STILL_STOPS
from torchport.pipeline.notebooks import SUFFIX, locate
from torchport.pipeline.project import (
    Outline,
    Project,
    deferred_cuda_imports,
    fewer_collections,
    live_lack,
    live_requirement,
    main_blocks,
    outline,
    own_lack,
    parse,
    program_defs,
    program_names,
    reached_lack,
    remembered,
    split_choice,
    top_definition,
    used,
    words,
    works_at_top,
)
from torchport.results import COMPILED, KEPT_CHOICE, STORAGE, Diagnostic, FileResult, keeps_cuda_or_cpu

if TYPE_CHECKING:
    from torchport.codemods.analysis.requirements import Requirement

OFF_CUDA = torch_facts.OFF_CUDA  # the targets a port adds
# `analysis.programs.CUDA_ONLY_TEXT` without its word boundaries (a superset that Python's re scans faster): most
# modules lack it, and are not scanned with the exact pattern.
_CUDA_ONLY_LOOSE = re.compile(CUDA_ONLY_TEXT.pattern.replace(r"\b", ""))

# Text of a module that may define a CUDA gate that exits (`_calls_a_gate`): it asks CUDA and stops. Both
# must be there, in either order (the two cannot overlap): two scans, where one pattern with ``.*`` between them
# would scan the rest of the text from every match.
_GATE_ASKS = torch_facts.text("gate_asks")
_GATE_STOPS = torch_facts.text("gate_stops")
_GATE_LOOSE = (torch_facts.text("gate_asks_loose"), torch_facts.text("gate_stops_loose"))  # the same, faster
# The tags of `codemods.core.reasons` the program-level decisions cite (a test ties them): the reasons load no rule,
# but the warm path needs only their tags.
CUDA_ONLY_LIBRARY_TAG = "[R07 cuda-only-library]"  # CUDA_ONLY_LIBRARY
RUNS_NOWHERE_TAG = "[R25 runs-nowhere]"  # reasons.RUNS_NOWHERE
FAKES_CUDA_TAG = "[R08 fakes-cuda]"  # FAKES_CUDA
CUDA_ONLY_TAG = "[R01 cuda-only]"  # CUDA_ONLY
UNREACHED_TAG = "[R27 unreached]"  # UNREACHED
# Text of a module that places data on a device itself.
_PLACES_DATA = torch_facts.text("places_data")
KINDS = ("script", "console-script", "test", "notebook", "library")
_TEST_FILE = torch_facts.text("test_file")


@dataclass(frozen=True)
class Blocker:
    """What keeps a program off ``target``: ``reason`` at ``path:line`` (``path`` relative to the folder given); in
    a notebook, ``line`` of code cell ``cell`` (counted from 1 over every cell, as `torchport migrate` shows it)."""

    target: str
    reason: str
    path: str
    line: int
    cell: int | None = None
    chain: tuple[str, ...] = ()  # ``run.py:14``, ``models/net.py:9``: the imports that lead to it from the entry point

    @property
    def via(self) -> str | None:
        """The entry point's import that leads to it, in another file (``run.py:14``), or None."""
        return self.chain[0] if self.chain else None

    @property
    def place(self) -> str:
        """``lib/model.py:12``, or ``nb.ipynb:cell_3:2`` in a notebook."""
        return f"{self.path}:{'' if self.cell is None else f'cell_{self.cell}:'}{self.line}"

    def in_cell(self, result: FileResult) -> Blocker:
        """This blocker with its line placed in ``result``'s cells, when ``result`` (its file) is a notebook."""
        cell, line = locate(result, self.line)
        return self if not cell else replace(self, cell=int(cell[5:-1]), line=line)


@dataclass
class Program:
    """One entry point and what it reaches.

    Args:
        path: the entry point's file, relative to the folder given.
        kind: one of `KINDS`.
        runs_on: the targets it runs on once ported (``cuda`` always; ``cpu`` without a CUDA-only requirement).
        blockers: what keeps it off the other targets, per target.
        rewrites: the rewrites ``torchport migrate`` makes in the modules it reaches.
        reached: the indices, into the run's results, of the modules it reaches, itself included.
    """

    path: str
    kind: str
    runs_on: list[str] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    rewrites: int = 0
    reached: set[int] = field(default_factory=set, repr=False)

    def reasons(self, every: bool = False) -> list[str]:
        """The first blocker of each target it cannot use (``every``: all its blockers), targets with the same one
        together: ``"mps, xpu, cpu: imports triton (GPU kernels) (kernels/fused.py:1)"``."""
        why: dict[tuple[str, str], list[str]] = {}
        for target in OFF_CUDA:
            shown = [b for b in self.blockers if b.target == target][:None if every else 1]
            for blocker in shown:
                place = blocker.place if not blocker.chain else \
                    f"{blocker.place}, imported at {' → '.join(blocker.chain)}"
                why.setdefault((blocker.reason, place), []).append(target)
        return [f"{', '.join(targets)}: {reason} ({place})" for (reason, place), targets in why.items()]

    def verdict(self, every: bool = False) -> str:
        """One line: where it runs, and why not elsewhere (the first blocker per target, or ``every`` one)."""
        return "; ".join([f"runs on {', '.join(self.runs_on)}" if self.runs_on else "runs on no device",
                          *(f"not {reason}" for reason in self.reasons(every))])

    def as_json(self) -> dict[str, object]:
        """The program as the JSON report gives it (``reached`` left out)."""
        return {"path": self.path, "kind": self.kind, "runs_on": self.runs_on,
                "blockers": [{"target": b.target, "reason": b.reason, "path": b.path,
                              **({} if b.cell is None else {"cell": b.cell}), "line": b.line,
                              **({} if b.via is None else {"via": b.via}),
                              **({} if len(b.chain) < 2 else {"chain": list(b.chain)})} for b in self.blockers],
                "rewrites": self.rewrites, "modules": len(self.reached)}


def programs(results: Sequence[FileResult], root: Path) -> list[Program]:
    """Every program of the files in ``results`` (one per file of a run, ``original`` read), sorted by path.

    Args:
        results: the run's results (a file that could not be read or parsed has no requirements and reaches
            nothing).
        root: the folder given; paths are shown relative to it, and its ``pyproject.toml`` names the console
            scripts.
    """
    with fewer_collections():
        return _programs(results, root)


def _programs(results: Sequence[FileResult], root: Path) -> list[Program]:
    from torchport.codemods.analysis.requirements import Requirement

    trees, project = _model(results)
    scripts = _console_scripts(root)
    imported = project.imported()
    paths_shown: dict[int, str] = {}

    shown_index: dict[str, int] = {}

    def shown_as(index: int) -> str:
        """``results[index]``'s path as shown (resolved once: a module many programs reach is shown in each)."""
        if index not in paths_shown:
            paths_shown[index] = _shown(results[index].path, root)
            shown_index[paths_shown[index]] = index
        return paths_shown[index]

    engines = {target for index in range(len(results)) for _, target, name in project.bindings(index)
               if name is None or name.lower().startswith("test")}  # imported whole, or for a test of it
    kinds: dict[int, str] = {}
    for index, result in enumerate(results):
        kind = _kind(result, outline(result.original), project.names[index], scripts, index in imported,
                     index in engines)
        if kind is not None:
            kinds[index] = kind
    reached = {index for entry in kinds for index in project.reach(entry)}
    for index in range(len(results)):
        if index not in kinds and index not in reached and index not in imported \
                and _public_module(shown_as(index), outline(results[index].original)):
            kinds[index] = "library"
    found: dict[tuple[int, bool], list[Requirement]] = {}
    predicates = _project_predicates(results, trees)
    modules = _modules(results)

    def needs(index: int, entry: bool, reach: set[int]) -> list[Requirement]:
        """What keeps module ``index`` on CUDA (its gate too, as an entry point), then what MPS lacks in it where the
        program of modules ``reach`` runs it (`reached_lack`)."""
        key = (index, entry)
        text = results[index].original or ""
        parses = outline(text).parses
        if key not in found:
            bound = frozenset(_bound(index, project, predicates)) if entry else frozenset()
            found[key] = _requirements(text, entry, bound, modules) if parses else []
        lacks = (own_lack(project, index) if entry else reached_lack(project, index, reach)) if parses else None
        if lacks and keeps_cuda_or_cpu(lacks[1]):  # neither MPS nor an XPU has its kernels, or its data splits
            return [*found[key], Requirement(("mps", "xpu"), f"{'calls' if lacks[1].startswith(COMPILED) else 'uses'} "
                                             f"{lacks[1]}, which MPS and XPUs lack: on a Mac it runs on the CPU",
                                             lacks[0])]
        return [*found[key], *([Requirement(("mps",), f"uses {lacks[1]}, {_LACKS}: on a Mac it runs on the CPU",
                                            lacks[0])] if lacks else [])]

    def hops_to(entry: int, index: int, kind: str) -> tuple[str, ...]:
        """Each import from entry point ``entry`` to module ``index`` (`Project.import_chain`), as shown."""
        return () if index == entry else tuple(f"{shown_as(i)}:{at}" for i, at in project.import_chain(
            entry, index, script=kind in ("script", "console-script")))

    gates = _project_gates(results, trees)
    unchanged_gates = gate_users(results, [i for i in kinds if not results[i].gates])  # changed late too (avoid_mps)
    made = []
    for entry, kind in kinds.items():
        reach = sorted(project.reach(entry), key=lambda i: (i != entry, str(results[i].path)))
        program = Program(shown_as(entry), kind, reached=set(reach),
                          rewrites=sum(sum(results[i].rewrites.values()) for i in reach))
        if not outline(results[entry].original).parses:
            error = results[entry].error or _syntax_error(results[entry].original or "")
            head = error.split(":", 1)[0]  # `313:27: syntax error: ...`
            line = int(head) if head.isdigit() else 1
            program.blockers = [Blocker(t, f"does not parse ({error}): {installed.RUNS_NOWHERE}",
                                        program.path, line) for t in OFF_CUDA]
            made.append(program)
            continue
        if kind in ("script", "console-script") and (gated := _calls_a_gate(entry, trees, project, gates)):
            line, name, where = gated  # shown where it stops, the way a maintainer looks for it
            program.blockers.extend(Blocker(target, f"stops unless CUDA is there (`{name}`, called at "
                                                    f"{program.path}:{line})", shown_as(where[0]), where[1])
                                    for target in OFF_CUDA)
        environment = _environment_set(trees.get(entry))
        # a module imported in a function, under a guard or lazily is a path the program may not take: no blocker
        always, arms = project.run_as_script(entry) if kind in ("script", "console-script") else (
            project.reach(entry, always=True, off_cuda=True), [])
        for index in reach:
            if index not in always:
                continue
            shown, seen = shown_as(index), set[str]()
            hops: tuple[str, ...] | None = None
            if index != entry and results[index].path.suffix == ".py" and not outline(results[index].original).parses:
                # CCT's models/model.py imports utils/losses.py, a TabError: the program stops on every device
                error = _syntax_error(results[index].original or "")
                head = error.split(":", 1)[0]
                _stops_everywhere(program, f"imports {shown}, which does not parse ({error}): ", shown,
                                  int(head) if head.isdigit() else 1, hops_to(entry, index, kind))
                continue
            as_script = index == entry and kind in ("script", "console-script")
            if (unbound := project.unbound_read(index, as_script)):
                # PhySTNet's main.py reads `dataset_test`, which nothing binds, before it does anything
                _stops_everywhere(program, f"reads `{unbound[1]}`, which nothing binds, before it does its work: a "
                                  "NameError, ", shown, unbound[0], hops_to(entry, index, kind))
            if (refused := project.refused_call(index, as_script)):
                # MusicDiffusion's notebooks build a Denoiser with seven arguments; the class now takes three
                _stops_everywhere(program, f"calls `{refused[1]}` with arguments its signature refuses ({refused[2]}) "
                                  "before it does its work: a TypeError, ", shown, refused[0],
                                  hops_to(entry, index, kind))
            for line, name, module in project.undefined_imports(index)[:1]:
                # super-image's examples import a class its package does not define: an ImportError anywhere
                _stops_everywhere(program, f"imports {name} from {shown_as(module)}, which does not define it: ", shown,
                                  line, hops_to(entry, index, kind))
            for line, dotted in project.missing_imports(index)[:1]:
                # pytorch-models' train_detection.py imports a module of its own package the repository lacks
                _stops_everywhere(program, f"imports {dotted}, a module the project lacks: ", shown, line,
                                  hops_to(entry, index, kind))
            for need in needs(index, index == entry, program.reached):  # the first of each module, per target
                if any(environment.get(variable, None if by_get else value) != value
                       for variable, value, by_get in need.env):
                    continue  # the entry point sets the variable that decides it otherwise (ChatRWKV's chat.py)
                if hops is None:
                    hops = hops_to(entry, index, kind)
                program.blockers.extend(Blocker(target, need.reason, shown, need.line, chain=hops)
                                        for target in need.targets if target not in seen)
                seen.update(need.targets)
        if "cpu" not in {b.target for b in program.blockers} and (needed := live_requirement(
                project, reach, entry, modules[1])):
            # a CUDA-only library a function or class the program runs imports when it runs (flash_attn)
            index, line, why = needed
            program.blockers.extend(Blocker(target, why, shown_as(index), line) for target in OFF_CUDA
                                    if target not in {b.target for b in program.blockers})
        if "cpu" not in {b.target for b in program.blockers} and kind in ("script", "console-script", "notebook"):
            # a project module a function the program runs imports when it runs, and what that needs (point-
            # transformer's `main_worker` imports the model, whose ops import the extension built for CUDA alone;
            # improved's notebooks define `train`, which imports the discriminator, whose ops build theirs)
            for index in sorted(project.live_imports(always, program_names(project, reach)) - always,
                                key=lambda i: str(results[i].path)):
                met = next((n for n in needs(index, False, program.reached) if n.targets == OFF_CUDA), None)
                if met is not None:
                    have = {b.target for b in program.blockers}
                    program.blockers.extend(Blocker(target, met.reason, shown_as(index), met.line)
                                            for target in OFF_CUDA if target not in have)
                    break
        if "mps" not in {b.target for b in program.blockers} and (lived := live_lack(project, always, reach)):
            # what the functions the program runs import when they run: what MPS lacks there keeps a Mac on the CPU
            index, (line, what) = lived
            program.blockers.append(Blocker("mps", f"uses {what}, {_LACKS}: on a Mac it runs on the CPU",
                                            shown_as(index), line))
        for chain in arms:  # an `if`/`else` every arm of which imports what needs CUDA: no way around it
            first = [next(((i, n) for i in sorted(arm, key=lambda i: str(results[i].path))
                           for n in needs(i, False, program.reached)
                           if n.targets == OFF_CUDA), None) for arm in chain]
            if all(first) and first[0] is not None and not any(b.target == "cpu" for b in program.blockers):
                index, need = first[0]
                program.blockers.extend(Blocker(t, f"{need.reason} (every arm of its `if` needs CUDA)",
                                                shown_as(index), need.line) for t in OFF_CUDA)
        grouped = kind != "library" and _joins_a_group(entry, trees, project)
        layer = next(((i, at) for i in sorted(set(always) & set(reach))
                      if (at := _group_cuda_layer(trees.get(i))) is not None), None) if grouped else None
        if layer is not None:  # MagFace: `builder()` converts to SyncBatchNorm, trained in the group the script makes
            have = {b.target for b in program.blockers}
            program.blockers.extend(Blocker(t, "SyncBatchNorm in a process group trains on CUDA (or XPU) input only",
                                            shown_as(layer[0]), layer[1]) for t in ("cpu", "mps") if t not in have)
        if "mps" not in {b.target for b in program.blockers} and grouped:
            program.blockers.append(Blocker("mps", "always makes a process group, which takes no MPS tensors: on a "
                                                   "Mac the runtime picks the CPU", program.path,
                                            _group_line(trees.get(entry))))
        # the project pass gave it, or a script it always imports, `tp.avoid_mps`: what and where
        avoiding = next((i for i in reach if i in always and results[i].avoid_mps and (
            i == entry or not _avoids_in_main_block(results[i]))), None)  # (another script's runs where it is run)
        if avoiding is not None:
            why = results[avoiding].avoid_mps or ""
            what, _, spot = why.rpartition(", ")
            path, _, number = spot.rpartition(":")
            spotted = _spot(results[avoiding].path, path, root) if path else shown_as(avoiding)
            for target, machine in (("mps", "a Mac"), ("xpu", "an Intel GPU")):
                # `tp.keep_cuda_or_cpu` keeps an Intel GPU on the CPU as well
                if target not in {b.target for b in program.blockers} and (target == "mps" or keeps_cuda_or_cpu(why)):
                    program.blockers.append(Blocker(target, f"uses {what}: on {machine} it runs on the CPU", spotted,
                                                    int(number) if number.isdigit() else 1))
        if not any(_names_cuda(results[i].original or "") for i in reach):
            # nothing it runs names CUDA: no port sends its data anywhere, so on a Mac it runs as it always did
            # (Laplace's test_matrix: float64 by default, on the CPU alone)
            program.blockers = [b for b in program.blockers if not (b.target == "mps" and _LACKS in b.reason)]
        blocked = {b.target for b in program.blockers}  # where nothing else blocks it, its port evaluated there
        used = results[entry].gates or unchanged_gates.get(entry, frozenset())  # an unchanged result holds none
        program.blockers.extend(b for b in _stops(results[entry], kind, trees.get(entry), program.path, used)
                                if b.target not in blocked)
        program.blockers.sort(key=lambda b: OFF_CUDA.index(b.target))
        program.blockers = [b.in_cell(results[shown_index[b.path]]) if b.path.endswith(SUFFIX) else b
                            for b in program.blockers]
        blocked = {b.target for b in program.blockers}
        nowhere = any(b.reason.endswith(installed.RUNS_NOWHERE) for b in program.blockers)
        program.runs_on = [*(() if nowhere else ("cuda",)), *(t for t in OFF_CUDA if t not in blocked)]
        made.append(program)
    return sorted(made, key=lambda p: p.path)


def _stops_everywhere(program: Program, why: str, shown: str, line: int, chain: tuple[str, ...]) -> None:
    """Block each target of ``program`` not blocked yet at ``shown``:``line``, which stops it on every device
    (``why``, which `installed.RUNS_NOWHERE` ends, imported through ``chain``)."""
    have = {b.target for b in program.blockers}
    program.blockers.extend(Blocker(target, why + installed.RUNS_NOWHERE, shown, line, chain=chain)
                            for target in OFF_CUDA if target not in have)


def _stops(result: FileResult, kind: str, tree: ast.Module | None, shown: str,
           gates: frozenset[str] = frozenset()) -> list[Blocker]:
    """Where the ported entry point always stops off CUDA, per target: its port evaluated there
    (`torchport.model.check.program_stops`), with the ``gates`` of other modules it uses."""
    from torchport.model.check import program_stops

    if kind == "library" or result.original is None or tree is None:
        return []
    migrated = result.migrated if result.migrated is not None else result.original
    if "cuda" not in migrated and not result.changed and not gates:
        return []  # nothing there needs CUDA
    # left whole where its port would still stop: that stop (the note's), where the original stops first
    note = next((d.message for d in result.diagnostics if d.code == "TP110" and STILL_STOPS in d.message), "")
    held = result.facts.get("held_stop", [0])[0] if note and not result.changed else 0
    said = note.split(STILL_STOPS, 1)[1].split(": ", 1)[-1] if held else ""
    stops = zip(OFF_CUDA, program_stops(result.original, migrated, kind,
                                        tree=tree if migrated == result.original else None, gates=gates), strict=True)
    return [Blocker(target, "stops there once ported: " + (
        said if held and held != (stop.origin or stop.line) else stop.message), shown, held or stop.origin or stop.line)
            for target, stop in stops if stop is not None]


def _project_gates(results: Sequence[FileResult], trees: Mapping[int, ast.Module | None]) -> dict[int, dict[str, int]]:
    """The functions each module defines that stop whenever CUDA is missing (`analysis.gates.exits_without_cuda`):
    index -> name -> line."""
    found: dict[int, dict[str, int]] = {}
    for index, result in enumerate(results):  # the text first: a tree is parsed when asked for
        if _gating(result.original) and (gates := _exiting_gates(result.original or "", partial(trees.get, index))):
            found[index] = gates
    return found


def _gating(text: str | None) -> bool:
    """Whether ``text`` could define a CUDA gate or predicate (`analysis.gates.GATE_TEXT`); read once per text."""
    from torchport.codemods.analysis.gates import GATE_TEXT

    if not text:
        return False
    return remembered(_GATING, text, lambda: GATE_TEXT.search(text) is not None)


def _project_predicates(results: Sequence[FileResult],
                        trees: Mapping[int, ast.Module | None]) -> dict[int, dict[str, int]]:
    """The functions each module defines that answer whether CUDA is there (`analysis.programs.cuda_predicates`):
    index -> name -> line."""
    from torchport.codemods.analysis.programs import cuda_predicates

    def predicates(index: int) -> dict[str, int]:
        tree = trees.get(index)
        names = cuda_predicates(tree) if tree is not None else set()
        return {s.name: s.lineno for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                and s.name in names} if tree is not None and names else {}

    found: dict[int, dict[str, int]] = {}
    for index, result in enumerate(results):  # the text first: a tree is parsed when asked for
        text = result.original
        if text and _gating(text) and (names := remembered(_PREDICATES, text, partial(predicates, index))):
            found[index] = names
    return found


_V = TypeVar("_V")


def _bound(index: int, project: Project, found: Mapping[int, Mapping[str, _V]],
           others: bool = True) -> dict[str, tuple[int, _V]]:
    """What module ``index`` binds, by local name, of what the modules of ``found`` define: ``verify_min_gpu_count``
    for ``from log_utils import verify_min_gpu_count``, ``helpers.require_gpu`` for ``import helpers`` -> (the
    module, its value in ``found``). ``others``: bindings to ``index`` itself left out."""
    bound: dict[str, tuple[int, _V]] = {}
    for local, target, name in project.bindings(index):
        if name not in (None, "*") and target not in found:  # re-exported: falkon's `from .switches import decide_cuda`
            target, name = project.origin(target, name, lambda module, defined: defined in found.get(module, {}),
                                          4) or (target, name)
        if target not in found or (others and target == index):
            continue
        if name is None:
            bound.update({f"{local}.{key}": (target, value) for key, value in found[target].items()})
        elif name == "*":  # `from .marks import *`: its public names
            bound.update({key: (target, value) for key, value in found[target].items() if not key.startswith("_")})
        elif name in found[target]:
            bound[local] = (target, found[target][name])
    return bound


def _syntax_error(text: str) -> str:
    """CPython's ``line:column: message`` for a module ``text`` that does not parse (a file `programs` reads
    without migrating it has no LibCST error)."""
    try:
        ast.parse(text)
    except SyntaxError as error:
        return f"{error.lineno}:{error.offset}: {error.msg}"
    except ValueError as error:  # a NUL byte
        return str(error)
    return "no source"


def _calls_a_gate(entry: int, trees: Mapping[int, ast.Module | None], project: Project,
                  gates: Mapping[int, Mapping[str, int]]) -> tuple[int, str, tuple[int, int]] | None:
    """Where the entry point calls, as a statement of its own, a CUDA gate of the project (dino's
    ``utils.init_distributed_mode(args)``, which exits without a GPU): ``(line, name, (module, line there))``."""
    if not gates:
        return None
    bound = {name: (entry, line) for name, line in gates.get(entry, {}).items()}
    bound.update(_bound(entry, project, gates, others=False))
    tree = trees.get(entry) if bound else None
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            called = ast.unparse(node.value.func)
            if called in bound:
                return node.lineno, called, bound[called]
    return None


def left_whole(results: list[FileResult]) -> dict[int, str]:
    """Which files only programs that run only on CUDA reach (one with a triton kernel, a CUDA-only library, a
    CUDA graph), and the build scripts that make an extension for CUDA alone (`_cuda_builds`): porting a part of
    such a program gains nothing and changes what a maintainer must read. Files another program reaches are
    ported. `leave` applies the answer.

    Args:
        results: the run's results, after the per-file and project passes.

    Returns:
        index into ``results`` -> why its rewrites are not made (the program and its blocker).
    """
    return {**_reached_only_by_cuda(results), **_cuda_builds(results)}


def _cuda_builds(results: Sequence[FileResult]) -> dict[int, str]:
    """The changed build scripts nothing imports that make a compiled extension for CUDA alone (DCVC's inference
    kernels: ``torch.cuda.get_device_capability(0)`` picks nvcc's ``-arch``): they run only where CUDA is, and a
    port trades CUDA's clear error for nvcc's."""
    from torchport.codemods.analysis.requirements import cuda_extensions, sources_need_cuda

    found: dict[int, str] = {}
    candidates = [i for i, r in enumerate(results) if r.changed and r.original and _BUILDS.search(r.original)]
    if not candidates:
        return found
    _, project = _model(results)
    imported = project.imported()
    for index in candidates:
        if index not in imported and (tree := _parse(results[index].original)) is not None \
                and (names := cuda_extensions(tree, sources_need_cuda(results[index].path.parent))):
            found[index] = (f"it builds {', '.join(f'`{n}`' for n in sorted(names))} for CUDA alone (nvcc), which "
                            "runs only where CUDA is; it is left as written")
    return found


def _reached_only_by_cuda(results: list[FileResult]) -> dict[int, str]:
    suspects = may_leave(results)
    stopped = any(STILL_STOPS in d.message for r in results for d in r.diagnostics if d.code == "TP110") or any(
        _port_stops(r) for r in results) or any(deferred_cuda_imports(r.original or "") for r in suspects) or any(
        r.error is not None and r.path.suffix == ".py" and outline(r.original).script for r in results) or any(
        r.path.suffix == ".py" and not outline(r.original).parses for r in results)  # an import that does not parse
    if not stopped and any(r.changed for r in results):  # a changed file imports a name its module lacks
        _, project = _model(results)
        stopped = any(project.undefined_imports(i) or project.missing_imports(i)
                      for i, r in enumerate(results) if r.changed and r.original) or \
            any(project.unbound_read(i, True) or project.refused_call(i, True)
                for i, r in enumerate(results) if r.original)  # (unchanged ones too)
    if not suspects and not stopped:
        return {}
    # Only a module that itself needs CUDA, or defines a CUDA gate, makes a program CUDA-only (an entry point's
    # own check leaves that file alone already): without one, the model of every program is not built.
    modules = _modules(results)
    if not any(any(OFF_CUDA == need.targets for need in _requirements(r.original or "", False, modules=modules))
               or _exiting_gates(r.original or "", lambda: tree)
               for r in suspects if (tree := _parse(r.original)) is not None) and not stopped:
        return {}  # nor did the port check find a program whose port still stops off CUDA (UniMatch's DDP setup)
    reaching: dict[int, list[Program]] = {}
    for program in programs(results, Path.cwd()):
        for index in program.reached:
            reaching.setdefault(index, []).append(program)
    left: dict[int, str] = {}
    _, project = _model(results)
    for index, reached_by in reaching.items():
        cuda_only = [p for p in reached_by if not set(p.runs_on) - {"cuda"}]
        if results[index].changed and cuda_only and (len(cuda_only) == len(reached_by) or _runs_none_of_its_sites(
                project, results[index], index, [p for p in reached_by if p not in cuda_only])):
            first = cuda_only[0]
            why = next((r for r in first.reasons() if "cpu" in r.split(": ", 1)[0]), first.reasons()[0])
            left[index] = (f"{RUNS_NOWHERE_TAG} only programs that run on no device reach this file" if all(
                not p.runs_on for p in reached_by) else "only programs that run only on CUDA reach this file" if len(
                cuda_only) == len(reached_by) else "only programs that run only on CUDA run what the port changes "
                "here") + f" ({first.path}: {why.split(': ', 1)[1]}); it is left as written"
    for index, result in enumerate(results):  # torch-ngp's gridencoder/grid.py: it builds its extension on import
        if result.changed and index not in left and (need := _needs_cuda_on_import(index, results, project, modules)):
            left[index] = f"it needs CUDA whenever it is imported ({need}); it is left as written"
    return left


def _runs_none_of_its_sites(project: Project, result: FileResult, index: int, others: list[Program]) -> bool:
    """Whether none of ``others`` (programs that run off CUDA) runs a site the port changes in ``result``, module
    ``index`` of ``project``: every site lies in a top-level function or class those programs never run, or in the
    module's ``__main__`` block, which they do not run (m3m's evaluation script imports helpers from the training
    script, whose DDP worker runs only in that script's own program, which stops off CUDA). ``result`` is this
    run's: the project, read once per set of sources, may hold another run's results of them."""
    tree = parse(result.original or "")
    if tree is None or not result.sites or _shown(result.path, Path.cwd()) in {p.path for p in others}:
        return False  # the entry point of a program that runs off CUDA
    spans = [(s.lineno, s.end_lineno or s.lineno, s.name) for s in tree.body
             if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    mains = [(s.lineno, s.end_lineno or s.lineno) for s in tree.body if isinstance(s, ast.If) and is_main(s.test)]
    live = {name for p in others for module, name in program_defs(project, p.reached) if module == index}
    for site in result.sites:
        if any(first <= site.line <= last for first, last in mains):
            continue
        owner = next((name for first, last, name in spans if first <= site.line <= last), None)
        if owner is None or owner in live:
            return False
    return True


def _avoids_in_main_block(result: FileResult) -> bool:
    """Whether the port's `tp.avoid_mps` (or `tp.keep_cuda_or_cpu`) call in ``result`` sits in its ``__main__``
    block: m3m's training script makes a process group there; the evaluation script that imports its helpers
    does not run it."""
    tree = _parse(result.migrated)

    def calls(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr in ("avoid_mps", "keep_cuda_or_cpu") for n in ast.walk(node))

    blocks = [s for s in tree.body if isinstance(s, ast.If) and is_main(s.test)] if tree is not None else []
    return tree is not None and any(calls(b) for b in blocks) and not any(
        calls(s) for s in tree.body if s not in blocks)


def _port_stops(result: FileResult) -> bool:
    """Whether ``result`` is a changed script whose port still stops on every target off CUDA (a name bound only
    where CUDA is, read after): its program is left whole, the rewrites its own check kept too."""
    from torchport.model.check import program_stops

    return bool(result.changed and result.original and result.migrated and "__main__" in result.original
                and all(program_stops(result.original, result.migrated, "script")))


def _needs_cuda_on_import(index: int, results: Sequence[FileResult], project: Project,
                          modules: Modules) -> str | None:
    """What makes module ``index`` need CUDA whenever it is imported (its own imports or code, or a module it always
    imports): ``"builds a CUDA extension, gridencoder/backend.py:31"``; None when nothing does. ``modules``: the
    run's module names (`_modules`)."""
    for other in sorted(project.reach(index, always=True), key=lambda i: (i != index, str(results[i].path))):
        text = results[other].original or ""
        if not outline(text).parses:
            continue
        need = next((n for n in _requirements(text, False, modules=modules) if n.targets == OFF_CUDA and not n.env),
                    None)  # (one an environment variable decides happens only where it is set)
        if need is not None:
            return f"{need.reason}, {_shown(results[other].path, Path.cwd())}:{need.line}"  # as the programs show it
    return None


def avoid_mps(results: Sequence[FileResult]) -> tuple[dict[int, str], frozenset[int]]:
    """The scripts and notebooks whose program MPS cannot run while the port sends its data to the runtime's device
    (one kernel runs a notebook's cells, one program): each gets
    ``tp.avoid_mps(...)`` (TP019, `torchport.codemods.entry`), so that on a Mac it keeps running on the CPU.

    Args:
        results: the run's results, after the per-file and hold passes (``facts["moves"]`` filled in).

    Returns:
        index into ``results`` -> the reason, ``"<what MPS lacks>, <file>:<line>"``; and the modules of those whose
        call goes first in their ``__main__`` block: a module of a package or one another module imports, with a
        demo ``__main__`` block (deep_gcns' ``architecture.py``), which is a program only where it runs as one (at
        the top, the call would run in every program that imports it). A script whose own text has the blocker got
        the call in the per-file pass already and is not listed; nor are tests (one process runs many) and libraries
        (their users' programs decide); nor a script that places no data itself (no ``.to(``,
        ``.cuda(``, device: a data-preparation script that imports the library), nor one that picks MPS itself (its
        own choice puts its data there, whatever the runtime picks), nor one that imports another script that gets
        the call (a launcher: the call runs when it imports that script).
    """
    moving = {i for i, r in enumerate(results) if r.changed and r.facts.get("moves")}
    choosing = {i for i, r in enumerate(results) if r.changed and r.facts.get("choices")}
    if not moving | choosing or not any(
            LACKS_TEXT.search(r.original or "") or r.facts.get("kept") or _KEPT_PLACEMENT.search(
                r.migrated or r.original or "") or any(name in (r.original or "") for name in _CPU_CUDA_LIBRARIES)
            or "'cuda' in " in (r.original or "") for r in results):
        return {}, frozenset()
    trees, project = _model(results)
    scripts = _console_scripts(Path.cwd())
    # moves other than checkpoints loaded into a module (copied onto the module's device: nothing moves)
    carrying = {i for i in moving if set(results[i].facts["moves"]) - set(results[i].facts.get("state_loads", ()))}
    # what moves data for the programs that import it: not a move in its own `__main__` block (learn2learn's
    # resnet12.py demo), which runs only where it is the program
    moving_on_import = {i for i in moving if _moves_outside_main(results[i])}

    def shown(other: int, entry: int) -> str:
        """Module ``other`` as the call of program ``entry`` names it: as the run showed it, or, where the run was
        given absolute paths, from the entry point's folder."""
        where = results[other].display
        return Path(os.path.relpath(results[other].path, results[entry].path.parent)).as_posix() \
            if Path(where).is_absolute() else where

    from torchport.pipeline.library import installable

    reasons: dict[int, str] = {}
    demos: set[int] = set()
    tests: set[int] = set()  # the changed test modules
    flags: set[str] | None = None
    for index, result in enumerate(results):
        notebook = result.path.suffix == SUFFIX  # one kernel runs its cells: a program, as a script is
        if result.path.suffix != ".py" and not notebook or result.error is not None or result.rewrites.get(
                "TP019") and (
                result.avoid_mps is not None or "keep_cuda_or_cpu(" in (result.migrated or "")):
            continue  # (a call its own text gave, for what MPS alone lacks, gives way to a split found below)
        module, name = outline(result.original), project.names[index]
        # a test module runs in a process with many others (fairscale's test_gossip has a `__main__`; Person_reID's
        # test_MSMT.py, with no test of its own, is a script): it gets the call only beside every other (below)
        testing = bool(_TEST_FILE.match(result.path.name) and module.tests and not _calls_own_tests(trees[index]))
        if testing:
            tests.add(index)
        elif not module.parses or not notebook and not (module.script or _kind(
                result, module, name, scripts, index in project.imported()) in ("script", "console-script")):
            continue  # a `__main__` block, a console script, or top-level work in a module nothing imports
        if not testing and not notebook and name not in scripts and (index in project.imported() or project.in_package(
                index) and (not module.script or installable([result.path]))) and not _reads_command_line(trees[index]):
            if not module.script:
                continue  # a library module: the call would run in every program importing it (a package no
                # metadata installs is the repository's: reid-strong-baseline's tools/train.py is a script)
            if index in project.imported() or not _picks_on_import(result):
                demos.add(index)  # its `__main__` block runs a program of its own (P-tuning-v2's dense_retriever.py,
                # whose class others import): the call goes there, where it runs only when the module is the program
            # (one nothing imports that picks its device on import, torchsparsegradutils' benchmarks/*_rand.py:
            # `device = tp.device()` runs before that block, so the call goes after its imports)
        if (tree := trees[index]) is not None and "mps" in (result.original or "").lower() and handles_mps(tree):
            continue  # it picks MPS itself (XMem's interactive demo): the call would move the runtime's picks alone
        reach = project.reach(index, always=True, off_cuda=True)  # certain: what it imports whenever it runs on a Mac
        # its own moves, or its own device choice made the runtime's (residual-flows' train_toy.py places its
        # model with the `device` it picks)
        moved = moving_on_import | ({index} & moving) | (
            {index} if result.changed and result.facts.get("choices") else set())
        carried = (carrying & moving_on_import) | ({index} & carrying)
        # a device choice ported where it always imports it, and data placed where it imports: the program's data
        # goes to the runtime's pick (DuoRec's run_seq.py: recbole's config picks, its trainer moves the batches)
        chosen = bool(reach & choosing) and any(_PLACES_DATA.search(results[i].original or "")
                                                for i in reach - {index})
        if not (project.reach(index) & moved or chosen) or not (
                chosen or _PLACES_DATA.search(result.original or "") or _calls_into(index, trees[index], project, moved)
                or (reach & carried and any(_KEPT_PLACEMENT.search(results[i].migrated or results[i].original or "")
                                             or results[i].facts.get("kept") or _placed_if_cuda_named(results[i])
                                             for i in reach))):
            continue  # it places no data, itself or through what it calls (a data-preparation script)
        # the modules whose moves to the runtime's device this program runs (`split_choice`), read once
        live = {i for i in reach & carried if project.runs_line(i, results[i].facts["moves"], reach)}
        running = live if any(results[i].facts.get("kept") for i in reach) else set()
        order = sorted(reach, key=lambda i: (i != index, results[i].display))
        if reach & carried and flags is None:
            flags = _cuda_flags(results)
        # a choice kept CUDA-or-CPU first: keeping the program there keeps it off MPS too, and off XPU, where its
        # moved data would meet the kept choice's CPU data as on MPS
        # another module's choice ported to the runtime's device places data too (learning3d's prnet.py:
        # `device = tp.available_device()` for its index tensors), beside a choice the script keeps CUDA-or-CPU
        picking = {i for i in reach & choosing if project.runs_line(i, results[i].facts["choices"], reach)} if any(
            results[i].facts.get("kept") for i in reach) else set()
        split = next(((other, found) for other in order if (found := (split_choice(
            results[other], moved_elsewhere=bool((running | picking) - {other}))
            if outline(results[other].original).parses
            else None) or (_kept_placement(results[other], flags or set()) or _placed_if_cuda_named(results[other])
                           if live else None))  # only where data moved to the runtime's device runs
            and not _never_called(results[other].original, found[0], [results[i].original for i in reach])
            and (project.runs_line(other, [found[0]], reach) or _called_by_name(
                results[other].original, found[0], [results[i].original for i in reach - {other}]))), None)
        # (BackdoorBox's attack scripts never make the BAAT attack's HairEditor, whose choice stays CUDA-or-CPU,
        # though `core` imports its module; a method another module calls by name may run on an unpickled object)
        if split is not None:
            reasons[index] = f"{split[1][1]}, {shown(split[0], index)}:{split[1][0]}"
            continue
        everything = project.reach(index)  # what it may import: a move there counts where the program may run it
        if not (testing and index in carrying) and not any(  # pytest runs a test module's own moves
                project.runs_line(i, results[i].facts["moves"], everything) for i in everything & carrying) \
                and not any(results[i].facts.get("choices") for i in everything):
            continue  # none of its data goes to the runtime's device (deep_gcns' ogbg_mol imports only save_ckpt
            # from a module whose loaders move data): it runs where it ran, and a call would change nothing
        if result.rewrites.get("TP019"):
            continue  # its own text gave it `tp.avoid_mps`
        if "init_process_group" in "".join(results[i].original or "" for i in reach) and _joins_a_group(
                index, trees, project):
            # the program always makes a process group: the runtime picks the CPU on a Mac once it exists, but a
            # device taken before it (RIFE's `device = tp.device()` at import) would stay MPS
            group = f"{shown(index, index)}:{_group_line(trees[index])}"
            reasons[index] = f"a process group, which takes no MPS tensors, {group}"
            continue
        for other in order:
            # what another module lacks counts where this program runs it (each step reads a text once); what
            # keeps XPU on the CPU too (`tp.keep_cuda_or_cpu`) wins over what MPS alone lacks
            lacks = (own_lack(project, other) if other == index else
                     reached_lack(project, other, reach)) if outline(results[other].original).parses \
                else None
            if lacks is not None and (index not in reasons or keeps_cuda_or_cpu(lacks[1])):
                reasons[index] = f"{lacks[1]}, {shown(other, index)}:{lacks[0]}"
                if keeps_cuda_or_cpu(lacks[1]):
                    break
        if index not in reasons and (lived := live_lack(project, reach, project.reach(index))):
            other, (line, what) = lived  # what the functions it runs import when they run, as `programs` reads it
            reasons[index] = f"{what}, {shown(other, index)}:{line}"
    # one pytest process runs every test module: the call, which holds for the whole process, goes into them only
    # where each one that moves data to the runtime's pick has a reason (QPyTorch's tests, all fed to a CPU-only
    # extension), and the same one: a Mac's CPU, or the CPU wherever CUDA is missing
    runtime = tests & (moving | choosing)
    if not runtime or not runtime <= reasons.keys() or len({keeps_cuda_or_cpu(reasons[i]) for i in runtime}) > 1:
        for index in tests:
            reasons.pop(index, None)
    # a call at the top of a module runs in the programs that import it (not one in a demo's `__main__` block)
    has_call = ({*reasons} | {i for i, r in enumerate(results) if r.rewrites.get("TP019")}) - demos
    kept = {i: why for i, why in reasons.items() if not (project.reach(i) - {i}) & has_call}
    return kept, frozenset(demos & kept.keys())


def picked_on_import(results: Sequence[FileResult], avoids: Collection[int]) -> dict[int, int]:
    """The entry points of ``avoids`` (those that get ``tp.avoid_mps``) whose program imports a module that picks
    the runtime's device when imported (reid-strong-baseline's config default ``_C.MODEL.DEVICE =
    tp.device_str()``, FEDformer's module-level device): the line of the entry point's own import that leads there,
    above which the call goes (after it, the pick would already be MPS's)."""
    if not avoids:
        return {}
    picking = {i for i, r in enumerate(results) if r.changed and (r.facts.get("moves") or r.facts.get("choices"))
               and _picks_on_import(r)}
    project = Project(results)
    # a module whose import-time code calls what picks (Text2Video-Zero's `apply_midas = MidasDetector()`, whose
    # `__init__` moves the model to the runtime's device) picks when imported too
    picking |= {i for i, r in enumerate(results) if i not in picking and r.original and _calls_a_picker(project, i)}
    if not picking:
        return {}
    found = {}
    for index in avoids:
        firsts = project.first_imports(index, script=True)
        lines = [firsts[other] for other in project.reach(index, always=True) & picking - {index} if other in firsts]
        if lines:
            found[index] = min(lines)
    return found


def _calls_a_picker(project: Project, index: int) -> bool:
    """Whether module ``index``, when imported, calls a function or class of another module of the run whose body
    moves data to the runtime's device or makes its choice (`_picks_on_import`'s facts, inside that definition)."""
    tree = parse(project.results[index].original)
    if tree is None:
        return False
    mains = main_blocks(tree)
    lambdas = {id(n) for s in tree.body for lam in ast.walk(s) if isinstance(lam, ast.Lambda) for n in ast.walk(lam)}
    called = {n.func.id for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
              and not any(first <= s.lineno <= last for first, last in mains)
              for n in ast.walk(s) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and id(n) not in lambdas}
    if not called:
        return False

    def definition(module: int, wanted: str) -> ast.stmt | None:
        """The function, or the ``__init__`` of the class (what constructing it runs), ``wanted`` of ``module``."""
        found = top_definition(project, module, wanted) if project.results[module].changed else None
        if isinstance(found, ast.ClassDef):
            return next((d for d in found.body if isinstance(d, ast.FunctionDef) and d.name == "__init__"), found)
        return found

    for local, other, bound in project.bindings(index):
        if local not in called or bound is None:
            continue
        found = project.origin(other, bound, lambda module, wanted: definition(module, wanted) is not None, hops=3)
        made_by = definition(*found) if found is not None else None
        facts = project.results[found[0]].facts if found is not None else {}
        if made_by is not None and any(made_by.lineno <= line <= (made_by.end_lineno or made_by.lineno)
                                       for line in (*facts.get("moves", ()), *facts.get("choices", ()))):
            return True
    return False


def _picks_on_import(result: FileResult) -> bool:
    """Whether a rewrite of ``result`` that sends data to the runtime's device (``facts["moves"]``) or makes its
    availability choice the runtime's (``facts["choices"]``: VAR's ``__device = tp.available_device_str()``),
    original lines, runs when the module is imported: in a top-level statement (a class body too), or a default of
    a function's parameter (CLAM's ``def initiate_model(args, ckpt_path, device=tp.device_str())``), not in a
    function's body."""
    tree = parse(result.original)
    if tree is None:
        return False
    inside = [(n.body[0].lineno if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) else n.lineno,
               n.end_lineno or n.lineno) for n in ast.walk(tree)
              if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)] + main_blocks(tree)
    return any(not any(first <= line <= last for first, last in inside)
               for line in (*result.facts.get("moves", ()), *result.facts.get("choices", ())))


def _moves_outside_main(result: FileResult) -> bool:
    """Whether a rewrite of ``result`` that sends data to the runtime's device (``facts["moves"]``, original lines)
    lies outside its ``if __name__ == "__main__":`` blocks, so that a program importing it may run it."""
    tree = parse(result.original)
    if tree is None:
        return True
    blocks = main_blocks(tree)
    return any(not any(first <= line <= last for first, last in blocks) for line in result.facts["moves"])


_PARSES_COMMAND_LINE = frozenset(torch_facts.words("parses_command_line"))
_CPU_CUDA_LIBRARIES = torch_facts.words("cpu_cuda_library")  # kernels for the CPU and CUDA alone


def _calls_own_tests(tree: ast.Module | None) -> bool:
    """Whether the module's ``__main__`` block calls one of its own ``test_*`` functions itself (FairMOT's
    ``test_det.py``: ``map = test_det(opt, batch_size=4)``): a script named like a test, not one pytest runs."""
    if tree is None:
        return False
    own = {s.name for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
           and s.name.startswith("test")}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in own
               for s in tree.body if isinstance(s, ast.If) and is_main(s.test) for n in ast.walk(s))


def _reads_command_line(tree: ast.Module | None) -> bool:
    """Whether the module parses the command line whenever it is imported (``args = parser.parse_args()`` at its
    top level): a script, whatever imports it, and every program that imports it runs its choices."""
    if tree is None:
        return False
    top = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If))]
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in _PARSES_COMMAND_LINE for s in top for n in ast.walk(s))


def _kept_placement(result: FileResult, flags: set[str]) -> tuple[int, str] | None:
    """``(line, what)`` where a module of a program that moves data to the runtime's device still places data on
    CUDA as written, in a branch that a device query or a flag of ``flags`` (`_cuda_flags`) decides: PatchTST's
    ``torch.device('cuda:{}'...)`` behind ``self.args.use_gpu``. That choice is CUDA-or-CPU, so on a Mac the moved
    data would meet it on another device; the program keeps the CPU there. A placement no such test decides (left
    because its path still fails off CUDA) is no choice."""
    text = result.migrated if result.migrated is not None else result.original
    if not text or not _KEPT_PLACEMENT.search(text):
        return None
    return remembered(_KEPT_PLACEMENTS, (text, frozenset(flags)), lambda: _read_kept_placement(text, flags))


_KEPT_PLACEMENTS: dict[tuple[str, frozenset[str]], tuple[int, str] | None] = {}  # `_kept_placement`, by text


def _read_kept_placement(text: str, flags: set[str]) -> tuple[int, str] | None:
    from torchport.model.evaluate import asks_for_cuda  # here: a warm run loads no evaluator

    if (tree := parse(text)) is None:
        return None
    parents = parent_map(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _places_on_cuda(node) or _mapped_into_state(node, parents):
            continue
        child: ast.AST = node
        while (parent := parents.get(id(child))) is not None:
            test = parent.test if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test else None
            if test is not None and not asks_for_cuda(test) and (_QUERY.search(ast.unparse(test)) or any(
                    isinstance(n, (ast.Name, ast.Attribute)) and (n.id if isinstance(n, ast.Name) else n.attr) in flags
                    for n in ast.walk(test))):
                if _chooses_mps(parent, parents):
                    break  # accelerate's `if is_mps_available(): ... elif torch.cuda.is_available(): ...`
                if isinstance(parent, ast.If) and placed_again(parent, parents):
                    break  # placed again after the branch, wherever the test sends it
                return node.lineno, KEPT_CHOICE
            child = parent
    return None


def _places_on_cuda(node: ast.Call) -> bool:
    """Whether ``node`` itself places data on CUDA as written (`_KEPT_PLACEMENT`, read from its own parts: the
    function it calls, its ``device=``, its first argument), not a text it is given (pytorch_SSD's
    ``logging.warning('... call "model.cuda()"')``)."""
    def cuda_text(value: ast.expr | None) -> bool:
        first = value.values[0] if isinstance(value, ast.JoinedStr) and value.values else value
        return isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("cuda")

    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "cuda":
        return True
    if any(k.arg == "device" and cuda_text(k.value) for k in node.keywords):
        return True
    return (isinstance(func, ast.Attribute) and func.attr == "device" or isinstance(func, ast.Name)
            and func.id == "device") and bool(node.args) and cuda_text(node.args[0])


def _mapped_into_state(node: ast.Call, parents: Mapping[int, ast.AST]) -> bool:
    """Whether ``node`` is in a ``map_location`` function of a ``torch.load`` whose result, bound to a name, its
    function gives to ``load_state_dict`` (SiamMask's ``load_pretrain``: ``map_location=lambda storage, loc:
    storage.cuda(device)``, later ``model.load_state_dict(pretrained_dict)``): the tensors are copied into the
    model's own, wherever they are; where the checkpoint was loaded places nothing."""
    mapping = next((k for k in node.keywords if k.arg == "map_location"), None)
    if mapping is not None:  # the load itself: placed by its mapping alone
        rest = ast.Call(node.func, node.args, [k for k in node.keywords if k is not mapping])
        load: ast.AST | None = None if _KEPT_PLACEMENT.search(ast.unparse(rest)) else node
    else:
        child: ast.AST = node
        while (parent := parents.get(id(child))) is not None and not isinstance(parent, ast.keyword):
            if not isinstance(parent, ast.Lambda | ast.Call | ast.Attribute):
                return False
            child = parent
        load = parents.get(id(parent)) if parent is not None and parent.arg == "map_location" else None
    bound = parents.get(id(load)) if isinstance(load, ast.Call) else None
    if not isinstance(bound, ast.Assign) or len(bound.targets) != 1 or not isinstance(bound.targets[0], ast.Name):
        return False
    scope = enclosing_scope(bound, parents)
    name = bound.targets[0].id
    return scope is not None and any(
        isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict"
        and any(isinstance(a, ast.Name) and a.id == name for a in call.args) for call in ast.walk(scope))


def _environment_set(tree: ast.Module | None) -> dict[str, str]:
    """The environment variables a module's top level sets to a string (``os.environ["RWKV_CUDA_ON"] = '0'``)."""
    from torchport.codemods.analysis.names import environment_read  # LibCST's: not for a run the cache answers

    found: dict[str, str] = {}
    for statement in always_run(tree.body) if tree is not None else ():
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant) and isinstance(
                statement.value.value, str):
            for target in statement.targets:
                if (variable := environment_read(target)) is not None:
                    found[variable] = statement.value.value
    return found


def _never_called(text: str | None, line: int, texts: Iterable[str | None]) -> bool:
    """Whether ``line`` of module ``text`` lies in a function or method no module of ``texts`` (a program's) names
    outside its own definition: SCINet's ``Exp_Basic._acquire_device``, whose only call is commented out; or in
    a method of a top-level class none names, bar importing it (HEQuant's ``hessian``, imported by every training
    script, made by none). Its choice is no choice the program makes. Decorated functions and classes and
    other dunder methods are called for them."""
    tree = parse(text)
    if tree is None:
        return False
    function = _function_holding(tree, line)
    if function is None or function.decorator_list:
        return False
    name = function.name
    owner = next((c for c in tree.body if isinstance(c, ast.ClassDef) and function in c.body), None)
    texts = list(texts)
    if owner is not None and not owner.decorator_list:  # the names its program uses: read only for a method
        called = [_called_names(other or "") for other in texts]
        looked_up = any(n.endswith(".*") for names in called for n in names)  # a lookup by a computed name
        if not looked_up and not any(owner.name in (other or "") and owner.name in names
                                     for other, names in zip(texts, called, strict=True)):
            # a method of a class the program never names (AIPolicy's SpanSingleNERDataset.refresh), bar one called
            # by its name outside the class (an object unpickled, not made, may still be asked to)
            outside = {n for s in tree.body if s is not owner for n in used(s)}
            if name == "__init__" or name not in outside and not any(
                    name in names for other, names in zip(texts, called, strict=True) if other != text):
                return True
    if name.startswith("__"):
        return False
    return not any(name in (other or "") and name in _used_names(other or "") for other in texts)


def _called_by_name(text: str | None, line: int, texts: Iterable[str | None]) -> bool:
    """Whether the function or method holding ``line`` of module ``text`` is called by its name in ``texts`` (other
    modules of a program): an object unpickled, never made, may still be asked to (AIPolicy's ``refresh``)."""
    tree = parse(text)
    function = _function_holding(tree, line) if tree is not None else None
    return function is not None and not function.name.startswith("__") and any(
        function.name in _called_names(other or "") for other in texts)


def _function_holding(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function or method of ``tree`` whose lines hold ``line``, or None."""
    return max((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.lineno <= line <= (n.end_lineno or n.lineno)), key=lambda n: n.lineno, default=None)


_USED: dict[str, frozenset[str]] = {}
_CALLED: dict[str, frozenset[str]] = {}


def _called_names(text: str) -> frozenset[str]:
    """`_used_names` bar the names a module only imports (``from pkg import hessian``, never used after) and the
    words of its docstrings: an import binds a name, it makes nothing; a name imported under another (``import f as
    g``) counts where ``g`` is used. Read once per text."""
    def read() -> frozenset[str]:
        tree = parse(text)
        if tree is None:
            return frozenset(words(text))
        names = set(used(tree))
        docstrings = {id(body[0].value) for n in ast.walk(tree) if isinstance(
            n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and (body := n.body)
            and isinstance(body[0], ast.Expr)}  # words, not names
        names.update(w for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                     and id(n) not in docstrings for w in words(n.value))
        names.update(a.name.rsplit(".", 1)[-1] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                     for a in n.names if a.asname and a.asname in names)
        return frozenset(names)

    return remembered(_CALLED, text, read)


def _used_names(text: str) -> frozenset[str]:
    """The names a module's code uses (`project.used`, its strings' words too: ``getattr(x, "f")``), not those it only
    defines; every word where it does not parse. Read once per text."""
    def read() -> frozenset[str]:
        tree = parse(text)
        return frozenset(used(tree, strings=True) if tree is not None else words(text))

    return remembered(_USED, text, read)


def _placed_if_cuda_named(result: FileResult) -> tuple[int, str] | None:
    """``(line, what)`` where a module places data only if a device string names CUDA, and leaves it where it is
    otherwise (ChatRWKV's model_run.py: ``if 'cuda' in args.RUN_DEVICE: w[x] = w[x].to(self.RUN_DEVICE)``, beside
    ``torch.zeros(..., device=self.RUN_DEVICE)``): the port's device string names no CUDA on MPS or XPU, so that
    data stays on the CPU while the rest goes to the device. A choice kept CUDA-or-CPU."""
    text = result.original or ""

    def read() -> tuple[int, str] | None:
        if "'cuda'" not in text and '"cuda"' not in text or (tree := parse(text)) is None:
            return None
        for node in ast.walk(tree):
            # (an `else` that moves the data too places it either way: nanoGPT's `if device_type == 'cuda':` pins
            # the batch before its move, `else:` moves it alone)
            if isinstance(node, ast.If) and _names_cuda_test(node.test) and _moves_data(node.body) \
                    and not _moves_data(node.orelse):
                return node.lineno, KEPT_CHOICE
        return None

    return remembered(_CUDA_NAMED, text, read)


_CUDA_NAMED: dict[str, tuple[int, str] | None] = {}  # `_placed_if_cuda_named`, by text


def _moves_data(body: list[ast.stmt]) -> bool:
    """Whether ``body`` calls ``.to(...)`` or ``.cuda(...)``."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")
               for statement in body for n in ast.walk(statement))


def _names_cuda_test(test: ast.expr) -> bool:
    """``'cuda' in x``, ``x == 'cuda'``, ``x.startswith('cuda')`` of a device string (no constant, no tensor's
    ``.device.type``)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], ast.In):
            return _is_cuda_string(left) and not isinstance(right, ast.Constant)
        if isinstance(test.ops[0], ast.Eq):
            return _is_cuda_string(right) and not isinstance(left, ast.Constant) and not (
                isinstance(left, ast.Attribute) and left.attr == "type")  # glow-tts's `x.device.type == "cuda"`:
            # a kernel chosen by where the data already is, not a place for it
    return isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" \
        and len(test.args) == 1 and _is_cuda_string(test.args[0])


def _is_cuda_string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == "cuda"


def _chooses_mps(branch: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether the ``if``/``elif`` chain (or conditional expression) around ``branch`` has an arm for MPS itself:
    then it is a choice among several backends, not CUDA-or-CPU."""
    top: ast.AST = branch
    while isinstance(parent := parents.get(id(top)), (ast.If, ast.IfExp)) and top is not parent.test and (
            isinstance(parent, ast.IfExp) or parent.orelse == [top]):
        top = parent
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("mps")
               or isinstance(n, (ast.Name, ast.Attribute)) and "mps" in (
                   n.id if isinstance(n, ast.Name) else n.attr).lower().split("_")
               for n in ast.walk(top))


def _calls_into(index: int, tree: ast.Module | None, project: Project, moving: set[int]) -> bool:
    """Whether module ``index`` (its ``tree``) calls something it binds from a module in ``moving`` (deepspeech's
    ``transcribe.py`` calling ``inference.transcribe``, which places the data)."""
    bound = {local for local, other, _ in project.bindings(index) if other in moving}
    if not bound or tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            head = node.func
            while isinstance(head, ast.Attribute):
                head = head.value
            if isinstance(head, ast.Name) and head.id in bound:
                return True
    return False


def _group_line(tree: ast.Module | None) -> int:
    """The line of the entry's own ``init_process_group`` call, or 1 where a function it calls makes the group."""
    calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call)) if tree else iter(())
    return min((c.lineno for c in calls if (c.func.attr if isinstance(c.func, ast.Attribute) else getattr(
        c.func, "id", "")) == "init_process_group"), default=1)


def _group_cuda_layer(tree: ast.Module | None) -> int | None:
    """The first line where ``tree`` makes a layer that takes only CUDA (or XPU) input in a process group
    (``torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)``, `torch_facts.GROUP_CUDA_LAYERS`), or None."""
    if tree is None:
        return None
    from torchport.model.evaluate import imported

    bound: dict[str, str] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (isinstance(node.func, ast.Attribute) and node.func.attr in _LAYER_NAMES
                                           or isinstance(node.func, ast.Name) and node.func.id in _LAYER_NAMES):
            bound = imported(tree) if bound is None else bound
            head, _, rest = ast.unparse(node.func).partition(".")
            if f"{bound.get(head, head)}{'.' if rest else ''}{rest}" in torch_facts.GROUP_CUDA_LAYERS:
                return node.lineno
    return None


_LAYER_NAMES = frozenset(name.rpartition(".")[2] for name in torch_facts.GROUP_CUDA_LAYERS)


def _joins_a_group(entry: int, trees: Mapping[int, ast.Module | None], project: Project) -> bool:
    """Whether the program of ``entry`` always makes a ``torch.distributed`` process group: the entry module, or a
    function of it that always runs, calls as a statement it always runs ``init_process_group`` or a function of the
    project that always calls it (guided-diffusion's ``dist_util.setup_dist()``, which picks gloo without CUDA).
    WaveGrad's ``init_distributed`` runs only for more than one GPU: no."""
    def functions(tree: ast.Module | None) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        return {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))} if tree else {}

    def called(node: ast.AST, name: str) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) and (
            node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == name

    def makes_group(body: list[ast.stmt]) -> bool:
        """``init_process_group`` in a statement always run, with no return before it but one taken when a group
        exists already (mae's ``init_distributed_mode`` returns first when not launched distributed: no group)."""
        for statement in body:
            if isinstance(statement, ast.If) and not any(called(n, "is_initialized") for n in ast.walk(
                    statement.test)) and any(isinstance(n, ast.Return) for n in ast.walk(statement)):
                return False
            if statement in always_run([statement]) and any(called(n, "init_process_group")
                                                            for n in ast.walk(statement)):
                return True
            if isinstance(statement, ast.If) and statement.orelse and makes_group(statement.body) and makes_group(
                    statement.orelse):  # distributed-training-pytorch: torchrun's group, else one of SLURM's
                return True
        return False

    def makers(target: int) -> dict[str, bool]:
        """Module ``target``'s top-level functions, by name: whether each makes a group; read once per text."""
        text = project.results[target].original or ""
        return remembered(_MAKERS, text, lambda: {name: makes_group(f.body) for name, f in (
            functions(trees.get(target)) if "init_process_group" in text else {}).items()})

    tree = trees.get(entry)
    own = functions(tree)
    defined = {target: makers(target) for _, target, _ in project.bindings(entry)}
    bound = {local: maker for local, (_, maker) in _bound(entry, project, defined, others=False).items()}
    main = [s.body for s in (tree.body if tree else []) if isinstance(s, ast.If) and is_main(s.test)]
    # the entry's own functions that always run: named (called, or handed to `mp.spawn`) by what always runs
    bodies, reached = [tree.body if tree else [], *main], set[str]()
    for body in bodies:
        for name in {n.id for statement in always_run(body) for n in ast.walk(statement)
                     if isinstance(n, ast.Name) and n.id in own} - reached:
            reached.add(name)
            bodies.append(own[name].body)
    for body in bodies:
        if makes_group(body):
            return True
        for statement in always_run(body):
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and bound.get(ast.unparse(node.func)):
                    return True
    return False


_LACKS = "which MPS lacks"
_NAMES_CUDA = text("cuda_text")
_NAMING_CUDA: dict[str, bool] = {}


def _names_cuda(source: str) -> bool:
    """Whether a module's text names CUDA; searched once per text (each program asks for every module it reaches)."""
    return remembered(_NAMING_CUDA, source, lambda: _NAMES_CUDA.search(source) is not None)


def storage_gates(results: Sequence[FileResult]) -> dict[int, frozenset[str]]:
    """The modules with a function that a ``map_location`` function of another module hands its storage to
    (`torchport.model.checkpoints.storage_parameters`) and that call ``.cuda(``: index -> their `STORAGE` gates
    (``"storage handed to set_gpu(args)"``), for TP001 to move it with ``.to(device=...)``."""
    if not any("map_location" in (r.original or "") and "lambda" in (r.original or "") for r in results):
        return {}
    from torchport.model.checkpoints import storage_parameters

    trees = {i: tree for i, r in enumerate(results) if r.path.suffix == ".py" and (
        "map_location" in (r.original or "") or ".cuda(" in (r.original or "")) and (tree := parse(r.original))}
    found = storage_parameters(trees.values())
    given: dict[int, frozenset[str]] = {}
    for index, tree in trees.items() if found else ():
        if ".cuda(" not in (results[index].original or ""):
            continue
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if names := frozenset(f"{STORAGE}{f}({p})" for f, p in found if f in defined):
            given[index] = names
    return given


def gate_users(results: Sequence[FileResult], users: Sequence[int] | None = None) -> dict[int, frozenset[str]]:
    """The changed files that use CUDA gates another file of the run defines, or its functions that always need CUDA
    (`analysis.requirements.cuda_only_functions`), with the local names of those (``RunIf``,
    ``helpers.requires_gpu``, ``dtw_cuda``): migrated again with them, what they gate or what always calls them is
    left as it is.

    Args:
        results: the run's results after the first pass.
        users: the files to answer for (None: the changed ones; `programs` asks for the unchanged entry points).
    """
    from torchport.codemods.analysis.gates import cuda_gates
    from torchport.codemods.analysis.requirements import cuda_only_functions

    changed = [i for i, r in enumerate(results) if r.changed] if users is None else list(users)
    gating = {i for i, r in enumerate(results) if _gating(r.original)}
    needing = {i for i, r in enumerate(results) if r.original and _needing(r.original)}
    if not changed:
        return {}
    flags = _cuda_flags(results)
    readers = {i: frozenset(f".{flag}" for flag in flags if f".{flag}" in (results[i].original or ""))
               for i in changed} if flags else {}
    trees, project = _model(results)
    for index, passed in _flag_parameters(results, trees, project, flags, set(changed)).items():
        readers[index] = readers.get(index, frozenset()) | passed
    for index, names in _own_device_classes(results, trees, project, changed).items():
        readers[index] = readers.get(index, frozenset()) | names
    fields = _dispatched_fields(results, trees, project)
    for index in changed if fields else ():
        text = results[index].original or ""
        readers[index] = readers.get(index, frozenset()) | frozenset(
            f"={field}" for field in fields if field in text)
    # A name reaches a changed file only from a module it binds from: no other module's functions are evaluated.
    stuck = _stuck_functions(results, {target for i in changed for _, target, _ in project.bindings(i) if target != i})
    if not (gating or needing or stuck):
        return {i: names for i, names in readers.items() if names}
    # The project's modules that need CUDA whenever imported: a function that imports one needs it too.
    modules = _modules(results)
    needy = {i for i in needing if outline(results[i].original).parses
             and any(need.targets == OFF_CUDA for need in _requirements(results[i].original or "", False,
                                                                           modules=modules))}
    cuda_only = frozenset(name for i in needy if (name := project.names[i]))
    if needy:  # `def f(): import kernels`
        needing |= {i for i in range(len(results)) if project.imports(i) & needy}
    predicates = _project_predicates(results, trees)
    defined: dict[int, dict[str, int]] = {}
    for index in sorted(gating | needing | set(stuck)):
        tree = trees[index]
        if tree is None:
            continue
        gates = cuda_gates(tree) if index in gating else {}
        gates.update(stuck.get(index, {}))
        gates.update(predicates.get(index, {}))  # `if not verify_min_gpu_count(): exit` needs CUDA
        if index in needing:  # functions and classes that always need CUDA stop without it as gates do
            gates.update({name: line for name, (line, _) in cuda_only_functions(
                tree, project.package(index), cuda_only).items() if "." not in name})
        if gates:
            defined[index] = gates
    # a class that builds another module's CUDA-only class needs CUDA too, and so on up the imports (Mamba-UNet:
    # SS2D -> VSSM in mamba_sys.py -> MambaUnet in vision_mamba.py -> the script): a few steps, to a fixpoint
    read: dict[int, frozenset[str]] = {}  # the names each module was last read with
    for _ in range(3):
        grown = False
        for index in sorted({i for i in range(len(results))
                             if any(t in defined and t != i for _, t, _ in project.bindings(i))}):
            stopping = frozenset(name for name in _bound(index, project, defined) if "." not in name)
            if (tree := trees[index]) is None or read.get(index) == stopping:
                continue
            read[index] = stopping
            more = {name: line for name, (line, _) in cuda_only_functions(
                tree, project.package(index), cuda_only, stopping).items()
                if "." not in name and name not in defined.get(index, {})}
            if more:
                defined.setdefault(index, {}).update(more)
                grown = True
        if not grown:
            break
    found = {index: frozenset(_bound(index, project, defined)) | readers.get(index, frozenset()) for index in changed}
    return {index: names for index, names in found.items() if names}


def _flag_parameters(results: Sequence[FileResult], trees: Mapping[int, ast.Module | None], project: Project,
                     flags: set[str], among: set[int]) -> dict[int, frozenset[str]]:
    """Per module of ``among``, ``"f(p)"`` for each of its top-level functions ``f`` whose parameter ``p`` every call
    in the run fills with a flag false without CUDA: an attribute flag of the project (`_cuda_flags`: SGC's
    ``load_citation(..., args.cuda)`` after ``args.cuda = not args.no_cuda and torch.cuda.is_available()``
    elsewhere), a name the caller's module binds once to a CUDA query (SimCTG's ``cuda_available =
    torch.cuda.is_available()``), or such a parameter of the caller, handed on (SimCTG's ``model_training`` gives
    its own to ``eval_model``). Off CUDA ``if cuda:`` there never runs, as in the caller; the rules and the port
    check read it so (`Evaluator`'s gates)."""
    # the modules a flag can reach: those of ``among``, and those naming a flag or a queried name, which may hand
    # one on (deep_sort's unchanged detector/__init__.py: `build_detector(cfg, use_cuda)` makes `MMDet(use_cuda=...)`)
    queries = {i: _query_names(tree) for i, tree in trees.items()
               if tree is not None and "is_available" in (results[i].original or "")}
    names = set(flags).union(*queries.values())
    reach = set(among) | {i for i, r in enumerate(results) if names and any(n in (r.original or "") for n in names)}
    functions = {i: {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
                 for i in reach if (tree := trees[i]) is not None}
    classes: set[tuple[int, str]] = set()  # a class made with the flag: its `__init__`'s parameter (deep_sort's
    for i in functions:  # `MMDet(..., use_cuda=use_cuda)`), read as the gate `__init__(p)` of its module
        for cls in trees[i].body:  # type: ignore[union-attr]
            if not isinstance(cls, ast.ClassDef):
                continue
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is not None and (init.args.posonlyargs or init.args.args) and cls.name not in functions[i]:
                shim = copy.copy(init)  # its parameters as a call fills them: without `self`
                shim.args = copy.copy(init.args)
                shim.args.posonlyargs, shim.args.args = [], [*init.args.posonlyargs, *init.args.args][1:]
                functions[i][cls.name] = shim
                classes.add((i, cls.name))
    if not any(functions.values()):
        return {}
    callers = []
    for caller in range(len(results)):
        text = results[caller].original or ""
        tree = trees[caller]
        queried = queries.get(caller, set())
        if tree is None or not (any(f".{flag}" in text for flag in flags) or queried or caller in functions):
            continue
        # through a package's re-exports (deep_sort's `from .MMDet import MMDet`, its `__init__` importing it from
        # `detector.py`)
        named = {local: at for local, target, name in project.bindings(caller) if name is not None and (
            at := project.origin(target, name, lambda i, n: n in functions.get(i, {}), hops=4)) is not None}
        for _, target, name in project.bindings(caller):  # `from utils import *`, through another's too
            if name == "*":
                for origin in _star_chain(project, target):
                    named.update({f: (origin, f) for f in functions.get(origin, {}) if not f.startswith("_")
                                  and f not in named})
        named.update({name: (caller, name) for name in functions.get(caller, {})})
        modules = {local: target for local, target, name in project.bindings(caller) if name is None}
        calls = []
        for scope, node in _calls_by_function(tree):
            func = node.func
            if isinstance(func, ast.Name) and func.id in named:
                calls.append((scope, node, *named[func.id]))
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules:
                target = modules[func.value.id]
                if func.attr in functions.get(target, {}):
                    calls.append((scope, node, target, func.attr))
                elif (at := project.origin(target, func.attr, lambda i, n: n in functions.get(i, {}),
                                           hops=4)) is not None:  # torch_seq2rec's `lib.GRU4REC(...)`, which
                    calls.append((scope, node, *at))  # `lib/__init__.py` imports from `lib/model.py`
        callers.append((caller, queried, calls))
    found: set[tuple[int, str, str]] = set()
    kept: dict[int, tuple[dict[int, str], dict[str, dict[str, str]]]] = {}  # read where a call passes `self.x`
    for _ in range(3):  # a flag parameter handed on, a step a round
        passed: dict[tuple[int, str, str], bool] = {}
        for caller, queried, calls in callers:
            for scope, node, target, name in calls:
                function = functions[target][name]
                given = arguments(function, node)
                for param in parameters(function):
                    value = given.get(param) if given is not None else None
                    flag = isinstance(value, ast.Attribute) and value.attr in flags or isinstance(value, ast.Name) \
                        and (value.id in queried or (caller, scope or "", value.id) in found)
                    if not flag and isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
                            and value.value.id == "self":  # `self.cuda`, kept from its class's own flag parameter
                        owners, attributes = kept.setdefault(caller, _kept_parameters(trees[caller]))
                        owner = owners.get(id(node))
                        held = attributes.get(owner, {}).get(value.attr) if owner is not None else None
                        flag = held is not None and (caller, owner, held) in found
                    passed[target, name, param] = passed.get((target, name, param), True) and flag
        now = {key for key, always in passed.items() if always}
        if now == found:
            break
        found = now
    grouped: dict[int, set[str]] = {}
    for target, name, param in (key for key in found if key[0] in among):
        grouped.setdefault(target, set()).add(f"{'__init__' if (target, name) in classes else name}({param})")
    return {index: frozenset(names) for index, names in grouped.items()}


def _star_chain(project: Project, first: int, hops: int = 4) -> list[int]:
    """Module ``first`` and those it star-imports, in turn, up to ``hops`` steps (Bayesian-Neural-Networks' models
    ``from src.base_net import *``, which has ``from src.utils import *``): what ``from first import *`` binds
    comes from them, the nearest first."""
    chain, frontier = [first], [first]
    for _ in range(hops):
        frontier = [t for m in frontier for _, t, name in project.bindings(m) if name == "*" and t not in chain]
        chain.extend(dict.fromkeys(frontier))
    return chain


def _kept_parameters(tree: ast.Module | None) -> tuple[dict[int, str], dict[str, dict[str, str]]]:
    """What the top-level classes of ``tree`` keep from their makers: the class of each call in their methods (by
    the call's id), and per class each attribute it sets once, in its ``__init__``, to a parameter of it, with that
    parameter (Bayesian-Neural-Networks' ``self.cuda = cuda``): what a call in its methods is given as
    ``self.cuda`` is what made the object."""
    owners: dict[int, str] = {}
    attributes: dict[str, dict[str, str]] = {}
    for cls in tree.body if tree is not None else ():
        if not isinstance(cls, ast.ClassDef):
            continue
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is None:
            continue
        params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
        in_init = {id(s.value) for s in ast.walk(init) if isinstance(s, ast.Assign)}
        sets: dict[str, list[ast.expr | None]] = {}
        for node in ast.walk(cls):
            if isinstance(node, ast.Call):
                owners[id(node)] = cls.name
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    sets.setdefault(target.attr, []).append(getattr(node, "value", None) if not isinstance(
                        node, ast.AugAssign) else None)
        attributes[cls.name] = {attr: value.id for attr, values in sets.items() if len(values) == 1
                                and isinstance(value := values[0], ast.Name) and value.id in params
                                and id(value) in in_init}
    return owners, attributes


def _query_names(tree: ast.Module) -> set[str]:
    """The names a module binds only to a query false without CUDA (``cuda_available =
    torch.cuda.is_available()``), or to a conjunction with one (deep_sort's ``use_cuda = args.use_cuda and
    torch.cuda.is_available()``), once or again (siamese-triplet's notebook asks in two cells)."""
    from torchport.model.evaluate import imported, qualified

    imports = imported(tree)
    stores: dict[str, int] = {}
    queried: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        operands = node.value.values if isinstance(node.value, ast.BoolOp) and isinstance(
            node.value.op, ast.And) else [node.value]
        if any(isinstance(value, ast.Call) and not value.args
               and (name := qualified(value.func, imports)) is not None
               and torch_facts.query(name, "cpu") is False and torch_facts.query(name, "mps") is False
               for value in operands):
            queried[node.targets[0].id] = queried.get(node.targets[0].id, 0) + 1
    return {name for name, count in queried.items() if stores.get(name) == count}


def _calls_by_function(tree: ast.Module) -> Iterator[tuple[str | None, ast.Call]]:
    """Each call of ``tree``, with the name of the top-level function it is in, or of the class whose ``__init__``
    it is in (its parameters are the class's, as a call making it fills them: torch_seq2rec's ``Trainer`` hands
    its ``use_cuda`` to ``lib.Evaluation``); None elsewhere."""
    for statement in tree.body:
        scope = statement.name if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        parts: list[tuple[str | None, ast.AST]] = [(scope, statement)]
        if isinstance(statement, ast.ClassDef):
            parts = [(statement.name if isinstance(s, ast.FunctionDef) and s.name == "__init__" else None, s)
                     for s in statement.body]
        for where, part in parts:
            for node in ast.walk(part):
                if isinstance(node, ast.Call):
                    yield where, node


def _own_device_classes(results: Sequence[FileResult], trees: Mapping[int, ast.Module | None], project: Project,
                        changed: Sequence[int]) -> dict[int, frozenset[str]]:
    """Per changed module, ``"<local name>.cuda"`` for each class of another module of the run that moves itself its
    own way (`own_device_classes`), as the module binds it (``networks.ResnetEncoderMatching.cuda`` for ``from
    manydepth import networks``, also through a package that imports it)."""
    from torchport.model.objects import MODULE_PASSED, PASSED, own_device_classes
    from torchport.pipeline.library import installable

    defined = {i: found for i in range(len(results)) if "def cuda" in (results[i].original or "")
               and (tree := trees[i]) is not None and (found := own_device_classes(tree))}
    if not defined:
        return {}
    grown = True
    while grown:  # re-exports: a package's `from .resnet_encoder import ResnetEncoderMatching`; subclasses
        grown = False
        for index, tree in trees.items():  # video-representation's `ConvLSTMFramework(SeqClsMixin, Framework)`
            bindings = [(local, target, name) for local, target, name in project.bindings(index) if target != index]
            bases = {local for local, target, name in bindings if name is not None and name in defined.get(target, {})}
            bases |= {f"{local}.{name}" for local, target, imported_as in bindings
                      if imported_as is None for name in defined.get(target, {})}
            if not bases:  # (`framework.Framework` for `import lib.framework as framework`)
                continue
            bases |= set(defined.get(index, {}))  # a subclass of a subclass (`Leaf(Mid)`, `Mid(Framework)`)
            for cls in tree.body if tree is not None else ():
                if isinstance(cls, ast.ClassDef) and cls.name not in defined.get(index, {}) and not any(
                        isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in ("cuda", "to")
                        for f in cls.body) and any(ast.unparse(b) in bases for b in cls.bases):
                    defined.setdefault(index, {})[cls.name] = cls.lineno
                    grown = True
        for index in range(len(results)):
            for local, target, name in project.bindings(index) if results[index].path.name == "__init__.py" else ():
                if target != index and name is not None and name in defined.get(target, {}) \
                        and local not in defined.get(index, {}):
                    defined.setdefault(index, {})[local] = defined[target][name]
                    grown = True
    classes = {name for found in defined.values() for name in found}
    for index, result in enumerate(results):  # registries of them: pymarl2's `REGISTRY["basic_mac"] = BasicMAC`
        if not any(name in (result.original or "") for name in classes):
            continue
        own = set(defined.get(index, {})) | {local for local, target, name in project.bindings(index)
                                             if target is not None and name in defined.get(target, {})}
        if own and (tree := trees[index]) is not None and (found := _registries(tree, own)):
            defined.setdefault(index, {}).update(found)
    gates: dict[int, set[str]] = {index: {f"{name}.cuda" for name in [*bound, *defined.get(index, ())]}
                                  for index in changed if (bound := _bound(index, project, defined))
                                  or index in defined}  # (its own subclass of another module's: save_feature.py's)
    for index in changed:  # an object passed through a registry may be one of them
        gates.setdefault(index, set()).add(PASSED)
    modules = [i for i in defined if (tree := trees[i]) is not None and any(
        isinstance(c, ast.ClassDef) and c.name in defined[i] and any(
            ast.unparse(b).rsplit(".", 1)[-1] == "Module" for b in c.bases) for c in tree.body)]
    packaged = installable(results[i].path for i in {*changed, *modules}) if modules else set()
    if any(results[i].path in packaged for i in modules):  # a user may pass one wherever the library takes a model
        for index in changed:
            if results[index].path in packaged:
                gates[index].add(MODULE_PASSED)
    for index, params in _own_object_params(trees, project, defined, set(changed)).items():
        gates.setdefault(index, set()).update(params)
    return {index: frozenset(names) for index, names in gates.items()}


def _registries(tree: ast.Module, own: set[str]) -> dict[str, int]:
    """The module's top-level dicts that hold one of the classes ``own`` as a value (``{"q": QLearner}``, or a store
    ``REGISTRY["q"] = QLearner``): name -> line. An object made through one (``REGISTRY[args.learner](...)``) may be
    of a class that moves itself its own way."""
    found: dict[str, int] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and isinstance(value, ast.Dict) and any(
                isinstance(v, ast.Name) and v.id in own for v in value.values):
            found[target.id] = node.lineno
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and isinstance(value, ast.Name) and value.id in own:
            found.setdefault(target.value.id, node.lineno)
    return found


def _own_object_params(trees: Mapping[int, ast.Module | None], project: Project,
                       defined: Mapping[int, Mapping[str, int]], changed: set[int]) -> dict[int, set[str]]:
    """Per changed module, ``"<Class>(<param>=<class passed>).cuda"`` where a module of the run passes that
    class's ``__init__`` parameter an object of a class that moves itself its own way: XLM's ``GLUE(embedder, ...)``
    with ``embedder = SentenceEmbedder.reload(...)``, whose ``self.embedder.cuda()`` (a copy of the parameter) is the
    embedder's own, not torch's. Likewise ``"<function>(<param>=<class passed>).cuda"`` for a top-level function
    (mt-dnn's ``extract_encoding(model, ...)`` with an ``MTDNNModel``, which has a ``cuda`` and no ``to``)."""
    found: dict[int, set[str]] = {}
    for index in range(len(trees)):  # the bindings first: a tree is parsed only where an own class is bound
        own = set(_bound(index, project, defined, others=False)) | set(defined.get(index, {}))
        if not own or (tree := trees[index]) is None:
            continue
        made: dict[str, str] = {}  # name -> the class of the object bound to it
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                func = node.value.func
                cls = ast.unparse(func) if ast.unparse(func) in own else ast.unparse(func.value) \
                    if isinstance(func, ast.Attribute) and ast.unparse(func.value) in own else None
                made.update((t.id, cls.rpartition(".")[2]) for t in node.targets if cls and isinstance(t, ast.Name))
        if not made:
            continue
        callees = {local: (target, name) for local, target, name in project.bindings(index) if target in changed}
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            passed: list[tuple[int | str, str]] = [
                (k, a.id) for k, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id in made]
            passed += [(w.arg, w.value.id) for w in call.keywords if isinstance(w.value, ast.Name)
                       and w.value.id in made and w.arg is not None]
            if not passed:
                continue
            head, _, tail = ast.unparse(call.func).rpartition(".")
            target, name = callees.get(head or tail, (None, None))
            name = tail if head else name
            module = trees.get(target) if target is not None else None
            owner = next((c for c in module.body if isinstance(c, (ast.ClassDef, ast.FunctionDef)) and c.name == name),
                         None) if module is not None else None
            # a function handed one (mt-dnn's `extract_encoding(model, ...)`) as a class's `__init__` is
            init = owner if isinstance(owner, ast.FunctionDef) else next(
                (f for f in owner.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None) \
                if owner is not None else None
            if init is None or target is None:
                continue
            params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][0 if init is owner else 1:]
            for key, local in passed:
                param = params[key] if isinstance(key, int) and key < len(params) else key
                if isinstance(param, str) and param in params + [a.arg for a in init.args.kwonlyargs]:
                    found.setdefault(target, set()).add(f"{name}({param}={made[local]}).cuda")
    return found


def _dispatched_fields(results: Sequence[FileResult], trees: Mapping[int, ast.Module | None],
                       project: Project) -> frozenset[str]:
    """The attribute and key names whose values the project hands to one of its functions that compares the
    parameter with ``"cuda"`` and another device type itself (`analysis.defaults.dispatching_parameters`):
    torch-harmonics' benchmark registry keeps ``device="cuda"`` per entry, and its runner's
    ``_resolve_device(entry.device)`` skips entries whose device is not there. Such a value names a branch of that
    function, not a placement: a port to the runtime's device would run CUDA's entries on the CPU. Also the names
    a module compares with ``"cuda"`` to move data there (`analysis.defaults.placing_fields`)."""
    if project.dispatched is None:  # read once per run: several steps ask
        project.dispatched = _read_dispatched_fields(results, trees)
    return project.dispatched


def _read_dispatched_fields(results: Sequence[FileResult], trees: Mapping[int, ast.Module | None]) -> frozenset[str]:
    from torchport.codemods.analysis.defaults import dispatching_parameters, field_name, placing_fields

    fields = {field for index, result in enumerate(results) if _COMPARES_CUDA.search(result.original or "")
              and (tree := trees[index]) is not None for field in placing_fields(tree)}
    dispatchers: dict[str, set[int | str]] = {}  # function name -> its dispatching parameters, by position and name
    for index, result in enumerate(results):
        if not _DISPATCH_TEXT.search(result.original or "") or (tree := trees[index]) is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (found := dispatching_parameters(node)):
                names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                offset = 1 if names[:1] in (["self"], ["cls"]) else 0
                dispatchers.setdefault(node.name, set()).update(
                    {name for name in found} | {i - offset for i, name in enumerate(names) if name in found})
    for index, result in enumerate(results) if dispatchers else ():
        if not any(name in (result.original or "") for name in dispatchers) or (tree := trees[index]) is None:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            wanted = dispatchers.get(name or "")
            if wanted is None:
                continue
            given = [a for i, a in enumerate(node.args) if i in wanted] + [
                k.value for k in node.keywords if k.arg in wanted]
            fields.update(name for value in given if (name := field_name(value)) is not None)
    return frozenset(fields)


_DISPATCH_TEXT = text("compares_cpu")
_BUILDS = text("builds_cuda_extension")
_COMPARES_CUDA = text("compares_cuda")


# What may still stop a module's port: `.cuda()`, a torch.cuda call that raises off CUDA, a CUDA device string.
_STUCK_TEXT = re.compile(r"\.cuda\(|\bcuda\.(?:" + "|".join(sorted(n for n in RAISES_OFF_CUDA if "." not in n))
                         + r")\b|[\"']cuda(?::\d+)?[\"']")


def _cuda_flags(results: Sequence[FileResult]) -> set[str]:
    """The attribute names that every assignment in the project sets to what is false without CUDA, evaluated on
    the CPU and on MPS: ``args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False`` in
    PatchTST's entry point, read as ``self.args.use_gpu`` in another module; ``self.use_gpu =
    (torch.cuda.is_available() and use_gpu)`` in deep-person-reid's ``Engine``, read by its subclasses in other
    modules. An attribute some assignment sets to anything else (``self.cuda = cuda``) is no flag. Read from the
    original texts alone, so the run's steps (the gates, the MPS blockers, the report) share one answer."""
    return _flags_of(results)[0]


def ported_flags(results: Sequence[FileResult]) -> dict[int, frozenset[str]]:
    """The modules that set an attribute flag a port moves with the accelerator as a whole
    (`torchport.codemods.analysis.flags.portable_attribute_flags`: PatchTST's ``args.use_gpu``), each with the
    names it sets: migrated again, they port the CUDA check that sets it, and the modules that read it port what it
    guards, as code of any device (no gate of CUDA's alone).

    Returns:
        index into ``results`` -> the flag names it sets.
    """
    portable = _flags_of(results)[1]
    if not portable:
        return {}
    setting = re.compile(r"\.(" + "|".join(sorted(map(re.escape, portable))) + r")\s*=[^=]")
    found = {}
    for index, result in enumerate(results):
        if setting.search(result.original or "") and (tree := parse(result.original or "")) is not None:
            names = frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in portable
                              and isinstance(n.ctx, ast.Store))
            if names:
                found[index] = names
    return found


def _flags_of(results: Sequence[FileResult]) -> tuple[set[str], frozenset[str]]:
    """`_cuda_flags` and the flags a port moves with the accelerator instead, read once per set of texts."""
    texts = tuple(r.original for r in results)
    if _FLAGS and _FLAGS[0][0] == texts:
        return _FLAGS[0][1], _FLAGS[0][2]
    flags, portable = _read_cuda_flags(texts)
    _FLAGS[:] = [(texts, flags, portable)]
    return flags, portable


# the last run's texts (the same objects), its flags and the flags a port moves
_FLAGS: list[tuple[tuple[str | None, ...], set[str], frozenset[str]]] = []


def _read_cuda_flags(texts: Sequence[str | None]) -> tuple[set[str], frozenset[str]]:
    from torchport.codemods.analysis.flags import portable_attribute_flags
    from torchport.model.evaluate import Evaluator
    from torchport.model.evaluate import Path as Run

    names = {m.group(1) for source in texts for m in _ATTRIBUTE_SET.finditer(source or "")}
    if not names:
        return _switched_off(texts), frozenset()
    setting = re.compile(r"\.(" + "|".join(sorted(map(re.escape, names))) + r")\s*(?:[-+*/|&]?=[^=]|:)")
    assigned: dict[str, list[tuple[ast.Module, ast.expr | None]]] = {}
    read = _self_reads(texts, names)
    for source in texts:
        if not setting.search(source or "") or (tree := parse(source)) is None:
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in names and (
                        target.attr in read or not _on_self(target)):  # an own attribute nothing reads is none
                    value = None if isinstance(node, ast.AugAssign) else node.value  # type: ignore[attr-defined]
                    assigned.setdefault(target.attr, []).append((tree, value))
    evaluators: dict[tuple[int, str], Evaluator] = {}

    def falsy(tree: ast.Module, value: ast.expr | None) -> bool:
        """Whether ``value`` asks CUDA and is false on the CPU and on MPS, with its module's globals, or is false
        everywhere (LTSF-Linear's run_stat.py: ``args.use_gpu = False``)."""
        if isinstance(value, ast.Constant) and not value.value:
            return True
        if value is None or not _QUERY.search(ast.unparse(value)):
            return False
        for device in ("cpu", "mps"):
            if (id(tree), device) not in evaluators:
                evaluators[id(tree), device] = Evaluator(tree, device)
                evaluators[id(tree), device].top_functions(())  # the module's globals
            if evaluators[id(tree), device].value(value, Run({})) is not False:
                return False
        return True

    def copied(name: str, tree: ast.Module, value: ast.expr | None, sets: list[tuple[ast.Module, ast.expr | None]]
               ) -> bool:
        """Whether ``value`` copies the flag from ``self`` in a module that sets it there from a CUDA query
        (KGE_pytorch's Config: ``self.usegpu = torch.cuda.is_available()``, then ``self.modelparam.usegpu =
        self.usegpu``): false wherever its source is. A copy from another object (``opt.use_gpu``, an option) is
        none."""
        return isinstance(value, ast.Attribute) and value.attr == name and isinstance(value.value, ast.Name) and \
            value.value.id == "self" and any(other is tree and not isinstance(v, ast.Attribute) and falsy(other, v)
                                              for other, v in sets)

    found = {name for name, sets in assigned.items() if all(
        copied(name, tree, value, sets) or falsy(tree, value) for tree, value in sets)}
    reading = re.compile(r"\.(" + "|".join(sorted(map(re.escape, found))) + r")\b") if found else None
    portable = portable_attribute_flags((tree for source in texts if reading and source and reading.search(source)
                                         and (tree := parse(source)) is not None), found)
    return (found - portable) | _switched_off(texts), portable


def _on_self(node: ast.Attribute) -> bool:
    """``self.name``."""
    return isinstance(node.value, ast.Name) and node.value.id == "self"


def _self_reads(texts: Sequence[str | None], names: set[str]) -> set[str]:
    """The ``names`` that some text of the project reads as ``self.name`` (distributed-continual-learning's
    ``MeasureTime`` stores ``self.cuda = cuda`` and never reads it: beside ``args.cuda = ... is_available()``, which
    the learners read as ``self.args.cuda``, that store is no other meaning of the name)."""
    found: set[str] = set()
    for source in texts:
        if not source or not any(f"self.{name}" in source for name in names - found) or (tree := parse(source)) is None:
            continue
        found |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in names
                  and isinstance(node.ctx, ast.Load) and _on_self(node)}
    return found


def _switched_off(texts: Sequence[str | None]) -> set[str]:
    """The attribute and key names the project sets only to ``False`` where CUDA is not there, in an ``if`` of
    nothing but that: pymarl's ``if config["use_cuda"] and not th.cuda.is_available(): config["use_cuda"] = False``
    (its config files set it; `run.py` reads ``args.use_cuda``). Off CUDA the flag is false, whatever it was."""
    switched: set[str] = set()
    others: set[str] = set()
    for source in texts:
        if not source or not _QUERY.search(source) or (tree := parse(source)) is None:
            continue
        inside: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and not node.orelse and _asks_no_cuda(node.test) and all(
                    isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                    or isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is False
                    for s in node.body):
                for statement in node.body:
                    for target in statement.targets if isinstance(statement, ast.Assign) else ():
                        if (name := _field_name(target)) is not None:
                            switched.add(name)
                            inside.add(id(statement))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and id(node) not in inside:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if (name := _field_name(target)) is not None:
                        others.add(name)
    return switched - others


def _asks_no_cuda(test: ast.expr) -> bool:
    """``not torch.cuda.is_available()``, alone or as a term of an ``and``."""
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ast.Call)
               and not t.operand.args and _QUERY.search(ast.unparse(t.operand)) is not None for t in terms)


def _field_name(target: ast.expr) -> str | None:
    """``x.name`` or ``x["name"]`` -> ``name`` (a ``self`` attribute is the class's own: None)."""
    from torchport.codemods.analysis.defaults import field_name

    own = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    return None if own else field_name(target)


_ATTRIBUTE_SET = text("flag_from_query")
_QUERY = text("availability_query")
_KEPT_PLACEMENT = text("kept_placement")


def _stuck_functions(results: Sequence[FileResult], among: set[int]) -> dict[int, dict[str, int]]:
    """The module-level functions whose every path, evaluated on the CPU and on MPS, still stops at a CUDA need in
    the module as it will be written (the port, or the original where nothing changes): ``torch.cuda.LongTensor``
    that no rule ports, a ``.cuda()`` held. Index -> name -> line, for the modules of ``among``. A module that calls
    one stops there too."""
    from torchport.model.evaluate import Evaluator

    found: dict[int, dict[str, int]] = {}
    for index, result in enumerate(results):
        text = result.migrated if result.migrated is not None else result.original
        if index not in among or not text or result.error or not _STUCK_TEXT.search(text):
            continue
        tree = parse(text)
        if tree is None:
            continue
        names: dict[str, int] | None = None
        for target in ("cpu", "mps"):  # MPS only for what stops on the CPU
            units = Evaluator(tree, target).top_functions(None if names is None else names)
            names = {u.node.name: u.node.lineno for u in units if u.paths  # type: ignore[attr-defined]
                     and all(p.stop is not None and p.stop.kind in ("cuda", "gate") for p in u.paths)}
            if not names:
                break
        if names:
            found[index] = names
    return found


def unnamed_reached(results: Sequence[FileResult]) -> set[int]:
    """The files left alone because they never name CUDA, that a program with rewrites reaches: there the
    program's devices arrive (DDP ``device_ids=[device]``), so they are ported with it. A program that does not
    change itself counts where it imports one that does: InsightFace's ``face_verify.py`` takes the device
    ``config.py`` picks to ``Learner.py``, whose ``torch.load`` of a GPU checkpoint needs a ``map_location``."""
    unnamed = {i for i, r in enumerate(results) if r.facts.get("unnamed")}
    if not unnamed:
        return set()
    project = Project(results)
    changed = {i for i, r in enumerate(results) if r.changed}
    starts = changed | {i for i, r in enumerate(results) if i not in changed and r.original and (
        r.path.suffix == ".ipynb" or (shape := outline(r.original)).script or shape.works_at_top)
        and project.reach(i) & changed}
    return {index for start in starts for index in project.reach(start) & unnamed}


AMP_CODES = frozenset({"TP020", "TP021", "TP022", "TP023"})  # autocast and GradScaler rewrites (codemods.amp)


def cpu_only_amp(results: Sequence[FileResult]) -> dict[int, str]:
    """The changed modules whose only rewrites move a CUDA autocast or GradScaler, that only programs which never
    put data on a device reach: there the CUDA autocast wraps CPU tensors (a no-op on every machine), and a CPU
    autocast would change the numbers on the CPU alone.

    Returns:
        index into ``results`` -> why its rewrites are not made.
    """
    from torchport.model.evaluate import places_data

    amp_only = {i for i, r in enumerate(results) if r.changed and set(r.rewrites) <= AMP_CODES}
    if not amp_only:
        return {}
    placing: dict[int, bool] = {}

    def places(index: int, tree: ast.Module | None = None) -> bool:
        if index not in placing:
            tree = tree or _parse(results[index].original)
            placing[index] = tree is None or places_data(tree)
        return placing[index]

    trees = {i: _parse(results[i].original) for i in amp_only}
    amp_only = {i for i, tree in trees.items()  # a script placing no data itself: the rest is read only then
                if tree is not None and (is_script(tree) or works_at_top(tree)) and not places(i, tree)}
    if not amp_only:
        return {}
    project = Project(results)
    left = {}
    for index, reaching in _reaching(project, len(results), amp_only).items():
        if not any(places(i) for start in reaching for i in project.reach(start)):
            left[index] = (f"no program that reaches it puts data on a device ({results[index].display}): its "
                           "CUDA autocast wraps CPU tensors, a no-op everywhere, where a CPU autocast would change "
                           "the numbers")
    return left


def kept_cuda_or_cpu(results: Sequence[FileResult], avoids: Mapping[int, str]) -> dict[int, str]:
    """The changed modules with a CUDA autocast or GradScaler the port moves (`AMP_CODES`), or a device choice it
    ports (``facts["choices"]``: an availability idiom, a CUDA guard that picks), that only programs kept CUDA-or-CPU
    reach (``tp.keep_cuda_or_cpu``, given by the project pass in ``avoids`` or by their own text): their data is on
    CUDA or the CPU, where CUDA's autocast and scaler already did what a moved one would (enabled on CUDA, disabled
    on the CPU), and ``"cuda" if torch.cuda.is_available() else "cpu"`` (or ``if torch.cuda.is_available(): device =
    "cuda"``) already picks what the runtime's pick would, so porting them changes nothing. Not a module packaging
    metadata installs (its users' programs decide), nor one no program reaches.

    Args:
        results: the run's results, after the per-file and hold passes.
        avoids: index into ``results`` -> the reason the project pass gives that entry point (`avoid_mps`).

    Returns:
        index into ``results`` -> why its autocasts, scalers and idioms stay CUDA's (the entry point that keeps it).
    """
    from torchport.pipeline.library import installable

    amp = {i for i, r in enumerate(results) if r.changed and (set(r.rewrites) & AMP_CODES - {"TP022"}
                                                               or r.facts.get("choices"))}
    packaged = installable(results[i].path for i in amp)
    amp = {i for i in amp if results[i].path not in packaged}
    if not amp:
        return {}

    def kept(index: int) -> bool:
        reason = avoids.get(index)
        return reason is not None and keeps_cuda_or_cpu(reason) or reason is None and "keep_cuda_or_cpu(" in (
            results[index].migrated or "")

    project = Project(results)
    left = {}
    for index, reaching in _reaching(project, len(results), amp).items():
        result = results[index]  # the programs that run a line its port changes (not a demo `main` they import past)
        lines = _ported_lines(result.original or "", result.migrated or "")
        entries = [i for i in reaching if _runs_as_program(results[i])
                   and (i == index or project.runs_line(index, lines, project.reach(i)))]
        if entries and all(kept(i) for i in entries):
            left[index] = f"every program that reaches it runs on CUDA or the CPU alone ({results[entries[0]].display})"
    return left


def _runs_as_program(result: FileResult) -> bool:
    """Whether ``result``'s file runs as a program: a notebook, a test module, a script, or a module that works at
    its top level (one that does not parse counts too: nothing shows it does not)."""
    if result.path.suffix != ".py" or _TEST_FILE.match(result.path.name):
        return True
    shape = outline(result.original)
    return not shape.parses or shape.script or shape.works_at_top


def lone_keeps(results: Sequence[FileResult], avoids: Mapping[int, str], every: bool = False) -> set[int]:
    """The entry points the project pass keeps CUDA-or-CPU (``avoids``: index -> reason) whose port now changes
    nothing but that call (TP019 its only rewrite) and no line of a module they reach that the program runs
    (`_runs_a_change`): what the keep answered (a choice kept beside data moved) is no longer there, and the program
    runs as written, on CUDA or the CPU. ``every``: those
    that get `tp.avoid_mps` too (after the last step, nothing of such a program asks the runtime: DDSP-SVC's
    scripts, whose moves later steps left as written).

    Returns:
        indices into ``results``.
    """
    project = Project(results)
    return {index for index, why in avoids.items() if (every or keeps_cuda_or_cpu(why))
            and set(results[index].rewrites) <= {"TP019"}
            and not any(_runs_a_change(project, other, project.reach(index))
                        for other in project.reach(index) - {index})}


def _runs_a_change(project: Project, index: int, reach: set[int]) -> bool:
    """Whether a program of modules ``reach`` runs a line the port changed in module ``index``: one at its top level,
    or in a top-level function or class the program names (`program_names`). dgl-ke's kvclient imports the package
    whose trainer is ported, but runs none of it: its keep answers nothing."""
    result = project.results[index]
    if not result.changed or not result.original or not result.migrated:
        return False
    from torchport.pipeline.project import _names

    spans = _names(result.original).spans
    owners = {next((name for first, last, name in spans if first <= line <= last), None)
              for line in _ported_lines(result.original, result.migrated)}
    return None in owners or bool(owners & program_names(project, reach))


@functools.lru_cache(maxsize=256)
def _ported_lines(original: str, migrated: str) -> frozenset[int]:
    """The lines of ``original`` (1-based) its port ``migrated`` changes or adds a line at, the runtime's import
    aside: read once per module, however many programs reach it."""
    before, after = original.splitlines(), migrated.splitlines()
    lines: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag != "equal" and not all("torchport" in line and line.lstrip().startswith(("import ", "from "))
                                      or not line.strip() for line in after[j1:j2]):  # not the runtime's import
            lines.update(range(i1 + 1, i2 + 1) if i2 > i1 else {max(i1, 1)})
    return frozenset(lines)


def _reaching(project: Project, count: int, targets: set[int]) -> dict[int, list[int]]:
    """Each of the modules ``targets`` -> the modules of the run (``count`` of them) that reach it, itself
    included."""
    found: dict[int, list[int]] = {}
    for index in range(count):
        for reached in project.reach(index) & targets:
            found.setdefault(reached, []).append(index)
    return found


FOLLOW_CODES = frozenset({"TP024"})  # data moved to other data's device (`x.cuda() if y.is_cuda else x`)


def kept_off_accelerators(results: Sequence[FileResult]) -> dict[int, str]:
    """The changed modules of a project no packaging metadata makes installable whose only rewrites move data to
    other data's device (`FOLLOW_CODES`) or move a CUDA autocast or GradScaler (`AMP_CODES`), that only programs
    which move no data to the runtime's device and never name another backend reach: their data is on CUDA or the
    CPU, as before, so ``y.device`` is CUDA exactly where ``y.is_cuda`` was (NRI's modules, behind scripts whose
    ``args.cuda`` flag keeps them CUDA-or-CPU), and a CUDA autocast wraps CUDA tensors or CPU ones, where it
    disables itself (distributed-continual-learning's learners, behind ``args.cuda = torch.cuda.is_available()``).

    Returns:
        index into ``results`` -> why its rewrites are not made.
    """
    from torchport.codemods.core.registry import PLACES_DATA
    from torchport.pipeline.library import installable

    follow = {i for i, r in enumerate(results)
              if r.changed and r.rewrites and set(r.rewrites) <= FOLLOW_CODES | AMP_CODES}
    packaged = installable(results[i].path for i in follow)
    follow = {i for i in follow if results[i].path not in packaged}
    if not follow:
        return {}
    project = Project(results)
    other_backend = text("other_backend_text")

    def keeps(index: int) -> bool:
        """Whether module ``index`` moves no data anywhere new: its port places nothing on the runtime's device
        and picks no device, and its text names no other backend."""
        result = results[index]
        return index in follow or not (result.changed and (
            set(result.rewrites) & PLACES_DATA or result.facts.get("moves")
            or result.facts.get("choices"))) and not other_backend.search(result.original or "")

    left: dict[int, str] = {}
    for index, starts in _reaching(project, len(results), follow).items():
        starts = [s for s in starts if _runs_as_program(results[s])]  # one no program runs is its users' to call
        if starts and all(keeps(i) for start in starts for i in project.reach(start)):
            left[index] = (f"every program that reaches it ({results[index].display}) keeps its data on CUDA or "
                           "the CPU, so data is on CUDA here exactly where it was")
    return left


def faked_by_tests(results: Sequence[FileResult]) -> dict[int, str]:
    """The changed modules that a test which fakes ``torch.cuda`` imports: such a test sees CUDA where there is none
    and expects the module's CUDA calls, so the module is ported only with that test (which stays as written).

    Returns:
        index into ``results`` -> why its rewrites are not made (the test and the line that fakes CUDA).
    """
    from torchport.model.torch_facts import FAKES_CUDA

    fakers = {}
    for index, result in enumerate(results):
        text = result.original or ""
        if _TEST_FILE.match(result.path.name) and (found := FAKES_CUDA.search(text)):
            fakers[index] = text.count("\n", 0, found.start()) + 1
    if not fakers or not any(r.changed for r in results):
        return {}
    project = Project(results)
    left: dict[int, str] = {}

    def defines(module: int, name: str) -> bool:
        return top_definition(project, module, name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) is not None

    for test, line in sorted(fakers.items()):
        # what it imports, and where a package's `__init__` re-exports a name from (ezflow's `from ezflow.engine
        # import DistributedTrainer`, defined in `ezflow/engine/trainer.py`)
        origins = {at[0] for _, target, name in project.bindings(test) if name not in (None, "*")
                   and (at := project.origin(target, name, defines, 4)) is not None}
        for index in sorted(project.imports(test) | origins):
            if results[index].changed and index not in left:
                left[index] = (f"{results[test].display}:{line} fakes torch.cuda and calls it: it is ported only "
                               "with that test")
    return left


def may_leave(results: Sequence[FileResult]) -> list[FileResult]:
    """The files holding CUDA-only text (or naming an extension the project builds for CUDA alone), where some file
    changed: without one, `left_whole` leaves nothing (a text scan, so that a run needs no analysis to know)."""
    if not any(r.changed for r in results):
        return []
    extensions = _modules(results)[1] if any(_BUILDS.search(r.original or "") for r in results) else ()
    return [r for r in results if _cuda_only_text(r.original or "")
            or any(name in (r.original or "") for name in extensions) or installed.may_lack(r.original or "")]


_CUDA_ONLY: dict[str, bool] = {}
_NEEDING: dict[str, bool] = {}


def _needing(text: str) -> bool:
    """Whether ``text`` names what needs CUDA (`analysis.programs.CUDA_ONLY_TEXT`); read once per text."""
    return remembered(_NEEDING, text, lambda: CUDA_ONLY_TEXT.search(text) is not None)


def _cuda_only_text(text: str) -> bool:
    """Whether ``text`` holds CUDA-only text, or asks CUDA and stops; read once per text (`may_leave` is asked
    twice a run)."""
    asks, stops = _GATE_LOOSE
    return remembered(_CUDA_ONLY, text, lambda: bool(_CUDA_ONLY_LOOSE.search(text) and CUDA_ONLY_TEXT.search(text) or (
        asks.search(text) and _GATE_ASKS.search(text) and stops.search(text) and _GATE_STOPS.search(text))))


def leave(results: list[FileResult], left: Mapping[int, str], tag: str = CUDA_ONLY_LIBRARY_TAG) -> None:
    """Undo the rewrites of ``results[i]`` for each ``i`` in ``left``, with a TP110 note citing ``tag`` and giving
    ``left[i]``."""
    for index, reason in left.items():
        result = results[index]
        if not result.changed:
            continue
        line = min((site.line for site in result.sites), default=1)
        count = sum(result.rewrites.values())
        if reason.startswith("[R"):  # its own reason (`RUNS_NOWHERE_TAG`)
            tag, reason = reason.split("] ", 1)
            tag += "]"
        result.migrated, result.rewrites, result.sites = result.original, {}, []
        result.avoid_mps = None  # no `tp.avoid_mps` is written: a program importing the file keeps MPS for it
        note = Diagnostic("TP110", line, 0, f"{count} rewrite(s) not made: {tag} {reason}")
        result.diagnostics = sorted([*result.diagnostics, note], key=lambda d: (d.line, d.column))


def _kind(result: FileResult, module: Outline, name: str | None, scripts: set[str], imported: bool,
          engine: bool | None = None) -> str | None:
    """The entry-point kind of a file (None: not one), from its `Outline`. A module the project imports is an entry
    point only with a ``__main__`` block, and a test module only where nothing imports it whole or takes a test of
    it (``engine``, by default ``imported``): an ``engine_test.py`` whose ``test_loop`` others call is an engine,
    opacus's ``multigpu_gradcheck_test.py``, whose ``setup`` another test module takes, is a test module.
    ``setup.py`` is none, and torch.hub's ``hubconf.py``, which hub loads into its caller's process, is a library."""
    if result.path.suffix == ".ipynb":
        return "notebook"
    if not module.parses:  # a script CPython cannot parse (Python 2's `.cuda(async=True)`) runs nowhere
        return "script" if module.script and result.path.suffix == ".py" else None
    if _TEST_FILE.match(result.path.name) and not (imported if engine is None else engine) and module.tests:
        return "test"
    if name is not None and name in scripts:
        return "console-script"
    if result.path.name == "setup.py":
        return None
    if result.path.name == "hubconf.py" and not module.script:
        return "library"
    return "script" if module.script or (not imported and module.works_at_top) else None


def _public_module(shown: str, module: Outline) -> bool:
    """A module a library's users import (``shown``: its path in the project): not private (``_x.py``, an
    ``__init__``), not setup or test configuration, not under ``tests/``."""
    path = Path(shown)
    return (module.parses and path.suffix == ".py" and not path.name.startswith("_")
            and path.name not in ("setup.py", "conftest.py") and not {"test", "tests"} & set(path.parts)
            and module.defines)


def _console_scripts(root: Path) -> set[str]:
    """The modules the project's console scripts run (``pkg.cli:main`` gives ``pkg.cli``): ``[project.scripts]`` of
    ``pyproject.toml``, ``console_scripts`` of ``setup.cfg``'s ``[options.entry_points]`` and of ``setup.py``'s
    ``entry_points=`` (tapqir's ``"tapqir=tapqir.main:app"``)."""
    import configparser

    folder = root if root.is_dir() else root.parent
    targets: list[str] = []
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
        scripts = data.get("project", {}).get("scripts", {})
        targets += [str(t) for t in scripts.values()] if isinstance(scripts, dict) else []
    except (OSError, ValueError):
        pass
    config = configparser.ConfigParser()
    try:
        config.read(folder / "setup.cfg", encoding="utf-8")
        targets += [line.split("=", 1)[1] for line in config.get("options.entry_points", "console_scripts",
                                                                  fallback="").splitlines() if "=" in line]
    except (configparser.Error, UnicodeDecodeError):
        pass
    try:
        setup = ast.parse((folder / "setup.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        setup = None
    for node in ast.walk(setup) if setup is not None else ():
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts" \
                        and isinstance(value, (ast.List, ast.Tuple)):
                    targets += [e.value.split("=", 1)[1] for e in value.elts
                                if isinstance(e, ast.Constant) and isinstance(e.value, str) and "=" in e.value]
    return {target.split(":", 1)[0].strip() for target in targets}


class _Trees(Mapping[int, "ast.Module | None"]):
    """Each file's tree by its index in the run, parsed when first asked for (a step that reads a few modules, as
    the gates of the changed files, parses only those) and once per text (`torchport.pipeline.project.parse`)."""

    def __init__(self, texts: Sequence[str | None]) -> None:
        self._texts = texts

    def __getitem__(self, index: int) -> ast.Module | None:
        if not 0 <= index < len(self._texts):
            raise KeyError(index)
        return parse(self._texts[index])

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._texts)))

    def __len__(self) -> int:
        return len(self._texts)


_last: tuple[tuple[tuple[str, str, int], ...], _Trees, Project] | None = None


def _model(results: Sequence[FileResult]) -> tuple[Mapping[int, ast.Module | None], Project]:
    """Every file's tree and the project's imports, for ``results``: read once per set of sources (a run asks
    for them in several steps: gates, MPS blockers, the programs left whole, the summary)."""
    global _last
    key = tuple((str(r.path), r.display, hash(r.original)) for r in results)  # the same sources, whatever objects
    if _last is not None and _last[0] == key:
        return _last[1], _last[2]
    trees = _Trees([r.original for r in results])
    project = Project(results)
    _last = (key, trees, project)
    return trees, project


def _parse(text: str | None) -> ast.Module | None:
    return parse(text)


# What each module's text gives the steps of a run, read once per text (see `torchport.pipeline.project.parse`).
_EXTENSIONS: dict[tuple[str, bool], frozenset[str]] = {}  # build script's text, whether its C++ sources need
# CUDA -> what it makes for CUDA alone
_REQUIREMENTS: dict[tuple[str, bool, frozenset[str], frozenset[str]], list[Requirement]] = {}
_EXITING: dict[str, dict[str, int]] = {}
_GATING: dict[str, bool] = {}
_MAKERS: dict[str, dict[str, bool]] = {}  # `_joins_a_group`
_PREDICATES: dict[str, dict[str, int]] = {}


def _requirements(text: str, entry: bool, predicates: frozenset[str] = frozenset(),
                  modules: Modules = (frozenset(), frozenset())) -> list[Requirement]:
    """`torchport.codemods.analysis.requirements.requirements` of a module that parses; read once per text.
    ``modules``: the names of the run's Python files and of the extensions it builds for CUDA alone (`_modules`):
    a ``*_cuda`` module among the files is no compiled extension (torchquad's ``utils/enable_cuda.py``)."""
    from torchport.codemods.analysis.requirements import requirements

    files, extensions = modules

    def read() -> list[Requirement]:
        tree = parse(text)
        assert tree is not None
        return requirements(tree, text, entry, predicates, extensions)

    found = remembered(_REQUIREMENTS, (text, entry, predicates, extensions), read)
    return [need for need in found if need.extension.rsplit(".", 1)[-1] not in files]


Modules = tuple[frozenset[str], frozenset[str]]


def _modules(results: Sequence[FileResult]) -> Modules:
    """The module names (file stems) of the run's Python files, and the names of the compiled extensions its build
    scripts make for CUDA alone (`analysis.requirements.cuda_extensions`)."""
    from torchport.codemods.analysis.requirements import cuda_extensions, sources_need_cuda

    def built(text: str, cuda_sources: bool) -> frozenset[str]:
        tree = parse(text)
        return cuda_extensions(tree, cuda_sources) if tree is not None else frozenset()

    extensions = frozenset(name for r in results if r.original and _BUILDS.search(r.original)
                           for cuda in [sources_need_cuda(r.path.parent)]
                           for name in remembered(_EXTENSIONS, (r.original, cuda), partial(built, r.original, cuda)))
    return frozenset(r.path.stem for r in results if r.path.suffix == ".py"), extensions


def _exiting_gates(text: str, tree: Callable[[], ast.Module | None]) -> dict[str, int]:
    """The module's top-level functions that stop whenever CUDA is missing (`analysis.gates.exits_without_cuda`),
    name -> line; read once per text (``tree`` gives its tree the first time)."""
    from torchport.codemods.analysis.gates import exits_without_cuda

    def read(tree: ast.Module | None) -> dict[str, int]:
        return {s.name: _stop_line(tree, s) for s in tree.body if isinstance(
            s, (ast.FunctionDef, ast.AsyncFunctionDef)) and exits_without_cuda(s)} if tree is not None else {}

    return remembered(_EXITING, text, lambda: read(tree()))


def _stop_line(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The line where ``function`` (a gate of ``tree``), run on the CPU, stops first (its ``sys.exit``, ``raise``
    or ``assert``); its ``def`` line when the evaluation finds no stop."""
    from torchport.model.evaluate import Evaluator

    units = Evaluator(tree, "cpu").top_functions([function.name])
    lines = [p.stop.line for unit in units for p in unit.paths if p.stop is not None]
    return min(lines) if lines else function.lineno


def _spot(module: Path, where: str, root: Path) -> str:
    """The file of a ``tp.avoid_mps`` reason's ``where``, shown from ``root``: written relative to the folder of
    the ``module`` that holds the call where the run was given absolute paths, else as the run shows it."""
    beside = module.parent / where
    return _shown(beside if beside.is_file() else Path(where), root)


def _shown(path: Path, root: Path) -> str:
    base = root if root.is_dir() else root.parent
    try:
        return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()
    except ValueError:  # another drive
        return path.as_posix()
