"""What keeps a module on CUDA, read from CPython's tree: CUDA-only libraries, kernels and APIs.

Torch-free and LibCST-free: the program model (`torchport.pipeline.programs`) reads every module of a project
with it, and the rules share its lists (`CUDA_ONLY_MODULES`, `CUDA_ONLY_APIS`).

A requirement is *guarded* when the code already has a way around it (an import inside ``try: ... except
ImportError``, or under an ``if``), and then blocks nothing: the program runs without it elsewhere. Only
what a module does whenever it is imported counts here: a CUDA-only import inside a function is taken as a
path the program may not take.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from torchport.codemods.analysis.gates import asks_cuda
from torchport.codemods.analysis.names import ast_chain, environment_read, import_map, qualify
from torchport.codemods.analysis.programs import (
    absolute_module,
    always_run,
    call_name,
    cuda_call,
    cuda_only_program,
    raises_again,
)
from torchport.model import installed, torch_facts
from torchport.model.evaluate import false_off_cuda, gpus_asked

OFF_CUDA = torch_facts.OFF_CUDA

# Libraries that need an NVIDIA GPU (`torch_facts.CUDA_LIBRARIES`).
CUDA_ONLY_MODULES = tuple(name for name, lib in torch_facts.CUDA_LIBRARIES.items() if not lib.kernels)
KERNEL_MODULES = tuple(name for name, lib in torch_facts.CUDA_LIBRARIES.items() if lib.kernels)


def cuda_only_import(name: str) -> str | None:
    """Why importing module ``name`` needs CUDA, or None: ``"imports triton (GPU kernels)"`` for a kernel package
    (or a module of a ``triton`` package of the project: ``pkg.ops.triton.matmul``), ``"imports apex, a CUDA-only
    library"``, ``"imports fused_adam_cuda, a compiled CUDA extension"`` (the ``*_cuda`` name a ``CUDAExtension``
    gets)."""
    library = torch_facts.cuda_library(name)
    if library is not None and not library.loads:
        return None  # its calls need CUDA, where they run (`torchport.model.evaluate`)
    if library is not None and library.kernels or "triton" in name.split(".")[1:]:
        return f"imports {name} (GPU kernels)"
    if library is not None:
        return f"imports {name}, a CUDA-only library"
    if compiled_extension(name):
        return f"imports {name}, a compiled CUDA extension"
    return None


def compiled_extension(name: str) -> bool:
    """Whether module ``name`` has the ``*_cuda`` name a ``CUDAExtension`` gets (``fused_adam_cuda``)."""
    return name.rsplit(".", 1)[-1].endswith("_cuda")
# torch.cuda names (after "torch.cuda.") with no portable equivalent, by the rule that reports them.
CUDA_ONLY_APIS = {code: torch_facts.names_of(code) for code in ("TP201", "TP202", "TP203", "TP204")}
# The ones a program cannot run without (the others are reported by their rules but only tune or observe).
_BLOCKING_APIS = frozenset(f"torch.cuda.{name}" for code in ("TP201", "TP202") for name in CUDA_ONLY_APIS[code])
_EXTENSION_LOADERS = torch_facts.named("extension_loader")
_NEEDS_GPU = torch_facts.named("needs_gpu")
_GPUS_TRAINERS = torch_facts.named("gpus_trainer")
# Text those calls need (a bare ``graph`` is too common a word: ``cuda.graph``); a module without it is not walked.
_API_TEXT = re.compile("|".join(sorted(({name.rsplit(".", 1)[-1] for name in (
    *_BLOCKING_APIS, *_EXTENSION_LOADERS, *_NEEDS_GPU)} - {"graph", "graphs", "load"})
                                       | {k if v is True else str(v) for k, v in torch_facts.CUDA_LIBRARY_OPTIONS}))
                       + r"|cuda\.graphs?\b|cpp_extension|\bgpus\s*=")  # a Lightning trainer's `gpus=`

@dataclass(frozen=True)
class Requirement:
    """Something a module does that keeps a program that imports it off some targets.

    Args:
        targets: the targets it blocks (`OFF_CUDA` for a CUDA-only requirement, ``("mps",)`` for what MPS lacks).
            A process group is none: on a Mac the runtime picks the CPU once one exists.
        reason: one sentence, e.g. ``"imports triton (GPU kernels)"``.
        line: 1-based line in the module.
        extension: the module imported, where it is one by its name alone (`compiled_extension`): a Python
            file of the run with that name is none (the caller knows the run's files).
        env: ``(variable, value, by_get)`` where it happens only if those environment variables have those values
            (ChatRWKV's ``if os.environ.get('RWKV_CUDA_ON') == '1':`` around its kernel build): a program whose
            entry point sets one of them to another value never meets it, nor one that leaves a variable read with
            ``get`` (``by_get``) unset.
    """

    targets: tuple[str, ...]
    reason: str
    line: int
    extension: str = ""
    env: tuple[tuple[str, str, bool], ...] = ()


def requirements(tree: ast.Module, text: str, entry: bool = False,
                 predicates: frozenset[str] = frozenset(), extensions: frozenset[str] = frozenset()
                 ) -> list[Requirement]:
    """What keeps a program that imports this module (``tree``, its source ``text``) on CUDA; what MPS lacks is
    `torchport.pipeline.project.blocker`.

    Args:
        tree: CPython's tree of the module.
        text: its source.
        entry: the module is the program's entry point: its own CUDA gate (``assert torch.cuda.is_available()``
            in the ``__main__`` block, an exit without GPUs) counts too.
        predicates: names bound in it to other modules' CUDA predicates (`programs.cuda_predicates`).
        extensions: the names of the compiled extensions the project builds for CUDA alone (`cuda_extensions`).

    Returns:
        The requirements, in line order; CUDA-only ones first on a line.
    """
    found: list[Requirement] = []
    imports = import_map(tree)
    handled: set[int] | None = None  # imports in `except ImportError:` handlers, which run only where others fail
    for statement in always_run(tree.body):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if (why := installed.lacking(statement)) and id(statement) not in (handled := {
                    id(s) for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) for s in ast.walk(n)}
                    if handled is None else handled):
                found.append(Requirement(OFF_CUDA, why, statement.lineno))
            for name in _imported(statement) + _relative(statement, extensions):
                if (why := project_cuda_extension(name, extensions)) is not None:
                    found.append(Requirement(OFF_CUDA, why, statement.lineno))
                elif (why := cuda_only_import(name)) is not None:
                    extension = name if torch_facts.cuda_library(name) is None and compiled_extension(name) and (
                        "triton" not in name.split(".")[1:]) else ""
                    found.append(Requirement(OFF_CUDA, why, statement.lineno, extension))
    guarded: set[int] | None = None
    bindings: dict[str, ast.expr] | None = None
    uses: list[tuple[int, str]] = []  # (line, why) of the CUDA-only APIs named
    for node in ast.walk(tree) if _API_TEXT.search(text) else ():  # the walk is the cost: only where it can find
        if isinstance(node, ast.Call):
            dotted = ast_chain(node.func)
            names = qualify(dotted, imports) if dotted else set()
            if names & _EXTENSION_LOADERS and builds_cuda(node, bindings := (
                    _bindings(tree) if bindings is None else bindings)) is not False:
                if guarded is None:
                    guarded = _under_cuda_query(tree)
                if id(node) not in guarded:
                    found.append(Requirement(OFF_CUDA, "builds a CUDA extension", node.lineno,
                                             env=_env_conditions(tree, node)))
            elif names & _NEEDS_GPU:  # Dual-Path-RNN's `data_parallel(model, x, device_ids=self.gpuid)`
                uses.append((node.lineno, f"calls {dotted}, which raises without a GPU"))
            elif names & _GPUS_TRAINERS and (asked := gpus_asked(node)) is not None:
                uses.append((node.lineno, f"gives {dotted} `gpus={ast.unparse(asked)}`, which Lightning asks CUDA for"))
            elif (option := next(((k, given, library) for k in node.keywords
                                  if isinstance(given := k.value, ast.Constant)
                                  and (library := torch_facts.cuda_library_option(k.arg, given.value))), None)):
                keyword, given, library = option  # alpaca-lora's loader
                uses.append((given.lineno, f"loads through {library} (`{keyword.arg}={given.value!r}`), a CUDA-only "
                                           "library"))
        elif isinstance(node, ast.Attribute):
            dotted = ast_chain(node)
            if dotted and qualify(dotted, imports) & _BLOCKING_APIS:
                uses.append((node.lineno, f"uses {dotted}, which only CUDA has"))
    if "version" in text or "cuda" in text:
        found += _at_import(tree, imports)
    if uses:
        reached = _reached_off_cuda(tree, {line for line, _ in uses})
        found += [Requirement(OFF_CUDA, why, line) for line, why in uses if line in reached]
    if entry and (line := cuda_only_program(tree, predicates)) is not None:
        found.append(Requirement(OFF_CUDA, "stops unless CUDA GPUs are there", line))
    return sorted(set(found), key=lambda r: (r.line, -len(r.targets), r.reason))


def _at_import(tree: ast.Module, imports: Mapping[str, frozenset[str]]) -> list[Requirement]:
    """What the module's own statements do at import that fails off CUDA, evaluated there: an ``if`` test that
    orders ``torch.version.cuda``, None without CUDA, against a string (visualDet3D's ``if (torch.version.cuda <
    '10.0') or ...``: a TypeError), and a CUDA-only library's API called with a signature to decorate a function
    (numba's ``@cuda.jit('(float32[:], int32)', device=True)`` compiles for CUDA when the module runs)."""
    found = []
    false = false_off_cuda(tree)
    for statement in tree.body:
        if isinstance(statement, ast.If) and _raises_off_cuda(statement.test, imports, false):
            found.append(Requirement(OFF_CUDA, "compares torch.version.cuda, None without CUDA, with a string",
                                     statement.lineno))
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in statement.decorator_list:
                dotted = ast_chain(decorator.func) if isinstance(decorator, ast.Call) and decorator.args else None
                if dotted and any(name.startswith(torch_facts.CUDA_LIBRARY_USES) for name in qualify(dotted, imports)):
                    found.append(Requirement(OFF_CUDA, f"compiles a kernel with {dotted} when imported",
                                             decorator.lineno))
    return found


def _is_cuda_version(node: ast.expr, imports: Mapping[str, frozenset[str]]) -> bool:
    dotted = ast_chain(node)
    return dotted is not None and "torch.version.cuda" in qualify(dotted, imports)


def _raises_off_cuda(test: ast.expr, imports: Mapping[str, frozenset[str]],
                     false: Callable[[ast.expr], bool] = lambda _: False) -> bool:
    """Whether evaluating ``test`` with ``torch.version.cuda`` None raises: an order comparison reached before
    anything that short-circuits on it (``torch.version.cuda and ...``, ``torch.version.cuda is None or ...``, a CUDA
    query ``false`` finds false off CUDA: ``torch.cuda.is_available() and ...``)."""
    if isinstance(test, ast.UnaryOp):
        return _raises_off_cuda(test.operand, imports, false)
    if isinstance(test, ast.Compare):
        sides = [test.left, *test.comparators]
        return any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and (
            _is_cuda_version(sides[k], imports) or _is_cuda_version(sides[k + 1], imports))
            for k, op in enumerate(test.ops))
    if isinstance(test, ast.BoolOp):
        for operand in test.values:
            if _raises_off_cuda(operand, imports, false):
                return True
            test_none = operand.ops[0] if isinstance(operand, ast.Compare) and len(operand.ops) == 1 and (
                _is_cuda_version(operand.left, imports) and isinstance(operand.comparators[0], ast.Constant)
                and operand.comparators[0].value is None) else None  # `torch.version.cuda is (not) None`
            falsy = _is_cuda_version(operand, imports) or isinstance(test_none, ast.IsNot) or false(operand)
            truthy = isinstance(test_none, ast.Is) or isinstance(operand, ast.UnaryOp) and isinstance(
                operand.op, ast.Not) and _is_cuda_version(operand.operand, imports)
            if falsy if isinstance(test.op, ast.And) else truthy:
                return False  # it stops there off CUDA
    return False


