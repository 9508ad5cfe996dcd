"""Qualified names from a module's imports: what ``tc.synchronize`` or ``A.autocast`` stand for.

A cheap stand-in for LibCST's ``QualifiedNameProvider``, which runs full scope analysis and cost
about ten times the parse on big trees. The rules only ask which imported API a name or attribute
chain refers to (``torch.cuda.synchronize``, ``torch.device``), so the imports are enough: they are
read once with CPython's ``ast`` (fast, in C), and a chain is qualified through its head. Names
bound any other way (locals, parameters, builtins) have no qualified name here, as the rules need
none. The known difference: a local that shadows an imported name in an inner scope is still
read as the import.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Mapping

import libcst as cst
from libcst.helpers import get_full_name_for_node

from torchport.model.torch_facts import STAR_BINDS

Imports = Mapping[str, frozenset[str]]


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def blocks(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every list of statements in ``tree`` (bodies, ``else`` branches, handlers' and cases' bodies),
    at any depth, without walking expressions (``ast.walk`` visits ten times as many nodes, which
    made it cost more than the parse)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if block:
                stack.extend(block)
                if name not in ("handlers", "cases"):  # their items are not statements; their bodies are
                    yield block


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement in ``tree``, at any depth (see `blocks`)."""
    for block in blocks(tree):
        yield from block


def import_map(tree: ast.Module) -> Imports:
    """Every name an import binds anywhere in ``tree`` -> the qualified names it may stand for.

    ``import torch.cuda as tc`` binds ``tc`` to ``torch.cuda``; ``import torch.cuda`` binds ``torch``
    to ``torch``; ``from . import x`` binds ``x`` to ``.x``. Star imports bind `STAR_BINDS`.

    Where CPython cannot parse the source, read them from the LibCST tree with `cst_import_map`.
    """
    bound: defaultdict[str, set[str]] = defaultdict(set)
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname].add(alias.name)
                else:
                    head = alias.name.split(".", 1)[0]
                    bound[head].add(head)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    for name, full in STAR_BINDS.items():
                        bound[name].add(full)
                else:
                    joined = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name
                    bound[alias.asname or alias.name].add(joined)
    return {name: frozenset(names) for name, names in bound.items()}


class _ImportCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.bound: defaultdict[str, set[str]] = defaultdict(set)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = get_full_name_for_node(alias.name) or ""
            if alias.asname:
                self.bound[alias.evaluated_alias or name].add(name)
            else:
                head = name.split(".", 1)[0]
                self.bound[head].add(head)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar):
            for name, full in STAR_BINDS.items():
                self.bound[name].add(full)
            return False
        module = "." * len(node.relative) + ((get_full_name_for_node(node.module) or "") if node.module else "")
        for alias in node.names:
            name = alias.evaluated_name
            joined = f"{module}.{name}" if module and not module.endswith(".") else module + name
            self.bound[alias.evaluated_alias or name].add(joined)
        return False


def cst_import_map(module: cst.Module) -> Imports:
    """`import_map` read from a LibCST tree (slower: a Python walk of every node)."""
    collector = _ImportCollector()
    module.visit(collector)
    return {name: frozenset(names) for name, names in collector.bound.items()}


def chain(node: cst.CSTNode) -> str | None:
    """The dotted chain a node names, through calls and subscripts as ``QualifiedNameProvider`` reads
    them: ``torch.cuda.current_stream().synchronize`` -> ``"torch.cuda.current_stream.synchronize"``.
    None for anything else (a literal, an operator)."""
    parts: list[str] = []
    while True:
        if isinstance(node, cst.Name):
            parts.append(node.value)
            return ".".join(reversed(parts))
        if isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Decorator):
            node = node.decorator
        else:
            return None


def qualify(dotted: str, imports: Imports) -> set[str]:
    """The qualified names of a dotted chain whose head was imported; empty otherwise."""
    head, _, rest = dotted.partition(".")
    bound = imports.get(head)
    if not bound:
        return set()
    return {f"{name}.{rest}" if rest else name for name in bound}


def ast_chain(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of ``ast.Name``/``ast.Attribute`` nodes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``, not those of the functions, classes and lambdas defined in it (their definitions are
    yielded, not what they hold)."""
    for child in ast.iter_child_nodes(scope):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield from own_nodes(child)


def environment_read(node: ast.expr) -> str | None:
    """The variable ``node`` reads: ``os.environ.get("V")`` (with a default too), ``os.getenv("V")``,
    ``os.environ["V"]``; None for anything else."""
    if isinstance(node, ast.Call) and node.args and isinstance(key := node.args[0], ast.Constant) and ast_chain(
            node.func) in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
        return key.value if isinstance(key.value, str) else None
    if isinstance(node, ast.Subscript) and ast_chain(node.value) in ("os.environ", "environ") and isinstance(
            node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    return None
