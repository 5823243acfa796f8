"""Search, recall and context requests and responses."""

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from app.core.constants import Fusion, SearchMode
from app.schemas.common import (
    AwareDatetimeIn,
    IsoDatetime,
    Language,
    Name,
    RequestModel,
    ResponseModel,
    UUIDIn,
)
from app.schemas.episodes import EpisodeOut
from app.schemas.facts import FactOut
from app.schemas.filters import FilterIn
from app.schemas.ledger import AgentEventOut
from app.schemas.rules import RuleOut
from app.schemas.runs import RunMessageOut, RunOut

MAX_QUERY_CHARS = 4000
MAX_RESULTS = 100
MAX_NEIGHBOURS = 5
TimeMode = Literal["boost", "filter", "off"]
LIMIT_DESCRIPTION = "Most results; defaults to the configured [retrieval] default_limit (20)."
# Searchable on request only (never by default): task runs, their messages, reflections.
RecordType = Literal["run", "run_message", "reflection"]
SearchType = Literal["episode", "fact", "rule", "run", "run_message", "reflection"]

QueryText = Annotated[
    str,
    Field(
        max_length=MAX_QUERY_CHARS,
        description="Free text. NUL characters are dropped and whitespace collapsed; a query "
        "left empty returns no results. Longer than 4000 characters is a 422.",
    ),
]
Scope = Annotated[
    Name | None,
    Field(
        description="Facts and rules of scope 'global' or this scope, episodes of this "
        "butler; omitted means every scope of the tenant."
    ),
]
MinConfidence = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        description="Facts and rules whose effective (decayed) confidence "
        "is below this are left out; episodes carry no confidence and always pass.",
    ),
]

SEARCH_DESCRIPTION = """
Search episodes, facts and rules of the caller's tenant.

* **semantic**: cosine similarity of the all-MiniLM-L6-v2 embeddings (`similarity` =
  1 - cosine distance), through the HNSW index with pgvector iterative scans so that
  filtered searches still fill `limit`.
* **keyword**: BM25 (k1 1.2, b 0.75) over PostgreSQL's full-text lexemes, each text stemmed
  for its language (the query in its own, in English and word for word), with idf and
  average length from the tenant's own memories. Any query text is safe (no operator syntax
  is interpreted), and a memory needs only some of the query's words, not all. With the
  server setting `ENGRAM_KEYWORD_CONTEXT` (off by default), an episode stored with a
  `session_id` is also found by the words of the turns just before it in its session. `rank`
  reports `ts_rank_cd` of the OR-ed query lexemes; the order is BM25's (`keyword_rank`).
* **hybrid** (default): both lists, fused by `fusion`:
  - `learned` (default): each list is read 30 deep (or `limit`, if larger) and every candidate
    is scored by a small boosted-tree model of its signals (similarity and BM25 score, each
    against the best of the lists; its ranks; its session's best similarity and keyword
    score; its length; whether it lies in the query's time window), trained to tell the
    turns that answer a question from the rest. `fused_score` is that model's probability;
    `contributions` holds each signal's part of it (in logits). With a time window in the
    query or `entities`, that order and the window's episodes or the graph list are fused
    by RRF instead (`contributions`: `learned`, `time`, `graph`). When no two candidates
    share a session (facts or rules alone, notes without sessions), the model has no
    session to read and the lists are fused as `rrf` fuses them.
  - `rrf`: Reciprocal Rank Fusion of the two lists, each `limit` long:
    `rrf_score = 1/(60 + semantic_rank) + 1/(60 + keyword_rank)`, where a memory missing from
    one list counts as rank `limit + 1` there (its rank is reported as null). Ordered by
    `rrf_score` desc, then `semantic_rank` asc.
  - `weighted`: each list's min-max normalised score times its configured weight.

With a reranker configured on the server (`[reranker]`: a cross-encoder or a rerank
endpoint; off by default), the first `top_n` (30) fused results are reordered by its score
before `limit` of them are served; `contributions.reranker` holds that score and `reranker`
in the response says whether it was applied. When it fails or takes longer than its time
budget, the fused order is served. `rerank: false` leaves it out of one search.

Only active facts, rules not forgotten and episodes not expired are searched; every filter is
applied in SQL before the limit. With `as_of` or `known_at`, facts are the versions that held
at `as_of` as Engram believed at `known_at` (each hit shows its `valid_from` and
`valid_until`), and the response names the point in time it applied.
"""

