"""The `--apply` table of docs/usage.md: what `torchport migrate --apply` does to whole repositories.

    OMP_NUM_THREADS=1 python benchmarks/corpus_table.py PATH [PATH ...] [--runtime package]

Each PATH (a checkout of a public repository; never commit one) is copied to a temporary folder and migrated
there with ``--apply --no-cache``; PATH is not touched. One markdown row per repository:

* ``.py files``: the Python files torchport reads (as it walks: .gitignore, virtualenvs and build folders out);
* ``changed``, ``rewrites``, ``diagnostics``, ``failed``: from the run's JSON report;
* ``check exit`` and ``failing``: the exit code of ``--check`` on the migrated copy and the findings that fail
  it (diagnostics that are not info notes);
* ``parsed before, not after``: files that compiled before and do not after (must be 0);
* ``untouched changed``: files the report does not list as changed whose bytes changed (must be 0);
* ``2nd run changes``: files a second ``--apply`` would change (must be 0);
* ``wall s`` and ``peak MB``: of the ``--apply`` run (its largest resident set, workers included).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLUMNS = (".py files", "changed", "rewrites", "diagnostics", "failed", "check exit", "failing",
           "parsed before, not after", "untouched changed", "2nd run changes", "wall s", "peak MB")
INFO = {"TP107", "TP110"}  # torchport.results.INFO_CODES, repeated so that this script imports no torchport


def _torchport(*args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run the command line in a child; returns it, its wall time and its peak resident set in MB (os.wait4:
    the child's and its workers')."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "torchport", *args], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(child.args, child.returncode, out.read(), err.read())
    return done, wall, usage.ru_maxrss / 1024


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and not p.is_symlink() and ".torchport_cache" not in p.parts}


def _compiles(path: Path) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a project's own `is not ""` is no concern of this table
            compile(path.read_bytes(), str(path), "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def row(repo: Path, runtime: str) -> dict[str, object]:
    """Migrate a copy of ``repo`` and measure it (see the module docstring)."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / repo.name
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        before = _digests(copy)
        compiled = {name for name in before if name.endswith(".py") and _compiles(copy / name)}
        report = json.loads(_torchport("migrate", str(copy), "--dry-run", "--no-cache", "--runtime", runtime,
                                       "--output-format", "json")[0].stdout)
        applied, wall, peak = _torchport("migrate", str(copy), "--apply", "--allow-dirty", "--no-cache",
                                         "--runtime", runtime, "--output-format", "json")
        after = _digests(copy)
        files = report["files"]
        changed = {f["path"] for f in files if f["changed"]}
        check = _torchport("migrate", str(copy), "--check", "--no-cache", "--runtime", runtime,
                           "--output-format", "json")[0]
        failing = sum(1 for f in json.loads(check.stdout)["files"] for d in f["diagnostics"] if d["code"] not in INFO)
        second = json.loads(_torchport("migrate", str(copy), "--dry-run", "--no-cache", "--runtime", runtime,
                                       "--output-format", "json")[0].stdout)
        return {
            ".py files": sum(1 for f in files if f["path"].endswith(".py")),
            "changed": len(changed),
            "rewrites": sum(len(f["rewrites"]) for f in files),
            "diagnostics": sum(len(f["diagnostics"]) for f in files),
            "failed": sum(1 for f in files if f["error"] or f.get("not_migrated")),
            "check exit": check.returncode,
            "failing": failing,
            "parsed before, not after": sum(1 for name in compiled if not _compiles(copy / name)),
            "untouched changed": sum(1 for name, digest in before.items()
                                     if name not in changed and after.get(name, digest) != digest),
            "2nd run changes": sum(1 for f in second["files"] if f["changed"]),
            "wall s": f"{wall:.1f}", "peak MB": f"{peak:.0f}",
            "_apply_exit": applied.returncode,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", type=Path, nargs="+")
    parser.add_argument("--runtime", default="package", choices=("package", "vendor", "native"))
    args = parser.parse_args()
    print("| repo | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for repo in args.paths:
        values = row(repo, args.runtime)
        print(f"| {repo.name} | " + " | ".join(str(values[c]) for c in COLUMNS) + " |", flush=True)


if __name__ == "__main__":
    main()
