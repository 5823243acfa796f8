"""The layered memory over MCP, through the SDK's own client against a live server: working
memory, procedures, arcs, links and the graph, listings, and the run and ledger additions.
Each group stores through its tools and reads back through tools and REST."""

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from mcp import Client

from app.core.config import Settings
from app.mcp.aliases import OLD_NAMES
from app.worker import worker
from tests.support.jobs import job_context
from tests.support.mcp import error_text, ok

TenantClient = Callable[[str], Awaitable[httpx.AsyncClient]]
WM = {"agent_id": "planner", "session_id": "chat-42"}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's JSON answer; the call must succeed."""
    return ok(await client.call_tool(tool, arguments))


async def test_working_memory_tools_set_patch_and_clear_a_session(
    mcp_as: Any,
    tenant_client: TenantClient,
) -> None:
    memory_id = str(uuid.uuid4())
    async with mcp_as("acme") as client:
        created = await call(
            client,
            "working_memory_set",
            **WM,
            create_only=True,
            active_context={"project": "trip", "goals": ["book"]},
            retrieved_memory_ids=[memory_id],
            decisions=["fly"],
        )
        taken = error_text(
            await client.call_tool("working_memory_set", {**WM, "create_only": True})
        )
        patched = await call(
            client,
            "working_memory_patch",
            **WM,
            patch={"active_context": {"goals": None, "city": "Oslo"}},
        )
        stale = error_text(
            await client.call_tool(
                "working_memory_patch",
                {**WM, "patch": {"decisions": []}, "if_match": created["etag"]},
            )
        )
        short = error_text(
            await client.call_tool("working_memory_patch", {**WM, "patch": {"ttl_seconds": 5}})
        )
        noted = await call(
            client,
            "scratchpad_set",
            **WM,
            key="budget",
            value={"eur": 900},
            if_match=patched["etag"],
        )
        await call(client, "scratchpad_set", **WM, key="empty", value=None)
        entry = await call(client, "scratchpad_get", **WM, key="budget")
        unset = await call(client, "scratchpad_get", **WM, key="empty")
        read = await call(client, "working_memory_get", **WM)
        without = await call(client, "scratchpad_delete", **WM, key="budget")
        gone_key = error_text(await client.call_tool("scratchpad_get", {**WM, "key": "budget"}))
        rest = await tenant_client("acme")
        over_rest = (await rest.get("/v1/working-memory/planner/chat-42")).json()
        cleared = await call(client, "working_memory_clear", **WM)
        gone = error_text(await client.call_tool("working_memory_get", WM))
    assert (
        created["version"],
        created["active_context"],
        created["decisions"],
        created["retrieved_memory_ids"],
    ) == (1, {"project": "trip", "goals": ["book"]}, ["fly"], [memory_id])
    assert "Precondition failed (create_only)" in taken, taken
    assert patched["active_context"] == {"project": "trip", "city": "Oslo"}
    assert patched["decisions"] == ["fly"] and patched["version"] == 2
    assert "Precondition failed (if_match)" in stale, stale
    assert "(patch.ttl_seconds)" in short, short
    assert noted["scratchpad"] == {"budget": {"eur": 900}}
    assert entry == {"key": "budget", "value": {"eur": 900}}
    assert unset == {"key": "empty", "value": None}
    assert read["scratchpad"] == {"budget": {"eur": 900}, "empty": None}
    assert without["scratchpad"] == {"empty": None}
    assert "not found" in gone_key.lower()
    assert over_rest["etag"] == without["etag"]
    assert over_rest["scratchpad"] == without["scratchpad"]
    assert cleared == {"agent_id": "planner", "session_id": "chat-42", "deleted": True}
    assert "not found" in gone.lower()


STEPS = [
    {"step": 1, "action": "search_flights", "params_template": {"to": "{city}"}},
    {"step": 2, "action": "book_cheapest"},
]


