"""What the installed torch has, read from its files without importing it.

An import of a torch module or name that the installed torch lacks fails on every device: RCAN's
``from torch.utils.data.dataloader import _DataLoaderIter`` (PyTorch 0.4), GraphCL's ``torch.utils.ffi`` (removed
in 1.0), ``torch._six`` (removed in 2.0). A program that always makes such an import runs nowhere, so porting it
changes nothing a maintainer could run. Only what torch's own files settle counts: a name a compiled extension, a
module ``__getattr__``, a star import or ``sys.modules`` could supply is taken to exist.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from pathlib import Path

from torchport.model import torch_facts

RUNS_NOWHERE = "it runs on no device"  # ends the reason of a requirement no device meets


@functools.cache
def _root() -> Path | None:
    """The installed torch's package folder, found without importing torch; None where torch is not installed."""
    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def version_tuple() -> tuple[int, int] | None:
    """The installed torch's major and minor version (``(2, 13)``); None where it cannot be read."""
    parts = version().split(".")
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


@functools.cache
def version() -> str:
    """The installed torch's version (``"2.13.0"``, from ``torch/version.py``); ``""`` where it cannot be read."""
    root = _root()
    try:
        tree = ast.parse((root / "version.py").read_text(encoding="utf-8")) if root is not None else None
    except (OSError, SyntaxError, ValueError):
        return ""
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__"
                                                for t in node.targets) and isinstance(node.value, ast.Constant):
            return str(node.value.value).split("+", 1)[0]
    return ""


@functools.cache
def importable(top: str) -> bool:
    """Whether the installed packages hold the top-level module ``top`` (a name a project's own package may share:
    CellViT's scripts import ``cellvit``, the pip package of the same code): looked up in ``sys.path`` without the
    working folder, so the answer is the same wherever torchport runs."""
    import importlib.machinery
    import os
    import sys

    here = os.getcwd()
    paths = [p for p in sys.path if os.path.abspath(p) != here]  # ("" is the working folder too)
    try:
        return importlib.machinery.PathFinder.find_spec(top, paths) is not None
    except (ImportError, ValueError):
        return True


def _compiled(folder: Path, name: str) -> bool:
    """Whether ``folder`` holds a compiled extension module ``name`` (``_C.cpython-311-x86_64-linux-gnu.so``)."""
    return any(folder.glob(f"{name}.*.so")) or any(folder.glob(f"{name}.*.pyd")) or (folder / f"{name}.so").exists()


@functools.cache
def _module(name: str) -> Path | bool:
    """Where torch module ``name`` (``"torch.utils.data.dataloader"``) is: its source file (a package's
    ``__init__.py``); True where it exists but its source does not settle its names (compiled, a namespace
    package, put in ``sys.modules``); False where the installed torch lacks it."""
    root = _root()
    parts = name.split(".")
    if root is None or parts[0] != "torch":
        return True
    folder = root
    for position, part in enumerate(parts[1:], start=1):
        if (folder / part / "__init__.py").exists():
            folder = folder / part
            continue
        last = position == len(parts) - 1
        if (folder / f"{part}.py").exists():
            return folder / f"{part}.py" if last else True  # `torch.a.b` under a plain module: sys.modules may hold it
        if (folder / part).is_dir() or _compiled(folder, part):
            return True
        parent = (folder / "__init__.py").read_text(encoding="utf-8", errors="replace")
        # torch's own root puts device modules (`torch.npu`, public names) in sys.modules; elsewhere any name
        if "sys.modules[" in parent and (folder != root or not part.startswith("_")):
            return True
        return False
    return folder / "__init__.py"


@functools.cache
def _binds(source: Path) -> frozenset[str] | None:
    """The names module ``source`` binds at its top level (in ``if``/``try`` blocks too); None where its source
    does not settle them (a module ``__getattr__``, a star import, ``globals()``)."""
    try:
        return binds(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@functools.cache
def module_methods() -> frozenset[str]:
    """The methods the installed torch's ``torch.nn.Module`` defines (``to``, ``eval``, ``load_state_dict``), read
    from ``torch/nn/modules/module.py``; empty where it cannot be read."""
    root = _root()
    try:
        tree = ast.parse((root / "nn" / "modules" / "module.py").read_text(encoding="utf-8")) if root else None
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "Module"), None) if tree else None
    return frozenset(f.name for f in cls.body if isinstance(f, ast.FunctionDef)) if cls is not None else frozenset()


def binds(text: str, tree: ast.Module | None = None) -> frozenset[str] | None:
    """The names a module of source ``text`` (CPython's ``tree`` of it, where the caller has it) binds at its top
    level (in ``if``/``try`` blocks too); None where its source does not settle them (a syntax error, a module
    ``__getattr__``, a star import, ``globals()``, ``setattr`` or ``sys.modules``, ``exec``)."""
    if _DYNAMIC_BINDING.search(text):
        return None
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
    bound: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return None
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            bound.update((alias.asname or alias.name).split(".", 1)[0] for alias in node.names)
        else:
            bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
            for field in ("body", "orelse", "finalbody", "handlers"):
                statements.extend(getattr(node, field, None) or ())
    if "__getattr__" in bound:  # lazy_loader's `__getattr__, __dir__, __all__ = lazy.attach(...)`
        return None
    # `global X` in a function: it may bind X when it runs (at import, too)
    return frozenset(bound.union(*(n.names for n in ast.walk(tree) if isinstance(n, ast.Global))))


def lacks(module: str, name: str | None = None) -> bool:
    """Whether the installed torch lacks module ``module`` (``"torch.utils.ffi"``), or, given ``name``, lacks it
    there too as a name or a submodule (``from torch.utils.data.dataloader import _DataLoaderIter``). False for
    anything outside torch, and wherever torch's files do not settle it."""
    where = _module(module)
    if where is False:
        return True
    if name is None or where is True:
        return False
    assert isinstance(where, Path)
    if where.name == "__init__.py" and _module(f"{module}.{name}") is not False:
        return False  # a submodule
    bound = _binds(where)
    return bound is not None and name not in bound


def lacking(statement: ast.Import | ast.ImportFrom) -> str | None:
    """Why ``statement`` fails on every device (it imports what the installed torch lacks), or None."""
    missing = missing_imports(statement)
    return f"imports {missing[0]}, which torch {version()} (the one installed) lacks: {RUNS_NOWHERE}" if missing \
        else None


def missing_imports(statement: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names ``statement`` imports from torch that the installed torch lacks (`lacks`), in order."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names if alias.name.startswith("torch.") and lacks(alias.name)]
    module = statement.module or ""
    if statement.level or not (module == "torch" or module.startswith("torch.")):
        return []
    if lacks(module):
        return [module]
    return [f"{module}.{alias.name}" for alias in statement.names if alias.name != "*" and lacks(module, alias.name)]


_IMPORTS = re.compile(torch_facts.TEXT["torch_import"][0], re.MULTILINE)
_DYNAMIC_BINDING = torch_facts.text("dynamic_binding")


def may_lack(text: str) -> bool:
    """Whether source ``text`` has an import line of a torch module or name the installed torch lacks (a text
    scan, to find the modules worth parsing for `missing_imports`; an import it misses is on a continued line)."""
    for found in _IMPORTS.finditer(text):
        module, names, imported = found.groups()
        if imported is not None and lacks(imported):
            return True
        if module is not None and (lacks(module) or any(
                lacks(module, name.split()[0]) for name in names.split(",") if name.split())):
            return True
    return False
