"""The planner's statistics of the keyword postings: the memory types they know nothing of.

The postings of every memory type share one table. Once it is large, autovacuum analyses it
only after a tenth of it has changed, so postings of a type written after the last ANALYZE
(the first facts of a store that held only episodes) can stay unknown to the planner for
long. It then takes them for none at all, and the keyword leg's rescoring reads every posting
of that type once per pooled memory instead of probing its primary key (seconds, not
milliseconds, at 100,000 episodes).
"""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.repositories.memories import MODELS

# A type is worth an ANALYZE from this many postings on, and from enough that ANALYZE's
# sample (300 rows per unit of statistics target, 30,000 by default) meets it about 10 times:
# a type rarer than that may be missing again afterwards.
MIN_POSTINGS = 1_000
SAMPLE_SHARE = 1 / 3_000

_UNKNOWN_TYPES = text(
    """
    SELECT t.memory_type
    FROM unnest(CAST(:types AS text[])) AS t(memory_type)
    JOIN pg_stats AS s
      ON s.schemaname = current_schema()
     AND s.tablename = 'keyword_postings'
     AND s.attname = 'memory_type'
    CROSS JOIN LATERAL (
        SELECT greatest(:min_postings, ceil(c.reltuples * :share))::bigint AS enough
        FROM pg_class AS c
        WHERE c.oid = to_regclass('keyword_postings')
    ) AS needed
    WHERE t.memory_type <> ALL (
            coalesce(CAST(CAST(s.most_common_vals AS text) AS text[]), '{}')
          )
      AND (
            SELECT count(*)
            FROM (
                SELECT 1 FROM keyword_postings AS p
                WHERE p.memory_type = t.memory_type
                LIMIT needed.enough
            ) AS held
          ) >= needed.enough
    """
)


async def unknown_posting_types(
    connection: AsyncConnection, *, min_postings: int = MIN_POSTINGS
) -> list[str]:
    """The memory types with many postings that the table's statistics do not list (none
    where the table was never analysed: the planner then guesses no type to be absent)."""
    rows = await connection.execute(
        _UNKNOWN_TYPES,
        {"types": list(MODELS), "min_postings": min_postings, "share": SAMPLE_SHARE},
    )
    return [row.memory_type for row in rows]


async def analyse_postings(connection: AsyncConnection) -> None:
    """ANALYZE the keyword postings (as the table's owner)."""
    await connection.execute(text("ANALYZE keyword_postings"))
