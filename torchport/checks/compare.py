"""`torchport compare RUN_A RUN_B`: per-module drift between two runs saved by `torchport.checks.debug`.

Run A is the reference (say the original on CUDA), run B the port (MPS, XPU, CPU). Records are
matched by (step, kind, key) -- key being the module's qualified name plus ``#k`` for its k-th
call -- and checked in run A's call order, so the first record that fails is the first module
whose output (or gradient) diverges. A statistic passes when ``|b - a| <= atol + rtol * |a|``
(``torch.isclose`` with ``a`` as the reference; NaN equals NaN); shapes, dtypes and NaN/Inf counts
must match exactly, and saved values (tensors of at most 64 elements by default, any size with
``watch(max_values=None)``) are compared element-wise with the same tolerances.

A gradient record that only one run has and that is all zeros (no NaN/Inf) is not reported
missing: compiled graphs hand a zero gradient to outputs that get none (AOTAutograd materialises
the tangents of unused graph outputs), where eager autograd calls no hook at all. Such rows have
status ``zero grad only in A`` (or ``B``) and count as ok.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT = 0, 1, 2
STATS = ("mean", "std", "min", "max")
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-5
ZERO_ONLY = "zero grad only in"


def _is_zero_grad(rec: dict[str, Any]) -> bool:
    """A gradient record whose tensor is all zeros (or empty): what a compiled backward passes for no gradient."""
    if rec.get("kind") != "grad" or rec.get("nan") or rec.get("inf"):
        return False
    if not rec.get("numel"):
        return True
    return rec.get("min") == 0 and rec.get("max") == 0


class CompareError(Exception):
    """A run that cannot be read (missing folder or file, not a stats file)."""


@dataclass
class Row:
    """One matched (or unmatched) record: ``status`` is ok, drift, shape, dtype, value (a constant output that
    differs), nan/inf, missing in A/B, or zero grad only in A/B (ok: see the module docstring)."""

    step: int
    kind: str
    key: str
    status: str
    shape: str = ""
    dtype: str = ""
    max_abs: float = 0.0  # largest |b - a| over the stats and saved values
    ratio: float = 0.0  # largest |b - a| / (atol + rtol*|a|); > 1 means beyond tolerance
    worst: str = ""  # the statistic behind ``ratio``, as "mean 0.1 vs 0.2"

    @property
    def ok(self) -> bool:
        return self.status == "ok" or self.status.startswith(ZERO_ONLY)


@dataclass
class Comparison:
    """Result of :func:`compare_runs`: rows in run A's call order, then records only in run B."""

    rtol: float
    atol: float
    rows: list[Row] = field(default_factory=list)

    @property
    def first_divergent(self) -> Row | None:
        """First row in call order whose values differ (missing records are reported apart)."""
        return next((r for r in self.rows if not r.ok and not r.status.startswith("missing")), None)

    @property
    def missing_in_a(self) -> list[Row]:
        return [r for r in self.rows if r.status == "missing in A"]

    @property
    def missing_in_b(self) -> list[Row]:
        return [r for r in self.rows if r.status == "missing in B"]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)


def load_run(path: Path) -> list[dict[str, Any]]:
    """Records of one run (a run folder or its ``stats.pt``); raises :class:`CompareError`."""
    from torchport.checks import debug  # imports torch: only when the command runs

    if not path.exists():
        raise CompareError(f"{path}: no such file or folder")
    try:
        return debug.load(path)["records"]
    except (OSError, ValueError, RuntimeError, EOFError) as exc:  # torch.load's unpickling errors included
        raise CompareError(str(exc).splitlines()[0] if str(exc) else f"{path}: unreadable") from None
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is bad input, not a crash
        raise CompareError(f"{path}: unreadable stats file ({type(exc).__name__})") from None


def _close(a: float, b: float, rtol: float, atol: float) -> tuple[float, float]:
    """(|b - a|, ratio to the tolerance); equal NaNs and equal infinities count as 0."""
    if (math.isnan(a) and math.isnan(b)) or a == b:
        return 0.0, 0.0
    diff = abs(b - a)
    if math.isnan(diff) or math.isinf(diff):
        return math.inf, math.inf
    return diff, diff / (atol + rtol * abs(a)) if atol + rtol * abs(a) > 0 else math.inf


