"""What a run produces: `Diagnostic` (one finding) and `FileResult` (one file); free of LibCST so that reading
results back from the cache loads no rule."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# Rules whose findings only explain a decision (effort "info"): they never fail `--check`.
# Kept here, not read from the rules, so that a cached check loads no rule; tests/test_registry.py ties them.
INFO_CODES = frozenset({"TP107", "TP108", "TP110"})
# The gate the project pass gives an entry point whose program imports a module that picks the runtime's device
# when imported (`torchport.pipeline.programs.picked_on_import`), with the line of the entry point's import that
# leads there: TP019 writes `tp.avoid_mps` above it (`torchport.codemods.entry`).
AVOID_BEFORE = "avoid_mps before line "
# The gate the project pass gives a module with a demo `__main__` block whose program needs the call (a module others
# import): TP019 writes it first in that block, where it runs only when the module is the program.
AVOID_IN_MAIN = "avoid_mps in the __main__ block"
# The gate the project pass gives a module that only programs kept CUDA-or-CPU reach, with why
# (`torchport.pipeline.programs.kept_cuda_or_cpu`): its autocasts, scalers and availability idioms stay CUDA's, which
# already do there what moved ones would (`torchport.codemods.amp`, `torchport.codemods.device`).
KEPT = "kept CUDA-or-CPU: "
# The gate the project pass gives a script no module imports (`torchport.pipeline.unused.own_scripts`): only its own
# code calls its functions, so the port check reads the values its calls give them (`torchport.model.check`).
OWN = "own script"
# The gate the project pass gives a script another module of the project imports (FlashGAT's graphiler/utils/setup.py,
# star-imported by its package): calls from elsewhere reach its functions' defaults (`torchport.codemods.device`).
IMPORTED = "script imported elsewhere"
# The gate the project pass gives a module that sets an attribute flag a port moves with the accelerator
# (`torchport.pipeline.programs.ported_flags`), as ``PORTED_FLAG + name``: it ports the CUDA check that sets it.
PORTED_FLAG = "ported flag "
# The gate the project pass gives a module one of whose functions is handed the storage a `map_location` function of
# another module gets (`torchport.model.checkpoints.storage_parameters`), as ``STORAGE + "f(param)"``: its `.cuda()`
# becomes `.to(device=...)`, the keyword a storage's `to` takes.
STORAGE = "storage handed to "
# Why a program keeps CUDA-or-CPU (`tp.keep_cuda_or_cpu`), not only off MPS: a choice kept CUDA-or-CPU beside data
# the port moves to the runtime's device (on MPS and XPU the two meet on different devices), or kernels that only the
# CPU and CUDA have. Anything else the project pass gives (float64, sparse, DataParallel, a process group) is what
# MPS alone lacks.
KEPT_CHOICE = "a device choice kept CUDA-or-CPU beside data moved to the picked device"
COMPILED = "a compiled extension's kernels"  # what MPS and XPU lack where a module calls the project's extension
MOVED_IF_ON_CUDA = "data moved only where other data is on CUDA (`.is_cuda`)"  # `x.cuda() if y.is_cuda else x`
CHOSEN_IF_ON_CUDA = "a device chosen CUDA only where other data is on CUDA (`.is_cuda`)"
CPU_OR_CUDA_CHECK = "a device check that takes only the CPU and CUDA"  # `if x.device.type not in ("cpu", "cuda")`
CPU_EXTENSION = "a C++ extension built for the CPU alone"  # sru's `load("sru_cpu", sources=[cpu_source])`
CPU_OR_CUDA_INPUTS = "which makes its inputs on CUDA or the CPU alone"  # torchsummary's `summary(model, ...)`
# JoJoGAN's fused_act_cpu: `if input.device.type == "cpu": <native> else: FusedLeakyReLUFunction.apply(...)`, a name
# the module never binds (the CUDA op it was copied from): a tensor on MPS or an XPU meets a NameError.
CPU_ONLY_FALLBACK = "a fallback for CPU tensors alone (other devices reach a name the module never binds)"
# robomimic's to_numpy: `if t.is_cuda: t.cpu().numpy() else: t.numpy()`: an MPS or XPU tensor takes the CPU's arm
NUMPY_OFF_CUDA = "`.numpy()` of a tensor where it is not on CUDA (a CPU tensor's alone)"
# tapqir's Model.to: `if device == "cuda": set_default_tensor_type(torch.cuda.DoubleTensor) ... else:
# set_default_tensor_type(torch.FloatTensor)`: MPS and XPU take the CPU's arm, beside data on the device
CPU_DEFAULT_TYPE = "a CPU default tensor type set wherever the device is not CUDA"
# nerf-pytorch's scripts: `torch.set_default_tensor_type('torch.cuda.FloatTensor')`, then `torch.Tensor(imgs[i])`:
# off CUDA the runtime sets the default device, which legacy constructors ignore (they make CPU tensors)
LEGACY_UNDER_CUDA_TYPE = "a legacy constructor (`torch.Tensor(x)`) under a CUDA default tensor type"
# Transfer-Learning-Library's ImageRegression: `np.array(..., dtype=np.float)` targets, which a DataLoader batches
# as float64 tensors that the program then moves to its device
DATASET_FLOAT64 = "float64 numpy arrays a dataset gives (its DataLoader batches them as float64 tensors)"
# DistilledCTR's models: `if not x.is_cuda: x = torch.LongTensor(x).to(device)`: a CPU type of a tensor on MPS raises
CPU_TYPE_OFF_CUDA = "a CPU tensor type made of a tensor wherever it is not on CUDA (`torch.LongTensor(x)`)"
# Deep-RL Hands-On's A3C: `net.share_memory()`, then the net handed to spawned processes: torch.multiprocessing
# shares the storage of CPU and CUDA tensors alone (`reduce_storage`).
SHARED_MEMORY = "tensors shared with other processes, which torch.multiprocessing does for the CPU and CUDA alone"
# pro_gan_pytorch's ProGAN: `if device == torch.device("cuda"): self.gen = DataParallel(self.gen)`, and on saving
# `self.gen.state_dict() if self.device == torch.device("cpu") else self.gen.module.state_dict()`: on MPS or an XPU
# neither holds, and the unwrapped model has no `.module`
WRAPPED_ON_CUDA = "a DataParallel wrapper made on CUDA alone, unwrapped (`.module`) wherever the device is not the CPU"


def keeps_cuda_or_cpu(reason: str) -> bool:
    """Whether ``reason`` (``"<what>, <file>:<line>"``, given to TP019) keeps its program off XPU as well as MPS."""
    return reason.startswith((KEPT_CHOICE, COMPILED, MOVED_IF_ON_CUDA, CHOSEN_IF_ON_CUDA, CPU_OR_CUDA_CHECK,
                              CPU_EXTENSION, CPU_ONLY_FALLBACK, SHARED_MEMORY, NUMPY_OFF_CUDA,
                              CPU_DEFAULT_TYPE, CPU_TYPE_OFF_CUDA, LEGACY_UNDER_CUDA_TYPE, WRAPPED_ON_CUDA)) \
        or CPU_OR_CUDA_INPUTS in reason


@dataclass(frozen=True)
class Diagnostic:
    """A CUDA-specific site that was left unchanged (or, in ``FileResult.sites``, rewritten), with the reason.

    Args:
        code: the rule code, e.g. ``TP101``.
        line: 1-based line number in the original source.
        column: 0-based column in the original source.
        message: one-line reason.
    """

    code: str
    line: int
    column: int
    message: str


@dataclass
class FileResult:
    """What migrating one file gave.

    Args:
        path: the file on disk.
        display: the path as shown to the user (relative to where the run started).
        original: the decoded source, or None if it could not be read.
        migrated: the new source (equal to ``original`` when nothing changed), or None on error.
        encoding: the codec the file was read with (``utf-8-sig`` keeps a BOM).
        rewrites: rewrite counts per rule code.
        diagnostics: sites left unchanged, with their rule codes.
        sites: one entry per rewrite made (code, line, column, rule summary), for reports.
        error: why the file could not be migrated, as ``line:col: reason`` where a line is known.
        facts: where the module chooses a device from CUDA's availability (`Migration.facts`).
        hold: why the project-level pass kept this module's device choices CUDA-or-CPU, or None.
        avoid_mps: what MPS lacks in the program this entry point starts (``tp.avoid_mps`` is written), or None.
        gates: local names of the CUDA gates other modules of the project define, that this module uses.
    """

    path: Path
    display: str
    original: str | None = None
    migrated: str | None = None
    encoding: str = "utf-8"
    rewrites: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sites: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    facts: dict[str, list[int]] = field(default_factory=dict)
    hold: str | None = None
    avoid_mps: str | None = None
    gates: frozenset[str] = frozenset()

    @property
    def changed(self) -> bool:
        return self.error is None and self.migrated is not None and self.migrated != self.original


def open_findings(result: FileResult) -> list[Diagnostic]:
    """The findings that fail ``--check``: pending rewrites and diagnostics that are not info notes."""
    if result.error:
        return []
    return [*(result.sites if result.changed else []),
            *(d for d in result.diagnostics if d.code not in INFO_CODES)]


def check_fails(results: Iterable[FileResult]) -> bool:
    """Whether ``--check`` fails (exit 1): a rewrite is pending or a finding other than an info note remains."""
    return any(open_findings(r) for r in results)
