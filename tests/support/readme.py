"""Code examples of README.md and the pages under docs/, so tests can run them as written."""

import re
from pathlib import Path

from tests.support.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
CLIENTS = REPO_ROOT / "docs" / "clients.md"


def examples(section: str, language: str, path: Path = README) -> list[str]:
    """The `language` code blocks of the section titled `section` (a `## ` heading) of `path`."""
    text = path.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start : end if end != -1 else len(text)]
    return re.findall(rf"^```{language}\n(.*?)^```$", body, flags=re.M | re.S)
