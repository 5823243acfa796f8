"""The agent event ledger through HTTP: visibility, salience, reflections."""

import json
from typing import Any

import pytest

from app.core.config import AgentMemorySettings
from app.worker import worker
from tests.support.http import post
from tests.support.jobs import job_context
from tests.support.llm_stub import completion, user_prompt

LEDGER = "/v1/ledgers/village"


async def append(
    client: Any, agent: str, content: str, turn: int, kind: str = "agent.spoke", **fields: Any
) -> dict[str, Any]:
    return await post(
        client, f"{LEDGER}/events", agent_id=agent, kind=kind, content=content, turn=turn, **fields
    )


async def context(client: Any, agent: str, turn: int, **fields: Any) -> dict[str, Any]:
    response = await client.post(f"{LEDGER}/agents/{agent}/context", json={"turn": turn, **fields})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_visibility_defaults_by_kind_and_can_be_set(client):
    spoke = await append(client, "alice", "Good morning", 1)
    seen = await append(client, "alice", "The bakery is on fire", 1, kind="world.observed")
    told = await append(client, "alice", "Psst, a secret", 1, visibility="global")
    assert (spoke["visibility"], seen["visibility"], told["visibility"]) == (
        "private",
        "global",
        "global",
    )
    assert spoke["position"] < seen["position"] < told["position"]


async def test_an_agent_sees_its_own_events_and_globally_visible_ones(client):
    await append(client, "alice", "I hid the key under the mat", 1)
    await append(client, "bob", "I think alice is lying", 2, kind="agent.thought")
    await append(client, "narrator", "Rain starts falling", 3, kind="world.observed")
    alice = await context(client, "alice", 3)
    bob = await context(client, "bob", 3)
    assert [e["content"] for e in alice["recent"]] == [
        "I hid the key under the mat",
        "Rain starts falling",
    ]
    assert [e["content"] for e in bob["recent"]] == [
        "I think alice is lying",
        "Rain starts falling",
    ]
    assert "key under the mat" not in bob["context"]


async def test_the_recent_window_holds_the_last_eight_visible_events(client):
    for turn in range(1, 11):
        await append(client, "alice", f"line {turn}", turn)
    recent = (await context(client, "alice", 10, k=0))["recent"]
    assert [e["turn"] for e in recent] == list(range(3, 11))


async def test_salience_picks_important_and_relevant_events_in_chronological_order(client):
    await append(
        client,
        "judge",
        "The verdict: the miller is guilty",
        1,
        kind="verdict.final",
        visibility="global",
    )
    await append(client, "alice", "I found muddy boots", 2, kind="clue.found")
    await append(client, "alice", "Nice weather", 3)
    await append(client, "alice", "I wonder about lunch", 4, kind="agent.thought")
    for turn in range(5, 13):
        await append(client, "alice", f"small talk {turn}", turn)
    found = await context(client, "alice", 12, k=2, query="muddy boots")
    # Outside the window (turns 5-12): verdict (1), boots (2), weather (3), lunch (4).
    # boots: 0.3*2/4 + 0.4*e^-1.0 + 0.3*0.8 = 0.537; verdict: 0.4*e^-1.1 + 0.3 = 0.433;
    # weather: 0.4*e^-0.9 + 0.15 = 0.313; lunch: 0.4*e^-0.8 + 0.12 = 0.300.
    assert [(e["turn"], e["kind"]) for e in found["salient"]] == [
        (1, "verdict.final"),
        (2, "clue.found"),
    ]
    boots = found["salient"][1]
    assert boots["relevance"] == pytest.approx(0.5)
    assert boots["salience"] == pytest.approx(0.3 * 0.5 + 0.4 * 2.718281828**-1.0 + 0.24)
    text = found["context"]
    assert text.index("## Salient events") < text.index("## Recent events")
    assert text.index("verdict") < text.index("muddy boots")


async def test_semantic_relevance_uses_the_embeddings(client):
    await append(client, "alice", "The cat sat on the windowsill purring", 1)
    await append(client, "alice", "Stock prices fell sharply today", 1)
    for turn in range(2, 10):
        await append(client, "alice", f"filler {turn}", 9)
    found = await context(client, "alice", 9, k=1, query="a kitten resting", relevance="semantic")
    assert [e["content"] for e in found["salient"]] == ["The cat sat on the windowsill purring"]


async def test_the_context_stays_within_the_token_budget(client):
    for turn in range(1, 9):
        await append(client, "alice", "word " * 30, turn)
    found = await context(client, "alice", 8, token_budget=100)
    assert 0 < found["characters"] <= 400 == found["token_budget"] * 4
    assert [e["turn"] for e in found["recent"]] == [7, 8]


