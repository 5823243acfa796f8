"""Text preprocessing for search vectors and queries."""

import re
import unicodedata

MAX_SEARCH_TEXT_BYTES = 1024 * 1024
_WHITESPACE = re.compile(r"\s+")


def visible_text(text: str) -> str:
    """NFKC-normalised text without format (Cf: zero-width, BOM, bidi marks) and control
    characters other than whitespace; what a reader can see."""
    normalised = unicodedata.normalize("NFKC", text)
    return "".join(
        c for c in normalised if c.isspace() or unicodedata.category(c) not in ("Cf", "Cc")
    )


def is_blank(text: str) -> bool:
    """True when nothing visible is left after Unicode normalisation (`visible_text` of it is
    all whitespace), read only up to its first visible character."""
    return not any(
        not c.isspace() and unicodedata.category(c) not in ("Cf", "Cc")
        for c in unicodedata.normalize("NFKC", text)
    )


def normalise_key(text: str) -> str:
    """A fact key part as compared for supersession: visible text, case-folded, whitespace
    collapsed. ("Alice", " alice ", "ALICE" and "Ａｌｉｃｅ" are one key.)"""
    return _WHITESPACE.sub(" ", visible_text(text).casefold()).strip()


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


def split_passages(text: str, *, size: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end) character spans covering `text` in windows of at most `size` characters,
    neighbours sharing about `overlap`; [] when the text fits one window.

    Windows end at whitespace where one lies in their second half and start at a word, so no
    word is cut unless it is longer than half a window.
    """
    if len(text) <= size:
        return []
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            cut = max(cut, *(text.rfind(c, start + size // 2, end) for c in "\n\t"))
            if cut > start:
                end = cut
        spans.append((start, end))
        if end >= len(text):
            return spans
        next_start = max(end - overlap, start + 1)
        word = text.find(" ", next_start, end)
        start = word + 1 if word != -1 and overlap > 0 else next_start
        while start < len(text) and text[start].isspace():
            start += 1
        if start >= len(text):
            return spans


# Of each earlier turn a context passage keeps its end, so the turn itself keeps most of
# the model's 256-token window.
CONTEXT_CHARS_PER_TURN = 200


def context_text(previous: list[str], turn: str) -> str:
    """A turn after the turns before it (oldest first), each of those cut to its last
    CONTEXT_CHARS_PER_TURN characters: what a reader of the conversation has in mind."""
    lead = [
        text
        if len(text) <= CONTEXT_CHARS_PER_TURN
        else "…" + text[-CONTEXT_CHARS_PER_TURN:].lstrip()
        for text in previous
    ]
    return "\n".join([*lead, turn])


# A turn longer than this stands on its own in the keyword index and in the semantic list:
# on LongMemEval a long assistant reply that took its question's words or meaning from the
# turns before it outranked the question (bench/journal/2026-11.md, "Keyword context only
# for turns of at most 400 characters", "Passages that rank their memory as a part").
CONTEXT_MAX_CHARS = 400


def keyword_text(turn: str, context: str | None, *, with_context: bool) -> str:
    """What the keyword index reads of an episode. With context (an episode of a session,
    keyword context on) and a turn of at most CONTEXT_MAX_CHARS: the turn, then its
    context (the turns before it and the turn again; the turn alone for a session's first
    turn), so its own words weigh twice its neighbours'. Otherwise the turn."""
    if not with_context or len(turn) > CONTEXT_MAX_CHARS:
        return turn
    return f"{turn}\n{context or turn}"
