"""Pinned memory, on_accelerator, profiler ranges, set_default_tensor_type and map_location."""

from __future__ import annotations

import warnings

import pytest
import torch

from torchport import runtime as tp

cpu_only = pytest.mark.skipif(tp.device_type() != "cpu", reason="checks the CPU backend")
# On CUDA the runtime is torch.cuda.nvtx itself (checked on an H100): NVTX pops return -2 with no tool
# attached and it formats the message itself. These check the profiler ranges used elsewhere.
off_cuda = pytest.mark.skipif(tp.device_type() == "cuda", reason="tp.range* is torch.cuda.nvtx.* on CUDA")


class Batch:
    def __init__(self) -> None:
        self.pinned = False

    def pin_memory(self) -> Batch:
        self.pinned = True
        return self


def test_pin_memory_matches_the_backend() -> None:
    pinnable = tp.device_type() in ("cuda", "xpu")
    assert tp.pin_memory_available() is pinnable
    tensor = torch.ones(2)
    assert tp.pin_memory(tensor).is_pinned() is pinnable
    # a new tensor wherever torch's pin_memory() gives one: freeing the original keeps the copy
    copy = tp.pin_memory(tensor)
    assert copy is not tensor and copy.data_ptr() != tensor.data_ptr()
    tensor.untyped_storage().resize_(0)
    assert copy.tolist() == [1.0, 1.0]
    source = torch.arange(6.0).reshape(2, 3).t()
    strided = tp.pin_memory(source)  # strides kept, as Tensor.pin_memory keeps them (seen on an H100)
    assert strided.stride() == source.stride() and strided.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert tp.pin_memory(Batch()).pinned is pinnable
    # the flag form is accepted where torch takes pin_memory=
    assert torch.empty(2, pin_memory=tp.pin_memory_available()).shape == (2,)


def test_on_accelerator_is_false_on_cpu_and_checks_modules() -> None:
    model = torch.nn.Linear(2, 2).to(tp.device())
    expected = tp.is_available()
    assert tp.on_accelerator(torch.ones(1, device=tp.device())) is expected
    assert tp.on_accelerator(model) is expected
    assert tp.on_accelerator(torch.nn.ReLU()) is False  # no parameters, nowhere
    assert tp.on_accelerator(torch.ones(1, device="cpu")) is False


@off_cuda
def test_ranges_show_in_the_profiler_and_pop_like_nvtx() -> None:
    assert tp.range_pop() == -1  # nothing open
    with torch.profiler.profile() as prof:
        assert tp.range_push("outer") == 0
        assert tp.range_push("inner") == 1
        torch.ones(3).sum()
        assert tp.range_pop() == 1
        assert tp.range_pop() == 0
    names = {event.name for event in prof.events()}
    if tp.device_type() != "cuda":
        assert {"outer", "inner"} <= names


@off_cuda
def test_range_is_a_context_manager_and_a_decorator() -> None:
    @tp.range("decorated {}", 7)
    def work() -> torch.Tensor:
        return torch.ones(3).sum()

    with torch.profiler.profile() as prof:
        with tp.range("step {} of {total}", 1, total=2):
            torch.ones(3).sum()
        work()
        work()  # a decorator range is entered once per call
        tp.mark("checkpoint")
        with tp.range("plain {braces}"):  # no arguments: msg is used as given, like torch
            pass
    names = [event.name for event in prof.events()]
    if tp.device_type() != "cuda":
        assert "step 1 of 2" in names and "checkpoint" in names
        assert names.count("decorated 7") == 2
        assert "plain {braces}" in names
    assert tp.range_pop() == -1  # ranges do not leak into the range_push stack


@off_cuda
def test_ranges_are_per_thread() -> None:
    import threading

    assert tp.range_push("main") == 0
    seen = []
    thread = threading.Thread(target=lambda: seen.extend([tp.range_pop(), tp.range_push("t"), tp.range_pop()]))
    thread.start()
    thread.join()
    assert seen == [-1, 0, 0]
    assert tp.range_pop() == 0


# --- set_default_tensor_type -----------------------------------------------------


@pytest.fixture
def restore_default_type():
    dtype = torch.get_default_dtype()
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_default_tensor_type(torch.FloatTensor)
    torch.set_default_device(None)
    torch.set_default_dtype(dtype)


