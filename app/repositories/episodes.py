"""SQL particular to episodes: the listing, existence checks and neighbouring turns."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Table,
    Text,
    Values,
    and_,
    bindparam,
    column,
    func,
    literal,
    or_,
    select,
    text,
    true,
    update,
    values,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from app.models import Episode
from app.repositories import pagination
from app.repositories.filters import equal, uuid_or_none
from app.repositories.memories import (
    BOUND_SEARCH_COLUMNS,
    insert_rows,
    segmented,
    to_tsvector,
    with_documents,
)
from app.repositories.memory_filters import compile_filter
from app.schemas.filters import MemoryFilter


@dataclass(frozen=True)
class EpisodeFilters:
    """What an episode listing keeps; None means any."""

    butler: str | None = None
    session_id: str | None = None
    consolidation_status: str | None = None
    consolidated: bool | None = None
    include_expired: bool = False
    memory_filter: MemoryFilter | None = None


def in_session(session_id: str) -> ColumnElement[bool]:
    """Episodes of the session: stored with this id, or placed in it by inference when the id
    is the UUID of an inferred session."""
    inferred = uuid_or_none(session_id)
    if inferred is None:
        return Episode.session_id == session_id
    return or_(Episode.session_id == session_id, Episode.inferred_session == inferred)


def not_expired() -> ColumnElement[bool]:
    """Episodes whose TTL has not run out."""
    return Episode.expires_at.is_(None) | (Episode.expires_at > func.now())


async def list_episodes(
    session: AsyncSession,
    *,
    tenant_id: str,
    filters: EpisodeFilters,
    limit: int,
    cursor: str | None,
) -> tuple[list[Episode], str | None]:
    """A page of the tenant's episodes matching `filters`, newest first."""
    stmt = select(Episode).where(
        Episode.tenant_id == tenant_id,
        *equal(Episode, filters, "butler", "consolidation_status", "consolidated"),
        *compile_filter("episode", filters.memory_filter),
    )
    if filters.session_id is not None:
        stmt = stmt.where(in_session(filters.session_id))
    if not filters.include_expired:
        stmt = stmt.where(not_expired())
    return await pagination.list_page(
        session, stmt, order=(Episode.created_at, Episode.id), limit=limit, cursor=cursor
    )


async def episode_exists(session: AsyncSession, *, tenant_id: str, episode_id: uuid.UUID) -> bool:
    """True when the tenant has this episode."""
    stmt = (
        select(func.count())
        .select_from(Episode)
        .where(Episode.id == episode_id, Episode.tenant_id == tenant_id)
    )
    return bool((await session.execute(stmt)).scalar_one())


def given_time_or_now(param: str) -> ColumnElement[datetime]:
    """The time in bound parameter `param`, or the transaction's now() when it is None."""
    return func.coalesce(bindparam(param, type_=DateTime(timezone=True)), func.now())


async def insert_episodes(
    session: AsyncSession, rows: Sequence[dict[str, Any]], *, ttl_days: float
) -> list[Episode]:
    """Insert episodes in order (`insert_rows`): each expires `ttl_days` after the
    transaction's now() and occurred at its `occurred_at_given`, or now() when that is None."""
    return await insert_rows(
        session,
        Episode,
        rows,
        expires_at=func.now() + literal(timedelta(days=ttl_days)),
        occurred_at=given_time_or_now("occurred_at_given"),
    )


# For each hit: the `count` live turns before it and after it in the same butler and session.
_NEIGHBOURS = text("""
    SELECT h.id AS hit_id, n.id AS neighbour_id
    FROM episodes h
    CROSS JOIN LATERAL (
        (SELECT e.id, e.sequence FROM episodes e
         WHERE e.tenant_id = :tenant_id AND e.butler = h.butler
           AND e.session_id IS NOT DISTINCT FROM h.session_id
           AND e.inferred_session IS NOT DISTINCT FROM h.inferred_session
           AND e.sequence < h.sequence
           AND (e.expires_at IS NULL OR e.expires_at > now())
         ORDER BY e.sequence DESC LIMIT :count)
        UNION ALL
        (SELECT e.id, e.sequence FROM episodes e
         WHERE e.tenant_id = :tenant_id AND e.butler = h.butler
           AND e.session_id IS NOT DISTINCT FROM h.session_id
           AND e.inferred_session IS NOT DISTINCT FROM h.inferred_session
           AND e.sequence > h.sequence
           AND (e.expires_at IS NULL OR e.expires_at > now())
         ORDER BY e.sequence LIMIT :count)
    ) n
    WHERE h.tenant_id = :tenant_id AND h.id = ANY(:ids)
""")


