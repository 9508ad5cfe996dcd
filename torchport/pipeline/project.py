"""The project-level pass: device choices that must stay CUDA-or-CPU because of other files.

Per file, the rules rewrite ``"cuda" if torch.cuda.is_available() else "cpu"`` and availability guards
that move data (``if torch.cuda.is_available(): model.cuda()``) to the runtime's pick, which is MPS on a
Mac. Two things the file alone cannot show make that pick wrong there:

- **MPS blockers.** Code the chosen device reaches (the file and every module it imports, transitively)
  uses float64, complex128, sparse tensors or torchaudio's ``forced_align``, which MPS lacks. The
  original ran on the CPU of a Mac; the port would fail on MPS.
- **Choices kept elsewhere.** A module linked by imports (either way) keeps its own availability
  choice as CUDA-or-CPU (its guard also holds CUDA-only code, or a flag decides): on MPS one side's
  tensors would be on MPS and the other's on the CPU. The same holds within one file.

Such a file is migrated again with a *hold*: its availability idioms and data-moving guards stay as
written (CPU on a Mac, as before), each with a TP110 note naming the file and line that decided it.
A held file's choices count as kept, so the pass repeats until nothing changes. Imports are read
statically; a package ``__init__`` that imports modules by name (a plugin registry) is taken to import
its whole folder.
"""

from __future__ import annotations

import ast
import difflib
import functools
import gc
import inspect
import re
import sys
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple, TypeVar, cast

from torchport.codemods.analysis.lacks import (
    DATA_PARALLEL_INPUTS,
    DATA_PARALLEL_PLACES,
    batch_moves,
    blockers,
    data_parallel_fed,
    feeds_moved,
)
from torchport.codemods.analysis.programs import (
    absolute_module,
    always_run,
    is_main,
    is_script,
    is_test,
    main_blocks,
)
from torchport.codemods.analysis.source import parse as parse_quietly
from torchport.model import installed, torch_facts
from torchport.results import COMPILED, CPU_EXTENSION, DATASET_FLOAT64, KEPT_CHOICE, FileResult, keeps_cuda_or_cpu

_DYNAMIC_IMPORT = torch_facts.text("dynamic_import")
# What the steps of a run read from each module's text, kept so that no step reads a module again (a run asks in
# several steps: gates, holds, MPS blockers, the programs left whole, the summary): its `Outline` and its blockers,
# never its whole tree (every tree of diffusers is 1.2 GB). Keyed by the text itself; emptied when it grows past
# `_MEMO_LIMIT` entries, so that a long-lived process does not keep old projects.
_OUTLINES: dict[str, Outline] = {}
_LACKING: dict[tuple[str, bool], tuple[tuple[int, str], ...]] = {}
_NAMES: dict[str, _Names] = {}
_JOINED: dict[str, list[tuple[str, ...]]] = {}  # `_joined_here`
_MEMO_LIMIT = 20_000
_K = TypeVar("_K")
_V = TypeVar("_V")
_COMPILED: dict[tuple[str, bool], frozenset[str]] = {}  # build script's text, whether its C++ sources need CUDA ->
# the extensions it makes with C++ kernels
_BUILDS = torch_facts.text("builds_cuda_extension")
_MAIN_GUARD = torch_facts.text("main_guard")
_MENTIONS_MPS = torch_facts.text("mentions_mps")  # as a word: BIT_CD's trainer names `imps`, no MPS
_CPU_CUDA_LIBRARIES = frozenset(torch_facts.words("cpu_cuda_library"))
_CUDA_ONLY_TEXT = torch_facts.text("cuda_only_text")
# `deferred_cuda_imports`, by text and the project's CUDA extensions
_DEFERRED: dict[tuple[str, frozenset[str]], tuple[tuple[str, str | None, int, str], ...]] = {}
_ATTRIBUTES: dict[str, frozenset[str]] = {}  # `_attributes`
_LOADS: dict[str, dict[str, tuple[int, ...]]] = {}  # `_loads`
# The last trees parsed, for the steps that read a few modules whole (entry points, gates), up to this much text:
# a tree takes about 20 times its text (and the memory a dropped tree held stays with the process).
_TREES: OrderedDict[str, ast.Module | None] = OrderedDict()
_TREES_TEXT_LIMIT = 1_000_000
_trees_text = 0


class Imported(NamedTuple):
    """An import statement as the project steps read it: ``import a.b as c`` (``level`` 0, ``module`` None) or
    ``from ..m import x as y`` (``is_from``), with its ``(name, asname)`` pairs; a tuple takes a tenth of the
    statement's tree (diffusers' ``__init__`` files import thousands of names)."""

    is_from: bool
    module: str | None
    level: int
    names: tuple[tuple[str, str | None], ...]
    line: int = 0


def _imported(node: ast.Import | ast.ImportFrom) -> Imported:
    names = tuple((alias.name, alias.asname) for alias in node.names)
    if isinstance(node, ast.Import):
        return Imported(False, None, 0, names, node.lineno)
    return Imported(True, node.module, node.level, names, node.lineno)


@dataclass(frozen=True)
class Outline:
    """What the project steps read of every module, kept in place of its tree.

    ``parses``: CPython parses it. ``imports``: its import statements, nested ones too, in order; ``always``: those
    it runs whenever it is imported (`analysis.programs.always_run`). ``script``: it has a ``__main__`` block;
    ``works_at_top``: a call or loop at its top level (`works_at_top`); ``tests``: a top-level function or class
    named ``test*``; ``defines``: a top-level function or class. ``main``: the imports its ``__main__`` block always
    runs; ``arms``: per ``if``/``elif``/``else`` chain that runs whenever it does (at the top or in that block), whose
    every arm imports, the imports of each arm: one of them runs. ``inside``: per top-level function or class, the
    imports its body (a method's) always runs when it runs, dynamic ones too (`Project.live_imports`).
    ``off_cuda``: the imports of the arm a top-level ``if`` chain takes wherever CUDA is not, its test evaluated
    (JoJoGAN's ``if torch.cuda.is_available(): from op.fused_act import ... else: from op.fused_act_cpu import
    ...``): what every program off CUDA runs, besides ``always``.
    """

    parses: bool
    imports: tuple[Imported, ...] = ()
    always: tuple[Imported, ...] = ()
    script: bool = False
    works_at_top: bool = False
    tests: bool = False
    defines: bool = False
    main: tuple[Imported, ...] = ()
    arms: tuple[tuple[tuple[Imported, ...], ...], ...] = ()
    inside: tuple[tuple[str, tuple[Imported, ...]], ...] = ()
    off_cuda: tuple[Imported, ...] = ()


def _holds_tests(tree: ast.Module, defines: Sequence[ast.stmt]) -> bool:
    """Whether a module defines a test a runner collects: a class of tests, or a ``test*`` function that its own
    code does not call with arguments (learning3d's ``test_one_epoch(device, model, test_loader)``, which the
    script's ``main`` runs, is a step of the script; a runner could fill none of its parameters)."""
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and (node.args or node.keywords)}
    return any(is_test(s) and not (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in called
                                   and s.args.args) for s in defines)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run CPython's cyclic garbage collector less often for a while: a run keeps many objects alive (the tree of
    every module here, LibCST's nodes in the workers), and with the default thresholds the collector walks them
    again and again (a third of a cold run on timm). What a run throws away is still collected, later."""
    old = gc.get_threshold()
    if old[0]:  # 0: collection is off, and stays so
        gc.set_threshold(max(old[0], 100_000), max(old[1], 50), max(old[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def parse(text: str | None) -> ast.Module | None:
    """CPython's tree of ``text`` (None for no text, or one that does not parse). The last trees are kept (up to
    `_TREES_TEXT_LIMIT` characters of text), so that the steps reading one module in turn parse it once. The tree is
    shared: read it, never change it."""
    global _trees_text
    if text is None:
        return None
    try:
        tree = _TREES[text]
    except KeyError:
        pass
    else:
        _TREES.move_to_end(text)
        return tree
    tree = parse_quietly(text)
    _TREES[text] = tree
    _trees_text += len(text)
    while _trees_text > _TREES_TEXT_LIMIT and len(_TREES) > 1:
        _trees_text -= len(_TREES.popitem(last=False)[0])
    return tree


def remembered(table: dict[_K, _V], key: _K, compute: Callable[[], _V]) -> _V:
    """``table[key]``, ``compute()`` the first time it is asked (a table past `_MEMO_LIMIT` entries is emptied
    first): what the steps of a run read from a module's text, once per text."""
    try:
        return table[key]
    except KeyError:
        pass
    if len(table) >= _MEMO_LIMIT:
        table.clear()
    found = table[key] = compute()
    return found


_BINDS: dict[str, frozenset[str] | None] = {}  # `installed.binds`, per text
_UNBOUND: dict[tuple[str, bool], tuple[int, str] | None] = {}  # `Project.unbound_read`, per text
_FIRST_CALLS: dict[tuple[str, bool], list[ast.Call]] = {}  # `Project.refused_call`, per text
_BINDING_COUNTS: dict[str, dict[str, int]] = {}  # `_binding_counts`, per text
_BATCH_MOVES: dict[str, tuple[int, int]] = {}  # `lacks.batch_moves`, per text


def _bound(text: str) -> frozenset[str] | None:
    tree = parse(text)
    return installed.binds(text, tree) if tree is not None else None


def _batch_moves(text: str) -> tuple[int, int]:
    tree = parse(text)
    return batch_moves(tree) if tree is not None else (0, 0)


def outline(text: str | None) -> Outline:
    """The `Outline` of a module's ``text``, read once per text."""
    text = text or ""
    return remembered(_OUTLINES, text, lambda: _outline(text))


