"""The program model: the evaluator answers device queries per target, and the check of a port holds back the
hunks that only paths which still stop off CUDA run (no half ports)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from torchport.model.check import check_port
from torchport.model.evaluate import Evaluator, evaluate
from torchport.pipeline.engine import migrate_source
from torchport.results import FileResult


def _module_paths(source: str, target: str) -> list[tuple[int, str | None]]:
    """(last line run, stop kind) of each path of the module body."""
    units = evaluate(ast.parse(textwrap.dedent(source)), target)
    return sorted((max(p.lines), p.stop.kind if p.stop else None) for p in units[0].paths)


def _unit(source: str, name: str, target: str):
    units = evaluate(ast.parse(textwrap.dedent(source)), target)
    return next(u for u in units if getattr(u.node, "name", None) == name)


def _port(source: str) -> FileResult:
    result = FileResult(path=Path("m.py"), display="m.py")
    result.original = result.migrated = textwrap.dedent(source)
    return migrate_source(result)


def _hand_port(source: str, *pairs: tuple[str, str]) -> str:
    """``source`` ported by hand as the rules write it: the runtime imported after ``import torch``, and each
    ``(old, new)`` replaced."""
    migrated = source.replace("import torch\n", "import torch\nfrom torchport import runtime as tp\n", 1)
    for old, new in pairs:
        migrated = migrated.replace(old, new)
    return migrated


DDP_HALF = (Path(__file__).parent / "fixtures" / "projects" / "ddp_half" / "train.py").read_text()


def test_a_device_gate_stops_the_path_it_decides_and_only_off_cuda() -> None:
    assert _module_paths(DDP_HALF, "cpu") == [(9, "gate"), (24, None)]
    assert _module_paths(DDP_HALF, "cuda") == [(24, None), (24, None)]


def test_a_ddp_branch_whose_device_string_stays_keeps_its_assert_and_backend() -> None:
    result = _port(DDP_HALF)
    assert result.migrated == DDP_HALF  # a half port would only change the error off CUDA
    assert result.rewrites == {} and result.sites == []
    notes = [d.message for d in result.diagnostics if "R19" in d.message]
    assert notes == ["[R19 half-port] left as written: off CUDA the path still stops at line 22: "
                     "`.to('cuda:...')` places data on CUDA"]


def test_a_ddp_branch_ported_whole_keeps_its_port() -> None:
    source = DDP_HALF.replace("elif torch.backends.mps.is_available():\n        device = \"mps\"\n    ", "")
    result = _port(source)
    assert "assert torch.cuda.is_available()" not in result.migrated
    assert not [d for d in result.diagnostics if "R19" in d.message]


OPTION_SET_AGAIN = """\
import argparse

import click
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
args = parser.parse_args()
if not torch.cuda.is_available():
    args.device = "cpu"


@click.command()
@click.option("--device", type=str, default="cuda")
def main(device):
    if not torch.cuda.is_available():
        device = "cpu"
    return torch.nn.Linear(2, 2).to(device)
"""


def test_an_option_every_path_off_cuda_sets_again_keeps_its_default() -> None:
    # Deep-SAD's main.py: on CUDA the default stays `cuda`; elsewhere `cpu` replaces it before anything reads it
    result = _port(OPTION_SET_AGAIN)
    assert result.migrated == OPTION_SET_AGAIN and result.rewrites == {}
    notes = [(d.line, d.message) for d in result.diagnostics if "R10" in d.message]
    assert notes == [(7, "[R10 dead-store] left as written: the default of `device` is set again off CUDA before "
                         "anything reads it: its port changes nothing")]  # the whole file stays: said once
    # read before it is set again (or set again on CUDA's paths alone), the default is the program's device
    for old, new in (('args = parser.parse_args()\n', 'args = parser.parse_args()\nprint(args.device)\n'),
                     ('    if not torch.cuda.is_available():\n        device = "cpu"\n', "")):
        assert "default=tp.device_str()" in _port(OPTION_SET_AGAIN.replace(old, new)).migrated


def test_a_rewrite_after_a_line_that_still_fails_is_held() -> None:
    source = """\
    import torch

    def run(x):
        x = x.type(torch.cuda.HalfTensor)
        torch.cuda.synchronize()
        return x

    def other(y):
        torch.cuda.synchronize()
        return y
    """
    checked = check_port(textwrap.dedent(source), textwrap.dedent(source).replace(
        "torch.cuda.synchronize()", "tp.synchronize()").replace("import torch\n", "import torch\nimport tp\n"))
    assert [(h.first, h.stop.line if h.stop else None) for h in checked.held] == [(5, 4)]  # original lines
    assert "    tp.synchronize()\n    return y" in checked.code  # other's path is clean: its port stays
    assert "torch.cuda.synchronize()\n    return x" in checked.code
    assert "import tp\n" in checked.code  # a kept rewrite still needs its import


def test_nothing_kept_means_the_original_comes_back_import_and_all() -> None:
    source = "import torch\nx = torch.ones(2).type(torch.cuda.FloatTensor)\ntorch.cuda.synchronize()\n"
    migrated = "import torch\nimport tp\nx = torch.ones(2).type(torch.cuda.FloatTensor)\ntp.synchronize()\n"
    checked = check_port(source, migrated)
    assert checked.code == source and len(checked.held) == 1


@pytest.mark.parametrize(("mark", "skipped"), [
    ("@requires_gpu()", True),
    ("@run_if(min_gpus=1)", True),
    ("@run_if(min_gpus=0)", False),
    ("@pytest.mark.skipif(not torch.cuda.is_available(), reason='x')", True),
    ("@unittest.skipUnless(torch.cuda.is_available() or torch.backends.mps.is_available(), 'x')", False),
])
def test_skip_marks_and_the_helpers_that_build_them_are_evaluated(mark: str, skipped: bool) -> None:
    source = f"""\
    import unittest
    import pytest
    import torch

    def requires_gpu(n=1):
        return pytest.mark.skipif(not torch.cuda.device_count() >= n, reason="needs GPUs")

    def run_if(min_gpus=0):
        conditions = []
        if min_gpus:
            conditions.append(torch.cuda.device_count() < min_gpus)
        return pytest.mark.skipif(any(conditions), reason="needs CUDA")

    {mark}
    def test_it():
        pass
    """
    unit = _unit(source, "test_it", "mps")
    assert (unit.skipped is not None) is skipped
    assert _unit(source, "test_it", "cuda").skipped is None


@pytest.mark.parametrize("condition", ["cuda_avail, 'needs a GPU'", "condition=cuda_avail, reason='needs a GPU'"])
def test_a_skip_mark_reads_what_its_class_body_asked(condition: str) -> None:
    """torcheval: `cuda_avail: bool = torch.cuda.is_available()` in the class body, read by a method's
    `@unittest.skipUnless(condition=cuda_avail, ...)`: the test is skipped off CUDA, and its port is held back."""
    source = f"""\
    import unittest
    import torch

    class T(unittest.TestCase):
        cuda_avail: bool = torch.cuda.is_available()

        @unittest.skipUnless({condition})
        def test_gpu(self):
            x = torch.ones(2, device=torch.device("cuda"))
            self.assertTrue(x.is_cuda)
    """
    assert _unit(source, "test_gpu", "mps").skipped is not None
    assert _unit(source, "test_gpu", "cuda").skipped is None
    result = FileResult(path=Path("test_t.py"), display="test_t.py")
    result.original = result.migrated = textwrap.dedent(source)
    assert not migrate_source(result).changed


@pytest.mark.parametrize(("expression", "stops"), [
    ("x.cuda()", True),
    ("x.to('cuda:1')", True),
    ("x.to(torch.device('cuda', 0))", True),
    ("torch.zeros(2, device=f'cuda:{rank}')", True),
    ("torch.load('a.pt', map_location='cuda')", True),
    ("torch.cuda.current_stream()", True),
    ("torch.cuda.FloatTensor(2)", True),
    ("x.type(torch.cuda.HalfTensor if half else torch.cuda.FloatTensor)", True),  # CUDA's either way
    ("x.type(torch.cuda.HalfTensor if half else torch.FloatTensor)", False),  # the CPU's where `half` is false
    ("dist.init_process_group('nccl')", True),
    ("deepspeed.init_distributed('nccl', rank=rank)", True),  # pytorch-trainer's ds_train: NCCL still
    ("deepspeed.init_distributed(dist_backend='gloo')", False),
    ("torch.cuda.empty_cache()", False),
    ("torch.cuda.manual_seed_all(0)", False),
    ("torch.autocast('cuda', enabled=False)", False),
    ("torch.amp.GradScaler(device='cuda')", False),
    ("x.to(tp.device())", False),
    ("x.to('cuda' if torch.cuda.is_available() else 'cpu')", False),
    ("x.to(-1 if rank else 'cpu')", False),
    ("x.to(dist.get_rank() % torch.cuda.device_count())", True),  # a division by 0 off CUDA
    ("micro = batch[0] // torch.cuda.device_count()", True),  # ResShift's trainer: integer arithmetic
    ("scaled = loss / torch.cuda.device_count()", False),  # a tensor divided by 0 is inf: it does not raise
    ("rows = int(batch_size / torch.cuda.device_count())", True),  # MolTrans: int() of inf or nan raises too
    ("torch.load(f, map_location='cuda:{}'.format(rank))", True),
    ("L.Fabric(accelerator='cuda', devices=1)", True),
    ("L.Trainer(accelerator='auto')", False),
])
def test_what_stops_a_path_off_cuda(expression: str, stops: bool) -> None:
    source = (f"import deepspeed\nimport torch\nimport torch.distributed as dist\nfrom torchport import runtime as tp\n"
              f"{expression}\n")
    for target in ("cpu", "mps"):
        assert (_module_paths(source, target)[0][1] == "cuda") is stops
    assert _module_paths(source, "cuda")[0][1] is None


@pytest.mark.parametrize(("test", "stops"), [
    ("dist.get_world_size() != torch.cuda.device_count()", True),  # OpenGait's main: a group has 1 process or more
    ("torch.cuda.device_count() != dist.get_world_size()", True),
    ("dist.get_world_size() > torch.cuda.device_count()", True),
    ("dist.get_world_size() < 1", False),
    ("dist.get_world_size() != 2", None),  # not known: both ways, the raise no device query decided
    ("dist.get_rank() != torch.cuda.device_count()", None),  # a rank may be 0
])
def test_a_world_size_is_at_least_one_process(test: str, stops: bool | None) -> None:
    source = f"import torch\nimport torch.distributed as dist\nif {test}:\n    raise ValueError('GPUs')\nx = 1\n"
    kinds = {kind for _, kind in _module_paths(source, "cpu")}
    assert kinds == ({"gate"} if stops else {None} if stops is False else {"raise", None}), kinds


def test_an_import_the_port_removed_comes_back_where_a_use_of_it_is_put_back() -> None:
    """CCT's make_cam: `from torch import multiprocessing, cuda`; `_work`'s `cuda.device(i)` is held (its path
    stops first), so `cuda` stays imported, beside the runtime's import the kept `map_location` needs."""
    done = _port("""\
        import torch
        from torch import multiprocessing, cuda


        def _work(i, n):
            mask = torch.cuda.ByteTensor(n)
            with torch.no_grad(), cuda.device(i):
                return mask


        def load(path):
            return torch.load(path)
        """)
    assert done.migrated is not None and done.migrated.startswith(
        "import torch\nfrom torch import multiprocessing, cuda\nfrom torchport import runtime as tp\n")
    assert "with torch.no_grad(), cuda.device(i):" in done.migrated
    assert "torch.load(path, map_location=tp.map_location())" in done.migrated
    compile(done.migrated, "m.py", "exec")


