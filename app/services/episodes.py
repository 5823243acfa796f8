"""Storing and listing episodes."""

import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.scope import set_local, side_session
from app.core.text import context_text, keyword_text, preprocess_text
from app.embedding import Embedder
from app.formulas.sessions import Arrival, Stored, assign_sessions
from app.models import Episode
from app.repositories import episodes as episode_rows
from app.repositories import erasure as erasure_rows
from app.repositories.episodes import EpisodeFilters
from app.repositories.erasure import Counts
from app.schemas.episodes import EpisodeCreate, EpisodeListQuery
from app.schemas.filters import MemoryFilter
from app.services import butler_limits, events
from app.services.embeddings import (
    Embedded,
    Made,
    embed_ahead,
    embed_for_write,
    store_passages,
)
from app.services.events import memory_event
from app.services.mentions import link_mentions


async def create_episodes(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    items: list[EpisodeCreate],
    ttl_days: float,
    keyword_context: bool,
    mentions: bool = True,
    session_gap_minutes: float = 0.0,
) -> list[Episode]:
    """Store episodes in one transaction, embedded in one batch; they expire after the TTL.

    An episode without a session_id gets an inferred session (`inferred_sessions`) when
    `session_gap_minutes` is above 0.

    An episode of a session is also embedded after the turns before it (`context_text`);
    with `keyword_context` its keyword text holds them too (`keyword_text`). With `mentions`
    each is linked to the entities it names (`services/mentions`).
    """
    _check_butlers(items)
    inferred, contexts = await _sessions_and_contexts(
        session,
        tenant_id=tenant_id,
        items=items,
        embedder=embedder,
        gap_minutes=session_gap_minutes,
    )
    embedded = await embed_for_write(
        session, embedder, [item.content for item in items], tenant_id=tenant_id, contexts=contexts
    )
    if len(items) > 1:  # a batch takes the keyword statistics' lock last, just before commit
        await set_local(session, {episode_rows.KEYWORD_COUNTS_LATER: "on"})
    rows = _episode_rows(
        items,
        tenant_id=tenant_id,
        inferred=inferred,
        contexts=contexts,
        embedded=embedded,
        keyword_context=keyword_context and embedder.context_turns > 0,
    )
    created = await episode_rows.insert_episodes(session, rows, ttl_days=ttl_days)
    await store_passages(
        session,
        "episode",
        tenant_id=tenant_id,
        memory_ids=[row.id for row in created],
        embedded=embedded,
    )
    if mentions:
        await link_mentions(
            session,
            tenant_id=tenant_id,
            memory_type="episode",
            ids=[row.id for row in created],
            texts=[row.content for row in created],
        )
    await events.record(
        session,
        [memory_event("episode_created", tenant_id, row, butler=row.butler) for row in created],
    )
    if len(items) > 1:
        await episode_rows.count_keyword_documents(
            session, tenant_id=tenant_id, ids=[row.id for row in created]
        )
    return created


def _check_butlers(items: list[EpisodeCreate]) -> None:
    """Refuse a limited key an item for a butler outside its butlers."""
    for index, item in enumerate(items):
        butler_limits.check_butler(
            item.butler, "butler" if len(items) == 1 else f"items.{index}.butler"
        )


async def _sessions_and_contexts(
    session: AsyncSession,
    *,
    tenant_id: str,
    items: list[EpisodeCreate],
    embedder: Embedder,
    gap_minutes: float,
) -> tuple[list[uuid.UUID | None], list[str | None]]:
    """Each item's inferred session (`inferred_sessions`) and context (`_contexts`)."""
    # Read on a connection of its own (a session carrying the request session's `info`, so
    # it works for the same tenant), given back before the model runs.
    async with side_session(session) as lookup:
        inferred = await inferred_sessions(
            lookup, tenant_id=tenant_id, items=items, gap_minutes=gap_minutes
        )
        contexts = await _contexts(
            lookup,
            tenant_id=tenant_id,
            items=items,
            inferred=inferred,
            turns=embedder.context_turns,
        )
    return inferred, contexts


