"""The lean vendored runtime: what it keeps, one copy per project placed where every migrated file imports
it, re-runs, refusals; libraries ported in package mode (TP210, --add-dependency); native output under ruff."""

from __future__ import annotations

import builtins
import dis
import importlib.util
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import forkrun
import pytest
from typer.testing import CliRunner

from torchport.cli import app
from torchport.emit.flat import FlattenError, flatten
from torchport.emit.vendor import MODULE_NAME, kept_names, runtime_names, vendored_source
from torchport.pipeline import library
from torchport.pipeline.vendoring import called_names, project_location, vendored_results
from torchport.results import FileResult

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
HIDE_TORCHPORT = "import sys; sys.modules['torchport'] = None\n"
CUDA_SCRIPT = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\nprint(x.device)\n"


def _load(text: str, name: str) -> types.ModuleType:
    """The vendored module ``text`` imported under ``name``."""
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    exec(compile(text, name, "exec"), module.__dict__)
    return module


def _unresolved(module: types.ModuleType) -> set[str]:
    """Globals read by the functions of ``module`` that it does not define."""
    missing = set()
    for owner in [module]:
        for value in list(vars(owner).values()):
            functions = [value] if isinstance(value, types.FunctionType) else [
                v for v in vars(value).values() if isinstance(v, types.FunctionType)] if isinstance(value, type) else []
            for function in functions:
                if function.__code__.co_filename != module.__name__:
                    continue  # generated (a dataclass's __repr__) or not the runtime's
                codes = [function.__code__]
                while codes:
                    code = codes.pop()
                    codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
                    instructions = list(dis.get_instructions(code))
                    for at, ins in enumerate(instructions):
                        if ins.opname != "LOAD_GLOBAL":
                            continue
                        name, scope = ins.argval, function.__globals__
                        if name not in scope and not hasattr(builtins, name):
                            missing.add(f"{scope['__name__']}.{name}")
                        target = scope.get(name)
                        after = instructions[at + 1] if at + 1 < len(instructions) else None
                        if isinstance(target, types.ModuleType) and target.__name__.startswith(module.__name__) \
                                and after is not None and after.opname == "LOAD_ATTR" \
                                and not after.argval.startswith("_") | hasattr(target, after.argval) \
                                and after.argval not in {"_TYPE", "_DEVICE", "_DEVICE_STR", "_MODULE", "_CUDA",
                                                         "_INDEXED", "_ACCEL", "_SPECS"}:
                            missing.add(f"{target.__name__}.{after.argval}")
    return missing


@pytest.mark.parametrize("name", runtime_names())
def test_each_name_alone_keeps_everything_it_reads(name: str) -> None:
    text = vendored_source([name])
    assert kept_names(text) == [name]
    module_name = f"_tp_lean_{name.lower()}"
    try:
        module = _load(text, module_name)
        assert module.__all__ == [name] and getattr(module, name) is not None
        assert _unresolved(module) == set()
    finally:
        for key in [k for k in sys.modules if k == module_name or k.startswith(module_name + ".")]:
            del sys.modules[key]


def test_lean_module_keeps_only_what_is_called() -> None:
    lean = vendored_source(["device", "synchronize"])
    assert lean.splitlines()[2] == "#   device, synchronize"
    assert "def synchronize" in lean and "def memory_allocated" not in lean and "class CpuEvent" not in lean
    assert "# torchport.runtime._memory" not in lean and "# torchport.runtime._streams" not in lean
    assert len(lean.encode()) < 10_000 < len(vendored_source().encode())  # the whole runtime is ~35 KB
    assert called_names("import torch\nimport _torchport_runtime as tp_runtime\ntp_runtime.device(); "
                        "tp_runtime.Event()\nx.tp_runtime.y\n") == {"device", "Event"}