def test_a_counter_at_zero_is_no_device_count() -> None:
    """ALBEF's grounding_eval divides by per-split counters a loop increments: no device query gave them, so no
    division by a device count stops its path."""
    source = "n = 0\nfor item in items:\n    if item:\n        n += 1\nrate = 0 / n\nx = 1\n"
    assert _module_paths(source, "cpu") == [(6, None), (6, None)]


@pytest.mark.parametrize(("test", "stops"), [
    ("gpus_per_machine <= torch.cuda.device_count()", True),  # YOLOX's launch, after its process group
    ("torch.cuda.device_count() > local_rank", True),
    ("gpus_per_machine >= torch.cuda.device_count()", False),  # asks for no device
    ("gpus_per_machine <= len(devices)", False),  # no device query
])
def test_an_assert_that_asks_for_more_devices_than_a_count_of_0_stops_off_cuda(test: str, stops: bool) -> None:
    source = f"import torch\n\n\ndef worker(local_rank, gpus_per_machine, devices):\n    assert {test}\n    return 1\n"
    for target in ("cpu", "mps"):
        assert (_unit(source, "worker", target).paths[0].stop is not None) is stops
    assert _unit(source, "worker", "cuda").paths[0].stop is None


def test_a_check_that_raises_is_ported_with_the_choice_whose_path_reaches_it() -> None:
    """RTVC's `train`: on MPS the ported choice reaches `batch_size % torch.cuda.device_count()`, a division by 0
    there; the check's port (the runtime's process count) goes with it, though its body only raises."""
    checked = _port("""\
        import torch


        def train(schedule):
            if torch.cuda.is_available():
                device = torch.device("cuda")
                for _, batch_size in schedule:
                    if batch_size % torch.cuda.device_count() != 0:
                        raise ValueError("`batch_size` must be evenly divisible by n_gpus!")
            else:
                device = torch.device("cpu")
            return torch.ones(2).to(device)
    """)
    assert "if batch_size % tp.process_count() != 0:" in checked.migrated and "tp.is_available()" in checked.migrated
    assert not any(d.code == "TP110" for d in checked.diagnostics)


def test_a_cuda_assert_before_one_that_asks_for_more_devices_than_there_are_stays() -> None:
    """YOLOX's `_distributed_worker`: without the first assert it would fail later, after its process group."""
    checked = _port("""\
        import torch
        import torch.distributed as dist


        def worker(local_rank, world_size, gpus_per_machine, machine_rank, main):
            assert torch.cuda.is_available(), "cuda is not available. Please check your installation."
            dist.init_process_group("gloo", world_size=world_size, rank=machine_rank * gpus_per_machine + local_rank)
            assert gpus_per_machine <= torch.cuda.device_count()
            main()
    """)
    assert checked.migrated == checked.original
    assert "off CUDA the path still stops at line 8" in "".join(d.message for d in checked.diagnostics)


def test_a_conjunction_with_cudas_false_answer_is_false_whatever_else_it_holds() -> None:
    source = ("import torch\nuse_cuda = not args.no_cuda and torch.cuda.is_available()\nif use_cuda:\n"
              "    x = torch.ones(1).cuda()\n")
    for target in ("cpu", "mps"):
        assert _module_paths(source, target) == [(3, None)]  # the branch never runs


@pytest.mark.parametrize("expression", ["x.to(0)", "x.to(int(os.environ['LOCAL_RANK']))",
                                        "torch.ones(1, device=tp.current_device())",
                                        "x.to(dist.get_rank() % tp.device_count())"])
def test_an_int_device_is_the_current_accelerator_so_only_the_cpu_lacks_it(expression: str) -> None:
    grouped = f"import torch.distributed as dist\ndist.init_process_group('gloo')\n{expression}\n"
    assert _module_paths(f"import os\nimport torch\nfrom torchport import runtime as tp\n{grouped}", "mps")[0][1] \
        == "cuda"  # no process group takes MPS tensors
    source = ("import os\nimport torch\nimport torch.distributed as dist\nfrom torchport import runtime as tp\n"
              f"{expression}\n")
    assert _module_paths(source, "cpu")[0][1] == "cuda"
    assert _module_paths(source, "mps")[0][1] is None and _module_paths(source, "cuda")[0][1] is None


def test_a_function_the_module_calls_is_followed_with_its_arguments_and_defaults() -> None:
    source = """\
    import torch

    def pick(prefer="cuda"):
        if prefer == "cuda" and torch.cuda.is_available():
            return "cuda"
        return "cpu"

    def setup(device):
        torch.cuda.set_device(device)

    x = torch.ones(2).to(pick())
    setup(0)
    """
    assert _module_paths(source, "cpu") == [(12, "cuda")]
    stop = evaluate(ast.parse(textwrap.dedent(source)), "cpu")[0].paths[0].stop
    assert stop is not None and stop.line == 12 and "setup()" in stop.message


def test_an_exit_decided_by_a_bound_query_is_a_gate_and_a_caught_failure_is_not_a_stop() -> None:
    source = """\
    import sys
    import torch

    try:
        torch.cuda.synchronize()
    except RuntimeError:
        pass
    cuda = torch.cuda.is_available()
    if not cuda:
        sys.exit("needs a GPU")
    """
    assert _module_paths(source, "cpu") == [(10, "gate")]
    assert _module_paths(source, "cuda") == [(9, None)]


def test_a_method_decorator_runs_where_its_class_is_made_so_its_port_stays() -> None:
    source = ("import torch\nfrom torch.cuda.amp import custom_fwd\n\n\nclass F(torch.autograd.Function):\n"
              "    @staticmethod\n    @custom_fwd(cast_inputs=torch.float32)\n    def forward(ctx, x):\n"
              "        return x\n")
    result = _port(source)
    assert "@torch.amp.custom_fwd(cast_inputs=torch.float32, device_type=tp.device_type())" in result.migrated
    assert "from torch.cuda.amp import custom_fwd" not in result.migrated


