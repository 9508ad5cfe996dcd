"""The shortcuts that make big trees fast change no result: skipping statements no rule can match,
and qualified names read from the imports instead of LibCST's scope analysis."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import libcst as cst
import pytest

import torchport.codemods.api as codemods
import torchport.codemods.core.transformer as transformer
from torchport.codemods.analysis.names import import_map, qualify
from torchport.codemods.api import migrate_code
from torchport.codemods.core.triggers import map_statements, trigger_lines
from torchport.config import Settings

FIXTURES = sorted(p for p in (Path(__file__).parent / "fixtures").rglob("*.py") if not p.name.endswith(".expected.py"))


def _every_line(source: str, *args: object) -> list[int]:
    return list(range(1, source.count("\n") + 2))


def _without_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line a trigger (no file or statement skipped), positions from the whole module."""
    monkeypatch.setattr(codemods, "code_trigger_lines", _every_line)
    monkeypatch.setattr(transformer, "map_statements", lambda *args: (set(), {}))


# The default run reads a fixed third of the fixtures (every third, sorted); `pytest -m slow` reads the rest.
_CASES = [pytest.param(p, id=f"{p.parent.name}/{p.stem}", marks=() if i % 3 == 0 else pytest.mark.slow)
          for i, p in enumerate(FIXTURES)]


@pytest.mark.parametrize("case", _CASES)
def test_skipping_quiet_statements_changes_no_fixture_result(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = case.read_text()
    settings = Settings(unsafe_fixes=True)
    fast = migrate_code(source, settings)
    _without_skipping(monkeypatch)
    assert migrate_code(source, settings) == fast


def test_statements_without_a_trigger_are_skipped_and_others_are_not() -> None:
    source = (
        "import torch\n"
        "from torch.cuda import Event as E\n"
        "class Model:\n"
        "    def plain(self):\n"
        "        return 1\n"
        "    def timed(self):\n"
        "        return E()\n"       # no 'cuda' on the line: the imported alias is the trigger
        "def helper():\n"
        "    return torch.zeros(\n"
        "        2).to(\n"
        "        0)\n"                # a trigger spanning lines
        "x = 1; y = 2\n"
    )
    module = cst.parse_module(source)
    pattern = re.compile(r"cuda|\.to\(\s*\d|\bE\b")
    quiet, anchors = map_statements(module, ast.parse(source), trigger_lines(source, pattern))
    model, helper, assign = module.body[2], module.body[3], module.body[4]
    plain, timed = model.body.body
    assert id(plain) in quiet and id(assign) in quiet
    assert id(timed) not in quiet and id(model) not in quiet and id(helper) not in quiet
    assert migrate_code(source).rewrites == {"TP011": 1, "TP006": 1}


def test_trees_that_do_not_line_up_skip_nothing() -> None:
    source = "import torch\nx = 1\n"
    other = ast.parse("import torch\nx = 1\ny = 2\n")
    assert map_statements(cst.parse_module(source), other, []) == (set(), {})


def test_trigger_lines_cover_every_line_of_a_match() -> None:
    assert trigger_lines("a\nb.to(\n  0)\nc\n", re.compile(r"\.to\(\s*\d")) == [2, 3]
    assert trigger_lines("x\r\ncuda\r\n", re.compile("cuda")) == [2]


def test_import_map_matches_what_qualified_name_provider_gives() -> None:
    imports = import_map(ast.parse(
        "import torch\nimport torch.cuda as tc\nfrom torch.cuda import amp as A\nfrom . import rel\n"
        "def f():\n    import numba.cuda\n    from torch import *\n"
    ))
    assert qualify("torch.cuda.synchronize", imports) == {"torch.cuda.synchronize"}
    assert qualify("tc.synchronize", imports) == {"torch.cuda.synchronize"}
    assert qualify("A.autocast", imports) == {"torch.cuda.amp.autocast"}
    assert qualify("rel.x", imports) == {".rel.x"}
    assert qualify("numba.cuda.jit", imports) == {"numba.cuda.jit"}
    assert qualify("undefined.cuda", imports) == set()


def test_libcst_visitors_read_their_decorators_once_per_class_and_decorated_ones_still_work() -> None:
    import libcst.matchers as m
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    from torchport.codemods.core.transformer import import_visitors

    import_visitors()
    reads: list[str] = []

    class Counting(AddImportsVisitor):
        def __dir__(self) -> list[str]:
            reads.append("dir")
            return list(super().__dir__())

    Counting(CodemodContext())
    first = len(reads)
    Counting(CodemodContext())
    assert first > 0 and len(reads) == first  # a class with no decorated method is read once

    class Renames(m.MatcherDecoratableTransformer):
        @m.leave(m.Name("cuda"))
        def _rename(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value="device")

    for _ in range(2):  # one with decorators is read every time, and its decorators still apply
        assert cst.parse_module("x = cuda\n").visit(Renames()).code == "x = device\n"
