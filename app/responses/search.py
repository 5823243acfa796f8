"""Search, recall and context answers: each hit's fields and scores."""

from datetime import datetime
from typing import Any

from app.formulas.fact_time import PointInTime
from app.responses.episodes import episode_out
from app.responses.facts import fact_out
from app.responses.memories import memory_out
from app.responses.rules import rule_out
from app.retrieval.context import Context
from app.retrieval.recall import Recalled, Recollection
from app.retrieval.requests import SearchAnswer
from app.retrieval.search import Hit
from app.retrieval.timewindow import TimeWindow
from app.retrieval.user_reranker import Outcome
from app.schemas.ledger import AgentEventOut
from app.schemas.runs import RunMessageOut, RunOut
from app.schemas.search import (
    ContextItem,
    ContextResponse,
    EpisodeHit,
    FactHit,
    RecallFactHit,
    RecallResponse,
    RecallRuleHit,
    ReflectionHit,
    RerankerOut,
    RuleHit,
    RunHit,
    RunMessageHit,
    SearchResponse,
    TimeWindowOut,
)
from app.services.rule_reasons import ShownRule


def _scores(hit: Hit) -> dict[str, Any]:
    # The API calls the keyword leg's ts_rank_cd score `rank`.
    return {
        "similarity": hit.similarity,
        "rank": hit.keyword_score,
        "rrf_score": hit.rrf_score,
        "semantic_rank": hit.semantic_rank,
        "keyword_rank": hit.keyword_rank,
        "time_rank": hit.time_rank,
        "fused_score": hit.fused_score,
        "graph": None
        if hit.graph is None
        else {
            "entity_id": hit.graph.entity_id,
            "hops": hit.graph.hops,
            "strength": hit.graph.strength,
            "score": hit.graph.score,
        },
        "contributions": hit.contributions,
        "passage": None
        if hit.passage is None
        else {
            "kind": hit.passage.kind,
            "index": hit.passage.ordinal,
            "start": hit.passage.start_char,
            "end": hit.passage.end_char,
            "similarity": hit.passage.similarity,
        },
    }


def _fields(hit: Hit, now: datetime) -> dict[str, Any]:
    if hit.memory_type == "rule":
        return dict(rule_out(ShownRule(hit.row, list(hit.harmful_reasons)), now))
    if hit.memory_type == "fact":
        return dict(fact_out(hit.row, now, hit.period))
    return dict(memory_out(hit.row, now))


RECORD_HITS: dict[str, tuple[type[Any], type[Any]]] = {
    "run": (RunOut, RunHit),
    "run_message": (RunMessageOut, RunMessageHit),
    "reflection": (AgentEventOut, ReflectionHit),
}


def search_hit(hit: Hit, now: datetime) -> Any:
    """A search result: the memory's (or record's) fields and its scores."""
    if hit.memory_type in RECORD_HITS:
        shown, model = RECORD_HITS[hit.memory_type]
        return model.model_validate({**dict(shown.model_validate(hit.row)), **_scores(hit)})
    values = {**_fields(hit, now), **_scores(hit)}
    if hit.memory_type == "episode":
        return EpisodeHit.model_validate(
            {**values, "neighbours": [episode_out(turn) for turn in hit.neighbours]}
        )
    if hit.memory_type == "fact":
        return FactHit.model_validate(values)
    return RuleHit.model_validate(values)


def search_answer_out(answer: SearchAnswer) -> SearchResponse:
    """A memory search's answer as the API returns it."""
    return search_out(
        answer.mode,
        answer.hits,
        answer.window,
        answer.time_mode,
        answer.now,
        answer.at,
        reranker=answer.reranker,
    ).model_copy(update={"semantic_skipped": answer.semantic_skipped})


def search_out(
    mode: str,
    hits: list[Hit],
    window: TimeWindow | None,
    time_mode: str,
    now: datetime,
    at: PointInTime | None = None,
    reranker: Outcome | None = None,
) -> SearchResponse:
    """The search answer: the hits, the time window read from the query, the point in
    time facts were read at and what the configured reranker did."""
    read = (
        None
        if window is None
        else TimeWindowOut.model_validate(
            {
                "expression": window.expression,
                "start": window.start,
                "end": window.end,
                "applied_as": time_mode,
            }
        )
    )
    reranked = (
        None
        if reranker is None
        else RerankerOut(applied=reranker.applied, reason=reranker.reason, scored=reranker.scored)
    )
    return SearchResponse(
        mode=mode,
        time_window=read,
        reranker=reranked,
        results=[search_hit(hit, now) for hit in hits],
        **_point(at),
    )


def _point(at: PointInTime | None) -> dict[str, Any]:
    return {
        "as_of": None if at is None else at.as_of,
        "known_at": None if at is None else at.known_at,
    }


def recall_hit(item: Recalled, now: datetime) -> RecallFactHit | RecallRuleHit:
    """A recall result: search fields plus relevance, recency and composite score."""
    model = RecallFactHit if item.hit.memory_type == "fact" else RecallRuleHit
    return model.model_validate(
        {
            **_fields(item.hit, now),
            **_scores(item.hit),
            "relevance": item.relevance,
            "recency": item.recency,
            "composite_score": item.composite_score,
        }
    )


def recall_out(recalled: Recollection, now: datetime, at: PointInTime | None) -> RecallResponse:
    """The recall answer and the point in time facts were read at."""
    return RecallResponse(
        results=[recall_hit(item, now) for item in recalled.items],
        semantic_skipped=recalled.semantic_skipped,
        **_point(at),
    )


def context_out(context: Context) -> ContextResponse:
    """The context block with the memories placed in it."""
    items = [
        ContextItem(
            memory_type=item.hit.memory_type,
            id=item.hit.row.id,
            composite_score=item.composite_score,
        )
        for item in context.items
    ]
    return ContextResponse(
        context=context.text,
        token_budget=context.token_budget,
        characters=len(context.text),
        items=items,
        semantic_skipped=context.semantic_skipped,
        **_point(context.at),
    )
