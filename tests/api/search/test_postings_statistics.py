"""The planner's statistics of the keyword postings are refreshed once a memory type they do
not know of has many postings (the rescoring otherwise reads all of them per pooled memory)."""

from app.repositories.planner_statistics import MIN_POSTINGS
from app.services.planner_statistics import refresh_postings_statistics
from tests.support.factories import store_episode, store_fact


async def _known_types(sql):
    [row] = await sql(
        "SELECT CAST(CAST(most_common_vals AS text) AS text[]) AS types FROM pg_stats"
        " WHERE tablename = 'keyword_postings' AND attname = 'memory_type'"
    )
    return set(row["types"])


async def test_facts_written_after_the_last_analyse_are_made_known_to_the_planner(
    client, sql, db_engine
):
    for number in range(20):
        await store_episode(client, f"apple orchard harvest note {number}")
    await sql("ANALYZE keyword_postings")
    for number in range(30):
        await store_fact(client, "Ann", f"p{number}", f"grows apple trees in orchard {number}")
    [row] = await sql("SELECT count(*) AS n FROM keyword_postings WHERE memory_type = 'fact'")
    assert 100 <= row["n"] < MIN_POSTINGS
    assert await _known_types(sql) == {"episode"}

    # Too few fact postings to be worth an ANALYZE by default: nothing is done.
    assert await refresh_postings_statistics(db_engine) == []
    assert await _known_types(sql) == {"episode"}

    assert await refresh_postings_statistics(db_engine, min_postings=100) == ["fact"]
    assert await _known_types(sql) == {"episode", "fact"}
    # Known now: the next check leaves the table alone.
    assert await refresh_postings_statistics(db_engine, min_postings=100) == []
