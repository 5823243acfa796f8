"""The web console over HTTP: sign-in, sessions, CSRF, read-only keys, tenant isolation,
escaping, and its corrections reaching the same rows the API shows."""

import html as html_text
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.services import api_keys
from app.worker import scheduler, worker
from tests.support.console import console_client, csrf_of, post_form, sign_in
from tests.support.http import post
from tests.support.jobs import job_context
from tests.support.tenancy import seed_tenant_a, snapshot

SIGN_IN_TOKEN = re.compile(r'name="csrf_sign_in" value="([^"]+)"')
NEXT_FIELD = re.compile(r'name="next" value="([^"]*)"')


async def mint(app: Any, tenant: str, access: str = "write") -> api_keys.MintedKey:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        return await api_keys.create_key(session, tenant_id=tenant, access=access)


@pytest.fixture
async def browsers(app: Any) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Console clients opened by a test, closed after it."""
    opened: list[httpx.AsyncClient] = []
    yield opened
    for http in opened:
        await http.aclose()


async def browser(app: Any, browsers: list[httpx.AsyncClient], secret: str) -> httpx.AsyncClient:
    http = await console_client(app, secret)
    browsers.append(http)
    return http


async def test_sign_in_page_has_one_form_with_a_key_field_and_a_csrf_field(anonymous_client):
    page = await anonymous_client.get("/ui")
    assert page.status_code == 200
    assert page.text.count("<form") == 1
    assert 'name="api_key"' in page.text
    assert 'type="hidden" name="csrf_sign_in"' in page.text


async def test_a_page_without_a_session_sends_the_browser_to_sign_in(anonymous_client):
    answer = await anonymous_client.get("/ui/facts/00000000-0000-4000-8000-000000000000")
    assert answer.status_code == 303
    assert answer.headers["location"] == (
        "/ui?next=%2Fui%2Ffacts%2F00000000-0000-4000-8000-000000000000"
    )


async def test_a_link_with_a_query_comes_back_with_its_query_after_sign_in(app, browsers):
    key = await mint(app, "acme")
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
    browsers.append(http)
    stored = await http.post(
        "/v1/facts",
        headers={"X-API-Key": key.secret},
        json={"subject": "Ann", "predicate": "city", "content": "Ann lives in Lyon"},
    )
    assert stored.status_code == 201
    link = "/ui/search?q=Where+does+Ann+live+now%3F&types=fact"
    sent = await http.get(link)
    assert sent.status_code == 303
    form = await http.get(sent.headers["location"])
    token = SIGN_IN_TOKEN.search(form.text)
    back = NEXT_FIELD.search(form.text)
    assert token and back
    assert html_text.unescape(back.group(1)) == link
    signed_in = await http.post(
        "/ui/sign-in",
        data={
            "csrf_sign_in": token.group(1),
            "api_key": key.secret,
            "next": html_text.unescape(back.group(1)),
        },
    )
    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == link
    page = await http.get(signed_in.headers["location"])
    assert 'value="Where does Ann live now?"' in page.text
    assert "Ann lives in Lyon" in page.text


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/ui",
        "//evil.example/ui",
        "/ui@evil.example",
        "/uix",
        "/ui/search?q=a b",
        "/ui/search?q=a#x",
        "/ui\\evil.example",
        "/ui/search?q=<x>",
        "javascript:alert(1)",
        "/ui/search\r\nSet-Cookie: x=1",
    ],
)
async def test_sign_in_sends_the_browser_nowhere_but_a_console_page(app, browsers, target):
    key = await mint(app, "acme")
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
    browsers.append(http)
    form = await http.get("/ui", params={"next": target})
    assert f'value="{html_text.escape(target)}"' not in form.text
    token = SIGN_IN_TOKEN.search(form.text)
    assert token
    signed_in = await http.post(
        "/ui/sign-in", data={"csrf_sign_in": token.group(1), "api_key": key.secret, "next": target}
    )
    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == "/ui"


async def test_the_session_cookie_is_httponly_samesite_and_expiring(app, browsers):
    key = await mint(app, "acme")
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
    browsers.append(http)
    answer = await sign_in(http, key.secret)
    assert answer.status_code == 303
    cookie = next(
        value
        for name, value in answer.headers.multi_items()
        if name == "set-cookie" and value.startswith("engram_console=")
    )
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"httponly", "max-age", "path"} <= attributes
    assert "samesite=lax" in cookie.lower()
    overview = await http.get("/ui")
    assert "acme" in overview.text and "Recent jobs" in overview.text


async def test_an_unknown_key_opens_no_session(anonymous_client):
    answer = await sign_in(anonymous_client, "egk_not-a-key")
    assert answer.status_code == 401
    assert "unknown or revoked" in answer.text
    assert "Recent jobs" not in (await anonymous_client.get("/ui")).text


async def test_sign_in_without_its_form_token_is_refused(app, anonymous_client):
    key = await mint(app, "acme")
    answer = await anonymous_client.post("/ui/sign-in", data={"api_key": key.secret})
    assert answer.status_code == 403
    assert "engram_console=" not in answer.headers.get("set-cookie", "")


async def test_tenant_b_cannot_open_or_change_tenant_a_memories_by_url(
    app, tenant_client, browsers
):
    client_a = await tenant_client("tenant-a")
    episode = await post(client_a, "/v1/episodes", content="alpha secret visit", butler="b")
    entity = await post(
        client_a, "/v1/entities", canonical_name="Alpha Person", entity_type="person"
    )
    fact = await post(
        client_a,
        "/v1/facts",
        subject="Alpha",
        predicate="lives_in",
        content="alpha secret place",
        entity_id=entity["id"],
    )
    rule = await post(client_a, "/v1/rules", content="alpha secret rule")
    run = await post(client_a, "/v1/runs", task_id="alpha-task")
    b = await browser(app, browsers, (await mint(app, "tenant-b")).secret)

    for page in (
        f"/ui/episodes/{episode['id']}",
        f"/ui/facts/{fact['id']}",
        f"/ui/rules/{rule['id']}",
        f"/ui/entities/{entity['id']}",
        f"/ui/runs/{run['id']}",
        f"/ui/entities/{entity['id']}/merge?source_id={entity['id']}",
    ):
        answer = await b.get(page)
        assert answer.status_code in (404, 422), (page, answer.status_code)
        assert "alpha secret" not in answer.text and "Alpha Person" not in answer.text
    token = csrf_of((await b.get("/ui/search")).text)
    for action in (
        f"/ui/facts/{fact['id']}/forget",
        f"/ui/rules/{rule['id']}/harmful",
        f"/ui/facts/{fact['id']}/delete",
        f"/ui/episodes/{episode['id']}/delete",
    ):
        assert (await b.post(action, data={"csrf_token": token})).status_code == 404, action
    found = (await b.get("/ui/search", params={"q": "alpha secret"})).text
    for text in ("alpha secret visit", "alpha secret place", "alpha secret rule"):
        assert text not in found
    assert (await client_a.get(f"/v1/facts/{fact['id']}")).json()["validity"] == "active"
    assert (await client_a.get(f"/v1/rules/{rule['id']}")).json()["harmful_count"] == 0


async def test_a_change_without_the_csrf_token_is_refused(app, client, browsers):
    fact = await post(client, "/v1/facts", subject="Ann", predicate="likes", content="tea")
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    assert (await http.post(f"/ui/facts/{fact['id']}/forget")).status_code == 403
    wrong = await http.post(f"/ui/facts/{fact['id']}/forget", data={"csrf_token": "guess"})
    assert wrong.status_code == 403
    assert (await client.get(f"/v1/facts/{fact['id']}")).json()["validity"] == "active"


async def test_a_read_only_key_sees_no_write_buttons_and_its_posts_are_refused(
    app, client, browsers
):
    fact = await post(client, "/v1/facts", subject="Ann", predicate="likes", content="tea")
    rule = await post(client, "/v1/rules", content="Greet Ann by name")
    http = await browser(app, browsers, (await mint(app, "default", access="read")).secret)
    fact_page = (await http.get(f"/ui/facts/{fact['id']}")).text
    rule_page = (await http.get(f"/ui/rules/{rule['id']}")).text
    assert "tea" in fact_page and "read-only" in fact_page
    for html in (fact_page, rule_page):
        assert 'id="actions"' not in html and "/forget" not in html and "/delete" not in html
    token = csrf_of(fact_page)  # the sign-out form's token: the session's own
    for action in (
        f"/ui/facts/{fact['id']}/forget",
        f"/ui/rules/{rule['id']}/harmful",
        f"/ui/facts/{fact['id']}/delete",
    ):
        answer = await http.post(action, data={"csrf_token": token})
        assert answer.status_code == 403, action
        assert "read-only" in answer.text
    erase = await http.post(
        "/ui/erase", data={"csrf_token": token, "selector": "subject", "value": "Ann"}
    )
    assert erase.status_code == 403
    assert (await client.get(f"/v1/facts/{fact['id']}")).json()["validity"] == "active"
    assert (await client.get(f"/v1/rules/{rule['id']}")).json()["harmful_count"] == 0
    assert (await client.get("/v1/jobs")).json()["items"] == []


async def test_revoking_the_key_ends_its_sessions(app, client, browsers):
    key = await mint(app, "default")
    http = await browser(app, browsers, key.secret)
    assert (await http.get("/ui/search")).status_code == 200
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        assert await api_keys.revoke_key(session, key_id=key.record.id)
    answer = await http.get("/ui/search")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/ui")


async def test_sign_out_ends_the_session_even_for_a_copied_cookie(app, browsers):
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    copied = http.cookies.get("engram_console")
    token = csrf_of((await http.get("/ui")).text)
    assert (await http.post("/ui/sign-out", data={"csrf_token": token})).status_code == 303
    assert 'name="api_key"' in (await http.get("/ui")).text
    replay = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://t",
        cookies={"engram_console": copied or ""},
    )
    browsers.append(replay)
    assert (await replay.get("/ui/search")).status_code == 303


async def test_html_in_memory_content_is_escaped(app, client, browsers):
    fact = await post(
        client,
        "/v1/facts",
        subject="<b>Ann</b>",
        predicate="note",
        content='<script>alert("x")</script><img src=x onerror=alert(1)>',
    )
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    for page in (f"/ui/facts/{fact['id']}", "/ui/search?q=script+alert+note"):
        html = (await http.get(page)).text
        assert "<script>" not in html and "<img src=x" not in html and "<b>Ann" not in html
        assert "&lt;script&gt;" in html
    answer = await http.get(f"/ui/facts/{fact['id']}")
    assert "default-src 'none'" in answer.headers["content-security-policy"]


async def test_corrections_reach_the_rows_the_api_shows(app, client, browsers):
    fact = await post(client, "/v1/facts", subject="Ann", predicate="likes", content="tea")
    rule = await post(client, "/v1/rules", content="Offer Ann tea")
    http = await browser(app, browsers, (await mint(app, "default")).secret)

    answer = await post_form(http, f"/ui/rules/{rule['id']}", "harmful", reason="she hates it")
    assert answer.status_code == 303
    shown = (await http.get(answer.headers["location"])).text
    assert "she hates it" in shown and "0 / 1 / 1" in shown
    await post_form(http, f"/ui/rules/{rule['id']}", "helpful")
    assert (await client.get(f"/v1/rules/{rule['id']}")).json()["success_count"] == 1

    edited = await post_form(
        http,
        f"/ui/facts/{fact['id']}",
        "labels",
        tags="diet, drinks",
        metadata='{"source": "call"}',
    )
    assert edited.status_code == 303
    row = (await client.get(f"/v1/facts/{fact['id']}")).json()
    assert (row["tags"], row["metadata"]) == (["diet", "drinks"], {"source": "call"})
    refused = await post_form(http, f"/ui/facts/{fact['id']}", "labels", metadata="[1")
    assert refused.status_code == 422 and "metadata" in refused.text

    await post_form(http, f"/ui/facts/{fact['id']}", "confirm")
    await post_form(http, f"/ui/facts/{fact['id']}", "forget")
    assert (await client.get(f"/v1/facts/{fact['id']}")).json()["validity"] == "retracted"
    events = (await client.get("/v1/events", params={"memory_id": fact["id"]})).json()["items"]
    assert {"fact_edited", "fact_confirmed", "fact_forgotten"} <= {e["event_type"] for e in events}

    deleted = await post_form(http, f"/ui/rules/{rule['id']}", "delete")
    assert deleted.status_code == 303
    assert (await client.get(f"/v1/rules/{rule['id']}")).status_code == 404


async def test_a_memory_page_shows_versions_provenance_and_entities(app, client, browsers):
    episode = await post(
        client, "/v1/episodes", content="Ann said she moved to Oslo", butler="desk"
    )
    entity = await post(client, "/v1/entities", canonical_name="Ann", entity_type="person")
    old = await post(
        client,
        "/v1/facts",
        subject="Ann",
        predicate="lives_in",
        content="Bergen",
        entity_id=entity["id"],
    )
    new = await post(
        client,
        "/v1/facts",
        subject="Ann",
        predicate="lives_in",
        content="Oslo",
        entity_id=entity["id"],
        source_episode_id=episode["id"],
    )
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=new["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )
    http = await browser(app, browsers, (await mint(app, "default")).secret)

    page = (await http.get(f"/ui/facts/{new['id']}")).text
    assert f'href="/ui/facts/{old["id"]}"' in page  # the version it superseded
    assert f'href="/ui/episodes/{episode["id"]}"' in page
    assert f'href="/ui/entities/{entity["id"]}"' in page
    assert "fact_created" in page
    back = (await http.get(f"/ui/episodes/{episode['id']}")).text
    assert f'href="/ui/facts/{new["id"]}"' in back and "derived from" in back
    graph = (await http.get(f"/ui/entities/{entity['id']}")).text
    assert "<svg" in graph and f'href="/ui/facts/{new["id"]}"' in graph
    # Looking is not a reference, unlike GET /v1/facts/{id}.
    assert (await client.get(f"/v1/facts/{new['id']}")).json()["reference_count"] == 1


async def test_erasure_names_what_goes_before_it_is_queued(app, client, browsers):
    fact = await post(client, "/v1/facts", subject="Ann", predicate="likes", content="tea")
    kept = await post(client, "/v1/facts", subject="Bob", predicate="likes", content="coffee")
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    preview = await http.get("/ui/erase", params={"selector": "subject", "value": "ann"})
    assert f"/ui/facts/{fact['id']}" in preview.text and "Ann likes: tea" in preview.text
    assert kept["id"] not in preview.text
    assert (await client.get("/v1/jobs")).json()["items"] == []
    queued = await http.post(
        "/ui/erase",
        data={"csrf_token": csrf_of(preview.text), "selector": "subject", "value": "ann"},
    )
    assert queued.status_code == 303
    [job] = (await client.get("/v1/jobs")).json()["items"]
    assert (job["kind"], job["params"]) == ("erasure", {"subject": "ann"})
    assert queued.headers["location"].startswith(f"/ui/jobs/{job['id']}")


async def test_merge_preview_then_merge(app, client, browsers):
    target = await post(client, "/v1/entities", canonical_name="Ann Lee", entity_type="person")
    source = await post(client, "/v1/entities", canonical_name="A. Lee", entity_type="person")
    await post(
        client, "/v1/facts", subject="Ann", predicate="city", content="Oslo", entity_id=target["id"]
    )
    await post(
        client,
        "/v1/facts",
        subject="A. Lee",
        predicate="city",
        content="Bergen",
        entity_id=source["id"],
    )
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    preview = await http.get(
        f"/ui/entities/{target['id']}/merge", params={"source_id": source["id"]}
    )
    assert "A. Lee" in preview.text and "1 facts compete" in preview.text
    assert (await client.get(f"/v1/entities/{source['id']}")).json()["merged_into_id"] is None
    merged = await http.post(
        f"/ui/entities/{target['id']}/merge",
        data={"csrf_token": csrf_of(preview.text), "source_id": source["id"]},
    )
    assert merged.status_code == 303
    assert (await client.get(f"/v1/entities/{source['id']}")).json()["merged_into_id"] == (
        target["id"]
    )


async def test_every_page_renders(app, client, browsers):
    run = await post(client, "/v1/runs", task_id="t1", success=False, summary="went wrong")
    await post(client, f"/v1/runs/{run['id']}/messages", role="critic", content="too slow")
    await post(
        client, f"/v1/runs/{run['id']}/feedback", source="critic", rating=0.2, rationale="slow"
    )
    event = await post(
        client,
        "/v1/ledgers/town/events",
        agent_id="ann",
        kind="world.observed",
        content="rain again",
        turn=1,
    )
    await post(
        client,
        "/v1/ledgers/town/agents/ann/reflections",
        belief="it rains a lot",
        based_on=[event["id"]],
    )
    await post(client, "/v1/entities", canonical_name="Ann", entity_type="person")
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    pages = {
        "/ui": "Recent events",
        "/ui/search?q=rain&types=reflection": "it rains a lot",
        "/ui/entities?name=an&resolve=1": "Ann",
        "/ui/entities": "Ann",
        "/ui/runs": "went wrong",
        f"/ui/runs/{run['id']}": "too slow",
        "/ui/agents?ledger=town&agent_id=ann&turn=2": "it rains a lot",
        "/ui/data?event_type=entity_created": "entity_created",
        "/ui/erase": "Erase",
    }
    for page, text in pages.items():
        answer = await http.get(page)
        assert answer.status_code == 200, (page, answer.text[:500])
        assert text in answer.text, page
    export = await http.get("/ui/data/export")
    assert "attachment" in export.headers["content-disposition"]
    assert '"kind": "run"' in export.text or '"kind":"run"' in export.text
    assert (await http.get("/ui/static/console.css")).status_code == 200


async def test_with_authentication_disabled_the_console_shows_the_default_tenant(settings):
    loopback = settings.model_copy(update={"host": "127.0.0.1", "auth_disabled": True})
    app = create_app(loopback)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://localhost",
            follow_redirects=True,
        ) as http:
            overview = await http.get("/ui")
    assert overview.status_code == 200
    assert "Authentication is disabled" in overview.text
    assert "<strong>default</strong>" in overview.text


# What tenant B asks of each console route, generated from the route table: a new route
# missing here fails the test, so none escapes the isolation check.
def console_routes(app: Any) -> list[tuple[str, str]]:
    from app.console.render import ConsoleRoute

    return sorted(
        (method, route.path)
        for route in app.router.routes
        if isinstance(route, ConsoleRoute)
        for method in route.methods
    )


KINDS = ("episodes", "facts", "rules")
B_CONSOLE_REQUESTS: dict[tuple[str, str], Any] = {
    ("GET", "/ui"): {},
    ("GET", "/ui/search"): {"q": "alpha secret"},
    ("GET", "/ui/erase"): {"selector": "subject", "value": "Alpha"},
    ("POST", "/ui/erase"): {"selector": "subject", "value": "Alpha"},
    ("GET", "/ui/entities"): {"name": "Alpha"},
    ("GET", "/ui/runs"): {"task_id": "alpha-task"},
    ("GET", "/ui/agents"): {"ledger": "alpha-ledger", "agent_id": "ann"},
    ("GET", "/ui/data"): {},
    ("GET", "/ui/data/export"): {},
    ("GET", "/ui/entities/{entity_id}"): {},
    ("GET", "/ui/entities/{entity_id}/merge"): {},
    ("POST", "/ui/entities/{entity_id}/merge"): {},
    ("GET", "/ui/runs/{run_id}"): {},
    ("GET", "/ui/jobs/{job_id}"): {},
    ("GET", "/ui/episodes/{memory_id}"): {},
    ("GET", "/ui/facts/{memory_id}"): {},
    ("GET", "/ui/rules/{memory_id}"): {},
    ("POST", "/ui/rules/{memory_id}/helpful"): {},
    ("POST", "/ui/rules/{memory_id}/harmful"): {},
    **{
        ("POST", f"/ui/{{kind}}/{{memory_id}}/{verb}"): {}
        for verb in ("forget", "confirm", "delete", "labels")
    },
    ("POST", "/ui/sign-in"): None,
    ("POST", "/ui/sign-out"): None,  # no tenant data
}


async def test_every_console_route_keeps_tenant_a_out_of_tenant_b_session(
    app, tenant_client, db_engine, browsers
):
    missing = [route for route in console_routes(app) if route not in B_CONSOLE_REQUESTS]
    assert not missing, f"add these console routes to B_CONSOLE_REQUESTS: {missing}"
    ids = await seed_tenant_a(await tenant_client("tenant-a"))
    before = await snapshot(db_engine, "tenant-a")
    b = await browser(app, browsers, (await mint(app, "tenant-b")).secret)
    token = csrf_of((await b.get("/ui")).text)
    secrets = ["alphasecret", "zebrafinch", "Rottnest", "brownfur", "politely"]
    for (method, path), params in B_CONSOLE_REQUESTS.items():
        if params is None:
            continue
        fills = (
            [{"kind": kind, "memory_id": ids[kind[:-1]]} for kind in KINDS]
            if "{kind}" in path
            else [
                {
                    "memory_id": ids[path.split("/")[2][:-1]] if "{memory_id}" in path else "",
                    "entity_id": ids["entity"],
                    "run_id": ids["run"],
                    "job_id": ids["job"],
                }
            ]
        )
        for fill in fills:
            url = path.format(**fill)
            if method == "GET":
                answer = await b.get(
                    url,
                    params={
                        **params,
                        **({"source_id": ids["twin"]} if url.endswith("/merge") else {}),
                    },
                )
            else:
                answer = await b.post(
                    url, data={"csrf_token": token, "source_id": ids["twin"], **params}
                )
            shown = [i for i in ids.values() if i not in url] + secrets
            assert not [s for s in shown if s in answer.text], (method, url)
            if "{" in path:  # episodes are never confirmed nor labelled: 422 before any lookup
                assert answer.status_code in (404, 422), (method, url, answer.status_code)
    assert await snapshot(db_engine, "tenant-a") == before


async def test_search_page_filters_and_names_a_bad_filter(app, client, browsers):
    await post(
        client,
        "/v1/facts",
        subject="Ann",
        predicate="city",
        content="Ann lives in Lyon",
        tags=["crm"],
    )
    await post(
        client,
        "/v1/facts",
        subject="Bob",
        predicate="city",
        content="Bob lives in Lyon",
        tags=["chat"],
    )
    http = await browser(app, browsers, (await mint(app, "default")).secret)
    found = (
        await http.get("/ui/search", params={"q": "lives in Lyon", "filter": '{"tags": "crm"}'})
    ).text
    assert "Ann lives in Lyon" in found and "Bob lives in Lyon" not in found
    assert "{&#34;tags&#34;: &#34;crm&#34;}" in found  # the form keeps the filter
    refused = await http.get("/ui/search", params={"q": "Lyon", "filter": '{"tags": {"$gt": "a"}}'})
    assert refused.status_code == 422
    assert "filter.tags.$gt" in refused.text


async def test_the_overview_shows_scheduled_jobs_without_their_results(app, settings, browsers):
    key = await mint(app, "acme")
    http = await browser(app, browsers, key.secret)
    before = await http.get("/ui")
    assert "No scheduled decay, cleanup or consolidation has run yet." in before.text
    ctx = job_context(app, settings)
    await scheduler.tick(ctx)
    await worker.drain(ctx)
    overview = await http.get("/ui")
    table = overview.text[overview.text.index('id="scheduled"') :]
    table = table[: table.index("</table>")]
    for kind in ("decay", "cleanup", "consolidation"):
        assert f'<td class="nowrap">{kind}</td>' in table, kind
    assert "succeeded" in table
    assert "evaluated" not in overview.text  # a result counts every tenant's rows
    assert "No jobs queued by this tenant yet." in overview.text
