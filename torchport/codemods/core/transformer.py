"""The engine: one pass over a module that dispatches each node to the rules that asked for its type.

The `Migrator` holds the facts the rules share, as metadata: the qualified name of each name read
(scope-correct, from `_scope.Resolver`), where each CUDA string is used (its *context*, set by the rule
that knows the call it is passed to), which sites were handled, the enclosing nodes, and the runtime
import. It wires no rule by hand: `Rule` subclasses declare ``visit_<Node>``/``leave_<Node>`` methods,
and the dispatch tables are built from them.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst
from libcst.metadata import CodePosition

from torchport.codemods.analysis.lacks import handles_mps
from torchport.codemods.analysis.names import Imports, chain, cst_import_map, qualify
from torchport.codemods.core.base import Diagnostic, attribute_chain, dotted_name
from torchport.codemods.core.positions import Positions
from torchport.codemods.core.reasons import CUDA_ONLY, HELD_CHOICE, Reason, note
from torchport.codemods.core.registry import DATA_MOVES, RULES_BY_CODE, RULES_IN_ORDER
from torchport.codemods.core.shared import Shared
from torchport.codemods.core.triggers import Anchors, map_statements
from torchport.codemods.entry import avoid_mps
from torchport.emit.package import PackageRuntime, Renderer
from torchport.emit.placement import imports_only, torch_try
from torchport.model import torch_facts
from torchport.results import KEPT

if TYPE_CHECKING:
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    from torchport.codemods.analysis.scope import Resolver
    from torchport.codemods.core.rule import Rule


def _tables(rules: Sequence[Rule]) -> tuple[dict[str, list], dict[str, list], dict[str, list]]:
    """Per node class name: the rules' visit methods, their argument-level and their replacing leave methods."""
    visits: dict[str, list] = {}
    arguments: dict[str, list] = {}
    replacing: dict[str, list] = {}
    for rule in rules:
        for attr in dir(type(rule)):
            if attr.startswith("visit_"):
                visits.setdefault(attr[6:], []).append(getattr(rule, attr))
            elif attr.startswith("leave_"):
                (replacing if rule.replaces else arguments).setdefault(attr[6:], []).append(getattr(rule, attr))
    return visits, arguments, replacing


_VISITS, _ARGUMENTS, _REPLACING = _tables(RULES_IN_ORDER)
_CUDA_TEXT = torch_facts.text("cuda_text")
# Nodes that name nothing by themselves: an attribute's name, a keyword argument's name, a parameter's.
_NAME_FIELDS = {cst.Attribute: "attr", cst.Arg: "keyword", cst.Param: "name", cst.FunctionDef: "name",
                cst.ClassDef: "name"}


