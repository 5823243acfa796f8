"""`mentions` links from stored memories to the entities whose name or alias they name."""

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# Names are compared by `engram_name_key` (mem_028): lower case, each run of characters that
# are not letters or digits one space. A memory's text, keyed the same way, gives its word
# n-grams of 1 to :max_words words; each memory's n-grams probe the indexed name keys of the
# tenant's live entities (ix_entities_tenant_name_key) and alias keys (ix_entities_alias_keys),
# so the cost follows the text's length, not the number of entities. A match is a whole-word,
# case-insensitive occurrence of the name.
_LINK_MENTIONS = text("""
WITH memory AS MATERIALIZED (
    SELECT m.id, g.grams
    FROM unnest(CAST(:ids AS uuid[]), CAST(:texts AS text[])) AS m(id, body)
    CROSS JOIN LATERAL (
        SELECT array_agg(DISTINCT array_to_string(w.words[i:i + n - 1], ' ')) AS grams
        FROM (SELECT string_to_array(engram_name_key(m.body), ' ') AS words) AS w
        CROSS JOIN LATERAL generate_series(1, cardinality(w.words)) AS i
        CROSS JOIN LATERAL generate_series(1, :max_words) AS n
        WHERE i + n - 1 <= cardinality(w.words)
    ) AS g
    WHERE g.grams IS NOT NULL
), named AS (
    SELECT memory.id AS source_id, e.id AS entity_id, 1 AS how, e.canonical_name
    FROM memory
    JOIN entities AS e
      ON e.tenant_id = :tenant_id AND e.merged_into_id IS NULL
     AND engram_name_key(e.canonical_name) = ANY (memory.grams)
    UNION ALL
    SELECT memory.id, e.id, 2, e.canonical_name
    FROM memory
    JOIN entities AS e
      ON e.tenant_id = :tenant_id AND e.merged_into_id IS NULL
     AND engram_name_keys(e.aliases) && memory.grams
)
INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, target_id, relation,
                          strength, reasoning, created_by)
SELECT DISTINCT ON (source_id, entity_id)
       :tenant_id, :source_type, source_id, 'entity', entity_id, 'mentions', 1.0,
       CASE how WHEN 1 THEN 'names ' ELSE 'names an alias of ' END || canonical_name,
       :created_by
FROM named
ORDER BY source_id, entity_id, how
ON CONFLICT DO NOTHING
""")


async def link_mentions(session: AsyncSession, *, tenant_id: str, source_type: str,
                        ids: Sequence[uuid.UUID], texts: Sequence[str], max_words: int,
                        created_by: str) -> int:
    """Link each memory (`ids[i]`, whose text is `texts[i]`) `mentions` to every live entity
    of the tenant whose name or an alias of at most `max_words` words it names; the number
    of links added."""
    if not ids:
        return 0
    result = await session.execute(_LINK_MENTIONS, {
        "tenant_id": tenant_id, "source_type": source_type, "ids": list(ids),
        "texts": list(texts), "max_words": max_words, "created_by": created_by})
    return int(result.rowcount)  # type: ignore[attr-defined]