def _outline(text: str) -> Outline:
    tree = parse(text)
    if tree is None:  # its imports still say what a program that runs it would meet (`_line_imports`)
        found, top = _line_imports(text)
        return Outline(False, found, top, script=_MAIN_GUARD.search(text) is not None)
    defines = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    imports = {id(s): _imported(s) for s in _statements(tree.body) if isinstance(s, (ast.Import, ast.ImportFrom))}
    main = [s for s in tree.body if isinstance(s, ast.If) and is_main(s.test)]
    run_main = [s for block in main for s in always_run(block.body)]
    chains = [s for s in [*tree.body, *(b for m in main for b in m.body)]
              if isinstance(s, ast.If) and s.orelse and not is_main(s.test)]
    dynamic = dict(_dynamic_imports(tree)) if _DYNAMIC_IMPORT.search(text) else {}

    def run(statements: list[ast.stmt]) -> tuple[Imported, ...]:
        """The imports ``statements`` (each always run) make: their import statements, and the modules a dynamic
        import among their expressions names (an assignment `MODEL = import_module(args.net)`)."""
        return tuple(found for s in statements for found in ([imports[id(s)]] if id(s) in imports else [
            dynamic[id(n)] for n in ast.walk(s) if id(n) in dynamic] if dynamic and not isinstance(
                s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []))

    def inside(definition: ast.stmt) -> tuple[Imported, ...]:
        bodies = [definition] if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) else [
            s for s in getattr(definition, "body", ()) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return tuple(found for function in bodies for s in always_run(function.body)
                     for found in ([imports[id(s)]] if id(s) in imports else
                                   [dynamic[id(n)] for n in ast.walk(s) if id(n) in dynamic]))

    return Outline(True, (*imports.values(), *dynamic.values()), run(always_run(tree.body)),
                   is_script(tree), works_at_top(tree), _holds_tests(tree, defines), bool(defines),
                   run(run_main),
                   tuple(arms for s in chains if (arms := _arms(s, imports))),
                   tuple((d.name, found) for d in defines if (found := inside(d))),
                   _off_cuda(tree, [s for s in tree.body if isinstance(s, ast.If) and s.orelse], imports))


def _line_imports(text: str) -> tuple[tuple[Imported, ...], tuple[Imported, ...]]:
    """The one-line import statements of a module CPython cannot parse (ABWIM4KBRD's JointModel.py, Python 2's
    ``.cuda(async=True)``), each parsed alone, and those of them at its top level (not indented)."""
    found: list[Imported] = []
    top: list[Imported] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if not stripped.startswith(("import ", "from ")):
            continue
        tree = parse_quietly(stripped)
        if tree is None or len(tree.body) != 1 or not isinstance(node := tree.body[0], (ast.Import, ast.ImportFrom)):
            continue
        found.append(_imported(node)._replace(line=number))
        if stripped == line:
            top.append(found[-1])
    return tuple(found), tuple(top)


def _off_cuda(tree: ast.Module, chains: list[ast.If], imports: dict[int, Imported]) -> tuple[Imported, ...]:
    """The imports of the arm each top-level ``if`` chain of ``chains`` takes off CUDA, its tests evaluated on the
    CPU (a test that does not ask CUDA decides nothing here)."""
    asking = [s for s in chains if "cuda" in ast.unparse(s.test)]
    if not asking:
        return ()
    from torchport.model.evaluate import Evaluator

    evaluator = Evaluator(tree, "cpu")
    found: list[Imported] = []
    for chain in asking:
        node: ast.stmt = chain
        while isinstance(node, ast.If):
            taken = evaluator.decided(node.test)
            if taken is None:
                break
            if taken:
                found.extend(imports[id(s)] for s in always_run(node.body) if id(s) in imports)
                break
            if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                node = node.orelse[0]
                continue
            found.extend(imports[id(s)] for s in always_run(node.orelse) if id(s) in imports)
            break
    return tuple(found)


def _dynamic_imports(tree: ast.Module) -> Iterator[tuple[int, Imported]]:
    """``importlib.import_module(name)`` and ``__import__(name)`` where ``name`` is known: a string, or a parsed
    option with a string default (Pointnet2's ``import_module(args.net)``, ``--net`` defaulting to
    ``"pointnet2_msg"``): read as ``import name`` where the call is; by the call's ``id``."""
    from torchport.codemods.analysis.defaults import option_defaults  # only for a module that imports by name

    defaults = dict(option_defaults(tree))
    parameters: dict[str, object] = {}  # a parameter's string default (face_alignment's `face_detector='sfd'`)
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for arg, default in zip(function.args.args[::-1], function.args.defaults[::-1], strict=False):
            value = default.value if isinstance(default, ast.Constant) else None
            parameters[arg.arg] = value if parameters.get(arg.arg, value) == value else None
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name not in ("import_module", "__import__") or not call.args:
            continue
        given = call.args[0]
        module = given.value if isinstance(given, ast.Constant) else defaults.get(given.attr) if isinstance(
            given, ast.Attribute) else None
        if isinstance(given, ast.BinOp) and isinstance(given.op, ast.Add) and isinstance(given.left, ast.Constant) \
                and isinstance(given.right, ast.Name) and isinstance(given.left.value, str) \
                and isinstance(tail := parameters.get(given.right.id), str):
            module = given.left.value + tail  # `__import__('face_detection.detection.' + face_detector)`
        if isinstance(module, str) and module and not module.startswith(".") and all(
                part.isidentifier() for part in module.split(".")):
            yield id(call), Imported(False, None, 0, ((module, None),), call.lineno)


def _arms(statement: ast.If, imports: dict[int, Imported]) -> tuple[tuple[Imported, ...], ...]:
    """The imports each arm of an ``if``/``elif``/``else`` chain always runs; empty unless every arm imports."""
    arms: list[tuple[Imported, ...]] = []
    node: ast.stmt = statement
    while True:
        assert isinstance(node, ast.If)
        arms.append(tuple(imports[id(s)] for s in always_run(node.body) if id(s) in imports))
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        arms.append(tuple(imports[id(s)] for s in always_run(node.orelse) if id(s) in imports))
        break
    return tuple(arms) if all(arms) else ()


def works_at_top(tree: ast.Module | ast.With) -> bool:
    """Whether the module does its work when run (a call, a loop or a move of data at the top level, as a script
    without a ``__main__`` block does), not only define things. A ``with`` block works (``with torch.no_grad():``
    around a forward pass), but one that only opens files works where its body does: ``with open("config.yaml") as
    f: config = yaml.load(f)`` only reads what the module's definitions use."""
    def opens(block: ast.With) -> bool:
        return all(isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Name)
                   and i.context_expr.func.id == "open" for i in block.items)

    return any(isinstance(s, (ast.For, ast.While)) or (isinstance(s, ast.With) and (not opens(s) or works_at_top(s)))
               or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and not _reports(s.value))
               or (isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None and _places(s.value))
               for s in tree.body)


def _places(value: ast.expr) -> bool:
    """``radon = Radon(8).cuda()``, ``x = torch.ones(2).to(device)``: an assignment that moves data is work."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "to")
               for n in ast.walk(value))


def _reports(call: ast.Call) -> bool:
    """``warnings.warn(...)``, ``logging.basicConfig(...)``: a module that only says something
    when imported (a deprecated re-export) does no work."""
    head = call.func
    while isinstance(head, ast.Attribute):
        head = head.value
    return isinstance(head, ast.Name) and head.id in ("warnings", "logging")


def lacking(text: str, certain: bool = False) -> tuple[int, str] | None:
    """The first of `lacking_all`, or None."""
    found = lacking_all(text, certain)
    return found[0] if found else None


def lacking_all(text: str, certain: bool = False) -> tuple[tuple[int, str], ...]:
    """`torchport.codemods.analysis.lacks.blockers` of a module's ``text``, read once per text."""
    # parsed there only where a pattern asks
    return remembered(_LACKING, (text, certain), lambda: tuple(blockers(text, _TREES.get(text), certain)))


@dataclass(frozen=True)
class _Names:
    """What a module names: ``spans`` (first line, last line, name) of its top-level functions and classes, and of
    its aliases (``X = torch.DoubleTensor``), ``inside`` the identifiers each of them uses, ``top`` those its other
    statements use (imports use none)."""

    spans: tuple[tuple[int, int, str], ...]
    inside: dict[str, frozenset[str]]
    top: frozenset[str]
    on_import: frozenset[str] = frozenset()  # ``top`` bar its `__main__` blocks: what runs when it is imported


def _names(text: str) -> _Names:
    def read() -> _Names:
        tree = parse(text)
        spans: list[tuple[int, int, str]] = []
        inside: dict[str, frozenset[str]] = {}
        top: set[str] = set()
        on_import: set[str] = set()
        for statement in tree.body if tree is not None else ():
            names = frozenset(used(statement))
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                spans.append((statement.lineno, statement.end_lineno or statement.lineno, statement.name))
                inside[statement.name] = names
                for registry in _registries(statement):  # looked up by name: runs wherever its registry is used
                    inside[registry] = inside.get(registry, frozenset()) | {statement.name}
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(
                    bound := statement.targets[0], ast.Name) and isinstance(statement.value, (ast.Attribute, ast.Name)):
                # `DoubleTensor = torch.DoubleTensor` (AgentFormer's utils/torch.py): an alias is what reads it
                spans.append((statement.lineno, statement.end_lineno or statement.lineno, bound.id))
                inside[bound.id] = inside.get(bound.id, frozenset()) | names
            elif isinstance(statement, ast.ImportFrom):  # `import get_pose_net as get_dla_dcn`: the alias runs it
                for alias in statement.names:
                    if alias.asname and alias.asname != alias.name:
                        inside[alias.asname] = inside.get(alias.asname, frozenset()) | {alias.name}
            elif not isinstance(statement, ast.Import):
                top |= names
                if not (isinstance(statement, ast.If) and is_main(statement.test)):
                    on_import |= names
        return _Names(tuple(spans), inside, frozenset(top), frozenset(on_import))

    return remembered(_NAMES, text, read)


