"""What the installed torch has (`torchport.model.installed`), read from its files: only what they settle."""

import ast

import pytest

from torchport.model import installed


@pytest.mark.parametrize(("module", "name"), [
    ("torch.utils.ffi", None),  # removed in torch 1.0
    ("torch._six", None),  # removed in torch 2.0 (a private name at torch's root)
    ("torch.utils.data.dataloader", "_DataLoaderIter"),  # PyTorch 0.4's private iterator
])
def test_what_torch_removed_is_lacking(module: str, name: str | None) -> None:
    assert installed.lacks(module, name)


@pytest.mark.parametrize(("module", "name"), [
    ("torch.utils.data.dataloader", "DataLoader"),
    ("torch.utils.data", "dataloader"),  # a submodule, not a name
    ("torch.nn", "functional"),
    ("torch.cuda.amp", "autocast"),
    ("torch._C._nn", None),  # inside a compiled extension: its files do not settle it
    ("torch.npu", None),  # a public name at the root: a device module a plug-in puts in sys.modules
    ("torch", "gesv"),  # torch's root has a module __getattr__
    ("numpy.distutils", None),  # not torch's
])
def test_what_torch_has_or_its_files_do_not_settle_is_not_lacking(module: str, name: str | None) -> None:
    assert not installed.lacks(module, name)


def test_the_statements_and_the_text_scan_agree() -> None:
    text = ("import torch.utils.ffi\nfrom torch.utils.data.dataloader import (DataLoader, _DataLoaderIter)\n"
            "from torch.nn import functional as F\n")
    tree = ast.parse(text)
    assert [installed.missing_imports(s) for s in tree.body] == [
        ["torch.utils.ffi"], ["torch.utils.data.dataloader._DataLoaderIter"], []]
    assert installed.lacking(tree.body[0]) == (
        f"imports torch.utils.ffi, which torch {installed.version()} (the one installed) lacks: "
        f"{installed.RUNS_NOWHERE}")
    assert installed.may_lack(text)
    assert not installed.may_lack("from torch.nn import functional as F\nimport torch.cuda\n")
    assert installed.version().count(".") == 2
