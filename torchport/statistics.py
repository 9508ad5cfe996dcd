"""`--statistics`: counts per rule and the share of CUDA-specific sites accounted for.

A site is accounted for when torchport rewrote it or reported it. The sites left in a file
after migration are counted independently of the rules, from the tokens of the output:
`.cuda` (method or `torch.cuda`), `.is_cuda`, and the strings "cuda", "cuda:N", f"cuda:{...}"
and "nccl". A left site that no diagnostic covers is *unreported*.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from torchport.engine import FileResult

_STRING = re.compile(r"""^[rRuU]?(['"])(cuda(:\d+)?|nccl)\1$|^[fF][rR]?(['"])cuda:""")
# Reports about a whole file or a backend, not about one CUDA-specific site.
_NOT_A_SITE = ("TP107", "TP3")


def leftover_sites(code: str) -> int:
    """How many CUDA-specific tokens ``code`` still holds (0 for code that does not tokenize)."""
    count = 0
    previous: list[str] = ["", ""]
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and token.string in ("cuda", "is_cuda") and previous[-1] == ".":
                count += previous[-2] != "backends"  # torch.backends.cuda flags are harmless (TP107)
            elif token.type == tokenize.STRING and _STRING.match(token.string):
                count += 1
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                previous = [previous[-1], token.string]
    except (tokenize.TokenError, SyntaxError):
        return 0
    return count


@dataclass(frozen=True)
class FileStatistics:
    """Site accounting for one file: rewritten, reported, and left unreported."""

    display: str
    rewritten: int
    reported: int
    unreported: int

    @property
    def total(self) -> int:
        return self.rewritten + self.reported + self.unreported

    @property
    def accounted(self) -> float:
        """Share of sites rewritten or reported, 1.0 for a file with none."""
        return 1.0 if self.total == 0 else (self.rewritten + self.reported) / self.total


def file_statistics(result: FileResult) -> FileStatistics:
    reported = sum(1 for d in result.diagnostics if not d.code.startswith(_NOT_A_SITE))
    left = leftover_sites(result.migrated if result.migrated is not None else result.original or "")
    return FileStatistics(result.display, sum(result.rewrites.values()), reported, max(0, left - reported))


def rule_counts(results: Sequence[FileResult]) -> Counter[str]:
    """Rewrites and diagnostics per rule code, over every file."""
    counts: Counter[str] = Counter()
    for result in results:
        counts.update(result.rewrites)
        counts.update(d.code for d in result.diagnostics)
    return counts
