"""What MPS lacks, read from one module with CPython's `ast` alone: float64 and complex128 tensors on the device,
sparse tensors, torchaudio's ``forced_align``, area interpolation. A program that reaches such a module keeps running
on the CPU of a Mac (`torchport.pipeline.project` holds its device choices, the program model gives it an MPS
blocker, and its entry point gets ``tp.avoid_mps``). No LibCST here: a run the cache answers reads these facts too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from torchport.codemods.analysis.programs import call_name, is_script, parameter_defaults
from torchport.codemods.analysis.source import parse
from torchport.model import installed, torch_facts
from torchport.model.torch_facts import ON_CUDA_FLAGS
from torchport.model.trees import enclosing_scope, parent_map
from torchport.results import (
    CHOSEN_IF_ON_CUDA,
    CPU_DEFAULT_TYPE,
    CPU_EXTENSION,
    CPU_ONLY_FALLBACK,
    CPU_OR_CUDA_CHECK,
    CPU_OR_CUDA_INPUTS,
    CPU_TYPE_OFF_CUDA,
    DATASET_FLOAT64,
    LEGACY_UNDER_CUDA_TYPE,
    MOVED_IF_ON_CUDA,
    NUMPY_OFF_CUDA,
    SHARED_MEMORY,
    WRAPPED_ON_CUDA,
)

DATA_PARALLEL_INPUTS = "DataParallel, which moves its inputs only on CUDA"
DATA_PARALLEL_PLACES = "DataParallel, which places its module only on CUDA"
# What MPS lacks that a module's text shows, as (pattern, description); float64 and complex128 are read from
# the tree (`_wide_dtype_lines`). A module that mentions MPS handles it itself.
_MPS_BLOCKERS = (
    (torch_facts.text("mps_lacks_sparse"), "sparse tensors"),
    (torch_facts.text("mps_lacks_forced_align"), "torchaudio's forced_align"),
    (torch_facts.text("mps_lacks_ctc"), "CTC loss (`aten::_ctc_loss`)"),
    (torch_facts.text("mps_lacks_quantization"), "quantization kernels (fake-quantize, `quantize_per_tensor`)"),
    (torch_facts.text("mps_lacks_area"), "area interpolation to sizes that need not divide (`mode=\"area\"`)"),
    (torch_facts.text("mps_lacks_data_parallel"), DATA_PARALLEL_INPUTS),
    (torch_facts.text("mps_lacks_type_string"), "tensor type strings given back to `.type()` (`x.type(y.type())`)"),
)
# What MPS lacked before a torch release, as (pattern, description, the release that brought it): a lack only where
# the installed torch predates it (`installed.version`, the torch the ported program runs on here).
_MPS_BLOCKERS_UNTIL = (
    # pytorch#167569 (torch 2.10) added `linalg.lu_solve` on MPS
    (torch_facts.text("mps_lacks_lu_solve"), "LU solves (`aten::linalg_lu_solve`: `slogdet`'s backward)", (2, 10)),
)


def _mps_blockers() -> tuple[tuple[re.Pattern[str], str], ...]:
    """`_MPS_BLOCKERS`, with those of `_MPS_BLOCKERS_UNTIL` the installed torch still lacks."""
    found = installed.version_tuple()
    return _MPS_BLOCKERS + tuple((pattern, what) for pattern, what, fixed in _MPS_BLOCKERS_UNTIL
                                 if found and found < fixed)
LACKS_TEXT = torch_facts.text("lacks_text")
_COLLECTIVES = torch_facts.text("collective_call")
_MENTIONS_MPS = torch_facts.text("mentions_mps")
_WIDE_TEXT = torch_facts.text("wide_dtype")
_WIDE = {word: dtype for dtype in ("float64", "complex128") for word in torch_facts.words(dtype)}
_NUMPY_FLOAT64 = torch_facts.text("numpy_float64")
_FROM_NUMPY_TO_DEVICE = torch_facts.text("from_numpy_to_device")
# Calls that make a tensor on the CPU unless given a device (a float64 tensor made there is not on MPS).
_FACTORIES = frozenset(torch_facts.words("cpu_factory"))

def blocker(text: str, tree: ast.Module | None = None, certain: bool = False) -> tuple[int, str] | None:
    """The first of `blockers`, or None."""
    found = blockers(text, tree, certain)
    return found[0] if found else None


def blockers(text: str, tree: ast.Module | None = None, certain: bool = False) -> list[tuple[int, str]]:
    """Every line of a module (its source ``text``, CPython's ``tree`` of it if the caller has one) using
    something MPS lacks, and what: ``(line, what)``, in line order; none when the module mentions MPS (it then
    handles MPS itself).

    float64 and complex128 count where a tensor of that dtype can be on the device: made with a ``device=``
    other than ``"cpu"``, converted by ``.to(...)``/``.type(...)``/``.double()`` (on whatever device the tensor
    is), the default dtype, or a CPU tensor that the module later moves (``name.to(``, ``name.cuda(``). A dtype
    that is only compared, tested, or given to a CPU factory is not. A module that does not parse is read as text
    (every mention counts).

    ``certain``: only what surely reaches the device, for writing ``tp.avoid_mps`` (TP019): a float64 or complex128
    tensor made with a device other than the CPU, float64 numpy arrays made into tensors and moved, sparse tensors;
    not a conversion whose tensor may be on the CPU (``.double()``, ``.to(torch.float64)``), and nothing in a
    function that runs collectives (it runs in a process group, where a Mac's pick is the CPU already)."""
    if _MENTIONS_MPS.search(text):
        if tree is None:
            tree = parse(text)
            if tree is None:
                return []  # cautious: a mention may be code
        if handles_mps(tree):
            return []
    found: list[tuple[int, str]] = []
    lines = text.splitlines()
    present = [(pattern, what) for pattern, what in _mps_blockers() if pattern.search(text)]  # most texts: none
    for number, line in enumerate(lines if present else (), 1):
        code = line.split("#", 1)[0]
        for pattern, what in present:
            if pattern.search(code):
                found.append((number, what))
                break
    makers = _NUMPY_MAKERS.search(text) or ".step(" in text  # an environment's rewards (`_rewards`)
    float64_named = _FROM_NUMPY_TO_DEVICE.search(text) and _NUMPY_FLOAT64.search(text)  # and arrays moved
    if tree is None and (found or _WIDE_TEXT.search(text) or "is_cuda" in text or makers or float64_named
                         or "DataParallel" in text):
        tree = parse(text)
    if "DataParallel" in text and tree is not None:  # the wrapper moved by a statement of its own (HRNet's demo)
        found.extend((line, DATA_PARALLEL_INPUTS) for line in _data_parallel_moved(tree)
                     if (line, DATA_PARALLEL_INPUTS) not in found)
    if found and tree is not None:  # skorch's `if sparse.issparse(X): return torch.sparse_coo_tensor(...)`
        found = [hit for hit in found if hit[0] not in _data_branch_lines(tree)]
        # where it hands the wrapper to another module's function, only the project pass can read what that
        # function feeds it (`pipeline.project._callee_feeds`): nothing certain here
        if any(what == DATA_PARALLEL_INPUTS for _, what in found) and data_parallel_fed(
                tree, (lambda call, at: True) if certain else None):
            found = [hit for hit in found if hit[1] != DATA_PARALLEL_INPUTS]
    if "DataParallel" in text and tree is not None and not certain:  # the project pass reads the wrapped class
        found.extend((line, DATA_PARALLEL_PLACES) for line in _data_parallel_places(tree))
    moves_arrays = _FROM_NUMPY_TO_DEVICE.search(text) and not (certain and (
        _COLLECTIVES.search(text) or not _arrays_moved(text, tree)))
    if moves_arrays and float64_named:
        found.extend((number, "float64 numpy arrays made into tensors") for number in (
            _numpy_float64_lines(tree) if tree is not None else
            [n for n, line in enumerate(lines, 1) if _NUMPY_FLOAT64.search(line.split("#", 1)[0])]))
    if tree is not None and _FROM_NUMPY_TO_DEVICE.search(text) and makers:
        found.extend((line, "float64 numpy arrays made into tensors") for line in _numpy_defaults_moved(tree))
    if makers and ("from_numpy(" in text or "tensor(" in text) and (tree := tree or parse(text)) is not None:
        found.extend((line, "float64 numpy arrays made into tensors") for line in _float64_names_moved(tree))
    if not certain and "__getitem__" in text and (tree := tree or parse(text)) is not None:
        found.extend((line, DATASET_FLOAT64) for line in _dataset_float64(tree))
    if tree is not None and "is_cuda" in text:
        found.extend(_placed_if_on_cuda(tree))
    if "is_cuda" in text and "Tensor(" in text and (tree := tree or parse(text)) is not None:
        found.extend((line, CPU_TYPE_OFF_CUDA) for line in _cpu_types_off_cuda(tree))
    if ".numpy()" in text and "is_cuda" in text and (tree := tree or parse(text)) is not None:
        found.extend((line, NUMPY_OFF_CUDA) for line in _numpy_off_cuda(tree))
    if "set_default_tensor_type" in text and (tree := tree or parse(text)) is not None:
        found.extend((line, CPU_DEFAULT_TYPE) for line in _cpu_default_off_cuda(tree))
        found.extend((line, LEGACY_UNDER_CUDA_TYPE) for line in _legacy_under_cuda_type(tree))
    if "share_memory" in text and (tree := tree or parse(text)) is not None:
        found.extend((node.lineno, SHARED_MEMORY) for node in ast.walk(tree) if isinstance(node, ast.Call)
                     and isinstance(node.func, ast.Attribute) and node.func.attr in ("share_memory", "share_memory_"))
    if "torchdiffeq" in text:
        tree = tree or parse(text)
        found.extend(_adaptive_solves(tree) if tree is not None else [])
    if "cpp_extension" in text:
        tree = tree or parse(text)
        found.extend(_cpu_extensions(tree) if tree is not None else [])
    if _CPU_DISPATCH.search(text) and (tree := tree or parse(text)) is not None:
        found.extend(_cpu_only_fallbacks(tree, text))
    if ".device.type]" in text and (tree := tree or parse(text)) is not None:
        found.extend(_device_tables(tree))
    if "raise" in text and _NAMES_CUDA_STRING.search(text) and (tree := tree or parse(text)) is not None:
        found.extend(_device_checks(tree))
    if ("'cpu'" in text or '"cpu"' in text) and (tree := tree or parse(text)) is not None:
        found.extend((line, CPU_OR_CUDA_CHECK) for line in _device_dispatch(tree))
    if ".module" in text and "DataParallel" in text and (tree := tree or parse(text)) is not None:
        found.extend((line, WRAPPED_ON_CUDA) for line in _unwrapped_off_the_cpu(tree))
    if any(library in text for library in _CPU_OR_CUDA_INPUTS) and (tree := tree or parse(text)) is not None:
        found.extend(_summaries(tree))
    if "tensor(" in text and _NUMPY_MATH_TEXT.search(text) and (tree := tree or parse(text)) is not None:
        found.extend(_numpy_math_tensors(tree, certain))
    if _WIDE_TEXT.search(text):
        if tree is None and not certain:
            found.extend((number, _WIDE[m.group(0)]) for number, line in enumerate(lines, 1)
                         if (m := _WIDE_TEXT.search(line.split("#", 1)[0])))
        elif tree is not None:
            found.extend(_wide_dtype_lines(tree, text, certain))
    if found and "Sampler" in text and (tree := tree or parse(text)) is not None:
        sampled = _sampler_lines(tree)
        found = [hit for hit in found if hit[0] not in sampled]
    return sorted(set(found))


# numpy calls whose arrays are float64 unless given a dtype (`np.random.randn`, `RandomState(s).randn`,
# `np.linspace`, `.astype(float)`).
_NUMPY_MAKERS = torch_facts.text("numpy_makers")
_NAMES_CUDA_STRING = torch_facts.text("cuda_string")
_MAKERS = frozenset(torch_facts.words("numpy_maker"))
_KEEPING = frozenset(torch_facts.words("dtype_keeping"))
_ENV_LIBRARIES = frozenset(torch_facts.words("float64_env"))
# Tensor methods that change a dtype on the way to the device.
_CASTS = frozenset(torch_facts.words("cast"))
_MODULE_METHODS = frozenset(torch_facts.words("module_method"))


_SOLVERS = frozenset(torch_facts.words("float64_solver"))
_FIXED_GRID = frozenset(torch_facts.words("fixed_grid_method"))


def _adaptive_solves(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` of each torchdiffeq solve (``odeint(func, y0, t)``, imported from torchdiffeq) whose method
    is not a fixed-grid one: dopri5, the default, and the other adaptive methods make float64 tensors on the state's
    device (ffjord's CNF layers)."""
    found = []
    for node in _library_calls(tree, frozenset({"torchdiffeq"}), _SOLVERS):
        method = next((k.value for k in node.keywords if k.arg == "method"), None)
        if not (isinstance(method, ast.Constant) and method.value in _FIXED_GRID):
            found.append((node.lineno, "torchdiffeq's adaptive ODE solvers, which make float64 tensors"))
    return found


def _library_calls(tree: ast.Module, libraries: frozenset[str], names: frozenset[str]) -> Iterator[ast.Call]:
    """The calls in ``tree`` of a function named one of ``names`` from one of ``libraries``, as the module imports
    it (``summary`` of ``from torchsummary import summary``, ``ts.summary``, ``torchdiffeq.odeint``)."""
    from torchport.codemods.analysis.names import ast_chain, import_map, qualify  # LibCST's, for a run that parses

    imports = import_map(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (dotted := ast_chain(node.func)) is not None and any(
                name.split(".", 1)[0] in libraries and name.rsplit(".", 1)[-1] in names
                for name in qualify(dotted, imports)):
            yield node


def _sampler_lines(tree: ast.Module) -> set[int]:
    """The lines of the classes that subclass a sampler of ``torch.utils.data`` (fast-reid's
    ``ImbalancedDatasetSampler``, whose ``torch.DoubleTensor`` of weights feeds ``torch.multinomial``): a sampler
    gives the loader indices, so its tensors stay on the CPU whatever the program places."""
    from torchport.model.evaluate import imported, qualified

    imports = imported(tree)
    return {line for node in tree.body if isinstance(node, ast.ClassDef) and any(
        (name := qualified(base, imports) or "").startswith("torch.utils.data") and name.endswith("Sampler")
        for base in node.bases) for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}


def _data_branch_lines(tree: ast.Module) -> set[int]:
    """Lines a function runs only for some values of its parameters: the body of an ``if`` whose test reads one
    (``if sparse.issparse(X):``, ``if x.is_sparse:``, ``if x.size(0) > 1:``). What runs there comes with the caller's
    data, not with every run of a program. An option read from a parameter (MagFace's ``if not args.cpu_mode:``,
    Real-time-GesRec's ``if not opt.no_cuda:``: an attribute no tensor has) is no data: the program's run with its
    defaults takes that branch or not, every time."""
    from torchport.model.evaluate import command_line_defaults  # not for a warm check's imports

    found: set[int] = set()
    options = set(command_line_defaults(tree))
    # an option of another module's command line, read from a parameter (Real-time-GesRec's `if not opt.no_cuda:`
    # in model.py, whose options opts.py defines), is no data either: what a tensor has (`x.is_sparse`) is
    tensor_attributes = frozenset(torch_facts.words("tensor_attribute"))
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = function.args
        parameters = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}
        # a name bound to what a tensor parameter has (microxcaling's `A_is_sparse = A.is_sparse`) is that data too
        parameters |= {t.id for n in ast.walk(function) if isinstance(n, ast.Assign) and len(n.targets) == 1
                       and isinstance(t := n.targets[0], ast.Name) and isinstance(n.value, ast.Attribute)
                       and n.value.attr in tensor_attributes and isinstance(n.value.value, ast.Name)
                       and n.value.value.id in parameters}
        for node in ast.walk(function):
            if not isinstance(node, ast.If):
                continue
            called = {id(n.func) for n in ast.walk(node.test) if isinstance(n, ast.Call)}
            read_options = {id(n.value) for n in ast.walk(node.test) if isinstance(n, ast.Attribute)
                            and isinstance(n.value, ast.Name) and n.value.id in parameters and (
                                n.attr in options or (n.attr not in tensor_attributes and id(n) not in called))}
            if any(isinstance(n, ast.Name) and n.id in parameters and id(n) not in read_options
                   for n in ast.walk(node.test)):
                found.update(range(node.body[0].lineno, (node.body[-1].end_lineno or node.body[-1].lineno) + 1))
    return found


def _cpu_extensions(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` where the module builds a C++ extension from C++ sources alone (semseg's ``load('psamask_cpu',
    [... 'psamask.cpp'])``): its ops run on CPU tensors, and one given MPS tensors reads them as the CPU's."""
    from torchport.codemods.analysis.requirements import extension_builds

    return [(node.lineno, CPU_EXTENSION) for node, cuda in extension_builds(tree)
            if cuda is False]


_CPU_DISPATCH = torch_facts.text("cpu_dispatch")
_CPU_OR_CUDA_INPUTS = frozenset(torch_facts.words("cpu_or_cuda_inputs"))


def _summaries(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` of each ``summary(model, ...)`` of a library that makes the model's inputs on CUDA or the CPU
    alone (`torch_facts` role ``cpu_or_cuda_inputs``): a model on MPS gets CPU inputs."""
    return [(node.lineno, f"`{ast.unparse(node.func)}`, {CPU_OR_CUDA_INPUTS}")
            for node in _library_calls(tree, _CPU_OR_CUDA_INPUTS, frozenset({"summary"}))]


def _device_tables(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` where a table keyed by device type that has no MPS entry is looked up with a tensor's
    ``.device.type`` (torchsort's ``isotonic_l2 = {"cpu": ..., "cuda": ...}``, then
    ``isotonic_l2[s.device.type](...)``): a tensor on MPS finds no kernel there (a KeyError)."""
    tables = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
              and (keys := {k.value for k in node.value.keys if isinstance(k, ast.Constant)}) and "cuda" in keys
              and "mps" not in keys and len(keys) == len(node.value.keys) and keys <= set(torch_facts.TARGETS)
              for target in node.targets if isinstance(target, ast.Name)}
    return [(node.lineno, "kernels looked up by device type, none of them for MPS") for node in ast.walk(tree)
            if tables and isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id in tables and isinstance(node.slice, ast.Attribute) and node.slice.attr == "type"
            and isinstance(node.slice.value, ast.Attribute) and node.slice.value.attr == "device"]


def _cpu_default_off_cuda(tree: ast.Module) -> list[int]:
    """Lines of a ``torch.set_default_tensor_type(torch.FloatTensor)`` (a CPU type) in the last arm of an ``if`` chain
    that asks for ``"cuda"``: every other device, MPS and XPU included, gets CPU default tensors there (tapqir's
    ``Model.to``)."""
    found = []
    arms = {id(n.orelse[0]) for n in ast.walk(tree) if isinstance(n, ast.If) and len(n.orelse) == 1
            and isinstance(n.orelse[0], ast.If)}  # an `elif`: its chain's head is read
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or id(node) in arms:
            continue
        chain, asks = node, False
        while True:
            asks = asks or any(isinstance(n, ast.Constant) and n.value == "cuda" for n in ast.walk(chain.test))
            if len(chain.orelse) == 1 and isinstance(chain.orelse[0], ast.If):
                chain = chain.orelse[0]
                continue
            break
        for inner in (n for statement in chain.orelse for n in ast.walk(statement)) if asks else ():
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr == "set_default_tensor_type" and inner.args \
                    and isinstance(kind := inner.args[0], ast.Attribute) and not _is_cuda_type(kind):
                found.append(inner.lineno)
    return found


def _legacy_under_cuda_type(tree: ast.Module) -> list[int]:
    """Lines of a legacy constructor given data (``torch.Tensor(imgs[i])``, ``torch.FloatTensor([1.0])``) in a module
    that sets a CUDA default tensor type at its top level (nerf-pytorch's ``torch.set_default_tensor_type(
    'torch.cuda.FloatTensor')``): on CUDA it makes CUDA tensors; elsewhere the runtime sets the default device, which
    such constructors ignore, so they stay on the CPU beside data on MPS or an XPU."""
    run = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    sets_cuda = any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)  # also under `__main__`
                    and call.func.attr == "set_default_tensor_type" and call.args
                    and "cuda" in ast.unparse(call.args[0]) for s in run for call in ast.walk(s))
    if not sets_cuda:
        return []
    moved = {id(n.func.value) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr in ("to", "cuda")}  # `torch.Tensor(poses[i]).to(device)`: placed at once
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args and id(node) not in moved
            and not all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in node.args)  # a size
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "torch" and (node.func.attr == "Tensor" or f"torch.cuda.{node.func.attr}"
                                                    in torch_facts.of_rule("TP015"))]


def _is_cuda_type(node: ast.Attribute) -> bool:
    """``torch.cuda.FloatTensor`` (a type under ``cuda``), not ``torch.FloatTensor``."""
    return isinstance(node.value, ast.Attribute) and node.value.attr == "cuda"


def _cpu_types_off_cuda(tree: ast.Module) -> list[int]:
    """Lines under ``if not x.is_cuda:`` that make a legacy CPU tensor type of ``x`` (DistilledCTR's models:
    ``x = torch.LongTensor(x).to(device)``): off CUDA a tensor on MPS or an XPU meets a CPU type, which raises."""
    found: list[int] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
                and isinstance(flag := node.test.operand, ast.Attribute) and flag.attr == "is_cuda"):
            continue
        tested = ast.unparse(flag.value)
        found.extend(call.lineno for statement in node.body for call in ast.walk(statement)
                     if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                     and call.func.attr in torch_facts.LEGACY_TYPES and isinstance(call.func.value, ast.Name)
                     and call.func.value.id == "torch" and any(ast.unparse(a) == tested for a in call.args))
    return found


def _numpy_off_cuda(tree: ast.Module) -> list[int]:
    """Lines of a ``.numpy()`` of a tensor, reached where ``if t.is_cuda:`` is false, with no ``.cpu()`` on its way:
    off CUDA the code assumes the CPU, and an MPS or XPU tensor raises there."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Attribute) and node.test.attr in ON_CUDA_FLAGS \
                and not copies_to_host(node):
            for inner in (n for statement in node.orelse for n in ast.walk(statement)):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                        and inner.func.attr == "numpy" and not _passes_cpu(inner.func.value):
                    found.append(inner.lineno)
        for block in _blocks(node):
            found.extend(_numpy_after_cuda_copy(block))
    return found


_HOST_COPY = frozenset(torch_facts.words("host_copy"))


def copies_to_host(node: ast.If) -> bool:
    """Whether ``node`` is ``if t.is_cuda:`` over assignments or returns of ``t`` copied to the host and nothing
    else (``if out.is_cuda: out = out.detach().cpu()``; a chain of `torch_facts` ``host_copy`` links on ``t`` with a
    ``.cpu()``): TP007 ports its test safely (``t.device.type != "cpu"``), so the port copies an MPS or XPU tensor
    too (`torchport.codemods.device.IsCuda`). ``keep = gpu_nms(dets).cpu()`` is no copy of ``dets``."""
    if not (isinstance(node.test, ast.Attribute) and node.test.attr == "is_cuda") or not node.body:
        return False
    tensor = ast.unparse(node.test.value)

    def copy(value: ast.expr | None) -> bool:
        if value is None:
            return False
        links = _links(value)
        calls = [n for n in links if isinstance(n, ast.Call)]
        return ast.unparse(links[-1]) == tensor and any(
            isinstance(c.func, ast.Attribute) and c.func.attr == "cpu" for c in calls) and all(
            isinstance(c.func, ast.Attribute) and c.func.attr in _HOST_COPY and not c.args and not c.keywords
            for c in calls) and all(n.attr in _HOST_COPY for n in links[:-1] if isinstance(n, ast.Attribute)
                                    and not any(c.func is n for c in calls))

    return all(isinstance(s, (ast.Assign, ast.Return)) and copy(s.value) for s in node.body)


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    return [block for field in ("body", "orelse", "finalbody") if isinstance(block := getattr(node, field, None), list)
            and block and isinstance(block[0], ast.stmt)]


def _numpy_after_cuda_copy(block: list[ast.stmt]) -> list[int]:
    """Lines of ``block`` that call ``.numpy()`` of a name copied to the CPU only under ``if t.is_cuda:`` above
    (cellseg_models' ``_to_ndarray``: ``if tensor.is_cuda: tensor = tensor.cpu()``, then ``tensor.numpy()``): an MPS
    or XPU tensor is not copied, and raises there."""
    found: list[int] = []
    copied: set[str] = set()
    for statement in block:
        if isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.test, ast.Attribute) \
                and statement.test.attr in ON_CUDA_FLAGS and not copies_to_host(statement):
            copied.update(t.id for s in statement.body if isinstance(s, ast.Assign) and _passes_cpu(s.value)
                          for t in s.targets if isinstance(t, ast.Name))
            continue
        if not copied:
            continue
        found.extend(n.lineno for n in ast.walk(statement) if isinstance(n, ast.Call) and isinstance(
            n.func, ast.Attribute) and n.func.attr == "numpy" and not _passes_cpu(n.func.value)
            and isinstance(base := _chain_base(n.func.value), ast.Name) and base.id in copied)
        if isinstance(statement, ast.Assign):  # bound again: no longer the copy
            copied -= {t.id for t in statement.targets if isinstance(t, ast.Name)}
    return found


def _links(node: ast.expr) -> list[ast.expr]:
    """The calls, attributes and items of a chain (``t.detach()[0].numpy``), outermost first, then the object at its
    start (``t``)."""
    found = [node]
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
        found.append(node)
    return found


def _chain_base(node: ast.expr) -> ast.expr:
    """The object at the start of a chain of calls, attributes and items (``t`` of ``t.detach().numpy``)."""
    return _links(node)[-1]


def _passes_cpu(node: ast.expr) -> bool:
    """Whether a chain of calls (``t.detach().cpu()``) moves its tensor to the CPU on the way."""
    while isinstance(node, (ast.Call, ast.Attribute)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("cpu", "to"):
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def _cpu_only_fallbacks(tree: ast.Module, text: str) -> list[tuple[int, str]]:
    """``(line, what)`` where a branch taken by every device but the CPU (``else`` of ``if x.device.type == "cpu"``,
    the body of ``!= "cpu"``) calls a name the module never binds (JoJoGAN's fused_act_cpu: ``return
    FusedLeakyReLUFunction.apply(...)``): data on MPS or an XPU meets a NameError there. Bindings are read from the
    symbol tables of the module's ``text`` (``tree`` is its parse); a module with ``from m import *`` binds
    anything."""
    import builtins
    import symtable

    branches = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(test := node.test, ast.Compare) and len(test.ops) == 1 \
                and isinstance(test.ops[0], (ast.Eq, ast.NotEq)) and isinstance(test.left, ast.Attribute) \
                and test.left.attr == "type" and isinstance(test.left.value, ast.Attribute) \
                and test.left.value.attr == "device" and isinstance(other := test.comparators[0], ast.Constant) \
                and other.value == "cpu":
            branches.append(node.orelse if isinstance(test.ops[0], ast.Eq) else node.body)
    if not branches or any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                           for n in ast.walk(tree)):
        return []
    try:
        table = symtable.symtable(text, "<module>", "exec")
    except SyntaxError:
        return []
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()
             or s.is_namespace()} | set(dir(builtins))
    local: set[str] = set()
    pending = list(table.get_children())
    while pending:  # a name bound in any function or class counts as bound (cautious)
        child = pending.pop()
        local.update(s.get_name() for s in child.get_symbols() if s.is_assigned() or s.is_parameter()
                     or s.is_imported() or s.is_namespace())
        pending.extend(child.get_children())
    return sorted({(n.lineno, CPU_ONLY_FALLBACK) for branch in branches for statement in branch
                   for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                   and n.id not in bound and n.id not in local})


def _device_dispatch(tree: ast.Module) -> list[int]:
    """Lines where a device string a port makes the runtime's pick is dispatched on among ``"cpu"`` and ``"cuda"``
    alone, so MPS's ``"mps"`` fails there: a check that raises for it (RFQI's ``if args.device not in ['cpu',
    'cuda', ...]: raise NotImplementedError``, an ``assert``), or an ``if``/``elif`` chain with no ``else`` whose arms
    bind names the code reads after it (rl3's ``if DEVICE == 'cpu': PYTORCH_THREADS = ... elif DEVICE == 'cuda':
    ...``: a NameError). The device string is a name bound to ``'cuda' if torch.cuda.is_available() else 'cpu'``,
    or a command-line option whose default is a CUDA device (``args.device``); each test is evaluated with it bound
    to each type."""
    from torchport.codemods.analysis.defaults import option_defaults

    options = {name for name, default in option_defaults(tree) if default.split(":")[0] == "cuda"}
    names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.IfExp)
             and {_text(node.value.body), _text(node.value.orelse)} == {"cuda", "cpu"}
             and "is_available" in ast.unparse(node.value.test) for t in node.targets if isinstance(t, ast.Name)}
    if not options and not names:
        return []

    def device(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and isinstance(
            node.value, ast.Name) and node.value.id == "args" and node.attr in options

    def holds(test: ast.expr, kind: str) -> bool | None:  # the test with the device string bound to `kind`
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = holds(test.operand, kind)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            parts = [holds(v, kind) for v in test.values]
            if None in parts:
                return None
            return all(parts) if isinstance(test.op, ast.And) else any(parts)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and device(test.left)):
            return None
        right, op = test.comparators[0], test.ops[0]
        if isinstance(op, ast.Eq | ast.NotEq) and (other := _text(right)) is not None:
            return (other == kind) == isinstance(op, ast.Eq)
        if isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.List | ast.Tuple | ast.Set) and all(
                _text(e) is not None for e in right.elts):
            return any(_text(e) == kind for e in right.elts) == isinstance(op, ast.In)
        return None

    def stops(body: list[ast.stmt]) -> bool:
        return any(isinstance(s, ast.Raise) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                   and ast.unparse(s.value.func) in torch_facts.EXITS for s in body)

    found: list[int] = []
    for scope in ast.walk(tree):
        body = getattr(scope, "body", None)
        if not isinstance(body, list):
            continue
        for at, statement in enumerate(body):
            if isinstance(statement, ast.Assert) and holds(statement.test, "mps") is False and all(
                    holds(statement.test, kind) for kind in ("cuda", "cpu")):
                found.append(statement.lineno)
            if not isinstance(statement, ast.If):
                continue
            arms: list[tuple[ast.expr, list[ast.stmt]]] = [(statement.test, statement.body)]
            rest = statement
            while len(rest.orelse) == 1 and isinstance(rest.orelse[0], ast.If):
                rest = rest.orelse[0]
                arms.append((rest.test, rest.body))
            final = rest.orelse
            taken = {kind: next((k for k, (test, _) in enumerate(arms) if holds(test, kind)), None)
                     for kind in ("cuda", "cpu", "mps")}
            if any(holds(test, "mps") is None for test, _ in arms):
                continue
            mps = taken["mps"]
            if mps is not None:  # the arm MPS takes stops where CUDA's and the CPU's do not
                if stops(arms[mps][1]) and mps not in (taken["cuda"], taken["cpu"]):
                    found.append(statement.lineno)
            elif not final and (taken["cuda"] is not None or taken["cpu"] is not None):
                bound = {t.id for _, arm in arms for s in arm for n in ast.walk(s)
                         if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
                before = {t.id for s in body[:at] for n in ast.walk(s) if isinstance(n, ast.Assign | ast.AnnAssign)
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
                read = {n.id for s in body[at + 1:] for n in ast.walk(s)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                if (bound - before) & read:
                    found.append(statement.lineno)
    return sorted(set(found))


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _device_checks(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` where a function given its ``device`` parameter raises for MPS's device and not for CUDA's
    or the CPU's: face_alignment's ``FaceDetector`` (vendored by Wav2Lip): ``if 'cpu' not in device and 'cuda' not
    in device: raise ValueError``. Each function with such a parameter is evaluated with it bound to each
    target's device string; a raise on some path of MPS's that no path of the others reaches counts."""
    from torchport.model.evaluate import Evaluator

    found: list[tuple[int, str]] = []
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and any(a.arg == "device" for a in (*node.args.args, *node.args.kwonlyargs))
                 and any(isinstance(n, ast.Raise) for n in ast.walk(node))]
    if not functions:
        return found
    evaluators = {target: Evaluator(tree, target) for target in ("mps", "cpu", "cuda")}
    for function in functions:
        try:
            ends = {target: evaluator.run_alone(function, {"device": target})
                    for target, evaluator in evaluators.items()}
        except RecursionError:
            continue
        # a raise MPS's device reaches that the CPU's and CUDA's never do, on some path: simple-HRNet's
        # `if 'cuda' in str(self.device): ... elif 'cpu' == str(self.device): ... else: raise ValueError(...)`,
        # beside a TensorRT arm its other parameter picks
        others = {p.stop.line for t in ("cpu", "cuda") for p in ends[t]
                  if p.stop is not None and p.stop.kind == "raise"}
        raised = sorted({p.stop.line for p in ends["mps"] if p.stop is not None and p.stop.kind == "raise"} - others)
        if raised:
            found.append((raised[0], CPU_OR_CUDA_CHECK))
    return found


def _data_parallel_moved(tree: ast.Module) -> list[int]:
    """Lines where a name bound to a ``DataParallel`` wrapper is moved by a statement of its own (HRNet's demo:
    ``pose_model = torch.nn.DataParallel(pose_model, ...)``, then ``pose_model.to(CTX)``), or wraps a module the
    code moved before (ibot's challenge_eval: ``model.cuda()``, then ``model = nn.DataParallel(model,
    device_ids=[0])``): on MPS the wrapper is the module on the device, and calls it with its inputs where they are."""
    wrapped: dict[str, int] = {}  # name -> the first line that binds it to a wrapper
    # (line, the module wrapped, the `if` arm it is in: None where it always runs) of each `x = DataParallel(x, ...)`
    wraps: list[tuple[int, str, tuple[int, str] | None]] = []
    arms: dict[int, tuple[int, str]] = {}  # a node -> the innermost `if` arm holding it, of an `if` asking no device
    branched: set[int] = set()
    from torchport.model.evaluate import asks_for_cuda  # here: a warm run loads no evaluator

    for branch in sorted((n for n in ast.walk(tree) if isinstance(n, ast.If)), key=lambda n: n.lineno):
        for arm in ("body", "orelse"):
            for statement in getattr(branch, arm):
                for n in ast.walk(statement):
                    branched.add(id(n))
                    if not asks_for_cuda(branch.test):  # Real-time-GesRec's `if not opt.no_cuda:` moves and wraps
                        arms[id(n)] = (id(branch), arm)

    unwrapped = _wrapped_on_cuda_alone(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and call_name(node.value) == "DataParallel" and id(node) not in unwrapped:
            for target in node.targets:
                wrapped[ast.unparse(target)] = min(node.lineno, wrapped.get(ast.unparse(target), node.lineno))
            if node.value.args and (id(node) not in branched or id(node) in arms):  # not under `if
                # torch.cuda.device_count() > 1:`; under an option's `if`, where that arm moved the module before
                wraps.append((node.lineno, ast.unparse(node.value.args[0]), arms.get(id(node))))
    moves = [(node.lineno, ast.unparse(node.func.value), arms.get(id(node))) for node in ast.walk(tree)
             if wrapped and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in ("to", "cuda")]
    # a name bound again to something else after its wrapper (ProPainter's `model = model.module`) is no wrapper
    unwraps: dict[str, list[int]] = {}
    for node in ast.walk(tree) if wrapped else ():
        if isinstance(node, ast.Assign) and not (isinstance(node.value, ast.Call) and (
                call_name(node.value) == "DataParallel" or isinstance(node.value.func, ast.Attribute)
                and ast.unparse(node.value.func.value) in {ast.unparse(t) for t in node.targets})):
            # (not `model = model.eval()`, `model = model.to(...)`: the wrapper still)
            for target in node.targets:
                if ast.unparse(target) in wrapped:
                    unwraps.setdefault(ast.unparse(target), []).append(node.lineno)
    found = [line for line, moved, _ in moves if line > wrapped.get(moved, line)  # the wrapper, not the module
             and not any(wrapped[moved] < at < line for at in unwraps.get(moved, ()))]
    found.extend(line for line, module, arm in wraps if any(at < line and moved == module and (
        arm is None or moved_in == arm) for at, moved, moved_in in moves))
    return sorted(set(found))


def _wrapped_on_cuda_alone(tree: ast.Module) -> set[int]:
    """The nodes under an ``if`` false off CUDA that makes a ``DataParallel`` wrapper (kaggle-hpa's ``if
    torch.cuda.device_count() > 1:``, Co2L's under ``if torch.cuda.is_available():``): they wrap nothing on a Mac."""
    from torchport.model.evaluate import false_off_cuda  # here: a warm run loads no evaluator

    false = false_off_cuda(tree)
    return {id(n) for branch in ast.walk(tree) if isinstance(branch, ast.If) and any(
        isinstance(n, ast.Call) and call_name(n) == "DataParallel" for n in ast.walk(branch)) and false(branch.test)
        for statement in branch.body for n in ast.walk(statement)}


def _unwrapped_off_the_cpu(tree: ast.Module) -> list[int]:
    """Lines reading ``x.module`` where the device is not the CPU (the ``else`` of ``device == "cpu"``) of an ``x``
    that only a test for CUDA's device wraps in ``DataParallel`` (pro_gan_pytorch's ProGAN): the code takes every
    device that is not the CPU for CUDA. On MPS or an XPU neither test holds: the model is not wrapped, and its
    ``.module`` raises AttributeError."""
    arms: dict[int, str] = {}  # a node -> "cuda" in an arm where the device is CUDA's, "gpu" where it is not the CPU's
    for node in ast.walk(tree):
        if not isinstance(node, (ast.If, ast.IfExp)) or (tested := _device_test(node.test)) is None:
            continue
        name, equal = tested
        kind = "cuda" if name == "cuda" else "gpu"
        chosen = (node.body if equal else node.orelse) if kind == "cuda" else (node.orelse if equal else node.body)
        for part in chosen if isinstance(chosen, list) else [chosen]:
            for inner in ast.walk(part):
                arms.setdefault(id(inner), kind)
    wrapped: dict[str, set[str | None]] = {}  # what binds a wrapper -> the arms it is bound in (None: anywhere)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and call_name(node.value) == "DataParallel":
            for target in node.targets:
                wrapped.setdefault(ast.unparse(target), set()).add(arms.get(id(node)))
    on_cuda = {name for name, where in wrapped.items() if where == {"cuda"}}
    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "module"
                   and ast.unparse(node.value) in on_cuda and arms.get(id(node)) == "gpu"})


def _device_test(test: ast.expr) -> tuple[str, bool] | None:
    """``("cuda"|"cpu", equal)`` for a test comparing a device with CUDA's or the CPU's (``device ==
    torch.device("cuda")``, ``x.device.type != "cpu"``, ``str(device) == "cpu"``); else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    for side in (test.left, test.comparators[0]):
        if isinstance(side, ast.Call) and call_name(side) == "device" and len(side.args) == 1:
            side = side.args[0]
        if isinstance(side, ast.Constant) and side.value in ("cuda", "cpu"):
            return side.value, isinstance(test.ops[0], ast.Eq)
    return None


def _data_parallel_places(tree: ast.Module) -> list[int]:
    """Lines binding a ``DataParallel`` wrapper of a module nothing else places, called with inputs the code moves
    (generative-inpainting's test_single.py: ``netG = nn.parallel.DataParallel(netG, device_ids=...)``, ``x =
    x.cuda()``, ``netG(x, mask)``): on CUDA the wrapper moves the module to its first device; elsewhere the module
    stays on the CPU while the port moves the inputs to the accelerator."""
    receivers = {ast.unparse(n.func.value) for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")}
    found: list[int] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and call_name(node.value) == "DataParallel" and node.value.args):
            continue
        targets = {ast.unparse(t) for t in node.targets}
        wrapped = node.value.args[0]  # lava-dl's `DataParallel(Network(...).to(device), ...)` wraps a moved module
        if ast.unparse(wrapped) in receivers or targets & receivers or isinstance(wrapped, ast.Call) and isinstance(
                wrapped.func, ast.Attribute) and wrapped.func.attr in ("to", "cuda"):
            continue
        if any(target.startswith(f"{moved}.") for target in targets for moved in receivers):
            continue  # Co2L's `model.encoder = DataParallel(model.encoder)`, then `model = model.cuda()`: a move of
            # the module that holds it places it
        if any(isinstance(call, ast.Call) and ast.unparse(call.func) in targets and any(
                isinstance(a, ast.Name) and a.id in receivers for a in call.args) for call in ast.walk(tree)):
            found.append(node.lineno)
    return found


def data_parallel_fed(tree: ast.Module, callee_feeds: Callable[[ast.Call, int | str], bool] | None = None) -> bool:
    """Whether every call in the module of a model wrapped in ``DataParallel`` (by the name it is bound to) gives it
    inputs the code moved itself (``input = input.unsqueeze(0).cuda()``, then ``model(input)``, semseg's test.py),
    and there is such a call: off CUDA, DataParallel calls the module with its inputs where they are, and the port
    moves them with the model. A call with an input it did not move (CutMix's ``validate``: ``output =
    model(input)`` straight from the loader) relies on CUDA's scatter. A script that never calls the wrapper
    (FastSpeech's eval.py: ``model.module.forward(...)``) runs no scatter at all: nothing imports a script.

    ``callee_feeds``: asked, where the module calls the wrapper nowhere but hands it to a function of another module
    (``validate(val_loader, Gen, ...)``, with the argument's position or keyword), whether that function gives it
    moved inputs (`feeds_moved`); without it, such a handing counts as a call with inputs not moved."""
    wrapped = {ast.unparse(t) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and any(isinstance(n, ast.Call) and call_name(n) == "DataParallel" for n in ast.walk(node.value))
               for t in node.targets}
    for node in ast.walk(tree):  # minGPT's `model, config = self.model, self.config`
        if isinstance(node, ast.Assign):
            for target in node.targets:
                wrapped.update(ast.unparse(name) for name, value in _pairs(target, node.value)
                               if ast.unparse(value) in wrapped)
    # handed to a function of the module, its parameter is the wrapper there (SiamMask's `train(train_loader,
    # dist_model, ...)`, which calls `model(x)`): its calls are read too
    functions = {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    handed: set[str] = set()
    given: dict[tuple[str, str], bool] = {}  # (function, parameter) -> some call gives it the wrapper
    calls_made = [(call, call.func.id, [a.arg for a in (*functions[call.func.id].args.posonlyargs,
                                                         *functions[call.func.id].args.args)])
                  for call in ast.walk(tree) if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                  and call.func.id in functions]
    while True:  # handed on again (`outer(net)` calls `inner(net)`): to a fixed point
        size = len(handed)
        for call, callee, params in calls_made:
            passed = {params[k]: a for k, a in enumerate(call.args) if k < len(params)}
            passed.update((w.arg, w.value) for w in call.keywords if w.arg in params)
            for param, value in passed.items():
                gets = ast.unparse(value) in wrapped | handed
                handed.update([param] if gets else [])
                given[callee, param] = given.get((callee, param), False) or gets
        if len(handed) == size:
            break
    wrapped |= handed
    calls = 0
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        # a parameter named as the wrapper that every call of the module gives something else is another object
        # there (RAFT's `validate_chairs(model)`, given `model.module`)
        shadowed = {param for (name, param), gets in given.items() if not gets and not isinstance(
            function, ast.Module) and functions.get(name) is function}
        fed = feeds_moved(function, wrapped - shadowed)
        if fed is False:
            return False
        calls += fed is True
    handings: list[tuple[ast.Call, int | str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in functions) \
                and call_name(node) != "DataParallel":
            arguments: list[tuple[int | str, ast.expr]] = [*enumerate(node.args)]
            arguments.extend((w.arg, w.value) for w in node.keywords if w.arg)
            handings.extend((node, k) for k, a in arguments if ast.unparse(a) in wrapped)
    if calls == 0 and handings:  # the wrapper is handed to code that calls it (ibot's `adv_bgs_eval_model(model, ...)`)
        return callee_feeds is not None and all(callee_feeds(node, k) for node, k in handings)
    return calls > 0 or is_script(tree)


def feeds_moved(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Module, wrapped: Collection[str]) -> bool | None:
    """Whether every call in ``function`` of a name of ``wrapped`` (a ``DataParallel`` wrapper, by the names it is
    bound to there) gives it inputs the code moved before (`_moves`), constants or number parameters: True where
    there is such a call and every one does, False where one does not, None where ``function`` calls none."""
    calls = 0
    numbers = set() if isinstance(function, ast.Module) else _number_parameters(function)
    # a move under an `if` may not run (the ImageNet example's `if args.gpu is not None: input = input.cuda(...)`):
    # it counts only for calls under the same branch (few-shot-meta-baseline's `if eval_fs: ... x_shot, x_query =
    # fs.split_shot_query(data.cuda(), ...)`, then `fs_model(x_shot, x_query)`)
    branches: dict[int, frozenset[tuple[int, str]]] = {}
    for branch in ast.walk(function):
        if isinstance(branch, ast.If):
            for arm in ("body", "orelse"):
                for statement in getattr(branch, arm):
                    for n in ast.walk(statement):
                        branches[id(n)] = branches.get(id(n), frozenset()) | {(id(branch), arm)}
    moved: dict[str, frozenset[tuple[int, str]]] = {}  # a moved name -> the branches its move is under
    for node in _in_order(function):
        here = branches.get(id(node), frozenset())
        if isinstance(node, ast.Assign):
            for target in node.targets:  # `points, target = points.float().cuda(), target.long().cuda()`
                for name, value in _pairs(target, node.value):
                    names = [ast.unparse(n) for n in (name.elts if isinstance(name, ast.Tuple) else [name])]
                    # None needs no move (RAFT's `flow_prev = None`, a moved flow once it has one)
                    if not _moves(value, _reaching_moves(moved, here)) and not (
                            isinstance(value, ast.Constant) and value.value is None):
                        for moved_name in names:
                            moved.pop(moved_name, None)
                    else:  # under an `if`, a move adds the name only for what runs under that `if` too
                        moved.update((moved_name, moved.get(moved_name, here) & here) for moved_name in names)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in wrapped:
            calls += 1
            # `model(**data)` straight from the loader (pan_pp's train) is an input not moved, as `model(x)` is
            if not all(_moves(a, _reaching_moves(moved, here)) or isinstance(a, ast.Constant)
                       or isinstance(a, ast.Name) and a.id in numbers
                       for a in (*node.args, *(k.value for k in node.keywords))):
                return False
    return True if calls else None


def _number_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of ``function`` whose default is a number, a string or a bool (RAFT's ``iters=24``): not
    tensors, whatever a caller gives (a ``None`` default may stand for one)."""
    return {a.arg for a, d in parameter_defaults(function).items()
            if isinstance(d, ast.Constant) and isinstance(d.value, (int, float, str))}


def _reaching_moves(moved: Mapping[str, frozenset[tuple[int, str]]], here: frozenset[tuple[int, str]]) -> set[str]:
    """The moved names whose moves surely ran before code under the branches ``here``."""
    return {name for name, under in moved.items() if under <= here}


def _pairs(target: ast.expr, value: ast.expr) -> Iterable[tuple[ast.expr, ast.expr]]:
    """Each name an assignment binds with the value it gets: element by element for ``a, b = x, y``."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return zip(target.elts, value.elts)
    return [(target, value)]


def _in_order(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` in source order, not those of the functions it defines."""
    found: list[ast.AST] = []
    for child in ast.iter_child_nodes(scope):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(child)
        found.extend(_in_order(child))
    return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _moves(value: ast.expr, moved: set[str]) -> bool:
    """Whether ``value`` holds data moved to a device: a ``.cuda()``/``.to(...)`` call in it, a call given the device
    (batteries' ``bx, by = t2d((bx, by), device)``), or a name moved before."""
    return any(_places(n) if isinstance(n, ast.Call) else ast.unparse(n) in moved
               for n in ast.walk(value) if isinstance(n, (ast.Call, ast.Name)))


def _places(call: ast.Call) -> bool:
    """Whether ``call`` puts data on a device: ``.cuda()``, ``.to(...)``, or a call given the device (``device``,
    ``args.device``, ``device=...``)."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("cuda", "to"):
        return True
    return any(isinstance(a, ast.Name) and a.id == "device" or isinstance(a, ast.Attribute) and a.attr == "device"
               for a in call.args) or any(k.arg == "device" for k in call.keywords)


def _numpy_float64_lines(tree: ast.Module) -> list[int]:
    """Lines whose code names numpy's float64 (``np.float64``, ``numpy.double``) other than to compare a dtype with
    it (``if dtype == np.float64: return np.float32``), or to make an array that its function never makes a tensor
    of (WaveRNN's ``output = output.cpu().numpy().astype(np.float64)``, then written to a wav file); a docstring
    names nothing."""
    compared = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Compare) for n in ast.walk(c)}
    kept = _arrays_kept(tree)
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in (
        "float64", "double") and id(node) not in compared and id(node) not in kept
        and _NUMPY_FLOAT64.fullmatch(ast.unparse(node))]
    if found and _every_array_tensor_cast(tree):
        # DDPM's `get_beta_schedule`: float64 betas, made a tensor only as `torch.from_numpy(betas).float()`
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        helpers = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in called]
        found = [node for node in found if not any(f.lineno <= node.lineno <= (f.end_lineno or f.lineno)
                                                   for f in helpers)]
    return [node.lineno for node in found]


def _every_array_tensor_cast(tree: ast.Module) -> bool:
    """Whether every tensor the module makes of an array (``torch.from_numpy(a)``, no dtype of its own) is cast
    on the way (``torch.from_numpy(betas).float().to(device)``), and there is one: no float64 array of the module's
    own functions reaches a device through it."""
    parents = parent_map(tree)
    made = 0
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and _tensor_of_array(call)):
            continue
        made += 1
        outer: ast.AST = call
        while isinstance(parent := parents.get(id(outer)), (ast.Call, ast.Attribute)) and (
                getattr(parent, "func", None) is outer or getattr(parent, "value", None) is outer):
            outer = parent
        if not isinstance(outer, ast.expr) or not _cast_before_move(_links(outer), call):
            return False
    return made > 0


def _cast_before_move(links: list[ast.expr], made: ast.Call) -> bool:
    """Whether the chain ``links`` (outermost first, `_links`) casts the tensor ``made`` makes before any move:
    ``torch.from_numpy(b).float().to(d)``, or ``.cuda().float()``, which the port writes so, not
    ``torch.from_numpy(b).to(d).float()`` (float64 on the device first)."""
    outer = links[:links.index(made)] if made in links else []
    for at in range(len(outer) - 1, -1, -1):
        node = outer[at]
        if isinstance(node, ast.Call) and _casts(node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
            # `.cuda().float()`: TP001 writes `.float().to(tp.device())` (UnOpticalFlow's warp test), the cast first
            return _cast_first(node, outer[at - 2] if at >= 2 else None)  # the call of the attribute on this move
    return False


def _arrays_kept(tree: ast.Module) -> set[int]:
    """The nodes of assignments ``name = ...`` in a function where ``name`` never goes into a tensor there
    (``torch.from_numpy(name)``, ``torch.tensor(name)``) nor leaves it (``return name``, an attribute set); in the
    module, whose code reads its names anywhere, only those of a tensor's data copied out (``.numpy()``) that no
    code of the module makes a tensor of (mtm-meta-learning's ``weights_save = np.float64(w.cpu().numpy())``,
    written to a file), not a table of dtypes other code reads."""
    kept: set[int] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        used = {n.id for call in ast.walk(function) if isinstance(call, ast.Call) and _tensor_of_array(call)
                for arg in call.args[:1] for n in ast.walk(arg) if isinstance(n, ast.Name)}
        used |= {n.id for r in ast.walk(function) if isinstance(r, (ast.Return, ast.Yield)) and r.value is not None
                 for n in ast.walk(r.value) if isinstance(n, ast.Name)}
        passed = _only_passed(function) if isinstance(function, ast.Module) else set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id not in used
                                                    for t in node.targets) and (
                    not isinstance(function, ast.Module) or all(
                        isinstance(t, ast.Name) and t.id in passed for t in node.targets) and any(
                        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "numpy"
                        for n in ast.walk(node.value))):
                kept.update(id(n) for n in ast.walk(node.value))
    return kept


def _only_passed(tree: ast.Module) -> set[str]:
    """The names the module reads only as a whole argument of calls (``f.write(b2a_base64(weights_save))``): no
    other value is made of them there (``scaled = window * 2`` is one)."""
    parents = parent_map(tree)
    reads: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))
            reads[node.id] = reads.get(node.id, True) and isinstance(parent, ast.Call) and node in parent.args
    return {name for name, only in reads.items() if only}


def _numpy_defaults_moved(tree: ast.Module) -> list[int]:
    """Lines where a tensor made from a numpy array of float64 by default (``torch.from_numpy(rng.randn(1, z))``,
    no ``dtype=``) is put on a device in the same expression (``.to(device)``, ``.cuda()``) with no cast between."""
    found = []
    rewards = _rewards(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("to", "cuda") and (node.func.attr == "cuda" or node.args or node.keywords)):
            continue
        if any(k.arg == "dtype" for k in node.keywords):
            continue
        inner = node.func.value
        while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr not in _CASTS \
                and inner.func.attr not in ("from_numpy", "tensor", "as_tensor"):
            inner = inner.func.value  # `.unsqueeze(0)`, `.contiguous()`: no cast
        if isinstance(inner, ast.Call) and _tensor_of_array(inner) and (_float64_maker(inner.args[0]) or (
                isinstance(inner.args[0], ast.Name) and inner.args[0].id in rewards)):
            found.append(node.lineno)
    return found


def _float64_names_moved(tree: ast.Module) -> list[int]:
    """Lines where a tensor named after it was made from a float64 numpy array is put on a device, statement by
    statement in each function: PyTorch-Wavelet-Toolbox's ``t = np.linspace(...)``, ``sig = signal.chirp(t, ...)``
    (numpy and scipy keep float64), ``sig = torch.from_numpy(sig)``, then ``sig = sig.cuda()``."""
    from torchport.codemods.analysis.names import ast_chain, import_map, qualify  # LibCST's, for a run that parses

    imports = import_map(tree)
    parents = parent_map(tree)

    def numeric(call: ast.Call) -> bool:
        """A numpy or scipy function (its results keep the float64 of their arguments)."""
        dotted = ast_chain(call.func)
        return dotted is not None and any(name.split(".", 1)[0] in ("numpy", "scipy")
                                          for name in qualify(dotted, imports))

    def floaty(node: ast.expr, arrays: set[str]) -> bool:
        """An array of float64: a numpy default, a name bound to one (or a list of them), or what a numpy or scipy
        function makes of such (``np.concatenate(mask)``, ``np.concatenate([np.zeros(n), np.ones(m)])``)."""
        if isinstance(node, ast.Name):
            return node.id in arrays
        if isinstance(node, (ast.List, ast.Tuple)):
            return bool(node.elts) and all(floaty(e, arrays) for e in node.elts)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):  # stylegan2's `[rng(seed).randn(z) for seed in s]`
            return floaty(node.elt, arrays)
        if isinstance(node, ast.UnaryOp):
            return floaty(node.operand, arrays)
        if isinstance(node, ast.Subscript):  # Mixup-Inference's `ma_img = ma[:, :, None, None]`: indexing keeps it
            return floaty(node.value, arrays)
        if isinstance(node, ast.BinOp):  # act's `np.exp(-k * np.arange(n))`, `k = 0.01`: a float times integers
            return floaty(node.left, arrays) or floaty(node.right, arrays) or any(
                scalar(a) and integers(b) for a, b in ((node.left, node.right), (node.right, node.left)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPING \
                and floaty(node.func.value, arrays):
            return True  # `weights.sum()`, `sig.copy()`
        return _float64_maker(node) or isinstance(node, ast.Call) and numeric(node) and not any(
            k.arg == "dtype" for k in node.keywords) and bool(node.args) and floaty(node.args[0], arrays)

    def scalar(node: ast.expr) -> bool:
        """A Python float: a literal, or a name the scope binds to one."""
        if isinstance(node, ast.UnaryOp):
            return scalar(node.operand)
        return isinstance(node, ast.Constant) and isinstance(node.value, float) or isinstance(
            node, ast.Name) and node.id in floats

    def integers(node: ast.expr) -> bool:
        """An array of integers: numpy's ``arange`` of integers, with no dtype."""
        if isinstance(node, ast.UnaryOp):
            return integers(node.operand)
        return isinstance(node, ast.Call) and numeric(node) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "arange" and not node.keywords and not any(
                isinstance(a, ast.Constant) and isinstance(a.value, float) for a in node.args)

    def placed(receiver: ast.expr, arrays: set[str], tensors: set[str]) -> bool:
        """A float64 tensor: a name bound to one, or made of a float64 array, through methods keeping its dtype
        (``torch.tensor(direction).abs()``)."""
        while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
                receiver.func.attr in _KEEPING:
            receiver = receiver.func.value
        return isinstance(receiver, ast.Name) and receiver.id in tensors or (
            isinstance(receiver, ast.Call) and _tensor_of_array(receiver) and floaty(receiver.args[0], arrays))

    # module functions -> the places of the tuple they return that hold float64 arrays (torch_ransac3d's
    # `generate_line_points` returns `..., line_direction, line_origin`): read in a first pass, used in the second
    functions = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    returned: dict[str, set[int]] = {}
    found: list[int] = []
    scopes = (tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))))
    for second in (False, True):
        for scope in scopes:
            arrays: set[str] = set()  # names of float64 arrays, or of lists of them
            tensors: set[str] = set()
            floats = {t.id for n in _in_order(scope) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                      and isinstance(n.value.value, float) for t in n.targets if isinstance(t, ast.Name)}
            # an assignment binds once its value ran: `sig = sig.cuda()` moves the float64 tensor first
            own = [n for n in _in_order(scope) if isinstance(n, (ast.Assign, ast.Call, ast.Return))]
            for node in sorted(own, key=lambda n: (n.end_lineno or n.lineno, n.end_col_offset or 0)
                               if isinstance(n, ast.Assign) else (n.lineno, n.col_offset)):
                target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
                called = node.value.func.id if isinstance(node, ast.Assign) and isinstance(
                    node.value, ast.Call) and isinstance(node.value.func, ast.Name) else None
                if isinstance(node, ast.Return):
                    owner = scope.name if not isinstance(scope, ast.Module) else None
                    if not second and isinstance(node.value, ast.Tuple) and owner in functions:
                        returned.setdefault(owner, set()).update(
                            i for i, e in enumerate(node.value.elts) if floaty(e, arrays))
                elif isinstance(target, ast.Tuple) and called in returned:
                    for i, element in enumerate(target.elts):
                        if isinstance(element, ast.Name):
                            tensors.discard(element.id)
                            (arrays.add if i in returned[called] else arrays.discard)(element.id)
                elif isinstance(target, ast.Name) and isinstance(node, ast.Assign):
                    value, name = node.value, target.id
                    array = floaty(value, arrays) and not isinstance(value, ast.Name)
                    tensor = isinstance(value, ast.Call) and _tensor_of_array(value) and floaty(value.args[0], arrays)
                    arrays.discard(name)
                    tensors.discard(name)
                    (arrays if array else tensors if tensor else set()).add(name)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "append" and isinstance(node.func.value, ast.Name) and \
                        len(node.args) == 1 and floaty(node.args[0], arrays):
                    arrays.add(node.func.value.id)  # a list of float64 arrays (decision-transformer's `mask`)
                elif second and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in ("cuda", "to") and placed(node.func.value, arrays, tensors) \
                        and (node.func.attr == "cuda" or node.args or node.keywords) \
                        and not any(k.arg == "dtype" for k in node.keywords) \
                        and not any(isinstance(a, ast.Attribute) and a.attr not in _WIDE and any(
                            name.split(".")[0] == "torch" for name in qualify(ast_chain(a) or "", imports))
                            for a in node.args) and not _cast_next(node, parents):  # `.to(torch.float32)`: a cast
                    found.append(node.lineno)
    return found


def _cast_next(move: ast.Call, parents: Mapping[int, ast.AST]) -> bool:
    """`_cast_first` of ``move`` and the call around it, found through `parent_map`'s ``parents``."""
    attribute = parents.get(id(move))
    return _cast_first(move, parents.get(id(attribute)) if isinstance(attribute, ast.Attribute) else None)


def _cast_first(move: ast.Call, cast: ast.AST | None) -> bool:
    """Whether ``move`` is a ``.cuda()`` that ``cast``, the call of an attribute of it, casts at once
    (``torch.from_numpy(x).cuda().float()``): TP001 writes ``.float().to(tp.device())``, so the float64 tensor is
    float32 before it reaches the device."""
    return isinstance(move.func, ast.Attribute) and move.func.attr == "cuda" and not move.args \
        and not move.keywords and isinstance(cast, ast.Call) and isinstance(cast.func, ast.Attribute) \
        and cast.func.value is move and not cast.args and not cast.keywords \
        and cast.func.attr in _CASTS - {"to", "type", "double"}


def batch_moves(tree: ast.Module) -> tuple[int, int]:
    """``(cast, uncast)``: how many moves to a device (``.to(...)``, ``.cuda()``) of what a ``for`` loop gives
    (``for i, (x, y) in enumerate(loader):``) cast it on the way (``x.float().to(device)``, or ``y = y.float()``
    before ``y[:, -n:].to(device)``, COVID-19-age-groups' forecasting loop) and how many do not, or may not: a
    comprehension over it (``[b.to(device) for b in batch]``) or a call given it and a device (``to_device(batch,
    device)``) counts as uncast. Read statement by statement in each loop; a name bound again from a cast of it is
    cast from there on, one unpacked from it (``x, y = batch``) is the batch still."""
    cast = uncast = 0
    forwards = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "forward"
                for n in ast.walk(f)}  # a module's forward iterates its layers, not a loader
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or id(loop) in forwards or isinstance(
                loop.iter, (ast.Tuple, ast.List, ast.Set)) or (
                any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MODULE_METHODS
                    for n in ast.walk(loop.iter))):
            continue  # `for layer in (self.gpt2, self.out_layer):`, `for name, p in model.named_parameters():`
        batch = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        nodes = (n for s in loop.body for n in ast.walk(s)
                 if isinstance(n, (ast.Assign, ast.Call, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)))
        for node in sorted(nodes, key=lambda n: (n.end_lineno or n.lineno, n.end_col_offset or 0)
                           if isinstance(n, ast.Assign) else (n.lineno, n.col_offset)):
            if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
                if any(_of_batch(g.iter, batch) for g in node.generators) and any(
                        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")
                        for n in ast.walk(node)):
                    uncast += 1  # moved item by item: not read
            elif isinstance(node, ast.Assign):
                names = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if any(_casts(n) for n in ast.walk(node.value) if isinstance(n, ast.Call)):
                    batch -= names
                elif _of_batch(node.value, batch):
                    batch |= names  # `y = y[:, -n:]`, `x, y = batch`: the batch still; `out = block(x)` is not
                else:
                    batch -= names
            elif isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda") and _of_batch(
                    node.func.value, batch) and (node.func.attr == "cuda" or node.args or node.keywords):
                if _chain_casts(node.func.value) or any(k.arg == "dtype" and _narrow(k.value) for k in node.keywords):
                    cast += 1
                else:
                    uncast += 1
            elif any(_of_batch(a, batch) for a in node.args) and any(
                    isinstance(a, ast.Name) and a.id == "device" or isinstance(a, ast.Attribute) and a.attr == "device"
                    for a in (*node.args, *(k.value for k in node.keywords))):
                uncast += 1  # `to_device(batch, device)`: moved elsewhere, not read
    return cast, uncast


