"""Property tests: on random valid programs, and on programs seeded with CUDA constructs, the engine
never crashes, its output always parses, and a second run is a no-op.

Random programs come from hypothesmith (CPython's grammar); seeded ones are composed here from
CUDA snippets in random contexts (functions, classes, with/if/for/try, decorators, lambdas,
comprehensions, f-strings), under random import spellings, line endings and settings.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
import tempfile  # noqa: E402

from hypothesis import HealthCheck, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402

# Hypothesis keeps a cache of constants in ./.hypothesis; keep it out of the work tree.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "torchport-hypothesis")

from torchport.codemods.api import RULES  # noqa: E402
from torchport.config import ALL_TARGETS, Settings  # noqa: E402
from torchport.pipeline.engine import migrate_source, read_source  # noqa: E402
from torchport.pipeline.writes import write_atomic  # noqa: E402
from torchport.results import FileResult  # noqa: E402

try:
    import hypothesmith
except ImportError:  # pragma: no cover - in the test extra; skip cleanly where it is missing
    hypothesmith = None

needs_hypothesmith = pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed")
# One strategy for every test, built at its first draw: each from_grammar() builds a LALR parser of CPython's grammar
# (seconds), which the import of this module used to pay four times.
_GRAMMAR = st.just("") if hypothesmith is None else st.deferred(hypothesmith.from_grammar)


@st.composite
def _random_programs(draw: st.DrawFn) -> str:
    """A program from CPython's grammar (hypothesmith), drawn without the SyntaxWarnings its own compile() of
    random code prints (``1()``: 'int' object is not callable)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return draw(_GRAMMAR)


PYTHON_PROGRAMS = _random_programs()


def examples(count: int) -> settings:
    """A bounded number of examples and no deadline (a parse can take a while on a slow machine)."""
    return settings(max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                    derandomize=True)


# ---- what CUDA code looks like --------------------------------------------------------------

