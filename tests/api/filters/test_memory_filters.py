"""`filter` on search, recall, context and the memory lists: applied in the database before
ranking and paging, so the results are the best ones the filter admits."""

import json
from typing import Any

import httpx
import pytest

from app.repositories.search import candidates
from tests.support.http import post
from tests.support.mcp import error_text, ok

TEA = "Ann drinks green tea every morning"


async def tea_episodes(client: httpx.AsyncClient) -> dict[str, list[str]]:
    """Forty close matches tagged `common` and three weaker ones tagged `rare`."""
    items = [
        {"content": f"{TEA} ({n})", "butler": "chat", "metadata": {"topic": "common"}}
        for n in range(40)
    ]
    items += [
        {
            "content": f"Ann once mentioned tea at the office ({n})",
            "butler": "chat",
            "metadata": {"topic": "rare", "year": 2020 + n},
        }
        for n in range(3)
    ]
    response = await client.post("/v1/episodes/batch", json={"items": items})
    assert response.status_code == 201, response.text
    stored = response.json()["items"]
    return {"common": [e["id"] for e in stored[:40]], "rare": [e["id"] for e in stored[40:]]}


async def search(client: httpx.AsyncClient, **body: Any) -> list[dict[str, Any]]:
    response = await client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


@pytest.mark.parametrize("exact_below", [5000, 0], ids=["exact", "index-walk"])
@pytest.mark.parametrize(
    ("mode", "fusion"),
    [
        ("hybrid", "learned"),
        ("hybrid", "rrf"),
        ("hybrid", "weighted"),
        ("semantic", None),
        ("keyword", None),
    ],
)
async def test_a_selective_filter_still_fills_the_limit_with_what_it_admits(
    client: httpx.AsyncClient,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    fusion: str | None,
    exact_below: int,
) -> None:
    """Whether the admitted vectors are ranked exactly or found by walking the HNSW index
    past the rows the filter refuses."""
    monkeypatch.setattr(settings.retrieval, "filter_exact_below", exact_below)
    made = await tea_episodes(client)
    body: dict[str, Any] = {
        "query": "Ann tea",
        "mode": mode,
        "limit": 3,
        "filter": {"metadata.topic": "rare"},
    }
    if fusion:
        body["fusion"] = fusion
    found = await search(client, **body)
    assert sorted(hit["id"] for hit in found) == sorted(made["rare"])
    narrower = await search(
        client, **{**body, "filter": {"metadata.topic": "rare", "metadata.year": {"$gte": 2021}}}
    )
    assert sorted(hit["id"] for hit in narrower) == sorted(made["rare"][1:])


async def test_a_reused_statement_answers_with_this_requests_filter_values(
    client: httpx.AsyncClient,
) -> None:
    made = await tea_episodes(client)
    for topic in ("rare", "common", "rare"):
        found = await search(
            client, query="Ann tea", limit=50, filter={"metadata.topic": {"$eq": topic}}
        )
        assert {hit["id"] for hit in found} == set(made[topic])


async def test_filters_reach_facts_and_rules_by_their_own_fields(client: httpx.AsyncClient) -> None:
    work = await post(
        client,
        "/v1/facts",
        subject="Ann",
        predicate="drink",
        content="Ann drinks green tea",
        tags=["work"],
        importance=8,
    )
    home = await post(
        client,
        "/v1/facts",
        subject="Bob",
        predicate="drink",
        content="Bob drinks green tea",
        tags=["home"],
        importance=3,
    )
    rule = await post(client, "/v1/rules", content="Offer green tea", tags=["work"])
    await post(client, "/v1/episodes", butler="chat", content="we drank green tea")
    assert {h["id"] for h in await search(client, query="green tea", filter={"tags": "work"})} == {
        work["id"],
        rule["id"],
    }
    assert [
        h["id"]
        for h in await search(
            client, query="green tea", filter={"memory_type": "fact", "importance": {"$lt": 5}}
        )
    ] == [home["id"]]
    assert {
        h["id"]
        for h in await search(
            client,
            query="green tea",
            filter={
                "$or": [{"subject": "Ann"}, {"$not": {"memory_type": {"$in": ["fact", "episode"]}}}]
            },
        )
    } == {work["id"], rule["id"]}


