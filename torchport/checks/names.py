"""Names the checking tools share between modules and processes, in one module free of torch (and of every
import): the command-line glue reads them without importing torch, and a traced or tested child process finds
its settings under them.

``verify_unittest.py`` keeps a literal copy of `UNITTEST_RESULTS_ENV`: it runs under the tested project's
interpreter, which may have no torchport (a test checks the two agree).
"""

# `torchport trace` runs `python [opts] -c BOOTSTRAP KIND TARGET ARGS...`; the settings travel as JSON in CHILD_ENV.
CHILD_ENV = "TORCHPORT_TRACE_CHILD"
BOOTSTRAP = "from torchport.checks.trace import _child_main; _child_main()"
# `torchport verify` asks its unittest runner to write each test's outcome to the file named here.
UNITTEST_RESULTS_ENV = "TORCHPORT_VERIFY_UNITTEST_RESULTS"