AsOf = Annotated[
    AwareDatetimeIn | None,
    Field(
        description="Valid time: facts are the versions that held at this moment (superseded "
        "ones included), not the active ones. Default: now. Episodes and rules are unaffected."
    ),
]
KnownAt = Annotated[
    AwareDatetimeIn | None,
    Field(
        description="Record time: facts as Engram believed them at this moment (versions stored "
        "later, or given up by then, are left out). Default: now."
    ),
]
ScoredAt = Annotated[
    AwareDatetimeIn | None,
    Field(
        description="The 'now' that recency and effective confidence are computed at (a past "
        "moment to ask what was known then); default: the current time."
    ),
]


class PointInTimeOut(ResponseModel):
    """Which point in time facts were read at."""

    as_of: IsoDatetime | None = Field(
        None,
        description="The valid time facts were read at; null when the request named "
        "neither `as_of` nor `known_at` (active facts).",
    )
    known_at: IsoDatetime | None = Field(
        None, description="The record time facts were read at; null: now."
    )


MAX_GRAPH_ENTITIES = 10
GRAPH_DESCRIPTION = (
    "Entities the query is about (hybrid mode): memories within `graph_hops` links of them "
    "(typed links, provenance links and facts' entity anchors, either way) form one more "
    "ranked list, by graph score = the best path's product of link strengths / its hops. RRF "
    "adds 1/(k + graph rank); learned fusion fuses its order with that list by RRF; weighted "
    "fusion adds `graph_weight` (0.2) * graph score. Each "
    "hit names its path (`graph`) and its `contributions` gain `graph`."
)


class SearchRequest(RequestModel):
    """A search over one or more memory types."""

    query: QueryText
    language: Language | None = Field(
        None,
        description="The query's language, as an ISO 639-1 code (`de`) or a PostgreSQL "
        "text search configuration (`german`); detected when omitted. Keyword search reads "
        "the query in it as well as in English and word for word (docs/search.md).",
    )
    types: list[SearchType] | None = Field(
        None,
        min_length=1,
        max_length=6,
        description="Types to search; by default episode, "
        "fact and rule. run, run_message and reflection (an agent.reflected ledger event) are "
        "searched only when named: each such type ranks its own candidates (cosine distance; "
        "ts_rank_cd of the OR-ed query lexemes for keywords) and the hits are merged with the "
        "memories' by fused score (hybrid) or rank (one-list modes). `scope`, `min_confidence` "
        "and time windows do not apply to them.",
    )
    scope: Scope = None
    mode: SearchMode | None = Field(
        None, description="Defaults to the configured mode (hybrid unless changed)."
    )
    limit: int | None = Field(None, ge=1, le=MAX_RESULTS, description=LIMIT_DESCRIPTION)
    min_confidence: MinConfidence = 0.2
    neighbours: int = Field(
        0,
        ge=0,
        le=MAX_NEIGHBOURS,
        description="Return with each episode hit up to this many "
        "turns stored just before and just after it in the same butler and session.",
    )
    reference_time: AwareDatetimeIn | None = Field(
        None,
        description="The 'now' that relative time expressions in the query are read "
        "against ('yesterday', 'last week'); default: the current time.",
    )
    time_mode: TimeMode = Field(
        "boost",
        description="What a time expression in the query ('in May 2023', 'last "
        "week', '3 days ago') does, read as a window on episodes' `occurred_at`. `boost`: "
        "episodes inside the window rank higher (hybrid mode: a third RRF list, `time_rank`; "
        "one-list modes: they move ahead of the others, keeping their order). `filter`: only "
        "episodes inside it are returned. `off`: the query's words alone. Facts and rules have "
        "no `occurred_at` and are never affected.",
    )
    fusion: Fusion | None = Field(
        None,
        description="Hybrid mode: how the lists are fused. `learned`: deeper lists "
        "ordered by a learned model of each candidate's signals. `rrf`: Reciprocal Rank "
        "Fusion (1/(k + rank) per list). `weighted`: the sum of each list's min-max "
        "normalised score times its configured weight. Default: the configured fusion "
        "(learned).",
    )
    entities: list[UUIDIn] | None = Field(
        None, min_length=1, max_length=MAX_GRAPH_ENTITIES, description=GRAPH_DESCRIPTION
    )
    graph_hops: int = Field(
        2,
        ge=1,
        le=3,
        description="How many links from `entities` a memory may be to get a graph boost.",
    )
    as_of: AsOf = None
    known_at: KnownAt = None
    filter: FilterIn = None
    rerank: bool = Field(
        True,
        description="With a reranker configured on the server: false serves the "
        "fused order without asking it. Without one it changes nothing.",
    )


