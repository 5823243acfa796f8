"""Search of one record type on its own (procedures, arcs): two legs, fused like memories."""

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import RetrievalSettings
from app.embedding import Embedder
from app.repositories.search import candidates as search_rows
from app.repositories.search import record_tables
from app.repositories.search.candidates import RankedCandidate
from app.repositories.search.record_tables import RecordQuery
from app.retrieval.fusion import ScoredRow, fuse, single_list
from app.retrieval.plan import plan_search
from app.retrieval.query_vectors import embed_query, serving_vector


@dataclass(frozen=True)
class RecordHit(ScoredRow):
    """A procedure or arc search result: the row and its scores."""


async def search_records(
    session: AsyncSession,
    *,
    embedder: Embedder,
    retrieval: RetrievalSettings,
    record_query: RecordQuery,
    text: str,
    mode: str,
    limit: int,
) -> list[RecordHit]:
    """Semantic and keyword legs over the rows `record_query` keeps, fused as the memories'
    are (the configured fusion), or one leg alone."""
    tenant_id = record_query.tenant_id
    plan = plan_search(retrieval, query=text, types=(), scope=None, mode=mode, limit=limit)
    cleaned = plan.query
    if not cleaned:
        return []
    asked = await embed_query(embedder, cleaned, tenant_id=tenant_id) if plan.semantic else None
    keyword_query = cleaned if plan.keyword else None
    semantic: list[RankedCandidate] = []
    keyword: list[RankedCandidate] = []
    vector = None
    if asked is not None:
        await search_rows.configure_vector_scan(
            session,
            ef_search=max(retrieval.hnsw_ef_search, plan.depth),
            max_scan_tuples=retrieval.hnsw_max_scan_tuples,
        )
        vector = await serving_vector(session, embedder, asked)
        semantic = await record_tables.nearest(session, record_query, vector, plan.depth)
    if keyword_query is not None:
        keyword = await record_tables.matching(session, record_query, keyword_query, plan.depth)
    # Records hold no sessions, whose signals the learned stage reads: it fuses them by RRF.
    fused = (
        fuse(
            semantic,
            keyword,
            limit=limit,
            k=retrieval.rrf_k,
            method=plan.fused_by,
            weights=plan.weights,
        )
        if mode == "hybrid"
        else single_list(semantic if mode == "semantic" else keyword, semantic=mode == "semantic")
    )
    loaded = await record_tables.load_scored(
        session, record_query, [f.memory_id for f in fused], vector, keyword_query
    )
    return [
        RecordHit(
            *loaded[f.memory_id],
            f.rrf_score,
            f.semantic_rank,
            f.keyword_rank,
            f.fused_score,
            f.contributions,
        )
        for f in fused
        if f.memory_id in loaded
    ]