def _episode_rows(
    items: list[EpisodeCreate],
    *,
    tenant_id: str,
    inferred: Sequence[uuid.UUID | None],
    contexts: Sequence[str | None],
    embedded: Embedded,
    keyword_context: bool,
) -> list[dict[str, Any]]:
    """The rows to insert; with `keyword_context` an item of a session keeps its context in
    its keyword text."""
    return [
        {
            "tenant_id": tenant_id,
            "butler": item.butler,
            "session_id": item.session_id,
            "inferred_session": inferred_session,
            "content": item.content,
            "importance": item.importance,
            "metadata_": item.metadata,
            **embedded.columns(index),
            "search_text": preprocess_text(
                keyword_text(
                    item.content,
                    context,
                    with_context=keyword_context
                    and (item.session_id is not None or inferred_session is not None),
                )
            ),
            "occurred_at_given": item.occurred_at,
            "language": item.language,
        }
        for index, (item, context, inferred_session) in enumerate(
            zip(items, contexts, inferred, strict=True)
        )
    ]


async def inferred_sessions(
    session: AsyncSession, *, tenant_id: str, items: Sequence[EpisodeCreate], gap_minutes: float
) -> list[uuid.UUID | None]:
    """The session each item without a session_id joins by the gap rule
    (`formulas/sessions.assign_sessions`), chained within the batch and to the butler's
    stored episodes; None for items with a session_id, or for all when `gap_minutes` is 0.

    An item without `occurred_at` occurs now. Read in the caller's transaction; two writers
    at once may each start a session."""
    wanted = [i for i, item in enumerate(items) if item.session_id is None]
    if gap_minutes <= 0 or not wanted:
        return [None] * len(items)
    now = now_utc()
    sessions = await gap_sessions(
        session,
        tenant_id=tenant_id,
        points=[(items[i].butler, items[i].occurred_at or now) for i in wanted],
        gap_minutes=gap_minutes,
    )
    found: list[uuid.UUID | None] = [None] * len(items)
    for i, inferred in zip(wanted, sessions, strict=True):
        found[i] = inferred
    return found


async def gap_sessions(
    session: AsyncSession,
    *,
    tenant_id: str,
    points: Sequence[tuple[str, datetime]],
    gap_minutes: float,
) -> list[uuid.UUID]:
    """The session the gap rule gives each (butler, time), chained among the points and to
    the butler's stored episodes with an inferred session."""
    around = await episode_rows.inferred_around(session, tenant_id=tenant_id, points=points)
    return assign_sessions(
        [
            Arrival(
                butler,
                at,
                Stored(*near.before) if near.before else None,
                Stored(*near.after) if near.after else None,
            )
            for (butler, at), near in zip(points, around, strict=True)
        ],
        gap=timedelta(minutes=gap_minutes),
    )


@dataclass(frozen=True)
class RenewedContexts:
    """The turns after episodes about to be deleted, each with the span of its context
    passage made without them (None when no turn is left before it), and the passages'
    texts embedded (in the order of the spans that are not None)."""

    passages: dict[uuid.UUID, tuple[int, int] | None] = field(default_factory=dict)
    made: Made = field(default_factory=lambda: Made([], "", False, {}))


