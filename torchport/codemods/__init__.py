"""The rewrite rules, one module per family, and `migrate_code`, which runs them all on one module.

Families: `device` (TP001-TP005), `cuda_api` (TP010-TP014), `amp` (TP020-TP023),
`distributed` (TP030-TP031). Diagnostics are TP1xx.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.codemod import CodemodContext

from torchport.codemods import amp, cuda_api, device, distributed
from torchport.config import DEFAULT, Settings
from torchport.codemods._base import Diagnostic, Rule
from torchport.codemods._transformer import MigrateCodemod

FAMILIES = (device, cuda_api, amp, distributed)

_EXTRA_RULES = (
    Rule("TP103", "is-cuda", "`.is_cuda` is CUDA-specific; left unchanged.", "if x.is_cuda:"),
    Rule("TP104", "device-type-comparison", 'A comparison with "cuda" may guard CUDA-only code; left unchanged.',
         'use_fused = device_type == "cuda"'),
    Rule("TP107", "backend-flags", "`torch.backends.cudnn`/`cuda` flags are left as they are: harmless elsewhere "
         "(one note per file).", "torch.backends.cudnn.benchmark = True"),
)

RULES: dict[str, Rule] = {rule.code: rule for family in FAMILIES for rule in family.RULES}
RULES.update({rule.code: rule for rule in _EXTRA_RULES})
RULES = dict(sorted(RULES.items()))


@dataclass
class Migration:
    """The result of migrating one module's source.

    Args:
        code: the new source (equal to the input when nothing changed).
        rewrites: rewrite counts per rule code.
        diagnostics: the sites left unchanged, sorted by line.
    """

    code: str
    rewrites: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def migrate_code(source: str, settings: Settings = DEFAULT) -> Migration:
    """Run the rules ``settings`` selects over ``source`` (a whole module).

    Raises:
        libcst.ParserSyntaxError: when ``source`` does not parse.
    """
    module = cst.parse_module(source)
    codemod = MigrateCodemod(CodemodContext(), source=source)
    code = codemod.transform_module(module).code
    if code.startswith(("\n", "\r\n")) and not source.startswith(("\n", "\r\n")):
        code = code.lstrip("\r\n")  # a removed first import leaves its blank line behind
    return Migration(code, dict(codemod.rewrites), codemod.diagnostics)


__all__ = ["RULES", "Diagnostic", "Migration", "Rule", "migrate_code"]
