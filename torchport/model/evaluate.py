"""Evaluate a module's code on one target, with the device queries answered as that target answers them.

The evaluation is abstract: values it cannot know are `UNKNOWN`, and a condition it cannot decide forks the path.
It follows constants, assignments, f-strings, conditional and boolean expressions, comparisons, lists built with
``append`` and tested with ``any``/``all``, calls of the module's own functions (their returns, to a bounded
depth), skip marks, ``assert``/``raise``/``sys.exit``/``pytest.skip``. A path stops where code needs CUDA off CUDA:
a ``torch.cuda`` call that raises there (`torch_facts.RAISES_OFF_CUDA`), ``.cuda()``, a placement on a CUDA
device (``.to``, ``device=``, ``map_location=``), a CUDA process-group backend, a tensor type of ``torch.cuda``.

Units: the module's own body (``__name__ == "__main__"``), and each function and method on its own, its
parameters unknown, the module's globals as the module body leaves them.
"""

from __future__ import annotations

import ast
import builtins
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from torchport.model import torch_facts
from torchport.model.objects import own_device_classes, own_parameter
from torchport.model.torch_facts import STAR_BINDS
from torchport.model.values import (
    COUNT,
    INDEX,
    NOT_CUDA,
    UNKNOWN,
    Device,
    Function,
    Items,
    Mark,
    Name,
    Prefix,
    device_type,
    truth,
)

_MAX_PATHS = 48  # per unit: past this, undecided branches are merged instead of forked
_MAX_DEPTH = 3  # calls of the module's own functions followed
_MAX_PARAMETRIZED = 8  # combinations of a test's parametrize values evaluated, each a path
_STOPS = ("cuda", "gate")  # a path that ends so does not run off CUDA


@dataclass(frozen=True)
class Stop:
    """Where and why a path ended early.

    Args:
        kind: ``cuda`` (needs CUDA), ``gate`` (an assert, exit, skip or raise decided by a device query), ``raise``,
            ``exit`` or ``skip`` (not decided by one).
        line: 1-based line.
        message: what stopped it, in a few words.
        origin: the line of the call or placement that stops it, inside a called function (0: ``line``).
        error: the exception it raises where only handlers of that one catch it (``IndexError``: GPUtil's empty
            list indexed); "" where any handler of what a call off CUDA raises does (`CATCHES_CUDA_ERRORS`).
    """

    kind: str
    line: int
    message: str
    origin: int = 0
    error: str = ""


@dataclass
class Path:
    """One way through a unit: the values bound, the statements run (their first lines), how it ended."""

    env: dict[str, object]
    lines: set[int] = field(default_factory=set)
    stop: Stop | None = None
    flow: str | None = None  # "return", "break", "continue"
    returned: object = None
    gated: int = 0  # inside how many branches a device query chose
    queried: set[str] = field(default_factory=set)  # names bound to what a device query answered

    def fork(self) -> Path:
        return replace(self, env=dict(self.env), lines=set(self.lines), queried=set(self.queried))

    @property
    def clean(self) -> bool:
        """Whether the path runs off CUDA: it did not stop at a CUDA need or a device gate."""
        return self.stop is None or self.stop.kind not in _STOPS


@dataclass
class Unit:
    """A module body or one function: its node, its paths on the target, whether a skip mark skips it there."""

    node: ast.AST
    paths: list[Path]
    skipped: Stop | None = None


@dataclass
class _TreeFacts:
    """What every evaluation of one tree reads first: its imports (local name -> dotted name), the names it binds from
    a CUDA-only library, the class of each method (by the method's id); and, read lazily, the attributes set on
    something other than ``self``, its names and its calls."""

    imports: dict[str, str]
    cuda_names: frozenset[str]
    methods: dict[int, ast.ClassDef]
    # what it binds from a library whose import works anywhere and whose calls need CUDA (pynvml)
    drivers: frozenset[str] = frozenset()
    stored: set[str] | None = None
    # every name and attribute, by name, and the ids of the called ones (`Evaluator._name_index`)
    named: tuple[dict[str, list[ast.expr]], set[int]] | None = None
    # the statement line of each call, by the id of its function, and the string constants (`_unreached_helpers`)
    calls: tuple[dict[int, int], set[str]] | None = None
    options: dict[str, object] | None = None  # `command_line_defaults`
    integers: frozenset[int] | None = None  # `Evaluator._made_integers`


# A module is evaluated for several targets, entry points and checks: its facts are read once per tree (trees are
# shared by text, `torchport.pipeline.project.parse`), and go with it.
_FACTS: weakref.WeakKeyDictionary[ast.Module, _TreeFacts] = weakref.WeakKeyDictionary()


def _tree_facts(tree: ast.Module) -> _TreeFacts:
    facts = _FACTS.get(tree)
    if facts is None:
        imports = _imports(tree)
        libraries = {local: library for local, name in imports.items() if (library := torch_facts.cuda_library(name))}
        facts = _FACTS[tree] = _TreeFacts(imports, frozenset(libraries), _methods(tree), frozenset(
            local for local, library in libraries.items() if not library.loads))
    return facts


def _options(tree: ast.Module, defaults: bool) -> dict[str, object]:
    facts = _tree_facts(tree)
    if facts.options is None:
        facts.options = command_line_defaults(tree)
    return facts.options if defaults else {k: v for k, v in facts.options.items() if isinstance(v, ast.expr)}


def imported(tree: ast.Module) -> dict[str, str]:
    """What ``tree`` imports: each local name -> the qualified name it is bound to (read once per tree)."""
    return _tree_facts(tree).imports