class Migrator(cst.CSTTransformer):
    """Rewrite CUDA-specific PyTorch code in one module; collect what is left as diagnostics.

    Args:
        context: the LibCST codemod context (its scratch space schedules import changes).
        source: the module's source text (to pick a runtime alias that cannot collide).
        enabled: whether a rule code is selected.
        unsafe_fixes: apply unsafe rewrites instead of reporting them.
        suppressed: line -> codes suppressed there (None: all), from ``# torchport: ignore``.
        targets: per-target diagnostics to run (``mps``, ``xpu``, ``cpu``).
        syntax: CPython's tree of ``source``; None when CPython cannot parse it (then the imports are
            read from the LibCST tree, names are not scope-resolved, and every statement is visited).
        imports: `_names.import_map` of ``syntax``.
        resolver: the scope resolver of ``syntax``.
        trigger_lines: lines where some rule's trigger matches: statements spanning none are skipped.
        renderer: how a fix that calls the runtime is written (``tp.device()`` by default).
        hold: why this module's device choices must stay CUDA-or-CPU (`torchport.pipeline.project`), or None.
        avoid_mps: what MPS lacks in the program this module starts (`torchport.pipeline.programs`), or None.
        gates: local names of CUDA gates other modules of the project define (`analysis.gates`); the module's
            own are added by the guards.

    After ``transform_module``: ``rewrites`` (counts per code), ``sites`` (one per rewrite) and
    ``diagnostics`` (sorted by line); ``facts``: lines where the module chooses a device from CUDA's
    availability, rewritten (``choices``) or kept as written (``kept``), for the project-level pass.
    """

    def __init__(
        self,
        context: CodemodContext,
        source: str = "",
        enabled: Callable[[str], bool] = lambda code: True,
        unsafe_fixes: bool = False,
        suppressed: Mapping[int, frozenset[str] | None] | None = None,
        targets: tuple[str, ...] = (),
        syntax: ast.Module | None = None,
        imports: Imports | None = None,
        resolver: Resolver | None = None,
        trigger_lines: Sequence[int] = (),
        renderer: Renderer | None = None,
        hold: str | None = None,
        avoid_mps: str | None = None,
        gates: frozenset[str] = frozenset(),
        reached: bool = False,
    ) -> None:
        super().__init__()
        self.context = context
        self.source = source
        # A file that never mentions CUDA or NCCL is left as it is: it may well be written for any device; unless a
        # ported program reaches it (the project pass says so), where its DDP ids and devices must move too.
        self.mentions_cuda = reached or bool(_CUDA_TEXT.search(source))
        self.syntax = syntax
        self.trigger_lines = trigger_lines
        self.enabled = enabled
        self.unsafe_fixes = unsafe_fixes
        self.suppressed = suppressed or {}
        self.targets = targets
        self.imports: Imports = imports or {}
        self.resolver = resolver
        self.renderer: Renderer = renderer or PackageRuntime()
        self.hold = hold
        self.avoid_mps = avoid_mps
        self.gates = gates
        # why only programs kept CUDA-or-CPU reach the module (the project pass's `KEPT` gate), or None
        self.kept = next((g[len(KEPT):] for g in gates if g.startswith(KEPT)), None)
        self.facts: dict[str, list[int]] = {}
        self.sites: list[Diagnostic] = []
        self.rewrites: Counter[str] = Counter()
        self.diagnostics: list[Diagnostic] = []
        self.torch_name: str | None = None
        self._needs_torch = False
        # id(original node) -> (context kind, rule code); kinds: "device", "str", "type"
        self.contexts: dict[int, tuple[str, str]] = {}
        self.handled: set[int] = set()
        self.called: set[int] = set()  # id() of every call's func
        self.inner: set[int] = set()  # id() of the value of every attribute (not the head of a chain)
        self.ancestors: list[cst.CSTNode] = []  # the nodes being visited, outermost first
        self.cuda_imports: list[tuple[str, str, str | None]] = []
        self._not_names: set[int] = set()
        self._qnames: dict[int, set[str]] = {}
        self._positions: Positions | None = None
        self._statement: cst.CSTNode | None = None  # the innermost anchored statement being visited
        self._statement_of: dict[int, cst.CSTNode | None] = {}  # for sites reported at the end
        self._quiet: set[int] = set()
        self._store: dict[str, dict[Any, Any]] = {}
        self.shared = Shared()  # facts rules record for each other
        self._skip_depth = 0  # > 0 inside a region no rewrite may touch (see `skip_region`)
        self._skip_roots: dict[int, str] = {}  # root -> why its rewrites change nothing (the TP110 note)
        self._skip_reasons: list[str] = []  # of the regions being visited, innermost last
        self._entered: set[int] = set()

    # ---- the pass ---------------------------------------------------------------------------

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run the rules over ``tree``, then add and remove imports as scheduled.

        A plain transformer, not LibCST's ``VisitorBasedCodemodCommand``: its matcher dispatch and the
        deep copy its metadata wrapper makes cost several times the parse on big trees.
        """
        anchors: Anchors = {}
        if self.syntax is None:
            self.imports = cst_import_map(tree)
        else:
            self._quiet, anchors = map_statements(tree, self.syntax, self.trigger_lines)
        self._positions = Positions(tree, anchors)
        self.renderer.prepare(self, tree)
        tree = tree.visit(self)
        if not self.context.scratch:
            return tree
        # Imported here: libcst.codemod pulls in libcst.matchers (0.3 s), which a cached run never needs.
        AddImportsVisitor, RemoveImportsVisitor = import_visitors()
        if AddImportsVisitor.CONTEXT_KEY in self.context.scratch:
            tree = _add_imports(self.context, tree)
        if RemoveImportsVisitor.CONTEXT_KEY in self.context.scratch:
            tree = remove_imports(self.context, tree)
        return tree

    def on_visit(self, node: cst.CSTNode) -> bool:
        key = id(node)
        if key in self._quiet or type(node) is cst.Annotation:  # no trigger on its lines; a type is not a device
            return False
        if key in self._positions.anchors:  # type: ignore[union-attr]
            self._statement = node
        kind = type(node)
        field = _NAME_FIELDS.get(kind)
        if field is not None:
            name = getattr(node, field)
            if name is not None:
                self._not_names.add(id(name))
        if kind is cst.Attribute:
            self.inner.add(id(node.value))  # type: ignore[attr-defined]
        elif kind is cst.Call:
            self.called.add(id(node.func))  # type: ignore[attr-defined]
        elif kind in (cst.Import, cst.ImportFrom):
            self._note_import(node)  # type: ignore[arg-type]
        elif kind is cst.Module:
            self.visit_Module(node)  # type: ignore[arg-type]
        self.ancestors.append(node)
        descend = True
        for visit in _VISITS.get(kind.__name__, ()):
            if visit(self, node) is False:
                descend = False
        if key in self._skip_roots:
            self._skip_depth += 1
            self._skip_reasons.append(self._skip_roots[key])
            self._entered.add(key)
        if kind in (cst.Import, cst.ImportFrom):
            descend = False
        if not descend:
            self.ancestors.pop()
        return descend

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        if self.ancestors and self.ancestors[-1] is original_node:
            self.ancestors.pop()
        name = type(original_node).__name__
        for leave in _ARGUMENTS.get(name, ()):
            result = leave(self, original_node, updated_node)
            if result is not None:
                updated_node = result
        for leave in _REPLACING.get(name, ()):
            result = leave(self, original_node, updated_node)
            if result is not None:
                updated_node = result
                break
        if id(original_node) in self._entered:  # after its own rules: apply() refused them
            self._entered.discard(id(original_node))
            self._skip_depth -= 1
            self._skip_reasons.pop()
        if isinstance(updated_node, cst.Module):
            return self.leave_Module(original_node, updated_node)  # type: ignore[arg-type]
        return updated_node

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass

    # ---- facts the rules share ---------------------------------------------------------------

    def store(self, rule: Rule) -> dict[Any, Any]:
        """A dict private to ``rule`` for this module (rules are stateless); what other rules read is in
        `shared`."""
        return self._store.setdefault(rule.code, {})

    def is_name(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` can name something (not an attribute's, a keyword's or a parameter's name)."""
        return id(node) not in self._not_names

    def qnames(self, node: cst.CSTNode) -> set[str]:
        """The imported APIs ``node`` (a name, attribute chain, call or decorator) refers to, resolved in
        the scope the node is in: a local, a parameter or a loop variable named like an import is not it."""
        key = id(node)
        if key in self._not_names:
            return set()
        cached = self._qnames.get(key)
        if cached is not None:
            return cached
        self._qnames[key] = found = self._qualify(node)
        return found

    def _qualify(self, node: cst.CSTNode) -> set[str]:
        dotted = chain(node)
        if not dotted:
            return set()
        if self.resolver is None:
            return qualify(dotted, self.imports)
        head, _, rest = dotted.partition(".")
        bound = self.resolver.static(head)
        if bound is None:
            start = self.start(node)
            bound = self.resolver.at(head, start.line, start.column)
        return {f"{name}.{rest}" if rest else name for name in bound}

    def has_qname(self, node: cst.CSTNode, name: str) -> bool:
        return name in self.qnames(node)

    def qname_startswith(self, node: cst.CSTNode, prefix: str) -> bool:
        return any(name.startswith(prefix) for name in self.qnames(node))

    @functools.cached_property
    def names_mps(self) -> bool:
        """Whether the module's code (not a comment) names MPS (`analysis.lacks.handles_mps`): it makes its own
        choice for MPS. Read once per module."""
        return self.syntax is not None and "mps" in self.source.lower() and handles_mps(self.syntax)

    def start(self, node: cst.CSTNode) -> CodePosition:
        """Where ``node`` (of the original tree) starts: line from 1, column from 0."""
        assert self._positions is not None, "transform_module sets the positions"
        return self._positions.start(node, self._statement_of.get(id(node), self._statement))

    def remember_statement(self, node: cst.CSTNode) -> None:
        """Keep where ``node`` is, for a diagnostic made after the visit (in `Rule.finish`)."""
        self._statement_of[id(node)] = self._statement

    def set_context(self, node: cst.BaseExpression, kind: str, code: str) -> None:
        """Record how the CUDA strings in ``node`` are used; the branches of ``a if c else b`` too."""
        self.contexts[id(node)] = (kind, code)
        if isinstance(node, cst.IfExp):
            self.set_context(node.body, kind, code)
            self.set_context(node.orelse, kind, code)

    def keep_literals(self, node: cst.BaseExpression) -> None:
        """CUDA strings in ``node`` are deliberate text (e.g. argparse ``choices``): not reported."""
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            for element in node.elements:
                self.handled.add(id(element.value))

    def mark_handled(self, node: cst.CSTNode) -> None:
        self.handled.add(id(node))
        if isinstance(node, cst.Call):
            self.handled.add(id(node.func))

    def skip_region(self, node: cst.CSTNode, reason: Reason = CUDA_ONLY, detail: str | None = None) -> None:
        """No rewrite inside ``node`` (a region that runs only on CUDA, or code already written for
        several backends): rewriting it would change nothing anywhere. Diagnostics still run; a rewrite
        refused there is noted as TP110 with ``reason`` (from the catalogue, `core.reasons`) and ``detail``, the
        site's own words."""
        # entered when visited (now, if it is the node being visited)
        self._skip_roots.setdefault(id(node), note(reason, detail))

    @property
    def in_skipped_region(self) -> bool:
        return self._skip_depth > 0

    @property
    def region_reason(self) -> str | None:
        """The TP110 text of the innermost skipped region being visited (None outside one)."""
        return self._skip_reasons[-1] if self._skip_depth else None

    def _is_suppressed(self, code: str, line: int) -> bool:
        if line not in self.suppressed:
            return False
        codes = self.suppressed[line]
        return codes is None or any(code.startswith(c) for c in codes)

    def apply(self, code: str, node: cst.CSTNode, safe: bool = False, held_choice: bool = False) -> bool:
        """Whether rewrite ``code`` may change ``node``; records it when it may.

        A rule that is deselected or suppressed on the node's line, or a node in a skipped region,
        is left alone. An unsafe rule without ``--unsafe-fixes`` reports the site instead, unless ``safe``
        says this site's fix is safe (a per-site safety, as ruff's fix applicability). Either way the node
        counts as handled, so no fallback diagnostic repeats it. ``held_choice``: the rewrite feeds the module's own
        device choice (the one `hold` keeps), so it adds no second one and the hold does not stop it.
        """
        self.mark_handled(node)
        start = self.start(node)
        if not self.enabled(code) or self._is_suppressed(code, start.line):
            return False
        rule = RULES_BY_CODE[code]
        if self.hold is not None and code in DATA_MOVES and not self._skip_depth and not held_choice:
            # The project keeps this module's device choices CUDA-or-CPU: a move to the picked device would
            # put tensors on MPS beside the CPU ones there. Left for the author, with the reason.
            self.report("TP110", node, f"left as written ({code} would apply): {note(HELD_CHOICE, self.hold)}")
            return False
        unsafe = rule.safety == "unsafe" and not safe
        if self._skip_depth and not (unsafe and not self.unsafe_fixes):
            self.report("TP110", node, f"left as written ({code} would apply): {self._skip_reasons[-1]}")
            return False
        if not self.mentions_cuda:
            self.diagnostics.append(Diagnostic(code, start.line, start.column, f"{rule.summary} (left unchanged: "
                                               "this file never mentions CUDA or NCCL)"))
            self.fact("unnamed", node)
            return False
        if unsafe and not self.unsafe_fixes:  # reported even where the region is left alone
            self.diagnostics.append(Diagnostic(code, start.line, start.column,
                                               f"{rule.summary} (fix available with --unsafe-fixes)"))
            return False
        self.rewrites[code] += 1
        self.sites.append(Diagnostic(code, start.line, start.column, rule.summary))
        if code in DATA_MOVES:
            self.fact("moves", node)
        return True

    def fact(self, kind: str, node: cst.CSTNode) -> None:
        """Record a fact for the project pass at ``node``: ``kind`` is ``choices`` (a device chosen from CUDA's
        availability, rewritten to the runtime's choice), ``kept`` (such a choice kept CUDA-or-CPU), ``moves``
        (a rewrite that sends data to the runtime's device), ``state_loads`` (a checkpoint loaded straight into
        ``load_state_dict``, which moves nothing), ``unnamed`` (a rewrite not made because the file never names
        CUDA, which a ported program reaching it asks for) or ``script_defaults`` (a default a script's function
        keeps because every call of it in the script passes the parameter)."""
        lines = self.facts.setdefault(kind, [])
        line = self.start(node).line
        if line not in lines:
            lines.append(line)

    def leave_as_written(self, code: str, node: cst.CSTNode, reason: Reason, detail: str | None = None) -> None:
        """Leave ``node``, which rule ``code`` would rewrite, as written: a TP110 note gives ``reason`` and
        ``detail`` (none inside a region left for a reason of its own), and no other rule reports it as unported."""
        self.mark_handled(node)
        if not self.in_skipped_region:
            self.report("TP110", node, f"left as written ({code} would apply): {note(reason, detail)}")

    def report(self, code: str, node: cst.CSTNode, message: str) -> None:
        start = self.start(node)
        self.report_at(code, start.line, start.column, message)

    def report_at(self, code: str, line: int, column: int, message: str) -> None:
        """A diagnostic at ``line`` (1-based) and ``column`` (0-based) of the original source."""
        if self.enabled(code) and not self._is_suppressed(code, line):
            self.diagnostics.append(Diagnostic(code, line, column, message))

    def rule_summary(self, code: str) -> str:
        return RULES_BY_CODE[code].summary

    # ---- building fixes ----------------------------------------------------------------------

    def runtime_attr(self, name: str) -> cst.BaseExpression:
        """The runtime's ``name`` (``tp.device``), as the renderer writes it."""
        return self.renderer.attr(self, name)

    def runtime_call(self, name: str, args: Sequence[cst.BaseExpression]) -> cst.Call:
        """A call of the runtime's ``name`` with positional ``args``."""
        return cst.Call(func=self.runtime_attr(name), args=[cst.Arg(a) for a in args])

    def runtime_call_name(self, node: cst.CSTNode) -> str | None:
        """The runtime function a node calls (``tp.device(...)`` -> ``"device"``), else None."""
        return self.renderer.called(node)

    def torch_attr(self, path: str) -> cst.BaseExpression:
        """``torch.<path>``, through the module's own name for torch (imported if missing)."""
        if self.torch_name is None:
            self._needs_torch = True
        return attribute_chain(f"{self.torch_name or 'torch'}.{path}")

    def add_needed_import(self, module: str, obj: str | None = None, asname: str | None = None) -> None:
        from libcst.codemod.visitors import AddImportsVisitor

        AddImportsVisitor.add_needed_import(self.context, module, obj, asname)

    def remove_unused_import(self, module: str, obj: str | None = None, asname: str | None = None) -> None:
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import(self.context, module, obj, asname)

    # ---- module and imports ------------------------------------------------------------------

    def _note_import(self, node: cst.Import | cst.ImportFrom) -> None:
        """Imports that bind torch.cuda names, to drop them once no longer used."""
        if isinstance(node, cst.Import) or node.relative or node.module is None \
                or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        if not module:
            return
        for alias in node.names:
            name = alias.evaluated_name
            if module == "torch.cuda" or module.startswith("torch.cuda.") or (module == "torch" and name == "cuda"):
                self.cuda_imports.append((module, name, alias.evaluated_alias))

    def visit_Module(self, node: cst.Module) -> None:
        guard = torch_try(node.body)  # torch imported only in a top-level try: its name there
        for statement in (*node.body, *(guard.body.body if guard else ())):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            if dotted_name(alias.name) == "torch":
                                self.torch_name = alias.evaluated_alias or "torch"

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        for rule in RULES_IN_ORDER:
            rule.finish(self, original_node)
        self.diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
        updated_node = avoid_mps(self, original_node, updated_node)
        if self.rewrites:
            updated_node = self.renderer.finish(self, updated_node)
        if self._needs_torch:
            self.add_needed_import("torch")
        if self.rewrites and self.cuda_imports:
            # only what the port leaves unused: an import the module never used stays (no churn)
            read = None if self.syntax is None else {n.id for n in ast.walk(self.syntax) if isinstance(n, ast.Name)}
            for module, name, asname in self.cuda_imports:
                if read is None or (asname or name) in read:
                    self.remove_unused_import(module, name, asname)
        return updated_node


