"""The one transformer that runs every family's rules in a single pass over a module.

Families (device, cuda_api, amp, distributed) hold the rules; this class holds the state they
share: qualified names, the context each CUDA string is used in, what was handled, and the
runtime import. Sites that look CUDA-specific and were not handled become diagnostics.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import CodePosition

from torchport.codemods import amp, cuda_api, device, distributed, pinned, unported
from torchport.codemods._names import Imports, chain, cst_import_map, qualify
from torchport.codemods._positions import Positions
from torchport.codemods._quiet import Anchors, map_statements
from torchport.codemods._registry import RULES_BY_CODE
from torchport.codemods._base import (
    Diagnostic,
    attribute_chain,
    dotted_name,
    is_cuda_literal,
    mentions_cuda_string,
)

if TYPE_CHECKING:
    from libcst.codemod import CodemodContext

RUNTIME_MODULE = "torchport.runtime"
_ALIASES = ("tp", "tp_runtime", "torchport_runtime")
_INFO_FLAGS = ("torch.backends.cudnn", "torch.backends.cuda")
_CUDA_LIBRARY_USES = ("cupy.cuda.", "numba.cuda.", "pycuda.")


class MigrateCodemod(cst.CSTTransformer):
    """Rewrite CUDA-specific PyTorch code in one module into calls of ``torchport.runtime``.

    Args:
        context: the LibCST codemod context.
        source: the module's source text, used only to pick a runtime alias that cannot collide.
        syntax: CPython's tree of ``source``; None when CPython cannot parse it (then the imports
            are read from the LibCST tree and every statement is visited).
        imports: `_names.import_map` of ``syntax``.
        trigger_lines: `_quiet.code_trigger_lines` of ``source``: statements spanning none are skipped.

    After ``transform_module`` runs, ``rewrites`` counts the rewrites per rule code and
    ``diagnostics`` lists what was left unchanged, sorted by line.
    """

    # No METADATA_DEPENDENCIES: qualified names come from the imports (`_names`), and positions
    # are resolved only once a rule fires (most files that pass the prefilter have no site).

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
        trigger_lines: Sequence[int] = (),
    ) -> None:
        super().__init__()
        self.context = context
        self.source = source
        self.syntax = syntax
        self.trigger_lines = trigger_lines
        self.enabled = enabled
        self.unsafe_fixes = unsafe_fixes
        self.suppressed = suppressed or {}
        self.targets = targets
        self.sites: list[Diagnostic] = []  # one per rewrite, for reports (message = rule summary)
        self.alias = "tp"
        self.runtime_imported = False
        self.torch_name: str | None = None
        self.rewrites: Counter[str] = Counter()
        self.diagnostics: list[Diagnostic] = []
        # id(original node) -> (context kind, rule code); kinds: "device", "str", "type"
        self.contexts: dict[int, tuple[str, str]] = {}
        self.device_pairs: set[int] = set()
        self.index_args: set[int] = set()
        self._called: set[int] = set()
        self._type_checks: set[int] = set()
        self.handled: set[int] = set()
        self._idioms: dict[int, tuple[bool, cst.BaseExpression | None]] = {}
        self._inner: set[int] = set()
        self._method_funcs: set[int] = set()
        self._cuda_refs: list[tuple[cst.CSTNode, str]] = []
        self._strings: list[cst.CSTNode] = []
        self._flag_site: cst.CSTNode | None = None
        self._cuda_imports: list[tuple[str, str, str | None]] = []
        self._needs_torch = False
        self._runtime_used = False  # a rewrite made a `tp.` node
        self.imports: Imports = imports or {}
        self._attr_names: set[int] = set()
        self._positions: Positions | None = None
        self._statement: cst.CSTNode | None = None  # the innermost anchored statement being visited
        self._statement_of: dict[int, cst.CSTNode | None] = {}  # for sites reported at the end
        self._quiet: set[int] = set()

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
        tree = tree.visit(self)
        if not self.context.scratch:
            return tree
        # Imported here: libcst.codemod pulls in libcst.matchers (0.3 s), which a cached run never needs.
        from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

        if AddImportsVisitor.CONTEXT_KEY in self.context.scratch:
            tree = _add_imports(self.context, tree)
        if RemoveImportsVisitor.CONTEXT_KEY in self.context.scratch:
            tree = RemoveImportsVisitor(self.context).transform_module(tree)
        return tree

    # Dispatch through a per-class table: CSTTransformer looks each method up by name on every
    # node and every child attribute, which dominated the run time.
    _visits: dict[type, Callable | None] = {}
    _leaves: dict[type, Callable | None] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        key = id(node)
        if key in self._quiet:  # no rule's trigger on its lines
            return False
        if key in self._positions.anchors:  # type: ignore[union-attr]
            self._statement = node
        kind = type(node)
        try:
            method = self._visits[kind]
        except KeyError:
            method = self._visits[kind] = getattr(type(self), f"visit_{kind.__name__}", None)
        if method is None:
            return True
        return method(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> object:
        kind = type(original_node)
        try:
            method = self._leaves[kind]
        except KeyError:
            method = self._leaves[kind] = getattr(type(self), f"leave_{kind.__name__}", None)
        if method is None:
            return updated_node
        return method(self, original_node, updated_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass

    def add_needed_import(self, module: str, obj: str | None = None, asname: str | None = None) -> None:
        from libcst.codemod.visitors import AddImportsVisitor

        AddImportsVisitor.add_needed_import(self.context, module, obj, asname)

    def remove_unused_import(self, module: str, obj: str | None = None, asname: str | None = None) -> None:
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import(self.context, module, obj, asname)

    # ---- helpers the families call -------------------------------------------------------

    def qnames(self, node: cst.CSTNode) -> set[str]:
        """The imported APIs ``node`` (a name, attribute chain, call or decorator) refers to."""
        if id(node) in self._attr_names:  # the `cuda` of `x.cuda` names nothing by itself
            return set()
        dotted = chain(node)
        return qualify(dotted, self.imports) if dotted else set()

    def start(self, node: cst.CSTNode) -> CodePosition:
        """Where ``node`` (of the original tree) starts: line from 1, column from 0."""
        assert self._positions is not None, "transform_module sets the positions"
        return self._positions.start(node, self._statement_of.get(id(node), self._statement))

    def has_qname(self, node: cst.CSTNode, name: str) -> bool:
        return name in self.qnames(node)

    def qname_startswith(self, node: cst.CSTNode, prefix: str) -> bool:
        return any(name.startswith(prefix) for name in self.qnames(node))

    def runtime_attr(self, name: str) -> cst.Attribute:
        self._runtime_used = True
        return cst.Attribute(value=cst.Name(self.alias), attr=cst.Name(name))

    def runtime_call(self, name: str, args: list[cst.BaseExpression]) -> cst.Call:
        return cst.Call(func=self.runtime_attr(name), args=[cst.Arg(a) for a in args])

    def runtime_call_name(self, node: cst.CSTNode) -> str | None:
        """The runtime function a node calls (``tp.device(...)`` -> ``"device"``), else None."""
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value == self.alias
        ):
            return node.func.attr.value
        return None

    def torch_attr(self, path: str) -> cst.BaseExpression:
        if self.torch_name is None:
            self._needs_torch = True
        return attribute_chain(f"{self.torch_name or 'torch'}.{path}")

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

    def _is_suppressed(self, code: str, line: int) -> bool:
        if line not in self.suppressed:
            return False
        codes = self.suppressed[line]
        return codes is None or any(code.startswith(c) for c in codes)

    def apply(self, code: str, node: cst.CSTNode) -> bool:
        """Whether rewrite ``code`` may change ``node``; records it when it may.

        A rule that is deselected or suppressed on the node's line leaves the node alone. An
        unsafe rule without ``--unsafe-fixes`` reports the site instead. Either way the node
        counts as handled, so no fallback diagnostic repeats it.
        """
        self.mark_handled(node)
        start = self.start(node)
        if not self.enabled(code) or self._is_suppressed(code, start.line):
            return False
        rule = RULES_BY_CODE[code]
        if rule.safety == "unsafe" and not self.unsafe_fixes:
            self.diagnostics.append(Diagnostic(code, start.line, start.column,
                                               f"{rule.summary} (fix available with --unsafe-fixes)"))
            return False
        self.rewrites[code] += 1
        self.sites.append(Diagnostic(code, start.line, start.column, rule.summary))
        return True

    def report(self, code: str, node: cst.CSTNode, message: str) -> None:
        start = self.start(node)
        if self.enabled(code) and not self._is_suppressed(code, start.line):
            self.diagnostics.append(Diagnostic(code, start.line, start.column, message))

    # ---- module and imports --------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        for statement in node.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        name = _dotted(alias.name)
                        if name == "torch":
                            self.torch_name = alias.evaluated_alias or "torch"
                        elif name == RUNTIME_MODULE and alias.asname:
                            self._use_alias(alias.evaluated_alias)
                elif isinstance(small, cst.ImportFrom) and _dotted(small.module) == "torchport":
                    if isinstance(small.names, cst.ImportStar):
                        continue
                    for alias in small.names:
                        if alias.evaluated_name == "runtime":
                            self._use_alias(alias.evaluated_alias or "runtime")
        if not self.runtime_imported:
            self.alias = next(a for a in _ALIASES if not re.search(rf"\b{a}\b", self.source))

    def _use_alias(self, alias: str | None) -> None:
        if alias:
            self.alias, self.runtime_imported = alias, True

    def rule_summary(self, code: str) -> str:
        return RULES_BY_CODE[code].summary

    def dotted(self, node: cst.CSTNode | None) -> str | None:
        return _dotted(node)

    def visit_Import(self, node: cst.Import) -> bool:
        unported.check_import(self, node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        unported.check_import(self, node)
        # Remember imports that bind torch.cuda names, to drop them once no longer used.
        module = None if node.relative else _dotted(node.module)
        if module and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                name = alias.evaluated_name
                if module == "torch.cuda" or module.startswith("torch.cuda.") or (module == "torch" and name == "cuda"):
                    self._cuda_imports.append((module, name, alias.evaluated_alias))
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        for node, name in self._cuda_refs:
            if id(node) in self.handled:
                continue
            code = unported.cuda_api_rule(name) if name != "torch.cuda" else None
            if code is not None:
                self.report(code, node, f"`{name}`: {self.rule_summary(code)}")
            elif name == "torch.cuda":
                self.report("TP101", node, "`torch.cuda` used as an object has no portable equivalent; left unchanged")
            else:
                self.report("TP101", node, f"`{name}` has no portable equivalent in torchport.runtime; left unchanged")
        for node in self._strings:
            if id(node) in self.handled:
                continue
            if distributed.is_nccl(node):
                self.report("TP105", node, '"nccl" outside a backend setting; left unchanged')
            else:
                text = cst.Module([]).code_for_node(node)
                self.report("TP102", node, f"CUDA device string {text} where torchport cannot tell how it is used; left unchanged")
        if self._flag_site is not None:
            self.report("TP107", self._flag_site,
                        "torch.backends.cudnn/cuda flags left unchanged: they are harmless on other backends")
        self.diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
        if not self.runtime_imported and self.rewrites and self._runtime_used:
            self.add_needed_import("torchport", "runtime", asname=self.alias)
        if self._needs_torch:
            self.add_needed_import("torch")
        if self.rewrites:
            for module, name, asname in self._cuda_imports:
                self.remove_unused_import(module, name, asname)
        return updated_node

    # ---- contexts: where each CUDA string is used ----------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        device.classify_call(self, node)
        amp.classify_call(self, node)
        distributed.classify_call(self, node)
        unported.check_call(self, node)
        unported.check_double_call(self, node)
        self._called.add(id(node.func))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
            self._method_funcs.add(id(node.func))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._classify_assignment([t.target for t in node.targets], node.value)
        unported.check_assign(self, node)

    def visit_If(self, node: cst.If) -> None:
        unported.check_if(self, node)

    def leave_Assert(
        self, original_node: cst.Assert, updated_node: cst.Assert
    ) -> cst.Assert | cst.RemovalSentinel:
        return cst.RemoveFromParent() if unported.rewrite_assert(self, original_node) else updated_node

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._classify_assignment([node.target], node.value)

    def _classify_assignment(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        names = [t.attr.value if isinstance(t, cst.Attribute) else getattr(t, "value", "") for t in targets]
        if any(isinstance(n, str) and n.endswith("type") for n in names):
            self.set_context(value, "type", "TP004")
        else:
            self.set_context(value, "str", "TP003")

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None:
            self.set_context(node.default, "str", "TP003")

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.set_context(node.value, "str", "TP003")

    def visit_DictElement(self, node: cst.DictElement) -> None:
        key = node.key.evaluated_value if isinstance(node.key, cst.SimpleString) else None
        if isinstance(key, str) and ("device" in key or "backend" in key):
            self.set_context(node.value, "str", "TP003")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if device.tensor_type_check(node) is not None:
            self._type_checks.add(id(node))
            self.mark_handled(node)
            for side in _cuda_compared(node):
                self.handled.add(id(side))
            return
        # `x == "cuda"` may mean "on the accelerator" or guard a CUDA-only path (fused kernels,
        # CUDA extensions): torchport cannot tell which, so it reports and leaves it.
        for side in _cuda_compared(node):
            self.handled.add(id(side))
            self.report("TP104", side, 'comparison with the device type "cuda"; left unchanged (it may guard '
                        "CUDA-only code)")

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.BaseExpression:
        if id(original_node) not in self._type_checks:
            return updated_node
        return device.rewrite_type_check(self, original_node, updated_node) or updated_node

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        idiom = device.availability_idiom(self, node)
        if idiom is None:
            if isinstance(node.test, cst.Comparison) and _cuda_compared(node.test):
                # `"cuda" if "cuda" in device else "cpu"` derives a type from a device string,
                # which already works on every backend: keep the branches as the test keeps "cuda".
                for branch in (node.body, node.orelse):
                    self.contexts.pop(id(branch), None)
                    self.handled.add(id(branch))
            return True
        self._idioms[id(node)] = idiom
        return False  # the whole expression is replaced; its parts need no visit

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        idiom = self._idioms.get(id(original_node))
        if idiom is None:
            return updated_node
        wants_object, index = idiom
        kind = self.contexts.get(id(original_node), ("str", ""))[0]
        if not self.apply("TP005", original_node):
            return updated_node
        if kind == "type":
            return self.runtime_call("device_type", [])
        name = "device" if wants_object or kind == "device" else "device_str"
        return self.runtime_call(name, [index] if index is not None else [])

    # ---- candidates for diagnostics ------------------------------------------------------

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if is_cuda_literal(node) or distributed.is_nccl(node):
            self._strings.append(node)
            self._statement_of[id(node)] = self._statement

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if mentions_cuda_string(node):
            self._strings.append(node)
            self._statement_of[id(node)] = self._statement

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._inner.add(id(node.value))
        self._attr_names.add(id(node.attr))
        if id(node) in self._inner:
            return
        names = self.qnames(node)
        self._collect_cuda_ref(node, names)
        if self._flag_site is None and any(n.startswith(_INFO_FLAGS) for n in names):
            self._flag_site = node
            self._statement_of[id(node)] = self._statement
        unported.check_dtype(self, node, names)
        # Only torch's own `.cuda` methods (`torch.Tensor.cuda`, ...): `args.cuda` is a user's flag.
        if any(n == "torch.version.cuda" or n.startswith("torch.version.cuda.") for n in names):
            self.report("TP101", node, "`torch.version.cuda` is None on builds without CUDA; left unchanged")
        elif dotted_name(node) and any(n.startswith(_CUDA_LIBRARY_USES) for n in names):
            self.report("TP208", node, f"`{dotted_name(node)}` uses a CUDA-only library")
        elif node.attr.value == "cuda" and id(node) not in self._method_funcs and any(
            n.startswith("torch.") and n != "torch.cuda" for n in names
        ):
            self.report("TP106", node, "`.cuda` referenced without a call; left unchanged")

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._inner:
            self._collect_cuda_ref(node, self.qnames(node))

    def _collect_cuda_ref(self, node: cst.CSTNode, names: set[str]) -> None:
        if dotted_name(node) is None:  # a chain through a call, e.g. current_stream().wait_stream
            return
        for name in names:
            if name == "torch.cuda" or name.startswith("torch.cuda."):
                self._cuda_refs.append((node, name))
                self._statement_of[id(node)] = self._statement
                return

    # ---- rewrites ------------------------------------------------------------------------

    def _rename(self, original: cst.CSTNode, updated: cst.BaseExpression) -> cst.BaseExpression:
        names = self.qnames(original)
        if "torch.cuda.is_available" in names and id(original) not in self._called:
            self.mark_handled(original)
            self.report("TP109", original, "`torch.cuda.is_available` without a call is always true: call it")
            return updated
        for name in names:
            found = cuda_api.lookup(name)
            if found is None:
                continue
            code, new, is_runtime = found
            if not self.apply(code, original):
                return updated
            return self.runtime_attr(new) if is_runtime else self.torch_attr(new)
        return updated

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return device.rewrite_is_cuda(self, original_node, updated_node) or self._rename(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._rename(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        # Rules that change arguments compose; rules that replace the call take the first match.
        for argument_rule in (distributed.rewrite_call, pinned.rewrite_arguments, device.rewrite_to_index):
            updated_node = argument_rule(self, original_node, updated_node) or updated_node
        for rule in (amp.rewrite_call, cuda_api.rewrite_legacy_call, device.rewrite_cuda_method,
                     device.rewrite_torch_device, pinned.rewrite_method):
            replacement = rule(self, original_node, updated_node)
            if replacement is not None:
                return replacement
        return updated_node

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        replacement = amp.rewrite_decorator(self, original_node, updated_node)
        return updated_node if replacement is None else replacement

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.BaseExpression:
        return (device.rewrite_literal(self, original_node, updated_node)
                or distributed.rewrite_literal(self, original_node) or updated_node)

    def leave_FormattedString(
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.BaseExpression:
        return device.rewrite_literal(self, original_node, updated_node) or updated_node



def _add_imports(context: CodemodContext, tree: cst.Module) -> cst.Module:
    """``AddImportsVisitor`` run on the module's top-level imports only (and its first statement,
    which may be the docstring), every other statement stood in for by a one-line placeholder: it
    reads and changes nothing else, and walking (and copying) the whole tree cost more than the parse."""
    from libcst.codemod.visitors import AddImportsVisitor

    originals: dict[str, cst.BaseStatement] = {}
    stub: list[cst.BaseStatement] = []
    for index, statement in enumerate(tree.body):
        if index == 0 or (isinstance(statement, cst.SimpleStatementLine)
                          and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body)):
            stub.append(statement)
            continue
        name = f"__torchport_statement_{index}"
        originals[name] = statement
        stub.append(cst.SimpleStatementLine([cst.Expr(cst.Name(name))], leading_lines=statement.leading_lines))
    added = AddImportsVisitor(context).transform_module(tree.with_changes(body=stub))
    body = []
    for statement in added.body:
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Name) and small.value.value in originals:
            statement = originals[small.value.value].with_changes(leading_lines=statement.leading_lines)
        body.append(statement)
    return added.with_changes(body=body)


def _cuda_compared(node: cst.Comparison) -> list[cst.SimpleString]:
    """The ``"cuda"`` literals compared with ``==``, ``!=``, ``in`` or ``not in`` in ``node``."""
    found = []
    left = node.left
    for target in node.comparisons:
        if isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
            found += [s for s in (left, target.comparator) if isinstance(s, cst.SimpleString) and s.evaluated_value == "cuda"]
        left = target.comparator
    return found


def _dotted(node: cst.CSTNode | None) -> str | None:
    return dotted_name(node) if node is not None else None