def _imports(tree: ast.Module) -> dict[str, str]:
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    bound[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    for name, full in STAR_BINDS.items():
                        bound.setdefault(name, full)
                else:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


# the builtins it evaluates
_BUILTINS = frozenset({"any", "all", "len", "str", "int", "bool", "exit", "quit", "isinstance", "range", "list",
                       "tuple"})
_EXIT_METHODS = frozenset(torch_facts.words("exit_method"))
_IMPORT_ERRORS = frozenset(torch_facts.words("missing_api", "catches_cuda_error"))
_RANGE = 16  # the longest range it lists: device counts, seldom more
_GROUP = "<process group>"  # bound on a path that made a process group


class _Parsed:
    def __repr__(self) -> str:
        return "<parsed command line>"


_PARSED = _Parsed()  # what `parser.parse_args()` returns, read with `Evaluator.options`


class Evaluator:
    """Evaluates the units of one module on ``target`` (one of `torch_facts.TARGETS`).

    Args:
        tree: the module's ``ast``.
        target: the device the code is evaluated for.
        exempt: lines whose CUDA needs do not stop a path (marked CUDA on purpose).
        gates: local names (``RunIf``, ``helpers.requires_gpu``, ``dtw_cuda``) of what other modules define that
            works only on CUDA: off CUDA a skip mark it makes skips, a test of it is false, a call of it stops.
            ``.<attr>`` names a flag attribute that every assignment in the project sets to what is false without
            CUDA (``args.use_gpu = torch.cuda.is_available() and args.use_gpu``): off CUDA it reads false.
            ``f(p)`` names a parameter of the module's function ``f`` that every call in the project fills with such
            a flag: off CUDA it is false where ``f`` runs on its own.
        defaults: what the module's own ``parse_args()`` returns holds its options' defaults (the program run with
            no arguments, as `torchport programs` judges it); else it is unknown, so every option's paths run.
        own: nothing imports the module (a script): its top-level functions run only where its own code calls them.
    """

    def __init__(self, tree: ast.Module, target: str, exempt: frozenset[int] = frozenset(),
                 gates: frozenset[str] = frozenset(), defaults: bool = False, own: bool = False) -> None:
        self.tree = tree
        self.own = own  # nothing imports the module: only its own code calls its top-level functions
        # the command line's defaults, where the program is run with none given (`command_line_defaults`)
        # when the program may be run with options given, only a default computed from device queries is read
        # (`default="cuda" if torch.cuda.is_available() else "cpu"`): a device given on the command line is the
        # user's own choice, which runs where it names
        self.options = _options(tree, defaults)
        self.exempt = exempt
        self.target = target
        facts = _tree_facts(tree)
        self.imports = facts.imports
        # what the module binds from a CUDA-only library (`from megatron.training import parse_args`, under a guard
        # too) works only on CUDA, as another module's gate does
        self.gates = gates | facts.cuda_names
        self._drivers = facts.drivers
        self._testing = 0  # inside a condition
        self.globals: dict[str, object] = {}
        self.globals_queried: set[str] = set()
        self._forks = 0
        self._touched = False  # a device query answered while evaluating the current condition
        self._quiet = 0  # inside an operand that may not run: nothing stops there
        self._depth = 0
        self._calling: set[int] = set()
        # while the module body runs, the globals bound so far, for the functions it calls (`main()` reads the
        # `get_dtypes` defined above it)
        self._module_env: dict[str, object] = {}
        self._in_module = False
        self._calls: dict[tuple[object, ...], _Call] = {}  # calls of the module's own functions, evaluated once
        # each function's calls (by the call's id) -> the values given to its parameters (`_always_false`)
        self._filled: dict[int, dict[int, dict[str, object]]] = {}
        # each own class's `__init__` (by id) -> the calls making it (by id) -> whether each parameter was given
        # False from a device query (`_construct`)
        self._made: dict[int, dict[int, dict[str, bool]]] = {}
        self._inits: dict[str, ast.FunctionDef] | None = None  # own classes' `__init__` by name (`_constructor`)
        self._named: dict[str, list[ast.expr]] | None = None  # `_always_false`'s index of the module's names
        self._called: set[int] = set()
        self._methods = facts.methods  # a method's id -> its class
        self._stored_names: set[str] | None = None  # attributes set on something other than `self` (lazily)
        self._class_facts: dict[int, dict[str, object]] = {}
        self._grown: dict[int, frozenset[str]] = {}  # per loop (its first statement): the lists its body grows
        self._growing: list[frozenset[str]] = []  # the lists the loops being run grow, innermost last
        self._fixtures: dict[str, object] = {}  # the module's pytest fixtures' values by name (`_fixture`)
        self._class_scopes: dict[int, dict[str, object]] = {}  # per class: the names its body binds (`_class_scope`)
        self._classes: list[ast.ClassDef | None] = [None]  # the class of the method being run
        self._own_classes: frozenset[str] | None = None  # classes that move themselves their own way (`_own_object`)
        self._own_names: frozenset[str] | None = None  # names the module binds to objects of those classes
        # the span of each branch of a conditional expression evaluated -> whether some evaluation took it
        self.taken: dict[tuple[int, int, int, int], bool] = {}

    # -- units -------------------------------------------------------------------------------------------------

    def units(self, functions: bool = True) -> list[Unit]:
        """The module body, then (``functions``) every function and method, each with its paths."""
        found = [self._module_unit()]
        if not functions:
            return found
        skipped: dict[int, Stop] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                stop = self._skipped(node, skipped.get(id(node)))
                if stop is not None:
                    skipped.update((id(child), stop) for child in ast.walk(node) if child is not node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._forks = 0
                found.append(self._function_unit(node, skipped.get(id(node))))
        if self.target != "cuda":  # a helper every call of which gives a flag false here: run again so
            for index, unit in enumerate(found):
                if isinstance(unit.node, ast.FunctionDef) and unit.skipped is None and unit.paths and (
                        fixed := self._always_false(unit.node)):
                    self._forks = 0
                    found[index] = Unit(unit.node, self.run_alone(unit.node, fixed))
            self._unreached_helpers(found)
        return found

    def _unreached_helpers(self, found: list[Unit]) -> None:
        """Off CUDA, a private method (``_sync_streams``) every call of which is ``self._sync_streams()`` on a line
        no path runs here (under ``if self._use_cuda_streams:``) runs on no path either: its unit loses its paths.
        (A private function of the module may be called by an importer, as tests do.)"""
        candidates = [index for index, unit in enumerate(found)
                      if isinstance(node := unit.node, (ast.FunctionDef, ast.AsyncFunctionDef)) and unit.paths
                      and id(node) in self._methods and node.name.startswith("_") and not node.name.endswith("__")
                      and not node.decorator_list]
        if not candidates:
            return
        self._name_index()
        assert self._named is not None
        facts = _tree_facts(self.tree)
        if facts.calls is None:
            facts.calls = (_call_statements(self.tree), _strings(self.tree))
        calls, strings = facts.calls
        for _ in range(3):  # a helper only another such helper calls, in turn
            ran = {line for unit in found for path in unit.paths for line in path.lines}
            changed = False
            for index in candidates:
                unit = found[index]
                node = unit.node
                assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                if not unit.paths or node.name in strings:
                    continue
                named = self._named.get(node.name, ())
                if named and all(id(n) in calls and calls[id(n)] not in ran and isinstance(n, ast.Attribute)
                                 and isinstance(n.value, ast.Name) and n.value.id == "self" for n in named):
                    found[index] = Unit(node, [], unit.skipped)
                    changed = True
            if not changed:
                return

    def _name_index(self) -> None:
        if self._named is not None:
            return
        facts = _tree_facts(self.tree)
        if facts.named is None:  # every name and attribute of the module, and which of them are called (once a tree)
            named: dict[str, list[ast.expr]] = {}
            called: set[int] = set()
            for n in ast.walk(self.tree):
                if isinstance(n, (ast.Attribute, ast.Name)):
                    named.setdefault(n.attr if isinstance(n, ast.Attribute) else n.id, []).append(n)
                elif isinstance(n, ast.Call):
                    called.add(id(n.func))
            facts.named = (named, called)
        self._named, self._called = facts.named

    def _always_false(self, function: ast.FunctionDef) -> dict[str, object]:
        """The parameters of ``function`` (a test class's method, or a private function or method) that every call
        of it the evaluation of the module runs fills with False: torch-fidelity's
        ``self.estimate_implementation_exactness(cuda)`` after ``cuda = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        != ""``; any top-level function of a module nothing imports (``own``: SimCTG's
        ``evaluate_dev_set_ppl(data, model, cuda_available, device)``). Named anywhere else (a callback), it is none."""
        filled = self._filled.get(id(function))
        cls = self._methods.get(id(function))
        if not filled or not (function.name.startswith("_") and not function.name.startswith("__") or (
                cls is not None and cls.name.startswith("Test")) or self.own and function in self.tree.body):
            return {}
        self._name_index()
        assert self._named is not None
        if any(id(n) not in self._called for n in self._named.get(function.name, ())):
            return {}  # named where it is not called; a call evaluated nowhere is on no path that runs here
        names = set.intersection(*(set(values) for values in filled.values()))
        return {name: False for name in names if all(values[name] is False for values in filled.values())}

    def top_functions(self, names: Iterable[str] | None = None) -> list[Unit]:
        """The module's own top-level functions (those named in ``names``, if given), each with its paths, after
        the module body has run (its globals)."""
        self._module_unit()
        wanted = None if names is None else set(names)
        units = []
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (wanted is None or node.name in wanted):
                self._forks = 0
                units.append(self._function_unit(node, None))
        return units

    def _module_unit(self) -> Unit:
        self._forks = 0
        self._in_module = True
        try:
            module = Unit(self.tree, self.run(self.tree.body, [Path({"__name__": "__main__"})]))
        finally:
            self._in_module = False
        self.globals = _merged(module.paths)
        self._calls.clear()  # they read the globals
        self.globals_queried = set().union(*(p.queried for p in module.paths)) if module.paths else set()
        return module

    def _skipped(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, outer: Stop | None) -> Stop | None:
        if outer is not None:
            return outer
        scope = self._class_scope(cls) if (cls := self._methods.get(id(node))) is not None else {}
        for decorator in node.decorator_list:
            if self.target != "cuda" and self._gate(decorator) is not None:
                return Stop("gate", decorator.lineno, f"`{self._gate(decorator)}` skips it without CUDA")
            mark = self.value(decorator, Path(dict(scope)))
            if isinstance(mark, Mark) and mark.skip is True:
                return Stop("gate", decorator.lineno, "a skip mark skips it")
        if isinstance(node, ast.ClassDef):  # unittest's `setUpClass` that raises SkipTest without CUDA
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and method.name in ("setUp", "setUpClass"):
                    paths = self.run_alone(method)
                    if paths and all(p.stop is not None and p.stop.kind in ("gate", "skip") for p in paths):
                        return Stop("gate", method.lineno, f"its `{method.name}` skips it")
        return None

    def _class_scope(self, cls: ast.ClassDef) -> dict[str, object]:
        """The names a class body binds by a plain assignment, with their values: what its methods' decorators read
        (torcheval's ``cuda_avail: bool = torch.cuda.is_available()``, then ``@unittest.skipUnless(
        condition=cuda_avail, ...)``)."""
        found = self._class_scopes.get(id(cls))
        if found is None:
            found = self._class_scopes[id(cls)] = {}
            for statement in cls.body:
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                    target, value = statement.targets[0], statement.value
                elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                    target, value = statement.target, statement.value
                else:
                    continue
                if isinstance(target, ast.Name):
                    found[target.id] = self.value(value, Path(dict(found)))
        return found

    def _function_unit(self, node: ast.FunctionDef | ast.AsyncFunctionDef, outer: Stop | None) -> Unit:
        stop = self._skipped(node, outer)
        if stop is not None:
            return Unit(node, [], stop)
        return Unit(node, self.run_alone(node))

    def run_alone(self, node: ast.FunctionDef | ast.AsyncFunctionDef,
                  fixed: dict[str, object] | None = None, asked: Iterable[str] = ()) -> list[Path]:
        """The paths of a function run on its own: its parameters unknown (bar those ``fixed``; ``asked``: those of
        them a device query gave), in its class (a method)."""
        self._classes.append(self._methods.get(id(node)))
        env: dict[str, object] = {name: UNKNOWN for name in _parameters(node.args)}
        env.update(fixed or {})
        flagged: set[str] = set(asked)  # parameters a device query fills: what they hold was asked of the device
        if self.target != "cuda" and self.gates and (self._classes[-1] is None or node.name == "__init__"):
            # a parameter every call fills with a CUDA flag (a class's: every call that makes one)
            flagged |= {name for name in env if f"{node.name}({name})" in self.gates}
            env.update(dict.fromkeys(flagged, False))
        for name in env:
            if env[name] is UNKNOWN and (value := self._fixture(name)) is not UNKNOWN:
                env[name] = value
        starts = [Path({**env, **values}, queried=set(flagged)) for values in _parametrized(node, env, self._skips)]
        try:
            return self.run(node.body, starts)
        finally:
            self._classes.pop()

    def _skips(self, mark: ast.expr) -> bool:
        """Whether the mark ``mark`` (a ``pytest.param``'s) skips on this target: ``skipif(not decide_cuda())``."""
        value = self.value(mark, Path({}))
        return isinstance(value, Mark) and value.skip is True

    def _fixture(self, name: str) -> object:
        """What pytest gives a parameter ``name``: the value every path of the module's own ``@pytest.fixture``
        function of that name returns on this target (torchsnapshot's ``use_gpu``, ``return
        torch.cuda.is_available()``), else `UNKNOWN`. A fixture with ``params`` or one that yields is unknown."""
        if name not in self._fixtures:
            self._fixtures[name] = UNKNOWN  # while it is worked out (a fixture that takes itself)
            node = next((s for s in self.tree.body if isinstance(s, ast.FunctionDef) and s.name == name
                         and any(_fixture_mark(d) for d in s.decorator_list)), None)
            if node is not None and not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node)):
                self._classes.append(None)
                quiet, self._quiet = self._quiet, self._quiet + 1
                try:
                    ends = self.run(node.body, [Path({n: UNKNOWN for n in _parameters(node.args)})])
                finally:
                    self._quiet = quiet
                    self._classes.pop()
                values = {repr(p.returned) for p in ends}
                if len(values) == 1 and all(p.flow == "return" and isinstance(p.returned, (bool, str, int))
                                            for p in ends):
                    self._fixtures[name] = ends[0].returned
        return self._fixtures[name]

    def _made_integers(self) -> frozenset[int]:
        """The ids of the divisions ``int()`` is given whole (MolTrans's ``int(self.batch_size/self.gpus)``): by 0
        it raises, a number (ZeroDivisionError) or a tensor alike (``int`` of inf or nan)."""
        facts = _tree_facts(self.tree)
        if facts.integers is None:
            facts.integers = frozenset(id(n.args[0]) for n in ast.walk(self.tree) if isinstance(n, ast.Call)
                                       and isinstance(n.func, ast.Name) and n.func.id == "int" and len(n.args) == 1
                                       and isinstance(n.args[0], ast.BinOp) and isinstance(n.args[0].op, ast.Div))
        return facts.integers

    def _class_fact(self, key: str) -> object:
        """What ``self.<name>`` (``key``) holds in a method of the class being run, where every method of that
        class that sets it sets it to one value a device query decided (``self.use_gpu = torch.cuda.is_available()
        and use_gpu``), and nothing else sets it; else `UNKNOWN`."""
        cls = self._classes[-1]
        if cls is None or key.count(".") != 1 or not key.startswith("self.") or key[5:] in self._stored:
            return UNKNOWN
        if id(cls) not in self._class_facts:
            self._class_facts[id(cls)] = {}  # while it is worked out, nothing is known (a method reading it)
            self._class_facts[id(cls)] = self._attributes(cls)
        return self._class_facts[id(cls)].get(key, UNKNOWN)

    def _attributes(self, cls: ast.ClassDef) -> dict[str, object]:
        saved = (self._forks, self._touched, self._depth)
        values: dict[str, list[object]] = {}
        queried: set[str] = set()
        self._quiet += 1  # a stop on the way does not matter here: only what is bound
        try:
            for method in cls.body:
                if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _sets_self(method):
                    continue
                self._forks = 0
                made = self._made_false(method) if isinstance(method, ast.FunctionDef) and method.name == "__init__" \
                    and self.target != "cuda" else {}
                for path in self.run_alone(method, made, made):
                    for key, value in path.env.items():
                        if key.startswith("self.") and key.count(".") == 1:
                            values.setdefault(key, []).append(value)
                            if key in path.queried:
                                queried.add(key)
        finally:
            self._quiet -= 1
            self._forks, self._touched, self._depth = saved
        return {key: found[0] for key, found in values.items()
                if key in queried and found[0] is not UNKNOWN and all(v == found[0] for v in found)}

    # -- statements --------------------------------------------------------------------------------------------

    def run(self, body: Sequence[ast.stmt], paths: list[Path]) -> list[Path]:
        """Run ``body`` from each of ``paths``; the paths it ends in."""
        for stmt in body:
            live = [p for p in paths if p.stop is None and p.flow is None]
            if not live:
                break
            done = [p for p in paths if p.stop is not None or p.flow is not None]
            stepped: list[Path] = []
            for path in live:
                path.lines.add(stmt.lineno)
                stepped.extend(self.step(stmt, path))
            paths = done + stepped
        return paths

    def step(self, stmt: ast.stmt, p: Path) -> list[Path]:
        """Run one statement from path ``p``."""
        if isinstance(stmt, ast.If):
            return self._branch(stmt.test, stmt.body, stmt.orelse, p)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            iterated = self.value(stmt.iter, p)
            if p.stop:
                return [p]
            if iterated == Items(()):  # `for i in range(torch.cuda.device_count())` off CUDA
                return self.run(stmt.orelse, [p])
            self._bind(stmt.target, UNKNOWN, p)
            return self._loop(stmt.body + stmt.orelse, p)
        if isinstance(stmt, ast.While):
            test = truth(self.value(stmt.test, p))
            if p.stop or test is False:
                return self.run(stmt.orelse, [p]) if test is False and not p.stop else [p]
            return self._loop(stmt.body, p)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.value(item.context_expr, p)
                if p.stop:
                    return [p]
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, UNKNOWN, p)
            return self.run(stmt.body, [p])
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self._try(stmt, p)  # type: ignore[arg-type]
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            p.env[stmt.name] = Function(stmt)
            return [p]
        if isinstance(stmt, ast.ClassDef):  # its body runs once, in a namespace of its own
            for q in self.run(stmt.body, [p.fork()]):
                p.lines |= q.lines
            p.env[stmt.name] = UNKNOWN
            return [p]
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return [p]
        if isinstance(stmt, ast.Assign):
            value, queried = self._asking(stmt.value, p)
            for target in stmt.targets:
                self._bind(target, value, p, queried)
            return [p]
        if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            value = self.value(stmt.value, p) if stmt.value is not None else UNKNOWN
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self._bind(stmt.target, value, p)
            elif isinstance(stmt, ast.AugAssign):
                self._bind(stmt.target, UNKNOWN, p)
            return [p]
        if isinstance(stmt, ast.Expr):
            self.value(stmt.value, p)
            return [p]
        if isinstance(stmt, ast.Return):
            p.returned = self.value(stmt.value, p) if stmt.value is not None else None
            if not p.stop:
                p.flow = "return"
            return [p]
        if isinstance(stmt, ast.Assert):
            value, queried = self._asking(stmt.test, p, test=True)
            if truth(value) is False and not p.stop:
                p.stop = Stop("gate" if queried else "raise", stmt.lineno, "an assert fails")
            elif truth(value) is UNKNOWN and not p.stop and self._beyond_no_devices(stmt.test, p):
                p.stop = Stop("gate", stmt.lineno, "an assert fails: the device count it compares with is 0 here")
            return [p]
        if isinstance(stmt, ast.Raise):
            if stmt.exc is not None:
                self.value(stmt.exc, p)
            if not p.stop:
                p.stop = Stop("gate" if p.gated else "raise", stmt.lineno, "it raises")
            return [p]
        if isinstance(stmt, (ast.Break, ast.Continue)):
            p.flow = "break" if isinstance(stmt, ast.Break) else "continue"
            return [p]
        if isinstance(stmt, ast.Match):
            self.value(stmt.subject, p)
            return [q for case in stmt.cases for q in self.run(case.body, [p.fork()])] or [p]
        return [p]  # pass, global, del, ...

    def _branch(self, test: ast.expr, body: list[ast.stmt], orelse: list[ast.stmt], p: Path) -> list[Path]:
        value, by_query = self._asking(test, p, test=True)
        decided = truth(value)
        if p.stop:
            return [p]
        if decided is UNKNOWN:
            self._forks += 1
            if self._forks > _MAX_PATHS:
                return self._merge(body, orelse, p)
            taken = p.fork()
            _narrow(test, taken, p)
            return self.run(body, [taken]) + self.run(orelse, [p])
        p.gated += by_query
        out = self.run(body if decided else orelse, [p])
        # what the branch not taken would bind, a device query decided (`device = "cpu"` and `if
        # torch.cuda.is_available(): device = "cuda"`: off CUDA `device` is what the query left it)
        skipped = orelse if decided else body
        # (not one the branch binds of itself: Medical-Transformer's `model = nn.DataParallel(model).cuda()` fails
        # there too where nothing bound `model` before, on CUDA as well)
        decided_names = _assigned(skipped) - _self_bound(skipped) if by_query else set()
        for q in out:
            q.gated -= by_query
            q.queried |= decided_names
        return out

    @property
    def _stored(self) -> set[str]:
        if self._stored_names is None:
            facts = _tree_facts(self.tree)
            if facts.stored is None:
                facts.stored = _stored_elsewhere(self.tree)
            self._stored_names = facts.stored
        return self._stored_names

    def _gate(self, node: ast.expr) -> str | None:
        """The gate ``node`` names or calls (``RunIf(min_gpus=1)``, ``requires_gpu``), if it is one of ``gates``."""
        if isinstance(node, ast.Call):
            node = node.func
        key = dotted(node)
        if key is not None and isinstance(node, ast.Attribute) and key.split(".", 1)[0] in self._drivers:
            return key  # `pynvml.nvmlInit()`: a library whose import works anywhere, and whose calls need CUDA
        return key if key is not None and key in self.gates else None

    def decided(self, test: ast.expr) -> bool | None:
        """The truth of condition ``test`` of the module's top level on this target, where a device query decides
        it (``torch.cuda.is_available()``, a flag bound from one); None where none does or it is not known."""
        p = Path({})
        value, asked = self._asking(test, p, test=True)
        known = truth(value)
        return known if asked and p.stop is None and isinstance(known, bool) else None

    def _asking(self, node: ast.expr, p: Path, test: bool = False) -> tuple[object, bool]:
        """The value of ``node``, and whether a device query decided it. ``test``: it is a condition (of an
        ``if``, ``while`` or ``assert``), where a gate is a predicate."""
        outer, self._touched = self._touched, False
        self._testing += test
        try:
            value = self.value(node, p)
        finally:
            self._testing -= test
        asked = self._touched
        self._touched = outer or asked
        return value, asked and value is not UNKNOWN

    def _merge(self, body: list[ast.stmt], orelse: list[ast.stmt], p: Path) -> list[Path]:
        # too many paths: both branches run, and what they bind is joined; where every end of both stops off CUDA
        # (NeuralKG's `if args.model_name == "IterE": Trainer(gpus="0,") else: Trainer(gpus="0,")`), so does the path
        ends = self.run(body, [p.fork()]) + self.run(orelse, [p.fork()])
        stops = [q.stop for q in ends if q.stop is not None and q.stop.kind == "cuda"]
        if ends and len(stops) == len(ends) and not self._quiet:
            self._end(min(stops, key=lambda stop: stop.line), p)
        for q in ends:  # the join reads every end, as when both branches ran quietly
            q.stop = None
        merged = _merged(ends)
        p.env = {**p.env, **merged}
        for q in ends:
            p.lines |= q.lines
        return [p]

    def _loop(self, body: list[ast.stmt], p: Path) -> list[Path]:
        # the body runs once here, but may run any number of times: a list it grows has no known length in it
        # (AIPolicy's `tokens.append(line)`, then `elif len(tokens) > 0:` on a later line) nor after it (NPTM's
        # `cfg.append(num_keep)` per layer, then `assert len(cfg) == 16`)
        if body and id(body[0]) not in self._grown:  # read once per loop, not each time a path runs it
            self._grown[id(body[0])] = frozenset(
                key for statement in body for node in ast.walk(statement) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWERS
                and (key := dotted(node.func.value)) is not None)
        grown = self._grown.get(id(body[0]), frozenset()) if body else frozenset()
        for key in grown:
            if isinstance(p.env.get(key), Items):
                p.env[key] = UNKNOWN
        self._growing.append(grown)
        try:
            out = self.run(body, [p])
        finally:
            self._growing.pop()
        for q in out:
            if q.flow in ("break", "continue"):
                q.flow = None
            for key in grown:
                if isinstance(q.env.get(key), Items):
                    q.env[key] = UNKNOWN
        return out

    def _try(self, stmt: ast.Try, p: Path) -> list[Path]:
        if self.target != "cuda" and (missing := self._missing_library(stmt)) is not None:
            at, handler = missing  # off CUDA a CUDA-only library is not installed: its import raises
            out: list[Path] = []
            for q in self.run(stmt.body[:at], [p]):
                out.extend(self.run(handler.body, [q]) if q.stop is None and q.flow is None else [q])
            return self.run(stmt.finalbody, out) if stmt.finalbody else out
        caught = set().union(*(_names(h.type) if h.type is not None else {"BaseException"} for h in stmt.handlers))
        catches = bool(caught & torch_facts.CATCHES_CUDA_ERRORS)
        out = []
        for q in self.run(stmt.body, [p]):
            if q.stop is not None and q.stop.kind == "cuda" and (catches if not q.stop.error else any(
                    _catches(name, q.stop.error) for name in caught)):
                q.stop = None
                out.extend(self.run(stmt.handlers[0].body, [q]))
            elif q.stop is None and q.flow is None:
                out.extend(self.run(stmt.orelse, [q]))
            else:
                out.append(q)
        return self.run(stmt.finalbody, out) if stmt.finalbody else out

    @staticmethod
    def _missing_library(stmt: ast.Try) -> tuple[int, ast.ExceptHandler] | None:
        """Where ``stmt``'s body imports a CUDA-only library (BiSeNet's ``from apex import amp, parallel``) and the
        handler that catches its ImportError, or None."""
        handler = next((h for h in stmt.handlers if h.type is None or _names(h.type) & _IMPORT_ERRORS), None)
        at = next((i for i, s in enumerate(stmt.body) if isinstance(s, ast.Import) and any(
            torch_facts.cuda_library(a.name) for a in s.names) or isinstance(s, ast.ImportFrom) and not s.level
            and s.module and torch_facts.cuda_library(s.module)), None)
        return None if handler is None or at is None else (at, handler)

    def _bind(self, target: ast.expr, value: object, p: Path, queried: bool = False) -> None:
        key = dotted(target)
        if key is not None:
            p.env[key] = value
            if queried:
                p.queried.add(key)
            else:
                p.queried.discard(key)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.values if isinstance(value, Items) and len(value.values) == len(target.elts) else None
            for i, element in enumerate(target.elts):
                self._bind(element, values[i] if values else UNKNOWN, p)

    # -- expressions -------------------------------------------------------------------------------------------

    def value(self, node: ast.expr | None, p: Path) -> object:
        """The value of ``node`` on path ``p``; a call that needs CUDA off CUDA stops ``p``."""
        if node is None or p.stop is not None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._name(node, p)
        if isinstance(node, ast.Call):
            return self._call(node, p)
        if isinstance(node, ast.JoinedStr):
            return self._fstring(node, p)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, p)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand, p)
            if isinstance(node.op, ast.Not):
                known = truth(operand)
                return UNKNOWN if known is UNKNOWN else not known
            return UNKNOWN
        if isinstance(node, ast.Compare):
            return self._compare(node, p)
        if isinstance(node, ast.IfExp):
            decided = truth(self.value(node.test, p))
            if decided is UNKNOWN:
                self.taken.update({_span(node.body): True, _span(node.orelse): True})
                self._quiet += 1
                try:
                    a, b = self.value(node.body, p), self.value(node.orelse, p)
                finally:
                    self._quiet -= 1
                if a == b or (isinstance(a, Name) and isinstance(b, Name) and _cuda_tensor_type(a.qualified)
                              and _cuda_tensor_type(b.qualified)):
                    return a  # YOLOX's `torch.cuda.HalfTensor if half else torch.cuda.FloatTensor`: CUDA's either way
                return UNKNOWN
            chosen, other = (node.body, node.orelse) if decided else (node.orelse, node.body)
            self.taken[_span(chosen)] = True
            self.taken.setdefault(_span(other), False)
            return self.value(chosen, p)
        if isinstance(node, ast.BinOp):
            return self._binop(node, p)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):  # a set for `in` (llm.c's `device_type in {'cuda'}`)
            return Items(tuple(self.value(e, p) for e in node.elts))
        if isinstance(node, ast.NamedExpr):
            value = self.value(node.value, p)
            self._bind(node.target, value, p)
            return value
        if isinstance(node, ast.Subscript):
            base, queried = self._asking(node.value, p)
            self.value(node.slice, p)
            if base is None and queried:  # PatchTST's `get_available_cuda()[0]`, None without CUDA
                self._end(Stop("gate", node.lineno, f"`{ast.unparse(node.value)}` is None without CUDA"), p)
            elif base == {} and queried and isinstance(node.slice, ast.Constant):
                # distributed-training-guide's `mem = torch.cuda.memory_stats(device)`, then
                # `mem["allocated_bytes.all.current"]`: no counter is there without CUDA
                return self._needs_cuda(node, f"`{ast.unparse(node.value)}` holds no counters without CUDA", p,
                                        error="KeyError")
            elif base == Items(()) and queried and not isinstance(node.slice, ast.Slice):
                # dgNN's `GPUtil.getGPUs()[args.gpu]`: the list of NVIDIA's GPUs is empty off CUDA
                return self._needs_cuda(node, f"`{ast.unparse(node.value)}` is empty without NVIDIA's driver", p,
                                        error="IndexError")
            return UNKNOWN
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return UNKNOWN  # run later, if ever
        for child in ast.iter_child_nodes(node):  # dicts, sets, awaits, ...: their parts still run
            if isinstance(child, ast.expr):
                self.value(child, p)
        return UNKNOWN

    def _name(self, node: ast.Name | ast.Attribute, p: Path) -> object:
        key = dotted(node)
        if key is not None:
            for env, queried in ((p.env, p.queried), (self.globals, self.globals_queried),
                                 (self._module_env, self.globals_queried)):
                if key in env:
                    self._touched |= key in queried
                    return env[key]
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return Name(self.imports[node.id])
            if node.id in p.queried and isinstance(node.ctx, ast.Load):
                # bound only in the branch a device query did not take (bayesian-torch's `ngpus_per_node`, set
                # under `if torch.cuda.is_available():` alone): reading it raises NameError here
                self._end(Stop("gate", node.lineno, f"`{node.id}` is bound only where a device query is true: "
                                                    "reading it raises NameError"), p)
            return Name(node.id) if node.id in _BUILTINS else UNKNOWN
        if key is not None and (fact := self._class_fact(key)) is not UNKNOWN:
            self._touched = True
            return fact
        base = self.value(node.value, p)
        if node.attr in torch_facts.ON_CUDA_FLAGS and node.attr not in self._stored and self.target != "cuda":
            self._touched = True
            return False  # no data is on CUDA where there is none
        if node.attr == "type" and base is UNKNOWN and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "device" and self.target != "cuda":
            self._touched = True
            return NOT_CUDA  # `p.device.type` of data: no data is on CUDA where there is none
        if f".{node.attr}" in self.gates and node.attr not in self._stored and self.target != "cuda" and \
                not isinstance(base, Name):  # a flag `args.cuda`, not the module `torch.cuda`
            self._touched = True
            return False  # a flag every module sets from a device query (`args.use_gpu = cuda and args.use_gpu`)
        if base is _PARSED and self.options is not None:
            option = self.options.get(node.attr, UNKNOWN)
            return self.value(option, p) if isinstance(option, ast.expr) else option
        if isinstance(base, Name):
            return Name(f"{base.qualified}.{node.attr}")
        if isinstance(base, Device) and node.attr == "type":
            return base.type
        if isinstance(base, Device) and node.attr == "index":
            return base.index
        return UNKNOWN

    def _fstring(self, node: ast.JoinedStr, p: Path) -> object:
        text, known = "", True
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text += part.value if known else ""
            elif isinstance(part, ast.FormattedValue):
                value = self.value(part.value, p)
                if known and isinstance(value, (str, int)) and part.format_spec is None and part.conversion == -1:
                    text += str(value)
                elif known and isinstance(value, Device) and part.format_spec is None:
                    text += value.type if value.index is None else f"{value.type}:{value.index}"
                else:
                    known = False
        return text if known else Prefix(text)

    def _boolop(self, node: ast.BoolOp, p: Path) -> object:
        is_and = isinstance(node.op, ast.And)
        result: object = UNKNOWN
        undecided = False
        for i, operand in enumerate(node.values):
            if undecided:
                self._quiet += 1
            try:
                result = self.value(operand, p)
            finally:
                if undecided:
                    self._quiet -= 1
            known = truth(result)
            if known is UNKNOWN:
                undecided = True
            elif known is (not is_and) and not undecided:
                return result  # short-circuit: the rest does not run
            elif known is (not is_and):
                # `not args.no_cuda and torch.cuda.is_available()` off CUDA: falsy whatever came before
                return False if is_and else UNKNOWN if i else result
        return UNKNOWN if undecided else result

    def _beyond_no_devices(self, test: ast.expr, p: Path) -> bool:
        """``n <= torch.cuda.device_count()`` (or ``<``, or mirrored) where the count is 0 here: a count or rank
        ``n`` the model cannot read is at least 0, and one GPU at least is what such an assert asks for."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return False
        op = test.ops[0]
        count, other = (test.comparators[0], test.left) if isinstance(op, (ast.Lt, ast.LtE)) else (
            test.left, test.comparators[0]) if isinstance(op, (ast.Gt, ast.GtE)) else (None, None)
        if not isinstance(count, ast.Call):
            return False
        if isinstance(op, (ast.LtE, ast.GtE)) and not self._a_parameter(other, test.lineno):
            return False  # YOLOX's eval: `num_gpu = torch.cuda.device_count() if ... else args.devices` may be 0
        value = self.value(count, p)
        return isinstance(value, int) and not isinstance(value, bool) and value == 0

    def _a_parameter(self, node: ast.expr | None, line: int) -> bool:
        """Whether ``node`` is a parameter of a function around ``line``: a count its callers give."""
        return isinstance(node, ast.Name) and any(
            isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.lineno <= line <= (f.end_lineno or 0)
            and node.id in _parameters(f.args) for f in ast.walk(self.tree))

    def _compare(self, node: ast.Compare, p: Path) -> object:
        left = self.value(node.left, p)
        left_node = node.left
        result: object = True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node, p)
            left, right = self._data_device(left_node, left, right), self._data_device(right_node, right, left)
            left_node = right_node
            outcome = _compare(op, left, right)
            if outcome is False:
                return False
            if outcome is UNKNOWN:
                result = UNKNOWN
            left = right
        return result

    def _data_device(self, node: ast.expr, value: object, other: object) -> object:
        """``x.device`` of data compared with a CUDA ``torch.device`` (``other``), off CUDA: not CUDA's (tgm's
        ``assert dg.device == torch.device('cuda')`` after ``dg.to('cuda')`` fails where the move went to another
        device). A setting compared with a string (``cfg.device == "cuda"``) is no data's device."""
        if value is UNKNOWN and isinstance(node, ast.Attribute) and node.attr == "device" and \
                isinstance(other, Device) and other.type == "cuda" and \
                self.target != "cuda" and "device" not in self._stored:
            self._touched = True
            return NOT_CUDA
        return value

    def _binop(self, node: ast.BinOp, p: Path) -> object:
        left = self.value(node.left, p)
        right, counted = self._asking(node.right, p)  # counted: a device query gave the divisor
        if isinstance(node.op, ast.Add) and isinstance(left, str):
            return left + right if isinstance(right, str) else Prefix(left)
        if isinstance(node.op, ast.Add) and isinstance(left, Prefix):
            return left
        if isinstance(node.op, ast.Mod) and isinstance(left, str):
            return Prefix(left.split("%", 1)[0])
        if isinstance(node.op, (ast.BitAnd, ast.BitOr)) and (left is not UNKNOWN or right is not UNKNOWN):
            # flags joined bitwise (`is_cuda & config.cuda`): a False one decides `&`, a True one `|`
            decides = isinstance(node.op, ast.BitOr)
            if decides in (left, right) and all(isinstance(v, bool) or v is UNKNOWN for v in (left, right)):
                return decides
            if isinstance(left, bool) and isinstance(right, bool):
                return (left | right) if decides else (left & right)
        if isinstance(left, int) and isinstance(right, int) and not isinstance(left, bool):
            ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__}
            operation = ops.get(type(node.op))
            if operation is not None:
                return operation(left, right)
        if right == 0 and counted and not isinstance(right, bool) and (
                isinstance(node.op, (ast.Mod, ast.FloorDiv)) and (left is INDEX or left is UNKNOWN or isinstance(
                    left, int)) or isinstance(node.op, ast.Div) and (isinstance(left, int | float) or (
                    left is UNKNOWN and (_numeric(node.left) or id(node) in self._made_integers())))):
            # integer arithmetic on a device count (ResShift's `batch[0] // self.num_gpus`), or a number divided by
            # it (DoLipReading's `lr = args.batch_size / 32.0 / torch.cuda.device_count() * args.lr`):
            # ZeroDivisionError
            self._needs_cuda(node, "it divides by a device count of 0", p)
            return UNKNOWN
        if isinstance(node.op, (ast.Mod, ast.FloorDiv, ast.Add, ast.Mult)) and INDEX in (left, right) and all(
                v is INDEX or (isinstance(v, int) and not isinstance(v, bool)) for v in (left, right)):
            return INDEX
        return UNKNOWN

    # -- calls -------------------------------------------------------------------------------------------------

    def _call(self, node: ast.Call, p: Path) -> object:
        function = self.value(node.func, p) if not isinstance(node.func, ast.Attribute) else UNKNOWN
        receiver: object = UNKNOWN
        if isinstance(node.func, ast.Attribute):
            receiver = self.value(node.func.value, p)
            function = self._name(node.func, p) if isinstance(receiver, Name) else UNKNOWN
        condition = isinstance(function, Name) and function.qualified in torch_facts.SKIP_IF
        self._testing += condition  # `skipif(not decide_cuda())`: a skip's condition, where a gate is a predicate
        try:
            args = [self.value(a.value if isinstance(a, ast.Starred) else a, p) for a in node.args]
        finally:
            self._testing -= condition
        keywords = {k.arg: self.value(k.value, p) for k in node.keywords}
        if p.stop:
            return UNKNOWN
        if self.target != "cuda" and (option := next(((k, v, library) for k, v in keywords.items()
                                                      if (library := torch_facts.cuda_library_option(k, v))), None)):
            keyword, value, library = option
            given = next(k for k in node.keywords if k.arg == keyword)  # its line, where a call spans several
            return self._needs_cuda(given, f"`{keyword}={value!r}` loads through {library}, which needs CUDA", p)
        if self.target != "cuda" and (gate := self._gate(node)) is not None:
            if self._testing:
                self._touched = True
                return False  # a predicate of CUDA: false where there is none
            return self._needs_cuda(node, f"`{gate}()` needs CUDA", p)
        if (method := self._own_method(node.func)) is not None:
            return self._call_function(method, node, [UNKNOWN, *args], keywords, p)
        if function is UNKNOWN and isinstance(node.func, ast.Name) and (init := self._constructor(node.func.id)):
            self._construct(init, node, args, keywords, p)
        if isinstance(function, Name):
            return self._call_name(function.qualified, node, args, keywords, p)
        if isinstance(function, Function):
            self._placement(node, keywords, p)  # a `device=` is a device, whoever takes it
            return self._call_function(function.node, node, args, keywords, p) if not p.stop else UNKNOWN
        if isinstance(function, Mark):
            return function
        if isinstance(node.func, ast.Attribute):
            return self._method(node.func.attr, node, receiver, args, keywords, p)
        self._placement(node, keywords, p)
        return UNKNOWN

    def _constructor(self, name: str) -> ast.FunctionDef | None:
        """The ``__init__`` of the module's own top-level class ``name``, in a module nothing imports (``own``: a
        notebook, a script), where the module binds ``name`` by that class alone (no assignment rebinds it)."""
        if not self.own:
            return None
        if self._inits is None:
            stored = {n.id for s in self.tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                         ast.ClassDef))
                      for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            classes = [s for s in self.tree.body if isinstance(s, ast.ClassDef)]
            names = Counter(c.name for c in classes)
            self._inits = {c.name: init for c in classes if names[c.name] == 1 and c.name not in stored
                           and (init := next((f for f in c.body if isinstance(f, ast.FunctionDef)
                                              and f.name == "__init__"), None)) is not None}
        return self._inits.get(name)

    def _construct(self, init: ast.FunctionDef, node: ast.Call, args: list[object],
                   keywords: dict[str | None, object], p: Path) -> None:
        """Record what a call making the module's own class gives its ``__init__``: the parameters it fills with
        False from a device query (``MC_drop_net(..., cuda=use_cuda)`` after ``use_cuda =
        torch.cuda.is_available()``), read by `_attributes`."""
        positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
        given = [*zip(positional, node.args), *((k.arg, k.value) for k in node.keywords if k.arg)]
        values = {**dict(zip(positional, args)), **{k: v for k, v in keywords.items() if k is not None}}
        asked = {name for name, expr in given if isinstance(expr, ast.Name)
                 and (expr.id in p.queried or expr.id in self.globals_queried)}
        self._made.setdefault(id(init), {})[id(node)] = {
            name: value is False and name in asked for name, value in values.items()}

    def _made_false(self, init: ast.FunctionDef) -> dict[str, object]:
        """The parameters of a class's ``__init__`` that every call making it, anywhere the module runs, fills with
        False from a device query; none where the class is named other than to be called (outside its own body)."""
        made = self._made.get(id(init))
        cls = self._methods.get(id(init))
        if not made or cls is None:
            return {}
        self._name_index()
        assert self._named is not None
        inside = range(cls.lineno, (cls.end_lineno or cls.lineno) + 1)  # `super(Net, self)` names it
        if any(id(n) not in self._called and n.lineno not in inside for n in self._named.get(cls.name, ())
               if isinstance(n, ast.Name)):
            return {}
        names = set.intersection(*(set(values) for values in made.values()))
        return {name: False for name in names if all(values[name] for values in made.values())}

    def _own_method(self, func: ast.expr) -> ast.FunctionDef | None:
        """The method ``self.<name>`` calls, where the class being run defines it, undecorated."""
        cls = self._classes[-1]
        if cls is None or not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                               and func.value.id == "self"):
            return None
        return next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == func.attr
                     and not m.decorator_list and m.args.args), None)

    def _call_name(self, name: str, node: ast.Call, args: list[object], keywords: dict[str | None, object],
                   p: Path) -> object:
        answer = torch_facts.query(name, self.target)
        if answer is not UNKNOWN or name.endswith(("device_count", "is_available")):
            self._touched = True
            return answer
        if name in torch_facts.ENV_READS and args and args[0] in torch_facts.CUDA_ENV and self.target != "cuda":
            self._touched = True  # a device query: off CUDA the variable is not set
            return args[1] if len(args) > 1 else keywords.get("default")
        if name.startswith("torch.cuda.") and name[len("torch.cuda."):] in torch_facts.RAISES_OFF_CUDA:
            return self._needs_cuda(node, f"`{name}()` raises without CUDA", p)
        if name == "torch.device":
            return _device(args[0] if args else keywords.get("type"), args[1] if len(args) > 1 else None)
        if name.endswith("init_process_group") or name == "deepspeed.init_distributed":
            backend = args[0] if args else keywords.get("backend", keywords.get("dist_backend"))
            if backend in torch_facts.CUDA_BACKENDS:
                return self._needs_cuda(node, f"the {backend} backend needs CUDA", p)
            written = node.args[0] if node.args else next((k.value for k in node.keywords
                                                           if k.arg in ("backend", "dist_backend")), None)
            # only a fallback whose every constant is a CUDA backend (`backend or 'nccl'`), not a choice between
            # backends the evaluation cannot settle (`"gloo" if sys.platform == "darwin" else "nccl"`)
            named = None
            if isinstance(written, ast.BoolOp) and all(n.value in torch_facts.CUDA_BACKENDS for n in ast.walk(written)
                                                       if isinstance(n, ast.Constant)):
                named = next((str(n.value) for n in written.values if isinstance(n, ast.Constant)), None)
            if backend is UNKNOWN and named is not None:  # NaturalSpeech2's `backend=dist_backend or 'nccl'`
                return self._needs_cuda(node, f"the {named} backend it may be given needs CUDA", p)
            p.env[_GROUP] = True
        if name in torch_facts.GROUP_CUDA_LAYERS and self.target in ("cpu", "mps") and (
                p.env.get(_GROUP) or self.globals.get(_GROUP)):
            return self._needs_cuda(node, "SyncBatchNorm in a process group trains on CUDA input only", p)
        if name in _DRIVER_CALLS and self.target != "cuda":
            return self._needs_cuda(node, f"`{name}()` raises without NVIDIA's driver", p)
        if name in _NEEDS_GPU and self.target in ("cpu", "mps"):
            return self._needs_cuda(node, f"`{name}()` raises without a GPU", p)
        if name in _GPUS_TRAINERS and (asked := gpus_asked(node)) is not None:
            return self._needs_cuda(node, f"Lightning asks CUDA for `gpus={ast.unparse(asked)}`", p)
        if name in _PROCESS_RUNNERS and self.target != "cuda" and (tool := _nvidia_tool(name, args, keywords)):
            return self._needs_cuda(node, f"running {tool} raises where NVIDIA's driver is not installed", p)
        if name in _CLI_RUNNERS and args and isinstance(args[0], Function):  # `CLI(main)`: main, with its defaults
            return self._call_function(args[0].node, node, [], {}, p)
        if name in _SPAWNERS and args and isinstance(args[0], Function):  # each process runs `fn(i, *args)`
            given = args[1] if len(args) > 1 else keywords.get("args", Items(()))
            count = args[2] if len(args) > 2 else keywords.get("nprocs", 1)
            counted = node.args[2] if len(node.args) > 2 else next(
                (k.value for k in node.keywords if k.arg == "nprocs"), None)
            if count == 0 and counted is not None and self._asking(counted, p)[1]:
                # `nprocs=torch.cuda.device_count()`: none starts off CUDA, and the work they do is not done
                # (CCT's make_cam writes no CAMs, and the next step fails on their absence)
                return self._needs_cuda(node, "it starts no process: the count of CUDA devices it is given is 0", p)
            if isinstance(given, Items) and count != 0:
                self._call_function(args[0].node, node, [0, *given.values], {}, p)
            return UNKNOWN
        if name in torch_facts.EXITS:
            self._end(Stop("gate" if p.gated else "exit", node.lineno, "it exits"), p)
            return UNKNOWN
        if name in torch_facts.SKIPS:
            self._end(Stop("gate" if p.gated else "skip", node.lineno, "it skips"), p)
            return UNKNOWN
        if name in torch_facts.SKIP_IF:  # unittest's `skipUnless(condition=..., reason=...)` names it too
            skip = truth(args[0]) if args else truth(keywords["condition"]) if "condition" in keywords else UNKNOWN
            if torch_facts.SKIP_IF[name] and skip is not UNKNOWN:
                skip = not skip
            return Mark(skip)
        if name in torch_facts.SKIP_ALWAYS:
            return Mark(True)
        if name in torch_facts.SKIP_BELOW_GPUS:  # a CUDA device count below the one given: none off CUDA
            return Mark(True if self.target != "cuda" else UNKNOWN)
        kinds = (args[1].values if isinstance(args[1], Items) else (args[1],)) if len(args) == 2 else ()
        if name == "isinstance" and kinds and self.target != "cuda" and all(
                isinstance(kind, Name) and _cuda_tensor_type(kind.qualified) for kind in kinds):
            self._touched = True
            return False  # no tensor is of a CUDA tensor type where there is no CUDA
        made = node.args[0] if len(node.args) == 1 else None
        if name in ("any", "all") and isinstance(made, (ast.GeneratorExp, ast.ListComp)):
            return self._each(made, p)
        if name in ("any", "all") and args and isinstance(args[0], Items):
            known = [truth(v) for v in args[0].values]
            wanted = name == "any"
            if wanted in known:
                return wanted
            return UNKNOWN if UNKNOWN in known else not wanted
        if name == "len" and args and isinstance(args[0], Items):
            return len(args[0].values)
        if name in ("range", "list", "tuple"):
            one = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            if one and name == "range" and type(args[0]) is int and args[0] <= _RANGE:
                return Items(tuple(range(args[0])))  # `range(torch.cuda.device_count())`: empty off CUDA
            return args[0] if one and name != "range" and isinstance(args[0], Items) else UNKNOWN
        if name in ("str", "int", "bool") and args and isinstance(args[0], (str, int, bool)):
            try:
                return {"str": str, "int": int, "bool": bool}[name](args[0])
            except ValueError:
                return UNKNOWN
        if name == "int" or name in torch_facts.RANKS:
            return INDEX
        if name in torch_facts.WORLD_SIZES:
            return COUNT
        if name in ("torch.autocast", "torch.amp.autocast") or "GradScaler" in name:
            return UNKNOWN  # device= there labels, it does not place
        self._placement(node, keywords, p)
        if not name.startswith(("torch.", "logging.")) and name.rsplit(".", 1)[-1] not in torch_facts.TEXT_CALLS:
            self._passes_cuda(node, name, p)
        return UNKNOWN

    def _method(self, method: str, node: ast.Call, receiver: object, args: list[object],
                keywords: dict[str | None, object], p: Path) -> object:
        if method in ("parse_args", "parse_known_args") and self.options and not node.args and not node.keywords:
            return _PARSED if method == "parse_args" else Items((_PARSED, UNKNOWN))
        if method == "cuda":
            if self._holds_nothing(node.func.value, p) or self._own_object(node.func.value):  # type: ignore[attr-defined]
                return UNKNOWN
            return self._needs_cuda(node, "`.cuda()` needs CUDA", p)
        if method in _EXIT_METHODS and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "self":  # a test's `self.skipTest(...)`, `self.fail(...)`
            self._end(Stop("gate" if p.gated else "skip", node.lineno, "it skips"), p)
            return UNKNOWN
        if method == "to":
            value = args[0] if args else keywords.get("device")
            self._place(node, value, f"`.to({_show(value)})`", p)
            return UNKNOWN
        if method == "type" and args and isinstance(args[0], Name) and _cuda_tensor_type(args[0].qualified):
            return self._needs_cuda(node, f"`.type({args[0].qualified})` needs CUDA", p)
        if method == "format" and isinstance(receiver, str):
            known = [*args, *keywords.values()]
            if all(isinstance(v, (str, int)) for v in known) and None not in keywords:
                try:
                    return receiver.format(*args, **keywords)  # type: ignore[arg-type]
                except (IndexError, KeyError, ValueError):
                    return UNKNOWN
            return Prefix(receiver.split("{", 1)[0])
        key = dotted(node.func.value) if method == "append" and isinstance(node.func, ast.Attribute) else None
        if method == "append" and isinstance(node.func, ast.Attribute) and (
                isinstance(receiver, Items) or any(key in grown for grown in self._growing)):
            if self.target != "cuda" and p.gated and args and isinstance(args[0], str) and \
                    torch_facts.CUDA_SPEC.fullmatch(args[0]):  # fairscale's `devices.append("cuda")` under a query
                return self._needs_cuda(node, f"a list of devices gets {args[0]!r} where a device query chose", p)
            if key is not None and args and isinstance(receiver, Items):
                p.env[key] = Items((*receiver.values, args[0]))
            return None
        self._placement(node, keywords, p)
        if method not in torch_facts.TEXT_CALLS and not isinstance(receiver, (str, Prefix, Name)):
            self._passes_cuda(node, method, p)
        return UNKNOWN

    def _each(self, made: ast.GeneratorExp | ast.ListComp, p: Path) -> object:
        """``any``/``all`` of ``made`` where a device query decides its element alike for every item
        (``all(g["params"][0].device.type == "cuda" for g in groups)`` off CUDA: False), else `UNKNOWN`; it takes at
        least one item."""
        self.value(made.generators[0].iter, p)
        q = p.fork()
        for generator in made.generators:
            self._bind(generator.target, UNKNOWN, q)
        touched, self._touched = self._touched, False
        self._quiet += 1
        try:
            element = truth(self.value(made.elt, q))
        finally:
            self._quiet -= 1
            asked, self._touched = self._touched, touched or self._touched
        return element if asked and element is not UNKNOWN else UNKNOWN

    def _own_object(self, receiver: ast.expr) -> bool:
        """Whether ``receiver`` is ``self.x`` holding an object of a class that moves itself its own way, which a
        caller passed (`torchport.model.objects.own_parameter`), or a name the module binds to one: its ``.cuda()``
        is that class's own."""
        cls = self._classes[-1]
        if self._own_classes is None:
            self._own_classes = frozenset(own_device_classes(self.tree)) | {
                g[: -len(".cuda")] for g in self.gates if g.endswith(".cuda") and "(" not in g}
        if isinstance(receiver, ast.Name) and self._own_classes:
            # DeepRule's test_chart.py: `nnet = NetworkFactory(db)`, then `nnet.cuda()`, the project class's own
            if self._own_names is None:
                self._own_names = frozenset(t.id for node in ast.walk(self.tree) if isinstance(node, ast.Assign)
                                            and isinstance(node.value, ast.Call)
                                            and ast.unparse(node.value.func) in self._own_classes
                                            for t in node.targets if isinstance(t, ast.Name))
            return receiver.id in self._own_names
        if cls is None or not (isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name)
                               and receiver.value.id == "self"):
            return False
        return own_parameter(cls, receiver.attr, self.gates) is not None or any(
            isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) in self._own_classes
            and any(ast.unparse(t) == f"self.{receiver.attr}" for t in node.targets) for node in ast.walk(cls))

    def _holds_nothing(self, made: ast.expr, p: Path) -> bool:
        """Whether ``made`` builds a torch module that holds no tensor (`torch_facts.HOLDS_NOTHING`, from constants:
        ``nn.CrossEntropyLoss(reduction="none")``): its ``.cuda()`` moves nothing, and works without CUDA."""
        if not (isinstance(made, ast.Call) and isinstance(made.func, (ast.Name, ast.Attribute))) or not all(
                literal(a) for a in (*made.args, *(k.value for k in made.keywords))):
            return False
        function = self._name(made.func, p)
        return isinstance(function, Name) and function.qualified in torch_facts.HOLDS_NOTHING

    def _passes_cuda(self, node: ast.Call, callee: str, p: Path) -> None:
        """A CUDA device written as a positional argument of a call the model cannot follow
        (``model.sample(64, "cuda")``): the callee gets CUDA's device, so off CUDA the path still needs it."""
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and torch_facts.CUDA_SPEC.fullmatch(
                    arg.value):
                self._needs_cuda(node, f"`{callee}()` is given {arg.value!r}", p)
                return

    def _placement(self, node: ast.Call, keywords: dict[str | None, object], p: Path) -> None:
        for keyword in torch_facts.ACCELERATOR_KEYWORDS:
            if keywords.get(keyword) in torch_facts.CUDA_ACCELERATORS and not (
                    self.target == "mps" and keywords.get(keyword) in torch_facts.ANY_GPU_ACCELERATORS):
                wanted = "GPU: CUDA or MPS" if keywords[keyword] in torch_facts.ANY_GPU_ACCELERATORS else "CUDA GPU"
                self._needs_cuda(node, f"`{keyword}={keywords[keyword]!r}` asks for a {wanted}", p)
                return
        for keyword in (*torch_facts.PLACEMENT_KEYWORDS, *torch_facts.LIBRARY_PLACEMENT_KEYWORDS):
            if keyword in keywords and self._place(node, keywords[keyword], f"`{keyword}={_show(keywords[keyword])}`",
                                                   p):  # `from_pretrained(..., device_map="cuda")` too (llm.c)
                return

    def _place(self, node: ast.AST, value: object, what: str, p: Path) -> bool:
        """Data placed on ``value``: a CUDA device stops the path off CUDA, an index (the current accelerator's)
        on the CPU. Whether it stopped."""
        kind = device_type(value)
        # an index is the current accelerator's: the CPU has none, and no process group takes MPS tensors
        if kind == "cuda" or (kind == "index" and (self.target == "cpu" or (
                self.target == "mps" and (p.env.get(_GROUP) or self.globals.get(_GROUP))))):
            where = "CUDA" if kind == "cuda" else "an accelerator"
            self._needs_cuda(node, f"{what} places data on {where}", p)
            return p.stop is not None
        return False

    def _call_function(self, function: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call,
                       args: list[object], keywords: dict[str | None, object], p: Path) -> object:
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        self._filled.setdefault(id(function), {})[id(node)] = {
            **{name: value for name, value in zip(positional, args, strict=False)},
            **{name: value for name, value in keywords.items() if name is not None}}
        if self._depth >= _MAX_DEPTH or id(function) in self._calling or isinstance(function, ast.AsyncFunctionDef):
            return UNKNOWN
        carried = _carried_options(function, node, args, p)
        key = self._call_key(function, args, keywords, p)
        key = key and (*key, tuple(sorted(carried.items(), key=lambda kv: kv[0])))
        known = self._calls.get(key) if key is not None else None
        if known is not None and self._forks + known.forks <= _MAX_PATHS:  # the same evaluation, without a merge
            self._forks += known.forks
            self._touched |= known.touched
        else:
            known = self._evaluate_call(function, args, keywords, p, carried)
            if key is not None and self._forks <= _MAX_PATHS:  # no merge of paths past the budget in it
                self._calls[key] = known
        if known.grouped:
            p.env[_GROUP] = True  # `setup()` made the process group
        if known.stop is None:
            return known.returned
        first = known.stop
        self._end(Stop(first.kind, node.lineno, f"`{function.name}()` stops at line {first.line}: "
                                                f"{first.message}", first.origin or first.line, first.error), p)
        return UNKNOWN

    def _call_key(self, function: ast.FunctionDef, args: list[object], keywords: dict[str | None, object],
                  p: Path) -> tuple[object, ...] | None:
        """What an evaluation of a call of ``function`` depends on; None where an argument cannot be a key."""
        key = (id(function), tuple((type(a), a) for a in args),
               tuple(sorted(((str(k), type(v), v) for k, v in keywords.items()), key=lambda kv: kv[0])),
               p.gated, self._depth, self._quiet > 0, frozenset(self._calling), bool(p.env.get(_GROUP)))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _evaluate_call(self, function: ast.FunctionDef, args: list[object], keywords: dict[str | None, object],
                       p: Path, carried: Mapping[str, object] = {}) -> _Call:  # noqa: B006 - never changed
        """Run ``function``'s body with its arguments bound (and ``carried``, the options the caller set on the
        parsed arguments it passes): where every path stops, or what they return, with the forks it made and
        whether it answered a device query."""
        env = {**_bind_arguments(function.args, args, keywords, self, p), **carried}
        outer = self._module_env
        if self._depth == 0 and self._in_module:
            self._module_env = p.env
        if p.env.get(_GROUP):  # a group the caller made is there for what the function builds
            env[_GROUP] = True
        forks, touched = self._forks, self._touched
        self._touched = False
        self._depth += 1
        self._calling.add(id(function))
        self._classes.append(self._methods.get(id(function)))
        try:
            ends = self.run(function.body, [Path(env, gated=p.gated)])
        finally:
            self._module_env = outer
            self._depth -= 1
            self._calling.discard(id(function))
            self._classes.pop()
            asked, self._touched = self._touched, touched or self._touched
        stops = [q.stop for q in ends if not q.clean]
        if ends and len(stops) == len(ends) and stops[0] is not None:
            return _Call(UNKNOWN, stops[0], self._forks - forks, asked)
        returned = [q.returned for q in ends if q.clean and q.stop is None]
        grouped = not p.env.get(_GROUP) and any(q.env.get(_GROUP) for q in ends if q.clean and q.stop is None)
        return _Call(returned[0] if returned and all(r == returned[0] for r in returned) else UNKNOWN, None,
                     self._forks - forks, asked, grouped)

    def _needs_cuda(self, node: ast.AST, message: str, p: Path, error: str = "") -> object:
        if self.target != "cuda" and getattr(node, "lineno", 0) not in self.exempt:
            self._end(Stop("cuda", getattr(node, "lineno", 0), message, error=error), p)
        return UNKNOWN

    def _end(self, stop: Stop, p: Path) -> None:
        if not self._quiet and p.stop is None:
            p.stop = stop


