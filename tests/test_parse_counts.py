"""How often one `migrate -j 1` run parses each module of a project (issue 27: one `ast` and one LibCST parse of
each module per run). Every full-module parse is counted where it happens: CPython's (`ast.parse` and
``compile(..., PyCF_ONLY_AST)`` both end in the builtin ``compile``) and LibCST's (``libcst.native.parse_module``,
under every LibCST entry point), in the parent and in the forked workers, each keyed by the text parsed.

What the engine does today, and what this test holds it to:
- the parent (the project pass, `torchport programs`) parses each module once with `ast`, never with LibCST;
- each migration of a module, in a worker, parses it once with `ast` (the precheck) and once with LibCST;
- the project pass migrates a module again, in a fresh worker, only when it tells it something (here `sample.py`,
  whose device choice `lib/schedule.py`'s float64 arrays hold): two parses of each kind for that module;
- the output is parsed again before it is written (a documented safety check: a rewrite that does not parse is
  an internal error), and the parent evaluates each changed entry point's port: a different text, counted apart.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import forkrun
import pytest

REPO = Path(__file__).resolve().parents[1]
PROJECT = Path(__file__).parent / "fixtures" / "projects" / "mixed"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the workers are forked only on Linux; spawned ones would not be counted")

# Run in a fresh process (forked from one that imported torch only), so that no earlier test's memo of a text
# (`torchport.pipeline.project.parse`) hides a parse. argv: the log, then the command line.
_COUNTED_RUN = """
import ast, builtins, hashlib, os, sys
import libcst.native

log, real_compile, real_parse = sys.argv[1], builtins.compile, libcst.native.parse_module


def note(kind, source):
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if isinstance(source, str):  # appended by this process and by each forked worker alike
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{kind} {os.getpid()} {hashlib.sha1(source.encode()).hexdigest()}\\n")


def counted_compile(source, *args, **kwargs):
    if (args[2] if len(args) > 2 else kwargs.get("flags", 0)) & ast.PyCF_ONLY_AST:
        note("ast", source)
    return real_compile(source, *args, **kwargs)


def counted_parse(source, *args, **kwargs):
    note("cst", source)
    return real_parse(source, *args, **kwargs)


with open(log, "w", encoding="utf-8") as file:
    file.write(f"main {os.getpid()} -\\n")
builtins.compile, libcst.native.parse_module = counted_compile, counted_parse
from torchport.cli import main

sys.argv = ["torchport", *sys.argv[2:]]
main()
"""


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def parses(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, str], list[tuple[str, ...]]]:
    """One ``migrate . --apply -j 1 --no-cache`` of a copy of the ``mixed`` project, with every parse logged:
    (module by the digest of its text, module by the digest of its written output, one (kind, pid, digest) each,
    the run's own process first as ("main", pid, "-"))."""
    folder = tmp_path_factory.mktemp("parses") / "mixed"
    shutil.copytree(PROJECT, folder)
    modules = {_digest(p.read_text()): p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*.py"))}
    log = folder.parent / "parses.log"
    done = forkrun.run(["-c", _COUNTED_RUN, str(log), "migrate", str(folder), "--apply", "-j", "1", "--no-cache"],
                       cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = {_digest(p.read_text()): p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*.py"))}
    outputs = {digest: name for digest, name in outputs.items() if digest not in modules}
    records = [tuple(line.split()) for line in log.read_text(encoding="utf-8").splitlines()]
    return modules, outputs, records


def _counts(records: list[tuple[str, ...]], names: dict[str, str], kind: str,
            pid: str | None = None, other: bool = False) -> Counter[str]:
    """How many ``kind`` parses each text of ``names`` had: in process ``pid``, in every other one (``other``), or
    in all."""
    return Counter(names[digest] for k, p, digest in records
                   if k == kind and digest in names and (pid is None or (p != pid) == other))


def test_the_parent_parses_each_module_once_with_ast_and_never_with_libcst(parses: Any) -> None:
    modules, _, records = parses
    parent = records[0][1]
    in_parent = _counts(records, modules, "ast", parent)
    assert set(in_parent) == set(modules.values())  # the project pass reads every module: the spy saw them
    assert max(in_parent.values()) == 1, in_parent
    assert not _counts(records, modules, "cst", parent)


def test_each_migration_parses_a_module_once_with_ast_and_once_with_libcst(parses: Any) -> None:
    modules, _, records = parses
    parent = records[0][1]
    workers = {p for _, p, _ in records if p != parent}
    assert len(workers) >= 2  # the first pass and the project pass each start a fresh worker
    for worker in workers:  # with -j 1, a worker migrates each of its modules once
        assert max(_counts(records, modules, "ast", worker).values(), default=0) <= 1
        assert max(_counts(records, modules, "cst", worker).values(), default=0) <= 1
    cst, ast_ = _counts(records, modules, "cst", parent, other=True), _counts(records, modules, "ast", parent, True)
    assert cst == ast_  # a LibCST parse of a module only after CPython's precheck of it, in the same migration
    assert "train.py" in cst and "lib/model.py" not in cst  # no text a rule could match: never parsed by LibCST


def test_only_a_module_the_project_pass_tells_something_is_parsed_twice(parses: Any) -> None:
    modules, _, records = parses
    cst = _counts(records, modules, "cst")
    assert max(cst.values()) <= 2, cst
    assert {name for name, n in cst.items() if n > 1} <= {"sample.py"}, cst  # held by lib/schedule.py's float64


def test_each_output_is_parsed_again_once_before_it_is_written_and_once_to_evaluate_its_program(parses: Any) -> None:
    _, outputs, records = parses
    assert outputs, "the run changed no file"
    parent = records[0][1]
    assert not _counts(records, outputs, "cst")  # LibCST only ever parses what it rewrites
    before_writing = _counts(records, outputs, "ast", parent, other=True)
    assert before_writing == Counter(outputs.values())  # the safety check: each written output, once
    assert max(_counts(records, outputs, "ast", parent).values(), default=0) <= 1  # `programs`: an entry point's port