@cpu_only
@pytest.mark.parametrize("half", [torch.cuda.HalfTensor, "torch.cuda.HalfTensor"])
@pytest.mark.parametrize("back", [torch.FloatTensor, "torch.FloatTensor"])
def test_set_default_tensor_type_round_trip_on_cpu(restore_default_type, half, back) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates set_default_tensor_type
        tp.set_default_tensor_type(half)
        x = torch.zeros(2)
        assert x.dtype == torch.float16 and x.device == tp.device() and x.type() == "torch.HalfTensor"
        assert torch.get_default_device() == torch.device("cpu")
        assert torch.tensor([1.5]).dtype == torch.float16
        tp.set_default_tensor_type(back)
        y = torch.zeros(2)
        assert y.dtype == torch.float32 and y.device.type == "cpu" and y.type() == "torch.FloatTensor"
        tp.set_default_tensor_type(torch.cuda.DoubleTensor)
        assert torch.ones(1).dtype == torch.float64
        tp.set_default_tensor_type("torch.DoubleTensor")
        assert torch.ones(1).dtype == torch.float64


@cpu_only
@pytest.mark.parametrize(
    "bad, error",
    [(torch.cuda.LongTensor, "floating-point"), ("torch.cuda.IntTensor", "floating-point"),
     (torch.cuda.sparse.FloatTensor, "dense"), (torch.LongTensor, "floating-point")],
)
def test_set_default_tensor_type_errors_match_torch(restore_default_type, bad, error) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=error):
            tp.set_default_tensor_type(bad)
    assert torch.get_default_dtype() == torch.float32


# --- map_location ---------------------------------------------------------------------


@pytest.fixture
def cuda_checkpoint(tmp_path, monkeypatch):
    """A checkpoint whose storages are tagged 'cuda:0', as if saved on a GPU (plus one CPU tensor)."""
    import torch.serialization

    tags = iter(["cuda:0", "cpu"])
    path = tmp_path / "cuda.pt"
    with monkeypatch.context() as m:
        m.setattr(torch.serialization, "location_tag", lambda storage: next(tags))
        torch.save({"w": torch.arange(4.0), "b": torch.ones(2)}, path)
    return path


def _check(loaded: dict) -> None:
    assert torch.equal(loaded["w"].cpu(), torch.arange(4.0)) and torch.equal(loaded["b"], torch.ones(2))
    assert loaded["w"].device.type == tp.device_type()
    assert loaded["b"].device.type == "cpu"  # saved on the CPU: stays there


@cpu_only
def test_checkpoint_really_says_cuda(cuda_checkpoint) -> None:
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(cuda_checkpoint)


@cpu_only
@pytest.mark.parametrize("mmap", [False, True])
def test_map_location_default_loads_cuda_checkpoints(cuda_checkpoint, mmap) -> None:
    loc = tp.map_location()
    assert isinstance(loc, dict)
    _check(torch.load(cuda_checkpoint, map_location=loc, mmap=mmap))  # weights_only=True
    _check(torch.load(cuda_checkpoint, map_location=tp.map_location(None), weights_only=True))


@cpu_only
@pytest.mark.parametrize(
    "spec", ["cuda", "cuda:1", "".join(["cuda:", "0"]), torch.device("cuda", 1), torch.device("cuda")]
)
def test_map_location_maps_cuda_devices(cuda_checkpoint, spec) -> None:
    mapped = tp.map_location(spec)
    assert mapped == (tp.device(spec) if isinstance(spec, torch.device) else tp.device_str(spec))
    loaded = torch.load(cuda_checkpoint, map_location=mapped)
    assert loaded["w"].device == loaded["b"].device == torch.device("cpu")


@cpu_only
@pytest.mark.parametrize("spec", ["cpu", torch.device("cpu"), "meta"])
def test_map_location_keeps_other_devices(spec) -> None:
    assert tp.map_location(spec) is spec


@cpu_only
def test_map_location_dict_and_callable(cuda_checkpoint) -> None:
    spec = {"cuda:1": "cuda:0"}
    loc = tp.map_location(spec)
    assert loc == spec and isinstance(loc, dict) and spec == {"cuda:1": "cuda:0"}  # input untouched
    assert loc.get("cuda:1", "cuda:1") == "cpu" and loc.get("cuda:0", "cuda:0") == "cpu"
    assert loc.get("cpu", "cpu") == "cpu" and loc.get("meta", "meta") == "meta"
    _check(torch.load(cuda_checkpoint, map_location=loc))
    seen = []

    def default(storage, location):
        seen.append(location)
        return None  # torch's "restore as saved"

    _check(torch.load(cuda_checkpoint, map_location=tp.map_location(default)))
    assert seen == ["cuda:0", "cpu"]  # the callable sees the saved locations
    keep = tp.map_location(lambda storage, location: storage)  # the "load on CPU" idiom
    loaded = torch.load(cuda_checkpoint, map_location=keep)
    assert loaded["w"].device.type == "cpu"