def _compare_record(a: dict[str, Any], b: dict[str, Any], rtol: float, atol: float, ignore_dtype: bool) -> Row:
    row = Row(a["step"], a["kind"], a["key"], "ok", shape="x".join(map(str, a["shape"])) or "()",
              dtype=a["dtype"] if a["dtype"] == b["dtype"] else f"{a['dtype']}/{b['dtype']}")
    if a["shape"] != b["shape"]:
        row.status, row.shape, row.ratio = "shape", f"{row.shape} vs {'x'.join(map(str, b['shape'])) or '()'}", math.inf
        return row
    if a["dtype"] != b["dtype"] and not ignore_dtype:
        row.status, row.ratio = "dtype", math.inf
    if row.status == "ok" and not a["numel"] and "value" in a and a["value"] != b.get("value"):  # a constant
        row.status, row.ratio, row.worst = "value", math.inf, f"value {a['value']!r} vs {b.get('value')!r}"
        return row
    for stat in STATS:
        diff, ratio = _close(float(a[stat]), float(b[stat]), rtol, atol)
        row.max_abs = max(row.max_abs, diff)
        if ratio > row.ratio:
            row.ratio, row.worst = ratio, f"{stat} {a[stat]:.6g} vs {b[stat]:.6g}"
    va, vb = a.get("values"), b.get("values")
    if va is not None and vb is not None and va.shape == vb.shape:
        import torch

        fa, fb = va.to(torch.float64), vb.to(torch.float64)
        if va.is_complex() or vb.is_complex():
            fa, fb = va.to(torch.complex128).abs(), vb.to(torch.complex128).abs()
        same = (fa == fb) | (fa.isnan() & fb.isnan())
        gap = torch.where(same, torch.zeros_like(fa), (fb - fa).abs().nan_to_num(math.inf))
        share = gap / (atol + rtol * fa.abs().nan_to_num(0.0))
        if gap.numel():
            i = int(share.flatten().argmax())
            row.max_abs = max(row.max_abs, float(gap.max()))
            if float(share.flatten()[i]) > row.ratio:
                row.ratio = float(share.flatten()[i])
                row.worst = f"value[{i}] {float(fa.flatten()[i]):.6g} vs {float(fb.flatten()[i]):.6g}"
    if row.status != "ok":
        return row
    if a["nan"] != b["nan"] or a["inf"] != b["inf"]:
        row.status, row.ratio = "nan/inf", math.inf
        row.worst = f"nan {a['nan']} vs {b['nan']}, inf {a['inf']} vs {b['inf']}"
    elif row.ratio > 1.0:
        row.status = "drift"
    return row


def compare_runs(records_a: list[dict[str, Any]], records_b: list[dict[str, Any]], rtol: float = DEFAULT_RTOL,
                 atol: float = DEFAULT_ATOL, ignore_dtype: bool = False) -> Comparison:
    """Compare two record lists (as saved by ``torchport.checks.debug``); see the module docstring.

    Args:
        records_a, records_b: the ``"records"`` of two runs; A is the reference.
        rtol, atol: relative and absolute tolerance, as ``torch.isclose`` (``a`` is the reference).
        ignore_dtype: do not count a dtype mismatch (e.g. an fp32 run against a bf16 run).
    """
    result = Comparison(rtol, atol)
    by_key_b = {(r["step"], r["kind"], r["key"]): r for r in records_b}
    seen = set()
    for a in records_a:
        ident = (a["step"], a["kind"], a["key"])
        seen.add(ident)
        b = by_key_b.get(ident)
        if b is None:
            status = f"{ZERO_ONLY} A" if _is_zero_grad(a) else "missing in B"
            result.rows.append(Row(*ident, status, shape="x".join(map(str, a["shape"])), dtype=a["dtype"]))
        else:
            result.rows.append(_compare_record(a, b, rtol, atol, ignore_dtype))
    for b in records_b:
        ident = (b["step"], b["kind"], b["key"])
        if ident not in seen:
            status = f"{ZERO_ONLY} B" if _is_zero_grad(b) else "missing in A"
            result.rows.append(Row(*ident, status, shape="x".join(map(str, b["shape"])), dtype=b["dtype"]))
    return result


def _label(row: Row, steps: bool) -> str:
    return (f"{row.step}:" if steps else "") + row.key + ("" if row.kind == "output" else " (grad)")