def test_a_port_that_unbinds_a_name_still_read_is_refused_whole() -> None:
    source = "from torch.cuda.amp import custom_fwd\n\n\n@custom_fwd\ndef f(x):\n    return x\n"
    migrated = "import torch\n\n\n@custom_fwd\ndef f(x):\n    return x\n"
    checked = check_port(source, migrated)
    assert checked.code == source
    assert checked.held[0].stop is not None and "unbinds `custom_fwd`" in checked.held[0].stop.message


ATTRIBUTE_GATED = """
import torch

class Engine:
    def __init__(self, model, use_gpu=True):
        self.use_gpu = torch.cuda.is_available() and use_gpu
        self.model = model

    def step(self, x):
        if self.use_gpu:
            x = x.cuda()
        return self.model(x)
"""


def test_an_attribute_every_method_sets_from_a_device_query_decides_other_methods() -> None:
    step = _unit(ATTRIBUTE_GATED, "step", "cpu")
    assert [sorted(p.lines) for p in step.paths] == [[10, 12]]  # the move never runs off CUDA
    assert len(_unit(ATTRIBUTE_GATED, "step", "cuda").paths) == 2  # on CUDA `use_gpu` decides
    # set elsewhere too (on the instance, from outside the class), it is not known
    elsewhere = ATTRIBUTE_GATED + "\nengine = Engine(None)\nengine.use_gpu = True\n"
    assert len(_unit(elsewhere, "step", "cpu").paths) == 2


@pytest.mark.parametrize("test, runs", [
    ("t.is_cuda", False),  # no data is on CUDA where there is none
    ("self.is_cuda()", False),  # a method of the class, followed: it returns the weight's `.is_cuda`
    ("t.is_cpu", None),  # not a fact: unknown, so both branches run
    ("t.device.type == 'cuda'", False),  # data's device type: never CUDA's off CUDA
    ("t.device.type in ('cuda',)", False),
    ("t.device.type != 'cuda'", True),
    ("t.device.type == 'cpu'", None),  # MPS's or the CPU's: not known
    ("all(g.device.type == 'cuda' for g in t)", False),  # decided alike for every item by a device query
    ("any(p.is_cuda for p in t.parameters())", False),
    ("any(p.requires_grad for p in t.parameters())", None),  # no device query: not known
])
def test_data_on_cuda_is_false_off_cuda(test: str, runs: bool | None) -> None:
    source = f"""
    class Encoder:
        def is_cuda(self):
            return self.weight.is_cuda

        def encode(self, t):
            if {test}:
                t = t.cuda()
            return t
    """
    paths = _unit(source, "encode", "cpu").paths
    moved = [8 in p.lines for p in paths]
    assert moved == ([runs] if runs is not None else [True, False]), moved


def test_a_rewrite_in_a_branch_of_a_conditional_expression_never_taken_off_cuda_is_held() -> None:
    source = textwrap.dedent("""\
        import torch

        def encode(model, batch):
            batch = batch.cuda() if next(model.parameters()).is_cuda else batch
            lengths = torch.ones(3).cuda()
            return batch, lengths
    """)
    migrated = _hand_port(source, ("batch.cuda()", "batch.to(tp.device())"),
                          ("torch.ones(3).cuda()", "torch.ones(3).to(tp.device())"))
    checked = check_port(source, migrated)
    assert "batch = batch.cuda() if next(model.parameters()).is_cuda else batch" in checked.code
    assert "lengths = torch.ones(3).to(tp.device())" in checked.code
    assert [(h.first, h.stop) for h in checked.held] == [(4, None)]


def test_sync_batchnorm_in_a_process_group_stops_on_the_cpu_and_mps_only() -> None:
    source = """
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo")
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device)
    """
    assert _module_paths(source, "cpu") == [(5, "cuda")]
    assert _module_paths(source, "mps") == [(5, "cuda")]
    assert _module_paths(source, "xpu") == [(6, None)]  # XPU input is taken
    assert _module_paths(source.replace('dist.init_process_group("gloo")', "pass"), "cpu") == [(6, None)]  # no group


def test_a_flag_attribute_gate_named_cuda_is_not_the_torch_cuda_module() -> None:
    """mptorch: the project sets `args.cuda` from a device query (the gate `.cuda`); its profiling script's
    `if torch.cuda.is_available(): ... else: raise` still raises off CUDA."""
    source = """
    import torch
    if torch.cuda.is_available():
        a = torch.rand(2).cuda()
    else:
        raise NotImplementedError("No CUDA-capable device found")
    if args.cuda:
        b = torch.rand(2).cuda()
    """
    tree = ast.parse(textwrap.dedent(source))
    module = next(iter(Evaluator(tree, "cpu", gates=frozenset({".cuda"})).units()))
    assert [(p.stop.kind, p.stop.line) for p in module.paths] == [("gate", 6)]
    flag = ast.parse("import torch\nif args.cuda:\n    b = torch.rand(2).cuda()\n")
    assert [sorted(p.lines) for p in next(iter(Evaluator(flag, "cpu", gates=frozenset({".cuda"})).units())).paths] \
        == [[1, 2]]  # the flag reads false off CUDA: no move


