"""torchport.runtime tests of the pick itself and of simulated backends.

Fresh processes (forked from one that imported torch, see forkrun.py): import side effects, TORCHPORT_DEVICE=cpu end
to end, and the CUDA/XPU/MPS paths simulated by faking availability (nothing
touches real hardware; the CUDA-path checks replace ``torch.cuda`` functions by
recorders and assert the runtime called them with the arguments unchanged).
Every script of this module starts at once, in parallel, when the first test
needs one; each test then checks its script's output.

In process, with ``_backend._forget()`` before and after: TORCHPORT_DEVICE
errors at first use, an index pin, and the first use inside ``torch.compile``.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import forkrun
import pytest
import torch

from torchport import runtime as tp
from torchport.runtime import _backend

REPO = Path(__file__).resolve().parents[1]
ENV_VAR = "TORCHPORT_DEVICE"
NO_ACCELERATOR = not (
    torch.cuda.is_available() or torch.backends.mps.is_available() or torch.xpu.is_available()
)
needs_no_accelerator = pytest.mark.skipif(not NO_ACCELERATOR, reason="fakes accelerators")

SCRIPTS: dict[str, tuple[str, str | None]] = {}  # name -> (code, TORCHPORT_DEVICE)
_running: dict[str, forkrun.Started] = {}
_done: dict[str, tuple[int, str, str]] = {}


def script(name: str, device: str | None = None, enabled: bool = True):
    """``script(name, device)(code)``: register ``code`` to run with TORCHPORT_DEVICE=device."""
    def register(code: str) -> str:
        if enabled:
            SCRIPTS[name] = (textwrap.dedent(code), device)
        return code
    return register


def _start(name: str) -> None:
    code, device = SCRIPTS[name]
    env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, "TORCHPORT_AUDIT")}
    env["OMP_NUM_THREADS"] = "1"
    if device is not None:
        env[ENV_VAR] = device
    _running[name] = forkrun.start(["-W", "ignore", "-c", code], cwd=REPO, env=env)


def run(name: str) -> tuple[int, str, str]:
    """(returncode, stdout, stderr) of script ``name``; starts all scripts on first call."""
    if not _running:
        for other in SCRIPTS:
            _start(other)
    if name not in _done:
        done = _running[name].wait(timeout=300)
        _done[name] = (done.returncode, done.stdout, done.stderr)
    return _done[name]


def run_json(name: str) -> dict:
    code, out, err = run(name)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def teardown_module() -> None:
    for proc in _running.values():
        proc.kill()


# --- import hygiene and the lazy pick ----------------------------------------

script("lazy_import")(
    """
    import json, sys, torch
    calls = []
    def recorder(name, result):
        def call(*args, **kwargs):
            calls.append(name)
            return result
        return call
    torch.cuda.is_available = recorder("torch.cuda.is_available", False)
    torch.cuda.init = recorder("torch.cuda.init", None)
    torch.cuda._lazy_init = recorder("torch.cuda._lazy_init", None)
    torch.cuda.device_count = recorder("torch.cuda.device_count", 0)
    torch.backends.mps.is_available = recorder("torch.backends.mps.is_available", False)
    torch.xpu.is_available = recorder("torch.xpu.is_available", False)
    names = ["device", "zeros", "empty", "Tensor.to", "Tensor.cuda", "nn.Module.to",
             "cuda.is_available", "cuda.device_count", "cuda.Event", "cuda.Stream",
             "Event", "Stream", "manual_seed", "set_default_device", "set_default_tensor_type",
             "load", "serialization.location_tag"]
    def get(name):
        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    before = {n: get(n) for n in names}
    import torchport.runtime as tp
    from torchport.runtime import _backend
    result = {
        "import_calls": list(calls),
        "picked_at_import": _backend._picked(),
        "lazy_names_bound": sorted(n for n in ("Stream", "Event") if n in vars(tp)),
        "changed": [n for n in names if get(n) is not before[n]],
        "cli_modules": sorted(m for m in ("libcst", "typer", "rich", "psutil") if m in sys.modules),
        "cuda_initialized": torch.cuda.is_initialized(),
    }
    result["device"] = str(tp.device())
    result["first_use_calls"] = list(calls)
    tp.device(); tp.is_available(); tp.device_count(); tp.Stream; tp.Event; tp.synchronize()
    result["later_calls"] = list(calls)
    result["classes"] = [tp.Stream.__name__, tp.Event.__name__]
    result["dir_has_lazy"] = {"Stream", "Event"} <= set(dir(tp))
    print(json.dumps(result))
    """
)


def test_import_initialises_no_backend_and_picks_on_first_use():
    out = run_json("lazy_import")
    assert out["import_calls"] == []
    assert out["picked_at_import"] is False and out["lazy_names_bound"] == []
    assert out["changed"] == [] and out["cli_modules"] == []
    assert out["cuda_initialized"] is False
    assert out["device"] == "cpu"
    assert out["first_use_calls"] == [
        "torch.cuda.device_count", "torch.backends.mps.is_available", "torch.xpu.is_available"
    ]
    assert out["later_calls"] == out["first_use_calls"]  # picked once
    assert out["classes"] == ["HostStream", "CpuEvent"] and out["dir_has_lazy"]


# --- TORCHPORT_DEVICE --------------------------------------------------------

script("env_cpu", device="cpu")(
    """
    import torch
    from torchport import runtime as tp
    print(tp.device(), tp.is_available(), tp.device_count(), tp.process_count())
    hint = str | torch.device  # old tool regressions: union types and optimizers still work
    model = torch.nn.Linear(2, 2).to(tp.device())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(1, 2, device=tp.device())).sum().backward()
    opt.step()
    print(type(torch.device) is type, isinstance(tp.device(), torch.device), hint)
    """
)


def test_env_cpu_forces_cpu_end_to_end():
    code, out, err = run("env_cpu")
    assert code == 0, err
    assert out.split("\n")[:2] == ["cpu False 0 1", "True True str | torch.device"]


# --- in process: forget the pick, change the environment, pick again -------------


@pytest.fixture
def repick(monkeypatch):
    """Forget the pick before and after the test (monkeypatch undoes fakes afterwards)."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    _backend._forget()
    yield monkeypatch
    _backend._forget()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_env_unavailable_backend_fails_at_first_use_with_a_clear_message(repick):
    repick.setenv(ENV_VAR, "cuda:1")
    message = "TORCHPORT_DEVICE='cuda:1' requests the cuda backend, which is not available"
    for _ in range(2):  # raises at every use, not only the first
        with pytest.raises(RuntimeError, match=message):
            tp.device()
    with pytest.raises(RuntimeError, match=message):
        tp.Event  # noqa: B018 - reading it raises
    assert not _backend._picked()