def _print_table(result: Comparison, run_a: Path, run_b: Path, diverged_only: bool) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    steps = any(r.step for r in result.rows)
    table = Table(title=f"{escape(str(run_a))} (A) vs {escape(str(run_b))} (B)   "
                        f"rtol={result.rtol:g} atol={result.atol:g}")
    for col, justify in (("#", "right"), ("module", "left"), ("shape", "left"), ("dtype", "left"),
                         ("max |B-A|", "right"), ("/tol", "right"), ("worst", "left"), ("status", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    first = result.first_divergent
    for i, row in enumerate(result.rows):
        if diverged_only and row.ok:
            continue
        one_sided = row.status.startswith(("missing", ZERO_ONLY))
        style = "green" if row.ok else ("yellow" if one_sided else "red")
        status = row.status + ("  <- first" if row is first else "")
        ratio = "" if one_sided else ("inf" if math.isinf(row.ratio) else f"{row.ratio:.3g}")
        table.add_row(str(i), escape(_label(row, steps)), row.shape, row.dtype,
                      "" if one_sided else f"{row.max_abs:.3g}", ratio, escape(row.worst),
                      f"[{style}]{escape(status)}[/]")
    out = Console(width=max(Console().width, 120))
    if table.row_count:
        out.print(table)
    n_bad = sum(not r.ok for r in result.rows)
    if first is not None:
        out.print(f"[red]first divergent module:[/] {escape(_label(first, steps))} ({first.status}: "
                  f"{escape(first.worst)})", highlight=False)
    for which, rows in (("A", result.missing_in_a), ("B", result.missing_in_b)):
        if rows:
            names = ", ".join(_label(r, steps) for r in rows)
            out.print(f"[yellow]missing in {which}:[/] {escape(names)}", highlight=False)
    zero = [r for r in result.rows if r.status.startswith(ZERO_ONLY)]
    for which in ("A", "B"):
        names = ", ".join(_label(r, steps) for r in zero if r.status.endswith(which))
        if names:
            out.print(f"zero gradients only in {which} (not counted): {escape(names)}", highlight=False)
    verdict = "[green]all within tolerance[/]" if result.ok else f"[red]{n_bad} of {len(result.rows)} records differ[/]"
    out.print(f"{len(result.rows)} records compared: {verdict}", highlight=False)


def _to_json(result: Comparison, run_a: Path, run_b: Path) -> str:
    def clean(row: Row) -> dict[str, Any]:
        d = asdict(row)
        for k in ("max_abs", "ratio"):
            if math.isinf(d[k]) or math.isnan(d[k]):
                d[k] = None  # JSON has no inf
        d["ok"] = row.ok
        return d

    first = result.first_divergent
    return json.dumps({
        "run_a": str(run_a), "run_b": str(run_b), "rtol": result.rtol, "atol": result.atol, "ok": result.ok,
        "first_divergent": clean(first) if first else None,
        "missing_in_a": [r.key for r in result.missing_in_a], "missing_in_b": [r.key for r in result.missing_in_b],
        "zero_grad_only_in_a": [r.key for r in result.rows if r.status == f"{ZERO_ONLY} A"],
        "zero_grad_only_in_b": [r.key for r in result.rows if r.status == f"{ZERO_ONLY} B"],
        "records": [clean(r) for r in result.rows],
    }, indent=2)


class Format(str, Enum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add the ``compare`` command to ``app``."""

    @app.command("compare")
    def compare(
        run_a: Annotated[Path, typer.Argument(help="Reference run: a folder with stats.pt, or the file.",
                                              show_default=False)],
        run_b: Annotated[Path, typer.Argument(help="Run to check against it.", show_default=False)],
        rtol: Annotated[float, typer.Option("--rtol", min=0.0, help="Relative tolerance.")] = DEFAULT_RTOL,
        atol: Annotated[float, typer.Option("--atol", min=0.0, help="Absolute tolerance.")] = DEFAULT_ATOL,
        ignore_dtype: Annotated[bool, typer.Option("--ignore-dtype",
                                                   help="Do not count dtype mismatches (fp32 vs bf16 runs).")] = False,
        diverged_only: Annotated[bool, typer.Option("--diverged-only", help="Show only records that differ.")] = False,
        output_format: Annotated[Format, typer.Option("--format", help="Report format on stdout.")] = Format.text,
    ) -> None:
        """Compare per-module stats saved by torchport.checks.debug; exit 1 if any module diverges.

        Run A is the reference. Exit codes: 0 all within tolerance, 1 a record differs or is missing,
        2 bad input.
        """
        try:
            records_a, records_b = load_run(run_a), load_run(run_b)
        except CompareError as exc:
            from rich.console import Console
            from rich.markup import escape

            Console(stderr=True).print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        result = compare_runs(records_a, records_b, rtol, atol, ignore_dtype)
        if output_format is Format.json:
            typer.echo(_to_json(result, run_a, run_b))
        else:
            _print_table(result, run_a, run_b, diverged_only)
        raise typer.Exit(EXIT_OK if result.ok else EXIT_DIVERGED)
