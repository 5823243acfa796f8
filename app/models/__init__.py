"""SQLAlchemy tables. The schema itself is built by the Alembic revisions, never create_all."""

from app.models.arcs import Arc
from app.models.audit import EmbeddingVersion, MemoryEvent, RuleApplication
from app.models.base import EMBEDDING_DIMENSIONS, Base
from app.models.entity import Entity
from app.models.jobs import Job, Worker
from app.models.keyword import KeywordCorpus, KeywordPosting, KeywordTerm
from app.models.memory import Episode, Fact, MemoryLink, Rule
from app.models.procedures import Procedure
from app.models.working_memory import WorkingMemory

__all__ = [
    "Arc",
    "EMBEDDING_DIMENSIONS",
    "Base",
    "EmbeddingVersion",
    "Entity",
    "Episode",
    "Fact",
    "Job",
    "KeywordCorpus",
    "KeywordPosting",
    "KeywordTerm",
    "MemoryEvent",
    "MemoryLink",
    "Procedure",
    "Rule",
    "RuleApplication",
    "Worker",
    "WorkingMemory",
]
