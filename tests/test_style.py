"""The style pass: a port keeps the project's own import order, unused-import and line-length checks clean.

Each case is a small project in a temporary folder (its lint configuration plus one module), migrated
through the engine and checked for exact output, idempotency and compilation.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from torchport.codemods.api import migrate_code
from torchport.config import Settings
from torchport.pipeline.engine import migrate_file
from torchport.style import NO_STYLE, _mostly_single, restyle, style_for, wrap
from torchport.style._config import Style
from torchport.style._imports import place_added


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _migrated(path: Path) -> str:
    result = migrate_file(path)
    assert result.error is None, result.error
    assert result.migrated is not None
    compile(result.migrated, str(path), "exec")
    # idempotent: the output migrates to itself
    path_again = path.with_name("again_" + path.name)
    path_again.write_text(result.migrated)
    again = migrate_file(path_again)
    assert again.migrated == result.migrated
    path_again.unlink()
    return result.migrated


RUFF = """
[tool.ruff]
line-length = 60

[tool.ruff.lint.isort]
known-first-party = ["mypkg"]
"""

TRAIN = '''
"""Train."""

import os

import numpy as np
import torch

from mypkg import data


def sync():
    torch.cuda.synchronize()


def run(model):
    return model(np.ones(3), os.sep, data)
'''


def test_ruff_project_import_sorted_and_unused_torch_removed(tmp_path: Path) -> None:
    root = _project(tmp_path, {"pyproject.toml": RUFF, "mypkg/__init__.py": "", "mypkg/train.py": TRAIN})
    assert _migrated(root / "mypkg" / "train.py") == textwrap.dedent('''\
        """Train."""

        import os

        import numpy as np
        from torchport import runtime as tp

        from mypkg import data


        def sync():
            tp.synchronize()


        def run(model):
            return model(np.ones(3), os.sep, data)
        ''')


def test_new_section_gets_its_own_blank_lines(tmp_path: Path) -> None:
    module = """
    import os

    from mypkg import data


    def place(model):
        return model.cuda(), data, os.sep
    """
    root = _project(tmp_path, {"pyproject.toml": RUFF, "mypkg/__init__.py": "", "mypkg/train.py": module})
    out = _migrated(root / "mypkg" / "train.py")
    assert out.startswith("import os\n\nfrom torchport import runtime as tp\n\nfrom mypkg import data\n\n\ndef place")


def test_src_folder_makes_a_module_first_party(tmp_path: Path) -> None:
    module = '''
    import torch

    import zzlocal


    def sync():
        torch.cuda.synchronize()
        return zzlocal, torch.ones(1)
    '''
    files = {"ruff.toml": "line-length = 88\n", "src/zzlocal.py": "", "src/app.py": module}
    root = _project(tmp_path, files)
    out = _migrated(root / "src" / "app.py")
    assert out.startswith("import torch\nfrom torchport import runtime as tp\n\nimport zzlocal\n")


@pytest.mark.parametrize(("config", "expected"), [
    ("[isort]\nprofile = black\n", "import torch\nimport yaml\nfrom torchport import runtime as tp\n"),
    ("[isort]\nforce_sort_within_sections = true\n",
     "import torch\nfrom torchport import runtime as tp\nimport yaml\n"),
])
def test_isort_setup_cfg_order_within_section(tmp_path: Path, config: str, expected: str) -> None:
    module = '''
    import torch
    import yaml


    def sync():
        torch.cuda.synchronize()
        return yaml, torch.ones(1)
    '''
    root = _project(tmp_path, {"setup.cfg": config, "app.py": module})
    assert _migrated(root / "app.py").startswith(expected + "\n\ndef sync")


def test_no_configuration_keeps_the_codemods_output(tmp_path: Path) -> None:
    root = _project(tmp_path, {"mypkg/__init__.py": "", "mypkg/train.py": TRAIN})
    out = _migrated(root / "mypkg" / "train.py")
    assert style_for(root / "mypkg" / "train.py") == NO_STYLE
    assert out == migrate_code(TRAIN.lstrip("\n")).code
    assert "import torch\n" in out  # left for the project: nothing says it lints


def test_import_already_in_place_is_a_no_op(tmp_path: Path) -> None:
    module = '''
    import torch
    from torchport import runtime as tp

    from mypkg import data


    def sync():
        torch.cuda.synchronize()
        return tp, data, torch.ones(1)
    '''
    root = _project(tmp_path, {"pyproject.toml": RUFF, "mypkg/__init__.py": "", "mypkg/train.py": module})
    out = _migrated(root / "mypkg" / "train.py")
    assert out == textwrap.dedent(module).lstrip("\n").replace("torch.cuda.synchronize()", "tp.synchronize()")


def test_unused_imports_kept_when_in_doubt(tmp_path: Path) -> None:
    style = Style(sort_imports=True)
    original = textwrap.dedent('''\
        import torch
        import torch as th  # noqa: F401
        import torch as tt
        import torch as unused_before
        import torch as annotated
        import torch as exported

        __all__ = ["exported"]


        def f(x: "annotated.Tensor"):
            th.cuda.synchronize()
            tt.cuda.synchronize()
            exported.cuda.synchronize()
            torch.cuda.synchronize()
        ''')
    migrated = original.replace("th.cuda", "tp").replace("tt.cuda", "tp").replace("exported.cuda", "tp")
    migrated = migrated.replace("torch.cuda", "tp")
    out = restyle(original, migrated, tmp_path / "m.py", style)
    lines = out.splitlines()
    assert "import torch" not in lines and "import torch as tt" not in lines  # the port made these unused
    for kept in ("import torch as th  # noqa: F401", "import torch as unused_before", "import torch as annotated",
                 "import torch as exported"):
        assert kept in lines
    # re-exports: an __init__.py keeps every import
    assert restyle(original, migrated, tmp_path / "__init__.py", style) == migrated


def test_removal_keeps_one_blank_line_between_sections(tmp_path: Path) -> None:
    original = "import os\n\nimport torch\n\nimport mypkg\n\nos.sep, mypkg, torch.cuda.synchronize()\n"
    migrated = "import os\n\nimport torch\n\nimport mypkg\n\nos.sep, mypkg, tp.synchronize()\n"
    out = restyle(original, migrated, tmp_path / "m.py", Style(line_length=88))
    assert out == "import os\n\nimport mypkg\n\nos.sep, mypkg, tp.synchronize()\n"


@pytest.mark.parametrize(("added", "expected"), [
    ("from mypkg import _torchport_runtime as tp",
     "import numpy\n\nimport mypkg\nfrom mypkg import _torchport_runtime as tp\n"),
    ("import _torchport_runtime as tp", "import numpy\n\nimport _torchport_runtime as tp\nimport mypkg\n"),
])
def test_vendored_runtime_import_is_first_party(tmp_path: Path, added: str, expected: str) -> None:
    _project(tmp_path, {"mypkg/__init__.py": "", "_torchport_runtime.py": ""})
    original = "import numpy\n\nimport mypkg\n\nx = 1\n"
    migrated = f"{added}\nimport numpy\n\nimport mypkg\n\nx = 1\n"
    style = Style(sort_imports=True, src=(tmp_path,))
    assert place_added(original, migrated, style, tmp_path / "m.py") == expected + "\nx = 1\n"


FLAKE8 = "[flake8]\nmax-line-length = 60\n"


def test_flake8_length_wraps_changed_lines_black_style(tmp_path: Path) -> None:
    module = '''
    import torch


    def run(model, inputs, extra):
        result = model(inputs.cuda(), extra.cuda(), scale=2)
        out = torch.zeros(3).cuda().float().sum().item()
        if out > torch.ones(3).cuda().sum().item() + 10:
            pass
        long_already = model(inputs.cuda(), extra.cuda(), scale=2, k=3)
        shorter = torch.cuda.synchronize() or model(inputs, extra, scale=2, k=3, more=4)
        return result, long_already, shorter
    '''
    root = _project(tmp_path, {"setup.cfg": FLAKE8, "app.py": module})
    out = _migrated(root / "app.py")
    assert out.split("\n\n\n")[1] == textwrap.dedent('''\
        def run(model, inputs, extra):
            result = model(
                inputs.to(tp.device()),
                extra.to(tp.device()),
                scale=2,
            )
            out = (
                torch.zeros(3).float().to(tp.device()).sum().item()
            )
            if (
                out
                > torch.ones(3).to(tp.device()).sum().item() + 10
            ):
                pass
            long_already = model(
                inputs.to(tp.device()),
                extra.to(tp.device()),
                scale=2,
                k=3,
            )
            shorter = tp.synchronize() or model(inputs, extra, scale=2, k=3, more=4)
            return result, long_already, shorter
        ''')


@pytest.mark.parametrize(("line", "expected"), [
    # fits once broken inside its last brackets
    ("x = model.to(tp.device(), non_blocking=True)", ["x = model.to(", "    tp.device(), non_blocking=True", ")"]),
    # a lone element (a generator, a subscript) takes no trailing comma
    ("y = sum(t.to(tp.device()) for t in tensors)", ["y = sum(", "    t.to(tp.device()) for t in tensors", ")"]),
    ("y = table[tp.device_index_of(current_tensor)]", ["y = table[", "    tp.device_index_of(current_tensor)", "]"]),
    # an f-string is one token (PEP 701 splits it from Python 3.12)
    ('x = model.to(tp.device(), name=f"{a}-{b!r}")', ["x = model.to(", '    tp.device(), name=f"{a}-{b!r}"', ")"]),
    # an element still too long is split in turn
    ("f(aaaaaaaaaa, g(bbbbbbbbbbbbbb, cccccccccccccc, dddddddddddddd))",
     ["f(", "    aaaaaaaaaa,", "    g(", "        bbbbbbbbbbbbbb,", "        cccccccccccccc,",
      "        dddddddddddddd,", "    ),", ")"]),
])
def test_wrap(line: str, expected: list[str]) -> None:
    assert wrap(line, 40) == expected
    compile("\n".join(expected), "<wrap>", "exec")


# What `ruff format --line-length 40` makes of each line (checked by hand with ruff 0.17.6).
RUFF_FORMAT_40 = [
    ('sizes = {"cuda": 1, "mps": 2, "cpu": 3, "xpu": 4}',
     'sizes = {\n    "cuda": 1,\n    "mps": 2,\n    "cpu": 3,\n    "xpu": 4,\n}'),
    ("keys = [k for k in table.keys() if k.startswith(prefix)]",
     "keys = [\n    k\n    for k in table.keys()\n    if k.startswith(prefix)\n]"),
    ("h[:, :n] = h[:, :n] * tp.device_count() + 1", "h[:, :n] = (\n    h[:, :n] * tp.device_count() + 1\n)"),
    ("embeddings = self.classifier_embeddings.to(tp.device())",
     "embeddings = (\n    self.classifier_embeddings.to(\n        tp.device()\n    )\n)"),
    ("return first.to(tp.device()), second.to(tp.device())",
     "return first.to(tp.device()), second.to(\n    tp.device()\n)"),
]


@pytest.mark.parametrize(("line", "expected"), RUFF_FORMAT_40)
def test_wrap_as_ruff_format(line: str, expected: str) -> None:
    assert "\n".join(wrap(line, 40) or [line]) == expected


def test_wrap_refuses_what_it_cannot_split() -> None:
    assert wrap("x = 'a very long string that no formatter can split'", 20) is None
    assert wrap("a = b; c = d(eeeeeeeeeeeeeeeeeeee, ffffffffffff)", 20) is None
    assert wrap("x = f(  # comment", 10) is None
    assert wrap("x = torch.load(path_name, map_location=tp.map_location())  # noqa: F841", 40) is None


def test_config_discovery(tmp_path: Path) -> None:
    _project(tmp_path, {
        "pyproject.toml": "[tool.black]\nline-length = 100\n[tool.isort]\nknown_first_party = ['a', 'b']\n",
        "sub/.ruff.toml": "extend = '../base.toml'\n[lint.isort]\nforce-sort-within-sections = true\n",
        "base.toml": "line-length = 77\n[lint.isort]\nknown-first-party = ['c']\n",
        "tox/tox.ini": "[flake8]\nmax_line_length = 99\n",
    })
    top = style_for(tmp_path / "m.py")
    assert (top.sort_imports, top.line_length, top.known_first_party) == (True, 100, frozenset({"a", "b"}))
    sub = style_for(tmp_path / "sub" / "m.py")
    assert (sub.line_length, sub.known_first_party, sub.force_sort_within_sections) == (77, frozenset({"c"}), True)
    assert style_for(tmp_path / "sub" / "other.py") is sub  # cached per folder
    # flake8's nearest file sets the length; isort above still sorts
    assert style_for(tmp_path / "tox" / "m.py").line_length == 100  # black's pyproject is nearer to the formatter


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_finds_nothing_new(tmp_path: Path) -> None:
    config = RUFF + '\n[tool.ruff.lint]\nselect = ["I", "F401", "E501"]\n'
    module = TRAIN + '''

def place(model, inputs, extra):
    result = model(inputs.cuda(), extra.cuda(), scale=2)
    return result
'''
    root = _project(tmp_path, {"pyproject.toml": config, "mypkg/__init__.py": "", "mypkg/train.py": module})
    check = ["ruff", "check", "--no-cache", "mypkg/train.py"]
    assert subprocess.run(check, cwd=root, capture_output=True).returncode == 0
    path = root / "mypkg" / "train.py"
    path.write_text(_migrated(path))
    after = subprocess.run(check, cwd=root, capture_output=True, text=True)
    assert after.returncode == 0, after.stdout


def test_added_import_never_moves_past_a_use(tmp_path: Path) -> None:
    original = 'import os\nDEVICE = os.sep\nimport torch\n'
    migrated = 'import os\nfrom torchport import runtime as tp\nDEVICE = tp.device()\nimport torch\n'
    assert place_added(original, migrated, Style(sort_imports=True), tmp_path / "m.py") == migrated
    # with the use gone, it joins the third-party block
    migrated = migrated.replace("tp.device()", "os.sep")
    expected = 'import os\nDEVICE = os.sep\nimport torch\nfrom torchport import runtime as tp\n'
    assert place_added(original, migrated, Style(sort_imports=True), tmp_path / "m.py") == expected


def test_cache_key_depends_on_the_projects_style() -> None:
    from torchport.config import Settings
    from torchport.pipeline import cache

    base = cache.key(b"x.cuda()", Settings(), Style(line_length=88))
    assert base == cache.key(b"x.cuda()", Settings(), Style(line_length=88))
    assert base != cache.key(b"x.cuda()", Settings(), Style(line_length=79))
    assert base != cache.key(b"x.cuda()", Settings(), NO_STYLE)


def test_wrap_arguments_on_a_line_of_their_own(tmp_path: Path) -> None:
    original = "m = DDP(\n    model, device_ids=[0], pin_memory=True, search_range_mb=64\n)\n"
    migrated = original.replace("pin_memory=True", "pin_memory=tp.pin_memory_available()")
    out = restyle(original, migrated, tmp_path / "m.py", Style(line_length=64))
    assert out == (
        "m = DDP(\n    model,\n    device_ids=[0],\n    pin_memory=tp.pin_memory_available(),\n"
        "    search_range_mb=64,\n)\n"
    )
    # an operator continuation is left to the project
    original = "x = (\n    aaaaaaaaaa + bbbbbbbbbbbbbb * f(cccccccccccc)\n    + ddd\n)\n"
    migrated = original.replace("f(cccccccccccc)", "f(cccccccccccc.to(tp.device()))")
    assert restyle(original, migrated, tmp_path / "m.py", Style(line_length=60)) == migrated
    # the whole contents of parentheses split at their top delimiter (here a conditional expression)
    original = "ctx = (\n    nullcontext() if flag_is_on else torch.cuda.amp.autocast()\n)\n"
    migrated = original.replace("torch.cuda.amp.autocast()", "torch.amp.autocast(tp.device_type())")
    out = restyle(original, migrated, tmp_path / "m.py", Style(line_length=64))
    assert out == "ctx = (\n    nullcontext()\n    if flag_is_on\n    else torch.amp.autocast(tp.device_type())\n)\n"


def test_added_last_argument_gets_the_formatters_trailing_comma(tmp_path: Path) -> None:
    original = "x = torch.load(\n    path,\n    weights_only=True\n)\ny = torch.load(\n    path\n)\n"
    migrated = original.replace("True\n", "True,\n    map_location=tp.map_location()\n").replace(
        "    path\n)", "    path,\n    map_location=tp.map_location()\n)")
    expected = migrated.replace("tp.map_location()\n", "tp.map_location(),\n")
    assert restyle(original, migrated, tmp_path / "m.py", Style(line_length=88, formatter=True)) == expected
    # without a formatter, or for the project's own last element, nothing is added
    assert restyle(original, migrated, tmp_path / "m.py", Style(line_length=88)) == migrated
    assert restyle(original, original.replace("path", "p"), tmp_path / "m.py",
                   Style(line_length=88, formatter=True)) == original.replace("path", "p")


PINNED_ISORT = """
[tool.isort]
profile = "black"
force_single_line = true
known_first_party = ["mylib"]
line_length = 100
"""


@pytest.mark.parametrize("mode", ["package", "vendor", "native"])
def test_pinned_isort_passes_on_the_ported_files(tmp_path: Path, mode: str) -> None:
    """A project that pins isort (profile black, one name an import, its first-party package, 100 columns):
    ``isort --check`` finds nothing in the ported files (the vendored copy included), and no line the port
    made longer is over 100 columns; the import after the ``sys.path`` change stays there."""
    isort = shutil.which("isort")
    if isort is None:
        pytest.skip("isort is not installed")
    from typer.testing import CliRunner

    from torchport.cli import app

    _project(tmp_path, {
        "pyproject.toml": PINNED_ISORT,
        "mylib/__init__.py": "",
        "mylib/util.py": "def helper():\n    pass\n",
        "mylib/model.py": '''
            import os
            from typing import Any

            import numpy as np
            import torch

            from mylib.util import helper


            def make(cfg: Any) -> torch.nn.Module:
                model = torch.nn.Linear(2, 2).cuda()
                print(torch.cuda.get_device_name(0), torch.cuda.Event(), torch.cuda.memory_allocated(), np, os, helper)
                return model
            ''',
        "scripts/train.py": '''
            import os
            import sys

            import torch

            sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
            from mylib.model import make  # noqa: E402

            model = make({})
            print(torch.zeros(2).cuda(), torch.cuda.Event(), torch.cuda.current_stream())
            ''',
    })
    before = {p: p.read_text() for p in tmp_path.rglob("*.py")}
    assert subprocess.run([isort, "--check", "--settings-path", str(tmp_path), str(tmp_path)],
                          capture_output=True).returncode == 0
    done = CliRunner().invoke(app, ["migrate", str(tmp_path), "--runtime", mode, "--apply", "--allow-dirty",
                                    "--no-cache", "-j1", "--torch-version", "2.9"])
    assert done.exit_code == 0, done.output
    checked = subprocess.run([isort, "--check", "--diff", "--settings-path", str(tmp_path), str(tmp_path)],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for path, text in before.items():
        ported = path.read_text()
        added = set(ported.splitlines()) - set(text.splitlines())
        assert all(len(line) <= 100 for line in added), ported
    assert (mode == "package") == ("_torchport_runtime" not in (tmp_path / "scripts" / "train.py").read_text())


def test_the_strings_inside_f_strings_are_no_quote_habit() -> None:
    # one token each, as on 3.11, though tokenize gives the fields' strings their own tokens from 3.12
    code = "x = f\"{d['a']}\" + f\"{d['b']}\" + f\"{d['c']}\" + f\"{d['d']}\" + f\"{d['e']}\"\n"
    assert not _mostly_single(code)
    assert _mostly_single(code.replace('f"', "").replace('}"', "}").replace("{", "").replace("}", ""))


def test_single_quotes_of_the_project(tmp_path: Path) -> None:
    """Code the port adds is single-quoted where ruff format's quote-style (or flake8-quotes) says so, or,
    with no formatter, where the module's strings mostly are; strings the line had are kept as written."""
    source = ("import torch\n\nx = torch.zeros(2).cuda()\nname = 'a' + 'c' + 'd' + 'e' + 'f'\n"
              "print(torch.cuda.get_device_name(0), \"b\")\n")
    native = Settings(runtime="native", torch_version=(2, 9))
    _project(tmp_path, {"ruff/ruff.toml": '[format]\nquote-style = "single"\n',
                        "flake8/setup.cfg": "[flake8]\ninline-quotes = '\n", "none/m.py": source})
    assert style_for(tmp_path / "ruff" / "m.py").single_quotes
    assert style_for(tmp_path / "flake8" / "m.py").single_quotes
    expected = (
        "import torch\n\n"
        "DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.device_count() "
        "else torch.device('cpu')\n\n"
        "x = torch.zeros(2).to(DEVICE)\nname = 'a' + 'c' + 'd' + 'e' + 'f'\n"
        "print(torch.get_device_module(DEVICE).get_device_name(0) if DEVICE.type in ('cuda', 'xpu') "
        "else DEVICE.type, \"b\")\n"
    )
    migrated = migrate_code(source, native).code
    assert restyle(source, migrated, tmp_path / "none" / "m.py", Style(single_quotes=True)) == expected
    assert restyle(source, migrated, tmp_path / "none" / "m.py", NO_STYLE) == expected  # the module's own quotes
    double = source.replace("'a' + 'c' + 'd'", '"a"')
    assert restyle(double, migrate_code(double, native).code, tmp_path / "none" / "m.py", NO_STYLE) == \
        migrate_code(double, native).code


@pytest.mark.parametrize("between", ["os.environ['OMP_NUM_THREADS'] = '1'\nimport argparse\n", "DEVICE = os.sep\n"])
def test_an_added_import_loads_torch_only_after_the_code_torch_reads_at_start(between: str) -> None:
    """Super-mario-bros-PPO: `import os`, `os.environ['OMP_NUM_THREADS'] = '1'`, then `import torch`. The
    runtime's import loads torch: put above the setting, it would start torch with every core, on CUDA too."""
    source = f"import os\n\n{between}import torch\n\nx = torch.ones(2).cuda()\n"
    assert migrate_code(source).code == (f"import os\n\n{between}import torch\nfrom torchport import runtime as tp\n"
                                         "\nx = torch.ones(2).to(tp.device())\n")


def test_an_added_import_stays_above_code_that_uses_it() -> None:
    source = "import os\n\nx = torch.ones(2).cuda()\nimport torch\n"
    assert migrate_code(source).code == ("import os\nfrom torchport import runtime as tp\n\n"
                                         "x = torch.ones(2).to(tp.device())\nimport torch\n")
