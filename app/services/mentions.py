"""Mentions: a stored episode, fact, rule or run is linked `mentions` to each known entity of
its tenant whose canonical name or alias it names (whole words, any case).

No model is asked: the names are looked up by the memory's word n-grams in indexes, in one
statement per store (a batch of episodes included). Names longer than `MAX_NAME_WORDS` words
are not looked for. Entities created later do not link memories stored before them.
"""

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories import mentions as mention_rows

MAX_NAME_WORDS = 5
CREATED_BY = "system:mentions"


async def link_mentions(session: AsyncSession, *, tenant_id: str, memory_type: str,
                        ids: Sequence[uuid.UUID], texts: Sequence[str]) -> int:
    """Link the memories to the entities their texts name; the number of links added."""
    return await mention_rows.link_mentions(
        session, tenant_id=tenant_id, source_type=memory_type, ids=ids, texts=texts,
        max_words=MAX_NAME_WORDS, created_by=CREATED_BY)