@functools.cache
def import_visitors() -> tuple[type[AddImportsVisitor], type[RemoveImportsVisitor]]:
    """LibCST's ``AddImportsVisitor`` and ``RemoveImportsVisitor``, made cheap to construct.

    Each matcher-decoratable visitor LibCST makes (these two, and the ``GatherImportsVisitor`` and friends they
    make) reads every attribute of itself (``dir()``, about 1,000 names) for ``@m.visit``/``@m.leave``/
    ``@m.call_if_inside`` decorators, on every construction: about 15 ms, a third of the time a small file takes.
    The decorators are class attributes, so a class found to have none is not read again (its answer is ``{}``);
    a class that has some is read every time, as before. LibCST's own functions do the reading; where a release
    renames them, nothing is changed.
    """
    import libcst.matchers._visitors as reflection
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    for name in ("_gather_constructed_visit_funcs", "_gather_constructed_leave_funcs", "_gather_matchers"):
        gather = getattr(reflection, name, None)
        if gather is not None and not hasattr(gather, "torchport_once"):
            setattr(reflection, name, _once_per_class(gather))
    return AddImportsVisitor, RemoveImportsVisitor


def remove_imports(context: CodemodContext, tree: cst.Module) -> cst.Module:
    """LibCST's ``RemoveImportsVisitor`` run on ``tree``, the comments above an import it removes kept: they go to
    the statement after it (``# Setting up the device`` above a ``from torch import cuda`` the port leaves unused;
    a notebook's cell marker)."""
    return _comment_keeping_remover()(context).transform_module(tree)