async def renew_contexts(
    session: AsyncSession, embedder: Embedder, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> RenewedContexts:
    """The context passages of the turns after `ids`, read and embedded anew without them.

    Read on a connection of its own, given back before the model runs, so a caller that has
    run no SQL yet holds no connection while it waits.
    """
    turns = embedder.context_turns
    if turns <= 0 or not ids:
        return RenewedContexts()
    async with side_session(session) as lookup:
        after = [
            episode_id
            for episode_id in await episode_rows.turns_after(
                lookup, tenant_id=tenant_id, ids=ids, count=turns
            )
            if episode_id not in ids
        ]
        if not after:
            return RenewedContexts()
        before = await episode_rows.turns_before(
            lookup, tenant_id=tenant_id, ids=after, count=turns, excluding=ids
        )
        contents = await episode_rows.contents(lookup, tenant_id=tenant_id, ids=after)
    texts = {
        episode_id: context_text(before[episode_id], content)
        for episode_id, content in contents.items()
        if before.get(episode_id)
    }
    made = await embed_ahead(embedder, list(texts.values()), tenant_id=tenant_id, bulk=False)
    return RenewedContexts(
        {
            episode_id: (0, len(content)) if episode_id in texts else None
            for episode_id, content in contents.items()
        },
        made,
    )


async def delete_episodes(
    session: AsyncSession,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    context_turns: int,
    keyword_context: bool,
) -> Counts:
    """Hard-delete episodes with their trace; the turns that may have had one of them in
    their keyword text get it again, without it."""
    after = await episode_rows.turns_after(
        session, tenant_id=tenant_id, ids=ids, count=context_turns
    )
    counts = await erasure_rows.delete_episodes(session, tenant_id=tenant_id, ids=ids)
    deleted = set(ids)
    await refresh_keyword_text(
        session,
        tenant_id=tenant_id,
        ids=[i for i in after if i not in deleted],
        context_turns=context_turns,
        keyword_context=keyword_context,
    )
    return counts


async def refresh_keyword_text(
    session: AsyncSession,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    context_turns: int,
    keyword_context: bool,
    redetect: bool = False,
) -> None:
    """Rebuild these episodes' keyword text (episodes of a session): their content, with
    `keyword_context` followed by the turns now before them; read in the language each was
    stored in, or with `redetect` in its detected language."""
    if not ids:
        return
    with_context = keyword_context and context_turns > 0
    before = (
        await episode_rows.turns_before(session, tenant_id=tenant_id, ids=ids, count=context_turns)
        if with_context
        else {}
    )
    contents = await episode_rows.contents(session, tenant_id=tenant_id, ids=ids)
    await episode_rows.set_search_texts(
        session,
        tenant_id=tenant_id,
        texts={
            episode_id: preprocess_text(
                keyword_text(
                    content,
                    context_text(before.get(episode_id, []), content),
                    with_context=with_context,
                )
            )
            for episode_id, content in contents.items()
        },
        redetect=redetect,
    )


async def _contexts(
    lookup: AsyncSession,
    *,
    tenant_id: str,
    items: list[EpisodeCreate],
    inferred: Sequence[uuid.UUID | None],
    turns: int,
) -> list[str | None]:
    """Each item of a session (its own, else its inferred one) read after the `turns` turns
    before it (stored ones, read through `lookup`, then earlier items of this batch); None
    for items without a session or a turn before it."""
    keys: list[Hashable | None] = [
        (item.butler, item.session_id) if item.session_id is not None else own
        for item, own in zip(items, inferred, strict=True)
    ]
    if turns <= 0 or not any(key is not None for key in keys):
        return [None] * len(items)
    explicit = list(dict.fromkeys(key for key in keys if isinstance(key, tuple)))
    implicit = list(dict.fromkeys(key for key in keys if isinstance(key, uuid.UUID)))
    stored = await episode_rows.latest_turns(
        lookup, tenant_id=tenant_id, sessions=explicit, count=turns
    )
    stored_inferred = await episode_rows.latest_inferred_turns(
        lookup, tenant_id=tenant_id, sessions=implicit, count=turns
    )
    earlier: dict[Hashable, list[str]] = dict(stored.items())
    earlier.update(stored_inferred.items())
    return session_contexts(
        [(key, item.content) for key, item in zip(keys, items, strict=True)],
        turns=turns,
        earlier=earlier,
    )


SessionKey = Hashable  # (butler, session_id), or an inferred session's id


def session_contexts(
    turns_in_order: Sequence[tuple[SessionKey | None, str]],
    *,
    turns: int,
    earlier: dict[SessionKey, list[str]] | None = None,
) -> list[str | None]:
    """Each (session, content) turn read after the `turns` turns before it in its session:
    those of `earlier` (oldest first), then those before it in the list; None for a turn
    without a session or without a turn before it."""
    previous_by_session = {key: list(texts) for key, texts in (earlier or {}).items()}
    contexts: list[str | None] = []
    for key, content in turns_in_order:
        if key is None:
            contexts.append(None)
            continue
        previous = previous_by_session.setdefault(key, [])
        contexts.append(context_text(previous[-turns:], content) if previous else None)
        previous.append(content)
    return contexts


async def list_episodes(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: EpisodeListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[Episode], str | None]:
    """A page of the tenant's episodes, newest first; expired ones only on request."""
    filters = EpisodeFilters(
        butler=query.butler,
        session_id=query.session_id,
        consolidation_status=query.consolidation_status,
        consolidated=query.consolidated,
        include_expired=query.include_expired,
        memory_filter=memory_filter,
    )
    return await episode_rows.list_episodes(
        session, tenant_id=tenant_id, filters=filters, limit=query.limit, cursor=query.cursor
    )
