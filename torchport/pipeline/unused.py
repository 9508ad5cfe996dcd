"""Definitions nothing in a project runs, and device values nothing reads: their rewrites would change nothing
on any backend.

A research repository that no packaging metadata makes installable is a set of programs, not a library: a
top-level function or class of one of its modules that no code of the project names (nor one that code names, in
turn) never runs. graph-generation keeps a dozen model classes and training loops whose only calls are commented
out; porting them is churn. Read from CPython trees: a name counts as used wherever it appears as an identifier,
an attribute or a word of a string (``getattr(m, "Model")``; not a docstring, nor ``__all__``, which exports; an
import binds a name, and counts where the name is used, bar a package ``__init__``'s, which offer it), and names
the definition of its own module, or of the module it imports it from, or, where neither settles it, any
module's (an attribute of a package outside the project, ``dist.all_gather``, names none). Nothing is decided
for a project that looks names up at run time (``getattr(models, config["arch"])``, ``eval``, ``globals()``,
``import_module``, hydra's ``instantiate``), for a module that packaging metadata makes installable (its users
call it), for test modules (pytest collects by name) or for decorated definitions (a decorator may register them; not
one that only sets autograd's mode, `transparent`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from torchport.model import torch_facts
from torchport.pipeline.library import installable
from torchport.pipeline.project import Project, outline, parse, remembered, words
from torchport.pipeline.project import used as uses_of
from torchport.results import FileResult

_QUERIES = torch_facts.text("availability_query")
_MODULES_AT_MOST = 400  # a bigger project is no loose set of scripts: nothing is decided


@dataclass(frozen=True)
class _Uses:
    """What one module names: ``inside`` the identifiers each top-level function or class uses (what runs when it
    is called or made), ``roots`` those the rest of the module uses (its body, the decorators, defaults and bases
    of its definitions, the names of the decorated ones), ``candidates`` its undecorated top-level definitions,
    ``dynamic`` whether it looks names up at run time (`_looks_up`), ``lookups`` the names it looks names up in
    (``models`` of ``getattr(models, config["arch"])``): a module of the project bound there is read dynamically;
    ``built`` whether a name it looks up is built from parts (``getattr(m, name + "Model")``, ``eval``): one no text
    of the project holds whole; ``aliases`` the names its imports bind, each with the first part of the module it
    imports (``"" `` for a relative import): the names used hold ``dist.all_gather`` for an attribute of one;
    ``imports_built`` whether what it builds is a module it imports or code it runs (``import_module("models." +
    name)``, ``exec``), not an attribute of what is loaded already (HAWQ's ``getattr(features, f"stage{i}")``)."""

    inside: dict[str, frozenset[str]]
    roots: frozenset[str]
    candidates: frozenset[str]
    dynamic: bool
    lookups: frozenset[str] = frozenset()
    built: bool = False
    aliases: Mapping[str, str] = field(default_factory=dict)
    imports_built: bool = False


_USES: dict[str, _Uses | None] = {}


def unused_definitions(results: Sequence[FileResult]) -> dict[int, frozenset[str]]:
    """The top-level functions and classes of each changed module that no program of the project runs.

    Args:
        results: one per file of the run (``original`` is the source).

    Returns:
        index into ``results`` -> the names of its definitions nothing runs (only modules with some).
    """
    texts = [r.original for r in results]
    changed = _decided_modules(results)
    if not changed:
        return {}
    tests = torch_facts.text("test_file")
    uses: list[_Uses] = []
    for index, text in enumerate(texts):
        if text is None:
            uses.append(_Uses({}, frozenset(), frozenset(), False))
            continue
        found = _uses(text) if results[index].path.suffix == ".py" else None
        if found is None:  # a notebook, or a module that does not parse: each of its words may name a definition
            found = _Uses({}, frozenset(words(text)), frozenset(), False)
        elif tests.match(results[index].path.name):  # pytest runs a test module's definitions: what they call runs
            found = replace(found, roots=found.roots | found.candidates)
        uses.append(found)
    project = Project(results)
    extra: set[str] = set()  # names held by data, not code: any module's definition of one may run
    spoken: dict[int, frozenset[str]] = {}  # the words of a module's text, where names are looked up at run time
    if any(found.lookups and any(local in found.lookups for local, _, _ in project.bindings(index))
           for index, found in enumerate(uses)):
        return {}  # `models.__dict__[args.arch]`: any definition of a module of the project may run
    if any(found.dynamic for found in uses):
        # a name looked up whole comes from data that holds it: a config, a shell script, a README, a comment
        # (ldm's `instantiate_from_config` reads `target: ldm.modules.encoders.modules.FrozenCLIPEmbedder`)
        on_disk = None if any(u.built for u in uses) else _other_texts(results)
        if on_disk is None:
            return {}
        extra |= set(words("\n".join(on_disk)))
        spoken = {index: frozenset(words(text)) - u.candidates
                  for index, (text, u) in enumerate(zip(texts, uses, strict=True)) if text}
    imported = project.imported()
    # a module nothing imports that is no script may be imported by its users: its definitions count, and what
    # they use in turn (physics_informed's `tfno.py` and the `core.py` names it imports)
    for index, text in enumerate(texts):
        if text and index not in imported and results[index].path.suffix == ".py" and not (
                (shape := outline(text)).script or shape.works_at_top):
            spoken[index] = frozenset(spoken.get(index, frozenset()) | uses[index].candidates)
        elif text and results[index].path.name == "__init__.py" and (tree := parse(text)) is not None:
            # what a package's `__init__` imports is what it offers (torch-ngp's `from .raymarching import march`)
            spoken[index] = frozenset(spoken.get(index, frozenset()) | {
                alias.asname or alias.name for n in tree.body if isinstance(n, ast.ImportFrom) for alias in n.names})
    live = _live_definitions(project, uses, extra, spoken)
    found_unused: dict[int, frozenset[str]] = {}
    for index in changed:
        mine, shape = _uses(texts[index] or ""), outline(texts[index])
        # a module nothing imports that is no script may be imported by its users: its definitions count
        if mine is None or (index not in imported and not (shape.script or shape.works_at_top)):
            continue
        unused = {name for name in mine.candidates if (index, name) not in live}
        if unused:
            found_unused[index] = frozenset(unused)
    return found_unused


_OWN_BASES = frozenset(torch_facts.words("own_names_base"))


def unused_methods(results: Sequence[FileResult]) -> dict[int, frozenset[str]]:
    """The methods of each changed module's classes that no text of the run names but their definitions, as
    ``"Class.method"``: nothing calls them (HistoDOI's ``Trainer.train_schp``, NAYER's ``reptile_grad``). Only
    classes whose bases are the project's own classes, ``object`` or torch's ``nn.Module`` and ``Dataset``, which
    call only names of their own (a framework's base may call any method by its name: Lightning's
    ``training_step``); not a dunder, a decorated method (bar `transparent` ones) or one ``nn.Module`` defines
    (``forward``, ``extra_repr``). Nothing is decided where `unused_definitions` decides nothing: a project that
    looks names up at run time, an installed package, a test module.

    Returns:
        index into ``results`` -> ``"Class.method"`` names (only modules with some).
    """
    from torchport.model.installed import module_methods

    texts = [r.original for r in results]
    changed = _decided_modules(results)
    nn_names = module_methods() | set(torch_facts.words("module_method"))  # (`forward` is an assignment there)
    candidates: dict[int, list[tuple[ast.ClassDef, str]]] = {}  # (class, method) of each changed module
    for index in changed:
        tree = parse(texts[index])
        if tree is None:
            continue
        module = tree
        for c in tree.body:
            if isinstance(c, ast.ClassDef):
                candidates.setdefault(index, []).extend(
                    (c, f.name) for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and not f.name.startswith("__") and f.name not in nn_names
                    and (not f.decorator_list or transparent(f, module)))
    names = {name for pairs in candidates.values() for _, name in pairs}
    if not names:
        return {}
    # a method named nowhere but its definitions (each `def name` holds the word once)
    pattern = re.compile(r"\b(def\s+)?(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    said: dict[str, int] = {}
    for text in texts:
        for match in pattern.finditer(text or ""):
            if not match.group(1):
                said[match.group(2)] = said.get(match.group(2), 0) + 1
    unnamed = names - said.keys()
    if not unnamed or any(_looks_up_attributes(tree) for i, t in enumerate(texts)
                          if t and results[i].path.suffix == ".py" and _LOOKUP_TEXT.search(t)
                          and (tree := parse(t)) is not None):
        return {}
    classes: dict[str, list[ast.ClassDef]] | None = None  # the project's, read where a base is one of its own
    closed: dict[str, bool] = {}

    def own(cls: ast.ClassDef, depth: int = 0) -> bool:
        """Whether ``cls`` has bases of `_OWN_BASES` alone, or classes of the project that have."""
        nonlocal classes
        if cls.decorator_list or cls.keywords or depth > 8:
            return False
        for base in (ast.unparse(b).rsplit(".", 1)[-1] for b in cls.bases):
            if base in _OWN_BASES:
                continue
            if classes is None:
                classes = {}
                for i, t in enumerate(texts):
                    if t and results[i].path.suffix == ".py" and (tree := parse(t)) is not None:
                        for node in ast.walk(tree):
                            if isinstance(node, ast.ClassDef):
                                classes.setdefault(node.name, []).append(node)
            if base not in closed:
                closed[base] = False  # a cycle settles nothing
                closed[base] = base in classes and all(own(c, depth + 1) for c in classes[base])
            if not closed[base]:
                return False
        return True

    found: dict[int, frozenset[str]] = {}
    for index, pairs in candidates.items():
        dead = {f"{c.name}.{name}" for c, name in pairs if name in unnamed and own(c)}
        if dead:
            found[index] = frozenset(dead)
    return found


_ATTRIBUTE_LOOKUPS = frozenset(torch_facts.words("attribute_lookup"))
_LOOKUP_TEXT = torch_facts.text("attribute_lookup_text")
_CODE_BUILTINS = frozenset(torch_facts.words("code_builtin"))


def _looks_up_attributes(tree: ast.Module) -> bool:
    """Whether a module may find an object's attribute by a name computed at run time: ``getattr(obj, name)``
    (not of a module it imports, nor of ``sys.modules[...]``: those are its top-level names), ``obj.__dict__[...]``,
    ``eval``, ``exec``, ``operator.attrgetter`` or ``methodcaller``."""
    modules = {(a.asname or a.name).split(".", 1)[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(
                node.func, ast.Attribute) else ""
            if name in _ATTRIBUTE_LOOKUPS or isinstance(node.func, ast.Name) and name in _CODE_BUILTINS:
                return True  # (not `model.eval()`)
            if name == "getattr" and len(node.args) > 1 and not isinstance(node.args[1], ast.Constant) and not (
                    isinstance(node.args[0], ast.Name) and node.args[0].id in modules
                    or isinstance(node.args[0], ast.Subscript) and isinstance(node.args[0].value, ast.Attribute)
                    and node.args[0].value.attr == "modules"):
                return True
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "__dict__":
            return True
    return False


def _decided_modules(results: Sequence[FileResult]) -> list[int]:
    """The changed modules whose definitions the project's own code alone may run: not a test module (pytest runs
    them by name), a ``conftest.py`` or a module of a package that packaging metadata installs (its users call
    it); none in a project of more than `_MODULES_AT_MOST` modules."""
    if sum(r.original is not None for r in results) > _MODULES_AT_MOST:
        return []
    tests = torch_facts.text("test_file")
    changed = [i for i, r in enumerate(results) if r.changed and r.path.suffix == ".py" and r.path.name != "conftest.py"
               and not tests.match(r.path.name)]
    packaged = installable(results[i].path for i in changed)
    return [i for i in changed if results[i].path not in packaged]


def _live_definitions(project: Project, uses: Sequence[_Uses], extra: Collection[str],
                      spoken: Mapping[int, Collection[str]]) -> set[tuple[int, str]]:
    """``(module, name)`` of each top-level definition that may run: one a module's top level uses or ``spoken``
    holds for it (words of its text), one ``extra`` names (words of data), and, in turn, one the body of a live
    definition uses. A name a module uses is its own definition where it
    defines one, the imported one where it imports it from a module of the project (``from pointnet import
    PointNetEncoder`` is the one beside it), and any module's otherwise: APSNet keeps three copies of
    ``pointnet.py``, and only the classification one's ``feature_transform_reguliarzer`` is ever imported."""
    defining: dict[str, list[int]] = {}
    for index, found in enumerate(uses):
        for name in found.inside:
            defining.setdefault(name, []).append(index)
    bound: dict[int, dict[str, list[tuple[int, str]]]] = {}

    stems = {part for r in project.results for part in (r.path.stem, *r.path.parent.parts)}

    def resolve(module: int, name: str) -> list[tuple[int, str]]:
        if "." in name and not name.endswith(".*"):  # `dist.all_gather`: an attribute of what an import binds
            base, name = name.split(".", 1)
            top = uses[module].aliases.get(base)
            if top and top not in stems:
                return []  # torch's, numpy's: no definition of the project
            modules = [target for local, target, imported_name in project.bindings(module)
                       if local == base and imported_name is None]
            if modules and all(name in uses[target].inside for target in modules):
                return [(target, name) for target in modules]
            return [(other, name) for other in defining.get(name, ())]
        if name in uses[module].inside:
            return [(module, name)]
        if module not in bound:
            table: dict[str, list[tuple[int, str]]] = {}
            for local, target, imported_name in project.bindings(module):
                if imported_name and imported_name != "*":
                    for key in {local, imported_name}:
                        table.setdefault(key, []).append((target, imported_name))
            bound[module] = table
        targets = bound[module].get(name)
        if targets and all(imported_name in uses[target].inside for target, imported_name in targets):
            return targets
        return [(other, name) for other in defining.get(name, ())]

    live: set[tuple[int, str]] = {(other, name) for name in extra for other in defining.get(name, ())}
    for index, found in enumerate(uses):
        live.update(definition for name in (*found.roots, *spoken.get(index, ()))
                    for definition in resolve(index, name))
    todo = list(live)
    while todo:
        module, name = todo.pop()
        for used_name in uses[module].inside.get(name, ()):
            for other in resolve(module, used_name):
                if other not in live:
                    live.add(other)
                    todo.append(other)
    return live


def own_scripts(results: Sequence[FileResult]) -> set[int]:
    """The changed scripts (a ``__main__`` block) that ask a CUDA query and that no module of the project imports,
    none of a package that packaging metadata installs: only their own code calls their functions (`results.OWN`),
    so what a query answers off CUDA reaches them. None where some module looks names up at run time (see
    `unused_definitions`).

    Returns:
        indices into ``results``.
    """
    tests = torch_facts.text("test_file")
    changed = [i for i, r in enumerate(results) if r.changed and r.path.suffix == ".py" and r.original
               and r.path.name != "conftest.py" and not tests.match(r.path.name) and outline(r.original).script
               and _QUERIES.search(r.original)]
    if not changed or sum(r.original is not None for r in results) > _MODULES_AT_MOST:
        return set()
    for result in results:
        found = _uses(result.original) if result.original and result.path.suffix == ".py" else None
        if found is not None and found.dynamic:
            return set()
    project = Project(results)
    packaged = installable(results[i].path for i in changed)
    imported = project.imported()
    return {i for i in changed if i not in imported
            and not (results[i].path in packaged and results[i].path.parent in project.package_dirs)}


def imported_scripts(results: Sequence[FileResult]) -> set[int]:
    """The changed scripts (a ``__main__`` block) that keep a default of one of their functions because every call
    in them passes it (`results.IMPORTED`), and that another module of the project imports: its calls may not.

    Returns:
        indices into ``results``.
    """
    kept = [i for i, r in enumerate(results) if r.changed and r.facts.get("script_defaults")]
    return set(kept) & Project(results).imported() if kept else set()


def unread_globals(results: Sequence[FileResult]) -> dict[int, frozenset[str]]:
    """The module-level names of each changed module that hold a device value nothing reads: the module never
    names them again, or only as a label (`check.labelled`), and no module of the project imports them (``from
    model import device``, ``M.device``, or through ``import *`` and a read). FastSpeech's ``model.py`` picks
    ``device`` and never uses it; so do the examples of neuraloperator; torchsparse's ``setup.py`` only compares
    its ``device`` and names files by it. Assignments nested in blocks count (``if ...: device = "cuda"``). A
    module of an installed package (packaging metadata, in a package folder) is left to its users, who may import
    the name. The value must only answer (see `check.only_answers`).

    Returns:
        index into ``results`` -> those names (only modules with some).
    """
    from torchport.model.check import device_stores, labelled, reads
    from torchport.model.evaluate import imported

    changed = [i for i, r in enumerate(results) if r.changed and r.path.suffix == ".py" and r.original
               and r.path.name != "conftest.py"]
    if not changed:
        return {}
    project = Project(results)
    packaged = installable(results[i].path for i in changed)
    found: dict[int, frozenset[str]] = {}
    for index in changed:
        path, text = results[index].path, results[index].original or ""
        if path in packaged and path.parent in project.package_dirs:
            continue
        tree = parse(text)
        if tree is None:
            continue
        read = reads(tree)
        if read is None:
            continue
        imports = imported(tree)
        names = {name for _, name in device_stores(tree, frozenset(), imports)}
        if names & read:  # read somewhere: only as a label, or it stays
            labels = labelled(tree) or set()
            names = {name for name in names if name not in read or name in labels}
        names -= {name for name in names for other in range(len(results)) if other != index
                  and _reads_from(project, other, index, name)}
        if names:
            found[index] = frozenset(names)
    return found



def passed_defaults(results: Sequence[FileResult]) -> dict[int, frozenset[str]]:
    """The parameter defaults of each changed module's top-level functions (and classes' ``__init__``) that no call
    in the project reaches:
    every reference to the function, in its module and in the modules that import it, is a call that passes the
    parameter (decision-transformer's ``evaluate_episode(..., device='cuda')``, which experiment.py always calls
    with ``device=device``). A port of such a default changes nothing. Left to its users: a module of an installed
    package, a decorated function (bar `transparent` ones), one whose name a string of the project holds (it may be
    looked up by it), a module another star-imports.

    Returns:
        index into ``results`` -> ``"function(parameter)"`` for each such default (only modules with some).
    """
    from torchport.codemods.analysis.defaults import defaulted, passes
    from torchport.model.evaluate import dotted

    texts = [r.original for r in results]
    changed = [i for i, r in enumerate(results) if r.changed and r.path.suffix == ".py" and r.original
               and r.path.name != "conftest.py"]
    if not changed or sum(t is not None for t in texts) > _MODULES_AT_MOST:
        return {}
    project = Project(results)
    packaged = installable(results[i].path for i in changed)
    found: dict[int, frozenset[str]] = {}
    for index in changed:
        path = results[index].path
        tree = parse(texts[index] or "")
        if tree is None or (path in packaged and path.parent in project.package_dirs):
            continue
        candidates = {s.name: defaulted(s) for s in tree.body
                      if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and transparent(s, tree)}
        candidates.update({s.name: _constructor_defaults(s) for s in tree.body
                           if isinstance(s, ast.ClassDef) and not s.decorator_list})
        candidates = {name: params for name, params in candidates.items() if params}
        if not candidates:
            continue
        left = {name: set(params) for name, params in candidates.items()}
        seen = dict.fromkeys(candidates, False)
        for other in range(len(results)):
            text = texts[other]
            if not text or not any(name in text for name in left):
                continue
            other_tree = parse(text) if results[other].path.suffix == ".py" else None
            if other_tree is None:  # a notebook or a config may call or name it any way
                named = set(words(text))
                left = {name: set() if name in named else params for name, params in left.items()}
                continue
            refs: dict[str, str] = {}  # the expression naming a candidate there -> its name
            if other == index:
                refs.update((name, name) for name in left)
            else:
                for local, target, name in project.bindings(other):
                    if target != index:
                        continue
                    if name == "*":
                        left = {n: set() for n in left}
                    elif name is None:
                        refs.update((f"{local}.{n}", n) for n in left)
                    elif name in left:
                        refs[local] = name
            calls = {id(n.func): n for n in ast.walk(other_tree) if isinstance(n, ast.Call)}
            for node in ast.walk(other_tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip().replace(
                        ".", "_").replace(":", "_").isidentifier():  # `getattr(m, "evaluate")`, `"pkg.m:evaluate"`;
                    # not a docstring's prose
                    for name in set(left) & set(words(node.value)):
                        left[name] = set()
                if not isinstance(node, (ast.Name, ast.Attribute)) or (name := refs.get(dotted(node) or "")) is None:
                    continue
                seen[name] = True
                call = calls.get(id(node))
                for param in list(left[name]):
                    if call is None or not passes(call, param, candidates[name][param]):
                        left[name].discard(param)
        names = frozenset(f"{name}({param})" for name, params in left.items() if seen[name] for param in params)
        if names:
            found[index] = names
    return found


def transparent(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, tree: ast.Module) -> bool:
    """Whether ``definition`` (a top-level one of ``tree``) has no decorator, or only ones that wrap each call
    without registering it anywhere (`torch_facts` ``transparent_decorator``: EXplorativeDT's ``@torch.no_grad()``
    over ``vec_evaluate_episode_rtg``): the project's own code is all that calls it."""
    from torchport.model.evaluate import imported, qualified

    imports = imported(tree)
    return all(qualified(d.func if isinstance(d, ast.Call) else d, imports) in _TRANSPARENT
               for d in definition.decorator_list)


_TRANSPARENT = torch_facts.named("transparent_decorator")


def _constructor_defaults(cls: ast.ClassDef) -> dict[str, int | None]:
    """The parameters of a class's own ``__init__`` with a default, by their position in a call of the class (the
    instance is not passed): CodeFormer's ``YoloDetector(..., device='cuda')``, which every caller gives a device."""
    from torchport.codemods.analysis.defaults import defaulted

    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"
                 and not f.decorator_list), None)
    if init is None or not init.args.args or any(  # made by `cls(...)` or `type(self)(...)`: not by name
            isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == "cls" or isinstance(
                n.func, ast.Call) and isinstance(n.func.func, ast.Name) and n.func.func.id == "type")
            for n in ast.walk(cls)):
        return {}
    return {name: None if index is None else index - 1 for name, index in defaulted(init).items()}


def _reads_from(project: Project, importer: int, module: int, name: str) -> bool:
    """Whether module ``importer`` may read ``name`` of ``module``: it imports it, reads ``<module alias>.name``,
    or star-imports the module and names it."""
    text = project.results[importer].original or ""
    if name not in text:
        return False
    for local, target, imported_name in project.bindings(importer):
        if target != module:
            continue
        if imported_name == name or (imported_name == "*" and name in words(text)) or (
                imported_name is None and f"{local}.{name}" in text):
            return True
    return False


def _uses(text: str) -> _Uses | None:
    """`_Uses` of a module's ``text``, read once per text; None when it does not parse."""
    def read() -> _Uses | None:
        tree = parse(text)
        if tree is None:
            return None
        inside: dict[str, frozenset[str]] = {}
        roots: set[str] = set()
        candidates: set[str] = set()
        aliases: dict[str, str] = {}
        # What names nothing: a docstring's prose; a name imported from a module, which counts where it is used
        # (through the import's binding), not at the import (DIST_KD's train_kd.py imports
        # `CriterionMiniBatchCrossImagePair` and never makes one); `__all__`, which exports names (a module that
        # star-imports them and uses one names it there: DIST_KD's `all_gather`, exported and never called)
        unread: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases.update((a.asname or a.name.split(".")[0], a.name.split(".")[0]) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                aliases.update((a.asname or a.name, "" if node.level else (node.module or "").split(".")[0])
                               for a in node.names if a.name != "*")
                unread.update(id(a) for a in node.names)
            elif isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body \
                    and isinstance(first := node.body[0], ast.Expr) and isinstance(first.value, ast.Constant):
                unread.add(id(first.value))
        unread.update(id(c) for n in tree.body if isinstance(n, (ast.Assign, ast.AugAssign)) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in (n.targets if isinstance(n, ast.Assign)
                                                                     else [n.target])) for c in ast.walk(n.value))

        def used(node: ast.AST, strings: bool = False) -> Iterator[str]:
            return uses_of(node, strings, aliases, unread)

        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                runs_now: list[ast.AST] = [*statement.decorator_list]
                later: list[ast.AST] = []
                if isinstance(statement, ast.ClassDef):
                    runs_now += [*statement.bases, *statement.keywords]
                    for inner in statement.body:  # a class body runs where the class is defined
                        (later if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) else runs_now).append(
                            inner)
                else:
                    runs_now += [*statement.args.defaults, *(d for d in statement.args.kw_defaults if d)]
                    later += statement.body
                    if statement.returns is not None:
                        runs_now.append(statement.returns)
                roots.update(name for node in runs_now for name in used(node, strings=True))
                inside[statement.name] = frozenset(name for node in later for name in used(node, strings=True))
                if not transparent(statement, tree) or statement.name.startswith("__"):
                    roots.add(statement.name)
                else:
                    candidates.add(statement.name)
            else:
                roots.update(used(statement, strings=True))
        lookups, built, imports_built = set(), False, False
        made = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _built_value(n.value)
                for t in n.targets if isinstance(t, ast.Name)}  # `name = f"train_{mode}"`, then `globals()[name]`
        # APSNet's `def eval(args)`: a builtin the module binds is its own function
        own = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in own:
                continue
            if found := _looks_up(node):
                lookups.add(found)
            if _builds_name(node, made):
                built = True
                # getattr, `vars(m)[...]`, `globals()[...]`, `m.__dict__[...]`: what is loaded already
                imports_built = imports_built or isinstance(node, ast.Call) and _called(node) not in (
                    "getattr", "vars") and not _evaluates_a_name(node)
        return _Uses(inside, frozenset(roots), frozenset(candidates), True in lookups,
                     frozenset(n for n in lookups if isinstance(n, str)), built, aliases, imports_built)

    return remembered(_USES, text, read)