def project_cuda_extension(name: str, extensions: frozenset[str]) -> str | None:
    """Why importing module ``name`` needs CUDA where it is one of ``extensions``, the extensions the project builds
    for CUDA alone (`cuda_extensions`); else None."""
    if name.rsplit(".", 1)[-1] in extensions:
        return f"imports {name}, an extension the project builds for CUDA alone (nvcc)"
    return None


def cuda_extensions(tree: ast.Module, cuda_sources: bool = False) -> frozenset[str]:
    """The names of the compiled extensions a build script (``setup.py``) makes for CUDA alone: with
    ``CUDAExtension`` (lietorch's ``lietorch_backends``), or any extension whose sources name a ``.cu`` file
    (human-pose-estimation's ``Extension('gpu_nms', ['nms_kernel.cu', 'gpu_nms.pyx'])``), unless the same call may
    also build it with ``CppExtension`` (DCNv2's ``extension = CppExtension``, then ``CUDAExtension`` where CUDA is);
    and every extension of a script that, evaluated on the CPU, stops before it builds (DCNv2's ``raise
    NotImplementedError('Cuda is not available')``). Without nvcc they do not build: a module that imports one
    needs CUDA. ``cuda_sources``: every C++ source beside the build script includes a CUDA header
    (`sources_need_cuda`: FOTS's ``rroi_align_cuda.cpp``, ``#include <c10/cuda/CUDAStream.h>``), so its
    CppExtension fallback does not compile without CUDA either."""
    built = _built_extensions(tree)
    if not built:
        return frozenset()
    cuda_only = frozenset(name.rsplit(".", 1)[-1] for name, kinds in built.items() if kinds == {"cuda"})
    if len(cuda_only) == len(built):
        return cuda_only
    if cuda_sources and any("cuda" in kinds for kinds in built.values()):
        # (the extensions that may build with CUDA: a plain CppExtension beside them keeps its own sources)
        return frozenset(name.rsplit(".", 1)[-1] for name, kinds in built.items() if "cuda" in kinds)
    from torchport.model.evaluate import Evaluator

    try:
        module = Evaluator(tree, "cpu").units()[0]
    except RecursionError:
        return cuda_only
    every = frozenset(name.rsplit(".", 1)[-1] for name in built)
    return every if module.paths and all(p.stop is not None for p in module.paths) else cuda_only


