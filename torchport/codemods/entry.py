"""TP019: the entry point of a program that MPS cannot run says so to the runtime, once.

| code  | before                                              | after                                  |
|-------|-----------------------------------------------------|----------------------------------------|
| TP019 | a script that moves float64 tensors to the device   | tp.avoid_mps("float64, line 3") after its imports |

A program that uses something MPS lacks (float64 or complex128 tensors on the device, sparse tensors) ran on the
CPU of a Mac before the port, either by its own ``"cuda" if ... else "cpu"`` choice or because it failed over to
nothing. Once ported, its data goes to the runtime's device, which is MPS there, and it fails. One call after the
entry point's imports, ``tp.avoid_mps("<what>, <where>")``, keeps the runtime's pick on the CPU of a Mac; on CUDA,
XPU and the CPU it does nothing. The program model (`torchport.pipeline.programs.avoid_mps`) finds the programs
whose blocker is in another module; a script whose own text has the blocker is found here.

A program that keeps a device choice CUDA-or-CPU as written (in any of its modules) beside data the port moves to
the runtime's device, or that calls kernels only the CPU and CUDA have, would split its data on an Intel GPU as on a
Mac: it gets ``tp.keep_cuda_or_cpu("<what>, <where>")`` instead, which keeps the runtime's pick off XPU too.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst

from torchport.codemods.analysis.lacks import blocker
from torchport.codemods.analysis.programs import NOTEBOOK_CELL, is_program, main_blocks, where
from torchport.codemods.core.base import Diagnostic, dotted_name
from torchport.codemods.core.rule import Example, Rule
from torchport.emit.placement import after_imports, into_else, torch_try
from torchport.results import AVOID_BEFORE, AVOID_IN_MAIN, keeps_cuda_or_cpu

if TYPE_CHECKING:
    from torchport.codemods.core.transformer import Migrator


class KeepOffMps(Rule):
    code = "TP019"
    moves_data = False
    name = "keep-off-mps"
    summary = ("A program that uses what MPS lacks (float64, complex128, sparse tensors), that would split its "
               "data between MPS and the CPU, or that always makes a process group, gets `tp.avoid_mps(...)` "
               "after its entry point's imports: on a Mac it keeps running on the CPU, as before (one that keeps a "
               "choice CUDA-or-CPU gets `tp.keep_cuda_or_cpu(...)`: on an Intel GPU too).")
    before = 'import torch  # a script that moves float64 tensors to "cuda"'
    after = 'import torch\ntp.avoid_mps("float64, line 3")'
    triggers = (r"\bfloat64\b|\bcomplex128\b|\.double\(\)|\bsparse_\w+_tensor\b|\.to_sparse|\bsparse\.\w*Tensor\(",)
    examples = (
        Example('import torch\n\nx = torch.zeros(3, dtype=torch.float64).cuda()\n\nif __name__ == "__main__":\n'
                "    print(x)\n",
                'import torch\ntp.avoid_mps("float64, line 3")\n\nx = torch.zeros(3, dtype=torch.float64).to('
                'tp.device())\n\nif __name__ == "__main__":\n    print(x)\n', with_rules=("TP001",)),
        # A module that is not run (no `__main__` block): the programs that import it get the call.
        Example("import torch\n\nx = torch.zeros(3, dtype=torch.float64).cuda()\n", with_rules=("TP001",)),
        # A library module's demo lacks it in its `__main__` block alone: the call goes there, not into every
        # program that imports the module (real-time-ReID-tracking's swin_transformer.py).
        Example('import torch\n\n\ndef make():\n    return torch.nn.Linear(2, 2)\n\n\nif __name__ == "__main__":\n'
                '    x = torch.zeros(3, dtype=torch.float64).cuda()\n    print(make(), x)\n',
                'import torch\n\n\ndef make():\n    return torch.nn.Linear(2, 2)'
                '\n\n\nif __name__ == "__main__":\n    tp.avoid_mps("float64, line 9")\n'
                '    x = torch.zeros(3, dtype=torch.float64).to(tp.device())\n    print(make(), x)\n',
                with_rules=("TP001",)),
        # Nothing goes to the runtime's device: the program runs where it ran.
        Example('import torch\n\nx = torch.zeros(3, dtype=torch.float64)\n\nif __name__ == "__main__":\n'
                "    print(x.cuda() if torch.cuda.is_available() else x)\n"),
    )


def avoid_mps(m: Migrator, original: cst.Module, updated: cst.Module) -> cst.Module:
    """``updated`` with ``tp.avoid_mps(reason)`` after its leading imports, where the module starts a program
    that MPS cannot run and the port sends data to the runtime's device (see the module docstring)."""
    reason, in_main = m.avoid_mps, AVOID_IN_MAIN in m.gates
    if reason is None:
        if not m.facts.get("moves") or m.syntax is None or not is_program(m.syntax, m.source):
            return updated
        found = blocker(m.source, m.syntax, certain=True)
        if found is None:
            return updated
        reason = f"{found[1]}, {where(m.source, found[0])}"
        in_main = in_main or _demo_lack(m.syntax, found[0], m.facts.get("moves", []))
    if not m.enabled(KeepOffMps.code) or _has_call(updated):
        return updated
    name = "keep_cuda_or_cpu" if keeps_cuda_or_cpu(reason) else "avoid_mps"  # off XPU too where a choice splits
    call = cst.SimpleStatementLine([cst.Expr(m.runtime_call(name, [cst.SimpleString(_quoted(reason))]))])
    if in_main:  # a module others import, with a demo `__main__` block: first in that block
        block = next((s for s in updated.body if _is_main(s)), None)
        first = next((s for s in original.body if _is_main(s)), None)
        if not isinstance(block, cst.If) or not isinstance(block.body, cst.IndentedBlock) or first is None \
                or m._is_suppressed(KeepOffMps.code, line := m.start(first).line):
            return updated
        m.rewrites[KeepOffMps.code] += 1
        m.sites.append(Diagnostic(KeepOffMps.code, line, 0, KeepOffMps.summary))
        return updated.with_changes(body=[block.with_changes(body=block.body.with_changes(
            body=[call, *block.body.body])) if s is block else s for s in updated.body])
    guard, was = torch_try(updated.body), torch_try(original.body)
    if guard is not None and was is not None:  # torch optional: where it has imported (the runtime's too)
        if m._is_suppressed(KeepOffMps.code, line := m.start(was).line):
            return updated
        m.rewrites[KeepOffMps.code] += 1
        m.sites.append(Diagnostic(KeepOffMps.code, line, 0, KeepOffMps.summary))
        return into_else(updated, guard, [call])
    # In a notebook, after the cell's `import torch`, where the runtime's import goes (its first cells often
    # install packages); in a module, after its leading imports.
    torch_import = next((s for s in updated.body if _imports_torch(s)), None) \
        if m.source.startswith(NOTEBOOK_CELL) else None
    at = after_imports(updated.body, lambda statement: statement is torch_import, source=m.source)
    before = next((int(g[len(AVOID_BEFORE):]) for g in m.gates if g.startswith(AVOID_BEFORE)), None)
    if before is not None:  # a module imported there picks the device when imported: the call goes above it
        at = min(at, next((i for i, s in enumerate(original.body) if m.start(s).line >= before), at))
    line = m.start(original.body[at]).line if at < len(original.body) else 1
    if m._is_suppressed(KeepOffMps.code, line):
        return updated
    m.rewrites[KeepOffMps.code] += 1
    m.sites.append(Diagnostic(KeepOffMps.code, line, 0, KeepOffMps.summary))
    return updated.with_changes(body=[*updated.body[:at], call, *updated.body[at:]])