class GraphPathOut(ResponseModel):
    """Why a memory got a graph boost: its best path from one of the query's entities."""

    entity_id: uuid.UUID = Field(description="The query entity the path starts from.")
    hops: int = Field(description="Links on the path (fact-entity anchors count as links).")
    strength: float = Field(description="Product of the links' strengths along the path.")
    score: float = Field(description="strength / hops: the graph score, in (0, 1].")


class PassageOut(ResponseModel):
    """The part of a memory that matched the query best."""

    kind: Literal["window", "context"] = Field(
        description="`window`: a span of a long content. `context`: the episode read after "
        "the turns stored before it in its session (start and end span the whole content)."
    )
    index: int = Field(description="0-based position of the passage in the memory.")
    start: int = Field(description="Offset of its first character in `content`.")
    end: int = Field(description="Offset just past its last character in `content`.")
    similarity: float = Field(description="1 - cosine distance of the passage to the query.")


class Scores(ResponseModel):
    similarity: float | None = Field(
        None,
        description="1 - cosine distance to the query (null in keyword mode): the "
        "memory's own vector's, or its best passage's when that is higher.",
    )
    passage: PassageOut | None = Field(
        None,
        description="The passage that matched, when it beat the memory's own vector: "
        "a window of content longer than the model reads (about 800 characters; "
        "`content[start:end]` is its text), or an episode in the context of its session.",
    )
    rank: float | None = Field(
        None,
        description="ts_rank_cd of the OR-ed query (null in semantic mode; 0 when no "
        "lexeme matches).",
    )
    rrf_score: float | None = Field(None, description="Hybrid mode with rrf fusion only.")
    fused_score: float | None = Field(
        None,
        description="Hybrid mode only: the score fusion ordered results by (learned, "
        "rrf or weighted fusion); a reranker then reorders them by `contributions.reranker`.",
    )
    graph: GraphPathOut | None = Field(
        None,
        description="With `entities`: the memory's best path from them (null when it "
        "is not within `graph_hops`).",
    )
    contributions: dict[str, float] | None = Field(
        None,
        description="Hybrid mode only: `fused_score` split by signal. rrf and "
        "weighted: `semantic`, `keyword`, `time` (a signal the memory is absent from still "
        "adds its floor in rrf). learned: `base` and each signal's part of the model's "
        "logit (`similarity`, `keyword`, `session_similarity_gap`, ...), or, with a time "
        "window or `entities`, `learned`, `time` and `graph` (RRF parts). With a reranker "
        "applied (any mode), `reranker`: its score, which orders the results it scored; it "
        "is not part of `fused_score`.",
    )
    semantic_rank: int | None = Field(
        None, description="1-based rank in the semantic list; null when absent from it."
    )
    keyword_rank: int | None = Field(
        None, description="1-based rank in the keyword list; null when absent from it."
    )
    time_rank: int | None = Field(
        None,
        description="1-based rank among the episodes inside the query's time window; "
        "null when outside it or when the query has no time expression.",
    )


class EpisodeHit(EpisodeOut, Scores):
    memory_type: Literal["episode"] = "episode"
    neighbours: list[EpisodeOut] = Field(
        default_factory=list,
        description="With `neighbours` > 0: the turns around this one, "
        "in storage order (the hit itself left out).",
    )


class FactHit(FactOut, Scores):
    memory_type: Literal["fact"] = "fact"


class RuleHit(RuleOut, Scores):
    memory_type: Literal["rule"] = "rule"


class RunHit(RunOut, Scores):
    memory_type: Literal["run"] = "run"


class RunMessageHit(RunMessageOut, Scores):
    memory_type: Literal["run_message"] = "run_message"


class ReflectionHit(AgentEventOut, Scores):
    memory_type: Literal["reflection"] = "reflection"


SearchHit = Annotated[
    EpisodeHit | FactHit | RuleHit | RunHit | RunMessageHit | ReflectionHit,
    Field(discriminator="memory_type"),
]


class TimeWindowOut(ResponseModel):
    """The time expression read in the query and the window it became."""

    expression: str = Field(description="The words of the query that gave the window.")
    start: IsoDatetime
    end: IsoDatetime = Field(description="Exclusive.")
    applied_as: TimeMode


RerankerSkip = Literal["timeout", "error", "not_requested", "no_results"]


class RerankerOut(ResponseModel):
    """What the reranker configured on the server did to this search."""

    applied: bool = Field(description="Whether the results are in the reranker's order.")
    reason: RerankerSkip | None = Field(
        None,
        description="Why it was not applied: `timeout` (no answer within its time "
        "budget), `error` (it failed or answered nonsense), `not_requested` (`rerank: "
        "false`), `no_results` (nothing to reorder). The fused order is served then.",
    )
    scored: int = Field(0, description="How many results it scored.")


