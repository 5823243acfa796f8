"""The store's embedding columns take the dimension of the embedding model: set on a store
that holds no vector yet, checked against the model on every start."""

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import StartupRefused
from app.core.scope import SYSTEM, scoped_transaction
from app.embedding import Embedder
from app.repositories import embedding_switches as switch_rows
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import reembed as reembed_rows
from app.repositories import vector_columns as vector_rows


async def fit_to_model(sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder) -> int:
    """Give the embedding columns the model's dimension if they hold no vector yet (in one
    transaction); refuse a model of another dimension than the stored vectors', or a store
    switched to a model the process did not load. Returns the number of columns changed."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        await vector_rows.lock(session)
        switch = await switch_rows.switch_row(session)
        embedder = await _serving(session, embedder, switch)
        dimensions = embedder.dimensions
        wanted = vector_rows.column_type(dimensions)
        # Until a switch, the second slot follows the first; since, it is the switch's.
        columns = [
            column
            for column in await vector_rows.vector_columns(session)
            if (column.column == "embedding" or switch is None)
            and (column.type_name, column.dimensions) != (wanted, dimensions)
        ]
        if not columns:
            return 0
        stored = await vector_rows.stored_dimensions(session, columns)
        if stored:
            old = max(stored, key=lambda dims: stored[dims])
            models = await embedding_version_rows.models_with_dimensions(session, old)
            raise StartupRefused(
                refusal(embedder, old_dimensions=old, vectors=sum(stored.values()), models=models)
            )
        await vector_rows.resize(session, columns, dimensions)
    return len(columns)


async def _serving(
    session: AsyncSession, embedder: Embedder, state: switch_rows.SwitchState | None
) -> Embedder:
    """The process's model the store serves: the one a switch made serving, if any."""
    if state is None or state.serving_version_id is None:
        return embedder
    for model in (embedder, embedder.next):
        if (
            model is not None
            and await embedding_version_rows.version_id(session, model) == state.serving_version_id
        ):
            return model
    name = await embedding_version_rows.model_name(session, state.serving_version_id)
    raise StartupRefused(
        f"this store was switched to the embedding model {name!r}; start with it "
        f"(ENGRAM_EMBEDDING_MODEL and the other ENGRAM_EMBEDDING_ settings), or with it as "
        f"ENGRAM_EMBEDDING_NEXT__MODEL"
    )


async def recall_dimensions(
    sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder
) -> None:
    """Tell a remote model the dimension recorded for it, which it takes when the endpoint
    does not answer at load: the service then starts while the endpoint is down."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        for model in (embedder, embedder.next):
            if model is not None and model.remote is not None:
                model.recorded_dimensions = await embedding_version_rows.recorded_dimensions(
                    session, model_name=model.model_name, model_version=model.model_version
                )


def refusal(embedder: Embedder, *, old_dimensions: int, vectors: int, models: list[str]) -> str:
    """What a start with a model of another dimension than the stored vectors' says."""
    made_by = f" (made by {', '.join(repr(m) for m in models)})" if models else ""
    return (
        f"embedding model {embedder.model_name!r} makes {embedder.dimensions}-d vectors, but "
        f"this store holds {vectors} {old_dimensions}-d vectors{made_by}. Start with the "
        f"model that made them (ENGRAM_EMBEDDING_MODEL, ENGRAM_EMBEDDING_BACKEND) and the new "
        f"one as ENGRAM_EMBEDDING_NEXT__MODEL, then run `engram reembed --model "
        f"{embedder.model_name}` to switch the store to it while it serves "
        f"(docs/configuration.md, Switching models)."
    )


async def awaiting_vectors(session: AsyncSession, *, tenant_id: str) -> int:
    """The tenant's episodes, facts and rules (those the transaction may see) that wait for
    their vectors (stored while a remote embedding model failed or was slow)."""
    return await reembed_rows.unembedded_count(session, tenant_id=tenant_id)