def test_env_malformed_value_fails_at_first_use(repick):
    repick.setenv(ENV_VAR, "bogus")
    for fn in (tp.device, tp.device_type, tp.is_available, tp.synchronize, lambda: tp.Stream):
        with pytest.raises(ValueError, match="TORCHPORT_DEVICE='bogus' is not supported"):
            fn()


@needs_no_accelerator
def test_simulated_env_index_pins_and_sets_the_device(repick):
    calls = []
    repick.setattr(torch.cuda, "is_available", lambda: True)
    repick.setattr(torch.cuda, "device_count", lambda: 2)
    repick.setattr(torch.cuda, "set_device", calls.append)
    repick.setenv(ENV_VAR, "cuda:1")
    # tp.device("cuda") is torch.device("cuda"): the current device, made cuda:1 by the pin
    shown = [str(tp.device()), str(tp.device("cuda")), str(tp.device(0)), tp.device_str(), calls]
    assert shown == ["cuda:1", "cuda", "cuda:0", "cuda:1", [1]]
    _backend._forget()
    repick.setenv(ENV_VAR, "cuda:2")
    with pytest.raises(RuntimeError, match="only 2 cuda device.s. are visible"):
        tp.device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="on CUDA tp.range is torch.cuda.nvtx.range, which "
                    "fullgraph refuses as it does the original call (checked on an H100)")
def test_first_use_inside_compiled_code_picks_without_graph_breaks(repick):
    torch._dynamo.reset()
    repick.setattr(_backend, "_resets", [*_backend._resets, torch._dynamo.reset])
    assert not _backend._picked()

    def step(x):
        ev = tp.Event(enable_timing=True)
        ev.record()
        y = x.to(tp.device()) + torch.zeros(2, device=tp.device("".join(["cuda:", "0"])))
        if tp.is_available() or tp.device_count() > 0:
            y = y + 5
        if tp.device_type() == tp.device().type:
            y = y * 2
        with tp.range("step {}", 1):
            y = y - 1
        return y.to(tp.device_str())

    compiled = torch.compile(step, fullgraph=True, backend="eager")
    first = compiled(torch.ones(2))
    assert _backend._picked()
    assert torch.equal(first, compiled(torch.ones(2)))
    assert torch.equal(first, step(torch.ones(2)))


# --- simulated CUDA: every call is the torch.cuda call itself ---------------------