def _builds_name(node: ast.AST, made: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether a name ``node`` looks up is built from parts, or is code: ``eval``/``exec``, a loader of files
    (``spec_from_file_location``), or what a lookup (`_looks_up`) or a subscript of ``globals()``, ``vars(m)`` or
    ``locals()`` is given: an f-string, a ``+``/``%``, a call (``format``, ``join``, ``upper``), or a name of
    ``made`` (assigned one of those: ``name = f"train_{mode}"``, then ``globals()[name]``)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
            and node.value.func.id in torch_facts.words("name_lookup_builtin"):
        given: list[ast.expr] = [node.slice]
    elif isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) and node.func.id in torch_facts.words(
            "code_builtin") or _called(node) in torch_facts.words("file_loader")):
        # a setup.py's `exec(open(os.path.join("pkg", "_version.py")).read())` runs one file of the project, whose
        # words name what it runs
        return not (node.args and isinstance(read := node.args[0], ast.Call) and _called(read) == "read"
                    and isinstance(read.func, ast.Attribute) and isinstance(read.func.value, ast.Call)
                    and _called(read.func.value) == "open")
    elif _looks_up(node):
        given = [*node.args, *(k.value for k in node.keywords)] if isinstance(node, ast.Call) else [
            node.slice] if isinstance(node, ast.Subscript) else []
        if isinstance(node, ast.Call) and _called(node) in ("getattr", "vars"):
            given = given[1:2]  # the name; the object looked in is no name (`vars(opt)` is given none)
    else:
        return False
    # a name made from parts, given whole (`getattr(m, name)`), not an attribute of a made object (APSNet's
    # `importlib.import_module(args.model)`: `args` comes from a call, the module's name whole from the command line)
    return any(_built_value(g) or isinstance(g, ast.Name) and g.id in made for g in given)


