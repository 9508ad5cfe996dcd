"""Programs that run only where CUDA is: a script that exits unless it finds CUDA GPUs.

Read from CPython's tree before the rules visit the module, because the requirement usually sits in the
``__main__`` block at the end, after the functions it protects::

    if __name__ == "__main__":
        n_gpus = torch.cuda.device_count()
        assert n_gpus >= 2, "needs 2 GPUs"      # or: if n_gpus < 8: print(...) else: run(...)

    if not verify_min_gpu_count(min_gpus=2):   # at the top of a script
        sys.exit()

Every function of such a module runs only on CUDA, so rewriting any of it would change nothing anywhere.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from torchport.model import torch_facts

# Text every CUDA-only requirement's module holds (`requirements.cuda_only_import`, its blocking APIs; a test checks
# it against the lists): a run whose files hold none of it has no program that only CUDA can run, and loads no
# analysis (a warm run stays light).
CUDA_ONLY_TEXT = torch_facts.text("cuda_only_text")

_EXIT_CALLS = frozenset(torch_facts.words("program_exit"))


def cuda_call(node: ast.AST, name: str) -> bool:
    """``torch.cuda.<name>()`` (or ``cuda.<name>()``) with no arguments."""
    return (isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute)
            and node.func.attr == name and isinstance(node.func.value, (ast.Attribute, ast.Name))
            and (getattr(node.func.value, "attr", None) or getattr(node.func.value, "id", None)) == "cuda")


def call_name(node: ast.Call) -> str:
    """The called name: ``f`` of ``f(...)``, ``g`` of ``x.g(...)``, else ``""``."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


class _Flags:
    """Names assigned from ``torch.cuda.is_available()`` (availability) or ``torch.cuda.device_count()`` (count);
    ``predicates``: functions that answer whether CUDA (GPUs enough) is there (`cuda_predicates`)."""

    def __init__(self, statements: list[ast.stmt], predicates: frozenset[str] = frozenset()) -> None:
        self.available: set[str] = set()
        self.count: set[str] = set()
        self.predicates = predicates
        for statement in statements:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(
                    statement.targets[0], ast.Name):
                name, value = statement.targets[0].id, statement.value
                if cuda_call(value, "device_count"):
                    self.count.add(name)
                elif any(cuda_call(inner, "is_available") for inner in ast.walk(value)):
                    self.available.add(name)

    def is_count(self, node: ast.AST) -> bool:
        return cuda_call(node, "device_count") or (isinstance(node, ast.Name) and node.id in self.count)

    def detects(self, test: ast.AST) -> bool:
        """True only where CUDA is."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self.detects(value) for value in test.values)
        if isinstance(test, ast.Call):
            return cuda_call(test, "is_available") or (ast.unparse(test.func) in self.predicates)
        if isinstance(test, ast.Name):
            return test.id in self.available
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and self.is_count(test.left):
            bound = test.comparators[0]
            if isinstance(bound, ast.Constant) and isinstance(bound.value, int) and not isinstance(bound.value, bool):
                return (isinstance(test.ops[0], ast.Gt) and bound.value >= 0) or (
                    isinstance(test.ops[0], ast.GtE) and bound.value >= 1)
        return False

    def negated(self, test: ast.AST) -> bool:
        """False wherever CUDA is needed: ``not torch.cuda.is_available()``, ``n_gpus < 8``."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.detects(test.operand)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(self.negated(value) for value in test.values)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and self.is_count(test.left):
            bound = test.comparators[0]
            if isinstance(bound, ast.Constant) and isinstance(bound.value, int) and not isinstance(bound.value, bool):
                op = test.ops[0]
                return ((isinstance(op, ast.Lt) and bound.value >= 1) or (isinstance(op, ast.LtE) and bound.value >= 0)
                        or (isinstance(op, ast.Eq) and bound.value == 0))
        return False


def _exits(body: list[ast.stmt]) -> bool:
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and call_name(last.value) in _EXIT_CALLS


# The comment that opens each code cell of a notebook migrated as one module (`torchport.pipeline.notebooks`).
NOTEBOOK_CELL = "# torchport-notebook-cell"


_CELL = re.compile("^" + re.escape(NOTEBOOK_CELL) + r" (\d+)$", re.MULTILINE)


def cell_at(source: str, line: int) -> tuple[int, int] | None:
    """Where line ``line`` of a notebook's joined cells is: ``(cell index from 0, line in the cell from 1)``; a line
    above the first cell is in the first. None for a module that is no notebook."""
    best: tuple[int, int] | None = None
    for match in _CELL.finditer(source):
        start = source.count("\n", 0, match.end() + 1) + 1  # the cell's first line
        if start <= line or best is None:
            best = (int(match.group(1)), start)
    return None if best is None else (best[0], max(1, line - best[1] + 1))


