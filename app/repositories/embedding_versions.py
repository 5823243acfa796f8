"""embedding_versions: which model made the stored vectors."""

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import EmbeddingVersion


async def ensure_version(session: AsyncSession, *, model_name: str, model_version: str,
                         dimensions: int) -> tuple[int, bool]:
    """The id of this model's row, inserting it the first time the model is used, and
    whether the row was committed before (False when this transaction inserted it)."""
    inserted = (await session.execute(
        insert(EmbeddingVersion)
        .values(model_name=model_name, model_version=model_version, dimensions=dimensions)
        .on_conflict_do_nothing()
        .returning(EmbeddingVersion.id)
    )).scalar_one_or_none()
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
    stmt = (select(EmbeddingVersion.model_name)
            .where(EmbeddingVersion.dimensions == dimensions)
            .group_by(EmbeddingVersion.model_name)
            .order_by(func.max(EmbeddingVersion.id).desc()))
    return list((await session.execute(stmt)).scalars())


async def recorded_dimensions(session: AsyncSession, *, model_name: str,
                              model_version: str) -> int | None:
    """The dimension recorded for this model's vectors, if it has made any here."""
    stmt = (select(EmbeddingVersion.dimensions)
            .where(EmbeddingVersion.model_name == model_name,
                   EmbeddingVersion.model_version == model_version)
            .order_by(EmbeddingVersion.id.desc()).limit(1))
    return (await session.execute(stmt)).scalar_one_or_none()