def test_a_function_the_module_body_calls_reads_the_functions_defined_above_the_call() -> None:
    """sgan: `main(parser.parse_args())` calls `get_dtypes(args)`, which returns `torch.cuda.FloatTensor` at the
    default `--use_gpu 1`; `model.type(...)` of it stops off CUDA."""
    source = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_gpu", default=1, type=int)
    def get_dtypes(args):
        float_dtype = torch.FloatTensor
        if args.use_gpu == 1:
            float_dtype = torch.cuda.FloatTensor
        return float_dtype
    def main(args):
        model.type(get_dtypes(args))
    main(parser.parse_args())
    """
    tree = ast.parse(textwrap.dedent(source))
    module = next(iter(Evaluator(tree, "cpu", defaults=True).units()))
    assert [(p.stop.kind, p.stop.line) for p in module.paths] == [("cuda", 13)]  # at the call of `main`
    assert [p.stop for p in next(iter(Evaluator(tree, "cuda", defaults=True).units())).paths] == [None]


@pytest.mark.parametrize("where", ["caller", "callee"])
def test_a_process_group_made_on_the_path_reaches_the_functions_it_calls_and_returns_to_its_caller(where) -> None:
    """MagFace: `main_worker` makes the group, `builder()` converts to SyncBatchNorm; a `setup()` that makes the
    group returns it to the function that converts."""
    source = """
    import torch
    import torch.distributed as dist
    def setup():
        dist.init_process_group("gloo")
    def builder(model):
        return torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    """ + ("""
    dist.init_process_group("gloo")
    model = builder(model)
    """ if where == "caller" else """
    setup()
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    """)
    assert _module_paths(source, "cpu") == [(10, "cuda")]
    assert _module_paths(source, "xpu") == [(10, None)]


def test_gates_other_modules_define_skip_stop_or_answer_false_off_cuda() -> None:
    source = """
    from helpers import RunIf, build_kernels, has_gpus

    @RunIf(min_gpus=1)
    def test_fast(x):
        return x.cuda()

    def run(x):
        build_kernels()
        return x.cuda()

    def pick(x):
        if has_gpus():
            return x.cuda()
        return x
    """
    gates = frozenset({"RunIf", "build_kernels", "has_gpus"})
    units = {getattr(u.node, "name", ""): u for u in Evaluator(ast.parse(textwrap.dedent(source)), "cpu",
                                                                gates=gates).units()}
    assert units["test_fast"].skipped is not None and units["test_fast"].skipped.kind == "gate"
    assert [p.stop.kind if p.stop else None for p in units["run"].paths] == ["cuda"]  # stops at the call
    assert [sorted(p.lines) for p in units["pick"].paths] == [[13, 15]]  # the predicate is false: no move
    on_cuda = {getattr(u.node, "name", ""): u for u in Evaluator(ast.parse(textwrap.dedent(source)), "cuda",
                                                                  gates=gates).units()}
    assert on_cuda["test_fast"].skipped is None and len(on_cuda["pick"].paths) == 2


@pytest.mark.parametrize("body, held", [
    ("    return self.render(x, self.device)\n", True),  # never read
    ("    device = x.device\n    return x.to(device)\n", True),  # bound before any read
    ("    return x.to(device)\n", False),
    ("    if x is None:\n        device = 'cpu'\n    return x.to(device)\n", False),  # bound only on one branch
    ("    return f(**locals())\n", False),
])
def test_a_default_the_function_never_reads_is_not_ported(body: str, held: bool) -> None:
    source = "import torch\n\n\ndef render(self, x, device='cuda'):\n" + body
    migrated = _hand_port(source, ("device='cuda'", "device=tp.device_str()"))
    checked = check_port(source, migrated)
    assert (checked.code == source) is held, checked.code


def test_no_tensor_is_of_a_cuda_tensor_type_off_cuda() -> None:
    source = """
    import torch

    def pad(out, zero_pads):
        if isinstance(out.data, torch.cuda.FloatTensor):
            zero_pads = zero_pads.cuda()
        return zero_pads
    """
    assert [sorted(p.lines) for p in _unit(source, "pad", "cpu").paths] == [[5, 7]]
    assert len(_unit(source, "pad", "cuda").paths) == 2
    mixed = source.replace("torch.cuda.FloatTensor", "(torch.cuda.FloatTensor, torch.FloatTensor)")
    assert len(_unit(mixed, "pad", "cpu").paths) == 2  # a CPU type too: either


@pytest.mark.parametrize("call, stops", [
    ("model.sample(64, 'cuda')", True),  # a device for a method the model cannot follow
    ("helpers.to_device(x, 'cuda:1')", True),
    ("print('cuda')", False),
    ("warnings.warn('cuda')", False),  # text, wherever the call comes from
    ("parser.add_argument('--device', 'cuda')", False),
    ("cfg.get('device', 'cuda')", False),
    ("torch.device('cuda')", False),  # torch's own: a value, placed where it is used
])
def test_a_cuda_device_given_to_a_call_it_cannot_follow_stops_off_cuda(call: str, stops: bool) -> None:
    source = f"import torch\nimport helpers\nimport warnings\n{call}\n"
    assert _module_paths(source, "cpu") == [(4, "cuda" if stops else None)]


def test_in_a_closed_module_a_function_never_named_never_runs() -> None:
    source = ("import torch\n\n\ndef train(x):\n    return x.cuda()\n\n\ndef evaluate(x):\n    return x.cuda()\n\n\n"
              "print(evaluate(torch.ones(2)))\n")
    migrated = _hand_port(source, ("x.cuda()", "x.to(tp.device())"))
    closed = check_port(source, migrated, closed=True)
    assert "def train(x):\n    return x.cuda()" in closed.code
    assert "def evaluate(x):\n    return x.to(tp.device())" in closed.code
    assert check_port(source, migrated).code == migrated  # a module others may import: both stay ported


_STOPS_LATER = '''\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.buffer = torch.zeros(4).cuda()


{setup}x = torch.rand(2).type(torch.cuda.LongTensor)
{use}
'''


@pytest.mark.parametrize(("setup", "use", "closed", "held"), [
    ("", "print(Net())", False, True),  # vae.py: every path stops before `Net` is named, importers' too
    ("if __name__ == '__main__':\n    ", "    print(Net())", False, False),  # an importer may still use `Net`
    ("if __name__ == '__main__':\n    ", "    print(Net())", True, True),  # nothing imports it
    ("net = Net()\n", "print(net)", False, False),  # `Net` runs before the stop
])
def test_a_definition_only_named_after_the_module_body_always_stops_never_runs(
        setup: str, use: str, closed: bool, held: bool) -> None:
    source = _STOPS_LATER.format(setup=setup, use=use)
    migrated = _hand_port(source, ("torch.zeros(4).cuda()", "torch.zeros(4).to(tp.device())"))
    checked = check_port(source, migrated, closed=closed)
    assert ("torch.zeros(4).cuda()" in checked.code) is held


@pytest.mark.parametrize(("body", "held"), [
    ('devices.append("cuda")', True),  # fairscale: on MPS the list would get "cuda" where the query chose it
    ("torch.cuda.manual_seed(0)", False),  # the port's body runs clean on MPS: the guard's port is worth it
])
def test_a_guard_ported_only_where_its_body_runs_clean_off_cuda(body: str, held: bool) -> None:
    source = f"import torch\n\ndevices = ['cpu']\nif torch.cuda.is_available():\n    {body}\n"
    migrated = _hand_port(source, ("torch.cuda.is_available()", "tp.is_available()"),
                          ("torch.cuda.manual_seed", "tp.manual_seed"))
    assert (check_port(source, migrated).code == source) is held


@pytest.mark.parametrize(("body", "held"), [
    # tnt: the CUDA device is the value under test, and the test passes off CUDA as written
    ('assert backend_for(torch.device("cuda")) == "nccl"', True),
    # a placement of CUDA stops off CUDA: the test needs its port to run there
    ('assert torch.ones(2, device=torch.device("cuda")).sum() == 2', False),
    # a device query chooses: the port lets the test run on the accelerator
    ('assert torch.ones(2, device=torch.device("cuda" if torch.cuda.is_available() else "cpu")).sum() == 2', False),
])
def test_a_test_that_passes_off_cuda_as_written_keeps_its_cuda_devices(body: str, held: bool) -> None:
    source = f"import torch\nfrom lib import backend_for\n\n\ndef test_it():\n    {body}\n"
    migrated = _hand_port(source, ('torch.device("cuda" if torch.cuda.is_available() else "cpu")', "tp.device()"),
                          ('torch.device("cuda")', "tp.device()"))
    assert (check_port(source, migrated, tests=True).code == source) is held
    assert check_port(source, migrated).code == migrated  # not a test module: its functions may place data


def test_a_helper_only_skipped_tests_call_never_runs_off_cuda() -> None:
    """fairscale's test_offload: `_init()` picks CUDA and only `@skip_if_no_cuda` tests call it; `_shared()` is
    also called by a test that runs everywhere, so its port stays."""
    source = ("import pytest\nimport torch\n\nskip_if_no_cuda = pytest.mark.skipif(not torch.cuda.is_available(), "
              "reason='cuda')\n\n\ndef _init():\n    return torch.device('cuda')\n\n\ndef _shared():\n"
              "    return torch.device('cuda')\n\n\n@skip_if_no_cuda\ndef test_gpu():\n    _init()\n    _shared()\n\n\n"
              "def test_everywhere():\n    _shared()\n")
    migrated = _hand_port(source, ("torch.device('cuda')", "tp.device()"))
    checked = check_port(source, migrated, tests=True)
    assert "def _init():\n    return torch.device('cuda')" in checked.code
    assert "def _shared():\n    return tp.device()" in checked.code
    assert check_port(source, migrated).code == migrated  # not a test module: an importer may call `_init`


def test_a_flag_joined_bitwise_from_cudas_answer_decides_its_branch_off_cuda() -> None:
    """`is_cuda & config.cuda` is False wherever CUDA's answer is: the branch it opens never runs off CUDA, so its
    port would change nothing anywhere (Pytorch-Project-Template's agents)."""
    source = """\
    import torch


    class Agent:
        def __init__(self, config, model):
            self.is_cuda = torch.cuda.is_available()
            self.cuda = self.is_cuda & config.cuda
            if self.cuda:
                torch.cuda.manual_seed(config.seed)
                self.device = torch.device("cuda")
            else:
                self.device = torch.device("cpu")
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert [d.message for d in result.diagnostics if "R19" in d.message] == [
        "[R19 half-port] left as written: no path off CUDA runs it"]
    either = source.replace("self.is_cuda & config.cuda", "self.is_cuda | config.cuda")
    assert _port(either).migrated != textwrap.dedent(either)  # `|` with an unknown flag may run off CUDA


def test_an_assert_before_calls_into_a_cuda_only_library_stays() -> None:
    """accelerate's Megatron-LM setup: what the module binds from megatron (under its own availability test) needs
    an NVIDIA GPU, so removing the assert before it would only change how the run fails off CUDA."""
    source = """\
    import torch

    from .imports import is_megatron_lm_available

    if is_megatron_lm_available():
        from megatron.training import parse_args


    def initialize(accelerator):
        assert torch.cuda.is_available(), "Megatron requires CUDA."
        return parse_args()
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert [d.message for d in result.diagnostics if "R19" in d.message] == [
        "[R19 half-port] left as written: off CUDA the path still stops at line 11: `parse_args()` needs CUDA"]
    portable = source.replace("from megatron.training import parse_args", "from argparse_helpers import parse_args")
    assert "assert torch.cuda" not in _port(portable).migrated
    # a blank line and a comment after the assert: the statement that runs in its place decides, not the `def`
    spaced = source.replace('requires CUDA."\n', 'requires CUDA."\n\n        # parse\n')
    assert _port(spaced).migrated == textwrap.dedent(spaced)


def test_a_call_evaluated_once_stops_each_caller_at_its_own_line() -> None:
    """Calls of a module's own function are evaluated once per arguments; each caller still stops at its call."""
    source = """\
    import torch


    def place(x, on_gpu):
        if on_gpu:
            return x.cuda()
        return x


    def first(x):
        return place(x, True)


    def second(x):
        y = 1
        return place(x, True)


    def third(x):
        return place(x, False)
    """
    stops = {name: [p.stop and (p.stop.kind, p.stop.line) for p in _unit(source, name, "cpu").paths]
             for name in ("first", "second", "third")}
    assert stops == {"first": [("cuda", 11)], "second": [("cuda", 16)], "third": [None]}


def test_a_test_parametrized_to_cuda_alone_is_skipped_off_cuda_by_its_own_check() -> None:
    """pytest runs a test once per value of its parametrize marks: the evaluation binds them (constants only), so
    ``device == "cuda" and not torch.cuda.is_available()`` is decided for each."""
    source = """\
    import pytest
    import torch

    @pytest.mark.parametrize("device", {devices})
    @pytest.mark.parametrize("n", [1, 2])
    def test_it(device, n):
        if device == "cuda" and not torch.cuda.is_available():
            pytest.skip("no CUDA")
        x = torch.ones(n, device=device)
    """
    only_cuda = _unit(source.format(devices='["cuda"]'), "test_it", "cpu")
    assert len(only_cuda.paths) == 2 and all(p.stop is not None and p.stop.kind == "gate" for p in only_cuda.paths)
    both = _unit(source.format(devices='["cpu", "cuda"]'), "test_it", "cpu")
    assert sorted(str(p.stop and p.stop.kind) for p in both.paths) == ["None", "None", "gate", "gate"]
    unknown = _unit(source.format(devices="DEVICES"), "test_it", "cpu")  # not constants: the value stays unknown
    assert any(p.stop is None for p in unknown.paths)


@pytest.mark.parametrize(("body", "needs"), [
    ("    g = torch.cuda.CUDAGraph()\n", True),
    ("    if not torch.cuda.is_available():\n        pytest.skip('no CUDA')\n    g = torch.cuda.CUDAGraph()\n", False),
    ("    capturing = x.is_cuda and torch.cuda.is_current_stream_capturing()\n", False),
    ("    s = torch.cuda.Stream()\n    g = torch.cuda.CUDAGraph()\n", True),  # the stream is ported; the graph is not
])
def test_a_cuda_only_api_in_a_function_needs_cuda_where_the_cpu_reaches_it(body: str, needs: bool) -> None:
    from torchport.codemods.analysis.requirements import requirements

    source = f"import pytest\nimport torch\n\n\ndef test_it(x):\n{body}"
    found = requirements(ast.parse(source), source)
    assert bool(found) is needs, found
    if needs:
        assert found[0].reason == "uses torch.cuda.CUDAGraph, which only CUDA has"


@pytest.mark.parametrize(("expression", "value"), [
    ("dist.get_rank() == 0", "UNKNOWN"),  # rank 0 logs: some process runs it
    ("8 % dist.get_world_size() == 0", "UNKNOWN"),
    ("dist.get_rank() > 0", "UNKNOWN"),
    ("dist.get_rank() >= 0", "True"),
    ("dist.get_rank() < 0", "False"),
    ("0 <= dist.get_rank()", "True"),
])
def test_a_rank_is_an_int_not_known_so_only_its_sign_is_decided(expression: str, value: str) -> None:
    unit = evaluate(ast.parse(f"import torch.distributed as dist\nx = {expression}\n"), "cpu", functions=False)[0]
    assert [repr(p.env["x"]) for p in unit.paths] == [value]


def test_a_module_that_calls_its_own_test_functions_is_ported_as_any_module() -> None:
    """graph-generation's train.py calls its `test_epoch` after each epoch: pytest never runs it, so its training loop,
    which only another module calls, is no helper of tests that never run."""
    result = _port("""\
    import torch


    def train_epoch(model, data):
        for x in data:
            x = x.cuda()
            model(x)


    def test_epoch(model):
        return model(torch.ones(2))


    def test_partial(model):
        return model


    def train(model, data, epochs):
        for epoch in range(epochs):
            train_epoch(model, data)
            test_epoch(model)
    """)
    assert "x = x.to(tp.device())" in result.migrated and not result.diagnostics


def test_a_query_whose_branch_still_names_cuda_is_left_with_it() -> None:
    """kymatio's device list: porting `torch.cuda.is_available()` alone would open the branch on a Mac, where the
    list still names 'cuda'; the original already runs on the CPU."""
    source = """\
    import torch

    if torch.cuda.is_available():
        devices = ['cuda', 'cpu']
    else:
        devices = ['cpu']

    for device in devices:
        x = torch.ones(2, device=device)
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert "the branch it opens off CUDA still names the device 'cuda' (line 4)" in result.diagnostics[0].message


@pytest.mark.parametrize(("call", "stops"), [
    ("subprocess.run(['nvidia-smi'], stdout=subprocess.PIPE, text=True)", True),
    ("subprocess.check_output('nvidia-smi', shell=True)", True),  # the shell's exit status 127 is checked
    ("subprocess.run('nvidia-smi', shell=True)", False),  # an exit status nothing reads
    ("subprocess.getoutput('nvidia-smi')", False),
    ("subprocess.run(['ls'])", False),
    ("subprocess.run(['nvidia-smi'])\nexcept IndexError:\n    pass", True),  # another error's handler
])
def test_running_nvidia_smi_needs_nvidias_driver(call: str, stops: bool) -> None:
    source = f"import subprocess\ntry:\n    result = {call}\n" if "except" in call else \
        f"import subprocess\nresult = {call}\n"
    for target, expected in (("cpu", stops), ("cuda", False)):
        [path] = evaluate(ast.parse(source), target, functions=False)[0].paths
        assert (path.stop is not None and path.stop.kind == "cuda") is expected, (target, path.stop)


@pytest.mark.parametrize(("code", "stops"), [
    ("gpu = GPUtil.getGPUs()[0]", True),  # an empty list without NVIDIA's driver
    ("gpus = GPUtil.getAvailable()\nfirst = gpus[0]", True),
    ("gpu = GPUtil.getFirstAvailable()", True),  # raises: no GPU is free
    ("GPUtil.showUtilization()", False),  # an empty table
    ("gpus = GPUtil.getGPUs()[:1]", False),
    ("count = len(GPUtil.getGPUs())", False),
    ("try:\n    gpu = GPUtil.getGPUs()[0]\nexcept IndexError:\n    gpu = None", False),
    # an IndexError handler catches the empty list's IndexError alone
    ("try:\n    gpu = GPUtil.getFirstAvailable()\nexcept IndexError:\n    gpu = None", True),
])
def test_gputil_lists_no_gpu_off_cuda(code: str, stops: bool) -> None:
    source = f"import GPUtil\n{code}\n"
    for target, expected in (("cpu", stops), ("xpu", stops), ("cuda", False)):
        [path] = evaluate(ast.parse(source), target, functions=False)[0].paths
        assert (path.stop is not None and path.stop.kind == "cuda") is expected, (target, path.stop)


def test_a_cuda_assert_stays_where_a_rank_0_path_past_it_still_needs_cuda_and_the_rest_stays_with_it() -> None:
    """modded-nanogpt's SOAP record: the master process logs `nvidia-smi` after the process group is made; removing
    the assert would move the failure off CUDA there, so the program is left whole, said once."""
    source = """\
    import os
    import subprocess
    import torch
    import torch.distributed as dist

    assert torch.cuda.is_available()
    dist.init_process_group(backend="nccl")
    rank = int(os.environ["RANK"])
    device = f"cuda:{rank}"
    torch.cuda.set_device(device)
    master = rank == 0
    model = torch.nn.Linear(2, 2).cuda()
    if master:
        result = subprocess.run(["nvidia-smi"], stdout=subprocess.PIPE, text=True)
        print(result.stdout)
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source) and result.rewrites == {}
    assert [d.message for d in result.diagnostics if "R19" in d.message] == [
        "[R19 half-port] left as written: off CUDA the path still stops at line 14: running nvidia-smi raises where "
        "NVIDIA's driver is not installed"]


