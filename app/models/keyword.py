"""The keyword (BM25) index: postings, and term statistics per tenant and per scope.

Written only by the triggers of revisions mem_010 and mem_021 (in the writer's own
transaction); the application only reads these tables.
"""

import uuid

from sqlalchemy import BigInteger, Float, Integer, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class KeywordPosting(Base):
    """One lexeme of one memory's search_vector: its frequency and BM25 impact."""

    __tablename__ = "keyword_postings"

    memory_type: Mapped[str] = mapped_column(Text, primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    term: Mapped[str] = mapped_column(Text, primary_key=True)
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    scope: Mapped[str] = mapped_column(Text, nullable=False)
    tf: Mapped[int] = mapped_column(Integer, nullable=False)
    doc_len: Mapped[int] = mapped_column(Integer, nullable=False)
    impact: Mapped[float] = mapped_column(Float, nullable=False)


class _TenantKey:
    """The tenant's key column, first (a mixin's columns would follow the table's own)."""

    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True, sort_order=-2)


class _ScopeKey(_TenantKey):
    """The tenant's and then the scope's key columns, first."""

    scope: Mapped[str] = mapped_column(Text, primary_key=True, sort_order=-1)


class _TermFrequency:
    """Columns of a lexeme's document frequency (after the owner's key columns)."""

    term: Mapped[str] = mapped_column(Text, primary_key=True)
    doc_freq: Mapped[int] = mapped_column(Integer, nullable=False)


class _CorpusSize:
    """Columns of a corpus: how many memories are indexed and their total length."""

    doc_count: Mapped[int] = mapped_column(BigInteger, nullable=False)
    total_len: Mapped[int] = mapped_column(BigInteger, nullable=False)


class KeywordTerm(_TenantKey, _TermFrequency, Base):
    """How many of the tenant's memories hold a lexeme (its document frequency)."""

    __tablename__ = "keyword_terms"


class KeywordCorpus(_TenantKey, _CorpusSize, Base):
    """The tenant's count of indexed memories and their total length in lexemes."""

    __tablename__ = "keyword_corpus"


class KeywordScopeCorpus(_ScopeKey, _CorpusSize, Base):
    """One scope's count of indexed memories and their total length."""

    __tablename__ = "keyword_scope_corpus"


class KeywordScopeTerm(_ScopeKey, _TermFrequency, Base):
    """How many of one scope's memories hold a lexeme."""

    __tablename__ = "keyword_scope_terms"