def where(source: str, line: int) -> str:
    """``line 12`` of a module; ``cell 9, line 3`` of a notebook's joined cells (cells counted from 1), as a
    message names a place."""
    found = cell_at(source, line) if source.startswith(NOTEBOOK_CELL) else None
    return f"line {line}" if found is None else f"cell {found[0] + 1}, line {found[1]}"


def is_program(module: ast.Module, source: str) -> bool:
    """Whether a module runs as a program: a ``__main__`` block, or a notebook's code cells."""
    return source.startswith(NOTEBOOK_CELL) or is_script(module)


def absolute_module(node: ast.ImportFrom, package: str) -> str:
    """The module ``from <module> import ...`` names, made absolute from ``package`` (the importer's) for a relative
    import: ``from ..a import b`` in ``p.q.m`` names ``p.a``."""
    base = node.module or ""
    if not node.level:
        return base
    anchor = package.split(".") if package else []
    anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
    return ".".join([*anchor, *([base] if base else [])])


def always_run(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that run whenever it does: not under ``if``/``try``, nor in a function. A ``try``
    whose every handler raises again (``except ImportError: raise RuntimeError("needs triton")``, also under an
    ``if`` with no ``else``: `raises_again`) is no way around its body: that body counts. The imports of an ``except
    ImportError:`` handler count too: they run wherever the body's import fails (``try: import _raymarching`` /
    ``except ImportError: from .backend import _backend``, which builds the extension); so do those of the one arm
    of an ``if`` chain whose other arms all raise (`_only_way`)."""
    run: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            run.extend(always_run(statement.body))
        elif isinstance(statement, ast.Try) and statement.handlers and all(
                raises_again(h.body) for h in statement.handlers):
            run.extend(always_run(statement.body))
        elif isinstance(statement, ast.Try):
            # where the body's import fails (a compiled extension not built), the handler's imports run instead
            run.extend(s for h in statement.handlers if _catches_import_error(h)
                       for s in always_run(h.body) if isinstance(s, (ast.Import, ast.ImportFrom)))
        elif isinstance(statement, ast.If) and (way := _only_way(statement)) is not None:
            run.extend(always_run(way))
        elif not isinstance(statement, (ast.If, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                        ast.For, ast.While)):
            run.append(statement)
    return run


def _only_way(branch: ast.If) -> list[ast.stmt] | None:
    """The one arm of an ``if``/``elif``/``else`` chain that does not end by raising, where every other arm does
    (point-transformer's ``if args.arch == "...": from model... import Model`` / ``else: raise Exception(...)``):
    whatever runs past the chain ran that arm. None where no arm, or more than one, goes on."""
    arms: list[list[ast.stmt]] = []
    node: ast.If = branch
    while True:
        arms.append(node.body)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        if not node.orelse:
            return None
        arms.append(node.orelse)
        break
    going = [arm for arm in arms if not (arm and isinstance(arm[-1], ast.Raise))]
    return going[0] if len(going) == 1 else None


def raises_again(body: list[ast.stmt]) -> bool:
    """Whether a handler's ``body`` ends by raising: a ``raise``, or an ``if`` with no ``else`` that raises
    (pointnet2's ``if not getattr(builtins, "__POINTNET2_SETUP__", False): raise ImportError(...)``, skipped only
    while its own setup.py imports the package)."""
    last = body[-1] if body else None
    return isinstance(last, ast.Raise) or isinstance(last, ast.If) and not last.orelse and raises_again(last.body)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    """``except ImportError:`` (or ``ModuleNotFoundError``, in a tuple too), or a bare ``except:``."""
    if handler.type is None:
        return True
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError") for t in caught)


def is_main(test: ast.AST) -> bool:
    """``__name__ == "__main__"``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def main_blocks(tree: ast.Module) -> list[tuple[int, int]]:
    """The first and last lines of each top-level ``if __name__ == "__main__":`` block."""
    return [(s.lineno, s.end_lineno or s.lineno) for s in tree.body if isinstance(s, ast.If) and is_main(s.test)]


def is_script(module: ast.Module) -> bool:
    """Whether ``module`` has a top-level ``if __name__ == "__main__":`` block that runs something (TorchSSL's
    models end with one that holds only ``pass``: they are modules the training scripts import, not programs)."""
    return any(isinstance(s, ast.If) and is_main(s.test) and not all(
        isinstance(b, ast.Pass) or isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) for b in s.body)
        for s in module.body)