script("sim_cuda", enabled=NO_ACCELERATOR)(
    """
    import json, torch
    import torch.distributed as dist
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 4
    from torchport import runtime as tp
    D = torch.device
    out = {}
    out["mapping"] = [
        [tp.device_type(), tp.is_available(), tp.device_count(), tp.process_count(),
         tp.distributed_backend(), tp.ddp_device_ids([1])],
        [str(d) for d in (tp.device(), tp.device(1), tp.device("cuda"), tp.device("cuda:12"),
                          tp.device(D("cuda", 3)), tp.device(D("cuda")))],
        [tp.device_str(), tp.device_str(1), tp.device_str("cuda:2"), tp.device("cpu"), tp.device("meta")],
        [tp.Stream is torch.cuda.Stream, tp.Event is torch.cuda.Event],
    ]
    specs = ["cuda", "cuda:0", "".join(["cuda:", "3"]), "cuda:63", "cuda:64", "cuda:100",
             D("cuda"), D("cuda", 5), "cuda:" + "7"]
    out["unequal"] = [repr(s) for s in specs
                      if not (tp.device(s) == D(s) and tp.device_str(s) == str(D(s)))]
    out["unequal"] += [i for i in range(8) if tp.device(i) != D("cuda", i)]
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out["nth"] = [str(tp.nth_device(i)) for i in (0, 1, 12)] + [tp.nth_device_str(3)]
    out["nth_warnings"] = len(caught)
    out["same_object"] = tp.device(specs[7]) is specs[7]
    errors = []
    for bad in ["cuda:x", "cuda:", -1]:
        try:
            tp.device(bad)
        except RuntimeError:
            errors.append(True)
    out["errors"] = errors

    calls = []
    def recorder(name):
        def call(*args, **kwargs):
            calls.append((name, args, kwargs))
            return ("result of", name)
        return call
    cuda_names = [
        "is_available", "device_count", "current_device", "set_device", "device",
        "get_device_name", "get_device_properties", "get_device_capability", "synchronize",
        "is_bf16_supported", "empty_cache", "set_per_process_memory_fraction", "memory_allocated",
        "max_memory_allocated",
        "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
        "reset_max_memory_allocated", "memory_stats", "memory_summary", "mem_get_info",
        "manual_seed", "manual_seed_all", "seed", "initial_seed", "get_rng_state",
        "set_rng_state", "get_rng_state_all", "set_rng_state_all", "stream", "current_stream", "default_stream",
        "set_stream",
    ]
    for name in cuda_names:
        setattr(torch.cuda, name, recorder("torch.cuda." + name))
    for name in ["range_push", "range_pop", "range", "mark"]:
        setattr(torch.cuda.nvtx, name, recorder("torch.cuda.nvtx." + name))
    torch.set_default_tensor_type = recorder("torch.set_default_tensor_type")

    class Obj:  # a tensor / batch stand-in
        def record_stream(self, stream):
            return recorder("Tensor.record_stream")(stream)
        def pin_memory(self):
            return recorder("Tensor.pin_memory")()

    state, states, stream, obj = object(), (object(), object()), object(), Obj()
    # (runtime call, args, kwargs, torch call, args it must receive)
    cases = [
        ("is_available", (), {}, "torch.cuda.is_available", ()),
        ("device_count", (), {}, "torch.cuda.device_count", ()),
        ("process_count", (), {}, "torch.cuda.device_count", ()),
        ("current_device", (), {}, "torch.cuda.current_device", ()),
        ("set_device", ("cuda:1",), {}, "torch.cuda.set_device", ("cuda:1",)),
        ("set_device", (None,), {}, "torch.cuda.set_device", (None,)),
        ("set_device", (2,), {}, "torch.cuda.set_device", (2,)),
        ("device_index", (D("cuda", 1),), {}, "torch.cuda.device", (D("cuda", 1),)),
        ("device_index", (None,), {}, "torch.cuda.device", (None,)),
        ("get_device_name", (), {}, "torch.cuda.get_device_name", (None,)),
        ("get_device_name", (1,), {}, "torch.cuda.get_device_name", (1,)),
        ("get_device_properties", ("cuda:0",), {}, "torch.cuda.get_device_properties", ("cuda:0",)),
        ("get_device_capability", (), {}, "torch.cuda.get_device_capability", (None,)),
        ("synchronize", (3,), {}, "torch.cuda.synchronize", (3,)),
        ("synchronize", (), {}, "torch.cuda.synchronize", (None,)),
        ("is_bf16_supported", (False,), {}, "torch.cuda.is_bf16_supported", (False,)),
        ("is_bf16_supported", (), {}, "torch.cuda.is_bf16_supported", (True,)),
        ("empty_cache", (), {}, "torch.cuda.empty_cache", ()),
        ("set_per_process_memory_fraction", (0.5,), {}, "torch.cuda.set_per_process_memory_fraction", (0.5, None)),
        ("set_per_process_memory_fraction", (0.5, 1), {}, "torch.cuda.set_per_process_memory_fraction", (0.5, 1)),
        ("memory_allocated", (1,), {}, "torch.cuda.memory_allocated", (1,)),
        ("max_memory_allocated", ("cuda:1",), {}, "torch.cuda.max_memory_allocated", ("cuda:1",)),
        ("memory_reserved", (), {}, "torch.cuda.memory_reserved", (None,)),
        ("max_memory_reserved", (D("cuda", 0),), {}, "torch.cuda.max_memory_reserved", (D("cuda", 0),)),
        ("reset_peak_memory_stats", (0,), {}, "torch.cuda.reset_peak_memory_stats", (0,)),
        ("reset_max_memory_allocated", (0,), {}, "torch.cuda.reset_max_memory_allocated", (0,)),
        ("memory_stats", ("cuda",), {}, "torch.cuda.memory_stats", ("cuda",)),
        ("memory_summary", (1,), {"abbreviated": True}, "torch.cuda.memory_summary", (1, True)),
        ("mem_get_info", (2,), {}, "torch.cuda.mem_get_info", (2,)),
        ("manual_seed", (7,), {}, "torch.cuda.manual_seed", (7,)),
        ("manual_seed_all", (7,), {}, "torch.cuda.manual_seed_all", (7,)),
        ("seed", (), {}, "torch.cuda.seed", ()),
        ("initial_seed", (), {}, "torch.cuda.initial_seed", ()),
        ("get_rng_state", (), {}, "torch.cuda.get_rng_state", ("cuda",)),
        ("get_rng_state", (1,), {}, "torch.cuda.get_rng_state", (1,)),
        ("set_rng_state", (state,), {}, "torch.cuda.set_rng_state", (state, "cuda")),
        ("set_rng_state", (state, "cuda:1"), {}, "torch.cuda.set_rng_state", (state, "cuda:1")),
        ("set_rng_state", (), {"new_state": state, "device": 1}, "torch.cuda.set_rng_state", (state, 1)),
        ("get_rng_state_all", (), {}, "torch.cuda.get_rng_state_all", ()),
        ("set_rng_state_all", (states,), {}, "torch.cuda.set_rng_state_all", (states,)),
        ("stream", (stream,), {}, "torch.cuda.stream", (stream,)),
        ("stream", (None,), {}, "torch.cuda.stream", (None,)),
        ("current_stream", (1,), {}, "torch.cuda.current_stream", (1,)),
        ("default_stream", (), {}, "torch.cuda.default_stream", (None,)),
        ("set_stream", (stream,), {}, "torch.cuda.set_stream", (stream,)),
        ("set_stream", (None,), {}, "torch.cuda.set_stream", (None,)),
        ("record_stream", (obj, stream), {}, "Tensor.record_stream", (stream,)),
        ("pin_memory", (obj,), {}, "Tensor.pin_memory", ()),
        ("range_push", ("fwd",), {}, "torch.cuda.nvtx.range_push", ("fwd",)),
        ("range_pop", (), {}, "torch.cuda.nvtx.range_pop", ()),
        ("mark", ("here",), {}, "torch.cuda.nvtx.mark", ("here",)),
        ("set_default_tensor_type", (torch.cuda.HalfTensor,), {}, "torch.set_default_tensor_type",
         (torch.cuda.HalfTensor,)),
        ("set_default_tensor_type", ("torch.cuda.HalfTensor",), {}, "torch.set_default_tensor_type",
         ("torch.cuda.HalfTensor",)),
    ]
    wrong = []
    for fn, args, kwargs, target, expected in cases:
        calls.clear()
        result = getattr(tp, fn)(*args, **kwargs)
        if calls != [(target, expected, {})] or result != ("result of", target):
            wrong.append(f"tp.{fn}{args}{kwargs}: calls={calls!r} result={result!r}")
    calls.clear()
    result = tp.range("step {} {k}", 1, k=2)
    if calls != [("torch.cuda.nvtx.range", ("step {} {k}", 1), {"k": 2})] \
or result != ("result of", "torch.cuda.nvtx.range"):
        wrong.append(f"tp.range: {calls!r}")
    out["wrong"] = wrong

    fn = lambda storage, location: None
    backend_obj = dist.Backend("nccl")
    passthrough = [None, "cuda:1", D("cuda", 1), {"cuda:1": "cuda:0"}, fn, "cpu"]
    out["map_location_identity"] = [tp.map_location(s) is s for s in passthrough]
    out["backends"] = [tp.distributed_backend(b) for b in
                       [None, "nccl", "NCCL", "gloo", "cpu:gloo,cuda:nccl", "mpi"]]
    out["backend_identity"] = tp.distributed_backend(backend_obj) is backend_obj
    dev1 = D("cuda", 1)
    out["device_id_identity"] = [tp.process_group_device_id(x) is x for x in (None, 0, 3, dev1)]
    out["fsdp_device_id_identity"] = [tp.fsdp_device_id(x) is x for x in (None, 0, 3, dev1)]
    print(json.dumps(out))
    """
)