_GROWERS = frozenset(torch_facts.words("list_grower"))


def _catches(handled: str, error: str) -> bool:
    """Whether a handler of builtin exception ``handled`` catches builtin ``error`` (``LookupError`` an
    ``IndexError``), as Python's own hierarchy says; a name that is no builtin exception catches nothing known."""
    caught, raised = getattr(builtins, handled, None), getattr(builtins, error, None)
    return isinstance(caught, type) and isinstance(raised, type) and issubclass(raised, caught)


def _carried_options(function: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call, args: list[object],
                     p: Path) -> dict[str, object]:
    """``param.attr -> value`` for each option the caller set on the parsed arguments it passes by position
    (learning3d's ``if not torch.cuda.is_available(): args.device = 'cpu'`` before ``test(args, model)``): the
    callee reads what the caller set, not the option's default."""
    carried: dict[str, object] = {}
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    for name, given, value in zip(positional, node.args, args, strict=False):
        if value is _PARSED and isinstance(given, ast.Name):
            prefix = f"{given.id}."
            carried.update({f"{name}.{key[len(prefix):]}": v for key, v in p.env.items() if key.startswith(prefix)})
    return carried


def _numeric(node: ast.expr) -> bool:
    """Whether ``node`` is arithmetic on a number literal (``args.batch_size / 32.0``): a Python number, not a
    tensor, whatever its names hold."""
    return isinstance(node, ast.BinOp) and any(
        isinstance(side, ast.Constant) and isinstance(side.value, int | float) and not isinstance(side.value, bool)
        or _numeric(side) for side in (node.left, node.right))


