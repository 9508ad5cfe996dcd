"""CUDA gates a project defines: decorators, marks and helpers whose own definition skips, raises, exits or
returns unless CUDA is there or enough GPUs are counted (``RunIf(min_cuda_gpus=1)``, ``requires_cuda =
pytest.mark.skipif(not torch.cuda.is_available(), ...)``, ``def skip_without_gpu(f): ...``). A test gated by one
runs only on CUDA and is left as it is. Recognised from what the definition does, never from its name. CPython's
`ast` alone: the project pass reads every module's gates without LibCST.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterator

from torchport.codemods.analysis.programs import call_name, cuda_call, is_main, removable_exit
from torchport.model import torch_facts

# Text a gate's module holds: a module without it defines none (and is not walked).
GATE_TEXT = torch_facts.text("gate_text")
_QUERIES = frozenset(str(torch_facts.cuda_tail(name)) for name in torch_facts.named("available", "count"))
_SKIPS = frozenset(torch_facts.words("gate_skip"))


def cuda_gates(tree: ast.Module) -> dict[str, int]:
    """The module-level names of ``tree`` that are CUDA gates, with the line of their definition.

    A function (with what it nests) or an assigned value is a gate when it asks CUDA (``torch.cuda.is_available()``,
    ``torch.cuda.device_count()``) and skips, raises or exits (``pytest.skip``, ``pytest.mark.skipif``,
    ``unittest.skipIf``/``skipUnless``, ``self.skipTest``, ``sys.exit``, ``raise``).
    """
    gates: dict[str, int] = {}
    stops: dict[str, set[int]] | None = None  # per function, the lines where a path stops on the CPU

    def stops_off_cuda(function: ast.FunctionDef | ast.AsyncFunctionDef, branch: ast.If) -> bool:
        """Whether, evaluated on the CPU, some path of ``function`` stops in ``branch`` (RTVC's ``train``: ``if
        torch.cuda.is_available(): ... if batch_size % torch.cuda.device_count(): raise`` raises only on CUDA)."""
        nonlocal stops
        if stops is None:
            from torchport.model.evaluate import Evaluator

            try:
                stops = {u.node.name: {p.stop.line for p in u.paths if p.stop is not None}  # type: ignore[attr-defined]
                         for u in Evaluator(tree, "cpu").top_functions()}
            except RecursionError:
                stops = {}
        lines = stops.get(function.name)
        last = branch.end_lineno or branch.lineno
        return lines is None or any(branch.lineno <= line <= last for line in lines)

    false: Callable[[ast.expr], bool] | None = None

    def calls_only_on_cuda(decorator: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """A decorator whose wrapper calls what it wraps only under a condition false without CUDA
        (torch-points-kernels' ``run_if_cuda``: ``if torch.cuda.is_available(): return func(...)`` / ``else:
        return``): off CUDA the decorated test passes without running."""
        nonlocal false
        if len(decorator.args.args) != 1 or "cuda" not in ast.unparse(decorator):
            return False
        wrapped = decorator.args.args[0].arg
        returned = {s.value.id for s in decorator.body if isinstance(s, ast.Return) and isinstance(s.value, ast.Name)}
        wrappers = [s for s in decorator.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and s.name in returned]
        calls = {id(n) for w in wrappers for n in ast.walk(w) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == wrapped}
        if not calls:
            return False
        if false is None:
            from torchport.model.evaluate import false_off_cuda

            false = false_off_cuda(tree)
        gated = {id(n) for w in wrappers for branch in ast.walk(w) if isinstance(branch, ast.If) and any(
            id(n) in calls for n in ast.walk(branch)) and false(branch.test)
            for statement in branch.body for n in ast.walk(statement)}
        return calls <= gated

    # what these decorators do depends on no other gate: read once, before the fixpoint below
    gates.update({s.name: s.lineno for s in tree.body
                  if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and calls_only_on_cuda(s)})
    grown = True
    while grown:  # a function that calls a gate is one too (a decorator whose wrapper calls `skip_without_gpus()`)
        grown = False
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):  # (a test class's setUp: the guards)
                if statement.name not in gates and _gates(statement, gates, stops_off_cuda):
                    gates[statement.name] = statement.lineno
                    grown = True
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None \
                    and _gates(statement, gates):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in gates:
                        gates[target.id] = statement.lineno
                        grown = True
    for name in _entry_functions(tree) & set(gates):
        function = next(s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and s.name == name)
        if not exits_without_cuda(function):  # what the script's `main` gates is the program: decided per program
            del gates[name]
    return gates


def _entry_functions(tree: ast.Module) -> set[str]:
    """The names the module's ``__main__`` block calls as statements of their own (``main()``)."""
    return {s.value.func.id for block in tree.body if isinstance(block, ast.If) and is_main(block.test)
            for s in _unconditional(block.body) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Name)}


