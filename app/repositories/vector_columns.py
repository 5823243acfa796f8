"""The schema's embedding columns: their type and dimension as the catalog records them,
whether any holds a vector, and giving them another dimension while none does."""

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# pgvector's HNSW indexes `vector` up to this many dimensions, `halfvec` up to 4,000.
MAX_INDEXED_VECTOR = 2000
# Held by a transaction that checks or changes the columns, so two processes starting at
# once do not both change them.
LOCK_KEY = 0x656D6264  # "embd"


@dataclass(frozen=True)
class VectorColumn:
    """One embedding column: its table, name, type (`vector` or `halfvec`) and dimension."""

    table: str
    column: str
    type_name: str
    dimensions: int


def column_type(dimensions: int) -> str:
    """The type an embedding column of this many dimensions gets: `vector` while HNSW can
    index it, `halfvec` (16-bit floats) past that."""
    return "vector" if dimensions <= MAX_INDEXED_VECTOR else "halfvec"


async def lock(session: AsyncSession) -> None:
    """Wait for any other transaction checking or changing the columns (released at its end)."""
    await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})


async def vector_columns(session: AsyncSession) -> list[VectorColumn]:
    """Every vector or halfvec column of the schema's tables."""
    rows = (
        await session.execute(
            text("""
        SELECT c.relname, a.attname, t.typname, a.atttypmod
          FROM pg_attribute a
          JOIN pg_class c ON c.oid = a.attrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          JOIN pg_type t ON t.oid = a.atttypid
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
           AND t.typname IN ('vector', 'halfvec') AND a.attnum > 0 AND NOT a.attisdropped
         ORDER BY c.relname, a.attname""")
        )
    ).all()
    return [
        VectorColumn(table, column, type_name, int(typmod))
        for table, column, type_name, typmod in rows
    ]


async def stored_dimensions(session: AsyncSession, columns: list[VectorColumn]) -> dict[int, int]:
    """How many vectors of each dimension the columns hold (system scope: every tenant)."""
    if not columns:
        return {}
    counts = " UNION ALL ".join(
        f'SELECT vector_dims("{c.column}"::vector) AS dims FROM "{c.table}" '
        f'WHERE "{c.column}" IS NOT NULL'
        for c in columns
    )
    rows = (
        await session.execute(
            text(f"SELECT dims, count(*) FROM ({counts}) AS stored GROUP BY dims")
        )
    ).all()
    return {int(dims): int(count) for dims, count in rows}


async def resize(session: AsyncSession, columns: list[VectorColumn], dimensions: int) -> None:
    """Give `columns`, which hold no vector, `dimensions` and the type for it, rebuilding
    their indexes with the type's operator class."""
    new_type = column_type(dimensions)
    for column in columns:
        indexes = (
            await session.execute(
                text("""
            SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
              FROM pg_index i
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attname = :column
             WHERE i.indrelid = CAST(:table AS regclass) AND a.attnum = ANY(i.indkey)"""),
                {"table": f'"{column.table}"', "column": column.column},
            )
        ).all()
        for name, _ in indexes:
            await session.execute(text(f"DROP INDEX {name}"))
        await session.execute(
            text(
                f'ALTER TABLE "{column.table}" ALTER COLUMN "{column.column}" '
                f'TYPE {new_type}({dimensions}) USING "{column.column}"::{new_type}({dimensions})'
            )
        )
        for _, definition in indexes:
            await session.execute(text(with_operator_class(definition, new_type)))


def with_operator_class(definition: str, new_type: str) -> str:
    """An index definition with its pgvector operator classes for `new_type`."""
    for old in ("vector", "halfvec"):
        for metric in ("cosine", "l2", "ip"):
            definition = definition.replace(f"{old}_{metric}_ops", f"{new_type}_{metric}_ops")
    return definition
