"""`mentions` links from stored memories to the entities whose name or alias they name."""

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# Names are compared by `engram_name_key` (mem_028): lower case, each run of characters that
# are not letters or digits one space. A memory's text is keyed the same way, once, into
# words. Its words probe the GIN index of the first words of the live entities' name and
# alias keys (ix_entities_name_heads) once: the candidates. For memories with a candidate,
# the word n-grams of 1 to :max_words words tell which candidates it names, a whole-word,
# case-insensitive occurrence of the name or an alias. The cost follows the text's length,
# not the number of entities.
_LINK_MENTIONS = text("""
WITH texts AS MATERIALIZED (
    SELECT m.id, string_to_array(engram_name_key(m.body), ' ') AS words
    FROM unnest(CAST(:ids AS uuid[]), CAST(:texts AS text[])) AS m(id, body)
), candidates AS MATERIALIZED (
    SELECT t.id, t.words, e.id AS entity_id, e.canonical_name, e.aliases
    FROM texts AS t
    JOIN entities AS e
      ON engram_entity_heads(e.canonical_name, e.aliases) && t.words
     AND e.merged_into_id IS NULL AND e.tenant_id = :tenant_id
), memory AS MATERIALIZED (
    SELECT t.id, g.grams
    FROM (SELECT DISTINCT id, words FROM candidates) AS t
    CROSS JOIN LATERAL (
        SELECT array_agg(array_to_string(w.following[1:n], ' ')) AS grams
        FROM (SELECT array_agg(u.word) OVER (
                  ORDER BY u.i ROWS BETWEEN CURRENT ROW AND CAST(:max_words AS integer) - 1
                  FOLLOWING) AS following
              FROM unnest(t.words) WITH ORDINALITY AS u(word, i)) AS w
        CROSS JOIN generate_series(1, cardinality(w.following)) AS n
    ) AS g
)
INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, target_id, relation,
                          strength, reasoning, created_by)
SELECT :tenant_id, :source_type, c.id, 'entity', c.entity_id, 'mentions', 1.0,
       CASE WHEN engram_name_key(c.canonical_name) = ANY (memory.grams) THEN 'names '
            ELSE 'names an alias of ' END || c.canonical_name,
       :created_by
FROM candidates AS c
JOIN memory ON memory.id = c.id
WHERE engram_entity_keys(c.canonical_name, c.aliases) && memory.grams
ON CONFLICT DO NOTHING
""")


async def link_mentions(
    session: AsyncSession,
    *,
    tenant_id: str,
    source_type: str,
    ids: Sequence[uuid.UUID],
    texts: Sequence[str],
    max_words: int,
    created_by: str,
) -> int:
    """Link each memory (`ids[i]`, whose text is `texts[i]`) `mentions` to every live entity
    of the tenant whose name or an alias of at most `max_words` words it names; the number
    of links added."""
    if not ids:
        return 0
    result = await session.execute(
        _LINK_MENTIONS,
        {
            "tenant_id": tenant_id,
            "source_type": source_type,
            "ids": list(ids),
            "texts": list(texts),
            "max_words": max_words,
            "created_by": created_by,
        },
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
