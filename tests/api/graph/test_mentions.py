"""Mentions through HTTP: a stored episode, fact, rule or run that names a known entity (its
name or an alias, whole words, any case) is linked `mentions` to it."""

import pytest

from tests.support.factories import create_entity, ref, store_episode, store_fact, store_rule
from tests.support.http import post


async def neighbours(client, entity):
    response = await client.get(f"/v1/graph/entity/{entity['id']}")
    assert response.status_code == 200, response.text
    return {(n["type"], n["id"]) for n in response.json()["nodes"]} - {ref("entity", entity)}


async def mention_links(client, memory):
    response = await client.get(
        "/v1/links",
        params={"memory_type": memory[0], "memory_id": memory[1], "relation": "mentions"},
    )
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def test_episode_run_and_fact_naming_an_entity_are_its_neighbours(client):
    globex = await create_entity(client, "Globex", "organization")
    text = "Decision: Globex... will move its office to Boulder"
    episode = ref("episode", await store_episode(client, text))
    run = ref("run", await post(client, "/v1/runs", task_id="office-plan", summary=text))
    fact = ref("fact", await store_fact(client, "Office", "decision", text))
    rule = ref("rule", await store_rule(client, "Ask Globex before booking rooms"))
    assert await neighbours(client, globex) == {episode, run, fact, rule}
    [link] = await mention_links(client, episode)
    assert (link["target_type"], link["target_id"]) == ("entity", globex["id"])
    assert (link["created_by"], link["reasoning"]) == ("system:mentions", "names Globex")


async def test_aliases_and_names_of_several_words_match_in_any_case(client):
    acme = await create_entity(client, "Acme Corp.", "organization", aliases=["ACME-Co"])
    by_name = ref("episode", await store_episode(client, "we met ACME corp today"))
    by_alias = ref("episode", await store_episode(client, "the acme co contract is signed"))
    assert await neighbours(client, acme) == {by_name, by_alias}
    [link] = await mention_links(client, by_alias)
    assert link["reasoning"] == "names an alias of Acme Corp."


@pytest.mark.parametrize("text", ["Globexia opened a shop", "the globe x-ray", "MegaGlobex"])
async def test_a_name_inside_another_word_is_no_mention(client, text):
    globex = await create_entity(client, "Globex", "organization")
    await store_episode(client, text)
    assert await neighbours(client, globex) == set()


async def test_one_memory_mentions_every_entity_it_names_once(client):
    ann = await create_entity(client, "Ann Lee", aliases=["Annie"])
    bob = await create_entity(client, "Bob")
    episode = ref("episode", await store_episode(client, "Ann Lee (Annie) told Bob: bob, Ann Lee"))
    links = await mention_links(client, episode)
    assert sorted(link["target_id"] for link in links) == sorted([ann["id"], bob["id"]])


async def test_a_batch_links_each_episode_to_what_it_names(client):
    ann, bob = await create_entity(client, "Ann"), await create_entity(client, "Bob")
    response = await client.post(
        "/v1/episodes/batch",
        json={
            "items": [
                {"content": "Ann called", "butler": "chat"},
                {"content": "nobody called", "butler": "chat"},
                {"content": "Bob and Ann called", "butler": "chat"},
            ]
        },
    )
    assert response.status_code == 201, response.text
    first, _, third = (ref("episode", item) for item in response.json()["items"])
    assert await neighbours(client, ann) == {first, third}
    assert await neighbours(client, bob) == {third}


async def test_merged_entities_are_not_mentioned(client):
    target = await create_entity(client, "Robert")
    source = await create_entity(client, "Bobby")
    response = await client.post(
        f"/v1/entities/{target['id']}/merge", json={"source_id": source["id"]}
    )
    assert response.status_code == 200, response.text
    episode = ref("episode", await store_episode(client, "Bobby phoned"))
    [link] = await mention_links(client, episode)
    assert link["target_id"] == target["id"]


async def test_another_tenants_entity_is_not_mentioned(client, tenant_client):
    other = await tenant_client("tenant-b")
    await create_entity(other, "Globex", "organization")
    episode = ref("episode", await store_episode(client, "Globex called"))
    assert await mention_links(client, episode) == []


async def test_mentions_can_be_turned_off(client, app, monkeypatch):
    monkeypatch.setattr(app.state.settings.auto_links, "mentions", False)
    globex = await create_entity(client, "Globex", "organization")
    await store_episode(client, "Globex called")
    assert await neighbours(client, globex) == set()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("王小明", "我昨天在北京见了王小明，我们一起吃饭。"),
        ("東京大学", "彼女は東京大学で物理を学んだ。"),
        ("สมชาย", "วันนี้สมชายไปตลาดกับแม่"),
    ],
)
async def test_a_name_inside_text_written_without_spaces_is_a_mention(client, name, text):
    entity = await create_entity(client, name, "person")
    episode = ref("episode", await store_episode(client, text))
    assert episode in await neighbours(client, entity)