@dataclass(frozen=True)
class _Call:
    """What evaluating a call of a module's own function gave: its value, or where all its paths stopped; the
    forks it made, whether it answered a device query and whether it made a process group (the state it adds to
    its caller's)."""

    returned: object
    stop: Stop | None
    forks: int
    touched: bool
    grouped: bool = False  # a path through it made a process group


def _merged(paths: Iterable[Path]) -> dict[str, object]:
    """The bindings every clean path that ran to the end agrees on (`UNKNOWN` where they differ)."""
    ends = [p.env for p in paths if p.stop is None] or [p.env for p in paths]
    if not ends:
        return {}
    merged = dict(ends[0])  # forks share most values: compare by identity first (a binding missing is UNKNOWN)
    for env in ends[1:]:
        for key, value in env.items():
            old = merged.get(key, _MISSING)
            if old is not value and old is not UNKNOWN and (old is _MISSING or not old == value):
                merged[key] = UNKNOWN
        if len(merged) > len(env):
            for key in merged.keys() - env.keys():
                merged[key] = UNKNOWN
    return merged


_MISSING = object()


def dotted(node: ast.expr) -> str | None:
    """``x`` or ``args.device`` for a name or a dotted attribute of one, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def qualified(node: ast.expr, imports: Mapping[str, str]) -> str | None:
    """`dotted` with its head read through the module's ``imports`` (`imported`): ``osp.join`` after ``import
    os.path as osp`` is ``os.path.join``; a head no import binds stays as it is."""
    chain = dotted(node)
    if chain is None:
        return None
    head, _, rest = chain.partition(".")
    return (f"{imports[head]}.{rest}" if rest else imports[head]) if head in imports else chain


def literal(node: ast.expr) -> bool:
    """Whether ``node`` is a constant (``"none"``, ``-100``, ``True``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant)


