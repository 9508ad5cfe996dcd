"""How fast `torchport migrate --check` is, against floors measured in the same run on the same files.

    OMP_NUM_THREADS=1 python benchmarks/bench_migrate.py [PATH] [--repeat N] [--sizes 2000,8000,50000] [--fuzz]

PATH is a folder of ``.py`` files (a checkout of a big public repository, e.g. huggingface/diffusers; never
commit it); without it, a tree of GENERATED_FILES files is generated in a temporary folder. Every measurement
runs in a child process of its own and is reported with its wall time, CPU time (user + system) and peak
resident memory (``ru_maxrss`` of the child, from ``wait4``), and its wall and CPU times over the naive
LibCST floor's (on a loaded machine the CPU ratio is the steadier):

* io: read every ``.py`` file (the I/O floor);
* ast: the stdlib ``ast.parse`` of every file;
* libcst: a naive one-process LibCST parse and regeneration of every file (``parse_module(text).code``);
* ruff: ``ruff check --select E9 --no-cache PATH``, where ruff is installed;
* cold: ``torchport migrate PATH --check -j 1 --no-cache``;
* warm: ``torchport migrate PATH --check`` with a cache a first run filled (median of ``--warm-runs``).

Then single generated files of ``--sizes`` one-site lines (``x3 = torch.zeros(2).cuda()``): the cold check's
time and peak memory per site, overall and marginal between sizes; and ``tp.device()`` against a function that
returns a cached value (best of 9, ns per call). ``--fuzz`` also times the long property runs
(``pytest -m fuzz tests/test_properties.py``). The machine's load average is printed with each section:
compare numbers only within one run. Nothing is written to PATH.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATED_FILES = 300
SITE = "x{i} = torch.zeros(2).cuda()\n"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def _floor(kind: str, root: Path) -> None:
    """The body of a floor's child process: read, ``ast``-parse or LibCST-round-trip every file."""
    if kind == "libcst":
        import libcst
    for path in _files(root):
        data = path.read_bytes()
        try:
            if kind == "ast":
                ast.parse(data)
            elif kind == "libcst":
                libcst.parse_module(data).code  # noqa: B018 - regenerating is the point
        except Exception:  # noqa: BLE001, S112 - a file a parser refuses counts as done
            continue


def _device_ratio() -> dict[str, float]:
    """ns per call of ``tp.device()`` and of a function returning a cached device, best of 9 interleaved runs."""
    import timeit

    import torch

    from torchport import runtime as tp

    cached = torch.device("cpu")

    def plain() -> torch.device:
        return cached

    tp.device()  # the pick happens once, outside the timing
    best = {"plain": float("inf"), "tp.device": float("inf")}
    for _ in range(9):
        for name, fn in (("plain", plain), ("tp.device", tp.device)):
            best[name] = min(best[name], timeit.timeit(fn, number=200_000) / 200_000 * 1e9)
    return best


def _measure(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``argv`` (cwd: the repository) and return its wall s, CPU s, peak MB and exit code."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err.decode()[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024,
            "exit": proc.returncode}