# {t} is the name torch is imported under; {x} a tensor or module name.
EXPRESSIONS = [
    "{x}.cuda()", "{x}.cuda(non_blocking=True)", "{x}.cuda(0)", "{x}.cuda(*args)", "{x}.cuda",
    '{t}.device("cuda")', '{t}.device("cuda:1")', '{t}.device("cuda", 1)', '{t}.device(f"cuda:{{rank}}")',
    '{t}.device("cuda" if {t}.cuda.is_available() else "cpu")', '"cuda" if {t}.cuda.is_available() else "cpu"',
    "{t}.cuda.is_available()", "{t}.cuda.is_available", "{t}.cuda.current_device()", "{t}.cuda.device_count()",
    "{t}.cuda.Event(enable_timing=True)", "{t}.cuda.Stream()", "{t}.cuda.current_stream().wait_stream(s)",
    "{t}.cuda.amp.autocast()", "{t}.cuda.amp.autocast(dtype={t}.float16)", "{t}.cuda.amp.GradScaler()",
    '{t}.autocast("cuda")', '{t}.amp.GradScaler("cuda")', '{t}.zeros(2, device="cuda")',
    '{t}.ones(3, device="cuda:0", dtype={t}.float64)', '{x}.to("cuda:0")', "{x}.to(local_rank)", "{x}.to(0)",
    '{x}.to(device="cuda", non_blocking=True)', "{x}.is_cuda", '{x}.device.type == "cuda"',
    '{x}.device.type != "cuda"', '"cuda" in str({x}.device)', "{t}.cuda.FloatTensor",
    "{x}.type({t}.cuda.FloatTensor)", "{t}.cuda.LongTensor([1, 2])", "{x}.pin_memory()",
    '{t}.cuda.nvtx.range_push("a")', "{t}.cuda.nvtx.range_pop()", "{t}.cuda.memory_allocated()",
    "{t}.cuda.max_memory_allocated({x}.device)", "{t}.cuda.empty_cache()", "{t}.cuda.synchronize()",
    "{t}.cuda.manual_seed_all(0)", "{t}.cuda.get_rng_state()", "{t}.cuda.get_arch_list()", "{t}.version.cuda",
    "{t}.cuda.CUDAGraph()", "{t}.cuda.graph(g)", "{t}.cuda.MemPool()", "{t}.cuda.get_device_name(0)",
    "{t}.cuda.get_device_properties(0).total_memory", "{x}.double()", "{x}.to({t}.float64)",
    '"nccl"', '"cuda"', '"cuda:3"', 'f"cuda:{{i}}"', "{t}.cuda", "{t}.cuda.amp", "{t}.backends.cudnn.benchmark",
    "[{x}.cuda() for {x} in xs]", "lambda {x}: {x}.cuda()", "({x}.cuda(), {t}.device('cuda'))",
    "{{'device': 'cuda', 'backend': 'nccl'}}", 'getattr({t}, "cuda").is_available()',
    "{t}.cuda.is_available() and {x}.is_cuda", "not {t}.cuda.is_available()",
]
STATEMENTS = [
    "{n} = {e}", "{e}", "{n}: object = {e}", "print({e})", "return {e}", "{x}.attr = {e}",
    "device = {e}", "device_type = {e}", "self.device = {e}", "args.device = {e}", "kwargs['device'] = {e}",
    "assert {t}.cuda.is_available()", 'assert {t}.cuda.is_available(), "need a GPU"',
    'dist.init_process_group(backend="nccl")', 'dist.init_process_group("nccl", rank=rank)',
    "model = DDP(model, device_ids=[rank], output_device=rank)",
    "loader = DataLoader(ds, batch_size=2, pin_memory=True)", 'os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
    "if not {t}.cuda.is_available(): raise RuntimeError('cuda')", "{t}.backends.cudnn.benchmark = True",
    "del {x}", "global {x}", "{x} += {e}", "{x}, {n} = {e}, {e}", "yield {e}", "await {x}",
    "{e}  # torchport: ignore", "{e}  # torchport: ignore[TP001]", "{e}  # a comment about cuda",
    "import triton", "import apex", "from flash_attn import flash_attn_func",
]
BLOCKS = [
    "def f({x}, device='cuda', rank=0):\n{body}",
    "async def g(device=None):\n{body}",
    "class Model(nn.Module):\n{body}",
    "with {t}.cuda.amp.autocast():\n{body}",
    "with {t}.autocast('cuda', enabled=True):\n{body}",
    "with {t}.cuda.device(1):\n{body}",
    "with {t}.cuda.stream(s):\n{body}",
    "if {t}.cuda.is_available():\n{body}else:\n{body}",
    "if {x}.is_cuda:\n{body}",
    "for i in range(2):\n{body}",
    "while False:\n{body}",
    "try:\n{body}except {t}.cuda.OutOfMemoryError:\n{body}",
    "try:\n{body}finally:\n{body}",
    "@{t}.cuda.amp.custom_fwd\ndef fwd(ctx, {x}):\n{body}",
    "@{t}.cuda.amp.custom_bwd\ndef bwd(ctx, {x}):\n{body}",
    "@{t}.no_grad()\ndef h():\n{body}",
]
IMPORTS = [
    "import torch", "import torch as th", "import torch.nn as nn", "from torch import cuda",
    "from torch.cuda import amp", "from torch.cuda.amp import autocast, GradScaler",
    "from torch.cuda import synchronize, Event", "import torch.distributed as dist", "import os",
    "from torch.nn.parallel import DistributedDataParallel as DDP", "from torch.utils.data import DataLoader",
    "from torchport import runtime as tp", "tp = 3", "import torch.cuda", "from __future__ import annotations",
]
NAMES = ["x", "y", "model", "batch", "t", "tp", "tensor", "cuda", "th"]