@pytest.mark.parametrize("module", ["common_distributed", "distributed._tensor.common_dtensor"])  # and re-exported
def test_torchs_own_gpu_count_skip_skips_off_cuda_alone(module: str) -> None:
    source = f"""\
    from torch.testing._internal.{module} import skip_if_lt_x_gpu
    import torch

    @skip_if_lt_x_gpu(4)
    def test_it():
        x = torch.ones(2).cuda()
    """
    assert _unit(source, "test_it", "cpu").skipped is not None
    assert _unit(source, "test_it", "mps").skipped is not None
    assert _unit(source, "test_it", "cuda").skipped is None  # four devices or not: it may run


def test_a_pytest_fixture_that_asks_cuda_decides_the_tests_that_take_it() -> None:
    """torchsnapshot's `use_gpu` fixture returns `torch.cuda.is_available()`: off CUDA a test's `if use_gpu:` never
    runs, so what it moves stays as written."""
    source = """\
    import pytest
    import torch

    @pytest.fixture
    def use_gpu() -> bool:
        return torch.cuda.is_available()

    @pytest.fixture(params=[True, False])
    def maybe(request):
        return request.param

    def test_it(use_gpu, maybe):
        if use_gpu:
            x = torch.ones(2).cuda()
        if maybe:
            y = torch.ones(2).cuda()
    """
    for target, runs in (("cpu", False), ("cuda", True)):
        lines = set().union(*(p.lines for p in _unit(source, "test_it", target).paths))
        assert (14 in lines) is runs and 16 in lines, target  # a fixture with params stays unknown
    result = _port(source)
    assert "x = torch.ones(2).cuda()" in result.migrated and "y = torch.ones(2).to(tp.device())" in result.migrated


