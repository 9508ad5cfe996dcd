"""Start-up of `torchport migrate PATH --check` with a warm cache: wall time per run (a fresh process each).

    python benchmarks/bench_startup.py [PATH] [--runs 10]

PATH defaults to a copy of examples/ padded to 15 files. Prints the min, median and max of the runs,
`python -c pass` for reference, and the modules a warm run imports (none of LibCST, the rules, torch).
The runs write and use bytecode caches, as an installed package has them: a PYTHONDONTWRITEBYTECODE set in the
environment (these machines set it) would make every run compile torchport's sources again (about 0.2 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = """import sys
from torchport.cli import main
sys.argv = ["torchport", "migrate", sys.argv[1], "--check", "--exit-zero", "-q"]
try:
    main()
except SystemExit:
    pass
heavy = ("torch", "libcst", "torchport.codemods.api", "nbformat", "jsonschema", "rich.table", "rich.syntax")
print("loaded:", ",".join(m for m in heavy if m in sys.modules))
"""


def _fifteen_files(folder: Path) -> Path:
    source = Path(__file__).resolve().parents[1] / "examples" / "cuda_train" / "train.py"
    for i in range(15):
        text = source.read_text() if i < 5 else f"import torch\n\nx{i} = torch.zeros({i})\n"
        (folder / f"m{i:02d}.py").write_text(text)
    return folder


def _time(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.path or _fifteen_files(Path(tmp))
        env = {**os.environ, "TORCHPORT_CACHE_DIR": str(Path(tmp) / "cache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        exe = shutil.which("torchport") or sys.executable
        argv = [exe, "migrate", str(path), "--check", "--exit-zero", "-q"]
        if exe == sys.executable:
            argv[1:1] = ["-m", "torchport"]
        files = sum(1 for p in Path(path).rglob("*") if p.suffix in (".py", ".ipynb"))
        cold = _time(argv, env, 1)[0]  # fills the cache
        warm = _time(argv, env, args.runs)
        bare = _time([sys.executable, "-c", "pass"], env, args.runs)
        loaded = subprocess.run([sys.executable, "-c", PROBE, str(path)], env=env, capture_output=True,
                                text=True, check=False).stdout.splitlines()[-1:]
    print(f"{files} files; cold cache {cold:.3f} s (bytecode caches written and used; load {os.getloadavg()[0]:.2f})")
    print(f"warm cache --check   min {min(warm):.3f}  median {statistics.median(warm):.3f}  max {max(warm):.3f} s "
          f"({args.runs} runs)")
    print(f"python -c pass       min {min(bare):.3f}  median {statistics.median(bare):.3f} s")
    names = loaded[0].removeprefix("loaded:").strip() if loaded else "?"
    print(f"heavy modules a warm run imports: {names or 'none'}")


if __name__ == "__main__":
    main()