def compiled_extensions(tree: ast.Module, cuda_sources: bool = False) -> frozenset[str]:
    """The full names of the compiled extensions a build script makes that are not for CUDA alone (chamferdist's
    ``CUDAExtension("chamferdist._C", [... .cpp, ... .cu])`` beside its C++ kernels): their kernels are the CPU's and
    CUDA's, none MPS's or XPU's (their CPU kernels read a device tensor's memory as the host's). ``cuda_sources``:
    as `cuda_extensions` takes it."""
    cuda_only = cuda_extensions(tree, cuda_sources)
    return frozenset(name for name in _built_extensions(tree) if name.rsplit(".", 1)[-1] not in cuda_only)


_CUDA_HEADER = torch_facts.text("cuda_header")
_CONDITIONAL = torch_facts.text("preprocessor_conditional")
_SOURCES_AT_MOST = 200


def sources_need_cuda(folder: Path) -> bool:
    """Whether there is a C++ source (``.cpp``, ``.cc``, ``.cxx``) in ``folder`` or its folders (three below it at
    most, no links followed, `_SOURCES_AT_MOST` sources at most) and each includes a CUDA header outside
    ``#if``/``#ifdef`` blocks: a build that compiles them needs the CUDA toolkit (maskrcnn-benchmark's ``#ifdef
    WITH_CUDA`` include does not)."""
    sources: list[Path] = []
    for root, dirs, files in os.walk(folder):  # links to folders are not followed
        if len(Path(root).relative_to(folder).parts) >= 3:
            dirs.clear()
        sources.extend(Path(root) / f for f in files if f.endswith(_CPP_SOURCES) and not f.endswith(".c"))
        if len(sources) > _SOURCES_AT_MOST:
            return False
    if not sources:
        return False
    for source in sources:
        try:
            text = source.read_text(errors="replace")
        except OSError:
            return False
        depth, needs = 0, False
        for line in text.splitlines():
            if (m := _CONDITIONAL.match(line)) is not None:
                depth += -1 if m.group(1) == "endif" else 1
            elif depth <= 0 and _CUDA_HEADER.match(line):
                needs = True
                break
        if not needs:
            return False
    return True