def test_a_query_whose_branch_names_cuda_in_an_f_string_is_left_with_it() -> None:
    """nnAudio's DataParallel tests: defined only where CUDA is there, parametrized to f'cuda:{gpu_idx}'."""
    source = """\
    import pytest
    import torch

    gpu_idx = 0
    if torch.cuda.is_available():
        x = torch.randn((4, 100)).to(f'cuda:{gpu_idx}')

        @pytest.mark.parametrize("device", [f'cuda:{gpu_idx}'])
        def test_parallel(device):
            assert x.device.type == "cuda"
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert "still names the device 'cuda:'" in result.diagnostics[0].message


def test_a_query_whose_branch_names_cuda_only_through_the_runtime_is_ported() -> None:
    result = _port("""\
    import torch

    gpu_idx = 1
    x = torch.ones(2)
    if torch.cuda.is_available():
        x = x.to(f'cuda:{gpu_idx}')
    """)
    assert "if tp.is_available():" in result.migrated and not any("R19" in d.message for d in result.diagnostics)


def test_a_query_left_with_its_branch_leaves_what_only_that_branch_runs() -> None:
    """nnAudio's tests: the query is kept for its f'cuda:{gpu_idx}' parametrize, so the move two lines below it,
    a hunk of its own, runs only on CUDA again and stays with it."""
    source = """\
    import pytest
    import torch

    gpu_idx = 0
    if torch.cuda.is_available():
        x = torch.randn((4, 100)).to(
            f'cuda:{gpu_idx}'
        )

        @pytest.mark.parametrize("device", [f'cuda:{gpu_idx}'])
        def test_parallel(device):
            assert x.device.type == "cuda"
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert not result.rewrites


@pytest.mark.parametrize(("count", "held"), [
    ("len(list(range(torch.cuda.device_count()))) > 0", True),
    ("len(tuple(range(torch.cuda.device_count()))) > 0", True),
    ("len(list(range(4))) > 0", False),
])
def test_a_list_of_the_cuda_devices_is_empty_off_cuda(count: str, held: bool) -> None:
    """pytorch-segmentation's `availble_gpus = list(range(torch.cuda.device_count()))`, then `'cuda:0' if
    len(availble_gpus) > 0 else 'cpu'`: the CUDA branch is never taken off CUDA, so its port changes nothing."""
    result = _port(f"import torch\n\nmodel = torch.nn.Linear(2, 2)\n"
                   f"device = torch.device('cuda:0' if {count} else 'cpu')\nmodel.to(device)\n")
    assert (result.migrated == result.original) is held


def test_a_test_class_whose_setupclass_skips_without_cuda_keeps_the_helpers_only_it_calls() -> None:
    """fast-transformers: `setUpClass` raises SkipTest without CUDA, so the module's helper that only this class
    calls never runs off CUDA; its `.cuda()` stays. On CUDA the class runs."""
    source = """\
    import unittest

    import torch


    def simple_lsh(x):
        return x.sum(0).cuda()


    class TestHashGPU(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            if not torch.cuda.is_available():
                raise unittest.SkipTest("No CUDA capable device detected")

        def test_hash(self):
            self.assertTrue(simple_lsh(torch.ones(2, 2)).is_cuda)
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source) and not result.rewrites
    assert _unit(source, "test_hash", "cpu").skipped is not None
    assert _unit(source, "test_hash", "cuda").skipped is None


def test_a_test_class_whose_setup_calls_skiptest_without_cuda_is_skipped_there() -> None:
    """torchani's `TestInfer.setUp`: `self.skipTest(...)` under `if not torch.cuda.is_available()` skips every test
    of the class off CUDA, as `raise unittest.SkipTest` does; its `.cuda()` stays."""
    source = """\
    import unittest

    import torch


    class TestInfer(unittest.TestCase):
        def setUp(self):
            if not torch.cuda.is_available():
                self.skipTest("MNP models need CUDA")

        def test_infer(self):
            self.assertTrue(torch.ones(2).cuda().is_cuda)
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source) and not result.rewrites
    assert _unit(source, "test_infer", "cpu").skipped is not None
    assert _unit(source, "test_infer", "cuda").skipped is None


def test_a_test_helper_given_a_cuda_visible_devices_flag_keeps_its_cuda_branch() -> None:
    """torch-fidelity's tests: `cuda = os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""`, unset where there is no
    CUDA, given to a helper method by every call: the helper's `if cuda:` branch runs only on CUDA; left."""
    source = """\
    import os
    import unittest

    import torch


    class TestConvolution(unittest.TestCase):
        def estimate(self, cuda):
            x = torch.ones(2)
            if cuda:
                x = x.cuda()
            return x.sum()

        def test_convolution(self):
            cuda = os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
            self.assertEqual(self.estimate(cuda), 2)
            if cuda:
                self.assertEqual(self.estimate(cuda), 2)
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source) and not result.rewrites
    flag = "            cuda = os.environ"
    named = source.replace(flag, "            print(self.estimate)\n" + flag)
    assert named != source and _port(named).rewrites  # named where it is not called: its parameter may be anything


def test_an_import_of_a_cuda_only_library_fails_off_cuda_and_its_handler_runs() -> None:
    """BiSeNet: `try: from apex import parallel` / `except ImportError: has_apex = False`: off CUDA apex is not
    there, so the DDP branch for `not has_apex` runs, and its `device_ids` are ported."""
    source = """\
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    has_apex = True
    try:
        from apex import parallel
    except ImportError:
        has_apex = False


    def wrap(net):
        if has_apex:
            return parallel.DistributedDataParallel(net)
        rank = dist.get_rank()
        return nn.parallel.DistributedDataParallel(net.cuda(), device_ids=[rank], output_device=rank)
    """
    result = _port(source)
    assert "net.to(tp.device())" in result.migrated and "device_ids=[rank]" not in result.migrated
    assert [sorted(p.lines) for p in _unit(source, "wrap", "cpu").paths] == [[13, 15, 16]]  # not apex's line 14


def test_a_query_whose_branch_names_cuda_only_through_a_vendored_runtime_is_ported() -> None:
    """The runtime is known by what the module imports, not by the name `tp`: a vendored runtime bound to `rt`
    maps the CUDA device it is given as the package does."""
    original = "import torch\n\ngpu_idx = 1\nx = torch.ones(2)\nif torch.cuda.is_available():\n" \
               "    x = x.to(f'cuda:{gpu_idx}')\n"
    migrated = original.replace("import torch\n", "import torch\nimport _torchport_runtime as rt\n").replace(
        "torch.cuda.is_available()", "rt.is_available()").replace("x.to(f'cuda:{gpu_idx}')",
                                                                   "x.to(rt.device(f'cuda:{gpu_idx}'))")
    checked = check_port(original, migrated)
    assert checked.code == migrated and checked.held == []


def test_a_membership_in_a_set_literal_is_evaluated() -> None:
    # llm.c's train_llama3: `assert device_type in {'cuda'}` stops every path off CUDA (a list was never read either)
    source = """
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        device_type = "cuda" if "cuda" in device else "cpu"
        assert device_type in {"cuda"}, "GPU required"
        print(device)
    """
    assert _module_paths(source, "cpu") == [(5, "gate")]
    assert _module_paths(source, "cuda") == [(6, None)]


def test_a_library_placement_on_cuda_stops_the_path_off_cuda() -> None:
    # llm.c's export_hf: Hugging Face places the model itself where `device_map` says
    source = """
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("out", device_map="cuda")
        print(model)
    """
    assert _module_paths(source, "cpu") == [(4, "cuda")]
    assert _module_paths(source.replace('"cuda"', '"auto"'), "cpu") == [(5, None)]


def test_command_line_defaults_are_read_as_argparse_gives_them() -> None:
    from torchport.model.evaluate import command_line_defaults

    tree = ast.parse(textwrap.dedent("""\
        parser.add_argument("--lr", default=0.1)
        parser.add_argument("--epochs", type=int, default="3")
        parser.add_argument("--cuda", action="store_true")
        parser.add_argument("--no-amp", action="store_false", dest="amp")
        parser.add_argument("--device")
        parser.add_argument("data")
        parser.add_argument("--config", required=True)
        parser.add_argument("--seed", default=1)
        sub.add_argument("--seed", default=2)
    """))
    assert command_line_defaults(tree) == {"lr": 0.1, "epochs": 3, "cuda": False, "amp": True, "device": None}


@pytest.mark.parametrize("also_called, stays", [(False, False), (True, True)])
def test_a_private_method_called_only_where_data_is_on_cuda_never_runs_off_cuda(also_called: bool,
                                                                                   stays: bool) -> None:
    """Distributed Shampoo's `_sync_streams_to_default`, called only under `if self._use_cuda_streams:` (every
    group's parameters on CUDA): off CUDA no path runs it, unless a line that runs there calls it too."""
    source = textwrap.dedent(f"""\
        import torch


        class Shampoo:
            def __init__(self, groups):
                self._use_streams = all(g.device.type == "cuda" for g in groups)

            def step(self):
                if self._use_streams:
                    self._sync()
                {"self._sync()" if also_called else "return None"}

            def _sync(self):
                torch.cuda.current_stream().synchronize()
        """)
    migrated = _hand_port(source, ("torch.cuda.current_stream()", "tp.current_stream()"))
    assert (check_port(source, migrated).code == migrated) is stays


