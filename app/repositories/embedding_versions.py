"""embedding_versions: which model made the stored vectors."""

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.embedding import Embedder
from app.models import EmbeddingVersion

# embedding_versions ids by (database URL, model name, model version, dimensions): each
# process looks a model's row up once per database. Only committed rows are kept: a row
# this request inserts is invisible to the others until it commits, and gone if it rolls
# back.
_version_ids: dict[tuple[str, str, str, int], int] = {}


async def version_id(session: AsyncSession, embedder: Embedder) -> int:
    """The id of the model's row, inserted the first time the model is used."""
    found = await known_version_id(session, embedder)
    if found is not None:
        return found
    found, committed = await ensure_version(
        session,
        model_name=embedder.model_name,
        model_version=embedder.model_version,
        dimensions=embedder.dimensions,
    )
    if committed:
        _version_ids[_key(session, embedder)] = found
    return found


async def known_version_id(session: AsyncSession, embedder: Embedder) -> int | None:
    """The id of the model's row if the store has one (read only)."""
    key = _key(session, embedder)
    if key in _version_ids:
        return _version_ids[key]
    # A row this transaction inserted (created at its start time) is not kept: it is gone
    # if the transaction rolls back.
    stmt = select(EmbeddingVersion.id, EmbeddingVersion.created_at < func.now()).where(
        EmbeddingVersion.model_name == embedder.model_name,
        EmbeddingVersion.model_version == embedder.model_version,
        EmbeddingVersion.dimensions == embedder.dimensions,
    )
    row = (await session.execute(stmt)).one_or_none()
    if row is None:
        return None
    if row[1]:
        _version_ids[key] = row[0]
    return int(row[0])


def _key(session: AsyncSession, embedder: Embedder) -> tuple[str, str, str, int]:
    bind = session.bind
    engine = bind if isinstance(bind, AsyncEngine) or bind is None else bind.engine
    return (
        str(engine.url) if engine is not None else "",
        embedder.model_name,
        embedder.model_version,
        embedder.dimensions,
    )


async def model_name(session: AsyncSession, row_id: int) -> str | None:
    """The model name of an embedding_versions row."""
    return (
        await session.execute(
            select(EmbeddingVersion.model_name).where(EmbeddingVersion.id == row_id)
        )
    ).scalar_one_or_none()


async def ensure_version(
    session: AsyncSession, *, model_name: str, model_version: str, dimensions: int
) -> tuple[int, bool]:
    """The id of this model's row, inserting it the first time the model is used, and
    whether the row was committed before (False when this transaction inserted it)."""
    inserted = (
        await session.execute(
            insert(EmbeddingVersion)
            .values(model_name=model_name, model_version=model_version, dimensions=dimensions)
            .on_conflict_do_nothing()
            .returning(EmbeddingVersion.id)
        )
    ).scalar_one_or_none()
    if inserted is not None:
        return inserted, False
    stmt = select(EmbeddingVersion.id).where(
        EmbeddingVersion.model_name == model_name,
        EmbeddingVersion.model_version == model_version,
        EmbeddingVersion.dimensions == dimensions,
    )
    return (await session.execute(stmt)).scalar_one(), True


async def models_with_dimensions(session: AsyncSession, dimensions: int) -> list[str]:
    """The names of the models recorded as making vectors of `dimensions`, newest first."""
    stmt = (
        select(EmbeddingVersion.model_name)
        .where(EmbeddingVersion.dimensions == dimensions)
        .group_by(EmbeddingVersion.model_name)
        .order_by(func.max(EmbeddingVersion.id).desc())
    )
    return list((await session.execute(stmt)).scalars())


async def recorded_dimensions(
    session: AsyncSession, *, model_name: str, model_version: str
) -> int | None:
    """The dimension recorded for this model's vectors, if it has made any here."""
    stmt = (
        select(EmbeddingVersion.dimensions)
        .where(
            EmbeddingVersion.model_name == model_name,
            EmbeddingVersion.model_version == model_version,
        )
        .order_by(EmbeddingVersion.id.desc())
        .limit(1)
    )
    return (await session.execute(stmt)).scalar_one_or_none()