@functools.cache
def _comment_keeping_remover() -> type[RemoveImportsVisitor]:
    _, RemoveImportsVisitor = import_visitors()

    class KeepingComments(RemoveImportsVisitor):  # type: ignore[misc, valid-type]
        def __init__(self, context: CodemodContext) -> None:
            super().__init__(context)
            self._pending: list[cst.EmptyLine] = []
            self._given: dict[int, list[cst.EmptyLine]] = {}

        def on_visit(self, node: cst.CSTNode) -> bool:
            if self._pending and isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                self._given[id(node)], self._pending = self._pending, []
            return bool(super().on_visit(node))

        def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
            result = super().on_leave(original, updated)
            if isinstance(original, cst.SimpleStatementLine) and (
                    not isinstance(result, cst.SimpleStatementLine) or not result.body) \
                    and any(line.comment is not None for line in original.leading_lines):
                self._pending.extend(original.leading_lines)  # removed: its comments go to the next statement
            elif id(original) in self._given and isinstance(result, (cst.SimpleStatementLine,
                                                                     cst.BaseCompoundStatement)):
                result = result.with_changes(leading_lines=[*self._given.pop(id(original)), *result.leading_lines])
            return result

    return KeepingComments


def _once_per_class(gather: Callable[[object], dict[Any, Any]]) -> Callable[[object], dict[Any, Any]]:
    none: set[type] = set()  # classes with no decorated method

    def read(visitor: object) -> dict[Any, Any]:
        if type(visitor) in none:
            return {}
        found = gather(visitor)
        if not found:
            none.add(type(visitor))
        return found

    read.torchport_once = True  # type: ignore[attr-defined]
    return read


