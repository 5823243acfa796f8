"""session_id is the caller's own string (a thread id, "chat-42"), up to 200 characters."""

import json
import uuid

from tests.support.factories import store_episode
from tests.support.rights import erase

NDJSON = {"Content-Type": "application/x-ndjson"}
LONGEST = "t" * 200


async def test_any_string_session_id_is_stored_listed_and_kept_apart(client):
    thread = await store_episode(client, "Ann likes tea", butler="chat", session_id="chat-42")
    longest = await store_episode(client, "Bob likes coffee", butler="chat", session_id=LONGEST)
    as_uuid = str(uuid.uuid4())
    await store_episode(client, "Cy likes juice", butler="chat", session_id=as_uuid)

    assert (thread["session_id"], longest["session_id"]) == ("chat-42", LONGEST)
    for session_id, expected in (("chat-42", thread), (LONGEST, longest)):
        listed = await client.get("/v1/episodes", params={"session_id": session_id})
        assert [item["id"] for item in listed.json()["items"]] == [expected["id"]]
    fetched = await client.get(f"/v1/episodes/{thread['id']}")
    assert fetched.json()["session_id"] == "chat-42"


async def test_session_id_filter_longer_than_200_is_422_naming_it(client):
    response = await client.get("/v1/episodes", params={"session_id": "s" * 201})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.session_id"


async def test_batch_turns_of_a_string_session_keep_their_order(client):
    turns = [{"content": f"turn {n}", "butler": "chat", "session_id": "thread-7"} for n in range(3)]
    response = await client.post("/v1/episodes/batch", json={"items": turns})
    assert response.status_code == 201
    later = await store_episode(client, "turn 3", butler="chat", session_id="thread-7")
    listed = await client.get("/v1/episodes", params={"session_id": "thread-7"})
    assert [item["content"] for item in listed.json()["items"]][0] == later["content"]
    assert len(listed.json()["items"]) == 4


async def test_erasing_a_string_session_takes_only_that_session(app, settings, client):
    gone = await store_episode(client, "I moved to Bergen", session_id="slack:C042/1700000000.1")
    kept = await store_episode(client, "Hello", session_id="slack:C042/1700000000.2")

    await erase(client, app, settings, session_id="slack:C042/1700000000.1")

    assert (await client.get(f"/v1/episodes/{gone['id']}")).status_code == 404
    assert (await client.get(f"/v1/episodes/{kept['id']}")).status_code == 200


async def test_erasure_session_id_over_200_is_422(client):
    response = await client.post("/v1/erasures", json={"session_id": "s" * 201})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.session_id"


async def test_import_keeps_string_session_ids_and_refuses_longer_than_200(client):
    line = {
        "kind": "episode",
        "id": str(uuid.uuid4()),
        "butler": "chat",
        "content": "hi",
        "session_id": "chat-42",
        "created_at": "2021-01-01T00:00:00+00:00",
    }
    imported = await client.post("/v1/import", content=json.dumps(line), headers=NDJSON)
    assert imported.status_code in (200, 201), imported.text
    assert (await client.get(f"/v1/episodes/{line['id']}")).json()["session_id"] == "chat-42"

    too_long = {**line, "id": str(uuid.uuid4()), "session_id": "s" * 201}
    refused = await client.post("/v1/import", content=json.dumps(too_long), headers=NDJSON)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["field"] == "line 1.session_id"
