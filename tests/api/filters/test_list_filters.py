"""`filter` on the lists of entities, runs, procedures, arcs and links: each list takes its own
fields, applies the filter before paging and refuses a field it does not have."""

import json
from typing import Any

import httpx
import pytest

from tests.support.http import post
from tests.support.mcp import error_text, ok

STEPS = [{"step": 1, "action": "run_tests"}]


async def every_page(
    client: httpx.AsyncClient, path: str, raw: dict[str, Any], **params: Any
) -> list[str]:
    """The ids of every page of `path` under the filter, two per page."""
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        query = {
            "filter": json.dumps(raw),
            "limit": 2,
            **params,
            **({"cursor": cursor} if cursor else {}),
        }
        response = await client.get(path, params=query)
        assert response.status_code == 200, response.text
        assert len(response.json()["items"]) <= 2
        seen += [item["id"] for item in response.json()["items"]]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return seen
    raise AssertionError("the pages did not end")


async def test_entities_filter_by_metadata_aliases_and_type_across_pages(
    client: httpx.AsyncClient,
) -> None:
    search_team = [
        await post(
            client,
            "/v1/entities",
            canonical_name=f"Search {n}",
            entity_type="person",
            aliases=[f"s{n}", "searcher"],
            metadata={"team": "search", "level": n},
        )
        for n in range(5)
    ]
    await post(
        client,
        "/v1/entities",
        canonical_name="Ops",
        entity_type="person",
        metadata={"team": "ops", "level": 9},
    )
    await post(
        client,
        "/v1/entities",
        canonical_name="Acme",
        entity_type="organization",
        aliases=["searcher"],
        metadata={"team": "search"},
    )
    wanted = {"metadata.team": "search", "metadata.level": {"$gte": 1}}
    found = await every_page(client, "/v1/entities", wanted)
    assert sorted(found) == sorted(e["id"] for e in search_team[1:])
    by_alias = await every_page(
        client, "/v1/entities", {"aliases": "searcher"}, entity_type="person"
    )
    assert sorted(by_alias) == sorted(e["id"] for e in search_team)
    named = await every_page(
        client, "/v1/entities", {"$or": [{"canonical_name": "Ops"}, {"aliases": "s3"}]}
    )
    assert len(named) == 2 and search_team[3]["id"] in named


async def test_runs_filter_by_meta_score_and_times_across_pages(client: httpx.AsyncClient) -> None:
    runs = [
        await post(
            client,
            "/v1/runs",
            task_id="triage",
            score_numeric=n / 10,
            agent_version="v2" if n % 2 else "v1",
            started_at=f"2024-05-0{n + 1}T00:00:00Z",
            meta={"model": "small" if n < 4 else "large"},
        )
        for n in range(6)
    ]
    low = await every_page(
        client, "/v1/runs", {"score_numeric": {"$lt": 0.35}, "metadata.model": "small"}
    )
    assert sorted(low) == sorted(r["id"] for r in runs[:4])
    later_v2 = await every_page(
        client,
        "/v1/runs",
        {"started_at": {"$gte": "2024-05-03T00:00:00Z"}, "agent_version": "v2"},
        task_id="triage",
    )
    assert sorted(later_v2) == sorted(runs[n]["id"] for n in (3, 5))
    unfinished = await every_page(
        client, "/v1/runs", {"finished_at": {"$exists": False}, "metadata.model": {"$ne": "small"}}
    )
    assert sorted(unfinished) == sorted(r["id"] for r in runs[4:])


async def test_procedures_filter_by_counters_and_names_across_pages(
    client: httpx.AsyncClient,
) -> None:
    made = [
        await post(
            client,
            "/v1/procedures",
            agent_id="ops" if n < 4 else "dev",
            name=f"deploy {n}",
            steps=STEPS,
            status="active",
        )
        for n in range(6)
    ]
    for item in made[:3]:
        response = await client.post(
            f"/v1/procedures/{item['id']}/executions", json={"success": True}
        )
        assert response.status_code == 200, response.text
    executed = await every_page(
        client, "/v1/procedures", {"execution_count": {"$gte": 1}, "success_rate": {"$gte": 0.5}}
    )
    assert sorted(executed) == sorted(p["id"] for p in made[:3])
    never = await every_page(
        client,
        "/v1/procedures",
        {"last_executed_at": {"$exists": False}, "name": {"$contains": "deploy"}},
        agent_id="ops",
    )
    assert never == [made[3]["id"]]


