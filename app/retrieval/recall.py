"""Recall: hybrid candidates re-ranked by the composite score (pure maths + workflow)."""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.config import DEFAULT_RRF_K, ScoreWeights
from app.embedding.similarity_scale import IDENTITY, SimilarityScale, scale_of
from app.formulas.fact_time import PointInTime
from app.formulas.lifecycle import effective_confidence, recency_score
from app.repositories import references
from app.retrieval.plan import GraphQuery, plan_search
from app.retrieval.search import Hit, query_while_beginning, search
from app.retrieval.searcher import Searcher
from app.schemas.filters import MemoryFilter
from app.telemetry.stages import stage

RECALL_TYPES = ("fact", "rule")


def relevance_from_rrf(rrf: float, *, pool: int, k: int = DEFAULT_RRF_K) -> float:
    """RRF rescaled to [0, 1] over the range a candidate of a `pool`-long fusion can reach.

    Dividing by the best score 2/(k+1), which would map every candidate into about
    0.86-1.0 and let importance and recency decide everything. Here the best possible
    candidate (rank 1 in both lists) is 1 and the worst (last in one list, absent from the
    other, i.e. rank pool + 1) is 0.
    """
    best = 2.0 / (k + 1)
    worst = 1.0 / (k + pool) + 1.0 / (k + pool + 1)
    if best <= worst:
        return 1.0
    return min(1.0, max(0.0, (rrf - worst) / (best - worst)))


def composite_score(
    *, relevance: float, importance: float, recency: float, confidence: float, weights: ScoreWeights
) -> float:
    """w_rel * relevance + w_imp * importance/10 + w_rec * recency + w_conf * confidence."""
    return (
        weights.relevance * relevance
        + weights.importance * (importance / 10.0)
        + weights.recency * recency
        + weights.confidence * confidence
    )


@dataclass(frozen=True)
class Recalled:
    """A recalled memory with the parts of its composite score."""

    hit: Hit
    relevance: float
    recency: float
    effective_confidence: float
    composite_score: float


@dataclass(frozen=True)
class Recollection:
    """The recalled memories, best first, and why the topic had no vector (None: it had)."""

    items: list[Recalled]
    semantic_skipped: str | None = None


def own_time(row: Any) -> datetime:
    """When the memory itself last happened: an episode's occurrence, a fact's or rule's last
    confirmation, else its creation. (Not last_referenced_at: being recalled must not make a
    memory rank higher the next time.)"""
    occurred = getattr(row, "occurred_at", None)
    if occurred is not None:
        return occurred
    confirmed = getattr(row, "last_confirmed_at", None)
    return confirmed if confirmed is not None else row.created_at


def above_floor(hit: Hit, floor: float, scale: SimilarityScale = IDENTITY) -> bool:
    """False when the memory's similarity to the topic is known and, on the packaged model's
    scale (`scale`), below `floor`."""
    return hit.similarity is None or scale(hit.similarity) >= floor


def score_hit(
    hit: Hit, *, pool: int, k: int, weights: ScoreWeights, now: datetime, graph_weight: float = 0.0
) -> Recalled:
    """The composite score of one hybrid hit; a graph path adds graph_weight * its score."""
    row = hit.row
    graph_part = (hit.contributions or {}).get("graph", 0.0)
    relevance = relevance_from_rrf((hit.rrf_score or 0.0) - graph_part, pool=pool, k=k)
    recency = recency_score(own_time(row), now)
    confidence = effective_confidence(row.confidence, row.decay_rate, row.last_confirmed_at, now)
    importance = getattr(row, "importance", 5.0)
    score = composite_score(
        relevance=relevance,
        importance=importance,
        recency=recency,
        confidence=confidence,
        weights=weights,
    )
    if hit.graph is not None:
        score += graph_weight * hit.graph.score
    return Recalled(hit, relevance, recency, confidence, score)


def recall_order(item: Recalled) -> tuple[Any, ...]:
    """Score desc, then created_at desc, then id asc: the deterministic tie-breakers."""
    row = item.hit.row
    return (-item.composite_score, -row.created_at.timestamp(), str(row.id))


async def recall(
    session: AsyncSession,
    *,
    searcher: Searcher,
    topic: str,
    scope: str | None,
    limit: int | None,
    min_confidence: float,
    bump: bool = True,
    graph: GraphQuery | None = None,
    reference_time: datetime | None = None,
    at: PointInTime | None = None,
    memory_filter: MemoryFilter | None = None,
) -> Recollection:
    """The `limit` (default: `default_limit`) best facts and rules by composite score, leaving
    out those less similar to the topic than the relevance floor; each returned one is
    referenced. A remote model that cannot embed the topic within the query budget
    (`query_embedding_seconds`) leaves the semantic list out, as for a search."""
    tenant_id, embedder, retrieval = searcher.tenant_id, searcher.embedder, searcher.retrieval
    limit = limit or retrieval.default_limit
    pool = limit * retrieval.recall_pool_factor
    plan = plan_search(
        retrieval,
        query=topic,
        types=RECALL_TYPES,
        scope=scope,
        mode="hybrid",
        limit=pool,
        min_confidence=min_confidence,
        fusion="rrf",
        graph=graph,
        at=at,
        memory_filter=memory_filter,
    )
    vector, skipped = await query_while_beginning(session, plan, searcher=searcher)
    if skipped is not None:
        plan = replace(plan, mode="keyword")
    hits = await search(
        session,
        plan,
        searcher=searcher,
        query_vector=vector,
    )
    now = reference_time or now_utc()
    scale = scale_of(embedder.slot_hint[0])  # the model this search's transaction read
    scored = [
        score_hit(
            hit,
            pool=pool,
            k=retrieval.rrf_k,
            weights=retrieval.score_weights,
            now=now,
            graph_weight=retrieval.graph_weight,
        )
        for hit in hits
        if above_floor(hit, retrieval.relevance_floor, scale)
    ]
    top = sorted(scored, key=recall_order)[:limit]
    if bump:
        await bump_recalled(session, tenant_id=tenant_id, recalled=top)
    return Recollection(top, skipped)


async def bump_recalled(
    session: AsyncSession, *, tenant_id: str, recalled: Sequence[Recalled]
) -> None:
    """Count a reference on every recalled memory (one UPDATE per table on the primary)."""
    with stage("bump"):
        for memory_type in RECALL_TYPES:
            rows = [r.hit.row for r in recalled if r.hit.memory_type == memory_type]
            await references.count(session, memory_type, tenant_id=tenant_id, rows=rows)