def _evaluates_a_name(call: ast.Call) -> bool:
    """Whether ``call`` is ``eval`` of a name put together from parts, each constant one a piece of an identifier
    (Few-shot-Framework's ``eval(args.model_class + '_fit_handle')``): a lookup in the module's own namespace, as
    ``globals()[...]`` is, which imports nothing."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "eval" and len(call.args) == 1 and not call.keywords):
        return False
    parts = list(ast.walk(call.args[0]))
    return isinstance(call.args[0], ast.BinOp | ast.JoinedStr) and not any(
        isinstance(n, ast.Call) or isinstance(n, ast.BinOp) and not isinstance(n.op, ast.Add)
        or isinstance(n, ast.Constant) and isinstance(n.value, str) and not n.value.replace("_", "a").isalnum()
        for n in parts)


def _built_value(value: ast.expr) -> bool:
    """An f-string, a ``+``/``%`` or a call anywhere in ``value``: a string put together at run time."""
    return any(isinstance(n, (ast.JoinedStr, ast.BinOp, ast.Call)) for n in ast.walk(value))


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _looks_up(node: ast.AST) -> bool | str:
    """Whether ``node`` finds a definition by a name computed at run time: True for ``eval``, ``globals()``,
    ``importlib.import_module``, ``hydra.utils.instantiate``, ``sys.modules[...]``...; the name looked in for
    ``getattr(models, name)`` or ``models.__dict__[name]`` (a module of the project, or not); else False."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name == "vars" and isinstance(func, ast.Name) and node.args:  # `vars(opt)`: the names of ``opt``
            root = node.args[0]
            while isinstance(root, ast.Attribute):
                root = root.value
            return root.id if isinstance(root, ast.Name) else not isinstance(root, (ast.Subscript, ast.Call))
        if name in torch_facts.words("name_lookup") or (
                isinstance(func, ast.Name) and name in torch_facts.words("name_lookup_builtin")):
            return True
        if name == "getattr" and len(node.args) > 1 and not isinstance(node.args[1], ast.Constant):
            root = node.args[0]
            while isinstance(root, ast.Attribute):  # `getattr(models.nets, name)`: `models` is looked in
                root = root.value
            return root.id if isinstance(root, ast.Name) else not isinstance(root, (ast.Subscript, ast.Call))
        return False
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        if node.value.attr == "modules":
            return True
        if node.value.attr == "__dict__":
            return node.value.value.id if isinstance(node.value.value, ast.Name) else True
    return False


