"""Search of one record type on its own (procedures, arcs): two legs, fused like memories."""

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.config import RetrievalSettings
from app.embedding import Embedder
from app.embedding.vectors import EmbeddingVector
from app.retrieval import candidates as search_rows
from app.retrieval.candidates import RankedCandidate
from app.retrieval.fusion import fuse, single_list
from app.text import preprocess_search_query

Leg = Callable[[Any], Awaitable[list[RankedCandidate]]]
# (ids, vector, query) -> {id: (row, similarity, keyword score)}
Loader = Callable[[list[uuid.UUID], EmbeddingVector | None, str | None],
                  Awaitable[dict[uuid.UUID, tuple[Any, float | None, float | None]]]]


@dataclass(frozen=True)
class RecordHit:
    """A search result: the row and its scores."""

    row: Any
    similarity: float | None
    keyword_score: float | None
    rrf_score: float | None
    semantic_rank: int | None
    keyword_rank: int | None


async def search_records(session: AsyncSession, *, tenant_id: str, embedder: Embedder,
                         retrieval: RetrievalSettings, query: str, mode: str, limit: int,
                         semantic_leg: Leg, keyword_leg: Leg,
                         load: Loader) -> list[RecordHit]:
    """Semantic and keyword legs fused by RRF (the memories' fusion), or one leg alone;
    `semantic_leg(vector)`, `keyword_leg(query)` and `load` are the record type's SQL."""
    cleaned = preprocess_search_query(query)
    if not cleaned:
        return []
    vector = (await embedder.aembed(cleaned, tenant_id=tenant_id)
              if mode in ("semantic", "hybrid") else None)
    keyword_query = cleaned if mode in ("keyword", "hybrid") else None
    semantic: list[RankedCandidate] = []
    keyword: list[RankedCandidate] = []
    if vector is not None:
        await search_rows.configure_vector_scan(
            session, ef_search=max(retrieval.hnsw_ef_search, limit),
            max_scan_tuples=retrieval.hnsw_max_scan_tuples)
        semantic = await semantic_leg(vector)
    if keyword_query is not None:
        keyword = await keyword_leg(keyword_query)
    fused = (fuse(semantic, keyword, limit=limit, k=retrieval.rrf_k) if mode == "hybrid"
             else single_list(semantic if mode == "semantic" else keyword,
                              semantic=mode == "semantic"))
    loaded = await load([f.memory_id for f in fused], vector, keyword_query)
    return [RecordHit(*loaded[f.memory_id], f.rrf_score, f.semantic_rank, f.keyword_rank)
            for f in fused if f.memory_id in loaded]