async def neighbours(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], count: int
) -> dict[uuid.UUID, list[Episode]]:
    """Each episode's neighbouring turns (up to `count` either side), in storage order."""
    if not ids or count <= 0:
        return {}
    pairs = (
        await session.execute(
            _NEIGHBOURS, {"tenant_id": tenant_id, "ids": list(ids), "count": count}
        )
    ).all()
    wanted = {pair.neighbour_id for pair in pairs}
    rows = (
        {
            row.id: row
            for row in (
                await session.execute(
                    select(Episode).where(Episode.tenant_id == tenant_id, Episode.id.in_(wanted))
                )
            ).scalars()
        }
        if wanted
        else {}
    )
    found: dict[uuid.UUID, list[Episode]] = {memory_id: [] for memory_id in ids}
    for pair in pairs:
        found[pair.hit_id].append(rows[pair.neighbour_id])
    for turns in found.values():
        turns.sort(key=lambda row: row.sequence)
    return found


# For each (butler, time): the latest episode with an inferred session at or before it and
# the earliest after it, one probe each of ix_episodes_inferred_session_time.
_INFERRED_AROUND = text("""
    SELECT w.ordinal, b.inferred_session AS before_session, b.occurred_at AS before_at,
           a.inferred_session AS after_session, a.occurred_at AS after_at
    FROM unnest(CAST(:butlers AS text[]), CAST(:times AS timestamptz[]))
         WITH ORDINALITY AS w(butler, at, ordinal)
    LEFT JOIN LATERAL (
        SELECT e.inferred_session, e.occurred_at FROM episodes e
        WHERE e.tenant_id = :tenant_id AND e.butler = w.butler AND e.session_id IS NULL
          AND e.inferred_session IS NOT NULL AND e.occurred_at <= w.at
        ORDER BY e.occurred_at DESC LIMIT 1) b ON true
    LEFT JOIN LATERAL (
        SELECT e.inferred_session, e.occurred_at FROM episodes e
        WHERE e.tenant_id = :tenant_id AND e.butler = w.butler AND e.session_id IS NULL
          AND e.inferred_session IS NOT NULL AND e.occurred_at > w.at
        ORDER BY e.occurred_at LIMIT 1) a ON true
    ORDER BY w.ordinal
""")


@dataclass(frozen=True)
class InferredAround:
    """The stored episodes with an inferred session just before and just after a time."""

    before: tuple[uuid.UUID, datetime] | None
    after: tuple[uuid.UUID, datetime] | None


async def inferred_around(
    session: AsyncSession, *, tenant_id: str, points: Sequence[tuple[str, datetime]]
) -> list[InferredAround]:
    """For each (butler, time), the butler's stored episodes without a session_id nearest
    before (or at) and after it, with their inferred sessions."""
    if not points:
        return []
    rows = (
        await session.execute(
            _INFERRED_AROUND,
            {
                "tenant_id": tenant_id,
                "butlers": [butler for butler, _ in points],
                "times": [at for _, at in points],
            },
        )
    ).all()
    return [
        InferredAround(
            (row.before_session, row.before_at) if row.before_session is not None else None,
            (row.after_session, row.after_at) if row.after_session is not None else None,
        )
        for row in rows
    ]


async def latest_turns(
    session: AsyncSession, *, tenant_id: str, sessions: Sequence[tuple[str, str]], count: int
) -> dict[tuple[str, str], list[str]]:
    """The contents of the last `count` turns stored in each (butler, session_id), oldest
    first."""
    if not sessions or count <= 0:
        return {}
    keys = values(column("butler", Text), column("session_id", Text), name="wanted").data(
        list(sessions)
    )
    found: dict[tuple[str, str], list[str]] = {}
    for row in await _last_turns(
        session,
        keys,
        count,
        Episode.tenant_id == tenant_id,
        Episode.butler == keys.c.butler,
        Episode.session_id == keys.c.session_id,
    ):
        found.setdefault((row.butler, row.session_id), []).append(row.content)
    return found


