"""Where the tensors of a checkpoint a module loads were saved, read from the file without unpickling it.

``torch.save`` records each storage's device (``"cpu"``, ``"cuda:0"``) in the pickle, as a string of the
persistent id. A file of the repository saved from CPU tensors (facenet-pytorch's ``data/pnet.pt``, a dataset
packaged with the code) loads the same on every backend: a ``map_location`` added to its ``torch.load`` changes
nothing. Only the pickle's opcodes are read (`pickletools.genops`), never executed; the path must be one the code
spells out (a constant, or ``os.path.join(os.path.dirname(__file__), ...)``, also through a local assigned once).
"""

from __future__ import annotations

import ast
import pickletools
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from torchport.model.evaluate import qualified
from torchport.model.torch_facts import text

_LOCATION = text("saved_location")
_LEGACY_PICKLES = 5  # the legacy format: magic number, protocol, system info, the object, the storage keys
_MAX_PICKLE = 64 * 2**20  # bytes of a zip's data.pkl read at most


def saved_on(path: Path) -> frozenset[str] | None:
    """The device types of the storages saved in the checkpoint at ``path`` (``{"cpu"}``; empty for a pickle that
    holds no tensor), or None where the file is not one ``torch.save`` wrote (or cannot be read).

    Args:
        path: a file, in the zip format of ``torch.save`` or its legacy format.
    """
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
                if len(names) != 1 or archive.getinfo(names[0]).file_size > _MAX_PICKLE:
                    return None
                return _locations([archive.read(names[0])])
        with path.open("rb") as stream:
            return _locations([stream] * _LEGACY_PICKLES)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return None


def _locations(pickles: list[object]) -> frozenset[str] | None:
    found: set[str] = set()
    for data in pickles:
        for _, arg, _ in pickletools.genops(data):  # type: ignore[arg-type]
            if isinstance(arg, str) and _LOCATION.fullmatch(arg):
                found.add(arg.split(":")[0])
    return frozenset(found)


def loaded_file(call: ast.Call, scope: ast.AST, folder: Path, imports: Mapping[str, str]) -> Path | None:
    """The existing file a ``torch.load(<path>, ...)`` call reads, where ``<path>`` is spelled out relative to the
    module's ``folder``: a constant, ``os.path.join(os.path.dirname(__file__), "..", "data", "pnet.pt")``, or a
    name ``scope`` (the enclosing function or module) assigns once to one of those; else None. ``imports``: the
    module's (`evaluate.imported`), through which ``osp.join`` is ``os.path.join``."""
    if not call.args:
        return None
    value: ast.expr | None = call.args[0]
    if isinstance(value, ast.Name):
        stores = [s.value for s in ast.walk(scope) if isinstance(s, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == value.id for t in s.targets)]
        value = stores[0] if len(stores) == 1 else None
    parts = _path_parts(value, imports) if value is not None else None
    if parts is None:
        return None
    path = folder.joinpath(*parts)
    return path if path.is_file() else None


def _path_parts(node: ast.expr, imports: Mapping[str, str]) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Call) and qualified(node.func, imports) == "os.path.join" and node.args:
        first, *rest = node.args
        if not _here(first, imports) or not all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                                for a in rest):
            return None
        return [a.value for a in rest]  # type: ignore[attr-defined]
    return None


def _here(node: ast.expr, imports: Mapping[str, str]) -> bool:
    """``os.path.dirname(__file__)``, also of ``os.path.abspath(__file__)`` or ``os.path.realpath(__file__)``."""
    if not (isinstance(node, ast.Call) and qualified(node.func, imports) == "os.path.dirname"
            and len(node.args) == 1):
        return False
    inner = node.args[0]
    if isinstance(inner, ast.Call) and qualified(inner.func, imports) in ("os.path.abspath", "os.path.realpath") \
            and len(inner.args) == 1:
        inner = inner.args[0]
    return isinstance(inner, ast.Name) and inner.id == "__file__"


def storage_parameters(trees: Iterable[ast.Module]) -> frozenset[tuple[str, str]]:
    """``(function, parameter)`` of the functions of ``trees`` handed the storage a ``map_location`` function gets:
    ``torch.load(path, map_location=lambda storage, loc: Util.set_device(storage))`` hands it to every function
    named ``set_device`` (the first parameter after ``self``), and on to what that one hands its parameter to by
    position (distributed-pytorch-template's ``set_gpu(args)``, whose ``args.cuda()`` gets a storage). A storage's
    ``to`` takes its device by keyword alone (``UntypedStorage.to(*, device, non_blocking=False)``).

    Functions are matched by name across the trees, never by type: what this decides is only the keyword form of a
    call that takes it either way for tensors and modules."""
    defined: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    handed: set[tuple[str, int]] = set()  # (name of the function called, position) given a storage
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.keyword) and node.arg == "map_location" and isinstance(
                    node.value, ast.Lambda) and node.value.args.args:
                handed |= _handed(node.value.body, node.value.args.args[0].arg)
    found: set[tuple[str, str]] = set()
    todo = list(handed)
    while todo:
        name, index = todo.pop()
        for function in defined.get(name, ()):
            names = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
            names = names[1:] if names[:1] in (["self"], ["cls"]) else names
            if index < len(names) and (name, names[index]) not in found:
                found.add((name, names[index]))
                todo.extend(more for more in _handed(function, names[index]) if more not in handed)
                handed.update(todo)
    return frozenset(found)


def _handed(node: ast.AST, name: str) -> set[tuple[str, int]]:
    """``(function name, position)`` of each call under ``node`` given ``name`` itself as a positional argument."""
    return {(call.func.id if isinstance(call.func, ast.Name) else call.func.attr, index)
            for call in ast.walk(node)
            if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))
            for index, given in enumerate(call.args) if isinstance(given, ast.Name) and given.id == name}