async def test_a_time_window_and_a_filter_both_apply(client: httpx.AsyncClient) -> None:
    items = [
        {
            "content": f"Ann drank green tea ({topic})",
            "butler": "chat",
            "occurred_at": when,
            "metadata": {"topic": topic},
        }
        for topic, when in [
            ("a", "2023-05-10T10:00:00Z"),
            ("b", "2023-05-11T10:00:00Z"),
            ("b", "2023-08-11T10:00:00Z"),
        ]
    ]
    stored = (await post(client, "/v1/episodes/batch", items=items))["items"]
    found = await search(
        client, query="green tea in May 2023", time_mode="filter", filter={"metadata.topic": "b"}
    )
    assert [hit["id"] for hit in found] == [stored[1]["id"]]


async def test_recall_and_context_keep_only_what_the_filter_admits(
    client: httpx.AsyncClient,
) -> None:
    kept = await post(
        client,
        "/v1/facts",
        subject="Ann",
        predicate="drink",
        content="Ann drinks green tea",
        metadata={"source": "crm"},
    )
    await post(
        client,
        "/v1/facts",
        subject="Ann",
        predicate="snack",
        content="Ann eats green tea biscuits",
        metadata={"source": "chat"},
    )
    response = await client.post(
        "/v1/recall", json={"topic": "Ann green tea", "filter": {"metadata.source": "crm"}}
    )
    assert response.status_code == 200, response.text
    assert [hit["id"] for hit in response.json()["results"]] == [kept["id"]]
    response = await client.post(
        "/v1/context",
        json={
            "trigger_prompt": "What does Ann like with tea?",
            "butler": "chat",
            "filter": {"metadata.source": {"$ne": "chat"}},
        },
    )
    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()["items"]] == [kept["id"]]
    assert "biscuits" not in response.json()["context"]


async def test_lists_filter_before_paging(client: httpx.AsyncClient) -> None:
    made = await tea_episodes(client)
    wanted = json.dumps({"metadata.topic": "rare"})
    seen: list[str] = []
    cursor = None
    while True:
        params = {"filter": wanted, "limit": 2, **({"cursor": cursor} if cursor else {})}
        response = await client.get("/v1/episodes", params=params)
        assert response.status_code == 200, response.text
        seen += [item["id"] for item in response.json()["items"]]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(made["rare"])
    fact = await post(
        client, "/v1/facts", subject="Ann", predicate="city", content="Lyon", tags=["home"]
    )
    await post(client, "/v1/facts", subject="Bob", predicate="city", content="Oslo")
    rule = await post(client, "/v1/rules", content="Be brief", metadata={"team": "ops"})
    await post(client, "/v1/rules", content="Be kind")
    facts = await client.get("/v1/facts", params={"filter": '{"tags": {"$contains": "home"}}'})
    rules = await client.get("/v1/rules", params={"filter": '{"metadata.team": {"$exists": true}}'})
    assert [item["id"] for item in facts.json()["items"]] == [fact["id"]]
    assert [item["id"] for item in rules.json()["items"]] == [rule["id"]]