def test_the_copy_is_plain_source_clean_under_ruff_with_real_traceback_lines(tmp_path: Path) -> None:
    copy = tmp_path / f"{MODULE_NAME}.py"
    copy.write_text(vendored_source(["Event", "get_device_name"]))
    text = copy.read_text()
    assert "exec(" not in text and "r'''" not in text and "def get_device_name(" in text
    (tmp_path / "whole.py").write_text(vendored_source())
    if shutil.which("ruff") is not None or importlib.util.find_spec("ruff") is not None:
        linted = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", str(copy),
                                 str(tmp_path / "whole.py")], capture_output=True, text=True, timeout=120)
        assert linted.returncode == 0, linted.stdout
    # a call that raises shows the copy's own line in the traceback
    script = ("import traceback\nimport _torchport_runtime as tp\ntry:\n    tp.get_device_name('xpu')\n"
              "except ValueError:\n    traceback.print_exc()\nprint(type(tp.Event()).__name__)\n")
    (tmp_path / "run.py").write_text(script)
    done = _run_hidden(tmp_path / "run.py", tmp_path)
    assert done.returncode == 0 and done.stdout == "CpuEvent\n", done.stderr
    line = next(line.strip() for line in text.splitlines() if "raise ValueError(f\"Expected a" in line)
    assert f'File "{copy}", line ' in done.stderr and line in done.stderr


def test_parts_that_cannot_share_one_namespace_are_refused() -> None:
    header = "# header\n"
    with pytest.raises(FlattenError, match="both bind '_tls'"):
        flatten({"_a": "import threading\n_tls = threading.local()\n", "_b": "_tls = 1\n"}, header)
    with pytest.raises(FlattenError, match="reads the builtin 'range'"):
        flatten({"_a": "def f():\n    return list(range(3))\n", "_b": "def range(n):\n    pass\n"}, header)
    chained = flatten({"_backend": "from typing import Any\n\n\ndef __getattr__(name: str) -> Any:\n"
                                   "    if name == 'A':\n        return 1\n    raise AttributeError(name)\n",
                       "_streams": "from typing import Any\n\n\ndef __getattr__(name: str) -> Any:\n"
                                   "    if name == 'B':\n        return 2\n    raise AttributeError(name)\n"}, header)
    module = types.ModuleType("chained")
    exec(compile(chained, "chained", "exec"), module.__dict__)
    assert (module.A, module.B) == (1, 2) and "return _streams_getattr(name)" in chained
    with pytest.raises(AttributeError):
        module.C  # noqa: B018


def test_a_rerun_keeps_the_names_the_copy_already_lists(tmp_path: Path) -> None:
    """A file migrated in an earlier run may call them: the copy never loses a name, and is otherwise the same."""
    copy = tmp_path / f"{MODULE_NAME}.py"
    copy.write_text(vendored_source(["synchronize"]))
    script = tmp_path / "b.py"
    made = vendored_results([FileResult(path=script, display="b.py", original="",
                                        migrated=f"import {MODULE_NAME} as tp\ntp.device()\n")])
    assert [r.display for r in made] == [f"{MODULE_NAME}.py"]
    assert kept_names(made[0].migrated or "") == ["device", "synchronize"] and made[0].changed
    copy.write_text(made[0].migrated or "")
    again = vendored_results([FileResult(path=script, display="b.py", original=f"import {MODULE_NAME} as tp\n"
                                         "tp.device()\n", migrated=f"import {MODULE_NAME} as tp\ntp.device()\n")])
    assert not again[0].changed


