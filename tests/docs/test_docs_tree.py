"""The documentation's shape: a short README, the docs/ pages it points to, and no dead link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "architecture.md", "configuration.md", "model-archives.md", "promotion-policy.md",
         "cli.md", "dags.md", "drift-monitoring.md", "reports.md", "deploying.md", "operating.md",
         "testing.md")
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^ *```.*?^ *```", flags=re.S | re.M)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    prose = _FENCE.sub("", path.read_text())
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", prose, flags=re.M)}


def test_readme_is_short_and_every_docs_page_exists() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 300
    missing = [p for p in PAGES if not (REPO / "docs" / p).is_file()]
    assert not missing, missing


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        dead_anchor = anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        if not resolved.exists() or dead_anchor:
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: {broken}"


def test_slug_matches_githubs_rule() -> None:
    assert _slug("How to return production to the previous version") == \
        "how-to-return-production-to-the-previous-version"
    assert _slug("Where does X live?") == "where-does-x-live"
    assert _slug("Estimated performance and data quality, before labels") == \
        "estimated-performance-and-data-quality-before-labels"


def test_bench_results_open_with_one_table_of_current_figures() -> None:
    """bench/RESULTS.md starts with its current figures, each row with its command and date."""
    text = (REPO / "bench" / "RESULTS.md").read_text()
    first = text.split("\n## ", 2)[1]
    assert first.startswith("Current figures")
    rows = [r for r in first.splitlines() if r.startswith("| ") and not r.startswith("| area ")]
    assert len(rows) >= 35
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 6 and "`" in cells[4] and cells[5], row


#: Test files directly in tests/ at most; the others sit in a folder named for the package they
#: test (tests/onnx/, tests/cli/, tests/dags/, tests/store/, ...). Lowered as folders are made.
MAX_TOP_LEVEL_TEST_FILES = 5
#: Lines a product file may hold: past it, split by idea.
MAX_PRODUCT_LINES = 700
PRODUCT_DIRS = ("modelgate", "drift", "evaluation", "fairness", "reports", "dags")


def test_the_tree_keeps_its_shape() -> None:
    top = sorted(p.name for p in (REPO / "tests").glob("test_*.py"))
    assert len(top) <= MAX_TOP_LEVEL_TEST_FILES, (
        f"{len(top)} test files directly in tests/ (at most {MAX_TOP_LEVEL_TEST_FILES}): put a new "
        "one in the folder of the package it tests")
    long = {str(p.relative_to(REPO)): n for folder in PRODUCT_DIRS for p in (REPO / folder).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_PRODUCT_LINES}
    assert not long, f"files over {MAX_PRODUCT_LINES} lines (split them by idea): {long}"