def _built_extensions(tree: ast.Module) -> dict[str, set[str]]:
    """The extensions a build script makes, by full name -> ``{"cuda"}`` (nvcc only), ``{"cpp"}``, or both."""
    imports = import_map(tree)

    def kind(node: ast.expr) -> str | None:
        dotted = ast_chain(node)
        qualified = qualify(dotted, imports) if dotted else set()
        return "cuda" if qualified & _CUDA_EXTENSION else "cpp" if qualified & _CPP_EXTENSION else None

    aliases: dict[str, set[str]] = {}  # `extension = CppExtension`, `extension = CUDAExtension`
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        arms = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
        for made in {made for arm in arms if (made := kind(arm))}:  # `CUDAExtension if cuda else CppExtension`
            for target in node.targets:
                if isinstance(target, ast.Name):
                    aliases.setdefault(target.id, set()).add(made)
    # helpers that return an extension they make of their arguments (mmdetection v1's and SOLO's `make_cuda_ext(name,
    # module, sources)`: `CUDAExtension(name='{}.{}'.format(module, name), ...)`)
    makers = {f.name: (f, made) for f in tree.body if isinstance(f, ast.FunctionDef)
              for r in ast.walk(f) if isinstance(r, ast.Return) and isinstance(r.value, ast.Call)
              and (made := kind(r.value.func))}
    inside = {id(n) for helper, _ in makers.values() for n in ast.walk(helper)}  # read at each call instead
    built: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in inside:
            continue
        func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if isinstance(node.func, ast.Name) and func in makers:
            helper, made = makers[func]
            if (name := _made_name(tree, helper, node)) is not None:
                built.setdefault(name, set()).add(made)
            continue
        kinds = {made} if (made := kind(node.func)) else set(aliases.get(func, ()))
        if not kinds and not func.endswith("Extension"):
            continue
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith(".cu")
               for n in ast.walk(node)) and not kinds & {"cpp"} or any(
                k.arg == "with_cuda" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords):  # torch.utils.ffi's `create_extension(..., with_cuda=True)`
            kinds = {"cuda"}
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            built.setdefault(first.value, set()).update(kinds or {"cpp"})
        elif isinstance(first, ast.JoinedStr):  # pytorch_cluster's f'torch_cluster._{name}_{suffix}'
            head = first.values[0].value if first.values and isinstance(first.values[0], ast.Constant) else ""
            built.setdefault(f"{str(head).split('.', 1)[0]}.*", set()).update(kinds or {"cpp"})
    return built


