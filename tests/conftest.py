import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        help="Rewrite the .expected.py and .diagnostics.txt files from the current output (review the diff).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Write torchport's bytecode once, before the tests start their child processes.

    An editable install leaves no ``.pyc`` files and ``PYTHONDONTWRITEBYTECODE=1`` (set on this project's machines)
    keeps Python from writing them, so each of the hundreds of child processes the tests start (the command line,
    ported scripts importing the runtime) would compile torchport's modules from source again. Python still reads
    bytecode that exists; ``compileall`` writes it atomically, so xdist's workers may race here harmlessly.
    """
    import compileall
    from pathlib import Path

    compileall.compile_dir(Path(__file__).resolve().parents[1] / "torchport", quiet=2, workers=1)