def _add_imports(context: CodemodContext, tree: cst.Module) -> cst.Module:
    """``AddImportsVisitor`` run on the module's top-level imports only (and its first statement,
    which may be the docstring), each run of other statements stood in for by a one-line placeholder: it
    reads and changes nothing else, and walking (and copying) the whole tree cost more than the parse."""
    AddImportsVisitor, _ = import_visitors()
    originals: dict[str, list[cst.BaseStatement]] = {}
    stub: list[cst.BaseStatement] = []
    run: list[cst.BaseStatement] | None = None  # a run of other statements: one placeholder stands for it
    for index, statement in enumerate(tree.body):
        if index == 0 or (isinstance(statement, cst.SimpleStatementLine)
                          and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body)):
            stub.append(statement)
            run = None
            continue
        if run is None:
            name = f"__torchport_statement_{index}"
            run = originals[name] = []
            stub.append(cst.SimpleStatementLine([cst.Expr(cst.Name(name))], leading_lines=statement.leading_lines))
        run.append(statement)
    added = AddImportsVisitor(context).transform_module(tree.with_changes(body=stub))
    body: list[cst.BaseStatement] = []
    spacing: dict[int, Sequence[cst.EmptyLine]] = {}  # a statement's own leading lines, where LibCST gave it more
    for statement in added.body:
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Name) and small.value.value in originals:
            first, *rest = originals[small.value.value]
            body.extend((spaced := first.with_changes(leading_lines=statement.leading_lines), *rest))
            spacing[id(spaced)] = getattr(first, "leading_lines", ())
        else:
            body.append(statement)
    return added.with_changes(body=_after_torch(body, {_text(s) for s in stub}, spacing))