def _registries(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Iterator[str]:
    """The registries ``definition`` registers itself in: ``ARCH_REGISTRY`` for ``@ARCH_REGISTRY.register()``,
    ``MODELS`` for ``@MODELS.register_module``."""
    for decorator in definition.decorator_list:
        method = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(method, ast.Attribute) and method.attr.startswith("register") and isinstance(
                method.value, ast.Name):
            yield method.value.id


def _joined_here(text: str) -> list[tuple[str, ...]]:
    """The folders relative to its own that a module's ``text`` joins paths to or puts on ``sys.path``: ``('lib',)``
    for ``osp.join(this_dir, 'lib')`` where ``this_dir = osp.dirname(__file__)``, ``('..', 'src')`` for slayer's
    ``sys.path.append(CURRENT_TEST_DIR + "/../src")``, ``('..',)`` for ``sys.path.append("..")`` (a script runs from
    its folder) or ``os.path.dirname(os.path.dirname(__file__))``."""
    tree = parse(text)
    if tree is None:
        return []
    assigned = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    files = {name for name, value in assigned.items() if _is_file(value)}  # `FILE = Path(__file__).resolve()`
    here = _file_names(tree) - files
    here |= {name for name, value in assigned.items() if _folder_parts(value, here, files) == ()}  # `os.getcwd()`
    found: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if getattr(node.func, "attr", None) == "join" and len(node.args) > 1:
            base, parts = node.args[0], [a.value for a in node.args[1:]
                                         if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(parts) == len(node.args) - 1 and (
                    base.id in here if isinstance(base, ast.Name) else _names_file(base)):
                found.append(tuple(parts))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "insert") and \
                _is_sys_path(node.func.value) and len(node.args) == (2 if node.func.attr == "insert" else 1):
            given = node.args[-1]
            if isinstance(given, ast.Name) and given.id in assigned and given.id not in here:
                given = assigned[given.id]
            if (folder := _folder_parts(given, here, files)) is not None:
                found.append(folder)
    return list(dict.fromkeys(found))


def _is_sys_path(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
        and node.value.id == "sys"


def _folder_parts(node: ast.expr, here: set[str],
                  files: frozenset[str] | set[str] = frozenset()) -> tuple[str, ...] | None:
    """The folder path expression ``node`` names, relative to its module's folder (``..`` steps up), or None: the
    module's folder is a name of ``here``, ``os.path.dirname(__file__)`` (or of a name of ``files``, bound to the
    file), ``Path(__file__).parent`` or the current folder (``os.getcwd()``, a relative string: a script runs from
    its folder); ``os.path.join``, ``+ "/x"``, ``/ "x"``, ``dirname``, ``.parent``, ``abspath``/``realpath``/
    ``normpath``/``str``/``resolve`` compose it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and not node.value.startswith(("/", "~")):
        return _split(node.value)
    if isinstance(node, ast.Name):
        return () if node.id in here else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        if _is_file(node.value, files):
            return ()
        inner = _folder_parts(node.value, here, files)
        return None if inner is None else (*inner, "..")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)) and isinstance(
            node.right, ast.Constant) and isinstance(node.right.value, str):
        left = _folder_parts(node.left, here, files)
        return None if left is None else (*left, *_split(node.right.value))
    if not isinstance(node, ast.Call):
        return None
    name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(
        node.func, ast.Name) else ""
    if name == "getcwd" and not node.args:
        return ()
    if name == "resolve" and isinstance(node.func, ast.Attribute) and not node.args:
        return _folder_parts(node.func.value, here, files)
    if not node.args:
        return None
    first = node.args[0]
    if name == "dirname":
        if _is_file(first, files):
            return ()
        inner = _folder_parts(first, here, files)
        return None if inner is None else (*inner, "..")
    if name in ("abspath", "realpath", "normpath", "str", "Path") and len(node.args) == 1:
        return _folder_parts(first, here, files)
    if name == "join":
        base = _folder_parts(first, here, files)
        rest = [a.value for a in node.args[1:] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        return None if base is None or len(rest) != len(node.args) - 1 else (
            *base, *(part for r in rest for part in _split(r)))
    return None


def _is_file(node: ast.expr, files: frozenset[str] | set[str] = frozenset()) -> bool:
    """``__file__``, or its absolute or real path, or ``Path(__file__)``, or a name of ``files``: the module's file,
    not a folder."""
    while isinstance(node, ast.Call) and len(node.args) == 1 and (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")) in (
            "abspath", "realpath", "Path", "resolve"):
        node = node.args[0]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "resolve":
        return _is_file(node.func.value, files)
    return isinstance(node, ast.Name) and (node.id == "__file__" or node.id in files)


def _split(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split("/") if part and part != ".")


def _names_file(node: ast.expr) -> bool:
    """Whether ``node`` reads ``__file__``."""
    return any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node))


def _file_names(tree: ast.Module) -> set[str]:
    """The names the module binds to a value read from ``__file__`` (``this_dir = osp.dirname(__file__)``)."""
    return {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _names_file(n.value)
            for t in n.targets if isinstance(t, ast.Name)}


def used(node: ast.AST, strings: bool = False, qualify: Collection[str] = (), prose: Collection[int] = ()
         ) -> Iterator[str]:
    """The identifiers ``node`` uses: names and attributes; with ``strings``, imported names and the words of its
    strings too (``__all__``, ``getattr(m, "Model")``), bar the strings and imported names of ``prose`` (their
    ids: docstrings, names a module imports only to use them). An
    attribute of a chain that starts at a name of ``qualify`` (a module's import aliases) comes with that name:
    ``dist.all_gather``, ``torch.all_gather`` for ``torch.distributed.all_gather``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            yield inner.id
        elif isinstance(inner, ast.Attribute):
            root = inner.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if qualify and isinstance(root, ast.Name) and root.id in qualify and inner.attr != "__dict__":
                yield f"{root.id}.{inner.attr}"
                continue
            yield inner.attr
            if inner.attr == "__dict__" and isinstance(inner.value, ast.Name):
                yield f"{inner.value.id}{_ANY}"  # `models.__dict__[args.arch]`: any name of module `models`
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.args and isinstance(
                inner.args[0], ast.Name) and (inner.func.id == "vars" or inner.func.id == "getattr" and len(
                inner.args) > 1 and not isinstance(inner.args[1], ast.Constant)):
            yield f"{inner.args[0].id}{_ANY}"  # `getattr(models, name)`, `vars(models)[name]`
        elif strings and isinstance(inner, ast.alias) and id(inner) not in prose:
            yield (inner.asname or inner.name).split(".")[0]
            yield inner.name.rsplit(".", 1)[-1]
        elif strings and isinstance(inner, ast.Constant) and isinstance(inner.value, str) and id(inner) not in prose:
            yield from words(inner.value)


_ANY = ".*"  # after a module's local name (`used`): a lookup that may reach any name the module defines


def words(text: str) -> list[str]:
    """The identifiers among the words of ``text``."""
    return [w for w in "".join(c if c.isalnum() or c == "_" else " " for c in text).split() if w.isidentifier()]


def live_names(roots: Iterable[str], bodies: Iterable[Mapping[str, frozenset[str]]]) -> set[str]:
    """``roots`` and, in turn, what the definitions of those names use (``bodies``: per module, a top-level
    function or class -> the names its body uses; a name counts for each module defining it)."""
    uses: dict[str, list[frozenset[str]]] = {}
    for body in bodies:
        for name, inside in body.items():
            uses.setdefault(name, []).append(inside)
    live = set(roots)
    todo = list(live)
    while todo:
        for inside in uses.get(todo.pop(), ()):
            for name in inside - live:
                live.add(name)
                todo.append(name)
    return live


def _package_dirs(results: Sequence[FileResult]) -> list[tuple[str, Path]]:
    """``(package, folder)`` of each ``package_dir`` entry of the run's build scripts whose folder the run holds
    (haste's build/setup.pytorch.py: ``package_dir = {'haste_pytorch': 'frameworks/pytorch'}``, read from the
    folder setup runs in: the script's own or one above it). The root package (``''``) is left to the packages."""
    found: list[tuple[str, Path]] = []
    for result in results:
        if result.path.suffix != ".py" or "package_dir" not in (result.original or ""):
            continue
        tree = parse(result.original)
        for node in ast.walk(tree) if tree is not None else ():
            value = node.value if isinstance(node, ast.keyword) and node.arg == "package_dir" else (
                node.value if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "package_dir" for t in node.targets) else None)
            if not isinstance(value, ast.Dict):
                continue
            for key, folder in zip(value.keys, value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value \
                        and isinstance(folder, ast.Constant) and isinstance(folder.value, str):
                    here = result.path.resolve().parent
                    where = next((base / folder.value for base in (here, *here.parents)
                                  if (base / folder.value).is_dir()), None)
                    if where is not None and where != here or folder.value in (".", ""):
                        found.append((key.value, (where or here).resolve()))
    return found


def _dotted(relative: Path) -> str | None:
    """The dotted name of a module at ``relative`` inside a package folder (``sub/mod.py`` -> ``sub.mod``,
    ``__init__.py`` -> ``""``), or None where a part is no identifier."""
    parts = [*relative.parts[:-1], *(() if relative.name == "__init__.py" else (relative.stem,))]
    return ".".join(parts) if all(part.isidentifier() for part in parts) else None


class Project:
    """The files of a run as modules, with the imports among them.

    Args:
        results: one per file of the run (``original`` is the source; None for files not read).

    A file's module name follows its packages: ``pkg/sub/mod.py`` is ``pkg.sub.mod`` while ``pkg/`` and
    ``pkg/sub/`` hold an ``__init__.py`` of the run; a loose script is its own top-level module.
    """

    def __init__(self, results: Sequence[FileResult]) -> None:
        self.results = tuple(results)  # a copy: the caller may sort its list (it reads only paths and sources)
        resolved = [(index, result.path.resolve()) for index, result in enumerate(results)
                    if result.original is not None]
        self._resolved = resolved
        paths = {path: index for index, path in resolved}
        self.paths = paths
        self._folders: dict[Path, Path] = {}  # a file's path -> its resolved folder
        self._found_beside: dict[tuple[Path, str, int], list[int]] = {}
        self._bases: dict[Path, list[Path]] = {}  # a folder and the folders above it
        self._module_at: dict[tuple[Path, str], int | None] = {}  # (folder, dotted name) -> the module there
        self._added: dict[Path, list[Path]] | None = None  # `_path_roots`
        self._run_folders: set[Path] | None = None  # every folder above a file of the run (`_namespace_first`)
        self._compiled: frozenset[str] | None = None
        self.compiled_uses: dict[int, list[tuple[int, str]]] = {}  # `compiled_uses`, per module
        self.named_on: dict[tuple[str, frozenset[int]], bool] = {}  # `_named_on`, per name and program
        self.dispatched: frozenset[str] | None = None  # `programs._dispatched_fields`, asked by several steps
        self._reached: dict[tuple[int, bool, bool], tuple[int, ...]] = {}  # a tuple: a third of a set
        self.package_dirs = {path.parent for path in paths if path.name == "__init__.py"}
        self.names: list[str | None] = [None] * len(results)
        self.by_name: dict[str, list[int]] = {}
        for path, index in paths.items():
            name = self._module_name(path)
            self.names[index] = name
            self.by_name.setdefault(name, []).append(index)
        for alias, folder in _package_dirs(results):  # haste's `package_dir={'haste_pytorch': 'frameworks/pytorch'}`
            for path, index in paths.items():
                if folder in path.parents and (dotted := _dotted(path.relative_to(folder))) is not None:
                    self.by_name.setdefault(".".join(filter(None, (alias, dotted))), []).append(index)
        self._edges: dict[tuple[int, bool, bool], set[int]] = {}
        self._undefined: dict[int, list[tuple[int, str, int]]] = {}  # `undefined_imports`, per file
        self._refused: dict[tuple[int, bool], tuple[int, str, str] | None] = {}  # `refused_call`, per file
        self._imported: frozenset[int] | None = None  # `imported`
        self._missing: dict[int, list[tuple[int, str]]] = {}  # `missing_imports`, per file
        self._builds_all: list[str] | None = None  # `_build_texts`
        self._builds: list[str] | None = None  # `_build_scripts`
        self.runs: dict[frozenset[int], frozenset[str]] = {}  # `program_names`, per program's modules
        self.defs_run: dict[frozenset[int], frozenset[tuple[int, str]]] = {}  # `program_defs`, likewise

    def _module_name(self, path: Path) -> str:
        parts = [] if path.name == "__init__.py" else [path.stem]
        folder = path.parent
        while folder in self.package_dirs:
            # a package folder named with dashes is imported under underscores (facenet-pytorch's root is the
            # package `facenet_pytorch`: setup.py's `package_dir={'facenet_pytorch': '.'}`)
            parts.insert(0, folder.name.replace("-", "_"))
            folder = folder.parent
        return ".".join(parts) or path.parent.name

    def imports(self, index: int, always: bool = False, off_cuda: bool = False) -> set[int]:
        """The files of the run that file ``index`` imports (statically; a registry ``__init__`` imports its folder).
        ``always``: only the imports it runs whenever it is imported (at its top level, not under ``if``/``try`` nor
        in a function): what a program cannot avoid; ``off_cuda`` (with ``always``): where CUDA is not, with the arm
        a CUDA query chooses there (`Outline.off_cuda`)."""
        key = (index, always, off_cuda)
        if key in self._edges:
            return self._edges[key]
        found: set[int] = set()
        self._edges[key] = found
        text = self.results[index].original or ""
        module = outline(text)
        found.update(self.resolved(index, (*module.always, *(module.off_cuda if off_cuda else ())) if always
                                   else module.imports))
        path = self.results[index].path
        if path.name == "__init__.py" and _DYNAMIC_IMPORT.search(text) and not always:
            folder = self._folder(path)
            for other, other_path in self._resolved:
                if other_path.parent == folder or (
                        other_path.name == "__init__.py" and other_path.parent.parent == folder):
                    found.add(other)
        found.discard(index)
        return found

    def imported(self) -> frozenset[int]:
        """The files of the run that another file of it imports (`imports`), read once."""
        if self._imported is None:
            self._imported = frozenset(other for index in range(len(self.results)) for other in self.imports(index))
        return self._imported

    def resolved(self, index: int, nodes: Iterable[Imported]) -> set[int]:
        """The files of the run that import statements ``nodes`` of file ``index`` name."""
        found: set[int] = set()
        path = self.results[index].path
        package = self.package(index)
        for node in nodes:
            if not node.is_from:
                for name, _ in node.names:
                    found.update(self._packages(self._resolve(name, path) or self._beside(path, name, 0), name))
            else:
                relative = node.module or ""
                base = absolute_module(cast(ast.ImportFrom, node), package)  # it reads .module and .level
                found.update(self._packages(self._resolve(base, path), base) or (
                    (self._packages(self._beside(path, relative, 0), relative) if not node.level
                     else self._beside(path, relative, node.level)) if relative else ()))
                for name, _ in node.names:
                    dotted = f"{relative}.{name}" if relative else name
                    found.update(self._resolve(f"{base}.{name}" if base else name, path)
                                 or self._beside(path, dotted, node.level))
        return found

    def _packages(self, files: list[int], dotted: str) -> list[int]:
        """``files``, found for the absolute module name ``dotted``, and the ``__init__.py`` of each package that
        Python imports first (``from visualDet3D.networks.utils.registry import ...`` runs
        ``visualDet3D/__init__.py`` and ``visualDet3D/networks/__init__.py``, which imports every detector); a
        namespace package on the way (no ``__init__.py``: SimLVSeg's ``simlvseg/model/utils``) runs nothing, and
        the packages above it still run theirs."""
        found = list(files)
        for index in files:
            folder = self._folder(self.results[index].path)
            if self.results[index].path.name == "__init__.py":
                folder = folder.parent
            for _ in range(dotted.count(".")):
                init = self.paths.get(folder / "__init__.py")
                if init is not None:
                    found.append(init)
                folder = folder.parent
        return found

    def import_chain(self, entry: int, target: int, script: bool = False) -> list[tuple[int, int]]:
        """How file ``entry`` always reaches file ``target``: the ``(file, line)`` of each import on the way, from
        ``entry``'s own to the one in the file that imports ``target``, or [] where none does
        (``run.py:3`` → ``models/__init__.py:1`` → ``models/net.py:9``: what a maintainer follows to the need)."""
        module = outline(self.results[entry].original)
        firsts: dict[int, int] = {}  # breadth first from entry's own imports: the shortest chain, in source order
        for node in (*module.always, *(module.main if script else ())):
            for other in self.resolved(entry, [node]):
                firsts.setdefault(other, node.line)
        came: dict[int, tuple[int, int] | None] = dict.fromkeys(firsts)
        todo = list(firsts)
        while todo and target not in came:
            step = todo.pop(0)
            step_module = outline(self.results[step].original)
            for node in step_module.always:
                for other in sorted(self.resolved(step, [node])):
                    if other not in came and other != entry:
                        came[other] = (step, node.line)
                        todo.append(other)
        if target not in came:
            return []
        chain: list[tuple[int, int]] = []
        at = target
        while (previous := came[at]) is not None:
            chain.append(previous)
            at = previous[0]
        chain.append((entry, firsts[at]))
        return chain[::-1]

    def first_imports(self, entry: int, script: bool = False) -> dict[int, int]:
        """Each file ``entry`` always imports -> the line of the first of its own imports (in source order) after
        which that file is imported: P-tuning-v2's ``dense_retriever_colbert.py`` imports ``colbert.parameters``
        first through ``colbert.evaluation.loaders``, lines before its own ``from colbert.parameters import
        DEVICE``. ``script``: its ``__main__`` block's imports too."""
        module = outline(self.results[entry].original)
        found: dict[int, int] = {}
        for node in sorted((*module.always, *(module.main if script else ())), key=lambda n: n.line):
            todo = [other for other in self.resolved(entry, [node]) if other != entry and other not in found]
            found.update(dict.fromkeys(todo, node.line))
            while todo:
                step = todo.pop()
                for inner in outline(self.results[step].original).always:
                    for other in self.resolved(step, [inner]):
                        if other != entry and other not in found:
                            found[other] = node.line
                            todo.append(other)
        return found

    def runs_line(self, index: int, lines: Iterable[int], reach: Iterable[int]) -> bool:
        """Whether a program of modules ``reach`` may run one of ``lines`` of file ``index``: one at its top level,
        or in a function or class the program runs (`program_defs`). Wav2Lip's ``perceptual_forward`` moves data
        only for the one training script that calls it."""
        text = self.results[index].original or ""
        spans = _names(text).spans
        live: frozenset[tuple[int, str]] | None = None
        tree = parse(text)
        # a method named `cuda` runs only where `.cuda()` is kept as written (on CUDA): the port calls `.to` elsewhere
        own = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
               and n.name == "cuda"] if tree is not None else []
        for line in lines:
            if any(first <= line <= last for first, last in own):
                continue
            name = next((n for first, last, n in spans if first <= line <= last), None)
            if name is None:
                return True
            if live is None:
                live = program_defs(self, reach)
            if (index, name) in live:
                return True
        return False

    def live_imports(self, modules: Iterable[int], live: frozenset[str]) -> set[int]:
        """The files that the functions and classes of ``modules`` named in ``live`` (`program_names`) always import
        when they run (Wav2Lip's ``FaceAlignment.__init__``: ``__import__('face_detection.detection.' +
        face_detector)``, ``'sfd'`` by default), with what those always import; not ``modules`` themselves."""
        given = set(modules)
        found: set[int] = set()
        todo = list(given)
        while todo:
            index = todo.pop()
            for name, nodes in outline(self.results[index].original).inside:
                if name in live:
                    for other in self.resolved(index, nodes):
                        for reached in self.reach(other, always=True) - given - found:
                            found.add(reached)
                            todo.append(reached)
        return found

    def run_as_script(self, entry: int) -> tuple[set[int], list[list[set[int]]]]:
        """What file ``entry`` cannot avoid when run as a program off CUDA: the files it always reaches there (its
        ``__main__`` block's imports too), and per ``if``/``else`` chain whose every arm imports, the files each arm
        always reaches (`Outline.arms`)."""
        module = outline(self.results[entry].original)
        always = self.reach(entry, always=True, off_cuda=True)
        for other in self.resolved(entry, module.main):
            always |= self.reach(other, always=True, off_cuda=True)
        arms = [[{n for other in self.resolved(entry, arm) for n in self.reach(other, always=True, off_cuda=True)}
                 for arm in chain]
                for chain in module.arms]
        return always, arms

    def package(self, index: int) -> str:
        """The package of file ``index``, from which its relative imports are read (``p.q`` for ``p/q/m.py`` and for
        ``p/q/__init__.py``)."""
        name = self.names[index] or ""
        return name if self.results[index].path.name == "__init__.py" else name.rpartition(".")[0]

    def undefined_imports(self, index: int) -> list[tuple[int, str, int]]:
        """``(line, name, module)`` of each ``from m import name`` that file ``index`` runs whenever it is imported,
        where ``m`` is one module of the run that neither binds ``name`` (`installed.binds`) nor holds it as a
        submodule (super-image's examples: ``from super_image.data import EvalDataset, TrainAugmentDataset``, a class
        the package does not have): an ImportError on every device. In a notebook a stale import fails one cell and
        the others still run: only a name another line reads counts there (FNO_torch's examples import ``FNO2d``,
        which ``FNO.py`` no longer defines, and build their model of it)."""
        if index in self._undefined:
            return self._undefined[index]
        path = self.results[index].path
        tree = parse(self.results[index].original)
        if path.suffix != ".py" and tree is None:
            return []
        handled = {n.lineno for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) for n in ast.walk(h)
                   if isinstance(n, ast.ImportFrom)} if tree is not None else set()  # a fallback: may never run
        package = self.package(index)
        read: frozenset[str] | None = None  # a notebook's names some line reads: read once, where one is needed
        found: list[tuple[int, str, int]] = []
        self._undefined[index] = found
        for node in outline(self.results[index].original).always:
            if not node.is_from or node.line in handled:
                continue
            base = absolute_module(cast(ast.ImportFrom, node), package)  # it reads .module and .level
            files = self._resolve(base, path) or (self._beside(path, node.module, node.level) if node.module else [])
            if node.level and not node.module:  # `from . import models`: the package's own `__init__.py`, not a
                # `models.py` beside it that a package of that name resolves to (consistency_vqa's core/models)
                folder = self.results[index].path.resolve().parents[node.level - 1]
                files = [init] if (init := self.paths.get(folder / "__init__.py")) is not None else []
            top = base.split(".")[0]
            if not node.level and top in sys.stdlib_module_names and not any(
                    self.results[f].path in (path.parent / f"{top}.py", path.parent / top / "__init__.py")
                    for f in files):  # only a file of that name beside a script comes before the standard library
                continue  # pathpyG's `from io import BytesIO` in its own `io` package: the standard library's
            text = self.results[files[0]].original or "" if len(files) == 1 else ""
            if len(files) != 1 or (bound := remembered(_BINDS, text, partial(_bound, text))) is None:
                continue
            target = self.results[files[0]].path
            for name, _ in node.names:
                if name == "*" or name in bound or name.startswith("__") or target.name == "__init__.py" and (
                        any(target.parent.glob(f"{name}.*")) or (target.parent / name).is_dir()
                        or any(re.search(rf"\b{re.escape(name)}\b", script) for script in self._build_texts())):
                    continue  # a submodule, or an extension built in place (a setup.py's or CMake's too)
                if path.suffix != ".py" and tree is not None:
                    if read is None:
                        read = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                                         and isinstance(n.ctx, ast.Load))
                    if name not in read:
                        continue  # the import's cell fails alone
                found.append((node.line, name, files[0]))
        return found

    def missing_imports(self, index: int) -> list[tuple[int, str]]:
        """``(line, dotted)`` of each import file ``index`` runs whenever it is imported, outside any ``try``, of a
        module below a regular package of the run that is not on disk: no file, folder or built extension of that
        name, and no build script that names it (a generated ``version.py``): an ImportError on every device
        (pytorch-models' ``train_detection.py`` imports ``pytorch_models_imp.detr``, which the repository lacks).
        Relative imports are read from the importer's package; an absolute one only from a script outside any
        package, below a package of the run beside it (where Python looks first), whose name no installed
        distribution has."""
        if index in self._missing:
            return self._missing[index]
        found: list[tuple[int, str]] = []
        self._missing[index] = found
        path = self.results[index].path
        tree = parse(self.results[index].original)
        if path.suffix != ".py" or tree is None:
            return found  # a notebook's stale cell fails alone
        handled = {n.lineno for t in ast.walk(tree) if isinstance(t, ast.Try) for s in t.body for n in ast.walk(s)
                   if isinstance(n, ast.Import | ast.ImportFrom)}
        shape = outline(self.results[index].original)
        # a package beside a script, as Python finds it from the script's folder: not one the resolver finds
        # elsewhere (CompressGNN's `import dgl.sparse` is the pip package, not its `model/dgl/`), nor one beside a
        # module a script elsewhere imports (3D-EMGP's `data/qm9/dataset.py` imports `data.qm9.data.utils` from the
        # root its scripts put on `sys.path`)
        loose_script = (shape.script or shape.works_at_top) and not self.in_package(index)
        for node in shape.always:
            if node.line in handled:
                continue
            if node.is_from and node.level:
                if not node.module or not self.in_package(index):
                    continue
                folder = self._folder(path)
                start = folder.parents[node.level - 2] if node.level > 1 else folder
                dotted = "." * node.level + node.module
                parts = node.module.split(".")
            else:
                for dotted in ([node.module] if node.is_from and node.module else
                               [name for name, _ in node.names] if not node.is_from else []) if loose_script else []:
                    top, _, rest = dotted.partition(".")
                    package = self._folder(path) / top / "__init__.py"
                    if rest and package in self.paths and self._absent(package.parent, rest.split(".")) \
                            and not installed.importable(top):
                        found.append((node.line, dotted))
                        break
                continue
            if self._absent(start, parts):
                found.append((node.line, dotted))
        return found

    def _absent(self, start: Path, parts: Sequence[str]) -> bool:
        """Whether the module ``parts`` below folder ``start`` is absent: a folder lacks the next part as a folder
        and as any file of that stem (``.py``, a built ``.so``, a ``.pyx``), and no build script names it."""
        folder = start
        for part in parts:
            if (folder / part).is_dir():
                folder = folder / part
                continue
            if not folder.is_dir() or any(folder.glob(f"{part}.*")) or any(
                    re.search(rf"\b{re.escape(part)}\b", script) for script in self._build_texts()):
                return False
            return True
        return False

    def _build_texts(self) -> list[str]:
        """What may build or generate a module: the build scripts of the run (`_build_scripts`), every
        ``setup.py`` of it (ffcv's ``Extension('ffcv._libffcv', ...)``, a plain C extension), and the
        ``pyproject.toml``, ``setup.cfg``, ``CMakeLists.txt`` and ``meson.build`` beside them or in the folders of
        the run."""
        if self._builds_all is None:
            texts = [*self._build_scripts(), *(r.original for r in self.results
                                               if r.original and r.path.name == "setup.py")]
            folders = {path.parent for path in self.paths if path.name in ("setup.py", "__init__.py")}
            for folder in sorted(folders | {parent for f in folders for parent in f.parents[:2]}):
                for name in ("pyproject.toml", "setup.cfg", "CMakeLists.txt", "meson.build"):
                    try:
                        texts.append((folder / name).read_text(encoding="utf-8", errors="replace"))
                    except OSError:
                        continue
            self._builds_all = texts
        return self._builds_all

    def unbound_read(self, index: int, script: bool) -> tuple[int, str] | None:
        """``(line, name)`` of the first name file ``index`` reads on every run, before its work, that nothing in
        it binds (`unbound.unbound_read`; ``script``: run as the program, its ``__main__`` block too): a NameError
        on every device. None for a notebook (a stale cell fails alone), a package's ``__init__.py`` or where nothing
        settles it."""
        from torchport.model.unbound import unbound_read  # here: a warm run reads the decisions

        text = self.results[index].original or ""
        if self.results[index].path.suffix != ".py" or self.results[index].path.name == "__init__.py":
            return None  # (a package binds the submodules its imports load: `from .models import build` binds models)

        def read() -> tuple[int, str] | None:
            tree = parse(text)
            return unbound_read(tree, text, script) if tree is not None else None

        return remembered(_UNBOUND, (text, script), read)

    def refused_call(self, index: int, script: bool) -> tuple[int, str, str] | None:
        """``(line, callee, why)`` of the first call file ``index`` makes on every run, before its work
        (`unbound.first_calls`), of a function or class of the project whose signature refuses its arguments
        (`arity.refusal`: ``Denoiser(2, 4096, 48, ...)`` where ``Denoiser.__init__`` takes three): a TypeError
        on every device. In a notebook a stale cell fails alone: only a call whose result a later line reads
        counts there (MusicDiffusion's ``d = Denoiser(...)``, then ``d.cuda()``). A package's ``__init__.py`` does
        not count. None where no call settles it."""
        if (index, script) not in self._refused:
            self._refused[index, script] = self._refused_call(index, script)
        return self._refused[index, script]

    def _refused_call(self, index: int, script: bool) -> tuple[int, str, str] | None:
        """`refused_call`, read once per file of the project."""
        from torchport.model import arity  # here: a warm run reads the decisions
        from torchport.model.unbound import first_calls

        result = self.results[index]
        text = result.original or ""
        if result.path.name == "__init__.py" or "(" not in text:
            return None

        def calls() -> list[ast.Call]:
            tree = parse(text)
            return first_calls(tree, text, script) if tree is not None else []

        found = remembered(_FIRST_CALLS, (text, script), calls)
        if not found:
            return None
        tree = parse(text)
        counts = remembered(_BINDING_COUNTS, text, lambda: _binding_counts(tree)) if tree is not None else {}
        signatures: dict[str, inspect.Signature | None] = {}  # per callee: a module calls one many times
        for call in found:
            callee = ast.unparse(call.func)
            head = callee.split(".", 1)[0]
            if counts.get(head) != 1:  # bound more than once (or never): which definition it names is not settled
                continue
            if callee not in signatures:
                signatures[callee] = self._signature(index, call.func)
            declared = signatures[callee]
            if declared is not None and (why := arity.refusal(declared, call)) is not None and (
                    result.path.suffix == ".py" or _read_later(tree, call)):
                return call.lineno, callee, why
        return None

    def _signature(self, index: int, func: ast.expr) -> inspect.Signature | None:
        """The signature of what ``func`` (a callee in file ``index``, a name it binds once) calls, where it is an
        undecorated top-level function or class of the project (a class by its ``__init__``, its own or a project
        base's); None where anything else may decide it (a decorator, a metaclass, ``__new__``, a base outside
        the project)."""
        from torchport.model import arity  # here: a warm run reads the decisions

        found = self._defined(index, func)
        for _ in range(4):  # a class's bases, up to a few
            if found is None:
                return None
            module, definition = found
            if definition.decorator_list:
                return None
            if isinstance(definition, ast.FunctionDef):
                return arity.signature(definition)
            if definition.keywords or any(isinstance(s, (ast.Assign, ast.AnnAssign)) and any(
                    isinstance(t, ast.Name) and t.id in ("__init__", "__new__") for t in ast.walk(s))
                    or isinstance(s, ast.FunctionDef) and s.name == "__new__" for s in definition.body):
                return None
            init = next((s for s in definition.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
            if init is not None:
                return None if init.decorator_list else arity.signature(init, method=True)
            bases = [b for b in definition.bases if not (isinstance(b, ast.Name) and b.id == "object")]
            if not bases:
                return inspect.Signature()  # object's: no arguments
            found = self._defined(module, bases[0]) if len(bases) == 1 else None
        return None

    def _defined(self, index: int, func: ast.expr) -> tuple[int, ast.ClassDef | ast.FunctionDef] | None:
        """The file and top-level class or function of the project that ``func`` names in file ``index``: one it
        imports (`_called_definition`) or its own."""
        found = _called_definition(self, index, func)
        if found is None and isinstance(func, ast.Name):
            own = top_definition(self, index, func.id)
            found = (index, own) if isinstance(own, (ast.ClassDef, ast.FunctionDef)) else None
        return found

    def _build_scripts(self) -> list[str]:
        """The texts of the run's files that build extensions (`_BUILDS`)."""
        if self._builds is None:
            self._builds = [r.original for r in self.results if r.original and _BUILDS.search(r.original)]
        return self._builds

    def in_package(self, index: int) -> bool:
        """Whether file ``index`` is a module of a package of the run (its folder holds an ``__init__.py``)."""
        return self._folder(self.results[index].path) in self.package_dirs

    def compiled(self) -> frozenset[str]:
        """The full names of the compiled extensions the run's build scripts make with C++ kernels
        (`analysis.requirements.compiled_extensions`; ``pkg.*`` where a name is computed), read once per text; a
        plain name also in the package of its build script, where ``build_ext --inplace`` puts it."""
        if self._compiled is None:
            from torchport.codemods.analysis.requirements import compiled_extensions, sources_need_cuda

            def built(text: str, cuda_sources: bool) -> frozenset[str]:
                tree = parse(text)
                return compiled_extensions(tree, cuda_sources) if tree is not None else frozenset()

            names: set[str] = set()
            for index, r in enumerate(self.results):
                if r.original and _BUILDS.search(r.original):
                    package = (self.names[index] or "").rpartition(".")[0]
                    cuda = sources_need_cuda(r.path.parent)
                    for name in remembered(_COMPILED, (r.original, cuda), partial(built, r.original, cuda)):
                        names.add(name)  # built in place beside its script too (graph-rcnn's rcnn/setup.py `_C`)
                        names.update([f"{package}.{name}"] if package and "." not in name else [])
            self._compiled = frozenset(names)
        return self._compiled

    def origin(self, index: int | None, name: str, defines: Callable[[int, str], bool],
               hops: int) -> tuple[int, str] | None:
        """The module, and the name there, that defines ``name`` as module ``index`` binds it (``defines(module,
        name)`` says whether a module does), through its packages' re-exports (an ``__init__``'s ``from .models
        import make``), looking at ``hops`` modules at most; None where none of them does."""
        for _ in range(hops):
            if index is None:
                return None
            if defines(index, name):
                return index, name
            index, name = next(((target, bound) for local, target, bound in self.bindings(index)
                                 if local == name and bound is not None), (None, name))
        return None

    def bindings(self, index: int) -> list[tuple[str, int, str | None]]:
        """What file ``index`` binds from the files of the run: ``(local name, file, name in it)``, e.g.
        ``("RunIf", 3, "RunIf")`` for ``from helpers import RunIf`` or ``("h", 3, None)`` for ``import helpers as h``
        (the module itself). Read statically, as `imports`."""
        module = outline(self.results[index].original)
        if not module.parses:
            return []
        path = self.results[index].path
        package = self.package(index)
        found: list[tuple[str, int, str | None]] = []
        for node in module.imports:
            if not node.is_from:
                for name, asname in node.names:
                    for target in self._resolve(name, path) or self._beside(path, name, 0):
                        found.append((asname or name, target, None))
            else:
                relative = node.module or ""
                base = absolute_module(cast(ast.ImportFrom, node), package)
                targets = self._resolve(base, path) or (self._beside(path, relative, node.level) if relative else [])
                for name, asname in node.names:
                    local = asname or name
                    dotted = f"{relative}.{name}" if relative else name
                    modules = self._resolve(f"{base}.{name}" if base else name, path) \
                        or self._beside(path, dotted, node.level)
                    found.extend((local, target, None) for target in modules)  # a module of a package
                    found.extend((local, target, name) for target in targets)
        return found

    def _resolve(self, dotted: str, importer: Path) -> list[int]:
        """The files named ``dotted``; for a name with no package (``import utils``), the one in the importer's own
        folder comes first, as Python finds it from a script run there (every loose ``train.py`` is a module
        ``train``: mnist_hogwild's ``from train import train`` is its sibling's); of several files with one
        dotted name, the one found from the importer's folder or a folder above it."""
        found = self.by_name.get(dotted, [])
        if "." not in dotted:
            sibling = self._module_in(self._folder(importer), dotted)
            if sibling is not None:
                return [sibling]
        if found and self._namespace_first(self._folder(importer), dotted):
            return []
        if len(found) > 1:  # RWKV-LM's `from src.model import GPT` in each RWKV-v*/: the one Python finds from there
            return self._beside(importer, dotted, 0) or found
        return found

    def _namespace_first(self, folder: Path, dotted: str) -> bool:
        """Whether, looking up from ``folder``, a folder of the run named ``dotted`` with no ``__init__.py`` (a
        namespace package) comes before any module of that name: EasyOCR's ``trainer/craft/utils/util.py`` runs
        from ``trainer/craft/`` and its ``from utils import craft_utils`` names the folder beside it, not
        ``trainer/utils.py`` above."""
        if self._run_folders is None:
            self._run_folders = {parent for path in self.paths for parent in path.parents}
        for base in (folder, *folder.parents):
            if base not in self._run_folders:
                return False
            if self._module_in(base, dotted) is not None:
                return False
            if base.joinpath(*dotted.split(".")) in self._run_folders:
                return True
        return False

    def _beside(self, importer: Path, dotted: str, level: int) -> list[int]:
        """A module the package names do not give, found as Python would from where it runs: ``dotted`` as a path
        from the importer's folder (``level`` folders up for a relative import), else from each folder above it
        (a script's own folder and the project root are on ``sys.path``; folders without ``__init__.py`` are
        namespace packages)."""
        folder = self._folder(importer)
        key = (folder, dotted, level)
        if key not in self._found_beside:  # many modules of one folder import the same names
            self._found_beside[key] = self._look_beside(folder, dotted, level)
        return self._found_beside[key]

    def _folder(self, path: Path) -> Path:
        if path not in self._folders:
            self._folders[path] = path.resolve().parent
        return self._folders[path]

    def _look_beside(self, folder: Path, dotted: str, level: int) -> list[int]:
        if level:
            bases = [folder.parents[level - 2] if level > 1 else folder]
        else:  # the folders above are shared by every module below them: each is asked once per name
            if folder not in self._bases:
                above = [folder, *folder.parents]
                added = self._path_roots()
                self._bases[folder] = [*above, *(root for base in above for root in added.get(base, ()))]
            bases = self._bases[folder]
        for base in bases:
            key = (base, dotted)
            if key not in self._module_at:
                self._module_at[key] = self._module_in(base, dotted)
            found = self._module_at[key]
            if found is not None:
                return [found]
            if not level and self._namespace_first(base, dotted):  # a namespace package there: no file
                return []
        return []

    def _path_roots(self) -> dict[Path, list[Path]]:
        """Folders a module puts on ``sys.path`` relative to its own (Detectron's ``_init_paths.py``:
        ``add_path(osp.join(osp.dirname(__file__), 'lib'))``), by the folder of that module: the scripts there
        import from them. Only folders of the run count, also one that holds packages alone (FairMOT's ``src/lib``,
        with ``models/`` and ``datasets/`` below it and no module of its own)."""
        if self._added is None:
            self._added = {}
            folders = {folder for path in self.paths for folder in path.parents}
            for index, path in self._resolved:
                text = self.results[index].original or ""
                if "sys.path" not in text:
                    continue
                for parts in remembered(_JOINED, text, partial(_joined_here, text)):
                    root = path.parent.joinpath(*parts).resolve()
                    if root in folders or root in self.package_dirs:
                        self._added.setdefault(path.parent, []).append(root)
        return self._added

    def _module_in(self, base: Path, dotted: str) -> int | None:
        target = base.joinpath(*dotted.split("."))
        for candidate in (target / "__init__.py", target.with_name(target.name + ".py")):  # a package first, as Python
            if candidate in self.paths:
                return self.paths[candidate]
        return None

    def reach(self, start: int, always: bool = False, off_cuda: bool = False) -> set[int]:
        """``start`` and every file it imports, transitively (``always``: through the imports it cannot avoid;
        ``off_cuda``: where CUDA is not, `imports`); a new set: the caller may change it."""
        key = (start, always, off_cuda)
        if key not in self._reached:  # the steps and the programs ask for the same ones again
            seen = {start}
            todo = [start]
            while todo:
                for other in self.imports(todo.pop(), always, off_cuda):
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
            self._reached[key] = tuple(seen)
        return set(self._reached[key])


def compiled_uses(project: Project, index: int) -> list[tuple[int, str]]:
    """``(line, what)`` where module ``index`` imports a compiled extension the run's build scripts make with C++
    kernels (`analysis.requirements.compiled_extensions`: chamferdist's ``from chamferdist import _C``), or calls the
    custom ops such a build registers (pytorch_cluster's ``torch.ops.torch_cluster.knn``): kernels for the CPU and
    CUDA alone, so a tensor on MPS or an XPU meets none (the CPU's read its memory as the host's)."""
    if index in project.compiled_uses:
        return project.compiled_uses[index]
    built = project.compiled()
    text = project.results[index].original or ""
    if not any(name.rstrip(".*").rsplit(".", 1)[-1] in text for name in (*built, *_CPU_CUDA_LIBRARIES)):
        project.compiled_uses[index] = []
        return []
    tree = parse(text)
    package = (project.names[index] or "").rpartition(".")[0]
    if project.results[index].path.name == "__init__.py":
        package = project.names[index] or ""
    spaces = {name.split(".", 1)[0] for name in built if "." in name}
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node, package)
            names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(op := node.func, ast.Attribute) \
                and isinstance(space := op.value, ast.Attribute) and space.attr in spaces \
                and isinstance(space.value, ast.Attribute) and space.value.attr == "ops" \
                and isinstance(space.value.value, ast.Name) and space.value.value.id == "torch":
            names = [f"{space.attr}.*"]  # a kernel called on data, not `torch.ops.ns.cuda_version()`
        hit = next((n for n in names if _built(n, built) or _cpu_cuda_library(n)), None)
        if hit is None or not isinstance(node, ast.stmt | ast.expr):
            continue
        why = f"{COMPILED} (`{hit.rstrip('.*')}`: the CPU's and CUDA's alone)"
        if _built(hit, built) or not isinstance(node, ast.Import | ast.ImportFrom) or tree is None:
            found.append((node.lineno, why))
        else:  # an installed library counts where the module uses what it imported (deep_gcns' dense
            # torch_edge.py imports torch_cluster's `knn_graph` and computes its own k nearest neighbours), bar
            # its functions written in torch alone (3D-EMGP's `from torch_scatter import scatter_add`)
            base = absolute_module(node, package) if isinstance(node, ast.ImportFrom) else ""
            bound = {(a.asname or a.name).split(".", 1)[0]: f"{base}.{a.name}" if base else a.name
                     for a in node.names}
            found.extend((use.lineno, why) for use in _library_uses(tree, bound))
    project.compiled_uses[index] = sorted(set(found))
    return project.compiled_uses[index]


def own_lack(project: Project, index: int) -> tuple[int, str] | None:
    """The first line of entry point ``index`` using what MPS lacks, its own compiled libraries' kernels included
    (`compiled_uses`): an entry point runs all of its own code."""
    found = _lacks(project, index)
    return _first(found)


def _first(found: Sequence[tuple[int, str]]) -> tuple[int, str] | None:
    """The first of ``found`` that keeps the CPU or CUDA (it keeps an Intel GPU off too: tapqir's CPU default type,
    beside its float64), else the first; None for none."""
    return next((hit for hit in found if keeps_cuda_or_cpu(hit[1])), found[0]) if found else None


def _lacks(project: Project, index: int) -> tuple[tuple[int, str], ...]:
    """Every ``(line, what)`` of module ``index`` using what MPS lacks (`lacking_all`) or a compiled library's
    kernels (`compiled_uses`), in line order; not a C++ extension whose sources call ATen's operators alone
    (`_generic_extension`)."""
    result = project.results[index]
    found = lacking_all(result.original or "")
    if any(what == CPU_EXTENSION for _, what in found):
        found = tuple(hit for hit in found if hit[1] != CPU_EXTENSION or not _generic_extension(result, hit[0]))
    if any(what == DATA_PARALLEL_PLACES for _, what in found):
        found = tuple(hit for hit in found if hit[1] != DATA_PARALLEL_PLACES or not _places_itself(project, index,
                                                                                                  hit[0]))
    if any(what == DATA_PARALLEL_INPUTS for _, what in found) and (tree := parse(result.original)) is not None \
            and data_parallel_fed(tree, partial(_callee_feeds, project, index)):
        found = tuple(hit for hit in found if hit[1] != DATA_PARALLEL_INPUTS)
    return tuple(sorted({*found, *compiled_uses(project, index)}))


def _definition_called(project: Project, index: int, func: ast.expr) -> ast.ClassDef | ast.FunctionDef | None:
    """The top-level class or function of the project that ``func`` (the callee of a call in file ``index``: ``Net``
    or ``make`` bound from a module, ``models.make`` of a module bound) names, through a package's re-exports
    (``from .models import make``); None where the project defines none."""
    found = _called_definition(project, index, func)
    return found[1] if found is not None else None


def _called_definition(project: Project, index: int,
                       func: ast.expr) -> tuple[int, ast.ClassDef | ast.FunctionDef] | None:
    """`_definition_called`, with the file that defines it."""
    if isinstance(func, ast.Name):
        name, attr = func.id, None
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        name, attr = func.value.id, func.attr
    else:
        return None

    for local, other, bound in project.bindings(index):
        if local != name or (bound is None) != (attr is not None):
            continue
        found = project.origin(other, attr or bound or "",
                               lambda module, wanted: top_definition(project, module, wanted) is not None, hops=3)
        made = top_definition(project, *found) if found is not None else None
        return (found[0], made) if found is not None and isinstance(made, (ast.ClassDef, ast.FunctionDef)) else None
    return None


def _read_later(tree: ast.Module | None, call: ast.Call) -> bool:
    """Whether ``call`` is the value of an assignment in ``tree`` whose names a later line reads."""
    made = next((n for n in ast.walk(tree) if isinstance(n, ast.Assign) and (n.value.lineno, n.value.col_offset) == (
        call.lineno, call.col_offset)), None) if tree is not None else None
    names = {t.id for t in made.targets if isinstance(t, ast.Name)} if made is not None else set()
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names and n.lineno > call.lineno
               for n in ast.walk(tree)) if names and tree is not None else False