def _made_name(tree: ast.Module, helper: ast.FunctionDef, call: ast.Call) -> str | None:
    """The ``name`` of the extension ``helper`` (a function of ``tree``) returns for ``call``, evaluated with its
    parameters bound to the call's string arguments (``'{}.{}'.format(module, name)``, an f-string, a sum); None
    where it is no string."""
    from torchport.model.evaluate import Evaluator, Path  # here: only a build script with such a helper needs one

    params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    env: dict[str, object] = {p: a.value for p, a in zip(params, call.args, strict=False)
                              if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    env.update({k.arg: k.value.value for k in call.keywords if k.arg in params
                and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)})
    made = next((r.value for r in ast.walk(helper) if isinstance(r, ast.Return) and isinstance(r.value, ast.Call)),
                None)
    first = None if made is None else made.args[0] if made.args else next(
        (k.value for k in made.keywords if k.arg == "name"), None)
    name = Evaluator(tree, "cpu").value(first, Path(env)) if first is not None else None
    return name if isinstance(name, str) else None


_CUDA_EXTENSION = torch_facts.named("cuda_extension")
_CPP_EXTENSION = torch_facts.named("cpp_extension")
_CUDA_SOURCES = torch_facts.words("cuda_source")
_CPP_SOURCES = torch_facts.words("cpp_source")


def extension_builds(tree: ast.Module) -> list[tuple[ast.Call, bool | None]]:
    """Every ``cpp_extension.load``/``load_inline`` call of the module, with `builds_cuda`'s answer."""
    imports, bindings = import_map(tree), _bindings(tree)
    return [(node, builds_cuda(node, bindings)) for node in ast.walk(tree) if isinstance(node, ast.Call)
            and (dotted := ast_chain(node.func)) and qualify(dotted, imports) & _EXTENSION_LOADERS]


