"""The one mapper from rows to response models: every router shapes its answer here."""

import uuid
from datetime import datetime
from typing import Any

from app.clock import now_utc
from app.models import (
    AgentEvent,
    Arc,
    Entity,
    Episode,
    Fact,
    Job,
    MemoryEvent,
    MemoryLink,
    Procedure,
    Rule,
    Run,
    RunFeedback,
    RunMessage,
    WorkingMemory,
)
from app.retrieval.context import Context
from app.retrieval.recall import Recalled
from app.retrieval.records import RecordHit
from app.retrieval.search import Hit
from app.retrieval.timewindow import TimeWindow
from app.schemas.arcs import ArcOut, ArcSearchResponse
from app.schemas.data_rights import DeletedOut, ExportPageOut
from app.schemas.entities import EntityOut, MergeOut
from app.schemas.episodes import EpisodeOut
from app.schemas.events import EventOut
from app.schemas.facts import FactOut, FactPage
from app.schemas.jobs import JobOut
from app.schemas.ledger import (
    AgentContextOut,
    AgentEventOut,
    EventAppendOut,
    ReflectionOut,
    SalientEventOut,
)
from app.schemas.links import LinkOut
from app.schemas.portability import ImportOut
from app.schemas.procedures import ProcedureHit, ProcedureOut, ProcedureSearchResponse
from app.schemas.rules import RuleOut
from app.schemas.runs import (
    RunDetailOut,
    RunFeedbackOut,
    RunMessageOut,
    RunOut,
    RunSearchHit,
    RunSearchResponse,
)
from app.schemas.search import (
    ContextItem,
    ContextResponse,
    EpisodeHit,
    FactHit,
    RecallFactHit,
    RecallResponse,
    RecallRuleHit,
    ReflectionHit,
    RuleHit,
    RunHit,
    RunMessageHit,
    SearchResponse,
    TimeWindowOut,
)
from app.schemas.working_memory import ScratchpadEntry, WorkingMemoryOut
from app.services.fact_timeline import PointInTime
from app.services.facts import FactListing
from app.services.ledger import AgentContext, Appended, Reflection
from app.services.lifecycle import effective_confidence
from app.services.merge import MergeResult
from app.services.rule_reasons import ShownRule
from app.services.runs import RunDetail, RunFound
from app.services.working_memory import etag_of


def _columns(row: Fact | Rule) -> dict[str, Any]:
    return {attr.key: getattr(row, attr.key) for attr in row.__mapper__.column_attrs
            if attr.key not in ("embedding", "search_vector")}


def _with_confidence(row: Fact | Rule, now: datetime | None) -> dict[str, Any]:
    eff = effective_confidence(row.confidence, row.decay_rate, row.last_confirmed_at,
                               now or now_utc())
    return {**_columns(row), "effective_confidence": eff}


def fact_out(row: Fact, now: datetime | None = None,
             period: tuple[datetime, datetime | None] | None = None) -> FactOut:
    """A fact as the API shows it, with its decayed confidence and fading state; with
    `period`, the valid period it was believed to have at the read's known_at."""
    values = {**_with_confidence(row, now), "fading": row.fading_since is not None}
    if period is not None:
        values["valid_from"], values["valid_until"] = period
    return FactOut.model_validate(values)


def fact_page_out(listing: FactListing) -> FactPage:
    """A page of facts, saying which point in time it was read at."""
    at = listing.at
    return FactPage(items=[fact_out(row, period=listing.periods.get(row.id))
                           for row in listing.rows],
                    next_cursor=listing.next_cursor,
                    as_of=None if at is None else at.as_of,
                    known_at=None if at is None else at.known_at)


