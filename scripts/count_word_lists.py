"""Count the word lists and regexes that decide what torchport ports, keeps or reports (issue 27: at most 15,
all in `torchport/model/torch_facts.py`, and no spelling match of ``cuda.<name>`` outside it).

    python scripts/count_word_lists.py [--verbose] [--max-outside N]

What counts, per module (CPython `ast`, nothing imported):
- a *word list*: an assignment (module, class or function level) whose value is a set, frozenset, tuple, list or
  dict literal (also ``frozenset(...)``/``set(...)``/``tuple(...)`` of one) holding at least two string constants as
  elements or keys;
- a *regex*: ``re.compile``/``re.match``/``re.search``/``re.fullmatch``/``re.sub``/``re.findall``/``re.finditer``/
  ``re.split`` with a literal pattern;
- a *spelling match*: a string constant that is a dotted name with a specific API under ``cuda.`` (``"torch.cuda.
  synchronize"``, ``"cuda.amp"``), outside a counted word list (compared, tested for membership, given to
  ``startswith`` or ``has_qname``, bound to a name), or a regex pattern spelling ``cuda\\.``. Prose (docstrings,
  the rules' examples) is no dotted name and is not counted.

Scope: ``torchport/`` without ``runtime/`` (product code shipped to users: its tables are what it does, not what the
port decides), ``cli/`` (command names and options), ``report/`` (output formats), ``style/`` (import sorting of
the code written) and ``checks/`` (verification tools run beside the port; they decide nothing about the port).
Lists that are plainly not deciding (names of formats, file suffixes, ...) are in `NOT_DECIDING` with the reason.

Prints one line per module with a count (the rules' ``triggers`` beside it, not counted), the tables in
torch_facts.py and what is counted outside it; with ``--max-outside N`` exits 1 when more than N are outside.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "torchport"
OUT_OF_SCOPE = ("runtime", "cli", "report", "style", "checks")
FACTS = "model/torch_facts.py"
REGEX_CALLS = frozenset({"compile", "match", "search", "fullmatch", "sub", "findall", "finditer", "split"})
SPELLING = re.compile(r"cuda(\\\\|\\)?\.[a-z_]+")
DOTTED = re.compile(r"[\w.]*\bcuda\.[A-Za-z_][\w.]*")

# Names Python gives a meaning to (never a word list), and the rules' ``triggers``: the prefilter of the rule unit
# (text a statement must hold for the rule to look at it, a superset of what it matches, for speed), counted apart.
PROTOCOL = frozenset({"__slots__", "__all__"})
PREFILTER = "triggers"
# (module relative to torchport/, the name a list or regex is bound to, or the function holding a regex) -> why it
# decides nothing about the port.
_PACKAGING = ("packaging metadata formats (setup.py, setup.cfg, pyproject.toml): where the dependency on torchport "
              "is declared")
_NOTEBOOK = "notebook and IPython syntax, and torchport's own cell markers"
NOT_DECIDING: dict[tuple[str, str], str] = {
    ("codemods/analysis/names.py", "_BLOCKS"): "ast's statement-list fields: syntax",
    ("codemods/analysis/scope.py", "_BLOCK_FIELDS"): "LibCST's statement-list fields: syntax",
    ("codemods/analysis/scope.py", "_CLAUSE_FIELDS"): "LibCST's clause fields: syntax",
    ("codemods/analysis/scope.py", "_NAMING_KEYWORDS"): "Python keywords that bind a name: syntax",
    ("codemods/analysis/scope.py", "_FOLLOWER"): "what follows a name in source text: syntax",
    ("codemods/core/triggers.py", "_NEWLINE"): "line ends: syntax",
    ("codemods/core/triggers.py", "_STRING_START"): "string prefixes and quotes: syntax",
    ("codemods/core/registry.py", "inner"): "reads the rules' own trigger regexes",
    ("codemods/api.py", "_SUPPRESSION"): "the comment directive users write to silence a rule (like noqa)",
    ("codemods/api.py", "_CUDA_ON_PURPOSE"): "the comment directive users write to keep CUDA code",
    ("command.py", "_CLI_MODULES"): "command-line modules",
    ("config.py", "ALL_TARGETS"): "configuration values",
    ("config.py", "_KEYS"): "configuration keys",
    ("config.py", "RUNTIMES"): "configuration values",
    ("config.py", "_TOML_POSITION"): "tomllib's error message",
    ("results.py", "INFO_CODES"): "rule codes (tied to the rules by tests/test_registry.py)",
    ("emit/package.py", "_ALIASES"): "the names torchport imports its runtime as",
    ("emit/patterns.py", "RUNTIME_TEXT"): "the text of torchport's own runtime imports",
    ("emit/switch.py", "fill"): "template fields",
    ("emit/native.py", "fill"): "template fields",
    ("emit/native.py", "_FORMS"): "native mode's templates: the code written, like the runtime itself",
    ("emit/native.py", "_NAMES"): "names native mode may give its device constant",
    ("emit/vendor.py", "_PARTS"): "the runtime's files",
    ("emit/torch_version.py", "_LOWER"): "a requirement specifier's syntax",
    ("emit/torch_version.py", "_CONDA"): "a conda requirement specifier's syntax",
    ("model/evaluate.py", "_BUILTINS"): "the builtins the evaluator implements: its code, not a fact",
    ("model/evaluate.py", "_STOPS"): "the evaluator's own labels for how a path ends",
    ("pipeline/cache.py", "data"): "a cache record",
    ("pipeline/gitstate.py", "env"): "environment for git",
    ("pipeline/engine.py", "_TOO_DEEP"): "CPython's error messages for too deep nesting",
    ("pipeline/files.py", "SKIP_DIRS"): "directories that hold no project code (.git, virtual environments)",
    ("pipeline/writes.py", "_NOT_COPIED"): "version-control and cache directories",
    ("pipeline/programs.py", "KINDS"): "names of entry-point kinds in the output",
    ("pipeline/programs.py", "AMP_CODES"): "rule codes",
    ("pipeline/vendoring.py", "_styled"): "import formatting",
    ("pipeline/library.py", "_METADATA"): _PACKAGING,
    ("pipeline/library.py", "_USES"): _PACKAGING,
    ("pipeline/library.py", "match"): _PACKAGING,
    ("pipeline/library.py", "_names_project"): _PACKAGING,
    ("pipeline/library.py", "section"): _PACKAGING,
    ("pipeline/library.py", "end"): _PACKAGING,
    ("pipeline/library.py", "opening"): _PACKAGING,
    ("pipeline/library.py", "_declares"): _PACKAGING,
    ("pipeline/library.py", "indent"): _PACKAGING,
    ("pipeline/library.py", "name"): _PACKAGING,
    ("pipeline/library.py", "line"): _PACKAGING,
    ("pipeline/notebooks.py", "_PYTHON_CELL_MAGICS"): _NOTEBOOK,
    ("pipeline/notebooks.py", "_MARKER_RE"): _NOTEBOOK,
    ("pipeline/notebooks.py", "_MAGIC_RE"): _NOTEBOOK,
    ("pipeline/notebooks.py", "_IPYTHON_LINE"): _NOTEBOOK,
    ("pipeline/notebooks.py", "_RUNTIME_IMPORT"): _NOTEBOOK,
    ("pipeline/notebooks.py", "_TORCH_IMPORT"): _NOTEBOOK,
}


def _strings(node: ast.AST) -> int:
    """How many string constants ``node`` (a collection literal, or a set/frozenset/tuple call of one) holds."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "frozenset", "set", "tuple", "list") and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None]
    else:
        return 0
    return sum(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items)