@needs_no_accelerator
def test_simulated_cuda_mapping_and_classes():
    out = run_json("sim_cuda")
    assert out["mapping"] == [
        ["cuda", True, 4, 4, "nccl", [1]],
        ["cuda", "cuda:1", "cuda", "cuda:12", "cuda:3", "cuda"],
        ["cuda", "cuda:1", "cuda:2", "cpu", "meta"],
        [True, True],
    ]


@needs_no_accelerator
def test_simulated_cuda_device_equals_torch_device():
    out = run_json("sim_cuda")
    assert out["unequal"] == [] and out["same_object"] is True
    # several device numbers stay what they name on CUDA, beyond the count too (it fails where the original did)
    assert out["nth"] == ["cuda:0", "cuda:1", "cuda:12", "cuda:3"] and out["nth_warnings"] == 0
    assert out["errors"] == [True, True, True]


@needs_no_accelerator
def test_simulated_cuda_calls_are_the_torch_cuda_calls():
    out = run_json("sim_cuda")
    assert out["wrong"] == []


@needs_no_accelerator
def test_simulated_cuda_passes_map_location_backend_and_device_id_through():
    out = run_json("sim_cuda")
    assert out["map_location_identity"] == [True] * 6
    assert out["backends"] == ["nccl", "nccl", "NCCL", "gloo", "cpu:gloo,cuda:nccl", "mpi"]
    assert out["backend_identity"] is True
    assert out["device_id_identity"] == [True] * 4
    assert out["fsdp_device_id_identity"] == [True] * 4


