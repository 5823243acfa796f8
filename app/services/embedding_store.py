"""The store's embedding columns take the dimension of the embedding model: set on a store
that holds no vector yet, checked against the model on every start."""

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.embedding import Embedder
from app.errors import StartupRefused
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import reembed as reembed_rows
from app.repositories import vector_columns as vector_rows
from app.scope import SYSTEM, scoped_transaction


async def fit_to_model(sessionmaker: async_sessionmaker[AsyncSession],
                       embedder: Embedder) -> int:
    """Give the embedding columns the model's dimension if they hold no vector yet (in one
    transaction); refuse a model of another dimension than the stored vectors'. Returns the
    number of columns changed."""
    dimensions = embedder.dimensions
    wanted = vector_rows.column_type(dimensions)
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        await vector_rows.lock(session)
        columns = [column for column in await vector_rows.vector_columns(session)
                   if (column.type_name, column.dimensions) != (wanted, dimensions)]
        if not columns:
            return 0
        stored = await vector_rows.stored_dimensions(session, columns)
        if stored:
            old = max(stored, key=lambda dims: stored[dims])
            models = await embedding_version_rows.models_with_dimensions(session, old)
            raise StartupRefused(refusal(embedder, old_dimensions=old,
                                         vectors=sum(stored.values()), models=models))
        await vector_rows.resize(session, columns, dimensions)
    return len(columns)


async def recall_dimensions(sessionmaker: async_sessionmaker[AsyncSession],
                            embedder: Embedder) -> None:
    """Tell a remote model the dimension recorded for it, which it takes when the endpoint
    does not answer at load: the service then starts while the endpoint is down."""
    if embedder.remote is None:
        return
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        embedder.recorded_dimensions = await embedding_version_rows.recorded_dimensions(
            session, model_name=embedder.model_name, model_version=embedder.model_version)


def refusal(embedder: Embedder, *, old_dimensions: int, vectors: int,
            models: list[str]) -> str:
    """What a start with a model of another dimension than the stored vectors' says."""
    made_by = f" (made by {', '.join(repr(m) for m in models)})" if models else ""
    return (
        f"embedding model {embedder.model_name!r} makes {embedder.dimensions}-d vectors, but "
        f"this store holds {vectors} {old_dimensions}-d vectors{made_by}. Start with the "
        f"model that made them (ENGRAM_EMBEDDING_MODEL, ENGRAM_EMBEDDING_BACKEND), or move the "
        f"memories to the new model: export each tenant (GET /v1/export) while the old model "
        f"runs, start the new model on an empty database, and import the exports "
        f"(POST /v1/import), which embeds them with the new model."
    )


async def awaiting_vectors(session: AsyncSession) -> int:
    """Episodes, facts and rules the transaction's tenant may see that wait for their vectors
    (stored while a remote embedding model failed or was slow)."""
    return await reembed_rows.unembedded_count(session)
