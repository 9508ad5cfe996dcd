"""Differential check of torchport's scope resolver against LibCST's QualifiedNameProvider (and of
its scope facts and `static` answers against the stdlib's symbol table).

Usage: python scripts/resolver_diff.py CORPUS_DIR [--all] [--examples N] [--time]

For every .py file under CORPUS_DIR, every Name read (LibCST: not an Attribute's attr, not a
keyword-argument name, not an import's or a pattern's name, not a target) whose head is imported
somewhere in the file and whose QNP names or resolver names start with "torch" (every imported
head with --all) is compared: QNP's names whose source is IMPORT (an access moved onto an
attribute chain, `torch.cuda` of `import torch.cuda`, is brought back to its head) against
`Resolver.at(head, line, column)`. Prints the counts and examples of the disagreements.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import libcst as cst  # noqa: E402

from torchport.codemods.analysis.scope import Resolver  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from test_scope import (  # noqa: E402 - tests/ is on sys.path only from the line above
    _exact_static,  # noqa: E402 - the symbol-table rule for `static`
    _facts_mismatches,  # noqa: E402 - the symbol-table oracle of the scope facts
)
from test_scope import _qnp_reads as qnp_reads  # noqa: E402 - QualifiedNameProvider's answer for every Name read


def check_static(source: str) -> tuple[list[str], list[str]]:
    """(heads `static` answers for that the symbol table says are bound elsewhere: unsound,
    heads it leaves to `at` that the symbol table says it could answer: only slower)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    resolver = Resolver(tree, source)
    try:
        exact = _exact_static(source, set(resolver._imported))  # noqa: SLF001
    except SyntaxError:
        return [], []
    fast = {h for h in resolver._imported if resolver.static(h) is not None}  # noqa: SLF001
    return sorted(fast - exact), sorted(exact - fast)


def compare(source: str,
            only_torch: bool = True) -> tuple[int, list[tuple[str, int, int, frozenset[str], frozenset[str]]]]:
    """(reads compared, disagreements as (head, line, column, qnp, resolver))."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    resolver = Resolver(tree, source)
    compared = 0
    bad = []
    for head, line, column, expected in qnp_reads(source):
        if resolver.static(head) == frozenset():  # never imported in the file
            if expected:
                bad.append((head, line, column, expected, frozenset()))
            continue
        got = resolver.at(head, line, column)
        if only_torch and not any(n.startswith("torch") for n in expected | got):
            continue
        compared += 1
        if got != expected:
            bad.append((head, line, column, expected, got))
    return compared, bad


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--all", action="store_true", help="every imported head, not only torch names")
    parser.add_argument("--examples", type=int, default=30)
    args = parser.parse_args()
    files = sorted(p for p in args.corpus.rglob("*.py") if p.is_file())
    totals: Counter[str] = Counter()
    examples = []
    slowest: list[tuple[float, float, float, str]] = []
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            cst.parse_module(source)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        except Exception:  # noqa: BLE001 - not Python 3 LibCST and CPython both read
            totals["skipped files"] += 1
            continue
        totals["files"] += 1
        parse, build = [], []
        for _ in range(3):  # best of three: the machine may be busy
            t0 = time.perf_counter()
            ast.parse(source)
            t1 = time.perf_counter()
            resolver = Resolver(tree, source)
            for head in list(resolver._imported):  # noqa: SLF001 - `static` of every imported name
                resolver.static(head)
            t2 = time.perf_counter()
            parse.append(t1 - t0)
            build.append(t2 - t1)
        slowest.append((min(build), min(parse), len(source), str(path)))
        try:
            wrong_facts = _facts_mismatches(source)
        except SyntaxError:  # the symbol table refuses it
            wrong_facts = []
            totals["files symtable refuses"] += 1
        totals["scope facts differing from symtable"] += len(wrong_facts)
        examples.extend(f"{path}: facts {m}" for m in wrong_facts)
        unsound, slow = check_static(source)
        totals["static heads unsound"] += len(unsound)
        totals["static heads left to at()"] += len(slow)
        examples.extend(f"{path}: static() answered for {h} although bound elsewhere" for h in unsound)
        compared, bad = compare(source, only_torch=not args.all)
        totals["compared"] += compared
        totals["disagreements"] += len(bad)
        for head, line, column, expected, got in bad:
            examples.append(f"{path}:{line}:{column} {head}: qnp={sorted(expected)} resolver={sorted(got)}")
    print(dict(totals))
    for example in examples[: args.examples]:
        print(" ", example)
    if slowest:
        build = sum(s[0] for s in slowest)
        parse = sum(s[1] for s in slowest)
        print(f"Resolver build + static() of every imported name {build:.3f}s vs ast.parse {parse:.3f}s"
              f" over {len(slowest)} files ({build / parse:.0%})")
        big = max(slowest, key=lambda s: s[2])
        print(f"largest file {big[3]} ({big[2]} chars): build + static {big[0] * 1000:.2f} ms,"
              f" parse {big[1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
