"""Tests for torchport.runtime.

Most tests check the CPU backend (this suite's default machine) and are skipped
when another backend was picked; run with TORCHPORT_DEVICE=cpu to force them.
Tests that need a fresh interpreter (environment variable, import side effects,
simulated accelerators) are in test_runtime_isolated.py. CUDA tests run only
where CUDA is the picked backend.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
import threading
import time

import forkrun
import pytest
import torch

from torchport import runtime as tp
from torchport.runtime import _backend

ON_CPU = tp.device_type() == "cpu"
ON_CUDA = tp.device_type() == "cuda"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="checks the CPU backend (set TORCHPORT_DEVICE=cpu)")
cuda_only = pytest.mark.skipif(
    not (torch.cuda.is_available() and ON_CUDA), reason="needs CUDA as the picked backend"
)


# --- device selection ------------------------------------------------------


def test_device_returns_a_torch_device_of_the_picked_type():
    assert isinstance(tp.device(), torch.device)
    assert tp.device().type == tp.device_type()
    assert tp.device() is tp.device()


@pytest.mark.parametrize(
    "spec", ["cpu", "cpu:0", "meta", "mps", "xpu:1", "hip", "cudnn", "Cuda"]
)
def test_non_cuda_strings_pass_through_as_the_same_object(spec):
    assert tp.device(spec) is spec
    assert tp.device_str(spec) is spec


@pytest.mark.parametrize(
    "spec",
    [torch.device("cpu"), torch.device("meta"), torch.device("mps"), torch.device("xpu", 1),
     {"cuda:0": "cpu"}, lambda storage, loc: storage, True, 1.0],
)
def test_other_specs_pass_through_as_the_same_object(spec):
    assert tp.device(spec) is spec


@pytest.mark.parametrize("spec", ["cuda:x", "cuda:", "cuda:01", "cuda:-1", "cuda:1 "])
def test_malformed_cuda_string_raises_like_torch(spec):
    with pytest.raises(RuntimeError, match="Invalid device string"):
        tp.device(spec)


def test_cuda_strings_built_at_run_time_are_mapped(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "1")
    built = "".join(["cuda:", "0"])  # a new str object, equal to "cuda:0"
    assert tp.device(built) == tp.device("cuda:0") == tp.device(0)
    assert tp.device(f"cuda:{os.environ['LOCAL_RANK']}") == tp.device(1)
    assert tp.device_str(f"cuda:{os.environ['LOCAL_RANK']}") == str(tp.device(1))
    assert tp.device("cuda:" + "123") == tp.device(123)  # beyond the precomputed table


def test_device_str_rejects_non_device_types():
    with pytest.raises(TypeError):
        tp.device_str({"cuda": "cpu"})


@cpu_only
@pytest.mark.parametrize(
    "spec", [None, 0, 3, "cuda", "cuda:0", "cuda:7", torch.device("cuda"), torch.device("cuda", 2)]
)
def test_cuda_style_specs_map_to_cpu(spec):
    assert tp.device(spec) == torch.device("cpu")
    assert tp.device(spec).index is None  # never 'cpu:0' when 'cpu' is meant
    assert tp.device_str(spec) == "cpu"


@cpu_only
def test_cpu_queries():
    assert tp.device_type() == "cpu"
    assert tp.is_available() is False
    assert tp.device_count() == 0  # as torch.cuda.device_count() on a CPU-only machine
    assert tp.process_count() == 1  # but one process to start
    assert tp.current_device() == 0


@cpu_only
@pytest.mark.parametrize("spec", [None, 0, "cpu", "cuda", "cuda:1", torch.device("cpu")])
def test_set_device_and_device_index_accept_cpu_and_cuda_specs(spec):
    assert tp.set_device(spec) is None
    with tp.device_index(spec):
        assert tp.current_device() == 0


@cpu_only
@pytest.mark.parametrize(
    "fn",
    [tp.set_device, tp.device_index, tp.synchronize, tp.get_device_name, tp.memory_allocated,
     tp.get_rng_state, tp.current_stream, tp.Stream],
)
def test_foreign_device_is_rejected(fn):
    with pytest.raises(ValueError, match="cpu"):
        fn("mps")


@cpu_only
def test_cpu_device_properties():
    props = tp.get_device_properties()
    assert props == tp.get_device_properties("cuda:0")
    assert props.name == tp.get_device_name() and props.name
    assert props.multi_processor_count == os.cpu_count()
    assert (props.major, props.minor) == (0, 0)
    if sys.platform.startswith("linux"):
        assert props.total_memory == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with pytest.raises(dataclasses.FrozenInstanceError):
        props.total_memory = 1


@cpu_only
def test_capability_is_a_zero_tuple_not_the_accelerator_dict():
    cap = tp.get_device_capability()
    assert cap == (0, 0) and isinstance(cap, tuple)


@cpu_only
def test_synchronize_is_a_noop_on_cpu():
    assert tp.synchronize() is None
    assert tp.synchronize(0) is None
    assert tp.synchronize("cuda:0") is None


@cpu_only
def test_bf16_claim_holds_for_cpu_autocast():
    assert tp.is_bf16_supported() is True
    a = torch.ones(4, 4)
    with torch.amp.autocast(tp.device_type(), dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.bfloat16


# --- streams and events ----------------------------------------------------


def test_stream_and_event_are_classes():
    assert isinstance(tp.Event(), tp.Event)
    assert isinstance(tp.Event(enable_timing=True), tp.Event)


@cpu_only
def test_stream_is_a_class_with_cuda_stream_methods():
    s = tp.Stream(priority=-1)
    assert isinstance(s, tp.Stream)
    assert s.priority == -1 and s.device == tp.device()
    assert isinstance(tp.Stream("cuda:0"), tp.Stream)
    assert s.query() is True
    assert s.synchronize() is None
    ev = s.record_event()
    assert isinstance(ev, tp.Event) and ev.query()
    mine = tp.Event(enable_timing=True)
    assert s.record_event(mine) is mine
    s.wait_event(mine)
    s.wait_stream(tp.Stream())


@cpu_only
def test_stream_context_sets_and_restores_current_stream():
    default = tp.default_stream()
    assert tp.current_stream() is default
    s1, s2 = tp.Stream(), tp.Stream()
    with tp.stream(s1):
        assert tp.current_stream() is s1
        assert tp.default_stream() is default
        with s2:
            assert tp.current_stream() is s2
        assert tp.current_stream() is s1
    assert tp.current_stream() is default
    with tp.stream(None):
        assert tp.current_stream() is default


@cpu_only
def test_set_stream_and_thread_local_current_stream():
    s = tp.Stream()
    seen = []
    try:
        tp.set_stream(s)
        assert tp.current_stream() is s
        thread = threading.Thread(target=lambda: seen.append(tp.current_stream()))
        thread.start()
        thread.join()
        assert seen == [tp.default_stream()]
        tp.set_stream(None)  # like torch.cuda.set_stream(None): no change
        assert tp.current_stream() is s
    finally:
        tp.set_stream(tp.default_stream())


@cpu_only
def test_cpu_event_measures_host_time_in_milliseconds():
    start, end = tp.Event(enable_timing=True), tp.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record(stream=tp.current_stream())
    assert 15 <= start.elapsed_time(end) < 2000


@cpu_only
def test_cpu_event_errors_match_torch():
    timed, untimed = tp.Event(enable_timing=True), tp.Event()
    with pytest.raises(ValueError, match="recorded"):
        timed.elapsed_time(tp.Event(enable_timing=True))
    timed.record()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing"):
        timed.elapsed_time(untimed)
    with pytest.raises(RuntimeError, match="enable_timing"):
        untimed.elapsed_time(timed)


@cpu_only
def test_cpu_event_noops():
    ev = tp.Event(blocking=True, interprocess=True)
    assert ev.query() is True
    assert ev.synchronize() is None
    assert ev.wait() is None and ev.wait(tp.Stream()) is None


@cpu_only
def test_event_accepts_the_cuda_only_keywords():
    ev = tp.Event(enable_timing=True, blocking=True, interprocess=True, external=True)
    assert ev.enable_timing is True
    positional = tp.Event(True, True, True, True)  # torch.cuda.Event's order
    positional.record()
    ev.record()
    assert positional.elapsed_time(ev) >= 0


@cpu_only
@pytest.mark.parametrize("priority", [-1, 0, 2])
def test_stream_priority(priority):
    assert tp.Stream(priority=priority).priority == priority
    assert tp.Stream(None, priority).priority == priority


@cpu_only
def test_record_stream_is_a_noop_on_cpu():
    t = torch.ones(4)
    s = tp.Stream()
    assert tp.record_stream(t, s) is None
    assert tp.record_stream(t, tp.current_stream()) is None
    assert tp.record_stream(t, tp.default_stream()) is None
    assert tp.record_stream(t, torch.Stream()) is None  # torch's own raises for CPU tensors
    with pytest.raises(TypeError, match="Stream"):
        tp.record_stream(t, None)


# --- memory ----------------------------------------------------------------


@cpu_only
@pytest.mark.parametrize("dev", [None, 0, "cpu", "cuda:0", torch.device("cpu")])
def test_cpu_memory_counters_are_zero(dev):
    keep = torch.empty(1 << 20)  # host memory is not device-allocator memory
    assert tp.memory_allocated(dev) == 0
    assert tp.max_memory_allocated(dev) == 0
    assert tp.memory_reserved(dev) == 0
    assert tp.max_memory_reserved(dev) == 0
    assert tp.memory_stats(dev) == {}
    assert tp.memory_stats(dev)["allocated_bytes.all.peak"] == 0  # a counter no allocator keeps reads 0
    assert "allocated_bytes.all.peak" not in tp.memory_stats(dev)
    assert tp.reset_peak_memory_stats(dev) is None
    assert tp.reset_max_memory_allocated(dev) is None
    assert tp.empty_cache() is None
    assert tp.set_per_process_memory_fraction(0.5) is None  # no device allocator to cap
    del keep


@cpu_only
def test_cpu_memory_summary_and_mem_get_info():
    summary = tp.memory_summary()
    assert "CPU" in summary and "\n" not in summary
    assert tp.memory_summary("cuda:0", abbreviated=True) == summary
    free, total = tp.mem_get_info()
    if sys.platform.startswith("linux"):
        assert 0 < free <= total == tp.get_device_properties().total_memory


# --- seeds -----------------------------------------------------------------


@cpu_only
@pytest.mark.parametrize("seed_fn", [tp.manual_seed, tp.manual_seed_all])
def test_seeding_the_picked_cpu_device_is_reproducible(seed_fn):
    seed_fn(1234)
    first = torch.rand(4, device=tp.device())
    assert tp.initial_seed() == 1234
    seed_fn(1234)
    assert torch.equal(first, torch.rand(4, device=tp.device()))


@cpu_only
def test_rng_state_roundtrip_and_seed():
    tp.manual_seed(7)
    state = tp.get_rng_state()
    assert state.dtype == torch.uint8 and torch.equal(state, tp.get_rng_state("cuda:0"))
    first = torch.rand(3)
    tp.set_rng_state(state)
    assert torch.equal(first, torch.rand(3))
    tp.set_rng_state(state, device=0)
    assert torch.equal(first, torch.rand(3))
    tp.seed()
    assert tp.initial_seed() != 7  # 64-bit random seed: equal with ~0 probability


@cpu_only
def test_rng_state_of_every_device_roundtrips_on_the_one_generator():
    tp.manual_seed(11)
    states = tp.get_rng_state_all()
    assert len(states) == 1 and torch.equal(states[0], torch.get_rng_state())
    first = torch.rand(3, device=tp.device())
    tp.set_rng_state_all(states)
    assert torch.equal(first, torch.rand(3, device=tp.device()))
    tp.set_rng_state_all(iter(states))  # any iterable, as torch.cuda's
    assert torch.equal(first, torch.rand(3, device=tp.device()))
    tp.set_rng_state_all([])  # nothing to set, as on CUDA
    assert not torch.equal(first, torch.rand(3, device=tp.device()))


def test_ported_rng_state_save_and_restore_repeats_the_draw():
    """The seed's fork-and-restore of every device's state, ported: the draw repeats where the tensors went."""
    from pathlib import Path

    from torchport.codemods.api import migrate_code

    source = (Path(__file__).parent / "fixtures" / "cuda_api" / "rng_state_all_devices.py").read_text()
    namespace: dict = {}
    exec(compile(migrate_code(source).code, "ported.py", "exec"), namespace)
    for draw in (namespace["draw_twice"], namespace["draw_twice_random_module"]):
        first, second = draw()
        assert first.device.type == tp.device_type() and torch.equal(first, second)


@cpu_only
def test_ported_model_parallel_runs_on_the_one_device_and_warns_once_per_index(monkeypatch):
    """`cuda:0` and `cuda:1` in one module (the tutorial's model parallel), ported: it runs here, device 1 is
    the CPU, and the run says so once."""
    from pathlib import Path

    from torchport.codemods.api import migrate_code
    from torchport.runtime import _device

    monkeypatch.setattr(_device, "_WARNED", set())
    source = (Path(__file__).parent / "fixtures" / "device" / "model_parallel.py").read_text()
    namespace: dict = {}
    exec(compile(migrate_code(source).code, "ported.py", "exec"), namespace)
    with pytest.warns(UserWarning) as caught:
        outputs, extra = namespace["train_step"]()
        namespace["train_step"]()
    assert outputs.device == extra.device == tp.device() and outputs.shape == (20, 5)
    assert [str(w.message).split(";")[0] for w in caught] == ["cuda:1: this machine has 1 cpu device(s)"]
    assert all(w.filename == "ported.py" for w in caught)  # the warning points at the ported line


# --- distributed -----------------------------------------------------------


# A gloo group is made in a child process that ends with os._exit: tearing one down in this process can deadlock
# (~ProcessGroupGloo joins its run-loop thread while holding the GIL the thread waits for), hanging the suite.
def _in_a_child(body: str, tmp_path) -> None:
    script = ("import os, sys, pytest, torch\nimport torch.distributed as dist\nfrom torchport import runtime as tp\n"
              f"store = {str(tmp_path / 'store')!r}\n" + textwrap.dedent(body)
              + "print('ok', flush=True)\nos._exit(0)\n")
    done = forkrun.run(["-c", script], cwd=os.getcwd(), env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


@cpu_only
def test_fsdp_device_id_makes_a_working_cpu_fsdp(tmp_path):
    _in_a_child("""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    assert tp.fsdp_device_id(0) == torch.device("cpu")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    with pytest.raises(RuntimeError, match="non-CPU accelerator"):  # what None (or no device_id) gives
        FSDP(torch.nn.Linear(2, 2), device_id=None)
    model = FSDP(torch.nn.Linear(2, 2), device_id=tp.fsdp_device_id(torch.device("cuda", 0)))
    model(torch.ones(1, 2)).sum().backward()
    """, tmp_path)


@cpu_only
def test_distributed_choices_make_a_working_cpu_ddp(tmp_path):
    _in_a_child("""
    assert tp.distributed_backend() == "gloo"
    assert tp.ddp_device_ids([0]) is None
    assert tp.process_group_device_id(0) is None
    dist.init_process_group(
        tp.distributed_backend("cpu:gloo,cuda:nccl"), init_method=f"file://{store}",
        rank=0, world_size=tp.process_count(), device_id=tp.process_group_device_id(0),
    )
    model = torch.nn.Linear(2, 2).to(tp.device())
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=tp.ddp_device_ids([0]), output_device=tp.ddp_device_ids(0)
    )
    ddp(torch.ones(1, 2, device=tp.device())).sum().backward()
    assert model.weight.grad is not None
    """, tmp_path)


@cpu_only
@pytest.mark.parametrize(
    "backend, expected",
    [
        (None, "gloo"), ("nccl", "gloo"), ("NCCL", "gloo"), (" Nccl ", "gloo"),
        ("gloo", "gloo"), ("mpi", "mpi"), ("ucc", "ucc"),
        ("cuda:nccl,cpu:gloo", "gloo"), ("cpu:gloo,cuda:nccl", "gloo"), ("cuda:nccl", "gloo"),
        ("cpu:mpi,cuda:nccl", "cpu:mpi"),
    ],
)
def test_distributed_backend_on_cpu(backend, expected):
    assert tp.distributed_backend(backend) == expected


@cpu_only
def test_distributed_backend_keeps_non_str_and_backend_objects():
    import torch.distributed as dist

    assert tp.distributed_backend(dist.Backend.GLOO) == "gloo"
    assert tp.distributed_backend(dist.Backend("nccl")) == tp.distributed_backend()
    marker = object()
    assert tp.distributed_backend(marker) is marker


def test_a_str_of_digits_is_a_cuda_index():
    """ProteinMPNN's `f"cuda:{args.device}"`, `--device` a str ("1"): a port that gives the field alone gives a
    digit string, which names CUDA device 1 as the f-string did (the picked device elsewhere)."""
    if tp.device_type() == "cuda":
        assert tp.device("1") == torch.device("cuda", 1) and tp.device_str("1") == "cuda:1"
    else:
        assert tp.device("1") == tp.device() and tp.device_str("1") == tp.device_str()
    assert tp.device("cpu") == "cpu" and tp.device_str("-1") == "-1"  # not digits alone: unchanged


@cpu_only
@pytest.mark.parametrize("device_id", [None, 0, 3, "cuda:1", torch.device("cuda", 1)])
def test_process_group_device_id_is_none_on_cpu(device_id):
    assert tp.process_group_device_id(device_id) is None


# --- TORCHPORT_DEVICE (in process; fresh interpreters: test_runtime_isolated.py) ---


@pytest.mark.parametrize("value, expected", [("cpu", "cpu"), (" cpu ", "cpu"), ("cpu:0", "cpu"), ("", None)])
def test_env_parsing(monkeypatch, value, expected):
    monkeypatch.setenv(tp.ENV_VAR, value)
    picked = _backend._pick()
    if expected is None:  # empty means auto-detect, like unset
        monkeypatch.delenv(tp.ENV_VAR)
        assert picked == _backend._pick()
    else:
        assert picked == torch.device(expected) and picked.index is None


@pytest.mark.parametrize("value", ["meta", "bogus", "cuda:x", "hip", "mps:1"])
def test_env_unsupported_value_raises_value_error(monkeypatch, value):
    monkeypatch.setenv(tp.ENV_VAR, value)
    with pytest.raises(ValueError, match=f"TORCHPORT_DEVICE={value!r}"):
        _backend._pick()


@pytest.mark.parametrize("value", ["cuda", "cuda:1", "mps", "xpu:0"])
def test_env_unavailable_backend_raises_runtime_error(monkeypatch, value):
    kind = torch.device(value).type
    if _backend._available(kind):
        pytest.skip(f"{kind} is available here")
    monkeypatch.setenv(tp.ENV_VAR, value)
    with pytest.raises(RuntimeError, match=f"requests the {kind} backend, which is not available"):
        _backend._pick()


# --- real CUDA -----------------------------------------------------------------


@cuda_only
def test_cuda_device_and_classes():
    assert tp.device().type == "cuda" and tp.is_available()
    assert tp.device_count() == torch.cuda.device_count() >= 1
    assert tp.Stream is torch.cuda.Stream and tp.Event is torch.cuda.Event
    assert tp.distributed_backend() == "nccl" and tp.ddp_device_ids([0]) == [0]
    assert tp.device("cpu") == "cpu"


@cuda_only
def test_cuda_event_timing():
    a = torch.randn(512, 512, device=tp.device())
    start, end = tp.Event(enable_timing=True), tp.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        a = a @ a / 512
    end.record()
    tp.synchronize()
    assert start.elapsed_time(end) > 0


@cuda_only
def test_cuda_streams():
    s = tp.Stream()
    with tp.stream(s):
        assert tp.current_stream() == s
        assert tp.default_stream() != s
    assert tp.current_stream() == tp.default_stream()


@cuda_only
def test_cuda_memory_and_capability():
    keep = torch.empty(1 << 20, device=tp.device())
    assert tp.memory_allocated() >= keep.numel() * 4
    assert tp.max_memory_allocated(0) >= tp.memory_allocated("cuda:0")
    assert tp.memory_reserved() >= tp.memory_allocated()
    assert tp.memory_stats()["allocated_bytes.all.current"] == tp.memory_allocated()
    free, total = tp.mem_get_info()
    assert 0 < free <= total
    assert "memory summary" in tp.memory_summary()
    assert tp.get_device_capability() == torch.cuda.get_device_capability()
    assert tp.get_device_name() == torch.cuda.get_device_name()
    assert tp.get_device_properties().name == tp.get_device_name()


@cuda_only
def test_cuda_set_device_and_seeds():
    tp.set_device(0)
    assert tp.current_device() == 0
    with tp.device_index(0):
        assert tp.current_device() == 0
    tp.manual_seed(3)
    first = torch.rand(4, device=tp.device())
    tp.manual_seed_all(3)
    assert torch.equal(first, torch.rand(4, device=tp.device()))
    assert tp.initial_seed() == 3
    state = tp.get_rng_state()
    first = torch.rand(4, device=tp.device())
    tp.set_rng_state(state)
    assert torch.equal(first, torch.rand(4, device=tp.device()))



@cuda_only
def test_cuda_rng_state_of_every_device_and_device_numbers_are_torch_cudas():
    states = tp.get_rng_state_all()
    assert len(states) == torch.cuda.device_count()
    assert all(torch.equal(a, b) for a, b in zip(states, torch.cuda.get_rng_state_all()))
    first = torch.rand(4, device=tp.device())
    tp.set_rng_state_all(states)
    assert torch.equal(first, torch.rand(4, device=tp.device()))
    assert [tp.nth_device(i) for i in range(3)] == [torch.device("cuda", i) for i in range(3)]
    assert tp.nth_device_str(1) == "cuda:1"


@cuda_only
def test_cuda_new_functions_are_the_torch_calls():
    assert tp.process_count() == torch.cuda.device_count()
    assert tp.is_available() is torch.cuda.is_available()
    for spec in ["cuda", "cuda:0", "".join(["cuda:", "0"]), torch.device("cuda"), torch.device("cuda", 0)]:
        assert tp.device(spec) == torch.device(spec)
        assert tp.device_str(spec) == str(torch.device(spec))
    assert tp.device(0) == torch.device("cuda", 0)
    s = tp.Stream(priority=-1)
    x = torch.ones(4, device=tp.device())
    with tp.stream(s):
        y = x * 2
    assert tp.record_stream(y, s) is None
    ev = tp.Event(enable_timing=False, blocking=True, interprocess=True)
    ev.record()
    ev.synchronize()
    with tp.range("step {}", 1):
        tp.mark("mark")
    assert tp.map_location() is None
    spec = {"cuda:1": "cuda:0"}
    assert tp.map_location(spec) is spec
    assert tp.distributed_backend("cpu:gloo,cuda:nccl") == "cpu:gloo,cuda:nccl"
    assert tp.process_group_device_id(0) == 0
    assert tp.fsdp_device_id(0) == 0
