"""The README and docs/ agree with the tree: the layout page, the links, and the README's two commands."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PACKAGE = ROOT / "torchport"

# One entry per line: "- `torchport/pipeline/` — ..." (a folder ends with "/"), continuation lines indented.
ENTRY = re.compile(r"^- `(torchport/[^`]*)` — (.*(?:\n  .*)*)", re.M)
# A module or folder an entry's description names: `files.py`, `core/`, `checks/debug.py`.
NAMED_PATH = re.compile(r"`([A-Za-z_]\w*(?:/[A-Za-z_]\w*)*(?:\.py|/))`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")

TWO_COMMANDS = (
    'pip install torch==2.13.0 && pip install -e ".[test]" && torchport migrate examples/cuda_train --dry-run\n'
    "OMP_NUM_THREADS=1 python -m pytest -q\n"
)


def layout_entries() -> dict[str, str]:
    return {path: description for path, description in ENTRY.findall((DOCS / "layout.md").read_text())}


def package_tree() -> set[str]:
    """Every subpackage (as `torchport/x/`, nested ones too) and every top-level module of torchport/."""
    packages = {
        f"{init.parent.relative_to(ROOT).as_posix()}/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE and "__pycache__" not in init.parts
    }
    modules = {f"torchport/{path.name}" for path in PACKAGE.glob("*.py")}
    return packages | modules


def test_layout_names_every_module_and_subpackage_and_nothing_else() -> None:
    entries = layout_entries()
    assert entries, "docs/layout.md lists the package as '- `torchport/...` — description' lines"
    assert set(entries) == package_tree()


def test_layout_names_only_modules_and_folders_that_exist() -> None:
    missing = []
    for entry, description in layout_entries().items():
        folder = ROOT / entry if entry.endswith("/") else (ROOT / entry).parent
        for named in NAMED_PATH.findall(description):
            # relative to the entry's folder (`files.py` in pipeline/), else to the package (`checks/debug.py`)
            candidates = [folder / named, PACKAGE / named]
            if not any(c.is_dir() if named.endswith("/") else c.is_file() for c in candidates):
                missing.append(f"{entry}: {named}")
    assert missing == []


def links(path: Path) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", path.read_text()))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.*)$", FENCE.sub("", path.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README)}
    pages = {page.resolve() for page in DOCS.glob("*.md")}
    assert pages, "docs/ has pages"
    assert pages <= linked, sorted(page.name for page in pages - linked)


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for target in links(page):
            file, _, anchor = target.partition("#")
            resolved = (page.parent / file).resolve() if file else page
            if not resolved.is_file():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    first_block = re.search(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
    assert first_block is not None
    assert first_block.group(1) == "bash"
    assert first_block.group(2) == TWO_COMMANDS
    assert text.startswith("# torchport\n\n```bash\n" + TWO_COMMANDS + "```\n")


def test_the_readme_says_how_to_get_the_cpu_wheel_right_below_them() -> None:
    # On Linux, torch==2.13.0 from PyPI is the CUDA build with its nvidia-* wheels: a stock machine needs the CPU index.
    blocks = re.findall(r"^```\w*\n(.*?)^```", README.read_text(), re.M | re.S)
    assert blocks[1] == "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu\n"
    assert "pip never pulls CUDA wheels" not in README.read_text()


def test_nothing_points_outside_the_repository() -> None:
    texts = [README, *DOCS.glob("*.md"), *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "scripts").glob("*.py")]
    assert [p.name for p in texts if "shared/" in p.read_text()] == []


def test_the_pre_commit_snippet_runs_the_published_hook() -> None:
    """The snippet in docs/usage.md works as written (a local hook: no release tag to pin) and runs the same
    command as the repository's own .pre-commit-hooks.yaml."""
    usage = (DOCS / "usage.md").read_text()
    snippet = re.search(r"```yaml\n(repos:.*?)```", usage, re.S)
    assert snippet is not None
    text = snippet.group(1)
    assert "rev:" not in text and "repo: local" in text
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()

    def field(name: str, source: str) -> str:
        found = re.search(rf"^\s*-?\s*{name}: (.*)$", source, re.M)
        assert found is not None, name
        return found.group(1).split("  #")[0].strip()

    for name in ("id", "entry", "types_or", "require_serial"):
        assert field(name, text) == field(name, hooks), name