def _binding_counts(tree: ast.Module) -> dict[str, int]:
    """How many statements or parameters of ``tree``, in any scope, bind each name (a ``global`` or ``nonlocal``
    counts twice: the name is rebound from elsewhere)."""
    counts: dict[str, int] = {}

    def bound(name: str, times: int = 1) -> None:
        counts[name] = counts.get(name, 0) + times

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound(node.name)
        elif isinstance(node, ast.arg):
            bound(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound((alias.asname or alias.name).split(".", 1)[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bound(name, 2)
    return counts


def top_definition(project: Project, module: int, name: str,
                   kinds: tuple[type[ast.stmt], ...] = (ast.ClassDef, ast.FunctionDef)) -> ast.stmt | None:
    """The top-level class or function ``name`` (one of ``kinds``) of file ``module`` of ``project``, read from its
    parse; None where it defines none there (or does not parse)."""
    tree = parse(project.results[module].original)
    return next((s for s in tree.body if isinstance(s, kinds) and getattr(s, "name", None) == name),
                None) if tree is not None else None


def _callee_feeds(project: Project, index: int, call: ast.Call, at: int | str) -> bool:
    """Whether the function of another module of the project that ``call`` (in file ``index``) calls, handed a
    ``DataParallel`` wrapper as argument ``at`` (a position or a keyword), calls it only with inputs it moved
    (`lacks.feeds_moved`): Dacon_LGAI's ``validate(val_loader, Gen, ...)`` in ``run/test.py`` moves ``img`` with
    ``.cuda()`` before ``model(img)``. False where the function is not found or never calls it (it may hand it on)."""
    callee = _definition_called(project, index, call.func)
    if not isinstance(callee, ast.FunctionDef):
        return False
    positional = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
    named = {*positional, *(a.arg for a in callee.args.kwonlyargs)}
    param = positional[at] if isinstance(at, int) and at < len(positional) else at if at in named else None
    return isinstance(param, str) and feeds_moved(callee, {param}) is True


def _places_itself(project: Project, index: int, line: int) -> bool:
    """Whether the module that the ``DataParallel`` wrapper at ``line`` of file ``index`` wraps is made by a class
    of the project that moves its own parts (generative-inpainting's ``Trainer``: ``self.netG.to(...)`` in its
    ``__init__``), or by a function of the project that moves what it gives back (few-shot-meta-baseline's
    ``models.make``: ``model.cuda()``, ``return model``): the wrapper is then not what places it."""
    tree = parse(project.results[index].original)
    if tree is None:
        return False
    wrap = next((n for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno == line
                 and isinstance(n.value, ast.Call) and n.value.args), None)
    if wrap is None or not isinstance(wrapped := wrap.value.args[0], ast.Name):  # type: ignore[attr-defined]
        return False
    made = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno < line
            and any(isinstance(t, ast.Name) and t.id == wrapped.id for t in n.targets)
            and isinstance(n.value, ast.Call) and (isinstance(n.value.func, ast.Name) or isinstance(
                n.value.func, ast.Attribute) and isinstance(n.value.func.value, ast.Name))]
    if not made:
        return False
    made_by = _definition_called(project, index, made[-1].func)
    if isinstance(made_by, ast.FunctionDef):  # a maker that moves what it gives back
        given = {r.value.id for r in ast.walk(made_by)
                 if isinstance(r, ast.Return) and isinstance(r.value, ast.Name)}
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")
                   and ast.unparse(n.func.value) in given for n in ast.walk(made_by))
    return made_by is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")
        and ast.unparse(n.func.value).split(".")[0] == "self" for n in ast.walk(made_by))