def _text(statement: cst.BaseStatement) -> str:
    return cst.Module([]).code_for_node(statement.with_changes(leading_lines=()))


def _after_torch(body: list[cst.BaseStatement], kept: set[str],
                 spacing: Mapping[int, Sequence[cst.EmptyLine]] | None = None) -> list[cst.BaseStatement]:
    """``body`` with the imports added (those whose text is not in ``kept``) moved to just after torch's first
    import where code runs between them and it: ``import os``, ``os.environ['OMP_NUM_THREADS'] = '1'``, ``import
    torch`` (an added import loads torch, so that setting, read when torch starts, must still come first). The
    statement they leave gets back its own leading lines (``spacing``, by ``id``): not the blank line LibCST put
    below them (pytorch_SSD's notebook: ``import sys``, then its ``sys.path`` change)."""
    added = [i for i, s in enumerate(body) if imports_only(s) and _text(s) not in kept]
    torch = next((i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine) and any(
        isinstance(x, cst.Import) and any((dotted_name(a.name) or "").split(".")[0] == "torch" for a in x.names)
        or isinstance(x, cst.ImportFrom) and x.module is not None
        and (dotted_name(x.module) or "").split(".")[0] == "torch" for x in s.body)), None)
    if not added or torch is None or added[0] > torch:
        return body
    between = body[added[-1] + 1:torch]
    if all(imports_only(s) for s in between):
        return body
    bound = [(a.asname.name if a.asname else a.name) for i in added for x in body[i].body  # type: ignore[attr-defined]
             for a in (x.names if isinstance(x.names, Sequence) else ())]
    names = {(dotted_name(n) or "").split(".")[0] for n in bound if isinstance(n, cst.Name | cst.Attribute)}
    if any(re.search(rf"\b{re.escape(name)}\b", _text(s)) for s in between for name in names if name):
        return body  # the code before torch's import uses what was added: it stays where it is
    taken = set(added)
    moved = [body[i] for i in added]
    after = body[added[-1] + 1]
    if spacing and id(after) in spacing:
        body = [*body[:added[-1] + 1], after.with_changes(leading_lines=spacing[id(after)]), *body[added[-1] + 2:]]
    rest = [s for i, s in enumerate(body) if i not in taken]
    at = rest.index(body[torch]) + 1
    return [*rest[:at], *moved, *rest[at:]]

