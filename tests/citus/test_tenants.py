"""Two tenants on Engram's store distributed by tenant: each writes, lists, searches in every
mode, recalls and builds context from its own memories, and never reaches the other's."""

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.core.scope import MULTI_SHARD_SETTING, Scope, scoped_transaction
from tests.support.http import post

# Each mode, and hybrid by each fusion.
MODES = (
    {"mode": "semantic"},
    {"mode": "keyword"},
    {"mode": "hybrid", "fusion": "learned"},
    {"mode": "hybrid", "fusion": "rrf"},
    {"mode": "hybrid", "fusion": "weighted"},
)


async def _memories(client: httpx.AsyncClient, name: str) -> dict[str, str]:
    """An episode, a fact and a rule about `name`'s garden, new on each call; their ids."""
    name = f"{name} {uuid.uuid4().hex[:8]}"
    episode = await post(
        client,
        "/v1/episodes",
        content=f"{name}: my tomatoes ripened in the greenhouse",
        butler="chat",
    )
    fact = await post(
        client, "/v1/facts", subject=name, predicate="grows", content=f"{name} grows tomatoes"
    )
    rule = await post(
        client, "/v1/rules", content=f"Ask {name} about the greenhouse tomatoes first", scope="chat"
    )
    return {"episode": episode["id"], "fact": fact["id"], "rule": rule["id"]}


@pytest.mark.parametrize("mode", MODES)
async def test_each_tenant_finds_its_own_memories_in_every_mode(
    citus_tenant_clients: dict[str, httpx.AsyncClient], mode: dict[str, str]
) -> None:
    ann, bob = citus_tenant_clients["ann"], citus_tenant_clients["bob"]
    mine = await _memories(ann, "Ann")
    theirs = await _memories(bob, "Bob")
    for client, own, other in ((ann, mine, theirs), (bob, theirs, mine)):
        response = await client.post(
            "/v1/search",
            json={"query": "greenhouse tomatoes", **mode, "min_confidence": 0, "limit": 50},
        )
        assert response.status_code == 200, response.text
        found = {hit["id"] for hit in response.json()["results"]}
        assert found & set(own.values()), (mode, found)
        assert not found & set(other.values()), mode


async def test_lists_recall_and_context_stay_within_the_tenant(
    citus_tenant_clients: dict[str, httpx.AsyncClient],
) -> None:
    ann, bob = citus_tenant_clients["ann"], citus_tenant_clients["bob"]
    mine = await _memories(ann, "Ann")
    theirs = await _memories(bob, "Bob")
    episodes = await ann.get("/v1/episodes", params={"butler": "chat", "limit": 100})
    assert episodes.status_code == 200, episodes.text
    listed = {item["id"] for item in episodes.json()["items"]}
    assert mine["episode"] in listed and theirs["episode"] not in listed
    recall = await ann.post("/v1/recall", json={"topic": "tomatoes"})
    assert recall.status_code == 200, recall.text
    assert theirs["fact"] not in str(recall.json())
    context = await ann.post(
        "/v1/context", json={"trigger_prompt": "What grows in the greenhouse?", "butler": "chat"}
    )
    assert context.status_code == 200, context.text
    assert "grows tomatoes" in context.json()["context"]
    assert "Bob" not in context.json()["context"]
    for kind, path in (("episode", "episodes"), ("fact", "facts"), ("rule", "rules")):
        probe = await bob.get(f"/v1/{path}/{mine[kind]}")
        assert probe.status_code == 404, (kind, probe.text)


async def test_a_deleted_episode_leaves_its_fact_and_the_keyword_index(
    citus_tenant_clients: dict[str, httpx.AsyncClient],
) -> None:
    ann = citus_tenant_clients["ann"]
    episode = await post(
        ann, "/v1/episodes", content="Ann: the quince tree needs pruning", butler="chat"
    )
    assert (await ann.delete(f"/v1/episodes/{episode['id']}")).status_code == 204
    response = await ann.post(
        "/v1/search", json={"query": "quince pruning", "mode": "keyword", "min_confidence": 0}
    )
    assert response.status_code == 200, response.text
    assert episode["id"] not in {hit["id"] for hit in response.json()["results"]}


async def test_row_level_security_holds_on_every_shard(
    citus_app: Any, citus_tenant_clients: dict[str, httpx.AsyncClient]
) -> None:
    """A statement that names no tenant runs on every shard, and each shard's policies still
    show a tenant only its rows, and a key limited to a butler only that butler's."""
    stored = {}
    for tenant, butler in (("ann", "planner"), ("ann", "critic"), ("bob", "planner")):
        stored[tenant, butler] = await post(
            citus_tenant_clients[tenant], "/v1/episodes", content=f"{butler} note", butler=butler
        )
    stored["ann", "planner 2"] = await post(
        citus_tenant_clients["ann"], "/v1/episodes", content="planner note 2", butler="planner"
    )
    # A link follows the memories at both of its ends (the policy looks them up on the shard).
    for target in ("planner 2", "critic"):
        await post(
            citus_tenant_clients["ann"],
            "/v1/links",
            source_type="episode",
            source_id=stored["ann", "planner"]["id"],
            target_type="episode",
            target_id=stored["ann", target]["id"],
            relation="related_to",
        )
    everywhere = text("SELECT DISTINCT tenant_id, butler FROM episodes")
    for scope in (Scope(tenant_id="ann"), Scope(tenant_id="ann", butlers=("planner",))):
        async with scoped_transaction(citus_app.state.sessionmaker, scope) as session:
            await session.execute(text(f"SET LOCAL {MULTI_SHARD_SETTING} = 'off'"))
            seen = {(row.tenant_id, row.butler) for row in await session.execute(everywhere)}
        assert {tenant for tenant, _ in seen} == {"ann"}, scope
        butlers = {butler for _, butler in seen}
        assert butlers == {"planner"} if scope.butlers else {"planner", "critic"} <= butlers
        async with scoped_transaction(citus_app.state.sessionmaker, scope) as session:
            await session.execute(text(f"SET LOCAL {MULTI_SHARD_SETTING} = 'off'"))
            targets = {
                str(row.target_id)
                for row in await session.execute(
                    text("SELECT target_id FROM memory_links WHERE source_id = :id"),
                    {"id": stored["ann", "planner"]["id"]},
                )
            }
        expected = {"planner 2"} if scope.butlers else {"planner 2", "critic"}
        assert targets == {stored["ann", butler]["id"] for butler in expected}, scope
