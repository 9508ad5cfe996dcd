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
    _build_each_command_once()


def _build_each_command_once() -> None:
    """Let typer's ``CliRunner`` build the click command of an app once, not at every ``invoke``.

    ``typer.testing.CliRunner.invoke`` converts the Typer app into a click command each time (its parameters read
    from the signatures and annotations of every command): about 25 ms of each of the tests' thousand-odd
    invocations. The command is the same object every time; each ``main`` call makes its own context.
    """
    import functools

    import typer.testing

    typer.testing._get_command = functools.cache(typer.testing._get_command)