async def test_an_agent_posts_a_reflection_that_everyone_sees_and_that_compacts(client):
    events = [
        await append(client, "alice", f"The baker frowned at me, day {n}", n) for n in range(1, 5)
    ]
    response = await client.post(
        f"{LEDGER}/agents/alice/reflections",
        json={"belief": "The baker resents me", "based_on": [e["id"] for e in events[:3]]},
    )
    assert response.status_code == 201, response.text
    reflection = response.json()
    assert (reflection["kind"], reflection["visibility"], reflection["turn"]) == (
        "agent.reflected",
        "global",
        3,
    )
    assert reflection["based_on"] == [e["id"] for e in events[:3]]

    alice = await context(client, "alice", 4)
    assert [e["turn"] for e in alice["recent"]] == [4]
    assert alice["salient"] == []
    assert "day 1" not in alice["context"] and "day 4" in alice["context"]
    assert [r["content"] for r in alice["reflections"]] == ["The baker resents me"]
    assert alice["reflections"][0]["based_on"] == reflection["based_on"]
    bob = await context(client, "bob", 4)
    assert [r["id"] for r in bob["reflections"]] == [reflection["id"]]
    listed = (await client.get(f"{LEDGER}/reflections")).json()["items"]
    assert [r["id"] for r in listed] == [reflection["id"]]
    links = (
        await client.get(
            "/v1/links",
            params={
                "memory_type": "agent_event",
                "memory_id": reflection["id"],
                "direction": "outgoing",
            },
        )
    ).json()["items"]
    assert {(link["target_id"], link["relation"]) for link in links} == {
        (e["id"], "based_on") for e in events[:3]
    }