def _narrow(dtype: ast.expr) -> bool:
    """Whether ``dtype`` names a torch dtype MPS has (``torch.float32``), not float64 or complex128."""
    return isinstance(dtype, ast.Attribute) and isinstance(dtype.value, ast.Name) and dtype.value.id == "torch" \
        and dtype.attr not in _WIDE and dtype.attr != "double"


def _of_batch(node: ast.expr, batch: set[str]) -> bool:
    """Whether ``node`` is one of the names ``batch``, through its items, attributes and methods (``y[:, -n:]``,
    ``x.float()``), not what calling it gives (``block(x)``)."""
    links = _links(node)
    return not any(isinstance(n, ast.Call) and not isinstance(n.func, ast.Attribute) for n in links) \
        and isinstance(links[-1], ast.Name) and links[-1].id in batch


def _casts(call: ast.Call) -> bool:
    """Whether ``call`` changes a dtype to one MPS has (``.float()``, ``.to(torch.float32)``), not ``.double()``."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in _CASTS:
        return False
    if call.func.attr in ("to", "type"):
        return any(_narrow(a) for a in call.args) or any(k.arg == "dtype" and _narrow(k.value) for k in call.keywords)
    return call.func.attr != "double"


def _chain_casts(node: ast.expr) -> bool:
    """Whether a chain (``y.float()[:, :2]``) casts its tensor on the way (`_casts`)."""
    return any(isinstance(n, ast.Call) and _casts(n) for n in _links(node))


def _dataset_float64(tree: ast.Module) -> list[int]:
    """Lines making a float64 numpy array that a dataset class (one defining ``__getitem__``) gives: returned by
    ``__getitem__`` (EfficientAT's ESC50: ``target = np.zeros(n)``, ``target[i] = 1``, ``return ..., target``), or
    stored, appended or returned by another of its methods (Transfer-Learning-Library's ImageRegression:
    ``target = np.array(..., dtype=np.float)``, ``data_list.append((path, target))``). A DataLoader batches them as
    float64 tensors. Statement by statement in each method: a cast (``.astype(np.float32)``, ``.float()``,
    ``torch.tensor(x, dtype=...)``) ends a name's float64; arithmetic, indexing and dtype-keeping methods keep it.
    A Python float (``float(rating)``) given as it is batches as float64 too (pmf's MovieLens, whose subclasses of
    the same module build the rows its ``__getitem__`` gives). Not certain enough for ``tp.avoid_mps``: a program
    may cast its batches before moving them."""
    found: list[int] = []
    classes = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
    for cls in classes:
        subclasses = [c for c in classes if any(isinstance(b, ast.Name) and b.id == cls.name for b in c.bases)]
        methods = [m for c in (cls, *subclasses) for m in c.body
                   if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        getitem = next((m for m in methods if m.name == "__getitem__"), None)
        if getitem is None:
            continue
        given = _attributes_given(getitem)
        # methods whose result a given attribute holds (ImageRegression's `self.samples = self.parse_data_file(f)`)
        # or a name `__getitem__` gives back (T2M-GPT's WordVectorizer: `pos_vec = self._get_pos_ohot(pos)`;
        # Simple-CenterNet's `hm, wh, offset, mask = self.generate_targets(boxes)`)
        returned = {n.id for r in ast.walk(getitem) if isinstance(r, ast.Return) and r.value is not None
                    for n in ast.walk(r.value) if isinstance(n, ast.Name)}
        feeding = {n.value.func.attr for n in ast.walk(cls) if isinstance(n, ast.Assign)
                   and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)
                   and isinstance(n.value.func.value, ast.Name) and n.value.func.value.id == "self"
                   and any(isinstance(t, ast.Attribute) and t.attr in given
                           or isinstance(t, ast.Name) and t.id in returned
                           or isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id in returned
                                                               or isinstance(e, ast.Attribute) and e.attr in given
                                                               for e in t.elts) for t in n.targets)}
        for method in methods:
            arrays: dict[str, int] = {}  # name -> the line making its float64 array
            floats: dict[str, int] = {}  # name -> the line making its Python float
            for node in _in_order(method):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        line = _float64_origin(node.value, arrays)
                        if line is None:
                            arrays.pop(target.id, None)
                        else:
                            arrays[target.id] = line
                        if _python_float(node.value):
                            floats[target.id] = node.lineno
                        else:
                            floats.pop(target.id, None)
                    elif method.name != "__getitem__" and isinstance(target, ast.Attribute) and isinstance(
                            target.value, ast.Name) and target.value.id == "self" and target.attr in given:
                        found.extend(_float64_given(node.value, arrays) + _floats_given(node.value, floats))
                elif isinstance(node, ast.Return) and (method.name == "__getitem__" or method.name in feeding):
                    found.extend(_float64_given(node.value, arrays) + _floats_given(node.value, floats))
                elif method.name in feeding and isinstance(node, ast.Call) and isinstance(
                        node.func, ast.Attribute) and node.func.attr == "append" and len(node.args) == 1:
                    found.extend(_float64_given(node.args[0], arrays) + _floats_given(node.args[0], floats))
    return sorted(set(found))


def _python_float(node: ast.expr) -> bool:
    """``float(x)``: a Python float, which a DataLoader's default collate batches as a float64 tensor."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"


def _floats_given(node: ast.expr | None, floats: Mapping[str, int]) -> list[int]:
    """The lines making the Python floats ``node`` gives as they are (itself, or in a tuple or list)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return [line for e in node.elts for line in _floats_given(e, floats)]
    if isinstance(node, ast.Name) and node.id in floats:
        return [floats[node.id]]
    return [node.lineno] if node is not None and _python_float(node) else []


def _attributes_given(getitem: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The attributes ``self.<name>`` whose items ``__getitem__`` gives back: returned as they are (``return
    self.targets[i]``) or through names bound from them (``path, target = self.samples[index]``, then ``return img,
    target``). PDVC's ``self.uniform_sampling``, only used to pick clip times, is none."""
    def attribute(value: ast.expr) -> str | None:
        while isinstance(value, ast.Subscript):
            value = value.value
        return value.attr if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
            and value.value.id == "self" else None

    bound: dict[str, str] = {}
    for node in ast.walk(getitem):
        if isinstance(node, ast.Assign) and (name := attribute(node.value)) is not None:
            for target in node.targets:
                for element in (target.elts if isinstance(target, ast.Tuple) else [target]):
                    if isinstance(element, ast.Name):
                        bound[element.id] = name
    given: set[str] = set()
    for node in ast.walk(getitem):
        if isinstance(node, ast.Return) and node.value is not None:
            for part in ast.walk(node.value):
                if isinstance(part, ast.Name) and part.id in bound:
                    given.add(bound[part.id])
                elif isinstance(part, ast.expr) and (name := attribute(part)) is not None:
                    given.add(name)
    return given


def _float64_origin(node: ast.expr, arrays: Mapping[str, int]) -> int | None:
    """The line making the float64 array that ``node`` is, or None; ``arrays``: name -> the line making its array."""
    if isinstance(node, ast.Name):
        return arrays.get(node.id)
    if _explicit_float64(node):
        return node.lineno
    if isinstance(node, ast.BinOp):
        return _float64_origin(node.left, arrays) or _float64_origin(node.right, arrays)
    if isinstance(node, ast.Subscript):
        return _float64_origin(node.value, arrays)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPING:
        return _float64_origin(node.func.value, arrays)
    if isinstance(node, ast.Call) and _tensor_of_array(node):
        return _float64_origin(node.args[0], arrays)
    return None


def _float64_given(node: ast.expr | None, arrays: Mapping[str, int]) -> list[int]:
    """The lines making the float64 arrays that ``node`` holds (itself, or a tuple, list or dict of them)."""
    if node is None:
        return []
    if isinstance(node, (ast.Tuple, ast.List)):
        return [line for e in node.elts for line in _float64_given(e, arrays)]
    if isinstance(node, ast.Dict):
        return [line for v in node.values for line in _float64_given(v, arrays)]
    line = _float64_origin(node, arrays)
    return [line] if line is not None else []


def _explicit_float64(node: ast.expr) -> bool:
    """A numpy call making a float64 array: `_float64_maker`'s, ``np.zeros(n)``/``np.ones(n)``/``np.empty(n)``
    without a dtype, or one given ``dtype=float``/``np.float``/``np.float64`` (``np.array(x, dtype=np.float)``),
    ``x.astype(np.float64)``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    numpy = isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy")
    if node.func.attr == "astype":
        return bool(node.args) and _names_float64(node.args[0])
    dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
    if dtype is None and numpy and node.func.attr in ("zeros", "ones", "empty", "array", "asarray") \
            and len(node.args) >= 2:
        dtype = node.args[1]  # `np.zeros(n, np.float32)`
    if dtype is not None:
        return numpy and _names_float64(dtype)
    return _float64_maker(node) or numpy and node.func.attr in ("zeros", "ones", "empty")


def _names_float64(node: ast.expr) -> bool:
    """``float``, ``np.float``, ``np.float64``, ``np.double``, ``"float64"``: a numpy dtype of float64."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else \
        node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
    return name == "float" or _WIDE.get(name or "") == "float64"


def _rewards(tree: ast.Module) -> set[str]:
    """The names bound to the rewards an environment's ``step()`` gives (``obs, reward, *rest = envs.step(a)``),
    where the module imports a library whose rewards are float64 arrays (`torch_facts` role ``float64_env``)."""
    libraries = {alias.name.split(".", 1)[0] for node in tree.body if isinstance(node, ast.Import)
                 for alias in node.names}
    if not libraries & _ENV_LIBRARIES:
        return set()
    return {target.elts[1].id for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "step" for target in node.targets
            if isinstance(target, ast.Tuple) and len(target.elts) >= 2 and isinstance(target.elts[1], ast.Name)}


def _tensor_of_array(call: ast.Call) -> bool:
    """``from_numpy(a)``, ``torch.tensor(a)``, ``torch.as_tensor(a)`` with no ``dtype=`` of its own: the tensor
    has the array's dtype."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in ("from_numpy", "tensor", "as_tensor") and bool(call.args) and not any(
        k.arg == "dtype" for k in call.keywords)


def _float64_maker(node: ast.expr) -> bool:
    """``np.random.randn(...)``, ``rng.normal(...)``, ``np.linspace(...)`` without a dtype, ``x.astype(float)``,
    through reshapes and indexing that keep the dtype."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPING:
            node = node.func.value
        else:
            break
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr == "array" and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy") \
            and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)) and not node.keywords:
        # `np.array([1.0, 2.0, 3.0])`: numbers, one of them a float
        items = [e.operand if isinstance(e, ast.UnaryOp) else e for e in node.args[0].elts]
        return all(isinstance(e, ast.Constant) and type(e.value) in (int, float) for e in items) and any(
            isinstance(e, ast.Constant) and type(e.value) is float for e in items)
    if node.func.attr == "astype":
        return bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id == "float"
    receiver = node.func.value  # not torch's (float32) nor Python's `random` (a float: float32 as a tensor)
    return node.func.attr in _MAKERS and not any(k.arg == "dtype" for k in node.keywords) and not (
        isinstance(receiver, ast.Name) and receiver.id in ("torch", "th", "random")) and not (
        isinstance(receiver, ast.Attribute) and ast.unparse(receiver).split(".", 1)[0] in ("torch", "th"))


def _placed_if_on_cuda(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` where data moves only if other data is on CUDA (``x.cuda() if self.is_cuda() else x``,
    ``if t.is_cuda: y = y.cuda()``, the flag read into a name first), or a device is CUDA's only then
    (``torch.device('cuda') if x.is_cuda else torch.device('cpu')``): on MPS that data is not on CUDA, so what the
    port moves to MPS meets data left on the CPU."""
    found = []
    following = {id(a): b for block in ast.walk(tree) for field in ("body", "orelse", "finalbody")
                 if isinstance(stmts := getattr(block, field, None), list) for a, b in zip(stmts, stmts[1:])}
    # flags an object keeps itself (self-supervised-depth-completion's Intrinsics: `self.is_cuda = True` in its own
    # `cuda()`): they say where its own port moved it, not where a tensor is
    stored = {t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    # TP024 follows no flag where the module sets an `is_cuda` of its own (manydepth's encoder)
    own = any(isinstance(t, ast.Attribute) and t.attr == "is_cuda" for n in ast.walk(tree)
              if isinstance(n, (ast.Assign, ast.AnnAssign)) for t in (n.targets if isinstance(n, ast.Assign)
                                                                      else [n.target]))
    # a flag read from a tensor first (Deep-RL Hands-On's kfac: `is_cuda = a.is_cuda`, then `if is_cuda:`)
    read = {n.targets[0].id for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Attribute)
            and n.value.attr in ON_CUDA_FLAGS}
    for node in ast.walk(tree):
        # a flag read negated moves data that is not on CUDA (Bayesian-Neural-Networks' `if not v.is_cuda and
        # cuda: v = v.cuda()`): off CUDA all of it goes, to one device
        negated = {id(n.operand) for n in ast.walk(node.test) if isinstance(n, ast.UnaryOp)
                   and isinstance(n.op, ast.Not)} if isinstance(node, (ast.If, ast.IfExp)) else set()
        if not isinstance(node, (ast.If, ast.IfExp)) or not any(
                (_data_flag(n, stored) or isinstance(n, ast.Name) and n.id in read) and id(n) not in negated
                for n in ast.walk(node.test)):
            continue
        body = node.body if isinstance(node.body, list) else [node.body]
        if not own and _follows(node, following.get(id(node))):
            continue  # TP024 moves it to that data's device
        if isinstance(node, ast.If) and _placed_beside_after(node, following.get(id(node))):
            continue
        if _between_cuda_devices(node.test, body):
            continue
        if _moves_in(body):
            found.append((node.lineno, MOVED_IF_ON_CUDA))
        elif any(isinstance(n, ast.Constant) and isinstance(n.value, str) and (
                n.value == "cuda" or n.value.startswith("cuda:")) or isinstance(n, ast.Call) and isinstance(
                n.func, ast.Attribute) and n.func.attr == "get_device" and not n.args
                for part in body for n in ast.walk(part)):
            # SupContrast's loss: `device = torch.device('cuda') if features.is_cuda else torch.device('cpu')`;
            # latent_ode's `device = torch.device('cpu')` / `if tensor.is_cuda: device = tensor.get_device()`
            found.append((node.lineno, CHOSEN_IF_ON_CUDA))
    if not own:
        found.extend((line, MOVED_IF_ON_CUDA) for line in _flag_passed_to_a_move(tree, stored))
    return found


def _between_cuda_devices(test: ast.expr, body: list[ast.stmt] | list[ast.expr]) -> bool:
    """Whether ``body`` moves data only to the device of a tensor ``test`` requires on CUDA, beside another it
    requires there too (madgrad's tests: ``if y.is_cuda and bias.is_cuda and y.get_device() != bias.get_device(): y =
    y.cuda(bias.get_device())``): a move from one CUDA device to another, which off CUDA has nothing to do."""
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    flagged = {ast.unparse(t.value) for t in terms if isinstance(t, ast.Attribute) and t.attr == "is_cuda"}
    moves = [n for part in body for n in ast.walk(part) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "to")]

    def of_flagged(target: ast.expr) -> bool:
        return isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) and (
            target.func.attr == "get_device") and ast.unparse(target.func.value) in flagged or isinstance(
            target, ast.Attribute) and target.attr == "device" and ast.unparse(target.value) in flagged

    return len(flagged) >= 2 and bool(moves) and all(
        len(m.args) == 1 and of_flagged(m.args[0]) and isinstance(m.func, ast.Attribute)
        and ast.unparse(m.func.value) in flagged for m in moves)


