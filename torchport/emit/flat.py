"""One plain module from the runtime's parts (the vendored runtime): real functions, real source lines.

`flatten` takes the parts `torchport.emit.shake` kept (one text per module of ``torchport.runtime``) and
writes their statements, in import order, into one namespace:

* the parts' imports are merged at the top (standard library, then torch), and their relative imports
  go: every name now lives in this one module;
* ``from . import _backend as _b`` becomes ``_b = sys.modules[__name__]``: the parts read the picked state
  as attributes of ``_b`` (``_b._TYPE``), and the first read of one picks the device through the module
  ``__getattr__`` (PEP 562), as in the package;
* the parts' module ``__getattr__`` functions are chained: each one's final ``raise AttributeError`` calls
  the next (``_streams_getattr``);
* of the runtime's ``__init__`` only ``__all__`` stays (the rest forwards to its submodules).

A name bound at the top of two parts, or a builtin a part reads that another part rebinds (``range``),
cannot share one namespace: `flatten` raises, and the runtime's sources must be changed to avoid it.
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Mapping

_INIT = "__init__"
_STATE_PART = "_backend"  # `from . import _backend as _b`: the module whose attributes hold the picked state
_STATE_LINE = ("# The picked device is read as attributes of this module (_b._TYPE...): the first read picks it\n"
               "# (the module __getattr__, PEP 562).\n"
               "_b = sys.modules[__name__]\n")


class FlattenError(ValueError):
    """The runtime's parts cannot share one namespace (see the module docstring)."""


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _getattr_name(part: str) -> str:
    return f"{part}_getattr" if part.startswith("_") else f"_{part}_getattr"


class _Imports:
    """The parts' top-level imports, merged."""

    def __init__(self) -> None:
        self.plain: set[tuple[str, str | None]] = set()  # (module, asname)
        self.names: dict[str, set[tuple[str, str | None]]] = {}  # module -> {(name, asname)}

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            self.plain.update((a.name, a.asname) for a in node.names)
        elif node.module != "__future__":
            self.names.setdefault(node.module or "", set()).update((a.name, a.asname) for a in node.names)

    def text(self) -> str:
        def third_party(module: str) -> bool:
            return module.split(".")[0] not in sys.stdlib_module_names

        def alias(name: str, asname: str | None) -> str:
            return f"{name} as {asname}" if asname else name

        sections = []
        for outside in (False, True):
            lines = [f"import {alias(m, a)}" for m, a in sorted(self.plain) if third_party(m) == outside]
            for module in sorted(m for m in self.names if third_party(m) == outside):
                names = sorted(self.names[module], key=lambda n: (not n[0].isupper(), not n[0][:1].isupper(), n))
                lines.append(f"from {module} import {', '.join(alias(*n) for n in names)}")
            if lines:
                sections.append("\n".join(lines) + "\n")
        return "\n".join(sections)


def _check_names(trees: Mapping[str, ast.Module]) -> None:
    """Raise `FlattenError` where two parts bind one top-level name, or a part reads a builtin another rebinds."""
    owner: dict[str, str] = {}
    order = list(trees)
    for part, tree in trees.items():
        for node in tree.body:
            for name in _bound(node):
                if name != "__getattr__" and owner.setdefault(name, part) != part:
                    raise FlattenError(f"torchport.runtime.{owner[name]} and .{part} both bind {name!r}")
    for part, tree in trees.items():
        own = {name for node in tree.body for name in _bound(node)}
        for node in tree.body:
            at_import = not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
            for inner in ast.walk(node):
                if not (isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load)
                        and hasattr(builtins, inner.id) and inner.id not in own and inner.id in owner):
                    continue
                if not at_import or order.index(owner[inner.id]) < order.index(part):
                    raise FlattenError(f"torchport.runtime.{part} reads the builtin {inner.id!r}, which "
                                       f".{owner[inner.id]} rebinds")


