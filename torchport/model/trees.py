"""Shared reads of CPython's trees, made once per tree."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Mapping

_PARENTS: weakref.WeakKeyDictionary[ast.AST, dict[int, ast.AST]] = weakref.WeakKeyDictionary()


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node under ``tree`` (by ``id``) -> its parent; read once per tree object and kept while it lives.
    The trees are never changed after their parse, so the map stays true."""
    found = _PARENTS.get(tree)
    if found is None:
        found = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        _PARENTS[tree] = found
    return found


def enclosing_scope(node: ast.AST, parents: Mapping[int, ast.AST]) -> ast.AST | None:
    """The innermost function (or the module) above ``node``, whose names its code reads, from `parent_map`'s
    ``parents``; None for a node outside the tree."""
    scope = parents.get(id(node))
    while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = parents.get(id(scope))
    return scope
