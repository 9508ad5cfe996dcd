"""Prove the CUDA path on a machine with an NVIDIA GPU: run by hand there (CI has no GPU).

    python scripts/cuda_proof.py OUT_DIR [--corpus DIR]

1. Runtime: every `torchport.runtime` call answers as the `torch.cuda` call it replaces (device, count, backend,
   events, streams, memory, RNG, NVTX, properties), `torch.compile(fullgraph=True)` traces it, and picking the device
   leaves CUDA uninitialised so a forked child can still use it.
2. Programs: each program is run as written and after `torchport migrate --apply` in each runtime mode (package,
   vendor, native), under a recorder that counts every aten op by the devices of its outputs, records NVTX calls
   and the exit status; seeds and deterministic algorithms are fixed before the program starts. A port passes when
   its exit status, NVTX calls, ops per device and printed output (timings masked) equal the original's.
   Programs: examples/cuda_train, the fixture projects under tests/fixtures/projects (DDP ones under torchrun with
   one process, test suites under pytest), and with --corpus DIR the nanoGPT and minGPT recipes of corpus.md.

Writes OUT_DIR/proof.json and prints one line per check, then a summary; exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = ROOT / "tests" / "fixtures" / "projects"
MODES = ("package", "vendor", "native")
TORCHRUN = ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1")
# Seeds and determinism set for both sides before the program starts, so printed numbers compare exactly.
RECORDER = textwrap.dedent('''
    import collections, json, os, random, runpy, sys
    out = sys.argv[1]
    sys.argv = sys.argv[2:]
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    random.seed(0); torch.manual_seed(0)
    try:
        import numpy; numpy.random.seed(0)
    except ImportError:
        pass
    torch.use_deterministic_algorithms(True, warn_only=True)
    ops = collections.Counter()
    nvtx = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            devices = sorted({str(t.device) for t in tree_leaves(result) if isinstance(t, torch.Tensor)})
            ops[f"{func.__name__} -> {','.join(devices) or '-'}"] += 1
            return result

    for name in ("range_push", "range_pop", "mark"):
        real = getattr(torch.cuda.nvtx, name)
        def wrapped(*a, _real=real, _name=name, **k):
            nvtx.append([_name, *map(str, a)])
            return _real(*a, **k)
        setattr(torch.cuda.nvtx, name, wrapped)
    status = "ok"
    try:
        with Record():
            if sys.argv[0] == "-m":
                sys.argv = sys.argv[1:]
                runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
            else:
                sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
                runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as stop:
        status = f"exit {stop.code}" if stop.code not in (None, 0) else "ok"
    except BaseException as error:
        status = f"{type(error).__name__}: {error}"
    rank = os.environ.get("RANK", "0")
    with open(f"{out}.{rank}.json", "w") as f:
        json.dump({"status": status, "ops": dict(ops), "nvtx": nvtx,
                   "cuda_initialized": torch.cuda.is_initialized()}, f, sort_keys=True)
    if status != "ok":
        raise SystemExit(1)
''')
_TIMING = re.compile(r"\d+(\.\d+)?\s*(ms|s|sec|seconds)\b|(?i:mfu):? -?\d+(\.\d+)?%|0x[0-9a-f]+|/tmp/\S+")


def runtime_checks() -> list[tuple[str, bool, str]]:
    """The runtime against `torch.cuda` on this machine's GPU: (check, passed, detail) per check."""
    import torch

    import torchport.runtime as tp

    checks: list[tuple[str, bool, str]] = []

    def check(name: str, ours: object, theirs: object) -> None:
        checks.append((name, ours == theirs, f"runtime {ours!r} vs torch.cuda {theirs!r}"))

    # what `.cuda()` and `torch.device("cuda")` name: the current CUDA device, no index written
    check("device", tp.device(), torch.device("cuda"))
    check("device_type", tp.device_type(), "cuda")
    check("device_str('cuda:0')", tp.device_str("cuda:0"), "cuda:0")
    check("is_available", tp.is_available(), torch.cuda.is_available())
    check("device_count", tp.device_count(), torch.cuda.device_count())
    check("process_count", tp.process_count(), torch.cuda.device_count())
    check("distributed_backend", tp.distributed_backend(), "nccl")
    check("get_device_name", tp.get_device_name(), torch.cuda.get_device_name())
    check("get_device_capability", tp.get_device_capability(), torch.cuda.get_device_capability())
    check("get_device_properties", str(tp.get_device_properties()), str(torch.cuda.get_device_properties()))
    check("is_bf16_supported", tp.is_bf16_supported(), torch.cuda.is_bf16_supported())
    check("ddp_device_ids([0])", tp.ddp_device_ids([0]), [0])
    # None on CUDA: `torch.load` puts each storage back where it was saved, as it did without map_location
    check("map_location()", tp.map_location(), None)
    x = torch.ones(1024, 1024, device="cuda")
    check("memory_allocated", tp.memory_allocated(), torch.cuda.memory_allocated())
    check("max_memory_allocated", tp.max_memory_allocated(), torch.cuda.max_memory_allocated())
    check("memory_reserved", tp.memory_reserved(), torch.cuda.memory_reserved())
    check("memory_stats keys", sorted(tp.memory_stats()), sorted(torch.cuda.memory_stats()))
    check("on_accelerator(cuda tensor)", tp.on_accelerator(x), True)
    tp.manual_seed(3)
    ours = torch.randn(8, device="cuda")
    torch.cuda.manual_seed(3)
    check("manual_seed stream", torch.equal(ours, torch.randn(8, device="cuda")), True)
    check("get_rng_state", torch.equal(tp.get_rng_state(), torch.cuda.get_rng_state()), True)
    start, end = tp.Event(enable_timing=True), tp.Event(enable_timing=True)
    start.record()
    (x @ x).sum()
    end.record()
    tp.synchronize()
    elapsed = start.elapsed_time(end)
    checks.append(("Event.elapsed_time (ms)", isinstance(elapsed, float) and elapsed > 0, f"{elapsed!r}"))
    side = tp.Stream()
    with tp.stream(side):
        check("stream() makes current", tp.current_stream(), torch.cuda.current_stream())
        check("current_stream is the side stream", tp.current_stream() == side, True)
    check("default_stream", tp.default_stream(), torch.cuda.default_stream())
    ours_depth = tp.range_push("proof")
    tp.range_pop()
    check("range_push depth (negative with no NVTX tool attached)", ours_depth, torch.cuda.nvtx.range_push("proof"))
    torch.cuda.nvtx.range_pop()
    check("pin_memory", tp.pin_memory(torch.ones(2)).is_pinned(), True)

    def step(t: torch.Tensor) -> torch.Tensor:
        return (t.to(tp.device()) * torch.ones(1, device=tp.device())).sum() + (tp.device_type() == "cuda")

    try:
        compiled = torch.compile(step, fullgraph=True)
        check("torch.compile(fullgraph) of runtime calls", compiled(x).item(), step(x).item())
    except Exception as error:  # noqa: BLE001 (a graph break or backend failure is the finding)
        checks.append(("torch.compile(fullgraph) of runtime calls", False, repr(error)[:300]))
    fork = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, torch, torchport.runtime as tp
        d = tp.device(); assert not torch.cuda.is_initialized(), "picking the device initialised CUDA"
        pid = os.fork()
        if pid == 0:
            os._exit(0 if torch.ones(2, device=d).sum().item() == 2 else 3)
        _, status = os.waitpid(pid, 0)
        print(d, os.waitstatus_to_exitcode(status))
    """)], capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    checks.append(("fork after tp.device(): child uses CUDA", fork.stdout.strip() == "cuda 0",
                   (fork.stdout + fork.stderr).strip()[-300:]))
    return checks


def programs(corpus: Path | None) -> list[tuple[str, Path, list[list[str]], str]]:
    """(name, folder, runs, setup): each run an argv after `python`; setup a shell line run in the copy first."""
    found = [
        ("cuda_train", ROOT / "examples" / "cuda_train", [["train.py", "--steps", "30"],
                                                           ["train.py", "--steps", "30", "--amp"]], ""),
        ("ddp_template", PROJECTS / "ddp_template", [[*TORCHRUN, "train.py"]], ""),
        ("ddp_half", PROJECTS / "ddp_half", [["train.py"], [*TORCHRUN, "train.py"]], ""),
        ("unnamed_ddp", PROJECTS / "unnamed_ddp", [[*TORCHRUN, "train.py"]], ""),
        ("sampler", PROJECTS / "sampler", [["sample.py"]], ""),
        ("rl_agent", PROJECTS / "rl_agent", [["train.py"]], ""),
        ("gated_by_data", PROJECTS / "gated_by_data", [["train.py"]], ""),
        ("mixed", PROJECTS / "mixed", [["train.py"], ["fast.py"], ["sample.py"], ["-m", "pytest", "-q", "tests"]], ""),
        ("faked", PROJECTS / "faked", [["-m", "pytest", "-q", "-rA", "tests"]], ""),
        ("gated_suite", PROJECTS / "gated_suite", [["-m", "pytest", "-q", "-rA", "tests"]], ""),
    ]
    if corpus:
        found += [
            ("nanoGPT", corpus / "nanoGPT", [
                ["train.py", "config/train_shakespeare_char.py", "--max_iters=40", "--lr_decay_iters=40",
                 "--eval_interval=20", "--eval_iters=5", "--log_interval=10", "--batch_size=8", "--block_size=64",
                 "--n_layer=2", "--n_head=2", "--n_embd=64", "--compile=False"],
                ["sample.py", "--out_dir=out-shakespeare-char", "--num_samples=1", "--max_new_tokens=50"],
                ["bench.py", "--real_data=False", "--compile=False", "--batch_size=1", "--block_size=32"]],
             "cat *.py config/*.py data/*/*.py > data/shakespeare_char/input.txt && "
             "{python} data/shakespeare_char/prepare.py >/dev/null"),
            ("minGPT", corpus / "minGPT", [["projects/adder/adder.py", "--trainer.max_iters=101",
                                            "--trainer.num_workers=0"]], ""),
        ]
    return [p for p in found if p[1].is_dir()]


def _run_side(folder: Path, argv: list[str], record: Path, recorder: Path) -> dict:
    """Run one program in ``folder`` under the recorder; its record (rank 0) with stdout and exit code added."""
    if argv[0] == "-m" and argv[1] == "torch.distributed.run":
        command = [sys.executable, *argv[:-1], str(recorder), str(record), argv[-1]]
    else:
        command = [sys.executable, str(recorder), str(record), *argv]
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
           "TORCHPORT_DEVICE": "", "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    path = Path(f"{record}.0.json")
    result = json.loads(path.read_text()) if path.exists() else {"status": "no record", "ops": {}, "nvtx": []}
    result["rc"] = done.returncode
    result["stdout"] = [_TIMING.sub("<t>", line) for line in done.stdout.splitlines()]
    result["stderr_tail"] = done.stderr[-1500:]
    return result


def _compare(original: dict, ported: dict) -> list[str]:
    """What differs between two records, in words (empty when the port behaved as the original did)."""
    differ = []
    for key in ("rc", "status", "nvtx", "cuda_initialized"):
        if original[key] != ported[key]:
            differ.append(f"{key}: {str(original[key])[:300]} != {str(ported[key])[:300]}")
    if original["stdout"] != ported["stdout"]:
        lines = [f"{a!r} != {b!r}" for a, b in zip(original["stdout"], ported["stdout"]) if a != b]
        count = f"{len(original['stdout'])} vs {len(ported['stdout'])} lines"
        differ.append(f"stdout ({count}): " + "; ".join(lines[:4])[:600])
    if original["ops"] != ported["ops"]:
        keys = sorted(set(original["ops"]) | set(ported["ops"]))
        changed = [f"{k}: {original['ops'].get(k, 0)} -> {ported['ops'].get(k, 0)}" for k in keys
                   if original["ops"].get(k, 0) != ported["ops"].get(k, 0)]
        differ.append("ops per device: " + "; ".join(changed[:12]))
    return differ


def _side(name: str, source: Path, runs: list[list[str]], setup: str, side: str, work: Path,
          recorder: Path) -> list[dict] | str:
    """Copy a program, port it (unless ``side`` is "original") and run each of its runs in order: their records,
    or why the port could not be made."""
    copy = work / name / side
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", ".git", "out-*"))
    if setup:
        prepared = subprocess.run(setup.format(python=sys.executable), shell=True, cwd=copy, capture_output=True,
                                  text=True)
        if prepared.returncode:
            return f"setup failed: {prepared.stderr[-500:]}"
    if side != "original":
        migrated = subprocess.run(
            [sys.executable, "-m", "torchport", "migrate", ".", "--apply", "--no-cache", "--allow-dirty",
             "--runtime", side, "-q"], cwd=copy, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        if migrated.returncode not in (0, 1):
            return f"migrate failed: {migrated.stderr[-500:]}"
    records = []
    for i, argv in enumerate(runs):
        records.append(_run_side(copy, argv, work / f"{name}.{i}.{side}", recorder))
        print(f"ran {name} [{side}] {' '.join(argv)[:60]}: rc {records[-1]['rc']}", flush=True)
    return records


def program_checks(corpus: Path | None, work: Path, only: list[str]) -> list[tuple[str, bool, str]]:
    """Each program as written against its port in each runtime mode, on this machine's GPU (ten at a time)."""
    recorder = work / "record.py"
    recorder.write_text(RECORDER)
    chosen = [p for p in programs(corpus) if not only or p[0] in only]
    with ThreadPoolExecutor(max_workers=10) as pool:
        futures = {(name, side): pool.submit(_side, name, source, runs, setup, side, work, recorder)
                   for name, source, runs, setup in chosen for side in ("original", *MODES)}
        records = {key: future.result() for key, future in futures.items()}
    checks: list[tuple[str, bool, str]] = []
    for name, _, runs, _ in chosen:
        originals = records[name, "original"]
        if isinstance(originals, str):
            checks.append((f"{name} [original]", False, originals))
            continue
        for i, argv in enumerate(runs):
            label = f"{name}: python {' '.join(argv)}"
            original = originals[i]
            on_cuda = sum(n for k, n in original["ops"].items() if "cuda" in k.split(" -> ")[1])
            tests = "pytest" in argv  # a suite may fake CUDA, or run nothing on it
            checks.append((f"{label} [original runs on CUDA]", original["rc"] == 0 and (tests or on_cuda > 0),
                           f"original {original['status']}, rc {original['rc']}, {sum(original['ops'].values())} "
                           f"ops, {on_cuda} on cuda" + ("" if original["rc"] == 0 else
                                                         " | " + original["stderr_tail"][-400:])))
            for side in MODES:
                ported_runs = records[name, side]
                if isinstance(ported_runs, str):
                    checks.append((f"{label} [{side}]", False, ported_runs))
                    continue
                ported = ported_runs[i]
                differ = _compare(original, ported)
                checks.append((f"{label} [{side}]", not differ,
                               "; ".join(differ) + ("" if ported["rc"] == 0 else " | " + ported["stderr_tail"][-400:])
                               if differ else f"same as the original ({sum(ported['ops'].values())} ops)"))
    return checks


def main() -> int:
    """Run every check, print one line each and a summary, and write OUT_DIR/proof.json; 1 if any failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", type=Path, help="folder holding nanoGPT/ and minGPT/ (corpus.md)")
    parser.add_argument("--only", action="append", default=[], help="only these programs (repeatable)")
    options = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: this script proves the CUDA path and runs only where torch.cuda is available")
        return 2
    options.out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}", flush=True)
    checks = runtime_checks()
    with tempfile.TemporaryDirectory() as work:
        checks += program_checks(options.corpus, Path(work), options.only)
    for name, passed, detail in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}", flush=True)
    failed = [c for c in checks if not c[1]]
    (options.out / "proof.json").write_text(json.dumps(
        {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
         "checks": [{"name": n, "passed": p, "detail": d} for n, p, d in checks]}, indent=1))
    print(f"{len(checks) - len(failed)} of {len(checks)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