def test_a_helper_no_test_names_in_a_module_taken_for_tests_stays_ported() -> None:
    """DF-GAN's lib/modules.py defines a `test(...)` helper beside `train(...)` and `MA_GP(...)`, which another
    module calls: no skipped test names them, so they are not dead code of a test module."""
    source = ("import torch\n\n\ndef train(x):\n    return ma_gp(x)\n\n\ndef ma_gp(x):\n"
              "    return torch.ones(x.size()).cuda()\n\n\ndef test(loader):\n    return len(loader)\n")
    migrated = _hand_port(source, (".cuda()", ".to(tp.device())"))
    assert check_port(source, migrated, tests=True).code == migrated


@pytest.mark.parametrize(("body", "stops"), [
    ("    if torch.cuda.is_available():\n        n = torch.cuda.device_count()\n    return n\n", True),
    ("    n = 1\n    if torch.cuda.is_available():\n        n = torch.cuda.device_count()\n    return n\n", False),
    ("    if torch.cuda.is_available():\n        n = torch.cuda.device_count()\n    else:\n        n = 1\n"
     "    return n\n", False),
    ("    if torch.cuda.is_available():\n        n = torch.cuda.device_count()\n    else:\n"
     "        from os import cpu_count as n\n    return n\n", False),  # bound by an import it does not follow
    ("    if torch.cuda.is_available():\n        args.n = torch.cuda.device_count()\n    return args.n\n", False),
    # Medical-Transformer's test.py: the branch wraps what was bound before it (nothing, where no model name matches:
    # a NameError on CUDA too, no device gate)
    ("    if torch.cuda.device_count() > 1:\n        n = torch.nn.DataParallel(n).cuda()\n    return n\n", False),
])
def test_a_name_bound_only_where_cuda_is_stops_where_it_is_read(body: str, stops: bool) -> None:
    source = f"import torch\n\n\ndef main(args):\n{body}"
    for target in ("cpu", "mps"):
        stop = _unit(source, "main", target).paths[0].stop
        assert (stop is not None and "NameError" in stop.message) is stops
    assert _unit(source, "main", "cuda").paths[0].stop is None


@pytest.mark.parametrize("runner", ["from jsonargparse import CLI\n", "from fire import Fire as CLI\n",
                                    "import typer\nCLI = typer.run\n"])
def test_a_command_line_runner_runs_the_function_it_is_given(runner: str) -> None:
    """lit-llama's finetune scripts: ``CLI(main)`` calls ``main`` with the command line's arguments; run with none,
    ``main``'s defaults, so its ``L.Fabric(accelerator="cuda")`` stops the script off CUDA."""
    source = (f"import lightning as L\n{runner}\n\ndef main(devices: int = 1):\n"
              "    fabric = L.Fabric(accelerator='cuda', devices=devices)\n\n\nif __name__ == '__main__':\n"
              "    CLI(main)\n")
    assert _module_paths(source, "cpu")[0][1] == "cuda"
    assert _module_paths(source, "cuda")[0][1] is None


@pytest.mark.parametrize(("count", "worker", "stops"), [
    ("1", "x = torch.cuda.FloatTensor(2)", True),
    ("1", "x = torch.ones(2)", False),
    # none starts off CUDA: their work is not done (CCT's make_cam writes no CAMs; its next step fails later)
    ("torch.cuda.device_count()", "x = torch.ones(2)", True),
])
def test_a_spawned_worker_runs_as_each_process_does(count: str, worker: str, stops: bool) -> None:
    """``mp.spawn(main_worker, nprocs=n, args=(n, args))`` runs ``main_worker(i, n, args)`` in each of ``n``
    processes: none where the count is CUDA's device count off CUDA, which stops the program's work there."""
    source = ("import torch\nimport torch.multiprocessing as mp\n\n\ndef main_worker(gpu, n, flag):\n"
              f"    {worker}\n\n\nif __name__ == '__main__':\n"
              f"    mp.spawn(main_worker, nprocs={count}, args=({count}, True))\n")
    assert (_module_paths(source, "cpu")[0][1] == "cuda") is stops
    assert _module_paths(source, "cuda")[0][1] is None


GATE_THEN_COUNT = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model

    def set_device(self, gpu=None):
        if isinstance(gpu, int):
            if not torch.cuda.is_available():
                raise AssertionError("PyTorch cannot access your GPU. Please investigate!")
            if gpu >= torch.cuda.device_count(){extra}:
                raise ValueError("Invalid device index")
            torch.cuda.set_device(gpu)
            self.model = self.model.cuda()
"""


def test_a_gate_the_port_opens_stays_where_a_later_check_still_stops_the_path() -> None:
    """Holocron's `Trainer.set_device`: `if not torch.cuda.is_available(): raise` ported to the runtime lets MPS
    through to `gpu >= torch.cuda.device_count()`, kept as written, which raises `Invalid device index` there: a half
    port that trades the author's message for a confusing one. The whole block stays."""
    source = GATE_THEN_COUNT.format(extra="")
    result = _port(source)
    assert result.migrated == source
    assert any("R19 half-port" in d.message for d in result.diagnostics)


def test_a_gate_the_port_opens_goes_where_nothing_past_it_stops() -> None:
    source = GATE_THEN_COUNT.replace("            if gpu >= torch.cuda.device_count(){extra}:\n"
                                     "                raise ValueError(\"Invalid device index\")\n", "")
    result = _port(source)
    assert "if not tp.is_available():" in (result.migrated or "")
    assert "tp.set_device(gpu)" in (result.migrated or "")


def test_a_guard_whose_branch_still_asserts_cuda_off_it_stays() -> None:
    """tabular-dl-tabr's get_device: ported, ``if tp.is_available():`` would let a Mac into a branch whose assert on
    CUDA_VISIBLE_DEVICES still fails there (and whose ``cuda:0`` the check holds): the guard stays with it."""
    source = """\
    import os

    import torch


    def get_device():
        if torch.cuda.is_available():
            assert os.environ.get('CUDA_VISIBLE_DEVICES') is not None, 'Set CUDA_VISIBLE_DEVICES'
            return torch.device('cuda:0')
        else:
            return torch.device('cpu')
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert any("R19" in d.message and "an assert fails" in d.message for d in result.diagnostics)
    check = "            assert os.environ.get('CUDA_VISIBLE_DEVICES') is not None, 'Set CUDA_VISIBLE_DEVICES'\n"
    plain = source.replace(check, "")
    assert "tp.is_available()" in _port(plain).migrated


def test_a_test_that_asserts_data_is_on_cuda_keeps_the_move_it_checks() -> None:
    """tgm's `test_to_gpu`: `.to('cuda')` then `assert g.device == torch.device('cuda')`. Ported alone, the move
    goes to the picked device and the assert fails off CUDA; the data's device is not CUDA's there."""
    source = """\
    import torch


    def test_to_gpu():
        g = torch.ones(2).to("cuda")
        assert g.device == torch.device("cuda")
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert [d.message for d in result.diagnostics if "R19" in d.message] == [
        "[R19 half-port] left as written: off CUDA the path still stops at line 6: an assert fails"]
    compared_by_type = source.replace('g.device == torch.device("cuda")', 'g.device.type == "cuda"')
    assert _port(compared_by_type).migrated == textwrap.dedent(compared_by_type)
    moved_only = source.replace('    assert g.device == torch.device("cuda")\n', "    assert g.sum() == 2\n")
    assert "g = torch.ones(2).to(tp.device())" in _port(moved_only).migrated


