"""The memory block a hook adds to the model's context, built from items (one memory, one
line) and cut to fit at item boundaries: within the hook's token budget, and always under
the 10,000 characters Claude Code takes as additional context (past that it keeps only a
preview and a file path)."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engram_client.hooks.injected import neutralise, wrap

# Claude Code's cap is 10,000 characters (of a JavaScript string: UTF-16 code units); a
# block stays this far under it.
MAX_BLOCK_CHARS = 9_900
CHARS_PER_TOKEN = 4
# Facts and rules may use this share of the budget; the turns get what they leave.
FACTS_AND_RULES_SHARE = 0.6
MAX_LINE_CHARS = 600
EARLIER_TURNS_HEADING = "## Earlier conversations in this project"
RECENT_TURNS_HEADING = "## Recent conversations in this project"


@dataclass(frozen=True)
class Item:
    """One memory in the block: its id, the heading of its section, its line."""

    key: str
    section: str
    line: str


def utf16_length(text: str) -> int:
    """The length Claude Code measures (a JavaScript string's: UTF-16 code units)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def context_items(answer: dict[str, Any] | None) -> list[Item]:
    """The facts and rules of a `POST /v1/context` answer, one item each: the block's `- `
    lines under their `## ` headings are its `items`, in order. A block of another shape is
    one item holding it all."""
    items = (answer or {}).get("items") or []
    text = str((answer or {}).get("context", "")).strip()
    if not items or not text:
        return []
    lines: list[tuple[str, str]] = []
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line.strip()
        elif line.startswith("- ") and section:
            lines.append((section, line))
    keys = [str(item.get("id")) for item in items]
    if len(lines) != len(keys):
        return [Item(",".join(sorted(keys)), "", neutralise(text))]
    return [
        Item(key, section, neutralise(line))
        for key, (section, line) in zip(keys, lines, strict=True)
    ]


def turn_items(hits: Iterable[dict[str, Any]], heading: str) -> list[Item]:
    """Stored turns (episodes, as search or the listing gives them), one line each:
    `- (day) speaker: text`, cut at MAX_LINE_CHARS."""
    items = []
    for hit in hits:
        day = str(hit.get("occurred_at") or "")[:10]
        content = " ".join(str(hit.get("content", "")).split())
        if len(content) > MAX_LINE_CHARS:
            content = content[: MAX_LINE_CHARS - 1] + "…"
        line = f"- ({day}) {content}" if day else f"- {content}"
        items.append(Item(str(hit.get("id")), heading, neutralise(line)))
    return items


def render(items: Iterable[Item]) -> str:
    """The items under their headings, sections in the order they first appear."""
    sections: dict[str, list[str]] = {}
    for item in items:
        sections.setdefault(item.section, []).append(item.line)
    return "\n\n".join(
        "\n".join([heading, *lines] if heading else lines) for heading, lines in sections.items()
    )


def fit(chosen: list[Item], candidates: Iterable[Item], budget: int) -> list[Item]:
    """`chosen` and, in order, each candidate that still fits in `budget` characters once
    rendered (a candidate too long is skipped, the next ones still tried)."""
    for candidate in candidates:
        if utf16_length(render([*chosen, candidate])) <= budget:
            chosen = [*chosen, candidate]
    return chosen


def memory_block(
    butler: str, facts: list[Item], turns: list[Item], token_budget: int
) -> tuple[str, list[Item]]:
    """The block and the items in it: facts and rules in FACTS_AND_RULES_SHARE of
    `token_budget * 4` characters, then turns in what is left, all within MAX_BLOCK_CHARS
    with its tags and heading; ("", []) with nothing to show."""
    heading = f"Memories Engram keeps for this project ({butler}); use them when they help."
    room = min(token_budget * CHARS_PER_TOKEN, MAX_BLOCK_CHARS - utf16_length(wrap(heading, "")))
    chosen = fit([], facts, int(room * FACTS_AND_RULES_SHARE))
    chosen = fit(chosen, turns, room)
    if not chosen:
        return "", []
    return wrap(heading, render(chosen)), chosen