async def test_arcs_filter_by_scope_times_and_status_across_pages(
    client: httpx.AsyncClient,
) -> None:
    made = [
        await post(
            client,
            "/v1/arcs",
            title=f"Incident {n}",
            arc_type="incident",
            scope="ops" if n % 2 else "chat",
            started_at=f"2024-06-0{n + 1}T00:00:00Z",
        )
        for n in range(6)
    ]
    await post(client, "/v1/arcs", title="Launch", arc_type="campaign", scope="ops", status="draft")
    june_ops = await every_page(
        client,
        "/v1/arcs",
        {
            "scope": "ops",
            "started_at": {"$lt": "2024-06-06T00:00:00Z"},
            "title": {"$contains": "Incident"},
        },
    )
    assert sorted(june_ops) == sorted(made[n]["id"] for n in (1, 3))
    not_chat = await every_page(client, "/v1/arcs", {"$not": {"scope": "chat"}}, status="active")
    assert sorted(not_chat) == sorted(made[n]["id"] for n in (1, 3, 5))


async def test_links_of_a_memory_filter_by_strength_and_maker_across_pages(
    client: httpx.AsyncClient,
) -> None:
    ann = await post(client, "/v1/entities", canonical_name="Ann", entity_type="person")
    known = [
        await post(client, "/v1/entities", canonical_name=f"Friend {n}", entity_type="person")
        for n in range(6)
    ]
    made = [
        await post(
            client,
            "/v1/links",
            source_type="entity",
            source_id=ann["id"],
            target_type="entity",
            target_id=friend["id"],
            relation="knows",
            strength=(n + 1) / 6,
            created_by="crm" if n % 2 else "chat",
        )
        for n, friend in enumerate(known)
    ]
    strong_crm = await every_page(
        client,
        "/v1/links",
        {"strength": {"$gte": 0.5}, "created_by": "crm"},
        memory_type="entity",
        memory_id=ann["id"],
        direction="outgoing",
    )
    assert sorted(strong_crm) == sorted(made[n]["id"] for n in (3, 5))
    refused = await client.get(
        "/v1/links",
        params={"memory_type": "entity", "memory_id": ann["id"], "filter": '{"metadata.x": 1}'},
    )
    assert refused.status_code == 422
    assert "unknown field 'metadata.x' for links" in refused.json()["errors"][0]["message"]


@pytest.mark.parametrize(
    ("path", "raw", "named"),
    [
        ("/v1/entities", {"metadata.level": {"$gt": True}}, "filter.metadata.level.$gt"),
        ("/v1/runs", {"score_numeric": {"$gte": "high"}}, "filter.score_numeric.$gte"),
        (
            "/v1/procedures",
            {"$or": [{"status": "active"}, {"updated_at": {"$lt": "soon"}}]},
            "filter.$or[1].updated_at.$lt",
        ),
        ("/v1/arcs", {"started_at": {"$between": 1}}, "filter.started_at.$between"),
    ],
)
async def test_a_bad_filter_on_a_list_is_a_422_naming_the_path_and_operator(
    client: httpx.AsyncClient, path: str, raw: Any, named: str
) -> None:
    response = await client.get(path, params={"filter": json.dumps(raw)})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    [error] = response.json()["errors"]
    assert error["field"] == "query.filter"
    assert error["message"].startswith(named + ":"), error


@pytest.mark.parametrize(
    ("path", "raw", "field", "takes"),
    [
        ("/v1/entities", {"butler": "chat"}, "butler", "metadata.<key>, entity_type"),
        ("/v1/runs", {"success": True}, "success", "metadata.<key>, task_id"),
        ("/v1/procedures", {"metadata.team": "ops"}, "metadata.team", "agent_id, name, status"),
        ("/v1/arcs", {"$and": [{"importance": {"$gt": 3}}]}, "importance", "scope, arc_type"),
    ],
)
async def test_a_field_the_list_lacks_is_a_422_naming_it_and_the_fields_it_takes(
    client: httpx.AsyncClient, path: str, raw: Any, field: str, takes: str
) -> None:
    response = await client.get(path, params={"filter": json.dumps(raw)})
    assert response.status_code == 422, response.text
    [error] = response.json()["errors"]
    assert f"unknown field '{field}'" in error["message"], error
    assert f"this list takes {takes}" in error["message"], error


