import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        help="Rewrite the .expected.py and .diagnostics.txt files from the current output (review the diff).",
    )