def _best(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> dict[str, float]:
    return min((_measure(argv, env) for _ in range(repeat)), key=lambda r: r["wall"])


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _torchport(root: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "torchport", "migrate", str(root), "--check", *options]


def generate_tree(root: Path, files: int = GENERATED_FILES, seed: int = 0) -> None:
    """Write ``files`` modules of 60-200 lines under ``root``: a third with a few CUDA sites, the rest without."""
    rng = random.Random(seed)
    for i in range(files):
        lines = ["import torch\n", "from torch import nn\n", "\n\n"]
        for j in range(rng.randint(6, 20)):
            lines += [f"class Block{j}(nn.Module):\n", "    def __init__(self, width):\n",
                      "        super().__init__()\n", "        self.proj = nn.Linear(width, width)\n\n",
                      "    def forward(self, x):\n", f"        # block {j}: a residual step\n",
                      "        return x + self.proj(x).relu()\n\n\n"]
        if i % 3 == 0:
            lines += ["def main():\n", "    model = Block0(4).cuda()\n",
                      "    x = torch.randn(2, 4, device='cuda')\n", "    torch.cuda.synchronize()\n",
                      "    return model(x)\n"]
        path = root / f"pkg{i % 10}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))


def tree_table(root: Path, repeat: int, warm_runs: int) -> None:
    """Print the floors and torchport's cold and warm checks on ``root``."""
    files = _files(root)
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    print(f"tree: {root} ({len(files)} .py files, {megabytes:.1f} MB); {_load()}")
    me = [sys.executable, __file__]
    rows = [(f"{kind}: {label}", _best([*me, "--floor", kind, str(root)], repeat)) for kind, label in (
        ("io", "read every file"), ("ast", "ast.parse every file"),
        ("libcst", "naive LibCST parse + regenerate"))]
    ruff = shutil.which("ruff")
    if ruff:
        rows.append(("ruff check --select E9 --no-cache",
                     _best([ruff, "check", "--select", "E9", "--no-cache", "--quiet", str(root)], repeat)))
    rows.append(("torchport cold --check -j 1 --no-cache", _best(_torchport(root, "-j", "1", "--no-cache"), repeat)))
    with tempfile.TemporaryDirectory() as cache:
        env = {"TORCHPORT_CACHE_DIR": cache}
        _measure(_torchport(root), env)  # fills the cache
        warm = [_measure(_torchport(root), env) for _ in range(warm_runs)]
    median = sorted(warm, key=lambda r: r["wall"])[len(warm) // 2]
    rows.append((f"torchport warm --check (median of {warm_runs})", median))
    naive = rows[2][1]
    print(f"{'run':<44} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'x libcst':>9} {'x libcst cpu':>13}")
    for label, run in rows:
        print(f"{label:<44} {run['wall']:>8.2f} {run['cpu']:>8.2f} {run['peak_mb']:>8.0f} "
              f"{run['wall'] / naive['wall']:>9.3f} {run['cpu'] / naive['cpu']:>13.3f}")
    print(f"warm --check wall s, {warm_runs} runs: " + " ".join(f"{r['wall']:.2f}" for r in warm))
    print(f"({_load()})")


def sites_table(sizes: list[int], repeat: int) -> None:
    """Print the cold check of one file of n one-site lines, for each n in ``sizes``: cost per site."""
    print(f"\none generated file of n one-site lines, torchport cold --check -j 1 --no-cache; {_load()}")
    print(f"{'sites':>7} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'us/site':>9} {'cpu us/site':>12} "
          f"{'KB/site':>8} {'marginal us/site':>17} {'marginal cpu us/site':>21} {'marginal KB/site':>17}")
    previous: tuple[int, dict[str, float]] | None = None
    for n in sizes:
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "sites.py").write_text("import torch\n\n" + "".join(SITE.format(i=i) for i in range(n)))
            run = _best(_torchport(Path(folder), "-j", "1", "--no-cache"), repeat)
        marginal = ""
        if previous:
            sites, before = n - previous[0], previous[1]
            marginal = (f"{(run['wall'] - before['wall']) / sites * 1e6:>17.1f} "
                        f"{(run['cpu'] - before['cpu']) / sites * 1e6:>21.1f} "
                        f"{(run['peak_mb'] - before['peak_mb']) * 1024 / sites:>17.2f}")
        print(f"{n:>7} {run['wall']:>8.2f} {run['cpu']:>8.2f} {run['peak_mb']:>8.0f} {run['wall'] / n * 1e6:>9.1f} "
              f"{run['cpu'] / n * 1e6:>12.1f} {run['peak_mb'] * 1024 / n:>8.2f} {marginal}")
        previous = (n, run)
    print(f"({_load()})")


def device_line() -> None:
    done = subprocess.run([sys.executable, __file__, "--device-ratio"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, check=True)
    best = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\ntp.device() {best['tp.device']:.1f} ns/call, a cached-value function {best['plain']:.1f} ns/call: "
          f"{best['tp.device'] / best['plain']:.2f}x; {_load()}")


def fuzz_line() -> None:
    run = _measure([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "fuzz",
                    "tests/test_properties.py"])
    verdict = "passed" if run["exit"] == 0 else "FAILED"
    print(f"\nlong property runs (pytest -m fuzz tests/test_properties.py): {verdict}, {run['wall']:.1f} s wall, "
          f"{run['cpu']:.1f} CPU-s; {_load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, nargs="?", help="a folder of .py files (default: a generated tree)")
    parser.add_argument("--repeat", type=int, default=1, help="repeat each measurement, keep the fastest")
    parser.add_argument("--warm-runs", type=int, default=5, help="warm --check runs (the median is reported)")
    parser.add_argument("--sizes", default="2000,8000", help="one-site lines per generated file, comma-separated")
    parser.add_argument("--fuzz", action="store_true", help="also run the long property tests (minutes)")
    parser.add_argument("--floor", help=argparse.SUPPRESS)
    parser.add_argument("--device-ratio", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        _floor(args.floor, args.path)
        return
    if args.device_ratio:
        print(json.dumps(_device_ratio()))
        return
    print(f"python {sys.version.split()[0]}; {_load()}")
    if args.path is None:
        with tempfile.TemporaryDirectory() as folder:
            generate_tree(Path(folder))
            tree_table(Path(folder), args.repeat, args.warm_runs)
    else:
        tree_table(args.path.resolve(), args.repeat, args.warm_runs)
    sites_table([int(n) for n in args.sizes.split(",")], args.repeat)
    device_line()
    if args.fuzz:
        fuzz_line()


if __name__ == "__main__":
    main()
