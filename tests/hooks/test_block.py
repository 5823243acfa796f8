"""The memory block: cut to fit at item boundaries, always under Claude Code's 10,000
characters of additional context, and the facts of a context answer one item each."""

import pytest

from engram_client.hooks.block import (
    MAX_BLOCK_CHARS,
    Item,
    context_items,
    memory_block,
    turn_items,
    utf16_length,
)
from engram_client.hooks.injected import CLOSE_TAG, OPEN_TAG

# What Claude Code keeps whole as additional context (past it: a file path and a preview).
CLAUDE_CODE_CAP = 10_000


def facts(count: int, text: str) -> list[Item]:
    """`count` fact items whose lines hold `text`."""
    return [
        Item(f"f{n}", "## Key Facts", f"- [s{n}] [p]: {text} (confidence: 0.90)")
        for n in range(count)
    ]


@pytest.mark.parametrize("text", ["x" * 290, "déploiement " * 24, "🚀" * 150])
def test_a_huge_budget_still_gives_a_block_under_the_cap_of_whole_lines(text: str) -> None:
    turns = turn_items(
        [
            {"id": f"t{n}", "content": f"user: {text}", "occurred_at": "2026-11-20T09:00:00Z"}
            for n in range(40)
        ],
        "## Earlier conversations in this project",
    )

    block, chosen = memory_block("claude-code:shop-1a2b3c4d", facts(60, text), turns, 100_000)

    assert utf16_length(block) <= MAX_BLOCK_CHARS < CLAUDE_CODE_CAP
    assert block.startswith(OPEN_TAG) and block.endswith(CLOSE_TAG)
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    assert lines == [item.line for item in chosen]  # whole items, in order, nothing cut
    assert {item.key[0] for item in chosen} == {"f", "t"}  # the turns got what facts left
    assert len(chosen) < 100


def test_the_token_budget_bounds_the_memories_and_a_line_too_long_is_skipped() -> None:
    items = [*facts(1, "y" * 500), *facts(3, "short")]

    block, chosen = memory_block("claude-code:shop-1a2b3c4d", items, [], 100)

    memories = block.split("\n\n", 1)[1].removesuffix("\n" + CLOSE_TAG)
    assert len(memories) <= 100 * 4
    assert [item.key for item in chosen] == ["f0", "f1", "f2"]  # "short" lines after the long one
    assert memory_block("claude-code:shop-1a2b3c4d", [], [], 100) == ("", [])


def test_each_fact_and_rule_of_a_context_answer_is_one_item_with_its_id() -> None:
    answer = {
        "context": "# Memory Context\n\n## Key Facts\n- [ci] [runs on]: buildkite (confidence: "
        "0.90)\n- [db] [is]: quartz-owl (confidence: 0.80)\n\n## Active Rules\n- never deploy "
        "on Fridays (maturity: proven, effectiveness: 0.70)\n",
        "items": [
            {"id": "a", "memory_type": "fact"},
            {"id": "b", "memory_type": "fact"},
            {"id": "c", "memory_type": "rule"},
        ],
    }

    items = context_items(answer)

    assert [(item.key, item.section) for item in items] == [
        ("a", "## Key Facts"),
        ("b", "## Key Facts"),
        ("c", "## Active Rules"),
    ]
    assert items[2].line.startswith("- never deploy on Fridays")
    unknown = context_items({**answer, "items": answer["items"][:2]})
    assert [item.key for item in unknown] == ["a,b"]  # another shape: one item, all of it
    assert context_items({"context": "# Memory Context\n", "items": []}) == []