def closed_functions(module: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module-level functions that nothing outside the module calls, by name: the private ones (``_name``),
    or every function of a script. A name defined twice is left out."""
    script = is_script(module)
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                script or (statement.name.startswith("_") and not statement.name.endswith("__"))):
            found[statement.name] = None if statement.name in found else statement
    return {name: function for name, function in found.items() if function is not None}


def _calls_any(body: list[ast.stmt], names: set[str]) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
               for statement in body for node in ast.walk(statement))


def availability_assert(node: ast.Assert) -> bool:
    """``assert torch.cuda.is_available()`` (a message allowed): it only stops the program where CUDA is not, so
    a port removes it (TP009); a count (``device_count() > rank``) stays, as it stops CUDA runs too."""
    return cuda_call(node.test, "is_available")


_MESSAGES = frozenset(torch_facts.words("message_call"))


def removable_exit(node: ast.If) -> bool:
    """``if not torch.cuda.is_available():`` with no ``else``, whose body only reports (``print``, logging) and then
    ends the process (``sys.exit``, ``exit``, ``os._exit``): like ``assert torch.cuda.is_available()``, it stops the
    program only where CUDA is not, so a port removes it (TP009) where the rest of the program ports (PC-DARTS'
    ``logging.info('no gpu device available')`` / ``sys.exit(1)``). A ``raise`` (an error a caller may catch, a
    library's own statement that it needs CUDA), a skip, or a body that does other work stays."""
    test = node.test
    if node.orelse or not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                           and cuda_call(test.operand, "is_available")):
        return False
    *said, last = node.body
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and call_name(last.value) in (
        "exit", "_exit") and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                                 and call_name(s.value) in _MESSAGES for s in said)


def cuda_predicates(module: ast.Module) -> frozenset[str]:
    """The module's functions that answer whether CUDA is there, read from what they return: each ``return`` gives a
    CUDA query, a flag assigned from one, or a test of them (``return has_cuda and gpu_count >= min_gpus``); never a
    device (``return "cuda" if ... else "cpu"`` is a choice, not an answer)."""
    found, asking = set(), []
    for function in module.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        flags = _Flags(function.body)
        returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
        if returns and all(r.value is not None and _answers(r.value, flags) for r in returns):
            found.add(function.name)
        elif returns and any(isinstance(n, ast.Attribute) and n.attr in _QUERY_TAILS for n in ast.walk(function)):
            asking.append(function.name)
    return frozenset(found | _false_off_cuda(module, asking)) if asking else frozenset(found)


_QUERY_TAILS = frozenset(str(torch_facts.cuda_tail(name)) for name in torch_facts.named("available", "count"))


def _false_off_cuda(module: ast.Module, names: list[str]) -> set[str]:
    """Those of the functions ``names`` (top-level, each asking a CUDA query) that, evaluated with their parameters
    unknown, return a false value on every path without CUDA and may return a true one with it: falkon's
    ``decide_cuda(opt=None)``, ``if opt.use_cpu: return False`` / ``if not torch.cuda.is_available(): return
    False`` / ``return True``. Evaluated, not read from how the returns are spelled."""
    from torchport.model.evaluate import Evaluator
    from torchport.model.values import truth

    try:
        off, on = (Evaluator(module, target).top_functions(names) for target in ("cpu", "cuda"))
    except RecursionError:
        return set()
    return {getattr(cpu.node, "name", "") for cpu, cuda in zip(off, on, strict=True)
            if cpu.paths and all(p.stop is None and p.flow == "return" and truth(p.returned) is False
                                 for p in cpu.paths)
            and any(p.stop is None and truth(p.returned) is not False for p in cuda.paths)}


def _answers(value: ast.expr, flags: _Flags) -> bool:
    if isinstance(value, ast.BoolOp):
        return any(_answers(v, flags) for v in value.values) and all(isinstance(
            v, (ast.BoolOp, ast.Compare, ast.Name, ast.Call, ast.UnaryOp, ast.Constant)) for v in value.values)
    return flags.detects(value) or flags.is_count(value) or (
        isinstance(value, ast.Name) and value.id in flags.count)