def builds_cuda(call: ast.Call, bindings: Mapping[str, ast.expr] | None = None) -> bool | None:
    """Whether an extension build (``cpp_extension.load``/``load_inline``) compiles CUDA: a ``.cu`` source, CUDA
    sources given, ``with_cuda=True``. False where every source is C++ (semseg's ``load('psamask_cpu',
    [os.path.join(cpu_path, 'operator.cpp'), ...])``: a compiler, no GPU); None when it cannot tell. ``bindings``:
    the values of the module's names (`_bindings`), for sources given by name."""
    bindings = bindings or {}
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    with_cuda = keywords.get("with_cuda")
    if with_cuda is not None:
        return bool(with_cuda.value) if isinstance(with_cuda, ast.Constant) else None
    inline = keywords.get("cuda_sources", call.args[2] if call_name(call) == "load_inline" and len(call.args) > 2
                          else None)
    if call_name(call) == "load_inline":
        return inline is not None and not (isinstance(inline, ast.Constant) and inline.value is None)
    sources = keywords.get("sources", call.args[1] if len(call.args) > 1 else None)
    if isinstance(sources, ast.Name):
        sources = bindings.get(sources.id)
    if not isinstance(sources, (ast.List, ast.Tuple)) or not sources.elts:
        return None
    kinds = []
    for element in sources.elts:
        if isinstance(element, ast.Name):
            element = bindings.get(element.id, element)
        strings = [n.value for n in ast.walk(element) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        kinds.append(True if any(t.endswith(_CUDA_SOURCES) for t in strings) else
                     False if any(t.endswith(_CPP_SOURCES) for t in strings) else None)
    return True if True in kinds else None if None in kinds else False


def _reached_off_cuda(tree: ast.Module, lines: set[int]) -> set[int]:
    """Which of ``lines`` (uses of a CUDA-only API) the code reaches off CUDA. One at the module's top level is
    reached; one in a function is reached where the function, evaluated on the CPU with only these lines stopping a
    path (`torchport.model.evaluate`), stops there: a use after ``if not torch.cuda.is_available(): pytest.skip()``,
    in a test parametrized to ``"cuda"`` alone and skipped off it, or behind ``x.is_cuda and ...`` is not."""
    inside: dict[int, int] = {}  # line -> the innermost function holding it
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for line in lines:
                if node.lineno <= line <= (node.end_lineno or node.lineno) and (
                        line not in inside or node.lineno > inside[line]):
                    inside[line] = node.lineno
    reached = lines - inside.keys()
    if not inside:
        return reached
    from torchport.model.evaluate import Evaluator

    last = max((getattr(node, "end_lineno", 0) or 0 for node in ast.walk(tree)), default=0)
    units = Evaluator(tree, "cpu", exempt=frozenset(range(1, last + 1)) - lines).units()
    for unit in units:
        if isinstance(unit.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            reached |= {p.stop.line for p in unit.paths if p.stop is not None and p.stop.kind == "cuda"
                        and inside.get(p.stop.line) == unit.node.lineno}
    return reached


def _under_cuda_query(tree: ast.Module) -> set[int]:
    """The nodes in the body of an ``if`` whose test asks CUDA (``if torch.cuda.is_available(): gpu = load(...)``),
    or of a ``try`` with a handler that goes on without raising (sru's ``try: load(... .cu ...)`` / ``except
    Exception: load(... dummy .cpp ...)``): a build the code already does without off CUDA."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and any(cuda_call(n, "is_available") or cuda_call(n, "device_count")
                                            for n in ast.walk(node.test)) or isinstance(node, ast.Try) and any(
                not raises_again(h.body) for h in node.handlers):
            found.update(id(n) for statement in node.body for n in ast.walk(statement))
    return found


def _env_conditions(tree: ast.Module, node: ast.AST) -> tuple[tuple[str, str, bool], ...]:
    """Each ``(variable, value, by_get)`` of an ``if os.environ.get("V") == "1":`` (or ``os.getenv``,
    ``os.environ["V"]``) whose body holds ``node``, outermost first; ``by_get``: read with ``get``/``getenv``, so
    that where the variable is not set the test is false."""
    found = []
    for statement in ast.walk(tree):
        if isinstance(statement, ast.If) and any(n is node for s in statement.body for n in ast.walk(s)):
            tests = statement.test.values if isinstance(statement.test, ast.BoolOp) and isinstance(
                statement.test.op, ast.And) else [statement.test]  # `self.version == 5.2 and os.environ[...] == '1'`
            for test in tests:
                if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and (
                        isinstance(value := test.comparators[0], ast.Constant) and isinstance(value.value, str)) and (
                        variable := environment_read(test.left)) is not None:
                    found.append((statement.lineno, variable, value.value, isinstance(test.left, ast.Call)))
    return tuple((variable, value, read) for _, variable, value, read in sorted(found))


def _bindings(tree: ast.Module) -> dict[str, ast.expr]:
    """The names the module's top level (its ``try`` bodies and handlers too) binds once, to the value each gets (sru's
    ``cpu_source = os.path.join(..., "sru_cpu_impl.cpp")``, then ``load(name="sru_cpu", sources=[cpu_source])``)."""
    found: dict[str, ast.expr] = {}
    twice: set[str] = set()
    for statement in (s for top in tree.body for s in ([*top.body, *(s for h in top.handlers for s in h.body)]
                                                       if isinstance(top, ast.Try) else [top])):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(
                name := statement.targets[0], ast.Name):
            if name.id in found:
                twice.add(name.id)
            found[name.id] = statement.value
    return {name: value for name, value in found.items() if name not in twice}


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    return [node.module]


def _relative(node: ast.Import | ast.ImportFrom, extensions: frozenset[str]) -> list[str]:
    """The extensions of ``extensions`` a ``from`` import names: human-pose-estimation's ``from .gpu_nms import
    gpu_nms``, built beside the module that imports it; Accel-RF's ``from .._C.rep import _ext``, built in a
    package of its own."""
    if not extensions or not isinstance(node, ast.ImportFrom):
        return []
    names = [*([node.module] if node.module and node.level else []), *(alias.name for alias in node.names)]
    return [name for name in names if name.rsplit(".", 1)[-1] in extensions]


def cuda_only_functions(tree: ast.Module, package: str | None = None,
                        cuda_only_modules: frozenset[str] = frozenset(),
                        stopping: frozenset[str] = frozenset()) -> dict[str, tuple[int, str]]:
    """The functions, methods and classes of ``tree`` that cannot run without CUDA, whatever their caller does.

    A function cannot when a statement its body always runs (not under ``if``/``try``/a loop) imports a CUDA-only
    module (`cuda_only_import`, ``importlib.import_module("fused_adam_cuda")``, or a module of the project in
    ``cuda_only_modules``), uses a CUDA API with no counterpart (a CUDA graph capture, a CUDA memory pool), or calls
    such a function of this module (by its name, or ``self.name`` in its class, or an attribute its ``__init__`` binds
    to one). A class cannot when its ``__init__`` cannot, when it has a base and its ``forward`` cannot (calling an
    ``nn.Module`` runs it), or when its base comes from a CUDA-only module.

    Args:
        tree: CPython's tree of the module.
        package: its package in the project, to resolve relative imports (``from .triton_ops import k``).
        cuda_only_modules: dotted names of the project's modules that need CUDA whenever imported.
        stopping: names bound here to what stops without CUDA elsewhere (another module's CUDA gate or CUDA-only
            function, ``helpers.require_gpu``): a function that always calls one cannot run without CUDA either.

    Returns:
        ``"f"``, ``"Cls.f"`` or ``"Cls"`` -> (line of its ``def``/``class``, why: ``"imports triton (GPU kernels)"``).
    """
    imports = import_map(tree)
    unbound = _bound_by_failing_import(tree, package)
    found: dict[str, tuple[int, str]] = {}
    scopes: list[tuple[str, str | None, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    bases: dict[str, tuple[int, str]] = {}
    classes: dict[str, int] = {}
    aliases: dict[str, dict[str, str]] = {}
    modules: set[str] = set()  # classes with a base: calling an instance of an nn.Module runs its forward
    for statement in _defined(tree.body):  # at the top level, or under a module-level `try`/`if`
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes.append((statement.name, None, statement))
        elif isinstance(statement, ast.ClassDef):
            classes[statement.name] = statement.lineno
            for item in statement.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    scopes.append((f"{statement.name}.{item.name}", statement.name, item))
                    if item.name == "__init__":
                        aliases[statement.name] = _method_aliases(item)
            if statement.bases:
                modules.add(statement.name)
            for base in statement.bases:  # every import that may bind it is CUDA-only (none a fallback)
                whys = [cuda_only_import(name.rsplit(".", 1)[0]) for name in qualify(ast_chain(base) or "", imports)]
                if whys and all(whys):
                    bases[statement.name] = (statement.lineno, f"is built on {ast_chain(base)} ({whys[0]})")
    false = false_off_cuda(tree)
    grown = True
    while grown:
        grown = False
        for name, owner, function in scopes:
            if name in found:
                continue
            why = _needs_cuda(function, imports, package, cuda_only_modules, found, owner, stopping, unbound,
                              aliases.get(owner or "", {}), false)
            if why is not None:
                found[name] = (function.lineno, why)
                grown = True
                method = function.name  # a class whose instances cannot be made, or called, without CUDA
                if owner and (method == "__init__" or method == "forward" and owner in modules):
                    found.setdefault(owner, (classes[owner], why))
    for name, entry in bases.items():
        found.setdefault(name, entry)
    return found


def _method_aliases(init: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    """``attr -> method`` for each ``self.attr = self.method`` that ``__init__`` always runs, bound once."""
    found: dict[str, str] = {}
    twice: set[str] = set()
    for statement in always_run(init.body):
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and (target := ast_chain(statement.targets[0])) and target.startswith("self.")
                and (value := ast_chain(statement.value)) and value.startswith("self.")):
            attr = target.removeprefix("self.")
            twice.update({attr} & found.keys())
            found[attr] = value.removeprefix("self.")
    return {attr: method for attr, method in found.items() if attr not in twice}


def _defined(body: list[ast.stmt]) -> list[ast.stmt]:
    """The functions and classes a module defines at its top level, under ``if``/``try``/``with`` blocks too."""
    found: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(statement)
        else:
            for name in ("body", "orelse", "finalbody"):
                found.extend(_defined(getattr(statement, name, None) or []))
            for handler in getattr(statement, "handlers", ()):
                found.extend(_defined(handler.body))
    return found


def _bound_by_failing_import(tree: ast.Module, package: str | None) -> dict[str, str]:
    """The names the module binds only by a CUDA-only import in a top-level ``try`` whose handlers bind nothing in
    their place and go on (torch-radon's ``try: import torch_radon_cuda`` / ``except Exception:
    print("Importing exception")``), name -> why: off CUDA reading one raises NameError."""
    found: dict[str, str] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Try) and statement.handlers) or any(
                raises_again(h.body) or _binds(h) for h in statement.handlers):
            continue
        for node in statement.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and (why := next(
                    (w for name in _absolute_imports(node, package) if (w := cuda_only_import(name))), None)):
                found.update({(a.asname or a.name).split(".")[0]: why for a in node.names})
    if found:  # bound again elsewhere: another way there
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        found = {name: why for name, why in found.items() if name not in stored}
    return found


def _binds(handler: ast.ExceptHandler) -> bool:
    """Whether an ``except`` block binds or imports anything (a fallback in the import's place)."""
    return any(isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Global))
               for n in ast.walk(handler))


