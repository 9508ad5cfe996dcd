"""The tables of `torchport.model.torch_facts`: every role they use is explained, and the deciding word lists and
regexes stay in them (issue 27: at most 15, no ``cuda.<name>`` spelled elsewhere; `scripts/count_word_lists.py`)."""

from __future__ import annotations

import importlib.util
import re
import sys
import warnings
from pathlib import Path

import pytest
import torch

from torchport.model import torch_facts

ROOT = Path(__file__).resolve().parent.parent


def _counter():
    spec = importlib.util.spec_from_file_location("count_word_lists", ROOT / "scripts" / "count_word_lists.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_role_is_explained_and_used():
    used = {role for api in torch_facts.CUDA_APIS.values() for role in api.roles}
    used |= {role for roles in (*torch_facts.TORCH_NAMES.values(), *torch_facts.WORDS.values()) for role in roles}
    assert used == set(torch_facts.ROLES)


def test_records_are_consistent():
    for name, api in torch_facts.CUDA_APIS.items():
        assert api.off_cuda in ("raises", "quiet"), name
        assert api.why, name
        assert not api.no_plain_form or api.becomes, name  # a missing native form is of the call it becomes
    for name, (pattern, why) in torch_facts.TEXT.items():
        assert why and re.compile(pattern), name
    assert torch_facts.renames("TP010")["device"] == "device_index"
    assert "synchronize" in torch_facts.RAISES_OFF_CUDA and "empty_cache" not in torch_facts.RAISES_OFF_CUDA


def test_deciding_lists_live_in_torch_facts():
    totals = _counter().totals()
    assert totals["inside"] <= 15
    # model/check.py's OFF_CUDA (cpu, mps: the targets the port check evaluates) is the one left outside.
    assert totals["outside"] <= 1


def test_counter_counts_lists_regexes_and_spellings(tmp_path, monkeypatch):
    counter = _counter()
    package = tmp_path / "torchport"
    package.mkdir()
    (package / "rule.py").write_text(
        'import re\nA = frozenset({"x", "y"})\nB = ("one",)\nbefore, after = "a", "b"\n'
        'P = re.compile(r"cuda\\.synchronize")\nif name == "torch.cuda.synchronize":\n    pass\n'
        'triggers = (r"a", r"b")\n')
    monkeypatch.setattr(counter, "ROOT", package)
    found = counter.count(package / "rule.py")
    assert [f.split(": ", 1)[1] for f in found["lists"]] == ["A"]
    assert len(found["regexes"]) == 1 and len(found["spellings"]) == 2 and len(found["prefilters"]) == 1


def test_the_modules_that_hold_nothing_hold_no_tensor() -> None:
    """Each `HOLDS_NOTHING` class, built with its defaults (a pooling layer with a size of 2), has no parameter,
    buffer or child module: its `.cuda()` moves nothing (and works on a CPU-only torch)."""
    import inspect

    import torch

    for name in sorted(torch_facts.HOLDS_NOTHING):
        made = getattr(torch.nn, name.rsplit(".", 1)[-1])
        required = [p for p in inspect.signature(made).parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        module = made(*[2] * len(required))
        assert not [*module.parameters(), *module.buffers(), *module.children()], name
        assert module.cuda() is module, name


@pytest.mark.skipif(torch.cuda.is_available(), reason="measures what the calls do without CUDA")
@pytest.mark.parametrize("name", sorted(n for n, api in torch_facts.CUDA_APIS.items()
                                        if api.why in (torch_facts._MEMORY, torch_facts._RAISES)
                                        and n.startswith("torch.cuda.") and "memory" in n))
def test_what_a_memory_call_does_without_cuda_is_what_the_facts_say(name: str) -> None:
    """HeavyBall's memory tests: `reset_max_memory_cached()` raises without CUDA (AttributeError), so a port that
    moves the model and keeps it leaves a test that fails later, not one that runs."""
    function = getattr(torch.cuda, name[len("torch.cuda."):])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            function()
    except Exception:  # noqa: BLE001 - any error is "raises"
        measured = "raises"
    else:
        measured = "quiet"
    assert measured == torch_facts.CUDA_APIS[name].off_cuda