def rule_out(rule: Rule | ShownRule, now: datetime | None = None) -> RuleOut:
    """A rule as the API shows it, with its decayed confidence and lifecycle flags; the
    reasons of its harmful marks, when it has any, in `metadata.harmful_reasons`."""
    row, reasons = (rule.row, rule.harmful_reasons) if isinstance(rule, ShownRule) else (rule, [])
    values = {**_with_confidence(row, now), "fading": row.fading_since is not None,
              "forgotten": row.forgotten_at is not None}
    if reasons:
        values["metadata_"] = {**row.metadata_, "harmful_reasons": reasons}
    return RuleOut.model_validate(values)


def episode_out(row: Episode) -> EpisodeOut:
    """An episode as the API shows it."""
    return EpisodeOut.model_validate(row)


def entity_out(row: Entity) -> EntityOut:
    """An entity as the API shows it."""
    return EntityOut.model_validate(row)


def merge_out(result: MergeResult) -> MergeOut:
    """What a merge did: the merged target and the counts."""
    return MergeOut(target=entity_out(result.target), source_entity_id=result.source_entity_id,
                    target_entity_id=result.target_entity_id,
                    facts_repointed=result.facts_repointed,
                    facts_superseded=result.facts_superseded,
                    aliases_added=result.aliases_added)


def link_out(row: MemoryLink) -> LinkOut:
    """A link as the API shows it."""
    return LinkOut.model_validate(row)


def event_out(row: MemoryEvent) -> EventOut:
    """An audit event as the API shows it."""
    return EventOut.model_validate(row)


def import_out(counts: dict[str, int]) -> ImportOut:
    """What an import inserted, per record kind."""
    return ImportOut(imported=counts)


def deleted_out(node_type: str, node_id: uuid.UUID, counts: dict[str, int]) -> DeletedOut:
    """The receipt of a hard delete."""
    return DeletedOut.model_validate({"type": node_type, "id": node_id, "deleted": counts})


def export_page_out(records: list[dict[str, Any]], next_offset: int | None) -> ExportPageOut:
    """A page of the export and the cursor of the next one."""
    return ExportPageOut(records=records,
                         next_cursor=None if next_offset is None else str(next_offset))


def job_out(job: Job) -> JobOut:
    """A job as the API shows it, with its duration once finished."""
    duration = None
    if job.started_at is not None and job.finished_at is not None:
        duration = max(0.0, (job.finished_at - job.started_at).total_seconds())
    return JobOut(
        id=job.id, kind=job.kind, status=job.status, params=job.params,
        result=job.result, errors=list(job.errors), attempts=job.attempts,
        created_at=job.created_at, scheduled_for=job.scheduled_for, started_at=job.started_at,
        finished_at=job.finished_at, duration_seconds=duration,
    )


def _scores(hit: Hit) -> dict[str, Any]:
    # The API calls the keyword leg's ts_rank_cd score `rank`.
    return {"similarity": hit.similarity, "rank": hit.keyword_score, "rrf_score": hit.rrf_score,
            "semantic_rank": hit.semantic_rank, "keyword_rank": hit.keyword_rank,
            "time_rank": hit.time_rank, "fused_score": hit.fused_score,
            "graph": None if hit.graph is None else {
                "entity_id": hit.graph.entity_id, "hops": hit.graph.hops,
                "strength": hit.graph.strength, "score": hit.graph.score},
            "contributions": hit.contributions,
            "passage": None if hit.passage is None else {
                "kind": hit.passage.kind, "index": hit.passage.ordinal,
                "start": hit.passage.start_char, "end": hit.passage.end_char,
                "similarity": hit.passage.similarity}}


def memory_out(row: Episode | Fact | Rule | ShownRule,
               now: datetime | None = None) -> EpisodeOut | FactOut | RuleOut:
    """An episode, fact or rule row as the API shows it."""
    if isinstance(row, Episode):
        return episode_out(row)
    if isinstance(row, Fact):
        return fact_out(row, now)
    return rule_out(row, now)