def _flag_passed_to_a_move(tree: ast.Module, stored: set[str]) -> list[int]:
    """Lines of calls of the module's own functions that pass where data is (``next(self.parameters()).is_cuda``)
    as an argument whose parameter guards a move (crnn-pytorch's ``self.init_hidden(n, gpu)``, then ``if gpu: h0 =
    h0.cuda()``): on MPS the flag is false, so that data stays on the CPU beside what the port moved."""
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, []).append(node)

    def guards_a_move(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
        return any(isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == parameter
                   and _moves_in(n.body) for n in ast.walk(function))

    found = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        given = [(i, a) for i, a in enumerate(call.args) if _data_flag(a, stored)] + [
            (k.arg, k.value) for k in call.keywords if k.arg and _data_flag(k.value, stored)]
        if not given:
            continue
        func = call.func
        method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
        name = func.attr if isinstance(func, ast.Attribute) and method else \
            func.id if isinstance(func, ast.Name) else None
        callees = functions.get(name or "", [])
        if len(callees) != 1:
            continue  # none of the module's, or several of that name: which one runs is not settled here
        positional = [a.arg for a in (*callees[0].args.posonlyargs, *callees[0].args.args)][1 if method else 0:]
        for at, _ in given:
            parameter = positional[at] if isinstance(at, int) and at < len(positional) else at
            if isinstance(parameter, str) and guards_a_move(callees[0], parameter):
                found.append(call.lineno)
                break
    return found


def _data_flag(node: ast.AST, stored: set[str]) -> bool:
    """Whether ``node`` reads where a tensor is (``x.is_cuda``), not a flag an object keeps itself (``self.is_cuda``
    where the module assigns that attribute of ``self``, ``stored``)."""
    return isinstance(node, ast.Attribute) and node.attr in ON_CUDA_FLAGS and not (
        node.attr in stored and isinstance(node.value, ast.Name) and node.value.id == "self")


def _moves_in(body: Sequence[ast.AST]) -> bool:
    """Whether ``body`` moves data: a ``.cuda(...)`` or ``.to(...)`` call anywhere in it."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "to")
               for part in body for n in ast.walk(part))


def _placed_beside_after(node: ast.If, after: ast.stmt | None) -> bool:
    """Whether the statement after ``if y.is_cuda: x = x.cuda(...)`` puts ``x`` beside ``y`` whatever the branch
    did (Dacon_LGAI's SSIM: ``window = window.type_as(img1)``, or ``x = x.to(y.device)``): the data meets on every
    device, so the branch splits nothing."""
    if not (isinstance(node.test, ast.Attribute) and isinstance(after, ast.Assign) and len(after.targets) == 1
            and isinstance(call := after.value, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    other, name = ast.unparse(node.test.value), ast.unparse(after.targets[0])
    moved = {ast.unparse(t) for s in node.body if isinstance(s, ast.Assign) for t in s.targets}
    beside = call.func.attr == "type_as" and len(call.args) == 1 and ast.unparse(call.args[0]) == other or (
        call.func.attr == "to" and len(call.args) >= 1 and ast.unparse(call.args[0]) == f"{other}.device")
    return beside and name in moved and ast.unparse(call.func.value) == name


def _follows(node: ast.If | ast.IfExp, after: ast.stmt | None = None) -> bool:
    """``x.cuda() if y.is_cuda else x``, ``if y.is_cuda: x = x.cuda()`` alone, or ``if y.is_cuda: return x.cuda()``
    then ``return x`` (``after``, the next statement): TP024 writes ``x.to(y.device)``; ``torch.device("cuda") if
    y.is_cuda else torch.device("cpu")`` (or the strings): TP024 writes ``y.device`` (``y.device.type``)."""
    def moved(call: ast.expr) -> str | None:
        """``x`` of ``x.cuda()``, ``x.to("cuda")``, ``x.to(y.device)`` or ``x.to(y.get_device())``, ``y`` the data
        tested."""
        if isinstance(call, ast.Call) and not call.keywords and isinstance(call.func, ast.Attribute) and isinstance(
                call.func.value, (ast.Name, ast.Attribute)) and (
                (call.func.attr == "cuda" and not call.args) or (call.func.attr == "to" and len(call.args) == 1 and (
                    isinstance(call.args[0], ast.Constant) and call.args[0].value == "cuda"
                    or ast.unparse(call.args[0]) == f"{tested}.device")) or (
                    call.func.attr in ("to", "cuda") and len(call.args) == 1
                    and ast.unparse(call.args[0]) == f"{tested}.get_device()")):
            return ast.unparse(call.func.value)
        return None

    if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Attribute) and node.test.attr == "is_cuda" \
            and first_weight(node.test.value) and device_choice(node) is not None:
        return True  # `"cuda" if next(self.buffers()).is_cuda else "cpu"`: TP024 writes `next(...).device.type`
    if not (isinstance(node.test, ast.Attribute) and node.test.attr == "is_cuda") or not all(
            isinstance(n, (ast.Name, ast.Attribute)) for n in _links(node.test.value)):
        return False  # TP024 follows a name or a chain of attributes (not `next(self.parameters())` but there)
    tested = ast.unparse(node.test.value)  # `y` of `y.is_cuda`, which `moved` reads
    if isinstance(node, ast.IfExp):
        if device_choice(node) is not None:
            return True  # TP024 writes `features.device`
        return moved(node.body) is not None and moved(node.body) == ast.unparse(node.orelse)
    if node.orelse or len(node.body) != 1:
        return False
    if isinstance(ret := node.body[0], ast.Return):
        return ret.value is not None and isinstance(after, ast.Return) and after.value is not None \
            and moved(ret.value) == ast.unparse(after.value)
    return isinstance(assign := node.body[0], ast.Assign) and len(assign.targets) == 1 \
        and moved(assign.value) == ast.unparse(assign.targets[0])


def first_weight(node: ast.expr) -> bool:
    """``next(x.parameters())`` or ``next(x.buffers())``, ``x`` a name or a chain of attributes: a module's first
    weight, which a device choice reads once (TP024 follows it, `torchport.codemods.device.FollowDevice`)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next" \
        and len(node.args) == 1 and isinstance(inner := node.args[0], ast.Call) and not inner.args \
        and isinstance(inner.func, ast.Attribute) and inner.func.attr in ("parameters", "buffers") \
        and all(isinstance(n, (ast.Name, ast.Attribute)) for n in _links(inner.func.value))


def device_choice(node: ast.IfExp) -> str | None:
    """``"device"`` for ``torch.device("cuda") if y.is_cuda else torch.device("cpu")`` (SupContrast's loss), ``"type"``
    for ``"cuda" if y.is_cuda else "cpu"``, else None: TP024 writes ``y.device`` (``y.device.type``), which gives the
    same on CUDA and the data's own device elsewhere (`torchport.codemods.device.FollowDevice`)."""
    def spec(arm: ast.expr) -> tuple[str, object] | None:
        if isinstance(arm, ast.Constant) and arm.value in ("cuda", "cpu"):
            return "type", arm.value
        if isinstance(arm, ast.Call) and ast.unparse(arm.func) in ("torch.device", "device") and len(arm.args) == 1 \
                and not arm.keywords and isinstance(arm.args[0], ast.Constant) and arm.args[0].value in ("cuda", "cpu"):
            return "device", arm.args[0].value
        return None

    chosen, other = spec(node.body), spec(node.orelse)
    return chosen[0] if chosen and other and chosen[0] == other[0] and (chosen[1], other[1]) == ("cuda", "cpu") \
        else None


def _arrays_moved(text: str, tree: ast.Module | None) -> bool:
    """Whether the module makes a tensor of an array it was given (``from_numpy(arr)``, ``torch.tensor(arr)`` with no
    dtype of its own: not a literal list, not ``dtype=torch.float32``) and puts it on a device (``.to(...)``,
    ``.cuda()``, ``device=``) in the same expression."""
    if tree is None:
        tree = parse(text)
        if tree is None:
            return True  # cautious: read as text
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        placed = any(k.arg == "device" for k in node.keywords) or (
            isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"))
        if not placed:
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and _tensor_of_array(inner) and not isinstance(
                    inner.args[0], (ast.List, ast.Tuple, ast.Constant)):
                return True
    return False


def handles_mps(tree: ast.Module) -> bool:
    """Whether the module's code (not its comments or docstrings) names MPS: ``torch.backends.mps``, ``"mps"``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.lower() == "mps" or isinstance(node, ast.Name) \
                and node.id.lower() == "mps":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and torch_facts.text("mps_spec").fullmatch(
                node.value):
            return True
    return False


def _wide_dtype_lines(tree: ast.Module, text: str, certain: bool = False) -> list[tuple[int, str]]:
    """``(line, "float64" | "complex128")`` where a tensor of that dtype can reach the device (``certain``: surely
    does; see `blocker`)."""
    parents = parent_map(tree)
    collective: dict[int, bool] = {}  # per function: each is read once, however many dtypes it names
    found = []
    # `torch.float64`, `th.double`: torch's dtypes, not `args.double` (Deep-RL's double-DQN flag) nor numpy's
    torch_names = {"torch"} | {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                               for a in n.names if a.name == "torch"}
    # `from torch import float64`: the name is torch's dtype (curvlinops' `DTYPE = float64`)
    imported = {a.asname or a.name: _WIDE[a.name] for n in tree.body if isinstance(n, ast.ImportFrom)
                and n.module == "torch" and not n.level for a in n.names if a.name in _WIDE and a.name != "double"}
    for node in ast.walk(tree):
        called = isinstance(call := parents.get(id(node)), ast.Call) and call.func is node  # `x.double()`: below
        if (isinstance(node, ast.Attribute) and node.attr in _WIDE and isinstance(node.value, ast.Name)
                and node.value.id in torch_names
                and not (called and node.attr == "double")
                or isinstance(node, ast.Name) and node.id in imported and not called) \
                and isinstance(node.ctx, ast.Load):
            if _in_collective_function(node, parents, collective):
                continue  # it runs in a process group, where a Mac's pick is the CPU already
            if (_made_on_device(node, parents) or _registered(node, parents)) if certain else _reaches_device(
                    node, parents, text):
                found.append((node.lineno, _WIDE[node.attr] if isinstance(node, ast.Attribute) else imported[node.id]))
        elif isinstance(node, ast.Name) and node.id in _BUILTIN_WIDE and _torch_dtype(node, parents) and not (
                _in_collective_function(node, parents, collective)) and (
                _made_on_device(node, parents) if certain else _reaches_device(node, parents, text)):
            found.append((node.lineno, _BUILTIN_WIDE[node.id]))  # DRL-Pytorch's `torch.tensor(a, dtype=float, ...)`
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "double" and not node.args and not _on_cpu(node.func.value) \
                and not _kept_on_cpu(node, parents, text) \
                and not _in_collective_function(node, parents, collective) and not _narrowed_again(node, parents) \
                and (not certain or _registered(node, parents) or _moved_at_once(node, parents)):
            found.append((node.lineno, "float64"))
    return found


def _of_numpy_math(call: ast.Call) -> bool:
    """``torch.tensor(np.log(p) - np.log(1 - p))`` with no dtype: a tensor of numpy's float64 scalars (a numpy
    function of `_NUMPY_MATH` on numbers, alone or in arithmetic with numbers)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in ("tensor", "as_tensor") and isinstance(
            call.func.value, ast.Name) and call.func.value.id in ("torch", "th") and call.args
            and not any(k.arg == "dtype" for k in call.keywords)):
        return False

    def scalar(node: ast.expr) -> bool | None:  # True: numpy's float64 in it; None: no numpy; False: unknown
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _NUMPY_MATH \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy") \
                and len(node.args) == 1 and not node.keywords:
            return True
        if isinstance(node, ast.BinOp):
            sides = (scalar(node.left), scalar(node.right))
            return False if False in sides else True if True in sides else None
        if isinstance(node, ast.UnaryOp):
            return scalar(node.operand)
        return None if isinstance(node, ast.Name) else False

    return scalar(call.args[0]) is True


_NUMPY_MATH = frozenset(torch_facts.words("numpy_math"))
_NUMPY_MATH_TEXT = re.compile(rf"\b(?:np|numpy)\.(?:{'|'.join(sorted(_NUMPY_MATH))})\(")


def _numpy_math_tensors(tree: ast.Module, certain: bool) -> list[tuple[int, str]]:
    """``(line, "float64")`` of each tensor made of numpy's float64 scalars (`_of_numpy_math`) that can reach the
    device (``certain``: registered with a module, or moved where it is made)."""
    parents = parent_map(tree)
    collective: dict[int, bool] = {}
    return [(node.lineno, "float64") for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _of_numpy_math(node)
            and not _in_collective_function(node, parents, collective)
            and (not certain or _registered(node, parents) or _moved_at_once(node, parents))]


def _moved_at_once(node: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the tensor ``node`` makes is moved to a device in the same expression: SCINet's
    ``batch_x.double().cuda()`` (a move to the CPU, ``.to('cpu')``, is none)."""
    attribute = parents.get(id(node))
    call = parents.get(id(attribute)) if isinstance(attribute, ast.Attribute) else None
    return isinstance(call, ast.Call) and call.func is attribute and isinstance(attribute, ast.Attribute) and (
        attribute.attr == "cuda" or attribute.attr == "to" and bool(call.args or call.keywords) and not _to_cpu(call))


def _registered(node: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Whether ``node`` is part of the tensor a module registers as a buffer or parameter (pytorch-ddpm's
    ``self.register_buffer('betas', torch.linspace(beta_1, beta_T, T).double())``): it goes wherever the module
    goes, and a port moves the module to the runtime's device."""
    child: ast.AST = node
    while (parent := parents.get(id(child))) is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Call) and child is not parent.func and (
                isinstance(parent.func, ast.Attribute) and parent.func.attr in ("register_buffer", "register_parameter")
                or call_name(parent) == "Parameter"):
            return True
        child = parent
    return False


# Python's types given as a torch dtype, as torch reads them
_BUILTIN_WIDE = {word: dtype for dtype in ("float64", "complex128") for word in torch_facts.words(f"python_{dtype}")}


def _torch_dtype(node: ast.expr, parents: Mapping[int, ast.AST]) -> bool:
    """Whether ``node`` is the ``dtype=`` of a torch call (``torch.tensor(x, dtype=float)``) or of ``.to``/``.new_*``
    (not numpy's ``np.array(x, dtype=float)``)."""
    call = _dtype_call(node, parents)
    if call is None:
        return False
    head = call.func
    if isinstance(head, ast.Attribute) and (head.attr == "to" or head.attr.startswith("new_")):
        return True
    while isinstance(head, ast.Attribute):
        head = head.value
    return isinstance(head, ast.Name) and head.id == "torch"


def _narrowed_again(node: ast.expr, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the float64 tensor ``node`` makes is cast to a narrower dtype in the same expression, before anything
    else reads it: transformer-xl's ``(-(-dist.double().log1p_() * 2 * n).expm1_()).log_().float()`` computes in
    float64 and keeps a float32 tensor."""
    child: ast.AST = node
    while (parent := parents.get(id(child))) is not None:
        if isinstance(parent, ast.Attribute) and isinstance(call := parents.get(id(parent)), ast.Call) \
                and call.func is parent:
            if parent.attr in _CASTS and parent.attr != "to" and not call.args:  # `.to()` alone changes nothing
                return True
            child = call
        elif isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            child = parent
        else:
            return False
    return False


def _dtype_call(node: ast.expr, parents: Mapping[int, ast.AST]) -> ast.Call | None:
    """The call ``node`` is the ``dtype=`` of, if it is one."""
    keyword = parents.get(id(node))
    call = parents.get(id(keyword)) if isinstance(keyword, ast.keyword) and keyword.arg == "dtype" else None
    return call if isinstance(call, ast.Call) else None


def _made_on_device(node: ast.expr, parents: Mapping[int, ast.AST]) -> bool:
    """``torch.zeros(n, dtype=torch.float64, device=d)``: a wide dtype given to a call with a device not the CPU."""
    call = _dtype_call(node, parents)
    if call is None:
        return False
    given = _given_device(call)
    if given is not None:
        return given
    moved = parents.get(id(call))  # `torch.zeros(3, dtype=torch.float64).cuda()`: moved where it is made
    return isinstance(moved, ast.Attribute) and moved.attr in ("cuda", "to") and isinstance(
        parents.get(id(moved)), ast.Call)


def _given_device(call: ast.Call) -> bool | None:
    """Whether ``call``'s ``device=`` is a device other than the CPU; None when it has none."""
    device = next((k.value for k in call.keywords if k.arg == "device"), None)
    if device is None:
        return None
    return not (isinstance(device, ast.Constant) and device.value == "cpu")


def _in_collective_function(node: ast.AST, parents: Mapping[int, ast.AST], seen: dict[int, bool]) -> bool:
    """Whether the function around ``node`` runs collectives (``all_reduce``...): it runs in a process group.
    ``seen`` keeps the answer per function."""
    function = parents.get(id(node))
    while function is not None and not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        function = parents.get(id(function))
    if function is None:
        return False
    if id(function) not in seen:
        seen[id(function)] = _COLLECTIVES.search(ast.unparse(function)) is not None
    return seen[id(function)]


def _on_cpu(value: ast.expr) -> bool:
    """``x.cpu()`` or ``x.numpy()``: a receiver that is on the CPU."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("cpu", "numpy")


def _reaches_device(node: ast.expr, parents: Mapping[int, ast.AST], text: str) -> bool:
    """Whether the dtype at ``node`` can give a tensor on the device (see `blocker`); cautious where unsure."""
    child: ast.AST = node
    parent = parents.get(id(child))
    collection = False
    if isinstance(parent, ast.Set):
        return False  # `SUPPORTED_DTYPES = {torch.float32, torch.float64}`: a set is read for membership
    while isinstance(parent, (ast.IfExp, ast.Tuple, ast.List, ast.BoolOp)):
        collection |= isinstance(parent, (ast.Tuple, ast.List))
        if isinstance(parent, ast.IfExp) and child is parent.test:
            return False
        if isinstance(parent, ast.IfExp) and _WIDE_TEXT.search(ast.unparse(parent.test)):
            return False  # `torch.float64 if x.dtype == torch.float64 else ...`: only where float64 already is
        child, parent = parent, parents.get(id(parent))
    if isinstance(parent, (ast.Compare, ast.Dict)) or parent is None:
        return False  # compared, or a table of names (`{"float64": torch.float64}`) read elsewhere
    if collection and isinstance(parent, ast.arguments):
        return False  # `allowed_dtypes=(torch.float32, torch.float64)`: the dtypes a function accepts
    if collection and isinstance(parent, ast.Assign) and _only_compared(parent, parents):
        return False  # torchvision's `floating_point_types = (torch.float, torch.double, torch.half)`, then `in` it
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        if not isinstance(call, ast.Call) or parent.arg != "dtype":
            return True
        return _call_reaches_device(call, parents, text)
    if isinstance(parent, ast.Call) and collection and child in parent.args \
            and getattr(parent.func, "attr", None) == "parametrize":
        return _parametrized_onto_device(parent, parents)
    if isinstance(parent, ast.Call) and child in parent.args:
        name = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
        if name in ("to", "type"):
            if _to_cpu(parent):
                return False  # `trial.to('cpu', torch.float64)`: moved to the CPU as it is cast
            return not _on_cpu(parent.func.value) if isinstance(parent.func, ast.Attribute) else True
        return name in ("set_default_dtype", "set_default_tensor_type") or name in _FACTORIES \
            and _call_reaches_device(parent, parents, text)
    return True


def _only_compared(assign: ast.Assign, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the one name ``assign`` binds is read, in the scope around it, only as the right side of a
    comparison (``t.dtype in floating_point_types``): a list of dtypes to check against, not to make."""
    if len(assign.targets) != 1 or not isinstance(target := assign.targets[0], ast.Name):
        return False
    scope = enclosing_scope(assign, parents)
    if scope is None:
        return False
    loads = [n for n in ast.walk(scope)
             if isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load)]
    return bool(loads) and all(isinstance(compare := parents.get(id(n)), ast.Compare) and n in compare.comparators
                               for n in loads)


def _parametrized_onto_device(mark: ast.Call, parents: Mapping[int, ast.AST]) -> bool:
    """``@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])`` on a test that makes or moves a tensor
    with ``dtype=dtype`` and a device (piq's ``x.to(device=device, dtype=dtype)``): the dtype reaches the device."""
    test = parents.get(id(mark))
    names = mark.args[0].value if mark.args and isinstance(mark.args[0], ast.Constant) else None
    if not isinstance(test, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(names, str) or "," in names:
        return False
    return any(isinstance(call, ast.Call) and any(
        k.arg == "dtype" and isinstance(k.value, ast.Name) and k.value.id == names.strip() for k in call.keywords)
        and (any(k.arg == "device" for k in call.keywords) or getattr(call.func, "attr", None) == "to" and call.args)
        for call in ast.walk(test))


def _to_cpu(call: ast.Call) -> bool:
    """``x.to("cpu", ...)`` or ``x.to(device="cpu", ...)``: whatever the dtype, the result is on the CPU."""
    device = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
    return isinstance(device, ast.Constant) and device.value == "cpu"


def _kept_on_cpu(cast: ast.Call, parents: Mapping[int, ast.AST], text: str) -> bool:
    """Whether ``cast`` (``x.double()``) casts a tensor a factory makes on the CPU (no device given) that the
    module neither moves (`_call_reaches_device`) nor registers in a module (`_registered`): AudioClassfication's
    sampler weights, ``self.samples_weight = torch.zeros(n).double()``, handed to ``WeightedRandomSampler`` alone."""
    value = cast.func.value if isinstance(cast.func, ast.Attribute) else None
    if not isinstance(value, ast.Call) or _registered(cast, parents):
        return False
    name = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
    return name in _FACTORIES and not name.endswith("_like") and not _call_reaches_device(value, parents, text)


def _call_reaches_device(call: ast.Call, parents: Mapping[int, ast.AST], text: str) -> bool:
    """A call given a wide dtype: on the device unless it is a factory without a device (a CPU tensor) that the
    module does not move later, or a call whose ``device=`` is ``"cpu"``."""
    given = _given_device(call)
    if given is not None:
        return given
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name not in _FACTORIES or name.endswith("_like"):
        return not (name in ("to", "type") and isinstance(call.func, ast.Attribute)
                    and (_on_cpu(call.func.value) or _to_cpu(call)))
    statement = parents.get(id(call))
    while statement is not None and not isinstance(statement, ast.stmt):
        if isinstance(statement, ast.Attribute) and statement.attr in ("to", "cuda"):
            return True  # moved where it is made: `torch.zeros(3, dtype=torch.float64).cuda()`
        statement = parents.get(id(statement))
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
    for target in targets:
        name = ast.unparse(target)
        if re.search(re.escape(name) + r"\s*\.\s*(?:to|cuda)\(", text):
            return True
    return False