def _project(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _run_hidden(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python script`` (its folder first on sys.path, as for a user) with torchport unimportable."""
    hide = cwd / "_hide_torchport"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(HIDE_TORCHPORT)
    return forkrun.run([str(script)], cwd=cwd, env={**ENV, "PYTHONPATH": str(hide)}, timeout=120)


def test_scripts_in_several_folders_share_one_copy_at_the_root(tmp_path: Path) -> None:
    _project(tmp_path, {"train.py": CUDA_SCRIPT, "tools/eval.py": CUDA_SCRIPT, "deep/er/bench.py": CUDA_SCRIPT,
                        "tools/plain.py": "print('no cuda here')\n"})
    result = CliRunner().invoke(app, ["migrate", str(tmp_path), "--runtime", "vendor", "--apply", "--allow-dirty",
                                      "--no-cache"])
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob(f"{MODULE_NAME}.py")) == [
        f"{MODULE_NAME}.py"]
    assert kept_names((tmp_path / f"{MODULE_NAME}.py").read_text()) == ["device", "synchronize"]
    assert (tmp_path / "tools" / "eval.py").read_text() == (
        "import torch\nimport os\nimport sys\n\n# where torchport's vendored runtime is\n"
        'sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))\n'
        f"import {MODULE_NAME} as tp  # noqa: E402\n\n"
        "x = torch.zeros(2).to(tp.device())\ntp.synchronize()\nprint(x.device)\n")
    assert f"import {MODULE_NAME} as tp\n" in (tmp_path / "train.py").read_text()  # beside it: as it is
    elsewhere = tmp_path / "elsewhere"  # run from another folder: the path comes from __file__, not the cwd
    elsewhere.mkdir()
    for script in ("train.py", "deep/er/bench.py"):
        done = _run_hidden(tmp_path / script, elsewhere)
        assert done.returncode == 0 and done.stdout == "cpu\n", done.stderr
    again = CliRunner().invoke(app, ["migrate", str(tmp_path), "--runtime", "vendor", "--check", "--no-cache"])
    assert again.exit_code == 0, again.output  # a re-run is a no-op


def test_a_package_and_the_scripts_that_import_it_share_the_package_copy(tmp_path: Path) -> None:
    _project(tmp_path, {"mingpt/__init__.py": "", "mingpt/trainer.py": CUDA_SCRIPT,
                        "projects/adder/adder.py": "from mingpt import trainer\nimport torch\n"
                                                   "torch.cuda.manual_seed(0)\n",
                        "setup.py": "from setuptools import setup\nsetup(name='mingpt')\n"})
    assert project_location([tmp_path / "mingpt/trainer.py", tmp_path / "projects/adder/adder.py",
                             tmp_path / "setup.py"]) == tmp_path / "mingpt" / f"{MODULE_NAME}.py"
    result = CliRunner().invoke(app, ["migrate", str(tmp_path), "--runtime", "vendor", "--apply", "--allow-dirty",
                                      "--no-cache"])
    assert result.exit_code == 0, result.output
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob(f"{MODULE_NAME}.py")] == [
        f"mingpt/{MODULE_NAME}.py"]
    adder = (tmp_path / "projects/adder/adder.py").read_text()
    assert f"from mingpt import {MODULE_NAME} as tp, trainer\n" in adder and "sys.path" not in adder
    done = forkrun.run(["-c", HIDE_TORCHPORT + "import runpy; runpy.run_path('projects/adder/adder.py')"],
                       cwd=tmp_path, env={**ENV, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert done.returncode == 0 and done.stdout == "cpu\n", done.stderr


def test_one_file_in_vendor_mode_gets_a_runtime_it_can_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The single path given is a file: the copy beside it is written too (it used to be refused, exit 2)."""
    _project(tmp_path, {"train.py": CUDA_SCRIPT})
    monkeypatch.chdir(tmp_path)
    dry = CliRunner().invoke(app, ["migrate", "train.py", "--runtime", "vendor", "--no-cache"])
    assert dry.exit_code == 0 and f"+++ b/{MODULE_NAME}.py" in dry.output, dry.output
    result = CliRunner().invoke(app, ["migrate", "train.py", "--runtime", "vendor", "--apply", "--allow-dirty",
                                      "--no-cache"])
    assert result.exit_code == 0, result.output
    done = _run_hidden(tmp_path / "train.py", tmp_path)
    assert done.returncode == 0 and done.stdout == "cpu\n", done.stderr


def test_a_copy_that_cannot_be_written_refuses_the_run_before_writing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, {"train.py": CUDA_SCRIPT, f"{MODULE_NAME}.py": "# the project's own module\n"})
    monkeypatch.chdir(tmp_path)
    reason = "it exists and was not generated by torchport"
    dry = CliRunner().invoke(app, ["migrate", "train.py", "--runtime", "vendor", "--no-cache",
                                   "--output-format", "concise"])
    assert dry.exit_code == 2 and reason in dry.output, dry.output  # the dry run says what --apply refuses
    applied = CliRunner().invoke(app, ["migrate", "train.py", "--runtime", "vendor", "--apply", "--allow-dirty",
                                       "--no-cache", "--output-format", "concise"])
    assert applied.exit_code == 2 and reason in applied.output, applied.output
    assert (tmp_path / "train.py").read_text() == CUDA_SCRIPT  # nothing written
    assert (tmp_path / f"{MODULE_NAME}.py").read_text() == "# the project's own module\n"
    elsewhere = tmp_path / "lib"
    elsewhere.mkdir()
    placed = CliRunner().invoke(app, ["migrate", "train.py", "--runtime", "vendor", "--apply", "--allow-dirty",
                                      "--no-cache", "--vendor-path", "lib"])
    assert placed.exit_code == 0, placed.output
    assert (elsewhere / f"{MODULE_NAME}.py").is_file() and "lib" in (tmp_path / "train.py").read_text()


PYPROJECT = '[project]\nname = "mylib"\ndependencies = [\n    "torch>=2.6",  # the model\n    "numpy",\n]\n'


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("pyproject.toml", PYPROJECT, PYPROJECT.replace('    "numpy",\n', f'    "numpy",\n    "{library.REQUIREMENT}",\n')),
    ("pyproject.toml", '[project]\nname = "m"\ndependencies = ["torch"]\n',
     f'[project]\nname = "m"\ndependencies = ["torch", "{library.REQUIREMENT}"]\n'),
    ("pyproject.toml", '[project]\nname = "m"\n\n[tool.x]\n',
     f'[project]\nname = "m"\ndependencies = ["{library.REQUIREMENT}"]\n\n[tool.x]\n'),
    ("setup.py", "setup(\n    name='m',\n    install_requires=['torch', 'numpy'],\n)\n",
     f"setup(\n    name='m',\n    install_requires=['torch', 'numpy', '{library.REQUIREMENT}'],\n)\n"),
    ("setup.cfg", "[metadata]\nname = m\n\n[options]\ninstall_requires =\n    torch\n\n",
     f"[metadata]\nname = m\n\n[options]\ninstall_requires =\n    torch\n    {library.REQUIREMENT}\n\n"),
])
def test_add_dependency_keeps_the_files_layout(tmp_path: Path, name: str, text: str, expected: str) -> None:
    assert library.add_dependency(tmp_path / name, text) == expected