_BYTES_AT_MOST = 2_000_000  # per file: bigger ones are data


def unreached_modules(results: Sequence[FileResult], named: Collection[int] = ()) -> dict[int, str]:
    """The changed modules no program of the project reaches and no file of it names: research code's backups and
    abandoned variants (textual_inversion's ``modules_bak.py``, keyphrase-generation-rl's ``pykp/dataloader.py``).

    A program is a script (a ``__main__`` block, work at its top level, or a top-level statement the port
    changes), a test module, a notebook or a ``conftest.py``; it reaches what it imports, transitively. A module
    is named when one of the project's other files (its code, configs, shell scripts, docs, code the run skipped)
    holds its name as a word: a config's ``target: ldm.models.diffusion.ddim.DDIMSampler``, cog's ``predict:
    predict.py:Predictor``, a README's ``python -m``. Nothing is decided for a project without programs (a library
    run on its own), for a module packaging metadata installs (its users import it), for a package's
    ``__init__.py``, for a file the user named (not a folder holding it) or for a tree of many files
    (`files.naming_files`).

    Args:
        results: one per file of the run (``original`` is the source).
        named: indices into ``results`` of the files the user named.

    Returns:
        index into ``results`` -> why its rewrites are not made (`reasons.UNREACHED`'s detail).
    """
    tests, by_name = torch_facts.text("test_file"), torch_facts.text("run_by_name")
    changed = [i for i, r in enumerate(results) if r.changed and r.path.suffix == ".py" and r.original
               and i not in named and not by_name.match(r.path.name) and not tests.match(r.path.name)]
    if not changed or sum(r.original is not None for r in results) > _MODULES_AT_MOST:
        return {}
    entries = [i for i, r in enumerate(results) if r.original is not None and (
        r.path.suffix == ".ipynb" or r.path.name == "conftest.py" or tests.match(r.path.name)
        or (shape := outline(r.original)).script or shape.works_at_top or shape.tests or not shape.parses
        or _ported_at_top(r))]
    if not entries:
        return {}
    if any((found := _uses(r.original)) is not None and found.imports_built for r in results
           if r.original and r.path.suffix == ".py"):
        return {}  # CycleGAN's `importlib.import_module("models." + name + "_model")`: any module may run
    project = Project(results)
    reached = set().union(*(project.reach(i) for i in entries))
    candidates = [i for i in changed if i not in reached]
    packaged = installable(results[i].path for i in candidates) if candidates else set()
    candidates = [i for i in candidates if results[i].path not in packaged]
    if not candidates:
        return {}
    on_disk = _other_texts(results)
    if on_disk is None:
        return {}
    # A module nothing reaches names what it imports only where something names it in turn: physics_informed's
    # `models/tfno.py`, imported by nobody, does not keep the `models/core.py` it imports.
    unreached = {i for i in range(len(results)) if i not in reached and results[i].original}
    stems = {results[i].path.stem for i in unreached}
    mentions = _qualified_mentions([*(_naming_text(r) for i, r in enumerate(results) if i in reached and r.original),
                                    *on_disk], stems)
    mentioned: set[int] = set()
    while fresh := {i for i in unreached - mentioned
                    if _names(mentions.get(results[i].path.stem, ()), results[i].path.parent.parts)}:
        mentioned |= fresh
        for stem, qualifiers in _qualified_mentions([_naming_text(results[i]) for i in fresh], stems).items():
            mentions.setdefault(stem, set()).update(qualifiers)
    return {i: "no program of the project reaches it (no script, test or notebook imports it) and no file of the "
               "project names it" for i in candidates if i not in mentioned}