# --- simulated XPU and MPS ------------------------------------------------------

COMMON = """
import json, torch
import torch.distributed as dist
{fake}
from torchport import runtime as tp
D = torch.device
calls = []
def recorder(name):
    def call(*args, **kwargs):
        calls.append([name, [str(a) for a in args]])
    return call
class Obj:
    def record_stream(self, stream):
        calls.append(["Tensor.record_stream", [type(stream).__name__]])
out = {{}}
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out["nth"] = [str(tp.nth_device(i)) for i in (0, 1, 3, 1)] + [tp.nth_device_str(3)]
out["nth_warnings"] = [str(w.message).split(";")[0] for w in caught]
out["mapping"] = [
    [tp.device_type(), tp.is_available(), tp.device_count(), tp.process_count(),
     tp.distributed_backend(), tp.ddp_device_ids([1])],
    [str(d) for d in (tp.device(), tp.device(1), tp.device("cuda"), tp.device("cuda:12"),
                      tp.device(D("cuda", 3)), tp.device(D("cuda")))],
    [tp.device_str(), tp.device_str(1), tp.device_str("cuda:2"), tp.device("cpu"), tp.device("meta")],
    [tp.Stream.__module__ + "." + tp.Stream.__qualname__, tp.Event.__module__ + "." + tp.Event.__qualname__],
]
ev = tp.Event(enable_timing=True, blocking=True, interprocess=True, external=True)
out["event"] = [type(ev).__name__, ev.enable_timing]
out["backends"] = [tp.distributed_backend(b) for b in
                   ["nccl", "NCCL", "gloo", "mpi", "cpu:gloo,cuda:nccl", "cuda:nccl"]]
dist.is_xccl_available = lambda: True
out["backends_xccl"] = [tp.distributed_backend(b) for b in [None, "nccl", "cpu:gloo,cuda:nccl"]]
out["device_id"] = [str(tp.process_group_device_id(x)) for x in (None, 0, "cuda:1", D("cuda", 1))]
loc = tp.map_location()
out["map_location"] = [
    isinstance(loc, dict), loc.get("cuda:1", "cuda:1"), loc.get("cpu", "cpu"), loc.get("meta", "meta"),
    tp.map_location("cuda:1"), str(tp.map_location(D("cuda", 1))), tp.map_location("cpu"),
    tp.map_location({{"cuda:1": "cuda:0"}}).get("cuda:1", "cuda:1"),
]
torch.set_default_tensor_type = recorder("torch.set_default_tensor_type")
torch.set_default_device = recorder("torch.set_default_device")
tp.set_default_tensor_type(torch.cuda.HalfTensor)
tp.set_default_tensor_type("torch.FloatTensor")
tp.set_default_tensor_type(torch.DoubleTensor)
{extra}
out["calls"] = calls
print(json.dumps(out))
"""