def _needs_cuda(function: ast.FunctionDef | ast.AsyncFunctionDef, imports: Mapping[str, frozenset[str]],
                package: str | None, cuda_only_modules: frozenset[str], known: Mapping[str, tuple[int, str]],
                owner: str | None, stopping: frozenset[str], unbound: Mapping[str, str],
                aliases: Mapping[str, str], false: Callable[[ast.expr], bool]) -> str | None:
    """Why ``function`` always needs CUDA (see `cuda_only_functions`), or None. ``aliases``: the attributes its
    class's ``__init__`` always binds to its own methods (``self.forward_core = self.forward_corev0``); ``false``:
    whether an assert's condition is false without CUDA (`false_off_cuda`)."""
    body = function.body
    returns = next((i for i, s in enumerate(body) if isinstance(s, ast.If) and any(
        isinstance(inner, ast.Return) for arm in (s.body, s.orelse) for inner in arm)), None)
    run = always_run(body if returns is None else body[:returns])  # past an early return, it may not run
    if function.name == "__init__":  # a module builds its layers in a loop over their count (Mamba-UNet's VSSM)
        run.extend(s for loop in body if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call)
                   and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range"
                   for s in always_run(loop.body))
    for statement in function.body:  # a `with torch.cuda.graph(g):` item runs too
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            run.extend(ast.Expr(item.context_expr) for item in statement.items)

    def needs(statement: ast.stmt) -> str | None:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for name in _absolute_imports(statement, package):
                if (why := cuda_only_import(name)) is not None:
                    return why
                if name in cuda_only_modules:
                    return f"imports {name}, which needs CUDA"
            return None
        # an assert that asks CUDA is a gate, which the port decides per program; one on a CUDA tensor type stays
        if isinstance(statement, ast.Assert) and not asks_cuda(statement.test, set()) and false(statement.test):
            return f"asserts what is false without CUDA (line {statement.lineno})"
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in unbound and isinstance(node.ctx, ast.Load):
                return f"reads {node.id}, which only a failing import binds off CUDA ({unbound[node.id]})"
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id in known and "." not in node.func.id:
                    return f"calls {node.func.id}(), which needs CUDA"
                if (owner and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "self"
                        and f"{owner}.{aliases.get(node.func.attr, node.func.attr)}" in known):
                    return f"calls self.{node.func.attr}(), which needs CUDA"
                dotted = ast_chain(node.func)
                if dotted in stopping:
                    return f"calls {dotted}(), which stops or fails without CUDA"
                if dotted and any((library := torch_facts.cuda_library(name)) is not None and not library.loads
                                  for name in qualify(dotted, imports)):
                    return f"calls {dotted}(), which needs NVIDIA's driver"
                if (dotted and "importlib.import_module" in qualify(dotted, imports) and node.args
                        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                        and (why := cuda_only_import(node.args[0].value)) is not None):
                    return why
            elif isinstance(node, ast.Attribute):
                dotted = ast_chain(node)
                if dotted and qualify(dotted, imports) & _BLOCKING_APIS:
                    return f"uses {dotted}, which only CUDA has"
        return None

    def first(statements: list[ast.stmt]) -> str | None:
        """Why what ``statements`` always run needs CUDA; an ``if`` whose every arm needs it does too."""
        return next((why for s in always_run(statements) if (why := needs(s))), None) or arms(statements)

    def arms(statements: list[ast.stmt]) -> str | None:
        return next((why for s in statements if isinstance(s, ast.If) and s.orelse
                     and (why := first(s.body)) and first(s.orelse)), None)

    return next((why for statement in run if (why := needs(statement))), None) or arms(
        body if returns is None else body[:returns])


def _absolute_imports(node: ast.Import | ast.ImportFrom, package: str | None) -> list[str]:
    """The modules an import statement names, relative ones made absolute from ``package`` (when known); for
    ``from pkg import name`` also ``pkg.name`` (a submodule, perhaps)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level and package is None:
        return []
    base = absolute_module(node, package or "")
    return [base, *(f"{base}.{alias.name}" for alias in node.names)] if base else []