def _naming_text(result: FileResult) -> str:
    """What of a file of the run may name a module: for a module that parses, what it imports and its strings that
    are a name (``import_module("models.backup")``, ``default="point_ae"``) or hold a path or a dotted name
    (``"python models/backup.py"``); not its identifiers or prose: APSNet's ``model`` variables and its help text
    "path to pretrained model file" do not name its unreached ``registration/src/model.py``."""
    text = result.original or ""
    tree = parse(text) if result.path.suffix == ".py" else None
    if tree is None:
        return text
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            # a name whole (`default="point_ae"`), or a path or dotted name in a command; not prose ("model file")
            whole = node.value.strip()
            found.extend([whole] if whole.replace(".", "_").isidentifier() else
                         [w for w in whole.split() if "." in w or "/" in w])
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.extend(f"{node.module or ''}.{alias.name}".lstrip(".") for alias in node.names)
    return "\n".join(found)


def _qualified_mentions(texts: Iterable[str], stems: Collection[str]) -> dict[str, set[tuple[str, ...]]]:
    """Each of ``stems`` -> the qualifiers it follows where ``texts`` hold it as a word: ``("utils",)`` for
    ``from utils.transformer import`` or ``utils/transformer.py``, ``()`` for a bare ``transformer``. A README's
    drawing of the layout names nothing; nor does an option's name."""
    found: dict[str, set[tuple[str, ...]]] = {}
    drawing, option = torch_facts.text("layout_drawing"), torch_facts.text("option_name")
    for text in texts:
        if drawing.search(text):
            text = "\n".join(line for line in text.splitlines() if not drawing.search(line))
        text = option.sub(" ", text)  # APSNet's README: `--model pointnet_cls` names pointnet_cls.py, not model.py
        dotted = "".join(c if c.isalnum() or c in "_./" else " " for c in text)
        for token in dotted.split():
            qualifier: list[str] = []
            for part in token.replace("/", ".").split("."):
                if not part.isidentifier():
                    qualifier = []
                    continue
                if part in stems:
                    found.setdefault(part, set()).add(tuple(qualifier))
                qualifier.append(part)
    return found