XPU_FAKE = """
torch.xpu.is_available = lambda: True
torch.xpu.device_count = lambda: 2
class FakeXpuEvent:  # torch.xpu.Event needs XPU hardware; same signature
    def __new__(cls, enable_timing=False):
        self = object.__new__(cls)
        self.enable_timing = enable_timing
        return self
torch.xpu.Event = FakeXpuEvent
"""
XPU_EXTRA = """
torch.xpu.get_rng_state_all = recorder("torch.xpu.get_rng_state_all")
torch.xpu.set_rng_state_all = recorder("torch.xpu.set_rng_state_all")
tp.get_rng_state_all()
tp.set_rng_state_all(["s0", "s1"])
tp.record_stream(Obj(), object())  # passed through to Tensor.record_stream on XPU
out["event_is_xpu_event"] = isinstance(ev, FakeXpuEvent)
"""
MPS_FAKE = """
torch.backends.mps.is_available = lambda: True
class FakeMpsEvent:  # torch.mps.Event needs MPS hardware
    def __init__(self, enable_timing=False):
        self.enable_timing = enable_timing
torch.mps.Event = FakeMpsEvent
"""
MPS_EXTRA = """
torch.mps.get_rng_state = lambda device="mps": "mps state"
torch.mps.set_rng_state = recorder("torch.mps.set_rng_state")
out["rng_state_all"] = tp.get_rng_state_all()
tp.set_rng_state_all(iter(["s0", "s1"]))  # one generator: device 0's state
tp.set_rng_state_all([])
tp.record_stream(Obj(), tp.Stream())  # a no-op: nothing recorded
tp.record_stream(torch.ones(1), tp.current_stream())
out["stream_priority"] = tp.Stream(priority=-1).priority
# a program that chose the CPU itself (`--cpu`) asks the CPU's counters: 0, as torch.cuda's were without CUDA
out["cpu_counters"] = [tp.max_memory_allocated(torch.device("cpu")), tp.memory_reserved("cpu"), tp.memory_stats("cpu")]
"""
script("sim_xpu", enabled=NO_ACCELERATOR)(COMMON.format(fake=XPU_FAKE, extra=XPU_EXTRA))
script("sim_mps", enabled=NO_ACCELERATOR)(COMMON.format(fake=MPS_FAKE, extra=MPS_EXTRA))


@needs_no_accelerator
def test_simulated_xpu():
    out = run_json("sim_xpu")
    # several device numbers: those the machine has, then the picked device, warned once per index
    assert out["nth"] == ["xpu:0", "xpu:1", "xpu", "xpu:1", "xpu"]
    assert out["nth_warnings"] == ["cuda:3: this machine has 2 xpu device(s)"]
    assert out["mapping"] == [
        ["xpu", True, 2, 2, "gloo", [1]],  # xccl is not built into this torch
        ["xpu", "xpu:1", "xpu", "xpu:12", "xpu:3", "xpu"],
        ["xpu", "xpu:1", "xpu:2", "cpu", "meta"],
        ["torch.xpu.streams.Stream", "torchport.runtime._streams.XpuEvent"],
    ]
    assert out["event"] == ["XpuEvent", True] and out["event_is_xpu_event"] is True
    assert out["backends"] == ["gloo", "gloo", "gloo", "mpi", "cpu:gloo,xpu:gloo", "xpu:gloo"]
    assert out["backends_xccl"] == ["xccl", "xccl", "cpu:gloo,xpu:xccl"]
    assert out["device_id"] == ["None", "xpu:0", "xpu:1", "xpu:1"]
    assert out["map_location"] == [True, "xpu:1", "cpu", "meta", "xpu:1", "xpu:1", "cpu", "xpu:0"]
    assert out["calls"] == [
        ["torch.set_default_tensor_type", ["<class 'torch.HalfTensor'>"]],
        ["torch.set_default_device", ["xpu"]],
        ["torch.set_default_tensor_type", ["torch.FloatTensor"]],
        ["torch.set_default_device", ["None"]],
        ["torch.set_default_tensor_type", ["<class 'torch.DoubleTensor'>"]],
        ["torch.xpu.get_rng_state_all", []],
        ["torch.xpu.set_rng_state_all", ["['s0', 's1']"]],
        ["Tensor.record_stream", ["object"]],
    ]


script("sim_mps_group", enabled=NO_ACCELERATOR)(
    """
    import json, os, tempfile, torch
    import torch.distributed as dist
    torch.backends.mps.is_available = lambda: True
    from torchport import runtime as tp
    before = [str(tp.device()), tp.device_str(), tp.device_type(), str(tp.device(0))]
    store = os.path.join(tempfile.mkdtemp(), "store")
    dist.init_process_group(tp.distributed_backend(), init_method="file://" + store, rank=0, world_size=1)
    after = [tp.device_type(), str(tp.device()), tp.device_str(), str(tp.device(0))]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).to(tp.device()),
                                                      device_ids=tp.ddp_device_ids([0]))
    loss = torch.zeros(2).to(tp.device(0))
    dist.all_reduce(loss)
    print(json.dumps({"before": before, "after": after, "ddp": type(model).__name__}), flush=True)
    os._exit(0)  # no teardown: destroying a gloo group can deadlock (see tests/test_runtime.py)
    """
)


@needs_no_accelerator
def test_simulated_mps_moves_to_the_cpu_in_a_process_group():
    """gloo carries no MPS tensors: once a group exists, DDP and collectives run on the CPU."""
    out = run_json("sim_mps_group")
    assert out["before"] == ["mps", "mps", "mps", "mps:0"]
    assert out["after"] == ["cpu", "cpu", "cpu", "cpu"]
    assert out["ddp"] == "DistributedDataParallel"