async def test_a_butler_limited_key_lists_only_its_butlers_arcs_under_a_filter(
    client: httpx.AsyncClient, limited_client: Any
) -> None:
    mine = await post(client, "/v1/arcs", title="Mine", arc_type="incident", scope="chat")
    await post(client, "/v1/arcs", title="Theirs", arc_type="incident", scope="ops")
    chat = await limited_client("default", ["chat"])
    response = await chat.get("/v1/arcs", params={"filter": '{"arc_type": "incident"}'})
    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()["items"]] == [mine["id"]]


async def test_mcp_list_tools_take_each_lists_filter(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        entity = ok(
            await client.call_tool(
                "entity_create",
                {"canonical_name": "Ann", "entity_type": "person", "metadata": {"team": "crm"}},
            )
        )
        ok(
            await client.call_tool(
                "entity_create",
                {"canonical_name": "Bob", "entity_type": "person", "metadata": {"team": "ops"}},
            )
        )
        run = ok(
            await client.call_tool("run_create", {"task_id": "triage", "meta": {"model": "small"}})
        )
        ok(await client.call_tool("run_create", {"task_id": "triage", "meta": {"model": "large"}}))
        procedure = ok(
            await client.call_tool(
                "procedure_store", {"agent_id": "ops", "name": "deploy", "steps": STEPS}
            )
        )
        ok(
            await client.call_tool(
                "procedure_store", {"agent_id": "dev", "name": "deploy", "steps": STEPS}
            )
        )
        arc = ok(await client.call_tool("arc_create", {"title": "Outage", "arc_type": "incident"}))
        ok(await client.call_tool("arc_create", {"title": "Launch", "arc_type": "campaign"}))
        entities = ok(
            await client.call_tool("entity_list", {"filter": {"metadata.team": "crm"}, "limit": 1})
        )
        runs = ok(await client.call_tool("run_list", {"filter": {"metadata.model": "small"}}))
        procedures = ok(
            await client.call_tool(
                "procedure_list", {"filter": {"agent_id": {"$in": ["ops", "qa"]}}}
            )
        )
        arcs = ok(await client.call_tool("arc_list", {"filter": {"arc_type": "incident"}}))
        unknown = error_text(await client.call_tool("arc_list", {"filter": {"tags": "a"}}))
        ok(
            await client.call_tool(
                "link_create",
                {
                    "source_type": "entity",
                    "source_id": entity["id"],
                    "target_type": "arc",
                    "target_id": arc["id"],
                    "relation": "related_to",
                    "strength": 0.2,
                },
            )
        )
        link = ok(
            await client.call_tool(
                "link_create",
                {
                    "source_type": "entity",
                    "source_id": entity["id"],
                    "target_type": "run",
                    "target_id": run["id"],
                    "relation": "related_to",
                    "strength": 0.9,
                },
            )
        )
        links = ok(
            await client.call_tool(
                "link_list",
                {
                    "memory_type": "entity",
                    "memory_id": entity["id"],
                    "filter": {"strength": {"$gt": 0.5}, "target_type": "run"},
                },
            )
        )
        malformed = error_text(
            await client.call_tool("run_list", {"filter": {"started_at": {"$gt": 3}}})
        )
    assert [item["id"] for item in entities["items"]] == [entity["id"]]
    assert entities["next_cursor"] is None
    assert [item["id"] for item in runs["items"]] == [run["id"]]
    assert [item["id"] for item in procedures["items"]] == [procedure["id"]]
    assert [item["id"] for item in arcs["items"]] == [arc["id"]]
    assert "filter.tags: unknown field 'tags' for arcs" in unknown
    assert [item["id"] for item in links["items"]] == [link["id"]]
    assert "filter.started_at.$gt" in malformed
