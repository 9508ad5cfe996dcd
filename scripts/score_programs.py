"""Score `torchport programs` against hand labels written before the tool ran (run by hand; the repositories are
fetched outside the project and never committed).

    python scripts/score_programs.py LABELS.jsonl REPOS_DIR [--out verdicts.json]

LABELS.jsonl: one object a line: ``repo``, ``path`` (entry point, relative to the repo), ``cpu`` (bool), ``mps``
(``yes``/``no``/``cpu-on-mac``), ``xpu`` (bool), ``blockers`` (``target``, ``path``, ``line``). REPOS_DIR/<repo>
holds each repository. Prints agreement per target, blocker recall (same target, file, and line within 3 of the
blocker or of the entry point's import that leads to it), and every disagreement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path


def _programs(repo: Path) -> dict[str, dict]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "torchport", "programs", ".", "--output-format", "json",
                           "--no-cache"], cwd=repo, capture_output=True, text=True, env=env, check=False)
    try:
        return {p["path"]: p for p in json.loads(done.stdout)["programs"]}
    except (json.JSONDecodeError, KeyError):
        print(f"{repo.name}: no report ({done.stderr[-300:]})", file=sys.stderr)
        return {}


def _places(blocker: dict) -> list[tuple[str, int]]:
    """Where a blocker is, and each import that leads to it from the entry point (``chain``, or ``via`` alone):
    every place of one fact."""
    found = [(blocker["path"], blocker["line"])]
    for place in blocker.get("chain", [blocker["via"]] if "via" in blocker else []):
        path, _, line = place.rpartition(":")
        found.append((path, int(line)))
    return found


def _mps(runs_on: list[str]) -> str:
    if "mps" in runs_on:
        return "yes"
    return "cpu-on-mac" if "cpu" in runs_on else "no"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("labels", type=Path)
    parser.add_argument("repos", type=Path)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    labels = [json.loads(line) for line in options.labels.read_text().splitlines() if line.strip()]
    reports: dict[str, dict[str, dict]] = {}
    agree: dict[str, int] = defaultdict(int)
    found = total = 0
    rows = []
    for label in labels:
        repo = label["repo"]
        if repo not in reports:
            reports[repo] = _programs(options.repos / repo)
        program = reports[repo].get(label["path"])
        runs_on = program["runs_on"] if program else ["cuda", "mps", "xpu", "cpu"]
        tool = {"cpu": "cpu" in runs_on, "mps": _mps(runs_on), "xpu": "xpu" in runs_on}
        wrong = [t for t in ("cpu", "mps", "xpu") if tool[t] != label[t]]
        for target in ("cpu", "mps", "xpu"):
            agree[target] += target not in wrong
        blockers = program["blockers"] if program else []
        missed = []
        for want in label["blockers"]:
            if want.get("reason", "").startswith("secondary"):
                continue
            total += 1
            hit = any(b["target"] == want["target"] and any(
                path == want["path"] and abs(line - want["line"]) <= 3 for path, line in _places(b)) for b in blockers)
            found += hit
            if not hit:
                missed.append(f"{want['target']} {want['path']}:{want['line']}")
        rows.append({"repo": repo, "path": label["path"], "label": {t: label[t] for t in tool}, "tool": tool,
                     "wrong": wrong, "missed": missed, "reported": program is not None,
                     "blockers": [f"{b['target']} {b['path']}:{b['line']} {b['reason']}" for b in blockers]})
    n = len(labels)
    print(f"{n} entry points in {len(reports)} repositories")
    for target in ("cpu", "mps", "xpu"):
        print(f"  {target}: {agree[target]}/{n} agree ({100 * agree[target] / n:.0f}%)")
    print(f"  blocker recall: {found}/{total} ({100 * found / max(total, 1):.0f}%)")
    for row in rows:
        if row["wrong"] or row["missed"]:
            print(f"- {row['repo']}/{row['path']}: wrong {row['wrong']} label {row['label']} tool {row['tool']}"
                  f"{'' if row['reported'] else ' (not a program in the report)'}; missed {row['missed']}")
            for blocker in row["blockers"][:3]:
                print(f"    tool: {blocker}")
    if options.out:
        options.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