def test_a_library_in_package_mode_is_reported_once(tmp_path: Path) -> None:
    _project(tmp_path, {"pyproject.toml": PYPROJECT, "mylib/__init__.py": "", "mylib/a.py": CUDA_SCRIPT,
                        "mylib/b.py": CUDA_SCRIPT, "scripts/run.py": CUDA_SCRIPT})
    runner = CliRunner()
    dry = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache", "--output-format", "concise"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.count("TP210") == 1 and "--add-dependency" in dry.output
    assert "note: mylib: an installable package" in dry.output  # and the summary says so
    applied = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache", "--apply", "--allow-dirty",
                                  "--add-dependency"])
    assert applied.exit_code == 0, applied.output
    assert (tmp_path / "pyproject.toml").read_text() == library.add_dependency(tmp_path / "pyproject.toml", PYPROJECT)
    again = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache", "--output-format", "concise"])
    assert "TP210" not in again.output
    vendor = runner.invoke(app, ["migrate", str(tmp_path), "--no-cache", "--runtime", "vendor"])
    assert "TP210" not in vendor.output  # a vendored runtime needs no dependency


@pytest.mark.skipif(shutil.which("ruff") is None and importlib.util.find_spec("ruff") is None, reason="needs ruff")
def test_native_output_adds_no_blank_line_violation(tmp_path: Path) -> None:
    """pycodestyle's E3 and isort's I001 (ruff) on the native fixtures: as clean as their input."""
    fixtures = Path(__file__).parent / "fixtures" / "native"

    def count(folder: Path) -> int:
        done = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--preview", "--no-cache",
                               "--select", "E3,I001", "--exit-zero", "--output-format", "concise", str(folder)],
                              capture_output=True, text=True, timeout=120)
        return sum(1 for line in done.stdout.splitlines() if line.startswith(str(folder)))

    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    for case in ("placement", "placement_statement", "int_index", "ddp_train"):
        shutil.copy(fixtures / f"{case}.py", before / f"{case}.py")
        shutil.copy(fixtures / f"{case}.expected.py", after / f"{case}.py")
    assert count(after) <= count(before)


