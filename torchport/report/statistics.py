"""`--statistics`: counts per rule and the share of CUDA-specific sites accounted for.

A site is accounted for when torchport rewrote it or reported it. The sites left in a file
after migration are counted independently of the rules, from the tokens of the output:
`.cuda` (method or `torch.cuda`), `.is_cuda`, and the strings "cuda", "cuda:N", f"cuda:{...}"
and "nccl". A left site on a line that no diagnostic explains is *unreported*.
"""

from __future__ import annotations

import difflib
import re
import tokenize
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from torchport.codemods.analysis.source import generate_tokens
from torchport.results import FileResult

_STRING = re.compile(r"""^[rRuU]?(['"])(cuda(:\d+)?|nccl)\1$|^[fF][rR]?(['"])cuda:""")
# Reports about a whole file or a backend, not about one CUDA-specific site.
_NOT_A_SITE = ("TP107", "TP3")


def leftover_lines(code: str) -> Counter[int]:
    """CUDA-specific tokens ``code`` still holds, per 1-based line (empty for code that does not tokenize).

    ``.cuda`` counts when it is called or used as a module (``x.cuda(``, ``torch.cuda.``), not as a
    plain attribute such as an ``args.cuda`` flag.
    """
    lines: Counter[int] = Counter()
    if "cuda" not in code and "nccl" not in code:  # every site counted spells one of them
        return lines
    try:
        tokens = [t for t in generate_tokens(code)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        return lines
    for i, token in enumerate(tokens):
        before = [t.string for t in tokens[max(0, i - 2):i]]
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if token.type == tokenize.NAME and before[-1:] == ["."]:
            if token.string == "is_cuda" or (
                token.string == "cuda" and after in ("(", ".") and before[:1] != ["backends"]  # TP107's flags
            ):
                lines[token.start[0]] += 1
        elif token.type == tokenize.STRING and _STRING.match(token.string):
            lines[token.start[0]] += 1
    return lines


def leftover_sites(code: str) -> int:
    """How many CUDA-specific tokens ``code`` still holds."""
    return sum(leftover_lines(code).values())


def _original_line(before: str, after: str) -> dict[int, int]:
    """Map each 1-based line of ``after`` to the line of ``before`` it came from (or replaced)."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    mapping = {}
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            mapping[j + 1] = min(i1 + (j - j1), max(i2 - 1, i1)) + 1
    return mapping


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
    """Rewritten and reported sites, and the leftover sites on lines no diagnostic explains."""
    reported = sum(1 for d in result.diagnostics if not d.code.startswith(_NOT_A_SITE))
    original = result.original or ""
    migrated = result.migrated if result.migrated is not None else original
    explained = {d.line for d in result.diagnostics}
    mapping = _original_line(original, migrated) if migrated != original else {}
    unreported = sum(count for line, count in leftover_lines(migrated).items()
                     if mapping.get(line, line) not in explained)
    return FileStatistics(result.display, sum(result.rewrites.values()), reported, unreported)


def rule_counts(results: Sequence[FileResult]) -> Counter[str]:
    """Rewrites and diagnostics per rule code, over every file."""
    counts: Counter[str] = Counter()
    for result in results:
        counts.update(result.rewrites)
        counts.update(d.code for d in result.diagnostics)
    return counts