@st.composite
def cuda_programs(draw: st.DrawFn) -> str:
    torch_name = draw(st.sampled_from(["torch", "torch", "th"]))

    def fill(template: str) -> str:
        return template.format(t=torch_name, x=draw(st.sampled_from(NAMES)), n=draw(st.sampled_from(NAMES)),
                               e=draw(st.sampled_from(EXPRESSIONS)).format(t=torch_name,
                                                                           x=draw(st.sampled_from(NAMES))))

    def block(depth: int) -> list[str]:
        lines: list[str] = []
        for _ in range(draw(st.integers(1, 3))):
            if depth < 3 and draw(st.booleans()):
                template = draw(st.sampled_from(BLOCKS))
                parts = template.split("{body}")
                text = ""
                for i, part in enumerate(parts):
                    text += fill(part.replace("{body}", "")) if part else ""
                    if i < len(parts) - 1:
                        text += "".join("    " + line + "\n" for line in block(depth + 1))
                lines.extend(text.rstrip("\n").split("\n"))
            else:
                lines.append(fill(draw(st.sampled_from(STATEMENTS))))
        return lines

    imports = draw(st.lists(st.sampled_from(IMPORTS), max_size=6, unique=True))
    wanted = "import torch as th" if torch_name == "th" else "import torch"
    if wanted not in imports:  # without it no name resolves to torch, and no rule would fire
        imports.append(wanted)
    if "from __future__ import annotations" in imports:  # it must come first
        imports.remove("from __future__ import annotations")
        imports.insert(0, "from __future__ import annotations")
    body = block(0)
    # return/yield/await are only valid inside a function: wrap the module body in one when needed
    lines = [*imports, "", "def main(xs, s, g, rank, local_rank, args, kwargs, self, ds, i):",
             *("    " + line for line in body)] if draw(st.booleans()) else [*imports, "", *body]
    source = "\n".join(lines) + ("\n" if draw(st.booleans()) or not lines else "")
    try:
        parse(source)
    except SyntaxError:
        hypothesis.assume(False)  # e.g. `return` at module level, `await` outside async, `global` after use
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return source.replace("\n", newline)


@st.composite
def run_settings(draw: st.DrawFn) -> Settings:
    codes = sorted(RULES)
    prefixes = ["TP0", "TP1", "TP2", "TP3", "TP00", "TP01", "TP02", "TP03", "TP04"]
    pool = codes + prefixes
    select = tuple(draw(st.lists(st.sampled_from(pool), max_size=3, unique=True))) if draw(st.booleans()) else ()
    ignore = tuple(draw(st.lists(st.sampled_from(pool), max_size=3, unique=True)))
    targets = tuple(draw(st.lists(st.sampled_from(ALL_TARGETS), unique=True)))
    return Settings(select=select, ignore=ignore, unsafe_fixes=draw(st.booleans()), targets=targets)