@needs_no_accelerator
def test_simulated_mps():
    out = run_json("sim_mps")
    # an index gives what an MPS tensor reports (`mps:0`), as `cuda:0` does on CUDA (torcheval compares them);
    # one beyond the count the picked device, as on XPU
    assert out["nth"] == ["mps:0", "mps", "mps", "mps", "mps"]
    assert out["nth_warnings"] == [f"cuda:{i}: this machine has 1 mps device(s)" for i in (1, 3)]
    assert out["mapping"] == [
        ["mps", True, 1, 1, "gloo", None],
        ["mps", "mps:0", "mps", "mps:0", "mps:0", "mps"],
        ["mps", "mps:0", "mps:0", "cpu", "meta"],
        ["torchport.runtime._streams.HostStream", "torchport.runtime._streams.MpsEvent"],
    ]
    assert out["event"] == ["MpsEvent", True] and out["stream_priority"] == -1
    assert out["backends"] == ["gloo", "gloo", "gloo", "mpi", "cpu:gloo,mps:gloo", "mps:gloo"]
    assert out["backends_xccl"] == ["gloo", "gloo", "cpu:gloo,mps:gloo"]  # xccl is XPU only
    assert out["device_id"] == ["None"] * 4
    assert out["map_location"] == [True, "mps:0", "cpu", "meta", "mps:0", "mps:0", "cpu", "mps:0"]
    assert out["calls"] == [
        ["torch.set_default_tensor_type", ["<class 'torch.HalfTensor'>"]],
        ["torch.set_default_device", ["mps"]],
        ["torch.set_default_tensor_type", ["torch.FloatTensor"]],
        ["torch.set_default_device", ["None"]],
        ["torch.set_default_tensor_type", ["<class 'torch.DoubleTensor'>"]],
        ["torch.mps.set_rng_state", ["s0"]],
    ]
    assert out["rng_state_all"] == ["mps state"]
    assert out["cpu_counters"] == [0, 0, {}]


# --- the availability idiom and programs kept off MPS ---------------------------

script("sim_cuda_unusable", enabled=NO_ACCELERATOR)(
    """
    import json, torch
    torch.cuda.device_count = lambda: 1  # NVML sees a GPU...
    torch.cuda.is_available = lambda: False  # ...that the CUDA runtime cannot use
    from torchport import runtime as tp
    print(json.dumps([tp.device_type(), str(tp.available_device()), tp.available_device_str(),
                      tp.available_device_type(), str(tp.available_device(0)), tp.available_device_str("cuda:1")]))
    """
)


@needs_no_accelerator
def test_availability_idiom_asks_torch_cuda_is_available_on_cuda():
    """`"cuda" if torch.cuda.is_available() else "cpu"` falls back to the CPU where CUDA is unusable, as before."""
    assert run_json("sim_cuda_unusable") == ["cuda", "cpu", "cpu", "cpu", "cpu", "cpu"]


script("sim_mps_avoided", enabled=NO_ACCELERATOR)(
    """
    import json, torch, warnings
    torch.backends.mps.is_available = lambda: True
    from torchport import runtime as tp
    from torchport.runtime import _backend
    picked_first = [tp.device_type(), tp.available_device_str()]
    with warnings.catch_warnings(record=True) as late:
        warnings.simplefilter("always")
        tp.avoid_mps("float64 at sampler.py:3")  # after an MPS pick: the pick becomes the CPU
    after = [tp.device_type(), str(tp.device("cuda:0")), tp.is_available(), tp.avoided_mps()]
    _backend._forget()
    with warnings.catch_warnings(record=True) as early:
        warnings.simplefilter("always")
        tp.avoid_mps("float64 at sampler.py:3")  # before any pick: nothing was made on MPS
    again = tp.device_type()  # a new pick skips MPS
    print(json.dumps({"first": picked_first, "after": after, "again": again,
                      "warned": [[str(w.message)[:40] for w in late], len(early)]}))
    """
)


@needs_no_accelerator
def test_avoid_mps_keeps_a_program_on_the_cpu_of_a_mac():
    out = run_json("sim_mps_avoided")
    assert out["first"] == ["mps", "mps"]
    assert out["after"] == ["cpu", "cpu", False, "float64 at sampler.py:3"]
    assert out["again"] == "cpu"
    # an MPS pick came first: what was made from it stays on MPS, and the call says so
    assert out["warned"] == [["tp.avoid_mps() came after MPS was picked"], 0]


_KEPT_CUDA_OR_CPU = """
    import json, torch, warnings
    accelerator = "{accelerator}"
    torch.backends.mps.is_available = lambda: accelerator == "mps"
    torch.xpu.is_available = lambda: accelerator == "xpu"
    from torchport import runtime as tp
    from torchport.runtime import _backend
    picked_first = tp.device_type()
    with warnings.catch_warnings(record=True) as late:
        warnings.simplefilter("always")
        tp.keep_cuda_or_cpu("a device choice kept CUDA-or-CPU, options.py:115")  # after the pick: the CPU
    after = [tp.device_type(), str(tp.device("cuda:0")), tp.avoided_mps()]
    _backend._forget()
    again = tp.device_type()  # a new pick skips MPS and XPU
    print(json.dumps({{"first": picked_first, "after": after, "again": again,
                      "warned": [str(w.message)[:47] for w in late]}}))
    """