class SearchResponse(PointInTimeOut):
    mode: SearchMode
    time_window: TimeWindowOut | None = Field(
        None, description="The window read from the query, when there was one."
    )
    reranker: RerankerOut | None = Field(
        None, description="Null when no reranker is configured on the server."
    )
    semantic_skipped: Literal["timeout", "unavailable", "language"] | None = Field(
        None,
        description="Set when the semantic list was left out and the results come from "
        "the keyword list alone (`mode` then says `keyword`): the server's remote embedding "
        "model could not embed the query in time (`timeout`) or at all (`unavailable`), or "
        "a hybrid search's query is in a language the embedding model does not know "
        "(`language`; see the server's `embedding_languages`).",
    )
    results: list[SearchHit]


class RecallRequest(RequestModel):
    """Facts and rules about a topic, ordered by composite score."""

    topic: QueryText
    scope: Scope = None
    limit: int | None = Field(None, ge=1, le=MAX_RESULTS, description=LIMIT_DESCRIPTION)
    min_confidence: MinConfidence = 0.2
    entities: list[UUIDIn] | None = Field(
        None,
        min_length=1,
        max_length=MAX_GRAPH_ENTITIES,
        description=GRAPH_DESCRIPTION + " In recall the graph part of the fused score is left "
        "out of `relevance` and added to `composite_score` as `graph_weight` * graph score.",
    )
    graph_hops: int = Field(
        2,
        ge=1,
        le=3,
        description="How many links from `entities` a memory may be to get a graph boost.",
    )
    reference_time: ScoredAt = None
    as_of: AsOf = None
    known_at: KnownAt = None
    filter: FilterIn = None


class RecallScores(ResponseModel):
    relevance: float = Field(
        description="RRF score rescaled so the best possible candidate "
        "is 1 and the worst possible is 0."
    )
    recency: float = Field(
        description="exp(-ln2/7 * days since the memory's own time: last confirmed, else created)."
    )
    composite_score: float = Field(
        description="relevance, importance/10, recency and "
        "effective confidence weighted by the score weights."
    )


class RecallFactHit(FactHit, RecallScores):
    pass


class RecallRuleHit(RuleHit, RecallScores):
    pass


RecallHit = Annotated[RecallFactHit | RecallRuleHit, Field(discriminator="memory_type")]


def _recall_skipped() -> Any:
    """The `semantic_skipped` field of a recall or context answer."""
    return Field(
        None,
        description="Set when the semantic list was left out and the memories come "
        "from the keyword list alone: the server's remote embedding model could not embed "
        "the topic within `query_embedding_seconds` (`timeout`) or at all (`unavailable`).",
    )


class RecallResponse(PointInTimeOut):
    semantic_skipped: Literal["timeout", "unavailable"] | None = _recall_skipped()
    results: list[RecallHit]


class ContextRequest(RequestModel):
    """Build the memory block injected into an agent's system prompt."""

    trigger_prompt: QueryText
    butler: Name = Field(description="The butler the context is for; used as the scope.")
    token_budget: int | None = Field(
        None,
        ge=10,
        le=100_000,
        description="At most token_budget * 4 characters; defaults to the configured "
        "context_token_budget (3000).",
    )
    reference_time: ScoredAt = None
    as_of: AsOf = None
    known_at: KnownAt = None
    filter: FilterIn = None


class ContextItem(ResponseModel):
    memory_type: Literal["fact", "rule"]
    id: uuid.UUID
    composite_score: float


class ContextResponse(PointInTimeOut):
    context: str
    token_budget: int
    characters: int = Field(description="Length of `context`; never above token_budget * 4.")
    items: list[ContextItem] = Field(description="The memories in the block, in order.")
    semantic_skipped: Literal["timeout", "unavailable"] | None = _recall_skipped()


class RecordScores(ResponseModel):
    """The scores of a procedure or arc search hit."""

    similarity: float | None = Field(description="1 - cosine distance; null in keyword mode.")
    rank: float | None = Field(description="ts_rank_cd of the OR-ed query lexemes.")
    rrf_score: float | None
    semantic_rank: int | None
    keyword_rank: int | None
    fused_score: float | None = Field(
        None, description="Hybrid mode only: the score results are ordered by."
    )
    contributions: dict[str, float] | None = Field(
        None, description="Hybrid mode only: `fused_score` split by signal, as in /v1/search."
    )
