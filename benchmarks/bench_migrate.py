"""How fast `torchport migrate` is on a big tree, against a naive one-process LibCST pass.

    OMP_NUM_THREADS=1 python benchmarks/bench_migrate.py PATH [--jobs N] [--repeat 1]

Prints, for the ``.py`` files under PATH (a checkout of a big public repository, e.g. huggingface/diffusers;
never commit it):

* naive: one process that parses every file with LibCST and regenerates its code
  (``libcst.parse_module(text).code``) - the floor any LibCST-based tool starts from;
* torchport cold: ``torchport migrate PATH --dry-run`` with an empty cache;
* torchport warm: the same run again, with the cache the cold run filled;

each with wall time, files/s, MB/s and peak memory (the largest resident set of the process and
of any one of its workers, in MB). Nothing is written to PATH: the cache goes to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _peak_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def _naive(root: Path) -> dict[str, float]:
    import libcst

    files = failed = 0
    for path in sorted(root.rglob("*.py")):
        if not path.is_file():
            continue
        files += 1
        try:
            libcst.parse_module(path.read_bytes()).code  # noqa: B018 - regenerating is the point
        except Exception:  # noqa: BLE001 - a file LibCST cannot parse counts as done
            failed += 1
    own, _ = _peak_mb()
    return {"files": files, "failed": failed, "peak_mb": own}


def _torchport(root: Path, jobs: int) -> dict[str, float]:
    from torchport.cli import main

    sys.argv = ["torchport", "migrate", str(root), "--dry-run", *(["-j", str(jobs)] if jobs else [])]
    stdout = sys.stdout
    sys.stdout = open(os.devnull, "w")  # the diffs
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    own, children = _peak_mb()
    return {"exit": code, "peak_mb": max(own, children)}


def _child(kind: str, root: Path, jobs: int, cache: str) -> dict[str, float]:
    """Run one measurement in a fresh process, so that peak memory is its own."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCHPORT_CACHE_DIR": cache}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", kind, str(root), "--jobs", str(jobs)],
                          capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{kind} run failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--jobs", type=int, default=0, help="torchport workers (0: one per core)")
    parser.add_argument("--repeat", type=int, default=1, help="repeat each measurement, keep the fastest")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run = _naive(args.path) if args.child == "naive" else _torchport(args.path, args.jobs)
        print(json.dumps(run))
        return

    files = [p for p in args.path.rglob("*.py") if p.is_file()]
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    print(f"tree: {args.path} ({len(files)} .py files, {megabytes:.1f} MB); cores: {os.cpu_count()}; "
          f"jobs: {args.jobs or 'one per core'}")
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as cache:
        for kind, label in (("naive", "naive LibCST parse + regenerate (1 process)"),
                            ("cold", "torchport migrate --dry-run, cold cache"),
                            ("warm", "torchport migrate --dry-run, warm cache")):
            runs = []
            for _ in range(args.repeat):
                if kind == "cold":
                    for entry in Path(cache).glob("*"):  # empty the cache before every cold run
                        subprocess.run(["rm", "-rf", str(entry)], check=True)
                runs.append(_child(kind, args.path, args.jobs, cache))
            rows.append((label, min(runs, key=lambda r: r["wall_s"])))
    naive = rows[0][1]["wall_s"]
    print(f"{'run':<46} {'wall s':>8} {'files/s':>9} {'MB/s':>7} {'peak MB':>8} {'x naive':>8}")
    for label, run in rows:
        wall = run["wall_s"]
        print(f"{label:<46} {wall:>8.2f} {len(files) / wall:>9.1f} {megabytes / wall:>7.2f} "
              f"{run['peak_mb']:>8.0f} {wall / naive:>8.3f}")
    cold, warm = rows[1][1]["wall_s"], rows[2][1]["wall_s"]
    print(f"cold / warm cache: {cold / warm:.1f}x")


if __name__ == "__main__":
    main()