def _fields(hit: Hit, now: datetime) -> dict[str, Any]:
    if hit.memory_type == "rule":
        return dict(rule_out(ShownRule(hit.row, list(hit.harmful_reasons)), now))
    if hit.memory_type == "fact":
        return dict(fact_out(hit.row, now, hit.period))
    return dict(memory_out(hit.row, now))


RECORD_HITS: dict[str, tuple[type[Any], type[Any]]] = {
    "run": (RunOut, RunHit), "run_message": (RunMessageOut, RunMessageHit),
    "reflection": (AgentEventOut, ReflectionHit)}


def search_hit(hit: Hit, now: datetime) -> Any:
    """A search result: the memory's (or record's) fields and its scores."""
    if hit.memory_type in RECORD_HITS:
        shown, model = RECORD_HITS[hit.memory_type]
        return model.model_validate({**dict(shown.model_validate(hit.row)), **_scores(hit)})
    values = {**_fields(hit, now), **_scores(hit)}
    if hit.memory_type == "episode":
        return EpisodeHit.model_validate(
            {**values, "neighbours": [episode_out(turn) for turn in hit.neighbours]})
    if hit.memory_type == "fact":
        return FactHit.model_validate(values)
    return RuleHit.model_validate(values)


def search_out(mode: str, hits: list[Hit], window: TimeWindow | None, time_mode: str,
               now: datetime, at: PointInTime | None = None) -> SearchResponse:
    """The search answer: the hits, the time window read from the query and the point in
    time facts were read at."""
    read = None if window is None else TimeWindowOut.model_validate({
        "expression": window.expression, "start": window.start, "end": window.end,
        "applied_as": time_mode})
    return SearchResponse(mode=mode, time_window=read,
                          results=[search_hit(hit, now) for hit in hits], **_point(at))


def _point(at: PointInTime | None) -> dict[str, Any]:
    return {"as_of": None if at is None else at.as_of,
            "known_at": None if at is None else at.known_at}


def recall_hit(item: Recalled, now: datetime) -> RecallFactHit | RecallRuleHit:
    """A recall result: search fields plus relevance, recency and composite score."""
    model = RecallFactHit if item.hit.memory_type == "fact" else RecallRuleHit
    return model.model_validate({
        **_fields(item.hit, now), **_scores(item.hit), "relevance": item.relevance,
        "recency": item.recency, "composite_score": item.composite_score,
    })


def recall_out(recalled: list[Recalled], now: datetime,
               at: PointInTime | None) -> RecallResponse:
    """The recall answer and the point in time facts were read at."""
    return RecallResponse(results=[recall_hit(item, now) for item in recalled], **_point(at))


def context_out(context: Context) -> ContextResponse:
    """The context block with the memories placed in it."""
    items = [ContextItem(memory_type=item.hit.memory_type, id=item.hit.row.id,
                         composite_score=item.composite_score) for item in context.items]
    return ContextResponse(context=context.text, token_budget=context.token_budget,
                           characters=len(context.text), items=items, **_point(context.at))


def run_out(row: Run) -> RunOut:
    """A run as the API shows it (no embedding)."""
    return RunOut.model_validate(row)


def run_message_out(row: RunMessage) -> RunMessageOut:
    """A run message as the API shows it."""
    return RunMessageOut.model_validate(row)


def run_feedback_out(row: RunFeedback) -> RunFeedbackOut:
    """A run's feedback as the API shows it."""
    return RunFeedbackOut.model_validate(row)


def run_detail_out(detail: RunDetail) -> RunDetailOut:
    """A run with its messages and feedback."""
    return RunDetailOut.model_validate({
        **dict(run_out(detail.run)),
        "messages": [run_message_out(row) for row in detail.messages],
        "feedback": [run_feedback_out(row) for row in detail.feedback]})


def run_search_out(found: list[RunFound]) -> RunSearchResponse:
    """Similar runs, each with its best message and its feedback."""
    return RunSearchResponse(results=[RunSearchHit.model_validate({
        **dict(run_out(item.run)), "similarity": item.similarity,
        "matched_message": run_message_out(item.message) if item.message else None,
        "feedback": [run_feedback_out(row) for row in item.feedback]}) for item in found])


