"""``python -m unittest ARGS``, recording each test's outcome as well: the runner `torchport verify` uses.

`torchport verify` runs ``python [options] .../torchport/verify_unittest.py ARGS`` where the command says
``python [options] -m unittest ARGS``. This script is ``unittest.main(module=None)``, as ``python -m
unittest`` is (same arguments, discovery, output, exit code, ``sys.path[0]`` and ``sys.argv[0]``), with a
result class that also appends one JSON line per outcome, ``{"id": ..., "outcome": ...}``, to the file
named by the ``TORCHPORT_VERIFY_UNITTEST_RESULTS`` environment variable (removed from the environment
before any test runs). Lines are flushed as they are written, so a run that is killed leaves the outcomes
of the tests it finished.

Ids match pytest's JUnit ones (``package.module.Class::test_method``); a module that cannot be imported
is ``package.module``; a failing ``setUpClass``/``setUpModule`` is unittest's own description of it.
Outcomes: ``passed``, ``failed``, ``error``, ``skipped``; a subtest's failure, error or skip is its test's
(the worst wins), an expected
failure is ``skipped`` (as pytest reports xfail) and an unexpected success is ``failed`` (unittest counts
it as a failure).

Standard library only: it runs under whichever interpreter the command names, even one without torchport.
"""

import os
import sys

# Run as a script, Python put this folder first on sys.path; `python -m unittest` puts the working folder
# there instead. Done before any other import, so that no module here can shadow a standard one.
if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(
        os.path.abspath(__file__)):
    sys.path[0] = os.getcwd()

import json  # noqa: E402
import unittest  # noqa: E402

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into the tests' process
if TYPE_CHECKING:
    from _typeshed import OptExcInfo

RESULTS_ENV = "TORCHPORT_VERIFY_UNITTEST_RESULTS"
__unittest = True  # as in unittest's own modules: tracebacks leave out this module's frames

_sink = None  # the open results file, or None (the script was run without RESULTS_ENV)


def test_id(test: unittest.TestCase) -> str:
    """The id under which ``test`` is reported: ``module.Class::method``, or unittest's own id."""
    if isinstance(test, getattr(unittest.case, "_SubTest", ())):
        test = test.test_case  # type: ignore[attr-defined]  # a _SubTest, by the isinstance above
    if type(test).__name__ == "_FailedTest" and type(test).__module__ == "unittest.loader":
        return test._testMethodName  # the module (or name) that could not be imported
    test_id_ = test.id()
    method = getattr(test, "_testMethodName", None)
    if method and test_id_.endswith("." + method):
        return test_id_[: -len(method) - 1] + "::" + method
    return test_id_


def _record(test: unittest.TestCase, outcome: str) -> None:
    if _sink is not None:
        _sink.write(json.dumps({"id": test_id(test), "outcome": outcome}) + "\n")
        _sink.flush()


class RecordingResult(unittest.TextTestResult):
    """unittest's text result (same output), recording each outcome in the results file too."""

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        _record(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: "OptExcInfo") -> None:
        super().addFailure(test, err)
        _record(test, "failed")

    def addError(self, test: unittest.TestCase, err: "OptExcInfo") -> None:
        super().addError(test, err)
        _record(test, "error")

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        _record(test, "skipped")  # a skipped subtest skips its test (unittest then reports no success for it)

    def addExpectedFailure(self, test: unittest.TestCase, err: "OptExcInfo") -> None:
        super().addExpectedFailure(test, err)
        _record(test, "skipped")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        _record(test, "failed")

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: "OptExcInfo | None") -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:  # the exc_info of a failure or error: err[0] is an exception class
            _record(test, "failed" if issubclass(err[0], test.failureException) else "error")  # type: ignore[arg-type]


class RecordingRunner(unittest.TextTestRunner):
    resultclass = RecordingResult  # type: ignore[assignment]  # typeshed's Callable type for a result class


def main() -> None:
    """Run unittest's command line on ``sys.argv[1:]``; exits as ``python -m unittest`` would."""
    global _sink
    path = os.environ.pop(RESULTS_ENV, None)
    if path:
        _sink = open(path, "a", encoding="utf-8")
    # What unittest/__main__.py does: the usage line then reads "python -m unittest".
    sys.argv[0] = os.path.basename(sys.executable) + " -m unittest"
    unittest.main(module=None, testRunner=RecordingRunner)


if __name__ == "__main__":
    main()
