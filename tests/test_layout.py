"""The package's shape: a few plain modules beside subpackages by role, and no import circle between two
top-level parts (imports under ``if TYPE_CHECKING:`` aside). Imports inside functions count too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "torchport"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The torchport modules ``path`` imports, leaving out ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                   for child in node.body for n in ast.walk(child)}
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    return {name for name in found if name == "torchport" or name.startswith("torchport.")}


def _part(module: str) -> str | None:
    """The top-level part a module belongs to (``torchport.pipeline.cache`` -> ``pipeline``); None for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _part_graph() -> dict[str, set[str]]:
    names = {p.stem if p.suffix else p.name for p in PACKAGE.iterdir() if p.name != "__init__.py"
             and (p.suffix == ".py" or (p / "__init__.py").is_file())}
    graph: dict[str, set[str]] = {name: set() for name in names}
    for path in PACKAGE.rglob("*.py"):
        source = _part(_module_name(path))
        if source is None:
            continue
        for target in map(_part, _imports(path)):
            if target is not None and target != source and target in names:
                graph[source].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one part (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_joins_two_top_level_parts() -> None:
    graph = _part_graph()
    assert graph["runtime"] == set()  # torch alone: the runtime imports no other part
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_at_most_eight_plain_modules_beside_the_subpackages() -> None:
    plain = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(plain) <= 8, plain
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} >= {
        "cli", "pipeline", "emit", "report", "codemods", "style", "runtime", "checks"}


def test_every_checking_tool_lives_in_checks() -> None:
    tools = ("trace", "audit", "compare", "verify")
    assert [name for name in tools if (PACKAGE / "checks" / f"{name}.py").is_file()] == list(tools)
    assert [p.name for p in PACKAGE.rglob("*.py") if p.parent.name != "checks" and p.stem in tools] == []


def test_the_code_is_clean_under_the_projects_ruff_rules() -> None:
    root = PACKAGE.parent
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "torchport", "tests", "benchmarks",
                           "scripts"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