def _cuda_tensor_type(name: str) -> bool:
    """``torch.cuda.FloatTensor`` and the other legacy CUDA tensor types."""
    return name.startswith("torch.cuda.") and name.endswith("Tensor") and name[len("torch.cuda."):] in \
        torch_facts.RAISES_OFF_CUDA


def _span(node: ast.expr) -> tuple[int, int, int, int]:
    """``(line, column, end line, end column)`` of ``node``: lines 1-based, columns 0-based UTF-8 offsets."""
    return node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0


def _methods(tree: ast.Module) -> dict[int, ast.ClassDef]:
    """Each method's id -> its class (a function in a class's own body whose first parameter is ``self``)."""
    return {id(m): node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for m in node.body
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.args.args and m.args.args[0].arg == "self"}


def _stored_elsewhere(tree: ast.Module) -> set[str]:
    """Attribute names the module sets on something other than ``self`` (``args.cuda = ...``), or on ``self`` in
    a nested function; every attribute name where ``setattr`` sets a name it computes. One pass over the tree."""
    stored: set[str] = set()
    computed = False

    def visit(node: ast.AST, depth: int) -> None:
        nonlocal computed
        for child in ast.iter_child_nodes(node):
            inner = depth + isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Store) and (depth > 1 or not (
                    isinstance(child.value, ast.Name) and child.value.id == "self")):
                stored.add(child.attr)
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "setattr":
                name = child.args[1] if len(child.args) > 1 else None
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    stored.add(name.value)
                else:
                    computed = True
            visit(child, inner)

    visit(tree, 0)
    if computed:
        stored.update(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    return stored


def _sets_self(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
               and n.value.id == "self" for n in ast.walk(method))


def _call_statements(tree: ast.Module) -> dict[int, int]:
    """The function of each call in ``tree`` (by the id of its ``func``) -> the first line of the statement that
    holds the call, as a path's ``lines`` record it."""
    found: dict[int, int] = {}
    for statement in ast.walk(tree):
        if not isinstance(statement, ast.stmt):
            continue
        todo: list[ast.AST] = [c for c in ast.iter_child_nodes(statement) if not isinstance(c, ast.stmt)]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Call):
                found[id(node.func)] = statement.lineno
            todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
    return found


