"""Mentions: a stored episode, fact, rule or run is linked `mentions` to each known entity of
its tenant whose canonical name or alias it names (whole words, any case).

No model is asked: the names are looked up by the memory's word n-grams in indexes, in one
statement per store (a batch of episodes included). Names longer than `MAX_NAME_WORDS` words
are not looked for. Entities created later do not link memories stored before them.

Scripts written without spaces (Chinese, Japanese, Thai, ...) have no words to match whole:
each run of them also offers its substrings of 2 to `MAX_UNSPACED_NAME_CHARS` characters as
words, so a name is found anywhere inside the run (its first `MAX_UNSPACED_CHARS`
characters of such text, which bounds the work for a long document).
"""

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.languages import unspaced_runs
from app.repositories import mentions as mention_rows

MAX_NAME_WORDS = 5
MAX_UNSPACED_NAME_CHARS = 12
MAX_UNSPACED_CHARS = 2_000
CREATED_BY = "system:mentions"


def mention_text(text: str) -> str:
    """The text names are looked for in: itself, and the substrings of its unspaced runs."""
    runs = unspaced_runs(text)
    if not runs:
        return text
    words: list[str] = []
    budget = MAX_UNSPACED_CHARS
    for run in runs:
        run = run[:budget]
        budget -= len(run)
        words.extend(
            run[start : start + size]
            for start in range(len(run))
            for size in range(2, MAX_UNSPACED_NAME_CHARS + 1)
            if start + size <= len(run)
        )
        if budget <= 0:
            break
    return text + "\n" + " ".join(words)


async def link_mentions(
    session: AsyncSession,
    *,
    tenant_id: str,
    memory_type: str,
    ids: Sequence[uuid.UUID],
    texts: Sequence[str],
) -> int:
    """Link the memories to the entities their texts name; the number of links added."""
    return await mention_rows.link_mentions(
        session,
        tenant_id=tenant_id,
        source_type=memory_type,
        ids=ids,
        texts=[mention_text(text) for text in texts],
        max_words=MAX_NAME_WORDS,
        created_by=CREATED_BY,
    )
