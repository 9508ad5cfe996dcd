"""Shared reads of CPython's trees, made once per tree."""

from __future__ import annotations

import ast
import weakref

_PARENTS: weakref.WeakKeyDictionary[ast.AST, dict[int, ast.AST]] = weakref.WeakKeyDictionary()


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node under ``tree`` (by ``id``) -> its parent; read once per tree object and kept while it lives.
    The trees are never changed after their parse, so the map stays true."""
    found = _PARENTS.get(tree)
    if found is None:
        found = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        _PARENTS[tree] = found
    return found