def test_a_flag_stored_on_args_gates_where_the_args_are_kept_on_self() -> None:
    """CoANet's trainer (pytorch-deeplab-xception's): `args.cuda = not args.no_cuda and torch.cuda.is_available()`,
    then `self.args = args` and `if self.args.cuda: x = x.cuda()`. The flag stays CUDA's, so the move under it runs
    only on CUDA: porting it alone changes nothing and would keep the program off a Mac's GPU for nothing."""
    source = """\
    import torch


    class Trainer:
        def __init__(self, args):
            self.args = args

        def step(self, x):
            if self.args.cuda:
                x = x.cuda()
            return x


    def main(args):
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        Trainer(args).step(torch.ones(2))
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert [d.message for d in result.diagnostics if "R01" in d.message] == [
        "left as written (TP001 would apply): [R01 cuda-only] this code runs only on CUDA (under the CUDA guard at "
        "line 9): a rewrite would change nothing anywhere"]


def test_a_module_ending_in_blank_lines_and_a_line_of_spaces_is_ported_byte_for_byte() -> None:
    """LibCST regenerates ``x\\n\\n\\n    \\n`` as ``x\\n    \\n``: the blank tail is kept aside, not refused."""
    from torchport.codemods.api import migrate_code

    migration = migrate_code("import torch\nx = torch.ones(2).cuda()\n\n\n    \n")
    assert migration.exact
    assert migration.code == ("import torch\nfrom torchport import runtime as tp\n\n"
                              "x = torch.ones(2).to(tp.device())\n\n\n    \n")


def test_a_key_of_a_dict_set_from_the_cuda_check_gates_where_it_is_read_as_an_attribute() -> None:
    """alpha-zero-general's `args = dotdict({'cuda': torch.cuda.is_available()})`, then `if args.cuda: x.cuda()`:
    the flag stays CUDA's, so what it gates runs only on CUDA."""
    source = """\
    import torch

    args = dotdict({
        'lr': 0.001,
        'cuda': torch.cuda.is_available(),
    })


    class Wrapper:
        def __init__(self, net):
            self.net = net
            if args.cuda:
                self.net.cuda()
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert [d.message for d in result.diagnostics if "R01" in d.message] == [
        "left as written (TP001 would apply): [R01 cuda-only] this code runs only on CUDA (under the CUDA guard at "
        "line 12): a rewrite would change nothing anywhere"]
    read_otherwise = source.replace("if args.cuda:", "if args.lr:")
    assert "self.net.to(tp.device())" in _port(read_otherwise).migrated


def test_a_module_that_sets_torch_cuda_attributes_implements_cuda_and_is_left() -> None:
    """sd-scripts' IPEX hijacks: `torch.cuda.synchronize = torch_cuda_synchronize` redirects CUDA calls to XPU. A
    rename of the targets (`tp.synchronize = ...`) would patch the runtime instead, and XPU would lose the shim."""
    source = """\
    from functools import wraps

    import torch


    @wraps(torch.cuda.synchronize)
    def torch_cuda_synchronize(device=None):
        return torch.xpu.synchronize(device)


    def ipex_hijacks():
        torch.cuda.synchronize = torch_cuda_synchronize
    """
    result = _port(source)
    assert result.migrated == textwrap.dedent(source)
    assert any("[R02 several-backends] this module sets `torch.cuda.synchronize` (line 12)" in d.message
               for d in result.diagnostics)


def test_a_flag_set_true_under_the_cuda_check_for_a_device_choice_moves_with_it() -> None:
    """focal_calibration's train.py: `cuda = False`, `if torch.cuda.is_available() and args.gpu: cuda = True`,
    `device = torch.device("cuda" if cuda else "cpu")`, and the model moved by `.cuda()`: the guard is the
    choice's, so it becomes the accelerator's with the device string; a flag a CUDA tensor type also reads stays."""
    source = """\
    import torch


    def main(args, net):
        cuda = False
        if torch.cuda.is_available() and args.gpu:
            cuda = True
        device = torch.device("cuda" if cuda else "cpu")
        net.cuda()
        return net(torch.ones(1, 2).to(device))
    """
    ported = _port(source).migrated
    assert "if tp.is_available() and args.gpu:" in ported
    assert 'device = torch.device(tp.device() if cuda else "cpu")' in ported
    typed = source.replace("        net.cuda()\n",
                           "        kind = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n")
    assert "if torch.cuda.is_available() and args.gpu:" in _port(typed).migrated


def test_a_checkpoint_bound_only_for_load_state_dict_moves_nothing() -> None:
    """openpose's Body: `model_dict = util.transfer(self.model, torch.load(path))`, then
    `self.model.load_state_dict(model_dict)`: the tensors are copied into the module's own, so its port is no move
    a kept choice could split from; a name also read otherwise is one."""
    from torchport.codemods.api import migrate_code

    source = ("import torch\n\n\nclass Body:\n    def __init__(self, model, path):\n        model.cuda()\n"
              "        model_dict = transfer(model, torch.load(path))\n        model.load_state_dict(model_dict)\n")
    assert migrate_code(source).facts["state_loads"] == [7]
    read = source.replace("        model.load_state_dict(model_dict)\n",
                          "        model.load_state_dict(model_dict)\n        print(model_dict['x'].sum())\n")
    assert "state_loads" not in migrate_code(read).facts


def test_a_cuda_index_stored_as_a_device_attribute_stays_where_it_fails() -> None:
    """Info-HCVAE's vae/main.py: `args.device = torch.cuda.current_device()`, then `batch_to_device(batch,
    args.device)` in another module. `tp.current_device()` gives 0 off CUDA, and `.to(0)` names no device there:
    renamed, the script would fail later and less clearly; a local used only as a device still becomes one."""
    from torchport.codemods.api import migrate_code

    source = "import torch\n\n\ndef main(args):\n    args.device = torch.cuda.current_device()\n    run(args)\n"
    migration = migrate_code(source)
    assert migration.code == source
    assert [d.message for d in migration.diagnostics] == [
        "left as written (TP010 would apply): [R19 half-port] `args.device` holds a CUDA index that other code uses "
        "as a device: off CUDA an index names no device"]
    counted = source.replace("args.device = ", "args.gpu_count = ")
    assert "args.gpu_count = tp.current_device()" in migrate_code(counted).code


def test_a_stub_that_switches_cuda_off_is_no_backend_of_its_own() -> None:
    """`torch.cuda.is_available = lambda: False` (a force-CPU hack) sets a torch.cuda attribute but implements no
    backend: the module's moves are still ported (sd-scripts' hijacks assign functions of their own)."""
    from torchport.codemods.api import migrate_code

    source = "import torch\n\ntorch.cuda.is_available = lambda: False\nx = torch.ones(2).cuda()\n"
    assert "x = torch.ones(2).to(tp.device())" in migrate_code(source).code


def test_a_setting_compared_with_the_cuda_string_is_no_datas_device() -> None:
    """Off CUDA, a data's device compared with `torch.device("cuda")` is known not to be CUDA's; a setting compared
    with the string (`cfg.device == "cuda"`, a config value) is not known."""
    from torchport.model.evaluate import Evaluator, Path
    from torchport.model.values import UNKNOWN

    evaluator = Evaluator(ast.parse("import torch\n"), "cpu")
    evaluator.top_functions(())
    values = {text: evaluator.value(ast.parse(text, mode="eval").body, Path({})) for text in (
        'cfg.device == "cuda"', 'x.device == torch.device("cuda")', 'x.device != torch.device("cuda:0")')}
    assert values == {'cfg.device == "cuda"': UNKNOWN, 'x.device == torch.device("cuda")': False,
                      'x.device != torch.device("cuda:0")': True}


def test_a_parametrized_value_whose_mark_skips_off_cuda_does_not_run_there() -> None:
    """falkon: ``pytest.param("incore", marks=[pytest.mark.skipif(not decide_cuda(), ...)])``: off CUDA pytest
    runs the test with "cpu_only" alone, so the move under ``if cuda_usage == "incore":`` never runs there."""
    source = textwrap.dedent("""
    import pytest, torch
    from helpers import decide_cuda

    @pytest.mark.parametrize("cuda_usage", [
        pytest.param("incore", marks=[pytest.mark.skipif(not decide_cuda(), reason="No GPU found.")]),
        "cpu_only",
    ])
    def test_classif(x, cuda_usage):
        if cuda_usage == "incore":
            x = x.cuda()
        return x

    @pytest.mark.parametrize("device", [pytest.param("cuda", marks=pytest.mark.skipif(
        not torch.cuda.is_available(), reason="gpu"))])
    def test_only_cuda(device):
        return torch.ones(2, device=device)
    """)
    gates = frozenset({"decide_cuda"})
    for target, lines in (("cpu", [[10, 12]]), ("cuda", [[10, 11, 12], [10, 12]])):
        units = {getattr(u.node, "name", ""): u for u in Evaluator(ast.parse(source), target, gates=gates).units()}
        assert sorted(sorted(p.lines) for p in units["test_classif"].paths) == sorted(lines), target
        assert bool(units["test_only_cuda"].paths) is (target == "cuda")


def test_a_list_a_loop_grows_has_no_known_length_on_a_later_line_of_its_body() -> None:
    """AIPolicy's data loader: `tokens = []`, then per line `tokens.append(...)` or, on a blank line, `elif
    len(tokens) > 0:` work on them: a later iteration runs that branch, so its lines run off CUDA."""
    source = """
    import torch


    def refresh(lines):
        tokens = []
        for line in lines:
            if line:
                tokens.append(line)
            elif len(tokens) > 0:
                seqs = torch.tensor(tokens)
                tokens = []
    """
    unit = _unit(source, "refresh", "cpu")
    assert any(11 in p.lines for p in unit.paths)