def _target_name(node: ast.Assign | ast.AnnAssign) -> str:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for t in targets:
        if isinstance(t, ast.Name):
            return t.id
        if isinstance(t, ast.Attribute):
            return t.attr
    return "?"


def _is_regex_call(node: ast.Call) -> bool:
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in REGEX_CALLS and isinstance(f.value, ast.Name)
            and f.value.id == "re" and bool(node.args) and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str))


def _collection(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
        return node.args[0]
    return node


def _owner(node: ast.AST, parents: dict[int, ast.AST]) -> str:
    """The name a regex call is bound to, else the function or class holding it, else ``<module>``."""
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            return _target_name(parent)
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return parent.name
        parent = parents.get(id(parent))
    return "<module>"


def count(path: Path) -> dict[str, list[str]]:
    """The word lists, regexes and spelling matches in ``path``, each as ``line: what``."""
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[str, list[str]] = {"lists": [], "regexes": [], "spellings": [], "prefilters": []}
    listed: set[int] = set()  # ids of the constants in a counted list: counted once, with their list
    regexed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _strings(node.value) >= 2:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
                continue  # `before, after = "...", "..."`: two values, not a list
            name = _target_name(node)
            if name == PREFILTER:
                found["prefilters"].append(f"{node.lineno}: {name}")
                continue
            if name in PROTOCOL or (rel, name) in NOT_DECIDING:
                continue
            found["lists"].append(f"{node.lineno}: {name}")
            listed.update(id(n) for n in ast.walk(_collection(node.value)))
        elif isinstance(node, ast.Call) and _is_regex_call(node):
            pattern = node.args[0]
            assert isinstance(pattern, ast.Constant) and isinstance(node.func, ast.Attribute)
            regexed.add(id(pattern))
            if (rel, _owner(node, parents)) in NOT_DECIDING:
                continue
            found["regexes"].append(f"{node.lineno}: {_owner(node, parents)} re.{node.func.attr}"
                                    f"({pattern.value!r:.50})")
            if SPELLING.search(pattern.value):
                found["spellings"].append(f"{node.lineno}: regex {pattern.value!r:.50}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in listed
                and id(node) not in regexed and DOTTED.fullmatch(node.value)):
            found["spellings"].append(f"{node.lineno}: {node.value!r}")
    return found


def in_scope() -> list[Path]:
    """The modules counted: torchport/ without the directories in `OUT_OF_SCOPE`."""
    return sorted(p for p in ROOT.rglob("*.py")
                  if p.relative_to(ROOT).parts[0] not in OUT_OF_SCOPE)


def totals() -> dict[str, int]:
    """``inside``: word lists and regexes in torch_facts.py (the tables; its own ``cuda.<name>`` spellings are
    allowed); ``outside``: lists, regexes and spellings elsewhere in scope; ``prefilters``: the rules' triggers."""
    result = {"inside": 0, "outside": 0, "prefilters": 0}
    for path in in_scope():
        found = count(path)
        result["prefilters"] += len(found["prefilters"])
        if path.relative_to(ROOT).as_posix() == FACTS:
            result["inside"] += len(found["lists"]) + len(found["regexes"])
        else:
            result["outside"] += len(found["lists"]) + len(found["regexes"]) + len(found["spellings"])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list each one")
    parser.add_argument("--max-outside", type=int, help="exit 1 when more are counted outside torch_facts.py")
    args = parser.parse_args()
    for path in in_scope():
        found = count(path)
        n = len(found["lists"]) + len(found["regexes"]) + len(found["spellings"])
        if not n and not args.verbose:
            continue
        rel = path.relative_to(ROOT).as_posix()
        if n or found["prefilters"]:
            print(f"{rel:40} lists {len(found['lists']):3}  regexes {len(found['regexes']):3}  "
                  f"spellings {len(found['spellings']):3}  total {n:3}  (prefilters {len(found['prefilters'])})")
        if args.verbose:
            for kind, items in found.items():
                for item in items:
                    print(f"    {kind[:-1]:9} {item}")
    result = totals()
    print(f"tables in {FACTS}: {result['inside']}  outside it: {result['outside']}  "
          f"(rule prefilters, not counted: {result['prefilters']})")
    if args.max_outside is not None and result["outside"] > args.max_outside:
        print(f"more than {args.max_outside} outside {FACTS}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
