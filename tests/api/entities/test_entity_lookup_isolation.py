"""Entity name lookups under row-level security: another tenant's names cannot be probed
through an error raised on its rows, and substring lookups still use an index."""

from sqlalchemy import text

from app.core.scope import Scope, scoped_transaction
from app.repositories import entities as entity_rows
from tests.support.factories import create_entity


async def test_a_malformed_like_pattern_tells_nothing_of_another_tenants_names(app, tenant_client):
    other = await tenant_client("other")
    await create_entity(other, "Zorro Quixotic")
    await create_entity(await tenant_client("prober"), "Ann")
    # Raised only on a row whose name reaches the trailing escape, if such a row is read.
    probe = text(
        r"SELECT count(*) FROM entities "
        r"WHERE lower(canonical_name) LIKE '%zorro quixoti\'"
    )

    async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="prober")) as session:
        assert (await session.execute(probe)).scalar_one() == 0


async def test_a_substring_lookup_uses_the_trigram_indexes(app, sql):
    await sql(
        "INSERT INTO entities (id, tenant_id, canonical_name, entity_type) "
        "SELECT gen_random_uuid(), 'default', format('Person %s Quixote', "
        "lpad(i::text, 4, '0')), 'person' FROM generate_series(1, 3000) AS i"
    )
    await sql("ANALYZE entities")
    async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="default")) as session:
        await entity_rows.prepare_search(session, fuzzy_threshold=0.3)
        plan = "\n".join(
            (
                await session.execute(
                    text("EXPLAIN " + entity_rows._NAME_TIERS_SQL.text),
                    {
                        "tenant_id": "default",
                        "name": "n 0170 quix",
                        "escaped": "n 0170 quix",
                        "entity_type": None,
                        "cap": 10,
                    },
                )
            ).scalars()
        )
        found = await entity_rows.find_by_name(
            session, tenant_id="default", name="n 0170 quix", entity_type=None, cap=10
        )
    assert "ix_entities_name_trigrams" in plan, plan
    assert [row.canonical_name for row in found] == ["Person 0170 Quixote"]
