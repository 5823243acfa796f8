"""SQLAlchemy tables. The schema itself is built by the Alembic revisions, never create_all."""

from app.models.arcs import Arc
from app.models.base import Base
from app.models.console_sessions import ConsoleSession
from app.models.embedding_failures import EmbeddingBacklogLease, EmbeddingFailure
from app.models.embedding_versions import EmbeddingVersion
from app.models.entities import Entity
from app.models.episodes import Episode
from app.models.events import MemoryEvent
from app.models.fact_periods import FactPeriod
from app.models.facts import Fact
from app.models.jobs import Job, Worker
from app.models.keyword import (
    KeywordCorpus,
    KeywordPosting,
    KeywordScopeCorpus,
    KeywordScopeTerm,
    KeywordTerm,
)
from app.models.ledger import AgentEvent, ReflectionConsolidation
from app.models.links import MemoryLink
from app.models.passages import Passage
from app.models.pii import PiiSalt
from app.models.procedures import Procedure
from app.models.rules import Rule, RuleApplication
from app.models.runs import Run, RunFeedback, RunMessage
from app.models.working_memory import WorkingMemory

__all__ = [
    "Arc",
    "AgentEvent",
    "ReflectionConsolidation",
    "Base",
    "ConsoleSession",
    "EmbeddingBacklogLease",
    "EmbeddingFailure",
    "EmbeddingVersion",
    "Entity",
    "Episode",
    "Fact",
    "FactPeriod",
    "Job",
    "KeywordCorpus",
    "KeywordPosting",
    "KeywordScopeCorpus",
    "KeywordScopeTerm",
    "KeywordTerm",
    "MemoryEvent",
    "MemoryLink",
    "Passage",
    "PiiSalt",
    "Procedure",
    "Rule",
    "RuleApplication",
    "Run",
    "RunFeedback",
    "RunMessage",
    "Worker",
    "WorkingMemory",
]
