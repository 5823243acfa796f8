"""The memory context block for a system prompt: formatting and budget (pure) + workflow."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.formulas.fact_time import PointInTime
from app.retrieval.recall import Recalled, bump_recalled, recall
from app.retrieval.searcher import Searcher
from app.schemas.filters import MemoryFilter

CHARS_PER_TOKEN = 4
HEADER = "# Memory Context\n"
FACTS_HEADER = "\n## Key Facts\n"
RULES_HEADER = "\n## Active Rules\n"


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) collapsed, so no memory can forge a section."""
    return " ".join(text.split())


def fact_line(*, subject: str, predicate: str, content: str, confidence: float) -> str:
    """`- [subject] [predicate]: content (confidence: 0.00)` and a newline."""
    return (
        f"- [{one_line(subject)}] [{one_line(predicate)}]: {one_line(content)} "
        f"(confidence: {confidence:.2f})\n"
    )


def rule_line(*, content: str, maturity: str, effectiveness: float) -> str:
    """`- content (maturity: m, effectiveness: 0.00)` and a newline."""
    return f"- {one_line(content)} (maturity: {maturity}, effectiveness: {effectiveness:.2f})\n"


def _fit(header: str, lines: Sequence[str], budget: int) -> list[int]:
    """Indexes of the lines that fit in `budget` characters after the header, in order.

    A line too long for what is left is skipped and the next ones are still tried.
    """
    used = len(header)
    chosen: list[int] = []
    for index, line in enumerate(lines):
        if used + len(line) <= budget:
            chosen.append(index)
            used += len(line)
    return chosen


def _size(header: str, lines: Sequence[str], chosen: Sequence[int]) -> int:
    return len(header) + sum(len(lines[i]) for i in chosen) if chosen else 0


@dataclass(frozen=True)
class Block:
    """The assembled text and which fact and rule lines it holds."""

    text: str
    fact_indexes: list[int]
    rule_indexes: list[int]


def assemble(
    fact_lines: Sequence[str], rule_lines: Sequence[str], *, max_chars: int, fact_share: float
) -> Block:
    """Sections in score order within `max_chars`.

    Facts may use `fact_share` of what follows the header and rules the rest; a section
    that needs less than its share leaves the remainder to the other.
    """
    room = max(0, max_chars - len(HEADER))
    fact_quota = math.floor(room * fact_share)
    rules_alone = _fit(RULES_HEADER, rule_lines, room - fact_quota)
    facts = _fit(FACTS_HEADER, fact_lines, room - _size(RULES_HEADER, rule_lines, rules_alone))
    rules = _fit(RULES_HEADER, rule_lines, room - _size(FACTS_HEADER, fact_lines, facts))
    text = HEADER
    if facts:
        text += FACTS_HEADER + "".join(fact_lines[i] for i in facts)
    if rules:
        text += RULES_HEADER + "".join(rule_lines[i] for i in rules)
    return Block(text, facts, rules)


@dataclass(frozen=True)
class Context:
    """The block and the recalled memories it contains, in order."""

    text: str
    token_budget: int
    items: list[Recalled]
    at: PointInTime | None = None
    semantic_skipped: str | None = None  # why the prompt had no vector


async def build_context(
    session: AsyncSession,
    *,
    searcher: Searcher,
    trigger_prompt: str,
    butler: str,
    token_budget: int | None,
    reference_time: datetime | None = None,
    at: PointInTime | None = None,
    memory_filter: MemoryFilter | None = None,
) -> Context:
    """Recall facts and rules for `butler` and format those that fit the token budget."""
    tenant_id, retrieval = searcher.tenant_id, searcher.retrieval
    budget = token_budget or retrieval.context_token_budget
    recollection = await recall(
        session,
        searcher=searcher,
        topic=trigger_prompt,
        scope=butler,
        limit=retrieval.context_recall_limit,
        min_confidence=0.2,
        bump=False,
        reference_time=reference_time,
        at=at,
        memory_filter=memory_filter,
    )
    recalled = recollection.items
    facts = [r for r in recalled if r.hit.memory_type == "fact"]
    rules = [r for r in recalled if r.hit.memory_type == "rule"]
    fact_lines = [
        fact_line(
            subject=r.hit.row.subject,
            predicate=r.hit.row.predicate,
            content=r.hit.row.content,
            confidence=r.effective_confidence,
        )
        for r in facts
    ]
    rule_lines = [
        rule_line(
            content=r.hit.row.content,
            maturity=r.hit.row.maturity,
            effectiveness=r.hit.row.effectiveness_score,
        )
        for r in rules
    ]
    block = assemble(
        fact_lines,
        rule_lines,
        max_chars=budget * CHARS_PER_TOKEN,
        fact_share=retrieval.context_fact_share,
    )
    included = [facts[i] for i in block.fact_indexes] + [rules[i] for i in block.rule_indexes]
    await bump_recalled(session, tenant_id=tenant_id, recalled=included)
    return Context(block.text, budget, included, at, recollection.semantic_skipped)
