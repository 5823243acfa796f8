"""The arc boundary job: cut a scope's episodes at gaps in time and propose draft arcs."""

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from app.core.clock import now_utc
from app.core.scope import Scope
from app.models import Arc
from app.repositories import arcs as arc_rows
from app.repositories import rows as record_rows
from app.schemas.arcs import MAX_KEY_EVENTS
from app.services import events
from app.services.arcs import search_text
from app.services.embeddings import embed_texts
from app.services.jobs import JobContext, JobOutcome

SUMMARY_EPISODES = 3
SUMMARY_CHARS = 200


def clusters_by_gap(times: Sequence[datetime], gap: timedelta) -> list[range]:
    """Index ranges of `times` (sorted) split wherever two neighbours are more than `gap`
    apart."""
    if not times:
        return []
    found, start = [], 0
    for index in range(1, len(times)):
        if times[index] - times[index - 1] > gap:
            found.append(range(start, index))
            start = index
    found.append(range(start, len(times)))
    return found


async def run_arc_boundaries(
    ctx: JobContext, *, tenant_id: str, scope: str, gap_minutes: float | None
) -> JobOutcome:
    """Propose one draft arc per cluster of the scope's episodes.

    A cluster is skipped when it has fewer than `arcs.min_episodes` episodes, when an arc of
    the scope (not abandoned) already overlaps it (so re-running proposes nothing twice), or
    when its last episode is less than one gap ago (it may still grow).
    """
    settings = ctx.settings.arcs
    gap = timedelta(minutes=gap_minutes or settings.boundary_gap_minutes)
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        timeline = await arc_rows.episode_times(session, tenant_id=tenant_id, butler=scope)
    clusters = clusters_by_gap([occurred for _, occurred, _ in timeline], gap)
    counts = {
        "episodes": len(timeline),
        "clusters": len(clusters),
        "arcs_created": 0,
        "too_small": 0,
        "already_covered": 0,
        "still_open": 0,
    }
    now = now_utc()
    for cluster in clusters:
        members = [timeline[i] for i in cluster]
        end = members[-1][1]
        if len(members) < settings.min_episodes:
            counts["too_small"] += 1
            continue
        if now - end < gap:
            counts["still_open"] += 1
            continue
        if await _propose_arc(
            ctx, tenant_id=tenant_id, scope=scope, members=members, arc_type=settings.proposed_type
        ):
            counts["arcs_created"] += 1
        else:
            counts["already_covered"] += 1
    return JobOutcome(result={**counts, "gap_minutes": gap.total_seconds() / 60})


async def _propose_arc(
    ctx: JobContext,
    *,
    tenant_id: str,
    scope: str,
    members: list[tuple[uuid.UUID, datetime, str]],
    arc_type: str,
) -> bool:
    """Store a draft arc over the cluster's `members` in one transaction; False when an arc
    of the scope already overlaps it."""
    start, end = members[0][1], members[-1][1]
    title = f"{scope}: {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M}"
    summary = " / ".join(content[:SUMMARY_CHARS] for _, _, content in members[:SUMMARY_EPISODES])
    text = search_text(title, summary, None, [])
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        embedded = await embed_texts(session, ctx.embedder, [text], tenant_id=tenant_id, bulk=True)
        if await arc_rows.overlapping_arc_exists(
            session, tenant_id=tenant_id, scope=scope, start=start, end=end
        ):
            return False
        row = await record_rows.insert_searchable(
            session,
            Arc,
            search_text=text,
            values={
                "tenant_id": tenant_id,
                "scope": scope,
                "title": title,
                "summary": summary,
                "arc_type": arc_type,
                "started_at": start,
                "ended_at": end,
                "status": "draft",
                **embedded.columns(0),
                "key_events": [
                    {
                        "memory_type": "episode",
                        "memory_id": str(episode_id),
                        "description": "",
                        "occurred_at": occurred.isoformat(),
                    }
                    for episode_id, occurred, _ in members[:MAX_KEY_EVENTS]
                ],
            },
        )
        await events.record(
            session,
            [
                events.Event(
                    "arc_proposed",
                    tenant_id,
                    {"arc_id": str(row.id), "scope": scope, "episodes": len(members)},
                    actor="arc_boundaries",
                )
            ],
        )
    return True