def _demo_lack(tree: ast.Module, line: int, moves: list[int]) -> bool:
    """Whether the lack at ``line`` is in the ``__main__`` block of a module that defines functions or classes and
    moves no data at its top level otherwise: a library module's demo (real-time-ReID-tracking's
    ``swin_transformer.py`` runs torchsummary's ``summary`` there; the training scripts import its model). The call
    goes first in that block, where it runs only when the module is the program."""
    blocks = main_blocks(tree)
    inside = [(s.lineno, s.end_lineno or s.lineno) for s in tree.body
              if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return bool(inside) and any(first <= line <= last for first, last in blocks) and all(
        any(first <= moved <= last for first, last in (*blocks, *inside)) for moved in moves)


def _is_main(statement: cst.BaseStatement) -> bool:
    """``if __name__ == "__main__":``"""
    test = statement.test if isinstance(statement, cst.If) else None
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == "__name__" \
        and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal) \
        and isinstance(value := test.comparisons[0].comparator, cst.SimpleString) \
        and value.evaluated_value == "__main__"


def _imports_torch(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        (isinstance(s, cst.Import) and any((dotted_name(a.name) or "").split(".")[0] == "torch" for a in s.names))
        or (isinstance(s, cst.ImportFrom) and s.module is not None and not s.relative
            and (dotted_name(s.module) or "").split(".")[0] == "torch") for s in statement.body)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _has_call(module: cst.Module) -> bool:
    """Whether ``module`` already calls ``avoid_mps`` or ``keep_cuda_or_cpu`` at its top level, or first in its
    ``__main__`` block (a second run changes nothing)."""
    main = [s.body.body[0] for s in module.body if _is_main(s) and isinstance(s, cst.If)
            and isinstance(s.body, cst.IndentedBlock) and s.body.body]
    for statement in [*module.body, *main]:
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for s in small:
            if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) \
                    and isinstance(s.value.func, cst.Attribute) and s.value.func.attr.value in (
                    "avoid_mps", "keep_cuda_or_cpu"):
                return True
    return False