_RAW_KERNEL = torch_facts.text("raw_kernel")


def _generic_extension(result: FileResult, line: int) -> bool:
    """Whether the C++ extension module ``result`` builds at ``line`` (``load(name, sources=[...])``) has every
    source beside the module, and none reads a tensor's memory itself (`torch_facts` role ``raw_kernel``):
    torch-householder's householder.cpp calls ``at::bmm_out`` and ``torch::empty_like`` alone, operators that
    dispatch on the device of their tensors, MPS's and XPU's too."""
    tree = parse(result.original)
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line), None) if tree else None
    names = [n.value for n in ast.walk(call) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.endswith((".cpp", ".cc", ".cxx"))] if call is not None else []
    folder = result.path.parent
    texts = []
    for name in names:
        source = folder / name if (folder / name).is_file() else folder / Path(name).name
        try:
            texts.append(source.read_text(errors="replace"))
        except OSError:
            return False
    return bool(texts) and not any(_RAW_KERNEL.search(text) for text in texts)


def _built(module: str, built: frozenset[str]) -> bool:
    """Whether ``module`` is one of the extensions ``built``: by its full name, or ending in a qualified one (graph-rcnn
    imports ``lib.scene_parser.rcnn._C``; ``lib`` is no package, so the run names the module ``scene_parser.rcnn``)."""
    return module in built or any(module.endswith(f".{name}") for name in built if "." in name)


