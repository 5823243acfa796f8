"""Vectors are stored exactly as the model made them (the column binds them as text)."""

import numpy as np

from app.embedding import get_embedder
from tests.support.factories import store_episode


async def test_stored_vector_equals_the_models_float32_vector(client, sql):
    content = "Melanie painted a lake at sunrise last summer"
    episode = await store_episode(client, content)
    [row] = await sql("SELECT embedding::text AS v FROM episodes WHERE id = :id", id=episode["id"])
    stored = np.array([float(x) for x in row["v"][1:-1].split(",")], dtype=np.float32)
    made = np.array(get_embedder().embed(content), dtype=np.float32)
    assert np.array_equal(stored, made)
