"""`migrate_code`, which runs the rules on one module, and the registry's tables it serves.

Families: `device` (TP001-TP008, TP024, TP102-TP106), `cuda_api` (TP010-TP018, TP101, TP109),
`amp` (TP020-TP023), `distributed` (TP030-TP032, TP105), `pinned` (TP040-TP041),
`unported` (TP009, TP107, TP108, TP2xx: what needs a person; TP3xx: what breaks on one target),
`guards` (TP110: CUDA guards and CUDA-only regions). Each rule is a `Rule` class (see `_rule`).
"""

from __future__ import annotations

import ast
import re
import tokenize
from dataclasses import dataclass, field

import libcst as cst

from torchport.codemods.analysis.indices import int_name_lines
from torchport.codemods.analysis.names import import_map
from torchport.codemods.analysis.source import generate_tokens, parse
from torchport.codemods.core.base import Diagnostic
from torchport.codemods.core.registry import (
    FAMILIES,
    LOOSE_TRIGGERS,
    RULES_BY_CODE,
    TRIGGERS,
    check_patterns,
    matches,
)
from torchport.codemods.core.rule import Example, Rule
from torchport.codemods.core.transformer import Migrator, _add_imports, import_visitors, remove_imports
from torchport.codemods.core.triggers import code_trigger_lines, confirmed_matches
from torchport.config import DEFAULT, Settings
from torchport.emit.package import PackageRuntime, Renderer

RULES = RULES_BY_CODE

_SUPPRESSION = re.compile(r"#\s*torchport:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")
# A project's own mark for a line that is CUDA on purpose (DeepSpeed writes `#ignore-cuda`): every rule.
_CUDA_ON_PURPOSE = re.compile(r"#\s*ignore[-_]cuda\b")


class _Prefilter:
    """``search(data)``: whether bytes ``data`` match a rule's trigger; the loose triggers find candidate
    lines fast, the exact ones confirm them there."""

    def __init__(self, exact: str, loose: str) -> None:
        self.exact = re.compile(exact.encode())
        self.loose = re.compile(loose.encode())

    def search(self, data: bytes) -> re.Match[bytes] | None:
        return next(confirmed_matches(data, self.exact, self.loose), None)


# Source whose text matches no rule's trigger cannot hold a site, so it need not be parsed.
PREFILTER = _Prefilter(TRIGGERS, LOOSE_TRIGGERS)


@dataclass
class Migration:
    """The result of migrating one module's source.

    Args:
        code: the new source (equal to the input when nothing changed).
        rewrites: rewrite counts per rule code.
        diagnostics: the sites left unchanged, sorted by line.
        sites: one entry per rewrite (code, line, column in the original source, rule summary).
        exact: whether LibCST regenerates the unchanged source byte for byte (when it does not, a
            rewrite could change lines it does not touch).
        facts: lines where the module chooses a device from CUDA's availability (``choices``: rewritten;
            ``kept``: left CUDA-or-CPU), read by the project-level pass (`torchport.pipeline.project`).
    """

    code: str
    rewrites: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sites: list[Diagnostic] = field(default_factory=list)
    exact: bool = True
    facts: dict[str, list[int]] = field(default_factory=dict)


def suppressions(source: str) -> dict[int, frozenset[str] | None]:
    """Lines carrying ``# torchport: ignore`` (None: every rule) or ``# torchport: ignore[TP001,TP1]``, and
    lines a project marks as CUDA on purpose (``#ignore-cuda``: every rule)."""
    found: dict[int, frozenset[str] | None] = {}
    if "torchport:" not in source and "ignore" not in source:
        return found
    try:
        for token in generate_tokens(source):
            if token.type == tokenize.COMMENT and _CUDA_ON_PURPOSE.search(token.string):
                found[token.start[0]] = None
            elif token.type == tokenize.COMMENT and (match := _SUPPRESSION.search(token.string)):
                codes = match.group(1)
                found[token.start[0]] = (
                    None if codes is None else frozenset(c.strip() for c in codes.split(",") if c.strip())
                )
    except (tokenize.TokenError, SyntaxError):
        pass  # the parser reports the real problem
    return found


def _renderer(settings: Settings) -> Renderer:
    """The renderer of runtime calls that ``settings.runtime`` asks for."""
    if settings.runtime == "package":
        return PackageRuntime(version=settings.torch_version)
    from torchport.emit.vendor import MODULE_NAME

    module = settings.vendor_module or MODULE_NAME
    if settings.runtime == "vendor":
        return PackageRuntime(module, settings.vendor_bootstrap, settings.torch_version)
    from torchport.emit.native import NativeRuntime

    return NativeRuntime(settings.torch_version, module, settings.vendor_bootstrap)