def parse(source: str) -> None:
    """CPython's parse, quiet about the SyntaxWarnings random programs are full of (``1()``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        compile(source, "<gen>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)


def engine_run(source: str, run: Settings) -> FileResult:
    result = FileResult(path=Path("generated.py"), display="generated.py", original=source, migrated=source)
    return migrate_source(result, run)


def check_migration(source: str, run: Settings = Settings()) -> str:
    """What a user gets from the engine: no crash, no change without a rewrite, output that parses,
    a second run that is a no-op, and line endings kept."""
    note(f"source:\n{source!r}")
    first = engine_run(source, run)
    if first.error is not None:
        assert not first.error.startswith("internal error"), first.error
        hypothesis.event(f"refused: {first.error.split(';')[0][-60:]}")
        return source
    code = first.migrated
    assert code is not None
    note(f"migrated:\n{code!r}")
    hypothesis.event("rewritten" if code != source else "unchanged")
    if not first.rewrites:
        assert code == source, "no rewrite, no change"
    else:
        parse(code)
    second = engine_run(code, run)
    assert second.error is None, second.error
    assert second.migrated == code, "a second run must be a no-op"
    assert not second.rewrites, f"a second run found more to rewrite: {second.rewrites}"
    if "\n" not in source.replace("\r\n", ""):
        assert "\n" not in code.replace("\r\n", ""), "CRLF stays CRLF"
    return code


@examples(20)
@given(cuda_programs(), run_settings())
def test_programs_seeded_with_cuda_constructs(source: str, run: Settings) -> None:
    check_migration(source, run)


@examples(10)
@given(cuda_programs())
def test_programs_seeded_with_cuda_constructs_default_settings(source: str) -> None:
    check_migration(source)


@needs_hypothesmith
@examples(20)
@given(PYTHON_PROGRAMS)
def test_random_valid_programs(source: str) -> None:
    check_migration(source)


@needs_hypothesmith
@examples(20)
@given(PYTHON_PROGRAMS,
       st.lists(st.sampled_from(EXPRESSIONS), min_size=1, max_size=4), run_settings())
def test_random_valid_programs_with_cuda_appended(program: str, snippets: list[str], run: Settings) -> None:
    lines = ["import torch", *(f"v{i} = " + s.format(t="torch", x="x") for i, s in enumerate(snippets))]
    source = program + "\n" + "\n".join(lines) + "\n"
    try:
        parse(source)
    except SyntaxError:
        hypothesis.assume(False)
    check_migration(source, run)


@examples(60)
@given(text=st.text(st.characters(codec="latin-1", exclude_characters="\r\x0c"), max_size=200),
       encoding=st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]), newline=st.sampled_from(["\n", "\r\n"]),
       final_newline=st.booleans())
def test_write_atomic_round_trips_text_and_encoding(
    tmp_path_factory: pytest.TempPathFactory, text: str, encoding: str, newline: str, final_newline: bool
) -> None:
    body = "x = " + repr(text) + newline + "y = 1" + (newline if final_newline else "")
    source = (f"# -*- coding: {encoding} -*-" + newline if encoding == "latin-1" else "") + body
    path: Path = tmp_path_factory.mktemp("rt") / "m.py"
    path.write_bytes(source.encode(encoding))
    decoded, found = read_source(path.read_bytes())
    assert decoded == source
    write_atomic(path, decoded, found)
    assert path.read_bytes() == source.encode(encoding)


# The rules' own examples: the spellings each rule says it matches, so the statement-skipping shortcut
# is checked against what the rules match, not against the trigger list it is built from.
RULE_EXAMPLES = [example.before for rule in RULES.values() for example in rule.examples]


@st.composite
def rule_example_programs(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(RULE_EXAMPLES), min_size=1, max_size=4))
    if draw(st.booleans()):  # the same code one level down, in a function
        body = "".join("    " + line if line.strip() else line for line in "".join(parts).splitlines(True))
        return "def f():\n" + body
    return "".join(parts)


@examples(15)
@given(st.one_of(cuda_programs(), rule_example_programs()), run_settings())
def test_skipping_quiet_statements_changes_nothing(source: str, run: Settings) -> None:
    import torchport.codemods.core.transformer as transformer
    from torchport.codemods.api import migrate_code

    try:
        fast = migrate_code(source, run)
    except Exception as exc:  # noqa: BLE001 - refused input: the slow path must refuse it too
        with pytest.raises(type(exc)):
            _migrate_without_skipping(source, run, transformer)
        return
    assert _migrate_without_skipping(source, run, transformer) == fast


def _migrate_without_skipping(source: str, run: Settings, transformer: object) -> object:
    import torchport.codemods.api as codemods
    from torchport.codemods.api import migrate_code

    real_lines, real_map = codemods.code_trigger_lines, transformer.map_statements  # type: ignore[attr-defined]
    codemods.code_trigger_lines = lambda source, *args: list(range(1, source.count("\n") + 2))
    transformer.map_statements = lambda *args: (set(), {})  # type: ignore[attr-defined]
    try:
        return migrate_code(source, run)
    finally:
        codemods.code_trigger_lines, transformer.map_statements = real_lines, real_map  # type: ignore[attr-defined]


# ---- long fuzz runs, by hand: `python -m pytest -m fuzz tests/test_properties.py` ------------------------
# Random draws (not derandomized) and many examples: they look for new cases; the default run above is fixed
# and small (20 examples or fewer each, to keep the default suite under 3 minutes on 2 cores).

def fuzz(count: int) -> settings:
    return settings(max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.mark.fuzz
@fuzz(3000)
@given(cuda_programs(), run_settings())
def test_fuzz_programs_seeded_with_cuda_constructs(source: str, run: Settings) -> None:
    check_migration(source, run)


@pytest.mark.fuzz
@needs_hypothesmith
@fuzz(1000)
@given(PYTHON_PROGRAMS,
       st.lists(st.sampled_from(EXPRESSIONS), min_size=1, max_size=4), run_settings())
def test_fuzz_random_valid_programs_with_cuda_appended(program: str, snippets: list[str], run: Settings) -> None:
    test_random_valid_programs_with_cuda_appended.hypothesis.inner_test(program, snippets, run)  # type: ignore[attr-defined]


@pytest.mark.fuzz
@needs_hypothesmith
@fuzz(1000)
@given(PYTHON_PROGRAMS)
def test_fuzz_random_valid_programs(source: str) -> None:
    check_migration(source)


@pytest.mark.fuzz
@fuzz(1000)
@given(st.one_of(cuda_programs(), rule_example_programs()), run_settings())
def test_fuzz_skipping_quiet_statements_changes_nothing(source: str, run: Settings) -> None:
    test_skipping_quiet_statements_changes_nothing.hypothesis.inner_test(source, run)  # type: ignore[attr-defined]
