"""How a fix that needs the runtime is written out.

Rules build fixes through `Migrator.runtime_call` and `Migrator.runtime_attr`, never by spelling
``tp.`` themselves, so the same rules can be rendered in more than one form. `PackageRuntime` writes
``from torchport import runtime as tp`` and ``tp.device()``; other renderers (a runtime vendored into
the project, plain PyTorch) implement the same four methods.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from torchport.emit import placement
from torchport.emit.names import dotted_name

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator

RUNTIME_MODULE = "torchport.runtime"
_ALIASES = ("tp", "tp_runtime", "torchport_runtime")


class Renderer(Protocol):
    """What a renderer of runtime calls provides; ``version``: ``(major, minor)`` of the oldest torch the output
    must run on, ``(0, 0)`` where the project says nothing."""

    version: tuple[int, int]

    def prepare(self, m: Migrator, module: cst.Module) -> None:
        """Read the module before the pass (an existing import of the runtime, free names)."""

    def attr(self, m: Migrator, name: str) -> cst.BaseExpression:
        """The expression for the runtime's ``name``."""

    def called(self, node: cst.CSTNode) -> str | None:
        """The runtime function ``node`` calls, if it is a runtime call this renderer wrote."""

    def finish(self, m: Migrator, module: cst.Module) -> cst.Module:
        """Schedule the imports the rendered calls need; returns the module (a renderer may rewrite it)."""


class PackageRuntime:
    """``from torchport import runtime as tp``; ``tp_runtime`` when ``tp`` is taken; an existing alias is reused.

    Args:
        module: the runtime's dotted module name: ``torchport.runtime``, or a vendored copy
            (``pkg._torchport_runtime``, imported as ``from pkg import _torchport_runtime as tp``;
            ``_torchport_runtime`` alone, imported as ``import _torchport_runtime as tp``).
        bootstrap: for a vendored copy the file cannot import as it is, the expression of the folder it
            puts on ``sys.path`` first (`torchport.emit.vendor.bootstrap_folder`); not needed when the
            file imports the copy's top-level package itself.
        version: the oldest torch the project requires, ``(0, 0)`` where it says nothing: a rule that would write
            a torch API added later leaves the code as it is.
    """

    def __init__(self, module: str = RUNTIME_MODULE, bootstrap: str = "", version: tuple[int, int] = (0, 0)) -> None:
        self.module = module
        self.version = version
        self.bootstrap = bootstrap
        parent, _, name = module.rpartition(".")
        # `import _torchport_runtime as tp` (no parent) or `from pkg import _torchport_runtime as tp`
        self.import_from: tuple[str, str | None] = (parent, name) if parent else (name, None)
        self.alias = "tp"
        self.imported = False
        self.used = False

    def prepare(self, m: Migrator, module: cst.Module) -> None:
        parent, name = self.import_from if self.import_from[1] else ("", self.import_from[0])
        for statement in module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if dotted_name(alias.name) == self.module and alias.asname:
                            self._use(alias.evaluated_alias)
                elif (isinstance(small, cst.ImportFrom) and small.module is not None
                      and dotted_name(small.module) == parent and not isinstance(small.names, cst.ImportStar)):
                    for alias in small.names:
                        if alias.evaluated_name == name:
                            self._use(alias.evaluated_alias or name)
        if not self.imported:
            self.alias = next(a for a in _ALIASES if not re.search(rf"\b{a}\b", m.source))
        package = self.module.partition(".")[0] if "." in self.module else ""
        if package and re.search(rf"^[ \t]*(?:from|import)[ \t]+{package}\b", m.source, re.MULTILINE):
            self.bootstrap = ""  # the file imports the package: so can it the copy inside

    def _use(self, alias: str | None) -> None:
        if alias:
            self.alias, self.imported = alias, True

    def attr(self, m: Migrator, name: str) -> cst.BaseExpression:
        self.used = True
        return cst.Attribute(value=cst.Name(self.alias), attr=cst.Name(name))

    def called(self, node: cst.CSTNode) -> str | None:
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value == self.alias
        ):
            return node.func.attr.value
        return None

    def finish(self, m: Migrator, module: cst.Module) -> cst.Module:
        if not self.used or self.imported:
            return module
        if not self.bootstrap:
            return self._import(m, module)
        m.add_needed_import("os")
        m.add_needed_import("sys")
        parent, name = self.import_from
        imported = f"from {parent} import {name}" if name else f"import {parent}"
        lines = [cst.parse_statement(f"sys.path.insert(0, {self.bootstrap})\n").with_changes(
                     leading_lines=[cst.EmptyLine(comment=cst.Comment("# where torchport's vendored runtime is"))]),
                 cst.parse_statement(f"{imported} as {self.alias}  # noqa: E402\n")]
        return placement.insert(module, placement.after_imports(module.body, lambda _: False, source=m.source), lines)

    def _import(self, m: Migrator, module: cst.Module) -> cst.Module:
        """The runtime's import: with the leading imports (after a leading ``try`` of imports too), or after a
        ``sys.path`` change above the first ``def`` (`torchport.emit.placement.path_change`), which may be what makes
        it importable."""
        parent, name = self.import_from
        imported = f"from {parent} import {name}" if name else f"import {parent}"
        guard = placement.torch_try(module.body)
        if guard is not None:
            return placement.into_else(module, guard, [cst.parse_statement(f"{imported} as {self.alias}\n")],
                                       self.alias)
        change = placement.path_change(module.body, m.source)
        uses = re.compile(rf"\b{self.alias}\.")
        at = placement.after_imports(module.body, lambda _: False,
                                     lambda s: uses.search(cst.Module([]).code_for_node(s)) is not None, m.source)
        # LibCST adds it above the first statement that is no import line: above a leading `try` of imports, which
        # a project may need first (e3_diffusion's rdkit before torch)
        if (change is None or at <= change) and not any(isinstance(s, cst.Try) for s in module.body[:at]):
            m.add_needed_import(*self.import_from, asname=self.alias)
            return module
        above = cst.Module([]).code_for_node(module.body[at - 1]).rstrip().splitlines()[-1]
        noqa = "  # noqa: E402" if "noqa" in above.partition("#")[2] else ""  # as the project's own imports there
        return placement.insert(module, at, [cst.parse_statement(f"{imported} as {self.alias}{noqa}\n")])
