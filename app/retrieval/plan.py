"""A search plan: what one search does, decided once from the request and the settings."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.core.config import RetrievalSettings
from app.core.text import preprocess_search_query
from app.formulas.fact_time import PointInTime
from app.repositories.search.record_sql import TYPES as RECORD_TYPES
from app.retrieval import rerank
from app.retrieval.fusion import FusionWeights
from app.retrieval.timewindow import TimeWindow
from app.schemas.filters import MemoryFilter

MEMORY_TYPES = ("episode", "fact", "rule")


@dataclass(frozen=True)
class GraphQuery:
    """Entities a search is about: memories within `hops` links of them rank higher."""

    entities: tuple[uuid.UUID, ...]
    hops: int = 2


def graph_query(entities: Sequence[uuid.UUID] | None, hops: int) -> GraphQuery | None:
    """The graph part of a request: None without entities."""
    return GraphQuery(tuple(dict.fromkeys(entities)), hops) if entities else None


@dataclass(frozen=True)
class SearchPlan:
    """One search: the cleaned query, what to search, how deep each list is read and how the
    lists become one ranking."""

    query: str  # preprocessed; empty finds nothing
    types: tuple[str, ...]  # memory types (episode, fact, rule)
    records: tuple[str, ...]  # record types, searched only when named
    scope: str | None
    mode: str  # semantic, keyword or hybrid
    limit: int
    min_confidence: float
    fusion: str  # rrf, weighted or learned (hybrid mode)
    weights: FusionWeights
    rrf_k: int
    window: TimeWindow | None = None
    time_mode: str = "boost"
    graph: GraphQuery | None = None
    neighbours: int = 0
    at: PointInTime | None = None  # facts: the versions that held then, as believed then
    memory_filter: MemoryFilter | None = None  # only memories it admits are candidates
    language: str | None = None  # the query's, when given; else detected (app/core/languages.py)

    @property
    def semantic(self) -> bool:
        """Whether the semantic leg runs (and the query is embedded)."""
        return self.mode in ("semantic", "hybrid")

    @property
    def keyword(self) -> bool:
        """Whether the keyword leg runs."""
        return self.mode in ("keyword", "hybrid")

    @property
    def learned(self) -> bool:
        """Whether the learned second stage orders the candidates: learned fusion of a
        search that can find episodes (only they come in sessions, whose signals the model
        reads; facts, rules and records are fused by RRF)."""
        return self.mode == "hybrid" and self.fusion == "learned" and "episode" in self.types

    @property
    def fused_by(self) -> str:
        """How the lists become one ranking when the learned stage does not order them:
        rrf or weighted (learned fusion falls back to rrf)."""
        return "rrf" if self.fusion == "learned" else self.fusion

    @property
    def depth(self) -> int:
        """How many candidates each leg gives: deeper for the learned second stage."""
        return max(self.limit, rerank.DEPTH) if self.learned else self.limit

    @property
    def span(self) -> tuple[datetime, datetime] | None:
        """The time window in use, if any."""
        if self.window is None or self.time_mode == "off":
            return None
        return self.window.start, self.window.end


def plan_search(
    retrieval: RetrievalSettings,
    *,
    query: str,
    types: Sequence[str] | None,
    scope: str | None,
    mode: str,
    limit: int,
    min_confidence: float = 0.0,
    fusion: str | None = None,
    window: TimeWindow | None = None,
    time_mode: str = "boost",
    graph: GraphQuery | None = None,
    neighbours: int = 0,
    at: PointInTime | None = None,
    memory_filter: MemoryFilter | None = None,
    language: str | None = None,
) -> SearchPlan:
    """The plan of a search request; `fusion` None takes the configured one."""
    return SearchPlan(
        query=preprocess_search_query(query),
        types=tuple(t for t in MEMORY_TYPES if types is None or t in types),
        records=tuple(t for t in RECORD_TYPES if types is not None and t in types),
        scope=scope,
        mode=mode,
        limit=limit,
        min_confidence=min_confidence,
        fusion=fusion or retrieval.fusion,
        weights=FusionWeights(
            retrieval.semantic_weight,
            retrieval.keyword_weight,
            retrieval.time_weight,
            retrieval.graph_weight,
        ),
        rrf_k=retrieval.rrf_k,
        window=window,
        time_mode=time_mode,
        graph=graph,
        neighbours=neighbours,
        at=at,
        memory_filter=memory_filter,
        language=language,
    )