def _gates(node: ast.AST, known: dict[str, int],
           reached: Callable[[ast.FunctionDef | ast.AsyncFunctionDef, ast.If], bool] | None = None) -> bool:
    """What ``node`` does (a function's body: its decorators gate it, they do not make it a gate): it calls a known
    gate, skips with a CUDA query as the condition (``pytest.mark.skipif(not torch.cuda.is_available(), ...)``,
    through a local or a list of conditions too), or skips, raises or exits under an ``if`` that asks CUDA. A
    function that only asks CUDA somewhere and raises elsewhere (a default device pick, then ``raise KeyError``) is
    none; nor is one that asserts CUDA (TP009 removes such an assert where the program can run elsewhere).
    ``reached``: whether evaluated off CUDA the function stops in such an ``if`` of its own body (not a nested
    function's: a decorator's wrapper runs later)."""
    body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else [node]

    def nested(inner: ast.AST) -> bool:
        """Whether ``inner`` is in a function ``node`` defines (a decorator's wrapper runs later)."""
        return any(inner is n for part in body for d in ast.walk(part)
                   if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in ast.walk(d))

    flags: set[str] = set()  # locals assigned from a CUDA query: `c = torch.cuda.device_count() < n`
    for inner in (n for part in body for n in ast.walk(part)):
        if isinstance(inner, ast.Assign) and asks_cuda(inner.value, flags):
            flags.update(t.id for t in inner.targets if isinstance(t, ast.Name))
        elif (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)  # `conditions.append(<query>)`
              and isinstance(inner.func.value, ast.Name) and inner.func.attr in ("append", "extend", "add")
              and any(asks_cuda(a, flags) for a in inner.args)):
            flags.add(inner.func.value.id)
        if isinstance(inner, ast.Call):
            if isinstance(inner.func, ast.Name) and inner.func.id in known:
                return True
            if call_name(inner) == "skipUnless" and any(
                    asks_cuda(a, flags, device=True) for a in (*inner.args, *(k.value for k in inner.keywords))) or (
                    call_name(inner) in _SKIPS and any(asks_cuda(a, flags) for a in (*inner.args,
                                                                                 *(k.value for k in inner.keywords)))):
                return True
        elif isinstance(inner, ast.If) and asks_cuda(inner.test, flags) and not removable_exit(inner) and any(
                isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and call_name(n) in _SKIPS)
                for branch in (inner.body, inner.orelse) for statement in branch for n in ast.walk(statement)) and (
                reached is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or nested(inner)
                or reached(node, inner)):
            return True
    return False


def asks_cuda(test: ast.AST, flags: set[str], device: bool = False) -> bool:
    """Whether an expression asks CUDA: ``torch.cuda.is_available()``, ``torch.cuda.device_count()``, a local in
    ``flags`` that holds the answer; with ``device``, also whether the device in use is CUDA's (only the condition
    of a ``skipUnless``, diffusers' ``skipUnless(torch_device == "cuda")``: an ``if x.device.type == "cuda": raise``
    stops on CUDA, not without it)."""
    return any((isinstance(n, ast.Call) and (name := call_name(n)) in _QUERIES and cuda_call(n, name))
               or (isinstance(n, ast.Name) and n.id in flags)
               or (device and isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq)
                   and any(isinstance(c, ast.Constant) and c.value == "cuda" for c in (n.left, *n.comparators)))
               for n in ast.walk(test))


def exits_without_cuda(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` stops (exit, raise) whenever CUDA is missing, whatever else holds: an ``if not
    torch.cuda.is_available():`` (or a count below a bound) that exits, or an ``if``/``elif`` chain on CUDA whose
    ``else`` exits (dino's ``init_distributed_mode``). A check joined with a flag (``if args.cuda and not ...``)
    stops only when asked for CUDA: no, and so is a check nested in a branch of another condition (SRResNet's
    ``if opt.cuda: if not torch.cuda.is_available(): raise``)."""
    # AdCo's `ngpus_per_node = torch.cuda.device_count()`, then `if ngpus_per_node <= 0: exit()`: a name bound once
    # to a query stands for it
    stores = Counter(n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    bound: dict[str, ast.expr] = {}
    for node in _unconditional(function.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and (
                cuda_call(node.value, "device_count") or cuda_call(node.value, "is_available")) \
                and stores[node.targets[0].id] == 1:
            bound[node.targets[0].id] = node.value
            continue
        if not isinstance(node, ast.If):
            continue
        if _negated_query(_substituted(node.test, bound)) and _stops(node.body) and not removable_exit(node):
            return True
        branch: ast.If = node
        while branch.orelse and len(branch.orelse) == 1 and isinstance(branch.orelse[0], ast.If):
            branch = branch.orelse[0]
        if cuda_call(branch.test, "is_available") and branch.orelse and _stops(branch.orelse):
            return True
    return False


def _substituted(test: ast.expr, bound: dict[str, ast.expr]) -> ast.expr:
    """``test`` with a name ``bound`` maps, as its operand or compared side, replaced by the query it was bound to."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.operand, ast.Name) and test.operand.id in bound:
        return ast.UnaryOp(op=test.op, operand=bound[test.operand.id])
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id in bound:
        return ast.Compare(left=bound[test.left.id], ops=test.ops, comparators=test.comparators)
    return test


def _unconditional(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run whenever it runs: its own, and those of its ``with`` and ``try`` bodies;
    not the branches of an ``if``, a loop's body or an exception handler."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _unconditional(statement.body)
        elif isinstance(statement, ast.Try):
            yield from _unconditional(statement.body)


def _negated_query(test: ast.expr) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return cuda_call(test.operand, "is_available")
    return isinstance(test, ast.Compare) and cuda_call(test.left, "device_count") \
        and isinstance(test.ops[0], (ast.Lt, ast.Eq, ast.LtE))


def _stops(body: list[ast.stmt]) -> bool:
    for statement in body:
        if isinstance(statement, ast.Raise):
            return True
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            if call_name(statement.value) in ("exit", "_exit", "skip", "fail"):
                return True
    return False
