"""Code examples of README.md, so tests can run them as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def examples(section: str, language: str) -> list[str]:
    """The `language` code blocks of the README section titled `section` (a `## ` heading)."""
    text = README.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end != -1 else len(text)]
    return re.findall(rf"^```{language}\n(.*?)^```$", body, flags=re.M | re.S)
