"""engram_client's `list_page` against a live server: every list with its filter, paged."""

from typing import Any

import pytest

from engram_client import AsyncEngramClient, EngramClient, EngramError


async def test_list_page_filters_every_list_and_pages(live_url: str, api_key_for: Any) -> None:
    key = await api_key_for("lists")
    with EngramClient(live_url, api_key=key) as engram:
        made = [
            engram.request(
                "POST",
                "/v1/runs",
                json={"task_id": "triage", "meta": {"model": "small" if n < 3 else "large"}},
            )
            for n in range(5)
        ]
        first = engram.list_page(
            "runs", filter={"metadata.model": "small"}, limit=2, task_id="triage"
        )
        second = engram.list_page(
            "runs",
            filter={"metadata.model": "small"},
            limit=2,
            task_id="triage",
            cursor=first["next_cursor"],
        )
        kept = engram.request("POST", "/v1/rules", json={"content": "Be brief", "tags": ["style"]})
        engram.request("POST", "/v1/rules", json={"content": "Be kind"})
        rules = engram.list_page("rules", filter={"tags": "style"})
        strong = engram.request(
            "POST",
            "/v1/links",
            json={
                "source_type": "run",
                "source_id": made[0]["id"],
                "target_type": "run",
                "target_id": made[1]["id"],
                "relation": "related_to",
                "strength": 0.9,
            },
        )
        engram.request(
            "POST",
            "/v1/links",
            json={
                "source_type": "run",
                "source_id": made[0]["id"],
                "target_type": "run",
                "target_id": made[2]["id"],
                "relation": "related_to",
                "strength": 0.1,
            },
        )
        links = engram.list_page(
            "links", filter={"strength": {"$gt": 0.5}}, memory_type="run", memory_id=made[0]["id"]
        )
        with pytest.raises(EngramError) as refused:
            engram.list_page("procedures", filter={"metadata.x": 1})
        with pytest.raises(ValueError, match="unknown list"):
            engram.list_page("secrets")
    assert second["next_cursor"] is None
    assert sorted(run["id"] for run in first["items"] + second["items"]) == sorted(
        run["id"] for run in made[:3]
    )
    assert [rule["id"] for rule in rules["items"]] == [kept["id"]]
    assert [link["id"] for link in links["items"]] == [strong["id"]]
    assert refused.value.status == 422
    assert "unknown field 'metadata.x' for procedures" in str(refused.value)
    async with AsyncEngramClient(live_url, api_key=key) as engram_async:
        arc = await engram_async.request(
            "POST", "/v1/arcs", json={"title": "Outage", "arc_type": "incident", "scope": "ops"}
        )
        await engram_async.request(
            "POST", "/v1/arcs", json={"title": "Launch", "arc_type": "campaign", "scope": "ops"}
        )
        arcs = await engram_async.list_page("arcs", filter={"arc_type": "incident"}, scope="ops")
    assert [item["id"] for item in arcs["items"]] == [arc["id"]]