def _names(qualifiers: Iterable[tuple[str, ...]], folder: tuple[str, ...]) -> bool:
    """Whether a word of some text may name a module of ``folder`` (its path's parts): bare, or after the names of
    folders it lies in (``gsm_lib.transformer`` names ``gsm_lib/transformer.py``; ``utils.transformer`` does not;
    nor does ``self.transformer``)."""
    return any(not qualifier or folder[len(folder) - len(qualifier):] == qualifier for qualifier in qualifiers)


def _ported_at_top(result: FileResult) -> bool:
    """Whether the port changes a statement of the module's own top level (``y = torch.ones(1, device="cuda")``):
    running the file runs it, so the file may be run on its own. A statement that only binds a device
    (``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``, `check.device_stores`) beside
    definitions does no work: CTM's ``p2vclips.py`` picks one for its model classes and is run by nobody."""
    from torchport.model.check import device_stores
    from torchport.model.evaluate import imported

    tree = parse(result.original or "") if result.sites else None
    if tree is None:
        return False
    spans = [(s.lineno, s.end_lineno or s.lineno) for s in tree.body
             if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if spans:  # a module of settings alone (FAST-MRI's `configs/unet.py`: `device='cuda'`) is read by its path
        spans += [(s.lineno, s.end_lineno or s.lineno) for s, _ in device_stores(tree, frozenset(), imported(tree))]
    return any(not any(first <= site.line <= last for first, last in spans) for site in result.sites)


def _other_texts(results: Sequence[FileResult]) -> list[str] | None:
    """The texts of the files that may name a module of the run and are not in it (`files.naming_files`); None
    past its limit."""
    from torchport.pipeline.files import naming_files

    paths = naming_files([r.path for r in results])
    if paths is None:
        return None
    found: list[str] = []
    for path in paths:
        try:
            if path.stat().st_size <= _BYTES_AT_MOST:
                found.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return found