for _accelerator in ("mps", "xpu"):
    script(f"sim_kept_cuda_or_cpu_{_accelerator}", enabled=NO_ACCELERATOR)(
        _KEPT_CUDA_OR_CPU.format(accelerator=_accelerator))


@needs_no_accelerator
def test_keep_cuda_or_cpu_keeps_a_program_on_the_cpu_of_a_mac_and_of_an_intel_gpu():
    """A program that keeps a device choice CUDA-or-CPU elsewhere runs on the CPU wherever CUDA is missing: on an
    Intel GPU as on a Mac (`tp.avoid_mps` alone would leave its moved data on XPU, apart from the kept choice)."""
    for accelerator in ("mps", "xpu"):
        out = run_json(f"sim_kept_cuda_or_cpu_{accelerator}")
        assert out["first"] == accelerator
        assert out["after"] == ["cpu", "cpu", "a device choice kept CUDA-or-CPU, options.py:115"]
        assert out["again"] == "cpu"
        assert out["warned"] == [f"tp.keep_cuda_or_cpu() came after {accelerator.upper()} was picked"]


script("sim_mps_hidden_gpus", enabled=NO_ACCELERATOR)(
    """
    import json, os, torch
    torch.backends.mps.is_available = lambda: True
    from torchport import runtime as tp
    from torchport.runtime import _backend
    picks = []
    for visible in (None, "-1", "", "0", "0,-1", " -1,0"):
        _backend._forget()
        if visible is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
        picks.append(tp.device_type())
    print(json.dumps(picks))
    """
)


@needs_no_accelerator
def test_hidden_gpus_keep_a_program_on_the_cpu_of_a_mac():
    # EfficientDet's train.py sets CUDA_VISIBLE_DEVICES=-1 for `num_gpus: 0`; unported it then ran on the CPU
    assert run_json("sim_mps_hidden_gpus") == ["mps", "cpu", "cpu", "mps", "mps", "cpu"]


script("sim_mps_several_processes", enabled=NO_ACCELERATOR)(
    """
    import json, os, torch
    torch.backends.mps.is_available = lambda: True
    from torchport import runtime as tp
    from torchport.runtime import _backend
    picks = []
    for world in (None, "1", "2", "x"):
        _backend._forget()
        if world is None:
            os.environ.pop("WORLD_SIZE", None)
        else:
            os.environ["WORLD_SIZE"] = world
        picks.append(str(tp.device(0)))
    os.environ["WORLD_SIZE"] = "1"
    os.environ["TORCHELASTIC_RUN_ID"] = "none"  # torchrun --nproc_per_node 1
    _backend._forget()
    picks.append(str(tp.device(0)))
    print(json.dumps(picks))
    """
)


@needs_no_accelerator
def test_one_of_several_processes_takes_the_cpu_of_a_mac_from_the_start():
    # dialogue-generation's train.py takes `tp.device(args.local_rank)` before init_process_group: under torchrun on
    # a Mac that device stayed MPS, and DDP over gloo raised "No backend type associated with device type mps"
    # (with one process too: DDP checks its parameters over gloo)
    assert run_json("sim_mps_several_processes") == ["mps:0", "mps:0", "cpu", "mps:0", "cpu"]


def test_avoid_mps_changes_nothing_off_mps(repick):
    before = tp.device()
    tp.avoid_mps("float64")
    try:
        assert tp.device() == before and tp.avoided_mps() == "float64"
    finally:
        _backend._avoided = None


script("sim_xpu_gloo_group", enabled=NO_ACCELERATOR)(
    """
    import json, os, tempfile, torch
    import torch.distributed as dist
    torch.xpu.is_available = lambda: True
    torch.xpu.device_count = lambda: 1
    from torchport import runtime as tp
    before = tp.device_type()
    store = os.path.join(tempfile.mkdtemp(), "store")
    dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    ids = tp.ddp_device_ids([0])  # asked first: DDP over a model the script moved before the group existed
    after = [tp.device_type(), str(tp.device()), tp.device_str()]
    t = torch.ones(2).to(tp.device())
    dist.all_reduce(t)
    print(json.dumps({"before": before, "after": after, "ids": ids}), flush=True)
    os._exit(0)  # no teardown: destroying a gloo group can deadlock (see tests/test_runtime.py)
    """
)


@needs_no_accelerator
def test_simulated_xpu_in_a_gloo_group_computes_on_the_cpu():
    """Code that chose gloo (because CUDA was missing) ran on the CPU; gloo carries no XPU tensors."""
    out = run_json("sim_xpu_gloo_group")
    assert out == {"before": "xpu", "after": ["cpu", "cpu", "cpu"], "ids": None}