def _strings(tree: ast.Module) -> set[str]:
    """The string constants of ``tree`` (a name given as text, ``getattr(self, "_sync")``, is called unseen)."""
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _assigned(body: list[ast.stmt]) -> set[str]:
    """The names and dotted attributes (``args.device``) that statements of ``body`` assign, outside functions
    and classes it defines."""
    found: set[str] = set()
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store) and (
                key := dotted(node)) is not None:
            found.add(key)
        todo.extend(ast.iter_child_nodes(node))
    return found


def _self_bound(body: list[ast.stmt]) -> set[str]:
    """The names ``body``'s own statements bind of themselves (``model = wrap(model)``)."""
    return {t.id for s in body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
            and any(isinstance(n, ast.Name) and n.id == t.id for n in ast.walk(s.value))}


def _names(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def _parameters(args: ast.arguments) -> Iterator[str]:
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        yield arg.arg
    if args.vararg:
        yield args.vararg.arg
    if args.kwarg:
        yield args.kwarg.arg


_PROCESS_RUNNERS = torch_facts.named("process_runner")
_CLI_RUNNERS = torch_facts.named("cli_runner")
_SPAWNERS = torch_facts.named("spawn")
_DRIVER_CALLS = torch_facts.named("driver_call")
_NEEDS_GPU = torch_facts.named("needs_gpu")  # functional `data_parallel`: no device type on the CPU
_GPUS_TRAINERS = torch_facts.named("gpus_trainer")


def asks_for_cuda(test: ast.expr) -> bool:
    """``not torch.cuda.is_available() and device.type == "cuda"`` (pykeen's ``resolve_device``; also ``"cuda" in
    x``, ``x.startswith("cuda")``): true only for a device that is CUDA's already, which a device the port picks
    never is: the CPU it then sets keeps no choice CUDA-or-CPU."""
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(
        isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and isinstance(n.operand, ast.Call)
        and isinstance(n.operand.func, ast.Attribute) and n.operand.func.attr == "is_available"
        for n in test.values) and any(
        isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Eq, ast.In)) and any(
            isinstance(part, ast.Constant) and part.value == "cuda" for part in (n.left, *n.comparators))
        or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "startswith"
        and bool(n.args) and isinstance(n.args[0], ast.Constant) and n.args[0].value == "cuda"
        for n in test.values)


