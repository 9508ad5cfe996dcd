"""`cuda_only_program`: scripts that exit unless they find CUDA GPUs are left alone as a whole."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchport.codemods.analysis.programs import cuda_only_program

MAIN = "import torch\n\n\ndef main():\n    pass\n\n\nif __name__ == '__main__':\n"


@pytest.mark.parametrize(("body", "line"), [
    ("    assert torch.cuda.is_available()\n    main()\n", None),  # the port removes it (TP009)
    ("    assert torch.cuda.device_count() >= 2, 'two GPUs'\n    main()\n", 9),
    ("    n = torch.cuda.device_count()\n    assert n > 1\n    main()\n", 10),
    ("    if not torch.cuda.is_available():\n        raise SystemExit('needs CUDA')\n    main()\n", 9),
    ("    n = torch.cuda.device_count()\n    if n < 8:\n        print(n)\n    else:\n        main()\n", 10),
    ("    if torch.cuda.device_count() == 0:\n        sys.exit(1)\n    main()\n", 9),
    # the work only where CUDA is, through an imported name
    ("    if not torch.cuda.is_available():\n        print('needs a GPU')\n    else:\n        Trainer().train()\n", 9),
])
def test_main_blocks_that_need_cuda(body: str, line: int | None) -> None:
    assert cuda_only_program(ast.parse(MAIN + body)) == line


@pytest.mark.parametrize("body", [
    "    main()\n",
    "    main()\n    assert torch.cuda.is_available()\n",  # the work starts before the check
    "    if not torch.cuda.is_available():\n        print('no CUDA')\n    main()\n",  # a warning, no exit
    "    n = torch.cuda.device_count()\n    if n < 1:\n        main()\n",  # the work runs without CUDA
    "    if torch.cuda.is_available():\n        main()\n",
    "    assert torch.cuda.device_count() >= 0\n    main()\n",  # true everywhere
    # NaturalSpeech2's Pattern_Generator: each arm picks a device, the work follows both
    "    if not torch.cuda.is_available():\n        d = 'cpu'\n    else:\n        d = 'cuda:0'\n    main()\n",
    "    if not args.cuda:\n        sys.exit()\n    main()\n",  # a flag from the command line, not a detection
])
def test_main_blocks_that_do_not(body: str) -> None:
    assert cuda_only_program(ast.parse(MAIN + body)) is None


def test_a_top_level_requirement() -> None:
    source = ("import sys\nfrom log_utils import verify_min_gpu_count\n\n"
              "if not verify_min_gpu_count(min_gpus=2):\n    sys.exit()\n")
    # what `verify_min_gpu_count` answers is read from its definition (the project pass passes the names bound to
    # another module's CUDA predicates), never guessed from its name
    assert cuda_only_program(ast.parse(source)) is None
    assert cuda_only_program(ast.parse(source), frozenset({"verify_min_gpu_count"})) == 4


def test_the_projects_gates_are_the_same_when_asked_again() -> None:
    """A run asks for them twice (the programs left whole, then the report); the second time reads them from memory."""
    from pathlib import Path

    from torchport.pipeline import programs
    from torchport.results import FileResult

    gate = ("import sys\nimport torch\n\n\ndef need_gpu():\n    if not torch.cuda.is_available():\n"
            "        raise SystemExit('needs a GPU')\n")
    results = [FileResult(path=Path("helpers.py"), display="helpers.py", original=gate, migrated=gate)]
    trees = {0: ast.parse(gate)}
    first = programs._project_gates(results, trees)
    assert first == {0: {"need_gpu": 7}}
    assert programs._project_gates(results, trees) == first


def test_a_class_counts_as_a_test_where_a_runner_collects_it() -> None:
    # SR-LSTM's `class Processor()` has a `test_epoch` its training loop calls: pytest collects no such class
    from torchport.codemods.analysis.programs import is_test

    def first(text: str) -> ast.stmt:
        return ast.parse(text).body[0]

    assert not is_test(first("class Processor():\n    def test_epoch(self, epoch):\n        pass\n"))
    assert is_test(first("class TestModel:\n    def test_forward(self):\n        pass\n"))
    assert is_test(first("class Timer(unittest.TestCase):\n    def test_gpu(self):\n        pass\n"))


@pytest.mark.parametrize(("migrated", "in_main"), [
    ("from torchport import runtime as tp\n\nif __name__ == '__main__':\n    tp.avoid_mps('a process group')\n"
     "    main()\n", True),  # m3m's training script: a script importing its helpers does not run the call
    ("from torchport import runtime as tp\n\ntp.avoid_mps('float64')\n\nif __name__ == '__main__':\n    main()\n",
     False),
    ("from torchport import runtime as tp\n\ntp.keep_cuda_or_cpu('a kept choice')\nmain()\n", False),
    # the call in the `else:` of an optional torch import runs on import too
    ("try:\n    import torch\nexcept ImportError:\n    torch = None\nelse:\n"
     "    from torchport import runtime as tp\n    tp.avoid_mps('float64')\n", False),
])
def test_a_call_that_keeps_a_mac_off_mps_runs_on_import_only_outside_the_main_block(migrated: str,
                                                                                    in_main: bool) -> None:
    from torchport.pipeline.programs import _avoids_in_main_block
    from torchport.results import FileResult

    assert _avoids_in_main_block(FileResult(path=Path("train.py"), display="train.py", migrated=migrated)) is in_main