_PLAIN_FUNCTIONS = frozenset(torch_facts.words("plain_torch_function"))
_PLAIN_REDUCTIONS = torch_facts.words("plain_reduction")


def _library_uses(tree: ast.Module, bound: Mapping[str, str]) -> Iterator[ast.expr]:
    """The reads of the names ``bound`` (name -> what it names) in ``tree`` that run a library's kernels: not a
    function of `_PLAIN_FUNCTIONS` (``scatter_add(...)``, ``torch_scatter.scatter_mean(...)``), nor its
    ``scatter`` called with a plain ``reduce``."""
    plain: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = bound.get(func.id) if isinstance(func, ast.Name) else (
                f"{bound[func.value.id]}.{func.attr}" if isinstance(func, ast.Attribute) and isinstance(
                    func.value, ast.Name) and func.value.id in bound else None)
            reduce = next((k.value for k in node.keywords if k.arg == "reduce"), node.args[5] if len(
                node.args) > 5 else None)
            if name in _PLAIN_FUNCTIONS and (reduce is None or isinstance(reduce, ast.Constant)
                                            and reduce.value in _PLAIN_REDUCTIONS):
                plain.add(id(func.value if isinstance(func, ast.Attribute) else func))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound and id(node) not in plain:
            yield node


def _cpu_cuda_library(module: str) -> bool:
    """Whether ``module`` is, or is inside, a library of `_CPU_CUDA_LIBRARIES` (``dcn_v2``; ``pytorch3d.renderer``,
    whose rasterizers are the CPU's and CUDA's alone, while ``pytorch3d.transforms`` is plain torch)."""
    parts = module.split(".")
    return any(".".join(parts[:end]) in _CPU_CUDA_LIBRARIES for end in range(1, len(parts) + 1))


