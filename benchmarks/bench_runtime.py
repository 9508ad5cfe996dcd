"""Micro-benchmarks for torchport.runtime: per-call cost and import cost.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_runtime.py
Prints numbers only (no pass/fail). Per-call figures are the best of several
timeit repeats, in nanoseconds; import figures are medians over fresh
interpreters.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import timeit

import torch

from torchport import runtime as tp

_CACHED = torch.device("cpu")


def plain() -> torch.device:
    """Baseline: a function returning a cached module global."""
    return _CACHED


def ns_per_call(rows: list[tuple[str, object, int]], repeat: int = 9) -> dict[str, float]:
    """Best-of-``repeat`` ns per call for each ``(name, callable, number)`` row.

    Rows are interleaved within each repeat so that load changes on a busy
    machine hit all of them alike.
    """
    best = {name: float("inf") for name, _, _ in rows}
    for _ in range(repeat):
        for name, fn, number in rows:
            t = timeit.timeit(fn, number=number) / number * 1e9
            best[name] = min(best[name], t)
    return best


_START, _END = tp.Event(enable_timing=True), tp.Event(enable_timing=True)


def record_pair() -> float:
    """Two record() calls and one elapsed_time() on existing events."""
    _START.record()
    _END.record()
    return _START.elapsed_time(_END)


def new_event_pair() -> float:
    """The same, including creating both events."""
    start, end = tp.Event(enable_timing=True), tp.Event(enable_timing=True)
    start.record()
    end.record()
    return start.elapsed_time(end)


_IMPORT_SNIPPET = (
    "import time, importlib; import torch; t = time.perf_counter(); "
    "importlib.import_module({mod!r}); print((time.perf_counter() - t) * 1e3)"
)


def import_ms(module: str, runs: int = 7) -> float:
    """Median milliseconds to import ``module`` after ``import torch``, in fresh interpreters."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", _IMPORT_SNIPPET.format(mod=module)],
            check=True, capture_output=True, text=True,
        ).stdout
        times.append(float(out.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    print(f"torch {torch.__version__}, picked device {tp.device()!s}, python {sys.version.split()[0]}")
    n = 200_000
    rows = [
        ("plain cached-global function", plain, n),
        ("tp.device()", tp.device, n),
        ("lambda: plain() (lambda baseline)", lambda: plain(), n),
        ("tp.device(0)", lambda: tp.device(0), n),
        ("tp.device('cuda')", lambda: tp.device("cuda"), n),
        ("tp.device('cuda:0')", lambda: tp.device("cuda:0"), n),
        ("tp.device('cpu') (pass-through)", lambda: tp.device("cpu"), n),
        ("tp.device_str()", tp.device_str, n),
        ("tp.device_type()", tp.device_type, n),
        ("record x2 + elapsed_time", record_pair, n // 4),
        ("Event() x2 + record x2 + elapsed_time", new_event_pair, n // 4),
    ]
    best = ns_per_call(rows)
    base = best["plain cached-global function"]
    for name, ns in best.items():
        print(f"{name:40s} {ns:9.1f} ns/call  ({ns / base:4.1f}x plain)")
    print("(rows with an argument are timed through a lambda: compare them with the lambda baseline)")
    from torchport.runtime import _backend

    _backend._forget()
    _backend._publish(torch.device("mps"))  # the state of an MPS pick (simulated: no MPS call is made)
    mps = ns_per_call([("tp.device() on MPS (simulated pick)", tp.device, n)])
    for name, ns in mps.items():
        print(f"{name:40s} {ns:9.1f} ns/call  ({ns / base:4.1f}x plain)")
    _backend._forget()
    floor = import_ms("json")  # already imported by torch: the harness floor
    runtime = import_ms("torchport.runtime")
    print(f"import torchport.runtime after torch: {runtime:.1f} ms median of 7 fresh interpreters "
          f"(harness floor {floor:.2f} ms)")


if __name__ == "__main__":
    main()
