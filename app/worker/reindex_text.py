"""Read the keyword text of memories stored before languages were told apart again, each in
its own language (app/core/languages.py)."""

from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.languages import DEFAULT_CONFIG
from app.core.scope import SYSTEM, scoped_transaction
from app.core.text import preprocess_text
from app.models import Episode, Fact, Rule
from app.repositories import memories as memory_rows
from app.services.episodes import refresh_keyword_text
from app.services.facts import fact_search_text

BATCH_SIZE = 500


async def reindex_texts(
    sessionmaker: async_sessionmaker[AsyncSession], *, context_turns: int, keyword_context: bool
) -> dict[str, int]:
    """Rebuild the tsvector of every episode, fact and rule read as English (all of them
    before languages were told apart; every tenant: system work), one committed batch at a
    time; the number of each type read again."""
    return {
        "episodes": await _episodes(
            sessionmaker, context_turns=context_turns, keyword_context=keyword_context
        ),
        "facts": await _texts(sessionmaker, Fact),
        "rules": await _texts(sessionmaker, Rule),
    }


async def _in_batches(
    sessionmaker: async_sessionmaker[AsyncSession],
    model: Any,
    read_again: Callable[[AsyncSession, list[Any]], Awaitable[None]],
) -> int:
    """Hand every row of `model` still read as English to `read_again`, a batch per
    transaction; how many rows there were."""
    done, after = 0, None
    while True:
        async with scoped_transaction(sessionmaker, SYSTEM) as session:
            rows = await memory_rows.rows_read_as(
                session, model, config=DEFAULT_CONFIG, after=after, limit=BATCH_SIZE
            )
            if not rows:
                return done
            await read_again(session, rows)
        done += len(rows)
        after = rows[-1].id


async def _episodes(
    sessionmaker: async_sessionmaker[AsyncSession], *, context_turns: int, keyword_context: bool
) -> int:
    async def read_again(session: AsyncSession, rows: list[Episode]) -> None:
        in_sessions: dict[str, list[Episode]] = defaultdict(list)
        alone = {}
        for row in rows:
            if row.session_id is not None or row.inferred_session is not None:
                in_sessions[row.tenant_id].append(row)
            else:
                alone[row.id] = preprocess_text(row.content)
        for tenant_id, episodes in in_sessions.items():
            await refresh_keyword_text(
                session,
                tenant_id=tenant_id,
                ids=[episode.id for episode in episodes],
                context_turns=context_turns,
                keyword_context=keyword_context,
                redetect=True,
            )
        await memory_rows.set_search_texts(session, Episode, alone)

    return await _in_batches(sessionmaker, Episode, read_again)


async def _texts(
    sessionmaker: async_sessionmaker[AsyncSession], model: type[Fact] | type[Rule]
) -> int:
    async def read_again(session: AsyncSession, rows: list[Fact] | list[Rule]) -> None:
        await memory_rows.set_search_texts(
            session,
            model,
            {
                row.id: fact_search_text(row.subject, row.predicate, row.content)
                if isinstance(row, Fact)
                else preprocess_text(row.content)
                for row in rows
            },
        )

    return await _in_batches(sessionmaker, model, read_again)