async def latest_inferred_turns(
    session: AsyncSession, *, tenant_id: str, sessions: Sequence[uuid.UUID], count: int
) -> dict[uuid.UUID, list[str]]:
    """The contents of the last `count` turns stored in each inferred session, oldest
    first."""
    if not sessions or count <= 0:
        return {}
    keys = values(column("inferred", UUID(as_uuid=True)), name="wanted_inferred").data(
        [(key,) for key in sessions]
    )
    found: dict[uuid.UUID, list[str]] = {}
    for row in await _last_turns(
        session,
        keys,
        count,
        Episode.tenant_id == tenant_id,
        Episode.inferred_session == keys.c.inferred,
        Episode.session_id.is_(None),
    ):
        found.setdefault(row.inferred, []).append(row.content)
    return found


async def _last_turns(
    session: AsyncSession, keys: Values, count: int, *where: ColumnElement[bool]
) -> Sequence[Any]:
    """Each row of `keys` with the contents of the last `count` episodes matching `where`
    (which refers to it), oldest first."""
    last = (
        select(Episode.sequence, Episode.content)
        .where(*where)
        .order_by(Episode.sequence.desc())
        .limit(count)
        .lateral("last_turns")
    )
    return (
        await session.execute(
            select(*keys.c, last.c.content).join(last, true()).order_by(last.c.sequence)
        )
    ).all()


def _same_session(turn: Any, tenant_id: str) -> ColumnElement[bool]:
    """`turn` is of the same session as `Episode` (of `tenant_id`, named as a value so the
    statement runs on the tenant's shard alone): its explicit one, else its inferred one."""
    return and_(
        turn.tenant_id == tenant_id,
        turn.butler == Episode.butler,
        or_(
            and_(Episode.session_id.is_not(None), turn.session_id == Episode.session_id),
            and_(
                Episode.session_id.is_(None),
                turn.session_id.is_(None),
                turn.inferred_session == Episode.inferred_session,
            ),
        ),
    )


IN_A_SESSION = or_(Episode.session_id.is_not(None), Episode.inferred_session.is_not(None))


async def turns_before(
    session: AsyncSession,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    count: int,
    excluding: Sequence[uuid.UUID] = (),
) -> dict[uuid.UUID, list[str]]:
    """For each episode of a session (explicit or inferred), the contents of the `count` turns
    stored just before it in its butler and session (other than those of `excluding`),
    oldest first."""
    if not ids or count <= 0:
        return {}
    turn = aliased(Episode)
    others = [turn.id.not_in(list(excluding))] if excluding else []
    before = (
        select(turn.sequence, turn.content)
        .where(_same_session(turn, tenant_id), turn.sequence < Episode.sequence, *others)
        .order_by(turn.sequence.desc())
        .limit(count)
        .lateral("turns_before")
    )
    rows = (
        await session.execute(
            select(Episode.id, before.c.content)
            .join(before, true())
            .where(Episode.tenant_id == tenant_id, Episode.id.in_(list(ids)), IN_A_SESSION)
            .order_by(Episode.id, before.c.sequence)
        )
    ).all()
    found: dict[uuid.UUID, list[str]] = {}
    for row in rows:
        found.setdefault(row.id, []).append(row.content)
    return found


async def turns_after(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], count: int
) -> list[uuid.UUID]:
    """The ids of the `count` turns stored just after each of these episodes in its butler
    and session (each id once)."""
    if not ids or count <= 0:
        return []
    turn = aliased(Episode)
    after = (
        select(turn.id)
        .where(_same_session(turn, tenant_id), turn.sequence > Episode.sequence)
        .order_by(turn.sequence)
        .limit(count)
        .lateral("turns_after")
    )
    rows = await session.execute(
        select(after.c.id)
        .distinct()
        .select_from(Episode)
        .join(after, true())
        .where(Episode.tenant_id == tenant_id, Episode.id.in_(list(ids)), IN_A_SESSION)
    )
    return list(rows.scalars())


