"""Who searches and with what, handed whole to the read path's entry points."""

from dataclasses import dataclass

from app.core.config import RetrievalSettings
from app.embedding import Embedder


@dataclass(frozen=True)
class Searcher:
    """The tenant that searches, the model its query is embedded by, and the retrieval
    settings."""

    tenant_id: str
    embedder: Embedder
    retrieval: RetrievalSettings