@pytest.mark.parametrize(
    ("path", "body", "params"),
    [
        ("/v1/search", {"query": "tea", "filter": {"importance": {"$gt": "high"}}}, None),
        ("/v1/recall", {"topic": "tea", "filter": {"$or": []}}, None),
        ("/v1/context", {"trigger_prompt": "tea", "butler": "chat", "filter": {"x": 1}}, None),
        ("/v1/episodes", None, {"filter": '{"metadata.a": {"$near": 1}}'}),
        ("/v1/facts", None, {"filter": "{not json"}),
    ],
)
async def test_a_bad_filter_is_a_422_naming_the_field(
    client: httpx.AsyncClient, path: str, body: Any, params: Any
) -> None:
    response = (
        await client.post(path, json=body)
        if body is not None
        else await client.get(path, params=params)
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    errors = response.json()["errors"]
    assert any(
        error["field"].endswith("filter") and "filter" in error["message"] for error in errors
    ), errors


async def test_a_filter_with_run_types_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/search",
        json={"query": "tea", "types": ["episode", "run"], "filter": {"butler": "chat"}},
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "filter"


async def test_mcp_search_recall_and_context_take_a_filter(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        crm = ok(
            await client.call_tool(
                "memory_store_fact",
                {
                    "subject": "Ann",
                    "predicate": "drink",
                    "content": "Ann drinks green tea",
                    "tags": ["crm"],
                },
            )
        )
        await client.call_tool(
            "memory_store_fact",
            {
                "subject": "Ann",
                "predicate": "snack",
                "content": "Ann eats green tea biscuits",
                "tags": ["chat"],
            },
        )
        wanted = {"tags": "crm"}
        found = ok(
            await client.call_tool("memory_search", {"query": "green tea", "filter": wanted})
        )
        recalled = ok(
            await client.call_tool("memory_recall", {"topic": "green tea", "filter": wanted})
        )
        context = ok(
            await client.call_tool(
                "memory_context",
                {"trigger_prompt": "green tea", "butler": "chat", "filter": wanted},
            )
        )
        refused = error_text(
            await client.call_tool(
                "memory_search",
                {"query": "green tea", "filter": {"metadata.source": {"$like": "c%"}}},
            )
        )
        listed = ok(await client.call_tool("memory_list_facts", {"filter": wanted}))
        refused_list = error_text(
            await client.call_tool("memory_list_facts", {"filter": {"tags": {"$gt": "a"}}})
        )
    assert [item["id"] for item in listed["items"]] == [crm["id"]]
    assert "filter.tags.$gt" in refused_list
    assert [hit["id"] for hit in found["results"]] == [crm["id"]]
    assert [hit["id"] for hit in recalled["results"]] == [crm["id"]]
    assert [item["id"] for item in context["items"]] == [crm["id"]]
    assert "filter.metadata.source.$like" in refused


async def test_a_repeated_filter_is_counted_once_and_answers_the_same(
    client: httpx.AsyncClient, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings.retrieval, "filter_exact_below", 4)
    made = await tea_episodes(client)
    counted: list[list[str]] = []
    count = candidates.admitted_counts

    async def counting(session: Any, types: Any, **kwargs: Any) -> dict[str, int]:
        counted.append(list(types))
        return await count(session, types, **kwargs)

    monkeypatch.setattr(candidates, "admitted_counts", counting)
    body = {
        "query": "Ann tea",
        "types": ["episode", "fact"],
        "limit": 3,
        "filter": {"metadata.topic": "common"},
    }
    first, second = await search(client, **body), await search(client, **body)
    assert counted == [["episode", "fact"]]
    assert [hit["id"] for hit in first] == [hit["id"] for hit in second]
    assert {hit["id"] for hit in first} <= set(made["common"])
    rare = {**body, "filter": {"metadata.topic": "rare"}}
    found = [await search(client, **rare) for _ in range(2)]
    assert counted[1:] == [["episode", "fact"]]  # other values: counted afresh, once
    assert sorted(hit["id"] for hit in found[0]) == sorted(made["rare"])
    assert found[0] == found[1]


@pytest.mark.parametrize("mode", ["keyword", "semantic"])
async def test_ranking_the_admitted_memories_exactly_orders_them_as_the_index_walk_does(
    client: httpx.AsyncClient, settings: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    items = [
        {
            "content": f"Ann {'drinks ' * (n % 4)}tea with {n} friends",
            "butler": "chat",
            "metadata": {"n": n},
        }
        for n in range(30)
    ]
    await post(client, "/v1/episodes/batch", items=items)
    body = {
        "query": "Ann drinks tea",
        "mode": mode,
        "limit": 8,
        "filter": {"metadata.n": {"$lt": 12}},
    }
    orders = []
    for exact_below in (5000, 0):
        monkeypatch.setattr(settings.retrieval, "filter_exact_below", exact_below)
        found = await search(client, **body)
        orders.append([(hit["id"], round(hit["rank"] or hit["similarity"], 5)) for hit in found])
    assert orders[0] == orders[1]
    assert len(orders[0]) == 8