def _switched(source: str, settings: Settings) -> Migration | None:
    """``source``, ported before in another runtime mode, in ``settings.runtime``'s (see
    `torchport.emit.switch`); None when it uses no runtime of another mode."""
    from torchport.emit.switch import render, switch

    renderer = _renderer(settings)
    stripped = switch(source, renderer)
    if stripped is None:
        return None
    from libcst.codemod import CodemodContext

    AddImportsVisitor, RemoveImportsVisitor = import_visitors()
    m = Migrator(CodemodContext(), source=stripped.code, renderer=renderer)
    module = render(m, stripped, renderer, source)
    if AddImportsVisitor.CONTEXT_KEY in m.context.scratch:
        module = _add_imports(m.context, module)
    if RemoveImportsVisitor.CONTEXT_KEY in m.context.scratch:
        module = remove_imports(m.context, module)
    return Migration(module.code, facts=m.facts)


def migrate_code(source: str, settings: Settings = DEFAULT, syntax: ast.Module | None = None,
                 hold: str | None = None, avoid_mps: str | None = None,
                 gates: frozenset[str] = frozenset(), reached: bool = False) -> Migration:
    """Run the rules ``settings`` selects over ``source`` (a whole module).

    ``hold`` says why the module's device choices must stay CUDA-or-CPU (the project-level pass,
    `torchport.pipeline.project`, decides it); None lets the rules choose the runtime's device.
    ``avoid_mps`` says what MPS lacks in the program this module starts (the program model decides it): TP019
    writes ``tp.avoid_mps(...)`` after its imports. ``gates`` are the local names of CUDA gates that other modules
    of the project define (`torchport.codemods.analysis.gates`): what they decorate is left as it is. ``reached``:
    a ported program reaches the module, so it is ported even where its text never names CUDA.

    ``syntax`` is CPython's tree of ``source`` when the caller has it already (it is parsed
    otherwise): the rules read imports and statement lines from it, as it is faster than LibCST's.

    Raises:
        libcst.ParserSyntaxError: when ``source`` does not parse.
        ValueError: when ``settings`` names an unknown rule code.
    """
    check_patterns(settings.select + settings.ignore)
    select = settings.select or ("ALL",)
    done = _switched(source, settings)  # ported before in another runtime mode
    if done is not None:
        source, syntax = done.code, None

    def enabled(code: str) -> bool:
        return matches(code, select) and not matches(code, settings.ignore)

    syntax = syntax or parse(source)
    imports, lines = None, []
    if syntax is not None:
        imports = import_map(syntax)
        lines = code_trigger_lines(source, syntax, imports)
        if not lines and avoid_mps is None and not reached:  # only comments and strings matched: no LibCST parse
            return done or Migration(source)
        if lines:  # names bound only to ints and read as devices, which no trigger finds (`analysis.indices`)
            lines = sorted(set(lines).union(int_name_lines(syntax, source)))

    from libcst.codemod import (
        CodemodContext,  # here: it imports libcst.matchers (0.3 s)
    )

    # LibCST drops the blank lines above a last line of blanks (a notebook cell's "\n\n    "): kept aside
    end = source.find("\n", len(source.rstrip(" \t\f\r\n")))
    tail = source[end + 1:] if end >= 0 else ""
    module = cst.parse_module(source[:len(source) - len(tail)])
    resolver = None
    if syntax is not None:
        from torchport.codemods.analysis.scope import Resolver

        resolver = Resolver(syntax, source)
    codemod = Migrator(
        CodemodContext(), source=source, enabled=enabled, unsafe_fixes=settings.unsafe_fixes,
        suppressed=suppressions(source), targets=settings.targets, syntax=syntax, imports=imports,
        resolver=resolver, trigger_lines=lines, hold=hold, avoid_mps=avoid_mps,
        gates=gates, renderer=_renderer(settings), reached=reached,
    )
    tree = codemod.transform_module(module)
    if not codemod.rewrites:  # any difference would be LibCST's regeneration, not a rewrite
        return Migration(source, {}, codemod.diagnostics, codemod.sites, facts={**(done.facts if done else {}),
                                                                               **codemod.facts})
    code = tree.code + tail
    if code.startswith(("\n", "\r\n")) and not source.startswith(("\n", "\r\n")):
        code = code.lstrip("\r\n")  # a removed first import leaves its blank line behind
    return Migration(code, dict(codemod.rewrites), codemod.diagnostics, codemod.sites,
                     exact=module.code + tail == source, facts=codemod.facts)


__all__ = ["FAMILIES", "PREFILTER", "RULES", "Diagnostic", "Example", "Migration", "Rule", "migrate_code",
           "suppressions"]