def agent_event_out(row: AgentEvent) -> AgentEventOut:
    """A ledger event as the API shows it (no embedding)."""
    return AgentEventOut.model_validate(row)


def event_append_out(appended: Appended) -> EventAppendOut:
    """An appended event and the agents now due a reflection."""
    return EventAppendOut.model_validate({**dict(agent_event_out(appended.event)),
                                          "reflection_due_for": appended.reflection_due_for})


def reflection_out(reflection: Reflection) -> ReflectionOut:
    """A reflection with the events it is based on."""
    return ReflectionOut.model_validate({**dict(agent_event_out(reflection.event)),
                                         "based_on": reflection.based_on})


def agent_context_out(context: AgentContext) -> AgentContextOut:
    """An agent's context block and the events in it."""
    fitted, rows = context.fitted, context.rows
    return AgentContextOut(
        context=fitted.text, token_budget=context.token_budget,
        characters=len(fitted.text),
        recent=[agent_event_out(rows[e.id]) for e in fitted.recent],
        salient=[SalientEventOut.model_validate({
            **dict(agent_event_out(rows[s.event.id])), "relevance": s.relevance,
            "recency": s.recency, "importance": s.importance, "salience": s.salience})
            for s in fitted.salient],
        reflections=[reflection_out(Reflection(rows[e.id], context.based_on.get(e.id, [])))
                     for e in fitted.reflections],
        pending_events=context.memory.pending, reflection_due=context.memory.reflection_due)
def working_memory_out(row: WorkingMemory) -> WorkingMemoryOut:
    """A working memory as the API shows it, with its ETag."""
    return WorkingMemoryOut.model_validate({
        "agent_id": row.agent_id, "session_id": row.session_id,
        "active_context": row.active_context, "scratchpad": row.scratchpad,
        "retrieved_memory_ids": row.retrieved_memory_ids, "decisions": row.decisions,
        "ttl_seconds": row.ttl_seconds, "version": row.version, "etag": etag_of(row),
        "created_at": row.created_at, "updated_at": row.updated_at,
        "expires_at": row.expires_at})


def scratchpad_entry_out(name: str, value: Any) -> ScratchpadEntry:
    """One scratchpad key and its value."""
    return ScratchpadEntry(key=name, value=value)


def procedure_out(row: Procedure) -> ProcedureOut:
    """A procedure as the API shows it (no embedding)."""
    return ProcedureOut.model_validate(row)


def procedure_search_out(mode: str, hits: list[RecordHit]) -> ProcedureSearchResponse:
    """The procedure search answer: each procedure with its scores."""
    return ProcedureSearchResponse(mode=mode, results=[ProcedureHit.model_validate({
        **dict(procedure_out(hit.row)), "similarity": hit.similarity, "rank": hit.keyword_score,
        "rrf_score": hit.rrf_score, "semantic_rank": hit.semantic_rank,
        "keyword_rank": hit.keyword_rank, "fused_score": hit.fused_score,
        "contributions": hit.contributions}) for hit in hits])


def arc_out(row: Arc) -> ArcOut:
    """An arc as the API shows it (no embedding)."""
    return ArcOut.model_validate(row)


def arc_search_out(mode: str, hits: list[RecordHit]) -> ArcSearchResponse:
    """The arc search answer: each arc with its scores."""
    return ArcSearchResponse.model_validate({"mode": mode, "results": [{
        **dict(arc_out(hit.row)), "similarity": hit.similarity, "rank": hit.keyword_score,
        "rrf_score": hit.rrf_score, "semantic_rank": hit.semantic_rank,
        "keyword_rank": hit.keyword_rank, "fused_score": hit.fused_score,
        "contributions": hit.contributions} for hit in hits]})