async def contents(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """The content of each of these episodes."""
    rows = await session.execute(
        select(Episode.id, Episode.content).where(
            Episode.tenant_id == tenant_id, Episode.id.in_(list(ids))
        )
    )
    return {row.id: row.content for row in rows}


async def set_search_texts(
    session: AsyncSession, *, tenant_id: str, texts: dict[uuid.UUID, str], redetect: bool = False
) -> None:
    """Replace these episodes' tsvectors by those of the given texts (their keyword postings
    follow, by trigger), each read with the configuration it has (the language it was
    stored in), or with `redetect` in the text's detected language."""
    if not texts:
        return
    table = cast(Table, Episode.__table__)
    stmt = update(table).where(
        table.c.tenant_id == tenant_id, table.c.id == bindparam("episode_id")
    )
    if redetect:
        await session.execute(
            stmt.values(**BOUND_SEARCH_COLUMNS),
            await with_documents(
                [
                    {"episode_id": episode_id, "search_text": text}
                    for episode_id, text in texts.items()
                ]
            ),
        )
        return
    read = await segmented(list(texts.values()))
    await session.execute(
        stmt.values(search_vector=to_tsvector(bindparam("search_text"), table.c.search_config)),
        [
            {"episode_id": episode_id, "search_text": text}
            for episode_id, text in zip(texts, read, strict=True)
        ],
    )


async def session_episodes(
    session: AsyncSession, *, after: uuid.UUID | None, limit: int
) -> list[tuple[uuid.UUID, str]]:
    """Up to `limit` (id, tenant_id) of episodes with a session (explicit or inferred), by
    id, after `after`."""
    stmt = (
        select(Episode.id, Episode.tenant_id).where(IN_A_SESSION).order_by(Episode.id).limit(limit)
    )
    if after is not None:
        stmt = stmt.where(Episode.id > after)
    return [(row.id, row.tenant_id) for row in await session.execute(stmt)]


@dataclass(frozen=True)
class Unplaced:
    """An episode stored with neither a session_id nor an inferred session."""

    id: uuid.UUID
    tenant_id: str
    butler: str
    occurred_at: datetime


async def unplaced_episodes(session: AsyncSession, *, limit: int) -> list[Unplaced]:
    """Up to `limit` episodes without a session_id or an inferred session, oldest first per
    tenant and butler."""
    stmt = (
        select(Episode.id, Episode.tenant_id, Episode.butler, Episode.occurred_at)
        .where(Episode.session_id.is_(None), Episode.inferred_session.is_(None))
        .order_by(Episode.tenant_id, Episode.butler, Episode.occurred_at, Episode.id)
        .limit(limit)
    )
    return [
        Unplaced(row.id, row.tenant_id, row.butler, row.occurred_at)
        for row in await session.execute(stmt)
    ]


async def place_episodes(
    session: AsyncSession,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    sessions: Sequence[uuid.UUID],
) -> None:
    """Give each episode of `ids` (still without a session) the inferred session beside it."""
    placed = values(
        column("id", UUID(as_uuid=True)), column("inferred", UUID(as_uuid=True)), name="placed"
    ).data(list(zip(ids, sessions, strict=True)))
    await session.execute(
        update(Episode)
        .where(
            Episode.tenant_id == tenant_id,
            Episode.id == placed.c.id,
            Episode.session_id.is_(None),
            Episode.inferred_session.is_(None),
        )
        .values(inferred_session=placed.c.inferred)
    )


# With this transaction setting on, inserting episodes writes their keyword postings only;
# `count_keyword_documents` adds their counts (mem_030, mem_043).
KEYWORD_COUNTS_LATER = "engram.keyword_counts_later"


async def count_keyword_documents(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> None:
    """Add the tenant's episodes `ids`, inserted with KEYWORD_COUNTS_LATER on, to its and
    their scopes' keyword statistics (which lock the tenant's keyword writers until commit)."""
    await session.execute(
        text("SELECT engram_keyword_count_episodes(:tenant_id, :ids)"),
        {"tenant_id": tenant_id, "ids": list(ids)},
    )