def reached_lack(project: Project, other: int, reach: Iterable[int]) -> tuple[int, str] | None:
    """The first line of module ``other`` using what MPS lacks that a program of modules ``reach`` runs: at its
    top level, or in a function or class the program names (`program_names`). piq's ``fid.py`` casts to float64
    inside ``FID``: its package imports it into every program, but only one that names ``FID`` runs the cast."""
    text = project.results[other].original or ""
    found = _lacks(project, other)
    if found and (tree := parse(text)) is not None:  # its `__main__` block runs where it is the program alone
        blocks = main_blocks(tree)
        found = tuple(hit for hit in found if not any(first <= hit[0] <= last for first, last in blocks))
    if not found:
        return None
    names = _names(text)
    where = {line: name for first, last, name in names.spans for line, _ in found if first <= line <= last}
    if not where:
        return _first(found)
    run = program_names(project, reach)
    defs = program_defs(project, reach)
    methods = _methods_at(parse(text), {line for line, _ in found},
                          {local for local, _, _ in project.bindings(other)})
    used = [(line, what) for line, what in found if where.get(line) is None or (other, where[line]) in defs
            and not _bound_elsewhere(project, reach, other, where[line])
            and (line not in methods or methods[line] in run or what == DATASET_FLOAT64)]
    if used and (tree := parse(text)) is not None:
        off = _off_by_default(tree, {line for line, _ in used}, project, reach)
        used = [(line, what) for line, what in used if line not in off]
    if any(what == DATASET_FLOAT64 for _, what in used) and _batches_cast(project, reach):
        used = [(line, what) for line, what in used if what != DATASET_FLOAT64]
    return _first(used)


def _batches_cast(project: Project, reach: Iterable[int]) -> bool:
    """Whether the modules ``reach`` move what their loops get from a loader only after a cast (COVID-19-age-groups'
    ``batch_x.float().to(self.device)``), and move some: a dataset's float64 arrays then reach no device."""
    cast = uncast = 0
    for index in reach:
        text = project.results[index].original or ""
        if "for " not in text or not (".to(" in text or ".cuda(" in text):
            continue
        counts = remembered(_BATCH_MOVES, text, partial(_batch_moves, text))
        cast, uncast = cast + counts[0], uncast + counts[1]
    return cast > 0 and uncast == 0


def _methods_at(tree: ast.Module | None, lines: set[int], from_project: set[str]) -> dict[int, str]:
    """For each of ``lines`` inside a method of a top-level class whose bases are the project's, torch's
    ``nn.Module`` or ``object`` (a framework's base calls hooks no code names: Lightning's ``training_step``), the
    method's name: MedicalZooPytorch's ``DenseVoxelNet.test()`` calls torchsummary's ``summary()``, but nothing
    calls ``test``, so a program that makes the class does not run it. Not ``forward`` (a module's call runs it),
    a dunder method (Python calls those), nor a decorated one. ``from_project``: the names the module imports from
    the project."""
    found: dict[int, str] = {}
    from torchport.model.evaluate import imported, qualified

    defined = {s.name for s in tree.body if isinstance(s, ast.ClassDef)} if tree is not None else set()
    imports = imported(tree) if tree is not None else {}
    for cls in tree.body if tree is not None else ():
        if not isinstance(cls, ast.ClassDef) or cls.keywords or not all(
                isinstance(b, ast.Name) and (b.id in defined or b.id in from_project or b.id == "object")
                or qualified(b, imports) in _MODULE_BASES for b in cls.bases):
            continue
        for method in cls.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name != "forward" and not (
                    method.name.startswith("__") and method.name.endswith("__")) and not method.decorator_list:
                found.update((line, method.name) for line in lines
                             if method.lineno <= line <= (method.end_lineno or method.lineno))
    return found


_MODULE_BASES = torch_facts.named("module_base")


def _bound_elsewhere(project: Project, reach: Iterable[int], other: int, name: str) -> bool:
    """Whether the top-level definition ``name`` of module ``other`` is one no module of ``reach`` runs although
    the name is run: ``other`` names it nowhere else, and every other module naming it imports that name from
    somewhere else (DeblurGANv2's models.py: ``from skimage.metrics import structural_similarity as SSIM``, not
    util/metrics.py's ``SSIM``); a module that does not import ``other`` names it only through one that does
    (metric_counter.py's ``'SSIM'`` label). Names are matched as words (`program_names`); this tells them apart by
    import."""
    facts = _names(project.results[other].original or "")
    if name in facts.top or any(name in names for own, names in facts.inside.items() if own != name):
        return False
    elsewhere = False  # some module names it, by an import from elsewhere (else it runs by a lookup: mar's models)
    for index in reach:
        text = project.results[index].original or ""
        if index == other or name not in text or other not in project.imports(index) or name not in words(text):
            continue  # a module that does not import `other` names it only through one that does
        tree = parse(text)
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)] \
            if tree is not None else []
        binds = any((alias.asname or alias.name.split(".")[0]) == name for node in imports for alias in node.names)
        if not binds or any(local == name and target == other for local, target, _ in project.bindings(index)):
            return False
        elsewhere = True
    return elsewhere


def live_lack(project: Project, modules: Iterable[int], reach: Iterable[int]) -> tuple[int, tuple[int, str]] | None:
    """The first module (by path) that the functions and classes a program of modules ``reach`` runs import when
    they run (`Project.live_imports` from ``modules``, the ones it always imports) and what MPS lacks there
    (`reached_lack`): ``(module, (line, what))``, or None."""
    reach = list(reach)
    for other in sorted(project.live_imports(modules, program_names(project, reach)),
                        key=lambda i: str(project.results[i].path)):
        if outline(project.results[other].original).parses and (
                found := reached_lack(project, other, [*reach, other])) is not None:
            return other, found
    return None


def live_requirement(project: Project, reach: Iterable[int], entry: int | None = None,
                     extensions: frozenset[str] = frozenset()) -> tuple[int, int, str] | None:
    """The first CUDA-only library a function or class the program of modules ``reach`` runs (`program_names`)
    imports whenever it runs (`deferred_cuda_imports`): ``(module, line, why)``, or None.
    consistency_models' ``QKVFlashAttention.__init__`` imports flash_attn, and the UNet's ``AttentionBlock`` makes
    one under ``if attention_type == "flash":``, the parameter's default that no call changes. A definition named
    only where its parameters' defaults turn the branch off (`_on_by_default`) does not count; a method other than
    ``__init__`` counts where another module of the program calls it (its own module may call it only in a method the
    program never runs: pytorch_block_sparse's ``reverse_matmul_``, for its CUDA path alone), and a test
    function of the entry point ``entry`` where pytest runs it. ``extensions``: the extensions the project builds
    for CUDA alone (mish-cuda's ``from mish_cuda import ...`` in each test)."""
    reach = sorted(reach, key=lambda i: str(project.results[i].path))
    found = [(index, deferred) for index in reach if (deferred := deferred_cuda_imports(
        project.results[index].original or "", extensions))]
    run = program_names(project, reach) if found else frozenset()
    for index, deferred in found:
        for name, method, line, why in deferred:
            if (index == entry and name.startswith("test") or name in run and _named_on(project, reach, name)) and (
                    method is None or any(method in _attributes(project.results[i].original or "")
                                          for i in reach if i != index)):
                return index, line, why
    return None


def deferred_cuda_imports(text: str, extensions: frozenset[str] = frozenset()
                          ) -> tuple[tuple[str, str | None, int, str], ...]:
    """``(definition, method, line, why)`` of each CUDA-only library (`analysis.requirements.cuda_only_import`),
    or extension of ``extensions`` (built for CUDA alone), a top-level function imports whenever it runs
    (``method`` None), a class whenever it makes an object (its ``__init__``, ``method`` None), or a method of a
    class whenever it is called (``method``, its name): an import among the body's own statements, not under an
    ``if``, a loop or a ``try`` (diffusers' ``if is_xformers_available(): import xformers`` in a method it may never
    call); read once per text."""
    def read() -> tuple[tuple[str, str | None, int, str], ...]:
        from torchport.codemods.analysis.requirements import cuda_only_import, project_cuda_extension

        if not _CUDA_ONLY_TEXT.search(text) and not any(name in text for name in extensions):
            return ()
        tree = parse(text)
        found = []
        for definition in tree.body if tree is not None else ():
            if isinstance(definition, ast.ClassDef):
                bodies = [(None if f.name == "__init__" else f.name, f.body) for f in definition.body
                          if isinstance(f, ast.FunctionDef)]
            elif isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef):
                bodies = [(None, definition.body)]
            else:
                continue
            for method, body in bodies:
                for node in body:
                    if isinstance(node, ast.Import | ast.ImportFrom) and not (
                            isinstance(node, ast.ImportFrom) and node.level):
                        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                        why = next((w for name in names if (
                            w := cuda_only_import(name) or project_cuda_extension(name, extensions))), None)
                        if why is not None:
                            found.append((definition.name, method, node.lineno, why))
        return tuple(found)

    return remembered(_DEFERRED, (text, extensions), read)  # the search too: each program asks for every module


def _attributes(text: str) -> frozenset[str]:
    """The attribute names a module reads (``x.reverse_matmul_``), read once per text."""
    return remembered(_ATTRIBUTES, text, lambda: frozenset(
        n.attr for n in ast.walk(parse(text) or ast.Module(body=[], type_ignores=[])) if isinstance(n, ast.Attribute)))


