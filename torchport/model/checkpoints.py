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
from collections.abc import Mapping
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