def gpus_asked(call: ast.Call) -> ast.expr | None:
    """The ``gpus=`` of a Lightning trainer's call where it is a constant asking for GPUs (``1``, ``-1``, ``"0,"``,
    ``[0]``), else None: ``0``, ``None`` and ``"0"`` ask for none, and a value read at run time may."""
    given = next((k.value for k in call.keywords if k.arg == "gpus"), None)
    if isinstance(given, ast.Constant) and (type(given.value) is int and given.value != 0 or isinstance(
            given.value, str) and given.value.strip() not in ("", "0")):
        return given
    if isinstance(given, ast.List) and given.elts:
        return given
    return None
_SHELL_RUNNERS = torch_facts.named("shell_runner")
_CHECKING_RUNNERS = torch_facts.named("checks_exit")
_NVIDIA_TOOLS = frozenset(torch_facts.words("nvidia_tool"))


def _nvidia_tool(runner: str, args: Sequence[object], keywords: dict[str | None, object]) -> str | None:
    """The NVIDIA-only program (``nvidia-smi``) that the process ``runner`` (``subprocess.run``) is given, where
    running it raises off an NVIDIA machine: an argument list starting with it, or its name alone; through a shell
    (``shell=True``, `subprocess.getoutput`) only where the exit status is checked (``check=True``,
    ``check_output``)."""
    command = args[0] if args else keywords.get("args")
    words = command.values if isinstance(command, Items) else [command]
    program = words[0].split()[:1] if words and isinstance(words[0], str) else []
    if not program or program[0] not in _NVIDIA_TOOLS:
        return None
    shell = keywords.get("shell") is True or runner in _SHELL_RUNNERS
    checked = keywords.get("check") is True or runner in _CHECKING_RUNNERS
    return None if shell and not checked else program[0]