def _library(root: Path, name: str) -> None:
    """An installable package ``name`` with CUDA calls in it and in a subpackage, a test and a script beside."""
    _project(root, {
        "pyproject.toml": f'[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
                          f'[project]\nname = "{name}"\nversion = "0.1"\ndependencies = ["torch>=2.6"]\n\n'
                          f'[tool.setuptools.packages.find]\ninclude = ["{name}*"]\n',
        f"{name}/__init__.py": f"from {name}.core import run\n",
        f"{name}/core.py": "import torch\n\n\ndef run():\n    x = torch.ones(2).cuda()\n"
                           "    start = torch.cuda.Event(enable_timing=True)\n    torch.cuda.synchronize()\n"
                           "    return x.device.type, type(start).__name__, torch.cuda.get_device_name(0)\n",
        f"{name}/sub/__init__.py": "",
        f"{name}/sub/ops.py": "import torch\n\n\ndef name():\n    torch.cuda.current_stream().synchronize()\n"
                              "    return torch.cuda.get_device_name()\n",
        # a test and a script outside the package that mention CUDA: the copy once went to the root for them
        "tests/test_core.py": "import torch\n\n\ndef test_ones():\n    assert torch.ones(1).cuda().sum() == 1\n",
        "scripts/train.py": CUDA_SCRIPT,
    })


@pytest.mark.slow
def test_a_library_ported_in_native_and_vendor_mode_ships_its_runtime(tmp_path: Path) -> None:
    """Each package's wheel holds the copy its modules import: a clean install imports them all, without torchport."""
    modes = {"native": ["--torch-version", "2.9"], "vendor": []}
    # native: the script and the test are plain PyTorch; vendor: they share a copy at the root (not shipped)
    loose = {"native": [], "vendor": [f"{MODULE_NAME}.py"]}
    for mode, options in modes.items():
        _library(tmp_path / mode, f"lib_{mode}")
        result = CliRunner().invoke(app, ["migrate", str(tmp_path / mode), "--runtime", mode, *options, "--apply",
                                          "--allow-dirty", "--no-cache"])
        assert result.exit_code == 0, result.output
        package = tmp_path / mode / f"lib_{mode}"
        assert sorted(p.relative_to(tmp_path / mode).as_posix()
                      for p in (tmp_path / mode).rglob(f"{MODULE_NAME}.py")) == [
            *loose[mode], f"lib_{mode}/{MODULE_NAME}.py"]
        for module in ("core.py", "sub/ops.py"):
            assert f"from lib_{mode} import {MODULE_NAME} as tp\n" in (package / module).read_text()
        done = _run_hidden(tmp_path / mode / "scripts" / "train.py", tmp_path)
        assert done.returncode == 0 and done.stdout == "cpu\n", done.stderr
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(tmp_path / "dist"), *(str(tmp_path / mode) for mode in modes)],
                           env=ENV, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    venv = tmp_path / "venv"  # torch comes from the system's site-packages; pip too
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                                *map(str, (tmp_path / "dist").glob("*.whl"))], env=ENV, capture_output=True,
                               text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    hide = tmp_path / "_hide_torchport"  # made by _run_hidden
    code = "".join(f"import lib_{m}.core, lib_{m}.sub.ops\nassert 'site-packages' in lib_{m}.core.__file__\n"
                   f"print(lib_{m}.run()[:2], lib_{m}.sub.ops.name() == lib_{m}.run()[2])\n" for m in modes)
    done = subprocess.run([python, "-c", code], cwd=hide, env={**ENV, "PYTHONPATH": str(hide)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "('cpu', 'CpuEvent') True\n" * 2
