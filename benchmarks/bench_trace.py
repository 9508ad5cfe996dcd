"""Per-op cost of tracing: no mode, a bare TorchDispatchMode, DeviceOpTrace, and Audit.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_trace.py
Prints microseconds per op (best of several interleaved timeit repeats); no pass/fail.

Rows:
  no mode               the op alone
  passthrough mode      a TorchDispatchMode whose __torch_dispatch__ only calls func (the floor
                        for any dispatch-mode tracer, pt-cpu's included)
  DeviceOpTrace, no hit DeviceOpTrace("meta"): every op is inspected, none matches
  DeviceOpTrace, count  DeviceOpTrace("cpu", quiet=True): every op is a hit, counted with its
                        call site, no stack printed
  Audit                 the TorchFunctionMode + torch.cuda hook of torchport.checks.audit
"""

from __future__ import annotations

import contextlib
import timeit
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchport.checks.audit import Audit
from torchport.checks.trace import DeviceOpTrace


class Passthrough(TorchDispatchMode):
    """The cheapest possible dispatch mode."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def us_per_op(fn: Callable[[], Any], make_ctx: Callable[[], Any], number: int, repeat: int) -> float:
    """Best-of-``repeat`` microseconds per call of ``fn`` inside a fresh ``make_ctx()``."""
    best = float("inf")
    for _ in range(repeat):
        with make_ctx():
            best = min(best, timeit.timeit(fn, number=number) / number * 1e6)
    return best


def main() -> None:
    torch.set_num_threads(1)
    t = torch.randn(8, 8)
    ops: dict[str, Callable[[], Any]] = {
        "randn(8, 8)": lambda: torch.randn(8, 8),
        "zeros(8)": lambda: torch.zeros(8),
        "t + t": lambda: t + t,
        "t.sum()": lambda: t.sum(),
    }
    modes: dict[str, Callable[[], Any]] = {
        "no mode": contextlib.nullcontext,
        "passthrough mode": Passthrough,
        "DeviceOpTrace, no hit": lambda: DeviceOpTrace("meta", summary=False),
        "DeviceOpTrace, count": lambda: DeviceOpTrace("cpu", quiet=True, summary=False),
        "Audit": lambda: Audit(report=False),
    }
    number, repeat = 2000, 7
    results = {m: {o: float("inf") for o in ops} for m in modes}
    for _ in range(repeat):  # interleave so load changes on a busy machine hit every row alike
        for m, make_ctx in modes.items():
            for o, fn in ops.items():
                results[m][o] = min(results[m][o], us_per_op(fn, make_ctx, number, 1))
    width = max(map(len, modes))
    print(f"torch {torch.__version__}, µs per op (best of {repeat} x {number})")
    print(" " * width + "".join(f"{o:>14}" for o in ops))
    for m in modes:
        print(f"{m:<{width}}" + "".join(f"{results[m][o]:14.2f}" for o in ops))


if __name__ == "__main__":
    main()