def fixture_decorator(decorator: ast.expr) -> bool:
    """``@pytest.fixture`` or ``@fixture``, called or not (``@pytest.fixture(scope="module")``)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "fixture") or (
        isinstance(target, ast.Attribute) and target.attr == "fixture")


def _fixture_mark(decorator: ast.expr) -> bool:
    """A `fixture_decorator` without ``params`` (pytest gives it one value)."""
    return fixture_decorator(decorator) and not (
        isinstance(decorator, ast.Call) and any(k.arg == "params" for k in decorator.keywords))


def _parametrized(node: ast.FunctionDef | ast.AsyncFunctionDef, parameters: Iterable[str],
                  skips: Callable[[ast.expr], bool] = lambda mark: False) -> list[dict[str, object]]:
    """The bindings pytest runs a test with, from its ``@pytest.mark.parametrize("name", [...])`` marks whose values
    are all constants (``["cpu", "cuda"]``, ``pytest.param("cuda:0", marks=...)``): one dict per combination (at
    most `_MAX_PARAMETRIZED`), ``[{}]`` where none applies; a ``pytest.param`` one of whose marks ``skips`` on the
    target is not run (falkon's ``pytest.param("incore", marks=[pytest.mark.skipif(not decide_cuda(), ...)])``).
    A mark with other values (a variable), or one that would pass that count, leaves its names unknown."""
    combinations: list[dict[str, object]] = [{}]
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize" and len(decorator.args) >= 2):
            continue
        names, values = decorator.args[0], decorator.args[1]
        if not (isinstance(names, ast.Constant) and isinstance(names.value, str)
                and isinstance(values, (ast.List, ast.Tuple)) and values.elts):
            continue
        keys = [n.strip() for n in names.value.split(",") if n.strip()]
        rows, skipped = [], 0
        for element in values.elts:
            if isinstance(element, ast.Call) and isinstance(element.func, ast.Attribute) \
                    and element.func.attr == "param":
                marks = next((k.value for k in element.keywords if k.arg == "marks"), None)
                if marks is not None and any(skips(m) for m in (
                        marks.elts if isinstance(marks, (ast.List, ast.Tuple)) else [marks])):
                    skipped += 1
                    continue
                rows.append(list(element.args))
            else:
                rows.append(element.elts if len(keys) > 1 and isinstance(element, (ast.Tuple, ast.List))
                            else [element])
        if not set(keys) <= set(parameters) or any(len(row) != len(keys) or not all(
                isinstance(v, ast.Constant) for v in row) for row in rows):
            continue
        bound = [dict(zip(keys, (v.value for v in row if isinstance(v, ast.Constant)))) for row in rows]
        if skipped and not bound:
            return []  # every value is skipped here: the test does not run
        if len(combinations) * len(bound) > _MAX_PARAMETRIZED:
            continue
        combinations = [{**done, **more} for done in combinations for more in bound]
    return combinations


def _narrow(test: ast.expr, taken: Path, other: Path) -> None:
    """An ``if flag:`` (or ``if not flag:``) on a local whose value is not known decides it for the rest of each
    path: its branch binds it true, the other false (llm.c's ``if ddp:`` twice, never half of each)."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    name = test.operand if negated else test  # type: ignore[attr-defined]
    if isinstance(name, ast.Name) and taken.env.get(name.id, None) is UNKNOWN:
        taken.env[name.id], other.env[name.id] = negated is False, negated is True


def defaults(spec: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """Each parameter of ``spec`` that has a default, with it (positional, then keyword-only)."""
    positional = [*spec.posonlyargs, *spec.args]
    return [*zip(positional[len(positional) - len(spec.defaults):], spec.defaults, strict=True),
            *((a, d) for a, d in zip(spec.kwonlyargs, spec.kw_defaults, strict=True) if d is not None)]


def _bind_arguments(spec: ast.arguments, args: list[object], keywords: dict[str | None, object],
                    evaluator: Evaluator, p: Path) -> dict[str, object]:
    positional = [*spec.posonlyargs, *spec.args]
    given_defaults = {a.arg: d for a, d in defaults(spec)}
    env: dict[str, object] = {name: UNKNOWN for name in _parameters(spec)}
    for arg, value in zip(positional, args, strict=False):
        env[arg.arg] = value
    given = {a.arg for a in positional[:len(args)]}
    for name, value in keywords.items():
        if name is not None:
            env[name] = value
            given.add(name)
    if None in keywords or len(args) > len(positional):
        return env  # **kwargs or *args: the rest is unknown
    for name, default in given_defaults.items():
        if name not in given:
            env[name] = evaluator.value(default, Path(dict(evaluator.globals)))
    return env


def _device(spec: object, index: object) -> object:
    kind = device_type(spec)
    if kind is None or isinstance(spec, int):
        return UNKNOWN if not isinstance(spec, Device) else spec
    if isinstance(spec, str) and ":" in spec:
        head, _, tail = spec.partition(":")
        return Device(head, int(tail) if tail.isdigit() else UNKNOWN)
    return Device(kind, index)


_MIRRORED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def _compare(op: ast.cmpop, left: object, right: object) -> object:
    if NOT_CUDA in (left, right):  # data's device type off CUDA: only "is it CUDA's" is decided
        other = right if left is NOT_CUDA else left
        texts = other.values if isinstance(other, Items) and isinstance(op, (ast.In, ast.NotIn)) else (other,)
        if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) and all(
                t == "cuda" or (isinstance(t, Device) and t.type == "cuda") for t in texts):
            return isinstance(op, (ast.NotEq, ast.NotIn))
        return UNKNOWN
    if left is UNKNOWN or right is UNKNOWN or isinstance(left, (Prefix, Items, Name)) or isinstance(
            right, (Prefix, Items, Name)):
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, Items) and left is not UNKNOWN and all(
                v is not UNKNOWN and not isinstance(v, Prefix) for v in right.values):
            found = left in right.values
            return found if isinstance(op, ast.In) else not found
        return UNKNOWN
    if left is COUNT or right is COUNT:  # an int not known, at least 1: decided against 1 or less alone
        bound = right if left is COUNT else left
        kind: type[ast.cmpop] = type(op) if left is COUNT else _MIRRORED.get(type(op), type(op))  # `count <op> b`
        if not isinstance(bound, int) or isinstance(bound, bool) or bound > 1:
            return UNKNOWN
        if bound == 1:  # `world_size >= 1`
            return {ast.GtE: True, ast.Lt: False}.get(kind, UNKNOWN)
        # `world_size != torch.cuda.device_count()`, none counted
        return {ast.Gt: True, ast.GtE: True, ast.NotEq: True, ast.Lt: False, ast.LtE: False,
                ast.Eq: False}.get(kind, UNKNOWN)
    if left is INDEX or right is INDEX:  # an int not known, not negative: only a comparison with 0 may be decided
        bound, index_left = (right, True) if left is INDEX else (left, False)
        if isinstance(bound, int) and not isinstance(bound, bool) and bound <= 0 and (
                isinstance(op, (ast.GtE, ast.Lt) if index_left else (ast.LtE, ast.Gt))):
            return isinstance(op, ast.GtE if index_left else ast.LtE)
        return UNKNOWN
    if isinstance(left, Device) or isinstance(right, Device):
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(left, Device) and isinstance(right, Device):
            return (left == right) is isinstance(op, ast.Eq)
        return UNKNOWN
    try:
        if isinstance(op, ast.Eq):
            return left == right
        if isinstance(op, ast.NotEq):
            return left != right
        if isinstance(op, ast.Is):
            return left is right if left is None or right is None else UNKNOWN
        if isinstance(op, ast.IsNot):
            return left is not right if left is None or right is None else UNKNOWN
        if isinstance(op, ast.Lt):
            return left < right  # type: ignore[operator]
        if isinstance(op, ast.LtE):
            return left <= right  # type: ignore[operator]
        if isinstance(op, ast.Gt):
            return left > right  # type: ignore[operator]
        if isinstance(op, ast.GtE):
            return left >= right  # type: ignore[operator]
        if isinstance(op, ast.In):
            return left in right  # type: ignore[operator]
        if isinstance(op, ast.NotIn):
            return left not in right  # type: ignore[operator]
    except TypeError:
        return UNKNOWN
    return UNKNOWN


def _show(value: object) -> str:
    if isinstance(value, Prefix):
        return f"'{value.text}...'"
    if isinstance(value, Device):
        return f"device('{value.type}')"
    if value is INDEX:
        return "<an int>"
    return repr(value)


def command_line_defaults(tree: ast.Module) -> dict[str, object]:
    """What each command-line option ``tree`` declares holds when none is given: ``add_argument("--lr",
    default=0.1)`` gives ``{"lr": 0.1}``; a ``store_true`` flag False, an option without a default None; a string
    default converted by ``type=int``/``float`` as argparse converts it; a default computed from imported names
    alone (``"cuda" if torch.cuda.is_available() else "cpu"``) its expression, for the evaluator to evaluate on its
    target. An option declared twice with other defaults, or required (a positional one too), is left out
    (unknown). (`analysis.defaults.option_defaults` lists
    the string defaults under each long flag, for the rules.)"""
    found: dict[str, object] = {}
    clashing: set[str] = set()
    imports = _tree_facts(tree).imports
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument" and node.args):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = keywords.get("dest")
        names = {dest.value} if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else {
            next((f for f in flags if f.startswith("--")), flags[0] if flags else "").lstrip("-").replace("-", "_")}
        action = keywords.get("action")
        action_name = action.value if isinstance(action, ast.Constant) else None
        try:
            value: object = ast.literal_eval(keywords["default"]) if "default" in keywords else (
                False if action_name == "store_true" else True if action_name == "store_false" else None)
        except ValueError:
            # a default computed from imports alone (`"cuda" if torch.cuda.is_available() else "cpu"`) is
            # evaluated where it is read, on the target
            given = keywords["default"]
            value = given if {n.id for n in ast.walk(given) if isinstance(n, ast.Name)} <= set(imports) | _BUILTINS \
                else UNKNOWN
        kind = keywords.get("type")
        if isinstance(value, str) and isinstance(kind, ast.Name) and kind.id in ("int", "float"):
            try:
                value = int(value) if kind.id == "int" else float(value)
            except ValueError:
                value = UNKNOWN
        required = keywords.get("required")
        nargs = keywords.get("nargs")
        positional = bool(flags) and not flags[0].startswith("-") and not (
            isinstance(nargs, ast.Constant) and nargs.value in ("?", "*"))
        if positional or (isinstance(required, ast.Constant) and required.value) or not isinstance(
                value, (str, int, float, bool, type(None), ast.expr)) or (
                isinstance(value, ast.expr) and kind and not (isinstance(kind, ast.Name) and kind.id == "str")):
            value = UNKNOWN
        for name in names - {""}:
            if name in found and found[name] != value:
                clashing.add(name)
            found[name] = value
    return {name: value for name, value in found.items() if name not in clashing and value is not UNKNOWN}


def places_data(tree: ast.Module) -> bool:
    """Whether any code of ``tree`` may put data on a device: ``.cuda()``, ``.to(...)``, a ``device=`` or
    ``map_location=`` that is not the CPU, a ``torch.cuda`` tensor type. Without one, its tensors stay on the CPU."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "to"):
                return True
            for keyword in node.keywords:
                if keyword.arg in torch_facts.PLACEMENT_KEYWORDS and not (
                        isinstance(keyword.value, ast.Constant) and keyword.value.value in ("cpu", None)):
                    return True
        elif isinstance(node, ast.Attribute) and node.attr in torch_facts.RAISES_OFF_CUDA and node.attr.endswith(
                "Tensor"):
            return True
    return False


def false_off_cuda(tree: ast.Module) -> Callable[[ast.expr], bool]:
    """A test of the conditions of ``tree`` (an ``assert``'s): whether one, evaluated on the CPU with nothing known
    of the names it reads, is false because a device query answered so (jukebox's ``assert isinstance(x,
    torch.cuda.LongTensor)``: no tensor is of a CUDA tensor type there). One evaluator serves every call."""
    evaluator: Evaluator | None = None

    def false(test: ast.expr) -> bool:
        nonlocal evaluator
        if evaluator is None:
            evaluator = Evaluator(tree, "cpu")
        try:
            value, asked = evaluator._asking(test, Path({}), test=True)
        except RecursionError:
            return False
        return asked and truth(value) is False

    return false


def evaluate(tree: ast.Module, target: str, exempt: frozenset[int] = frozenset(),
             functions: bool = True) -> list[Unit]:
    """Every unit of ``tree`` evaluated on ``target`` (see `Evaluator`): the module body, then, with
    ``functions``, each function and method."""
    return Evaluator(tree, target, exempt).units(functions)
