"""Text preprocessing for search vectors and queries."""

import re

MAX_SEARCH_TEXT_BYTES = 1024 * 1024
_WHITESPACE = re.compile(r"\s+")


def preprocess_text(text: str | None) -> str:
    """Drop NUL bytes, collapse whitespace, strip, and cut to 1 MB on a codepoint boundary."""
    if not text:
        return ""
    cleaned = _WHITESPACE.sub(" ", text.replace("\x00", "")).strip()
    encoded = cleaned.encode("utf-8")
    if len(encoded) <= MAX_SEARCH_TEXT_BYTES:
        return cleaned
    return encoded[:MAX_SEARCH_TEXT_BYTES].decode("utf-8", errors="ignore")


def preprocess_search_query(query: str | None) -> str:
    """Drop NUL bytes and collapse whitespace; queries are not truncated."""
    if not query:
        return ""
    return _WHITESPACE.sub(" ", query.replace("\x00", "")).strip()