def _part_body(part: str, text: str, tree: ast.Module, next_getattr: str | None, imports: _Imports) -> str:
    """The part's statements less its imports (merged into ``imports``), its ``__getattr__`` chained."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()  # 0-based line numbers
    for node in tree.body:
        end = node.end_lineno or node.lineno
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.level:
                if node.module is None and any(a.name != _STATE_PART for a in node.names):
                    raise FlattenError(f"torchport.runtime.{part}: unsupported import of a part")
            else:
                imports.add(node)
            drop.update(range(node.lineno - 1, end))
        elif isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            if part != _STATE_PART:
                first = node.lineno - 1
                lines[first] = lines[first].replace("def __getattr__(", f"def {_getattr_name(part)}(", 1)
            if next_getattr is not None:
                last = node.body[-1]
                if not (isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call)
                        and getattr(last.exc.func, "id", None) == "AttributeError"):
                    raise FlattenError(f"torchport.runtime.{part}.__getattr__ does not end by raising AttributeError")
                indent = lines[last.lineno - 1][:last.col_offset]
                lines[last.lineno - 1] = f"{indent}return {next_getattr}({node.args.args[0].arg})\n"
                drop.update(range(last.lineno, last.end_lineno or last.lineno))
    for inner in ast.walk(tree):
        if isinstance(inner, ast.ImportFrom) and inner.level and inner not in tree.body:
            raise FlattenError(f"torchport.runtime.{part}: a relative import inside a function")
    kept = [line for number, line in enumerate(lines) if number not in drop]
    return _squeeze("".join(kept))


def _squeeze(text: str) -> str:
    """``text`` without leading or trailing blank lines, and no more than two blank lines in a row."""
    out: list[str] = []
    blanks = 0
    for line in text.splitlines(keepends=True):
        if not line.strip():
            blanks += 1
            continue
        if out:
            out.append("\n" * min(blanks, 2))
        blanks = 0
        out.append(line)
    return "".join(out)


def flatten(parts: Mapping[str, str], header: str) -> str:
    """One module from the runtime's ``parts`` (see the module docstring).

    Args:
        parts: part name -> kept source (`torchport.emit.shake.shake`), in import order, ``"__init__"`` last.
        header: the module's first lines (comments and docstring), ending with a newline.

    Raises:
        FlattenError: the parts cannot share one namespace.
    """
    texts = {name: text for name, text in parts.items() if name != _INIT and text.strip()}
    trees = {name: ast.parse(text) for name, text in texts.items()}
    _check_names(trees)
    getattrs = [name for name, tree in trees.items()
                if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)]
    imports = _Imports()
    bodies = []
    for name, text in texts.items():
        at = getattrs.index(name) if name in getattrs else -1
        following = _getattr_name(getattrs[at + 1]) if 0 <= at < len(getattrs) - 1 else None
        body = _part_body(name, text, trees[name], following, imports)
        if body:
            bodies.append(f"# torchport.runtime.{name}\n{body}")
    reads_state = any(isinstance(n, ast.Name) and n.id == "_b" for tree in trees.values() for n in ast.walk(tree))
    if reads_state:
        imports.add(ast.Import(names=[ast.alias(name="sys")]))
    top = [header.rstrip("\n") + "\n", "from __future__ import annotations\n"]
    if imports.plain or imports.names:
        top.append(imports.text())
    if reads_state:
        top.append(_STATE_LINE)
    init = parts.get(_INIT, "")
    all_node = next((n for n in ast.parse(init).body if "__all__" in _bound(n)), None)
    if all_node is not None:
        bound = {name for tree in trees.values() for node in tree.body for name in _bound(node)}
        lazy = [name for name in ast.literal_eval(all_node.value) if name not in bound]  # type: ignore[attr-defined]
        declared = "".join(f"{name}: type  # picked on first read (__getattr__)\n" for name in lazy)
        listed = "".join(init.splitlines(keepends=True)[all_node.lineno - 1:all_node.end_lineno])
        bodies.append(declared + ("\n" if declared else "") + listed)
    # one blank line between the module's first sections, two around the parts' definitions (pycodestyle)
    return "\n".join(chunk.rstrip("\n") + "\n" for chunk in top) + "".join(
        "\n\n" + chunk.rstrip("\n") + "\n" for chunk in bodies)