def cuda_only_program(module: ast.Module, predicates: frozenset[str] = frozenset()) -> int | None:
    """The line of the requirement that makes ``module`` (CPython's tree) a program that runs only on CUDA:
    a top-level ``if not <CUDA found>: exit``, or a ``__main__`` block that asserts CUDA, exits without it,
    or calls the module's functions only where CUDA GPUs were found, or whose main function builds faiss GPU
    resources unconditionally. None for any other module.

    ``predicates``: the names bound here to another module's `cuda_predicates` (``verify_min_gpu_count``); the
    module's own are read here."""
    defined = {s.name for s in module.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    predicates = predicates | cuda_predicates(module) if defined else predicates
    top = _Flags(module.body, predicates)
    for statement in module.body:
        if isinstance(statement, ast.If) and top.negated(statement.test) and _exits(statement.body) \
                and not removable_exit(statement):
            return statement.lineno
        if not (isinstance(statement, ast.If) and is_main(statement.test)):
            continue
        flags = _Flags(statement.body, predicates)
        for inner in statement.body:
            if isinstance(inner, ast.Assert) and flags.detects(inner.test) and not availability_assert(inner):
                return inner.lineno
            if isinstance(inner, ast.If) and flags.negated(inner.test) and not removable_exit(inner) and (
                    _exits(inner.body) or (inner.orelse and not _calls_any(inner.body, defined)
                                           and not (_binds_only(inner.body) and _binds_only(inner.orelse)))):
                return inner.lineno
            if _calls_any([inner], defined):
                return _gpu_only_work(module, inner)  # the program's work starts here
    return None


def _binds_only(statements: list[ast.stmt]) -> bool:
    """Whether ``statements`` only bind names (NaturalSpeech2's ``device = torch.device('cpu')``): an arm that picks
    a device, not one that skips the work."""
    return all(isinstance(s, (ast.Assign, ast.AnnAssign, ast.Pass)) for s in statements)


# Calls that need a CUDA GPU whatever torch picks: faiss's GPU index resources.
_GPU_ONLY_CALLS = frozenset(torch_facts.words("gpu_only_call"))


def _gpu_only_work(module: ast.Module, call_site: ast.stmt) -> int | None:
    """The line of a GPU-only call (``faiss.StandardGpuResources()``) made unconditionally, at the top level of
    a function that the ``__main__`` statement ``call_site`` calls; None if there is none."""
    called = {n.func.id for n in ast.walk(call_site) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    for function in module.body:
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name in called:
            for statement in function.body:
                if isinstance(statement, (ast.Assign, ast.Expr)):
                    for node in ast.walk(statement):
                        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                                and node.func.attr in _GPU_ONLY_CALLS):
                            return node.lineno
    return None


def is_test(node: ast.stmt) -> bool:
    """A test function, or a class that holds one that a test runner collects (unittest's ``class
    TimerGPUTest(unittest.TestCase)``, pytest's ``class TestModel``): not SR-LSTM's ``class Processor()``, whose
    ``test_epoch`` its training loop calls."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name.lower().startswith("test")
    return isinstance(node, ast.ClassDef) and (node.name.lower().startswith("test") or any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test") for n in node.body)
        and any("test" in name.lower() for name in (node.name, *map(ast.unparse, node.bases))))


def parameter_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[ast.arg, ast.expr]:
    """Each parameter of ``function`` that has a default, with it (positional and keyword-only)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    defaults.update((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)
    return defaults


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of ``function``'s parameters a call can fill by name: positional ones first, in order, then
    keyword-only ones (not ``*args`` and ``**kwargs``)."""
    args = function.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def arguments(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> dict[str, ast.expr | None] | None:
    """What each of `parameters` gets in ``call`` (None: nothing, its default), or None when the call unpacks
    arguments (``*args``, ``**kwargs``) and that cannot be told."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    given: dict[str, ast.expr | None] = dict.fromkeys(parameters(function))
    given.update(zip([a.arg for a in (*function.args.posonlyargs, *function.args.args)], call.args))
    given.update({k.arg: k.value for k in call.keywords if k.arg})
    return given




def placed_again(branch: ast.If, parents: Mapping[int, ast.AST]) -> bool:
    """Whether everything the ``if`` ``branch`` (no ``else``) places is placed again by the statement right after it
    (Medical-Transformer: ``if torch.cuda.device_count() > 1: model = nn.DataParallel(model).cuda()``, then
    ``model.to(device)``): where the test is false the data goes where that statement sends it, so the branch keeps
    no choice of its own. ``parents``: each node's parent, by ``id``."""
    body = getattr(parents.get(id(branch)), "body", None)
    if branch.orelse or not isinstance(body, list) or branch not in body or body[-1] is branch:
        return False
    after = body[body.index(branch) + 1]

    def placed(statement: ast.stmt) -> set[str]:
        """The names ``statement`` places: ``x = ....cuda()``, ``x.to(...)``, ``x = x.to(...)``."""
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in ("cuda", "to")):
            return set()
        if isinstance(statement, ast.Assign):
            return {ast.unparse(t) for t in statement.targets}
        return {ast.unparse(value.func.value)}

    inside = {name for statement in branch.body for name in placed(statement)}
    return bool(inside) and inside <= placed(after) and all(
        isinstance(s, ast.Expr | ast.Assign) and (placed(s) or isinstance(s, ast.Expr)) for s in branch.body)
