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

# The audit's silent fallbacks (work that quietly ran without what it asked for: mixed precision, the accelerator,
# an MPS op, CUDA profiling): reported apart from the CUDA uses (TPA01-TPA03), and not counted as CUDA use sites.
FALLBACK_CODES = frozenset({"TPA04", "TPA05", "TPA06", "TPA07"})


def audit_summary(found: list[tuple[str, int]]) -> str:
    """The audit's count line for findings given as ``(code, count)``: CUDA use sites and uses, then silent
    fallback sites and times, e.g. ``"2 run-time CUDA use site(s), 3 use(s); 1 silent fallback site(s), 1 time(s)"``
    or ``"no run-time CUDA use found"``."""
    uses = [count for code, count in found if code not in FALLBACK_CODES]
    fallbacks = [count for code, count in found if code in FALLBACK_CODES]
    line = f"{len(uses)} run-time CUDA use site(s), {sum(uses)} use(s)" if uses else "no run-time CUDA use found"
    if fallbacks:
        line += f"; {len(fallbacks)} silent fallback site(s), {sum(fallbacks)} time(s)"
    return line