async def test_procedure_tools_store_search_count_and_version(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        episode = await call(
            client, "memory_store_episode", content="Booked Oslo flights", butler="planner"
        )
        stored = await call(
            client,
            "procedure_store",
            agent_id="planner",
            name="book a flight",
            description="Book the cheapest flight",
            steps=STEPS,
            preconditions={"has": "dates"},
            learned_from=[{"memory_type": "episode", "memory_id": episode["id"]}],
        )
        twice = error_text(
            await client.call_tool(
                "procedure_store", {"agent_id": "planner", "name": "book a flight", "steps": STEPS}
            )
        )
        found = await call(client, "procedure_search", query="book a cheap flight")
        await call(
            client,
            "procedure_record_execution",
            procedure_id=stored["id"],
            success=True,
            duration_ms=1000,
        )
        await call(
            client,
            "procedure_record_execution",
            procedure_id=stored["id"],
            success=False,
            duration_ms=3000,
        )
        counted = await call(client, "procedure_get", procedure_id=stored["id"])
        active = await call(
            client, "procedure_set_status", procedure_id=stored["id"], status="active"
        )
        second = await call(
            client,
            "procedure_new_version",
            procedure_id=stored["id"],
            steps=[*STEPS, {"step": 3, "action": "email_ticket"}],
        )
        versions = await call(client, "procedure_versions", procedure_id=second["id"])
        old_run = error_text(
            await client.call_tool(
                "procedure_record_execution", {"procedure_id": stored["id"], "success": True}
            )
        )
        current = await call(client, "procedure_list", agent_id="planner")
        every = await call(
            client, "procedure_list", agent_id="planner", include_superseded=True, limit=1
        )
        rest_of = await call(
            client,
            "procedure_list",
            agent_id="planner",
            include_superseded=True,
            limit=1,
            cursor=every["next_cursor"],
        )
        links = await call(
            client,
            "link_list",
            memory_type="episode",
            memory_id=episode["id"],
            direction="incoming",
        )
    assert (stored["version"], stored["status"], [s["action"] for s in stored["steps"]]) == (
        1,
        "draft",
        ["search_flights", "book_cheapest"],
    )
    assert "conflict" in twice.lower()
    assert found["results"][0]["id"] == stored["id"]
    assert (
        counted["execution_count"],
        counted["success_count"],
        counted["success_rate"],
        counted["avg_duration_ms"],
    ) == (2, 1, 0.5, 2000.0)
    assert active["status"] == "active"
    assert (second["version"], second["status"], second["description"]) == (
        2,
        "active",
        "Book the cheapest flight",
    )
    assert [(v["version"], v["status"], v["superseded_by"]) for v in versions["versions"]] == [
        (1, "deprecated", second["id"]),
        (2, "active", None),
    ]
    assert "conflict" in old_run.lower()
    assert [item["id"] for item in current["items"]] == [second["id"]]
    assert [item["id"] for item in every["items"] + rest_of["items"]] == [
        second["id"],
        stored["id"],
    ]
    assert [(link["source_type"], link["relation"]) for link in links["items"]] == [
        ("procedure", "derived_from"),
        ("procedure", "derived_from"),
    ]


async def test_arc_tools_follow_a_story_from_start_to_close(
    mcp_as: Any,
    app: Any,
    settings: Settings,
) -> None:
    async with mcp_as("acme") as client:
        entity = await call(
            client, "entity_create", canonical_name="River Trust", entity_type="organization"
        )
        first = await call(
            client, "memory_store_episode", content="Drafted the grant", butler="writer"
        )
        second = await call(
            client, "memory_store_episode", content="Sent the grant", butler="writer"
        )
        arc = await call(
            client,
            "arc_create",
            title="River grant application",
            arc_type="grant_process",
            entity_ids=[entity["id"]],
            started_at="2026-03-01T09:00:00Z",
            key_events=[
                {"memory_type": "episode", "memory_id": first["id"], "description": "draft"}
            ],
        )
        extended = await call(
            client,
            "arc_add_event",
            arc_id=arc["id"],
            memory_type="episode",
            memory_id=second["id"],
            description="sent",
        )
        renamed = await call(
            client, "arc_update", arc_id=arc["id"], summary="Applying to the River Trust"
        )
        closed = await call(
            client,
            "arc_close",
            arc_id=arc["id"],
            outcome="Funded in full",
            lessons=["Send the budget table early"],
        )
        late = error_text(
            await client.call_tool(
                "arc_add_event",
                {"arc_id": arc["id"], "memory_type": "episode", "memory_id": first["id"]},
            )
        )
        read = await call(client, "arc_get", arc_id=arc["id"])
        found = await call(client, "arc_search", query="budget table early")
        listed = await call(client, "arc_list", status="completed")
        for stamp in ("2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z"):
            await call(
                client,
                "memory_store_episodes",
                items=[{"content": f"turn at {stamp}", "butler": "planner", "occurred_at": stamp}],
            )
        job = await call(client, "arc_propose", scope="planner")
        await worker.drain(job_context(app, settings))
        done = await call(client, "job_get", job_id=job["id"])
        drafts = await call(client, "arc_list", scope="planner", status="draft")
    assert (arc["status"], arc["entity_ids"], arc["started_at"]) == (
        "active",
        [entity["id"]],
        "2026-03-01T09:00:00+00:00",
    )
    assert [e["memory_id"] for e in extended["key_events"]] == [first["id"], second["id"]]
    assert renamed["summary"] == "Applying to the River Trust"
    assert (closed["status"], closed["outcome"], closed["lessons"]) == (
        "completed",
        "Funded in full",
        ["Send the budget table early"],
    )
    assert closed["ended_at"] is not None
    assert "conflict" in late.lower()
    assert read == closed
    assert found["results"][0]["id"] == arc["id"]
    assert [item["id"] for item in listed["items"]] == [arc["id"]]
    assert (job["kind"], job["params"]) == ("arc_boundaries", {"scope": "planner"})
    assert done["status"] == "succeeded", done
    [draft] = drafts["items"]
    assert len(draft["key_events"]) == 2


async def test_link_and_graph_tools_connect_and_walk_memories(
    mcp_as: Any,
    tenant_client: TenantClient,
) -> None:
    async with mcp_as("acme") as client:
        ann = await call(client, "entity_create", canonical_name="Ann", entity_type="person")
        job = await call(
            client,
            "memory_store_fact",
            subject="Ann",
            predicate="works at",
            content="Ann works at Acme",
            entity_id=ann["id"],
        )
        badge = await call(
            client, "memory_store_episode", content="She wore an Acme badge", butler="reception"
        )
        link = await call(
            client,
            "link_create",
            source_type="episode",
            source_id=badge["id"],
            target_type="fact",
            target_id=job["id"],
            relation="supports",
            strength=0.8,
        )
        again = await call(
            client,
            "link_create",
            source_type="episode",
            source_id=badge["id"],
            target_type="fact",
            target_id=job["id"],
            relation="supports",
            strength=0.8,
        )
        incoming = await call(
            client,
            "link_list",
            memory_type="fact",
            memory_id=job["id"],
            direction="incoming",
            relation="supports",
        )
        graph = await call(
            client, "graph_neighbourhood", node_type="entity", node_id=ann["id"], hops=2
        )
        near = await call(
            client,
            "graph_neighbourhood",
            node_type="entity",
            node_id=ann["id"],
            hops=2,
            relations=["about"],
        )
        rest = await tenant_client("acme")
        over_rest = (await rest.get(f"/v1/graph/entity/{ann['id']}", params={"hops": 2})).json()
        deleted = await call(
            client,
            "link_delete",
            source_type="episode",
            source_id=badge["id"],
            target_type="fact",
            target_id=job["id"],
        )
        after = await call(
            client, "link_list", memory_type="fact", memory_id=job["id"], relation="supports"
        )
        twice = error_text(
            await client.call_tool(
                "link_delete",
                {
                    "source_type": "episode",
                    "source_id": badge["id"],
                    "target_type": "fact",
                    "target_id": job["id"],
                },
            )
        )
    assert (link["relation"], link["strength"]) == ("supports", 0.8)
    assert again == link
    assert incoming["items"] == [link]
    nodes = {(node["type"], node["id"]): node["hop"] for node in graph["nodes"]}
    assert nodes[("entity", ann["id"])] == 0
    assert nodes[("fact", job["id"])] == 1
    assert nodes[("episode", badge["id"])] == 2
    assert ("episode", badge["id"]) not in {(n["type"], n["id"]) for n in near["nodes"]}
    assert graph == over_rest
    assert deleted["deleted"] is True
    assert after["items"] == []
    assert "not found" in twice.lower()


async def test_listing_tools_page_through_what_was_stored(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        batch = await call(
            client,
            "memory_store_episodes",
            items=[
                {"content": f"turn {n}", "butler": "chat", "session_id": "s1"} for n in range(3)
            ],
        )
        await call(
            client, "memory_store_episode", content="elsewhere", butler="chat", session_id="s2"
        )
        page = await call(client, "memory_list_episodes", session_id="s1", limit=2)
        rest_of = await call(
            client, "memory_list_episodes", session_id="s1", limit=2, cursor=page["next_cursor"]
        )
        ann = await call(client, "entity_create", canonical_name="Ann", entity_type="person")
        await call(client, "entity_create", canonical_name="Bob", entity_type="person")
        old = await call(
            client,
            "memory_store_fact",
            subject="Ann",
            predicate="city",
            content="Ann lives in Oslo",
            entity_id=ann["id"],
        )
        new = await call(
            client,
            "memory_store_fact",
            subject="Ann",
            predicate="city",
            content="Ann lives in Bergen",
            entity_id=ann["id"],
        )
        await call(
            client,
            "memory_store_fact",
            subject="Bob",
            predicate="city",
            content="Bob lives in Rome",
        )
        ann_facts = await call(client, "memory_list_facts", subject="Ann")
        superseded = await call(client, "memory_list_facts", subject="Ann", validity="superseded")
        history = await call(client, "memory_fact_history", fact_id=old["id"])
        anchored = await call(client, "entity_facts", entity_id=ann["id"])
        people = await call(client, "entity_list", entity_type="person", name="an")
        rule = await call(
            client, "memory_store_rule", content="Always reply in French", scope="support"
        )
        for reason in ("user speaks German", "confused the user", "wrong language"):
            await call(client, "memory_mark_harmful", rule_id=rule["id"], reason=reason)
        inverted = await call(client, "memory_invert_rule", rule_id=rule["id"])
        anti = await call(client, "memory_list_rules", maturity="anti_pattern")
        in_scope = await call(client, "memory_list_rules", scope="support")
    assert [item["content"] for item in batch["items"]] == ["turn 0", "turn 1", "turn 2"]
    listed = page["items"] + rest_of["items"]
    assert sorted(item["id"] for item in listed) == sorted(item["id"] for item in batch["items"])
    assert len(page["items"]) == 2 and rest_of["next_cursor"] is None
    assert [item["id"] for item in ann_facts["items"]] == [new["id"]]
    assert [item["id"] for item in superseded["items"]] == [old["id"]]
    assert [item["id"] for item in history["versions"]] == [new["id"], old["id"]]
    assert [item["id"] for item in anchored["items"]] == [new["id"]]
    assert [item["canonical_name"] for item in people["items"]] == ["Ann"]
    assert inverted["content"].startswith("ANTI-PATTERN: Do NOT Always reply in French")
    assert [item["id"] for item in anti["items"]] == [rule["id"]]
    assert [item["id"] for item in in_scope["items"]] == [rule["id"]]


async def test_run_and_ledger_listings_and_lessons(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        failed = await call(client, "run_create", task_id="deploy")
        await call(client, "run_finish", run_id=failed["id"], success=False)
        await call(
            client,
            "run_add_feedback",
            run_id=failed["id"],
            source="critic",
            rating=0.1,
            rationale="Run the migrations before the deploy",
        )
        passed = await call(client, "run_create", task_id="deploy")
        await call(client, "run_finish", run_id=passed["id"], success=True)
        failures = await call(client, "run_list", task_id="deploy", success=False)
        lessons = await call(client, "run_learn_lessons", scope="ops")
        none_left = await call(client, "run_learn_lessons", scope="ops")
        learned = await call(
            client, "memory_get", memory_type="rule", memory_id=lessons["rule_ids"][0]
        )
        spoke = await call(
            client,
            "agent_event_append",
            ledger_name="game",
            agent_id="ann",
            kind="agent.spoke",
            content="I saw a key",
            turn=1,
        )
        await call(
            client,
            "agent_event_append",
            ledger_name="game",
            agent_id="bob",
            kind="world.observed",
            content="The door is locked",
            turn=1,
        )
        anns = await call(client, "agent_event_list", ledger_name="game", agent_id="ann")
        every = await call(client, "agent_event_list", ledger_name="game")
        belief = await call(
            client,
            "agent_reflect",
            ledger_name="game",
            agent_id="ann",
            belief="The key opens the door",
            based_on=[spoke["id"]],
        )
        reflections = await call(client, "agent_reflection_list", ledger_name="game")
    assert [item["id"] for item in failures["items"]] == [failed["id"]]
    assert lessons["rules_created"] == 1 and none_left["rules_created"] == 0
    assert learned["content"] == "When doing task deploy: Run the migrations before the deploy"
    assert learned["scope"] == "ops"
    assert [item["id"] for item in anns["items"]] == [spoke["id"]]
    assert [item["agent_id"] for item in every["items"]] == ["bob", "ann"]
    assert [item["id"] for item in reflections["items"]] == [belief["id"]]


async def test_a_tenant_cannot_reach_another_tenants_layered_memory(
    mcp_as: Any,
) -> None:
    async with mcp_as("alpha") as alpha:
        await call(alpha, "working_memory_set", **WM, scratchpad={"secret": 1})
        procedure = await call(alpha, "procedure_store", agent_id="planner", name="p", steps=STEPS)
        arc = await call(alpha, "arc_create", title="t", arc_type="incident")
        fact = await call(
            alpha, "memory_store_fact", subject="Ann", predicate="likes", content="Ann likes tea"
        )
    async with mcp_as("beta") as beta:
        refused = [
            error_text(await beta.call_tool(tool, arguments))
            for tool, arguments in [
                ("working_memory_get", WM),
                ("scratchpad_set", {**WM, "key": "secret", "value": 2}),
                ("procedure_get", {"procedure_id": procedure["id"]}),
                ("procedure_record_execution", {"procedure_id": procedure["id"], "success": True}),
                (
                    "arc_add_event",
                    {"arc_id": arc["id"], "memory_type": "fact", "memory_id": fact["id"]},
                ),
                ("arc_close", {"arc_id": arc["id"], "outcome": "taken over"}),
                ("link_list", {"memory_type": "fact", "memory_id": fact["id"]}),
                ("graph_neighbourhood", {"node_type": "fact", "node_id": fact["id"]}),
                ("memory_fact_history", {"fact_id": fact["id"]}),
            ]
        ]
        listed = [
            await call(beta, tool)
            for tool in ("procedure_list", "arc_list", "memory_list_facts", "memory_list_episodes")
        ]
    assert all("not found" in message.lower() for message in refused), refused
    assert all(page["items"] == [] for page in listed)
    async with mcp_as("alpha") as alpha:
        mine = await call(alpha, "working_memory_get", **WM)
        counted = await call(alpha, "procedure_get", procedure_id=procedure["id"])
        still_open = await call(alpha, "arc_get", arc_id=arc["id"])
    assert mine["scratchpad"] == {"secret": 1}
    assert counted["execution_count"] == 0
    assert (still_open["status"], still_open["key_events"]) == ("active", [])


async def test_renamed_tools_answer_to_their_old_names_and_are_listed_once(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        await call(client, "memory_store_fact", subject="Ann", predicate="city", content="Oslo")
        rule = await call(client, "memory_store_rule", content="Reply in French")
        listed = {tool.name for tool in (await client.list_tools()).tools}
        by_new = await call(client, "memory_list_facts", subject="Ann")
        by_old = await call(client, "fact_list", subject="Ann")
        rules_by_old = await call(client, "rule_list")
    assert set(OLD_NAMES.values()) <= listed and not set(OLD_NAMES) & listed
    assert [item["id"] for item in by_old["items"]] == [item["id"] for item in by_new["items"]]
    assert [item["content"] for item in by_old["items"]] == ["Oslo"]
    assert [item["id"] for item in rules_by_old["items"]] == [rule["id"]]
