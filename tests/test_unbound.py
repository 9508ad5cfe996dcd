"""`torchport.model.unbound`: the first name a program reads before its work that nothing binds."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchport.model.unbound import first_calls, unbound_read


def _read(source: str, script: bool = True) -> tuple[int, str] | None:
    text = textwrap.dedent(source)
    return unbound_read(ast.parse(text), text, script)


@pytest.mark.parametrize(("source", "found"), [
    ("import torch\nnet = torch.load('c.pt')\nloader = DataLoader(dataset_test)\n", (3, "DataLoader")),
    ("import sys\nreload(sys)\nsys.setdefaultencoding('utf8')\n", (2, "reload")),  # Python 2's builtin
    ("def main():\n    x = 1\n    run(x)\n\nif __name__ == '__main__':\n    main()\n", (3, "run")),
    ("import torch\nfor n in names:\n    print(n)\n", (2, "names")),  # a loop's iterable runs first
    ("@register\ndef f():\n    pass\n", (1, "register")),
    ("with open(path) as f:\n    pass\n", (1, "path")),
])
def test_a_name_read_before_the_work_that_nothing_binds_is_found(source: str, found: tuple[int, str]) -> None:
    assert _read(source) == found


@pytest.mark.parametrize("source", [
    "import torch\nfor step in range(3):\n    pass\nplot(step)\n",  # after the loop: the work is done
    "def main():\n    for s in range(3):\n        pass\n    report()\n\nmain()\n",
    "try:\n    xrange\nexcept NameError:\n    xrange = range\n",
    "print(later)\nlater = 1\n",  # bound somewhere: not settled here
    "from helpers import *\nrun(model)\n",  # a star import may bind it
    "globals()['x'] = 1\nprint(x)\n",
    "import builtins\nbuiltins.x = 1\nprint(x)\n",
    "f = lambda: missing\nitems = (missing for _ in range(2))\n",  # runs later, or never
    "import sys\nif sys.argv[1:]:\n    print(missing)\n",  # a branch that may not run
    "x: Missing = 1\n",  # an annotation
    "def f(a=1):\n    return g(a)\n",  # a definition only
    "print(__file__, __doc__)\n",
    # what may be skipped: the other arm, the right side of `or`, a comprehension's element, a case, a `with` block
    "import sys\ntext_type = unicode if sys.version_info[0] == 2 else str\n",
    "import torch\nassert torch.cuda.is_available() or allow_cpu\n",
    "items = [missing for _ in range(0)]\n",
    "import sys\nmatch sys.argv:\n    case []:\n        print(missing)\n",
    "import contextlib\nwith contextlib.suppress(NameError):\n    print(missing)\n",
    # after work done through an imported function, a method or a constructor
    "from trainer import fit\nfit()\nprint(stale)\n",
    "import trainer\nt = trainer.Trainer()\nt.fit()\nprint(stale)\n",
    # a generator's body runs when it is iterated, not when it is called
    "def stream():\n    yield missing\n\nstream()\n",
])
def test_what_runs_later_may_be_bound_or_is_bound_somewhere_is_not_found(source: str) -> None:
    assert _read(source) is None


def test_the_main_block_is_read_only_for_a_script() -> None:
    source = "import torch\n\nif __name__ == '__main__':\n    demo(torch.zeros(2))\n"
    assert _read(source) == (4, "demo")
    assert _read(source, script=False) is None


def test_the_calls_made_before_the_work_are_given_in_the_order_they_run() -> None:
    source = textwrap.dedent("""\
        import torch
        from networks import Denoiser
        d = Denoiser(steps=10)
        print(torch.cuda.is_available())
        def main():
            x = make(Denoiser(2))
            fit(x)
            never(x)
        main()
        """)
    calls = first_calls(ast.parse(source), source, script=True)
    assert [ast.unparse(c) for c in calls] == [
        "Denoiser(steps=10)", "print(torch.cuda.is_available())", "main()", "Denoiser(2)", "make(Denoiser(2))"]


def test_no_calls_are_given_where_the_module_may_bind_names_it_does_not_spell() -> None:
    source = "from helpers import *\nDenoiser(1, 2, 3)\n"
    assert first_calls(ast.parse(source), source, script=True) == []
