"""Every relative link of the README, ARCHITECTURE.md, the docs and the benchmark pages leads
somewhere."""

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

PAGES = sorted(
    [
        REPO_ROOT / "README.md",
        REPO_ROOT / "ARCHITECTURE.md",
        *REPO_ROOT.glob("docs/*.md"),
        *REPO_ROOT.glob("docs/internals/*.md"),
        *REPO_ROOT.glob("bench/*.md"),
        *REPO_ROOT.glob("bench/journal/*.md"),
    ]
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings."""
    text = FENCE.sub("", page.read_text())
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def links(page: Path) -> list[str]:
    """The relative link targets of a page, code blocks left out."""
    text = FENCE.sub("", page.read_text())
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO_ROOT)}: {broken}"


def test_the_docs_are_linked_from_the_readme():
    linked = {(REPO_ROOT / t.partition("#")[0]).resolve() for t in links(REPO_ROOT / "README.md")}
    assert set(REPO_ROOT.glob("docs/*.md")) <= linked


def test_the_slug_matches_github():
    assert slug("Metrics, logs and traces") == "metrics-logs-and-traces"
    assert slug("Database roles and row-level security") == "database-roles-and-row-level-security"
    assert slug("The `engram` command") == "the-engram-command"