def _loads(text: str) -> dict[str, tuple[int, ...]]:
    """The lines where a module reads each name (``ast.Name`` loads), read once per text."""
    def read() -> dict[str, tuple[int, ...]]:
        found: dict[str, list[int]] = {}
        for node in ast.walk(parse(text) or ast.Module(body=[], type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.setdefault(node.id, []).append(node.lineno)
        return {name: tuple(lines) for name, lines in found.items()}

    return remembered(_LOADS, text, read)


def _off_cuda_arm(tree: ast.Module, line: int) -> bool:
    """Whether ``line`` lies in the arm of an ``if`` that a CPU machine never takes, its test decided by a device
    query (`Evaluator.decided`)."""
    from torchport.model.evaluate import Evaluator

    evaluator: Evaluator | None = None
    for branch in ast.walk(tree):
        if not isinstance(branch, ast.If):
            continue
        arm = branch.body if any(s.lineno <= line <= (s.end_lineno or 0) for s in branch.body) else branch.orelse \
            if any(s.lineno <= line <= (s.end_lineno or 0) for s in branch.orelse) else None
        if arm is None or "cuda" not in ast.unparse(branch.test):
            continue
        evaluator = evaluator or Evaluator(tree, "cpu")
        truth = evaluator.decided(branch.test)
        if truth is not None and truth != (arm is branch.body):
            return True
    return False


def _named_on(project: Project, reach: Sequence[int], name: str) -> bool:
    """Whether a module of ``reach`` names ``name`` where its parameters' defaults do not turn the branch off."""
    key = (name, frozenset(reach))
    if key not in project.named_on:
        project.named_on[key] = _named_on_read(project, reach, name)
    return project.named_on[key]


def _named_on_read(project: Project, reach: Sequence[int], name: str) -> bool:
    for index in reach:
        text = project.results[index].original or ""
        if name not in text or (tree := parse(text)) is None:
            continue
        if any(_on_by_default(tree, line, project, reach) for line in _loads(text).get(name, ())):
            return True
    return False


def _on_by_default(tree: ast.Module, line: int, project: Project, reach: Sequence[int]) -> bool:
    """Whether ``line`` runs at the defaults of the parameters its ``if`` tests read (``if attention_type ==
    "flash":``, ``if use_flash:``), where no call in ``reach`` passes them: False only where such a test is false,
    or a device query makes it false off CUDA (Adan's ``if torch.cuda.is_available(): _fused_adan_multi_tensor(...)``,
    the function that imports its CUDA extension)."""
    if _off_cuda_arm(tree, line):
        return False
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not (
                function.lineno <= line <= (function.end_lineno or 0)):
            continue
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        defaults = dict(zip(positional[len(positional) - len(function.args.defaults):], function.args.defaults))
        defaults.update((a.arg, d) for a, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d)
        owner = next((c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and function in c.body), None)
        callee = owner if function.name == "__init__" and owner else function.name
        for branch in ast.walk(function):
            if not isinstance(branch, ast.If) or not any(s.lineno <= line <= (s.end_lineno or 0) for s in branch.body):
                continue
            test, want = branch.test, True
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, want = test.operand, False
            param, value = None, None
            if isinstance(test, ast.Name) and isinstance(defaults.get(test.id), ast.Constant):
                param, value = test.id, bool(defaults[test.id].value)  # type: ignore[attr-defined]
            elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
                    and isinstance(test.ops[0], ast.Eq | ast.NotEq) and isinstance(test.comparators[0], ast.Constant) \
                    and isinstance(defaults.get(test.left.id), ast.Constant):
                equal = defaults[test.left.id].value == test.comparators[0].value  # type: ignore[attr-defined]
                param, value = test.left.id, equal if isinstance(test.ops[0], ast.Eq) else not equal
            if param is not None and value != want and not _given(callee, param, positional[1:] if owner else
                                                                   positional, project, reach):
                return False
    return True


def _off_by_default(tree: ast.Module, lines: set[int], project: Project, reach: Iterable[int]) -> set[int]:
    """The ``lines`` under ``if <flag>:`` in a module-level function whose ``flag`` parameter defaults to ``False`` or
    ``None`` and which no call in the program's modules (``reach``) gives that parameter: siren's ``train(...,
    double_precision=False)``, whose ``.double()`` casts no experiment script asks for."""
    off: set[int] = set()
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not any(
                function.lineno <= line <= (function.end_lineno or 0) for line in lines):
            continue
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        defaults = dict(zip(positional[len(positional) - len(function.args.defaults):], function.args.defaults))
        defaults.update((a.arg, d) for a, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d)
        flags = {name for name, d in defaults.items() if _off(d)}
        for branch in ast.walk(function):
            if not (isinstance(branch, ast.If) and isinstance(branch.test, ast.Name) and branch.test.id in flags):
                continue
            inside = {line for line in lines for s in branch.body if s.lineno <= line <= (s.end_lineno or 0)}
            if inside and not _given(function.name, branch.test.id, positional, project, reach):
                off |= inside
    return off


def _given(name: str, param: str, positional: list[str], project: Project, reach: Iterable[int]) -> bool:
    """Whether a call of ``name`` in the modules ``reach`` may turn ``param`` on: by keyword or by position (other
    than a literal ``False`` or ``None``), or through ``*args``/``**kwargs``."""
    index = positional.index(param) if param in positional else None
    for module in reach:
        text = project.results[module].original or ""
        if name not in text or (tree := parse(text)) is None:
            continue
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and (call.func.id if isinstance(call.func, ast.Name) else getattr(
                    call.func, "attr", None)) == name and (
                    any(k.arg is None or k.arg == param and not _off(k.value) for k in call.keywords)
                    or any(isinstance(a, ast.Starred) for a in call.args)
                    or index is not None and len(call.args) > index and not _off(call.args[index])):
                return True
    return False


def _off(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value in (False, None)


def program_names(project: Project, reach: Iterable[int]) -> frozenset[str]:
    """The names a program of modules ``reach`` may run: all its entry point uses (a module of ``reach`` that no
    other imports: pytest runs a test module's functions, a script calls its own), what the top level of its other
    modules uses, then, in turn, what the top-level functions and classes of those names use (a name counts for
    each module defining it). ptwt's package imports its sparse matrix transforms into every program, but a script
    that calls the convolution ``wavedec`` never names them, nor does anything it runs (another module's unused
    method may)."""
    key = frozenset(reach)
    if key not in project.runs:
        imported = {other for i in key for other in project.imports(i) if other != i}
        facts = {i: _names(text) for i in key if (text := project.results[i].original)}
        roots = set().union(*(fact.top if i in imported else fact.top.union(*fact.inside.values())
                              for i, fact in facts.items()))
        live = live_names(roots, (fact.inside for fact in facts.values()))
        looked_up: set[str] = set()
        while looked := {n[:-len(_ANY)] for n in live if n.endswith(_ANY)} - looked_up:
            # a module looked up by a name the code computes: every function and class it defines may run
            looked_up |= looked
            live = live_names(live.union(*(
                (name for _, _, name in fact.spans) for i, fact in facts.items()
                if (project.names[i] or "").rpartition(".")[2] in looked)), (fact.inside for fact in facts.values()))
        project.runs[key] = frozenset(live)
    return project.runs[key]


def program_defs(project: Project, reach: Iterable[int]) -> frozenset[tuple[int, str]]:
    """The top-level functions and classes (and aliases) a program of modules ``reach`` may run, as ``(module,
    name)``: `program_names`, with a name resolved where its module binds it. A module that defines or imports
    ``main`` by name means its own: m3m's evaluation script runs its ``main``, not the one of the training script
    it imports helpers from, which makes a process group. An attribute (``train.main()``) or a name neither
    defined nor imported by name in its module may mean any module's definition of it."""
    key = frozenset(reach)
    if key not in project.defs_run:
        imported = {other for i in key for other in project.imports(i) if other != i}
        facts = {i: _names(text) for i in key if (text := project.results[i].original)}
        # an entry point a module of its own program imports back (a helper's `from train import CONFIG`) is still
        # the program: its `__main__` block runs
        imported = {i for i in imported if i in facts and not project.reach(i) >= key}
        attributes = {i: _attribute_names(project.results[i].original or "") for i in facts}
        bound: dict[int, dict[str, list[tuple[int, str]]]] = {i: {} for i in facts}
        for i in facts:
            for local, module, imported_as in project.bindings(i):
                if imported_as is not None and module in facts:
                    bound[i].setdefault(local, []).append((module, imported_as))
        spanned = {i: {name for _, _, name in fact.spans} for i, fact in facts.items()}
        defined = {i: spanned[i] | set(fact.inside) for i, fact in facts.items()}
        by_name: dict[str, list[int]] = {}
        for i, names in defined.items():
            for name in names:
                by_name.setdefault(name, []).append(i)
        # what a module files under a name it does not define (a registry it imports: `@ARCH_REGISTRY.register()`)
        filed = {name: [i for i in modules if name not in spanned[i]] for name, modules in by_name.items()}
        live: set[tuple[int, str]] = set()
        seen: set[tuple[int, str]] = set()
        todo = [(i, name) for i, fact in facts.items()
                for name in (fact.on_import if i in imported else fact.top.union(*fact.inside.values(), fact.inside))]
        looked_up: set[str] = set()
        while todo:
            i, name = todo.pop()
            if (i, name) in seen:
                continue
            seen.add((i, name))
            if name.endswith(_ANY) and (looked := name[:-len(_ANY)]) not in looked_up:
                looked_up.add(looked)  # a module looked up by a computed name: all it defines may run
                todo.extend((j, n) for j, fact in facts.items()
                            if (project.names[j] or "").rpartition(".")[2] == looked for _, _, n in fact.spans)
            if name in bound[i]:  # what it imports by name (`from train import main as train_main`: train's), read
                todo.extend(bound[i][name])  # where that module binds it (a package re-exports)
                targets = [(j, name) for j in filed.get(name, ())]
            elif name in defined[i] and name not in attributes[i]:
                targets = [(i, name)]
            else:
                targets = [(j, name) for j in by_name.get(name, ())]
            for j, defined_as in targets:
                if (j, defined_as) not in live:
                    live.add((j, defined_as))
                    todo.extend((j, n) for n in facts[j].inside.get(defined_as, frozenset()))
        project.defs_run[key] = frozenset(live)
    return project.defs_run[key]


_ATTRIBUTE_NAMES: dict[str, frozenset[str]] = {}


def _attribute_names(text: str) -> frozenset[str]:
    """The names a module's code reads as attributes (``train.main``), read once per text."""
    def read() -> frozenset[str]:
        tree = parse(text)
        return frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)) if tree else frozenset()

    return remembered(_ATTRIBUTE_NAMES, text, read)


def holds(results: Sequence[FileResult]) -> dict[int, str]:
    """Which files must keep their device choices CUDA-or-CPU, and why (the module docstring says when).

    Args:
        results: one per file of the run, after a first pass (``facts`` filled in by the rules).

    Returns:
        index into ``results`` -> the reason, naming the file and line that decided it.
    """
    candidates = [i for i, r in enumerate(results) if r.error is None and r.facts.get("choices")]
    # A file that keeps its own choice CUDA-or-CPU and moves other data to the runtime's device (fairseq's trainer:
    # `self.cuda = torch.cuda.is_available()`, then `torch.tensor(0.0).cuda()`) keeps its moves ported: held, they
    # would fail on the CPU. On MPS its tensors would split: its programs keep the CPU there (`split_choice`).
    if not candidates:
        return {}
    project = Project(results)
    reasons: dict[int, str] = {}
    for index in candidates:
        reach = project.reach(index)
        for other in sorted(reach):
            found = lacking(results[other].original or "") if other == index else reached_lack(project, other, reach)
            if found is not None and lacking(results[other].original or "", certain=True) is not None \
                    and _stops_on_the_cpu(results[index].original):
                break  # held, it would not run on the CPU "as before": ported whole, its programs keep the CPU on
            if found is not None:  # a Mac (`tp.avoid_mps`, which a certain blocker gives them)
                reasons[index] = (f"{results[other].display}:{found[0]} uses {found[1]}, which MPS lacks; "
                                  "on a Mac this keeps running on the CPU, as before")
                break
    kept = {i: r.facts["kept"][0] for i, r in enumerate(results) if r.error is None and r.facts.get("kept")}
    # held, a module whose code stops on the CPU as written (frankmocap's body_mocap_api: `pred_aa = ....cuda()`
    # beside its `"cuda" if ... else "cpu"`) would keep stopping there: ported whole, its programs keep CUDA-or-CPU.
    # Evaluated only for a module about to be linked, once each.
    stops: dict[int, bool] = {}
    changed = True
    while changed:
        changed = False
        sources = {**kept, **{i: results[i].facts["choices"][0] for i in reasons}}
        reached = {k: project.reach(k) for k in sources}
        for index in candidates:
            if index in reasons:
                continue
            mine = project.reach(index)
            linked = next((k for k in sorted(sources) if k in mine or index in reached[k]), None)
            if linked is not None and index not in stops:
                stops[index] = _stops_on_the_cpu(results[index].original)
            if linked is not None and not stops[index]:
                where = "this file" if linked == index else results[linked].display
                reasons[index] = (f"{where}:{sources[linked]} keeps its device choice CUDA-or-CPU, so this one does "
                                  "too (on MPS their tensors would be on different devices)")
                changed = True
    return reasons


def _stops_on_the_cpu(text: str | None) -> bool:
    """Whether the module as written has code that stops on the CPU at a CUDA need, on some path of its body or of
    a function (DGI's ``tot = tot.cuda()`` beside its ``if torch.cuda.is_available():`` guard): a hold keeping its
    choices CUDA-or-CPU would leave that code failing there."""
    from torchport.model.evaluate import Evaluator

    tree = parse(text)
    if tree is None:
        return False
    try:
        units = Evaluator(tree, "cpu").units()
    except RecursionError:
        return False
    return any(p.stop is not None and p.stop.kind == "cuda" for unit in units for p in unit.paths)


@functools.lru_cache(maxsize=256)
def _changed_lines(original: str, migrated: str) -> frozenset[int]:
    """The lines of ``original`` its port ``migrated`` changes (1-based)."""
    if original == migrated:
        return frozenset()
    matcher = difflib.SequenceMatcher(None, original.splitlines(), migrated.splitlines(), autojunk=False)
    return frozenset(line + 1 for tag, first, last, _, _ in matcher.get_opcodes() if tag != "equal"
                     for line in range(first, last))


def split_choice(result: FileResult, moved_elsewhere: bool = False) -> tuple[int, str] | None:
    """``(line, what)`` where a file keeps its own device choice CUDA-or-CPU while it (or, ``moved_elsewhere``,
    another module of the same program: AGCRN's trainer) moves other data to the runtime's device: on MPS its
    tensors would be on two devices, so its programs keep the CPU on a Mac. A checkpoint loaded straight into
    ``load_state_dict`` moves nothing: the module copies it onto its device."""
    moves = (set(result.facts.get("moves", ())) - set(result.facts.get("state_loads", ()))) & _changed_lines(
        result.original or "", result.migrated or "")  # a move the check of the port took back moves nothing
    # (a module that names MPS chooses among several backends: its choice is no CUDA-or-CPU one for others)
    if result.error is None and (moves or moved_elsewhere and not _MENTIONS_MPS.search(result.original or "")) \
            and result.facts.get("kept") and not result.facts.get("choices"):
        return result.facts["kept"][0], KEPT_CHOICE
    return None


def _statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement in ``body``, nested ones too (imports are statements: no expression is visited)."""
    for statement in body:
        yield statement
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(statement, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(statement, "cases", ()):
            yield from _statements(case.body)