async def test_a_reflection_on_events_the_agent_cannot_see_is_a_422(client):
    secret = await append(client, "bob", "bob's private plan", 1)
    response = await client.post(
        f"{LEDGER}/agents/alice/reflections",
        json={"belief": "Bob plans something", "based_on": [secret["id"]]},
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["based_on"]


async def test_reflected_kind_cannot_be_appended_as_a_plain_event(client):
    response = await client.post(
        f"{LEDGER}/events",
        json={"agent_id": "alice", "kind": "agent.reflected", "content": "x", "turn": 1},
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["kind"]


async def test_bad_turn_is_a_422_naming_turn(client):
    response = await client.post(
        f"{LEDGER}/events",
        json={"agent_id": "alice", "kind": "agent.spoke", "content": "x", "turn": -1},
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["body.turn"]


async def test_a_reflection_is_due_after_every_n_visible_events(client):
    dues = []
    for turn in range(1, 11):
        dues.append((await append(client, "alice", f"event {turn}", turn))["reflection_due_for"])
    assert dues[:9] == [[]] * 9 and dues[9] == ["alice"]
    found = await context(client, "alice", 10)
    assert (found["pending_events"], found["reflection_due"]) == (10, True)
    events = (await client.get(f"{LEDGER}/events", params={"limit": 10})).json()["items"]
    await post(
        client,
        f"{LEDGER}/agents/alice/reflections",
        belief="Things happen",
        based_on=[e["id"] for e in events],
    )
    dues = [
        (await append(client, "alice", f"later {turn}", turn))["reflection_due_for"]
        for turn in range(11, 21)
    ]
    assert dues[:9] == [[]] * 9 and dues[9] == ["alice"]


async def test_listing_the_ledger_filters_and_pages(client):
    await append(client, "alice", "one", 1)
    await append(client, "bob", "two", 2, kind="world.observed")
    await append(client, "alice", "three", 3, kind="agent.thought")
    page = (await client.get(f"{LEDGER}/events", params={"limit": 2})).json()
    assert [e["content"] for e in page["items"]] == ["three", "two"]
    rest = (
        await client.get(f"{LEDGER}/events", params={"limit": 2, "cursor": page["next_cursor"]})
    ).json()
    assert [e["content"] for e in rest["items"]] == ["one"]
    mine = (
        await client.get(f"{LEDGER}/events", params={"agent_id": "alice", "kind": "agent.spoke"})
    ).json()
    assert [e["content"] for e in mine["items"]] == ["one"]
    other = (await client.get("/v1/ledgers/elsewhere/events")).json()
    assert other["items"] == []


@pytest.fixture
def llm_app_settings(app, settings, llm):
    """The app's settings with the stub LLM and a reflection every 3 events, for one test."""
    ctx = job_context(app, settings, llm_url=llm.base_url)
    changed = ctx.settings.model_copy(
        update={"agent_memory": AgentMemorySettings(reflection_threshold=3)}
    )
    original = app.state.settings
    app.state.settings = changed
    yield type(ctx)(ctx.sessionmaker, changed, ctx.embedder)
    app.state.settings = original


async def test_the_llm_reflects_every_n_visible_events(client, llm, llm_app_settings):
    ctx = llm_app_settings
    llm.reply(
        completion({"belief": "The square is busy", "based_on": []}),
        completion({"belief": "The square is quiet now", "based_on": []}),
    )

    first = [await append(client, "alice", f"people gather {n}", n) for n in range(1, 3)]
    shared = await append(client, "bob", "a bell rings", 3, kind="world.observed")
    assert shared["reflection_due_for"] == ["alice"]
    await worker.drain(ctx)
    [reflection] = (await client.get(f"{LEDGER}/reflections")).json()["items"]
    assert (reflection["agent_id"], reflection["content"]) == ("alice", "The square is busy")
    assert reflection["based_on"] == [e["id"] for e in [*first, shared]]
    assert "people gather 1" in user_prompt(llm.requests[0])

    for n in range(4, 7):
        await append(client, "alice", f"people leave {n}", n)
    await worker.drain(ctx)
    items = (await client.get(f"{LEDGER}/reflections")).json()["items"]
    assert [r["content"] for r in items] == ["The square is quiet now", "The square is busy"]
    jobs = (await client.get("/v1/jobs", params={"kind": "reflection"})).json()["items"]
    assert [job["result"]["reflected"] for job in jobs] == [1, 1]
    assert len(llm.requests) == 2


# (agent, kind, content, turn) in append order; one event of turn 2 arrives late.
HISTORY = [
    ("alice", "agent.spoke", "I will visit the baker", 1),
    ("bob", "world.observed", "The market opens at dawn", 1),
    ("alice", "agent.spoke", "The baker frowned at me", 2),
    ("bob", "agent.spoke", "Bob hides the bread money", 3),
    ("alice", "agent.spoke", "The baker frowned again", 3),
    ("alice", "agent.spoke", "The baker refused my coins", 4),
    ("bob", "world.observed", "Rain floods the square", 5),
    ("bob", "world.observed", "A stranger buys all the bread", 2),
    ("alice", "agent.spoke", "I will try the other baker", 6),
    ("bob", "agent.spoke", "Bob counts the bread money", 7),
    ("alice", "agent.spoke", "The other baker smiled", 8),
    ("bob", "world.observed", "The baker closes his shop", 9),
]


async def _replay(client: Any, ledger: str, up_to: int) -> dict[str, str]:
    """Append HISTORY's events of turn `up_to` or earlier to `ledger`, then alice's
    reflection on her baker events of turns 2-3 when its turn (3) is in; content -> id."""
    ids = {}
    for agent, kind, content, turn in HISTORY:
        if turn <= up_to:
            event = await post(
                client,
                f"/v1/ledgers/{ledger}/events",
                agent_id=agent,
                kind=kind,
                content=content,
                turn=turn,
            )
            ids[content] = event["id"]
    if up_to >= 3:
        reflection = await post(
            client,
            f"/v1/ledgers/{ledger}/agents/alice/reflections",
            belief="The baker resents me",
            based_on=[ids["The baker frowned at me"], ids["The baker frowned again"]],
        )
        ids["The baker resents me"] = reflection["id"]
    return ids


# What differs between two ledgers holding the same events: names, places and times.
LEDGER_OWN = ("ledger", "position", "created_at")


def _without_ids(answer: Any, names: dict[str, str]) -> Any:
    """The answer with every event id replaced by the content it names, and without the
    fields a ledger of its own gives an event anyway."""
    text = json.dumps(answer, sort_keys=True)
    for content, event_id in names.items():
        text = text.replace(event_id, f"<{content}>")

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in LEDGER_OWN}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(text))


@pytest.mark.parametrize("relevance", ["keyword", "semantic"])
async def test_the_context_at_a_past_turn_is_the_one_its_events_alone_give(client, relevance):
    whole = await _replay(client, "village-whole", 9)
    for turn in (2, 3, 5, 9):
        copy = await _replay(client, f"village-upto-{turn}-{relevance}", turn)
        for agent in ("alice", "bob"):
            request = {
                "turn": turn,
                "query": "the baker and the bread",
                "window": 3,
                "k": 2,
                "relevance": relevance,
            }
            past = (
                await client.post(f"/v1/ledgers/village-whole/agents/{agent}/context", json=request)
            ).json()
            fresh = (
                await client.post(
                    f"/v1/ledgers/village-upto-{turn}-{relevance}/agents/{agent}/context",
                    json=request,
                )
            ).json()
            assert past["context"].encode() == fresh["context"].encode(), (turn, agent)
            assert _without_ids(past, whole) == _without_ids(fresh, copy), (turn, agent)
            later = [content for _, _, content, t in HISTORY if t > turn]
            assert [c for c in later if c in past["context"]] == [], (turn, agent)
