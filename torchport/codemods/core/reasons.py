"""Why code is left as written: one catalogue of named reasons, each with an id, one sentence and an example.

Every "leave it alone" decision of the rules and of the project pass names one of these (the TP110 note shows
``[R03 cuda-gate]``; ``torchport explain R03`` prints the entry; docs/reasons.md is generated from it). Each
example is a whole module that comes out byte-identical and whose notes cite its reason; a test checks both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    """A named reason to leave code as written.

    Args:
        id: stable identifier, ``R`` and two digits.
        slug: kebab-case name.
        sentence: the general fact, in one sentence.
        example: a module the rules leave byte-identical, citing this reason.
        requirements: the ``requirements.txt`` of the example's project, where the reason is the project's.
        beside: the other files of the example's project, ``(path, text)``, where the reason is the project's.
    """

    id: str
    slug: str
    sentence: str
    example: str
    requirements: str = ""
    beside: tuple[tuple[str, str], ...] = ()

    @property
    def tag(self) -> str:
        """``[R03 cuda-gate]``, as the notes show it."""
        return f"[{self.id} {self.slug}]"


CUDA_ONLY = Reason(
    "R01", "cuda-only", "Code that runs only on CUDA (under a CUDA guard, after a CUDA check, in the CUDA branch of a "
    "conditional): a rewrite would change nothing anywhere. The note names the check.",
    "import torch\nif torch.cuda.is_available():\n    import pynvml\n    pynvml.nvmlInit()\n"
    "    x = torch.ones(2).cuda()\n")
SEVERAL_BACKENDS = Reason(
    "R02", "several-backends", "Code that already chooses among several backends, or implements one, keeps its own "
    "choice.",
    "import torch\nif torch.cuda.is_available():\n    x = torch.ones(2).cuda()\n"
    "elif torch.backends.mps.is_available():\n    x = torch.ones(2).to('mps')\n")
CUDA_GATE = Reason(
    "R03", "cuda-gate", "Code gated by a CUDA gate of the project (a decorator, mark or helper whose definition "
    "skips, raises or exits without CUDA), or that always calls what stops or fails without CUDA, runs only on CUDA.",
    "import pytest\nimport torch\n\n\ndef needs_gpu(test):\n    def run():\n        if not torch.cuda.is_available():\n"
    "            pytest.skip('no GPU')\n        test()\n    return run\n\n\n@needs_gpu\ndef test_x():\n"
    "    assert torch.ones(1).cuda().item() == 1\n")
GATE_DEFINITION = Reason(
    "R04", "gate-definition", "A CUDA gate's own definition keeps asking CUDA, so that what it gates still runs only "
    "there.",
    "import pytest\nimport torch\n\n\ndef require_gpu():\n    if torch.cuda.device_count() < 1:\n"
    "        pytest.skip('needs a GPU')\n    torch.cuda.synchronize()\n")
CUDA_TEST = Reason(
    "R05", "cuda-test", "A test that skips itself without CUDA (skipIf/skipUnless on a CUDA query, a setUp that "
    "skips) checks CUDA itself.",
    "import unittest\nimport torch\n\n\n@unittest.skipIf(not torch.cuda.is_available(), 'needs CUDA')\n"
    "def test_gpu():\n    x = torch.ones(2).cuda()\n")
CUDA_ONLY_PROGRAM = Reason(
    "R06", "cuda-only-program", "A program that stops unless enough CUDA GPUs are there (it counts them, or exits "
    "without them) runs only on CUDA.",
    "import sys\nimport torch\n\nif torch.cuda.device_count() < 2:\n    sys.exit('needs 2 GPUs')\n"
    "model = torch.nn.Linear(2, 2).cuda()\n")
CUDA_ONLY_LIBRARY = Reason(
    "R07", "cuda-only-library", "Code built on a CUDA-only library or API (triton, apex, flash-attn, a compiled CUDA "
    "extension, CUDA graphs, an API with no counterpart), or that always calls such code, runs only on CUDA.",
    "import torch\nfrom apex.optimizers import FusedAdam\n\n\nclass Adam2(FusedAdam):\n    def step(self):\n"
    "        torch.cuda.synchronize()\n")
FAKES_CUDA = Reason(
    "R08", "fakes-cuda", "A module that fakes torch.cuda (mock.patch) uses CUDA devices as descriptors that need no "
    "GPU.",
    "import torch\nfrom unittest import mock\n\n\n@mock.patch('torch.cuda.is_available', return_value=True)\n"
    "def test_pick(_):\n    assert torch.device('cuda:0').index == 0\n")
CUDA_SETTING = Reason(
    "R09", "cuda-setting", 'A value under a "cuda" key, or a default no call uses, is a setting for CUDA alone.',
    "import torch\nBACKENDS = {'cuda': torch.device('cuda'), 'cpu': torch.device('cpu')}\n")
DEAD_STORE = Reason(
    "R10", "dead-store", "A value assigned again on the next line, or a device value nothing reads, is never used.",
    "import torch\n\n\ndef f(n):\n    device = 'cuda'\n    device = torch.device('cpu')\n"
    "    return torch.zeros(n, device=device)\n")
SEEDED = Reason(
    "R11", "seeded", "torch.manual_seed above already seeds every device: seeding CUDA again changes nothing.",
    "import torch\ntorch.manual_seed(0)\ntorch.cuda.manual_seed_all(0)\n")
MOVES_TOGETHER = Reason(
    "R12", "moves-together", "Calls that must move together stay together: CUDA RNG state with no counterpart, a "
    "GradScaler whose autocast stays.",
    "import torch\n\n\ndef fork_rng():\n    state = torch.cuda.get_rng_state()\n"
    "    torch.cuda.default_generators[0].set_state(state)\n")
HELD_CHOICE = Reason(
    "R13", "held-choice", "A device choice another module keeps CUDA-or-CPU (what MPS lacks, or a choice kept there) "
    "keeps this one CUDA-or-CPU: on a Mac it runs on the CPU, as before.",
    "import torch\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    "x = torch.ones(2).to(device).double()\n")
CUDA_QUERY = Reason(
    "R14", "cuda-query", "A query of CUDA itself (its version, capability, a flag true only where CUDA is) answers for "
    "CUDA alone.",
    "import torch\nuse_fused = torch.cuda.is_available() and torch.version.cuda is not None\n")
UNSET_ATTRIBUTE = Reason(
    "R15", "unset-attribute", "A guard that asks for an attribute nothing in the module sets is never true here.",
    "import torch\n\n\nclass M:\n    def go(self, x):\n"
    "        if hasattr(self, 'offload_hook') and self.offload_hook:\n"
    "            return x.cuda()\n        return x\n")
OLDER_TORCH = Reason(
    "R16", "older-torch", "A branch for an older torch (except AttributeError/ImportError) is never reached with "
    "the torch the port needs.",
    "import torch\ntry:\n    from torch.amp import GradScaler\nexcept ImportError:\n"
    "    GradScaler = torch.cuda.amp.GradScaler\n    x = torch.ones(1).cuda()\n")

INDEX_BOOKKEEPING = Reason(
    "R17", "index-bookkeeping", "Code that keys data by tensors' device indices keeps "
    "`torch.cuda.current_device()`: off CUDA a tensor's index is None, never the 0 the runtime answers there.",
    "import torch\ndevices = {torch.cuda.current_device(): []}\nfor p in params:\n"
    "    devices[p.device.index].append(p)\n")

CONFIG_DATA = Reason(
    "R18", "config-data", "The tables of a module that holds only assignments of data and imports nothing (a config "
    "file a loader reads) stay data: a runtime import would make it code its loader may not accept.",
    "_base_ = ['./default.py']\ndist_params = dict(backend='nccl')\nlog_level = 'INFO'\n")

HALF_PORT = Reason(
    "R19", "half-port", "A rewrite that only paths which still stop off CUDA run (an unported placement or CUDA-only "
    "call before or after it, a gate before it, a skip mark) would change only how the program fails: it is left as "
    "written. A CUDA assert goes only where no path past it still stops off CUDA (`nvidia-smi` run by rank 0 alone "
    "counts); a ported CUDA query whose branch still names `'cuda'` stays with it.",
    "import torch\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\nx = torch.ones(2).to(device).double()\n"
    "y = torch.ones(2).cuda()\ntorch.cuda.synchronize()\n")

SAVED_HERE = Reason(
    "R20", "saved-here", "A checkpoint the same code saved earlier to the same path, or a file of the repository saved "
    "from CPU tensors, holds tensors where this run keeps them: loading it needs no map on any backend.",
    "import torch\n\n\ndef train(model):\n    torch.save(model.state_dict(), 'best.pkl')\n"
    "    model.load_state_dict(torch.load('best.pkl'))\n")

EXPECTED_ERROR = Reason(
    "R21", "expected-error", "Code a test expects to raise (`with pytest.raises(...)`, `self.assertRaises(...)`) "
    "checks that error: a rewrite would change what the test tests.",
    "import pytest\nimport torch\n\n\ndef test_deny_moving(model):\n    with pytest.raises(TypeError):\n"
    "        model.cuda()\n")

HOLDS_NOTHING = Reason(
    "R22", "holds-nothing", "`.cuda()` on a torch module that holds no tensor (a loss without weights, an activation, "
    "built from constants) moves nothing and works on every backend.",
    "import torch.nn as nn\ncriterion = nn.CrossEntropyLoss(reduction='none').cuda()\n")

TORCHSCRIPT = Reason(
    "R23", "torchscript", "Code TorchScript compiles (`@torch.jit.script`, `@torch.jit.script_method`, a function "
    "given to `torch.jit.script`) cannot call torchport.runtime, which TorchScript cannot compile: a rewrite there "
    "would break the module on every backend, CUDA included.",
    "import torch\n\n\n@torch.jit.script\ndef pin(x: torch.Tensor) -> torch.Tensor:\n    return x.cuda()\n")

QUIET_OFF_CUDA = Reason(
    "R24", "quiet-off-cuda", "A torch.cuda call that returns quietly without CUDA (`empty_cache()` does nothing, the "
    "counters answer 0, every device's RNG state is a list of none) changes nothing that matters off CUDA, and on "
    "CUDA a rewrite is the same call.",
    "import torch\ntorch.cuda.empty_cache()\nprint(torch.cuda.max_memory_allocated() / 2**20)\n")

RUNS_NOWHERE = Reason(
    "R25", "runs-nowhere", "A program that always imports what the installed torch lacks (`torch.utils.ffi`, "
    "`torch._six`, a private name an older torch had), or a name a module of the project does not define, or "
    "that reads a name nothing binds before it does its work (a NameError), or calls a function or class of the "
    "project with arguments its signature refuses before it does its work (a TypeError), runs on no device: a port "
    "changes nothing anyone can run.",
    "import torch\nfrom torch.utils.ffi import create_extension\n\nx = torch.ones(2).cuda()\n")

PROJECT_TORCH = Reason(
    "R26", "project-torch", "The torch the project requires is older than the torch API the rewrite would write.",
    "import torch\ntry:\n    f()\nexcept torch.cuda.OutOfMemoryError:\n    pass\n", "torch==1.13.1\n")

UNREACHED = Reason(
    "R27", "unreached", "A module no program of the project reaches (no script, test or notebook imports it) and no "
    "file of the project names (a config, a shell script, a README) runs nowhere: a port changes nothing anyone runs.",
    "import torch\n\n\ndef load(path):\n    return torch.load(path).cuda()\n",
    beside=(("train.py", "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n"),))

REASONS: tuple[Reason, ...] = (CUDA_ONLY, SEVERAL_BACKENDS, CUDA_GATE, GATE_DEFINITION, CUDA_TEST, CUDA_ONLY_PROGRAM,
                               CUDA_ONLY_LIBRARY, FAKES_CUDA, CUDA_SETTING, DEAD_STORE, SEEDED, MOVES_TOGETHER,
                               HELD_CHOICE, CUDA_QUERY, UNSET_ATTRIBUTE, OLDER_TORCH, INDEX_BOOKKEEPING,
                               CONFIG_DATA, HALF_PORT, SAVED_HERE, EXPECTED_ERROR, HOLDS_NOTHING,
                               TORCHSCRIPT, QUIET_OFF_CUDA, RUNS_NOWHERE, PROJECT_TORCH, UNREACHED)
BY_ID = {reason.id: reason for reason in REASONS}


def note(reason: Reason, detail: str | None = None) -> str:
    """The text of a TP110 note for ``reason``: its tag, then ``detail`` (the site's own words) or its sentence."""
    return f"{reason.tag} {detail or reason.sentence}"


def page() -> str:
    """docs/reasons.md: the catalogue as a table (``python -m torchport.codemods.core.reasons > docs/reasons.md``)."""
    rows = "\n".join(f"| {r.id} | {r.slug} | {r.sentence} |" for r in REASONS)
    return (
        "# Why code is left as written\n\n"
        "Every decision to leave CUDA code as it is names one of these reasons: the TP110 note shows its tag\n"
        "(`[R03 cuda-gate]`), and `torchport explain R03` prints it with its example. The table is generated from\n"
        "`torchport/codemods/core/reasons.py` (`python -m torchport.codemods.core.reasons > docs/reasons.md`); a test\n"
        "checks that each example comes out byte-identical and cites its reason.\n\n"
        f"| id | name | the fact |\n|---|---|---|\n{rows}\n"
    )


if __name__ == "__main__":
    print(page(), end="")
