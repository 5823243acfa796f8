"""EngramStore, LangGraph's BaseStore kept in Engram, against a live server: every store
operation sync and async, Engram's versions and search, and a graph that remembers."""

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from engram_client import EngramError, RetryPolicy
from engram_client.langgraph import EngramStore
from tests.support.readme import CLIENTS, examples

FAST = RetryPolicy(retries=2, base_delay=0.01, max_delay=0.05)


@pytest.fixture
async def store(live_url, api_key_for) -> AsyncIterator[EngramStore]:
    """A store on a tenant of its own."""
    async with EngramStore(live_url, api_key=await api_key_for("langgraph"), retry=FAST) as s:
        yield s


async def test_query_pages_are_slices_of_one_ranking(store):
    """Near-identical items, whose order by score differs from Engram's fused order: each
    page is cut from the same hits, so pages never overlap and follow the full ranking."""
    for i in range(5):
        store.put(("pages",), f"doc{i}", {"text": f"test document number {i}"})
    full = [item.key for item in store.search(("pages",), query="test", limit=10)]
    pages = [
        [item.key for item in store.search(("pages",), query="test", limit=2, offset=offset)]
        for offset in (0, 2, 4)
    ]
    assert pages == [full[0:2], full[2:4], full[4:5]]


def _facts(store: EngramStore, **params: str) -> list[dict]:
    page: dict = store.client.request("GET", "/v1/facts", params=params)
    return page["items"]


async def test_put_get_update_and_delete(store):
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (namespace, "doc1")
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}

    store.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(namespace, "doc1")
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at

    assert store.get(("test", "other_documents"), "doc1") is None
    assert store.get(namespace, "doc2") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None


async def test_a_put_on_an_existing_key_is_a_new_version_with_history(store):
    namespace = ("users", "ann")
    for city in ("Paris", "Lyon", "Nantes"):
        store.put(namespace, "city", {"city": city})
    assert store.get(namespace, "city").value == {"city": "Nantes"}

    versions = store.history(namespace, "city")
    assert [version.value["city"] for version in versions] == ["Nantes", "Lyon", "Paris"]
    assert versions[0].updated_at > versions[1].updated_at > versions[2].updated_at
    assert {version.created_at for version in versions} == {versions[-1].created_at}
    facts = _facts(store, scope="users.ann", validity="superseded")
    assert sorted(json.loads(fact["content"])["city"] for fact in facts) == ["Lyon", "Paris"]

    before = store.get(namespace, "city")
    store.put(namespace, "city", {"city": "Nantes"})
    assert len(store.history(namespace, "city")) == 3
    assert store.get(namespace, "city").updated_at > before.updated_at
    assert store.history(namespace, "nothing") == []


async def test_delete_removes_every_version(store):
    namespace = ("users", "bo")
    store.put(namespace, "tea", {"likes": "green"})
    store.put(namespace, "tea", {"likes": "oolong"})
    store.delete(namespace, "tea")
    assert store.get(namespace, "tea") is None
    assert store.history(namespace, "tea") == []
    for validity in ("active", "superseded"):
        assert _facts(store, scope="users.bo", validity=validity) == []
    store.delete(namespace, "tea")  # deleting what is gone is no error


async def test_values_survive_byte_for_byte(store):
    value = {
        "zeta": 1,
        "alpha": [1.5, 0.1, 1e-300, 12345678901234567890, -0.0, True, None],
        "nested": {"b": {"c": ["x", {"d": "é€😀"}]}, "a": ""},
        "text": 'line\nbreak\ttab "quoted" \\ back',
        "nul": "\u0000",
        "中文": "这是中文",
        "empty": {},
    }
    store.put(("bytes",), "k", value)
    got = store.get(("bytes",), "k").value
    assert json.dumps(got, ensure_ascii=False) == json.dumps(value, ensure_ascii=False)
    store.put(("bytes",), "empty", {})
    assert store.get(("bytes",), "empty").value == {}


async def test_keys_and_namespaces_are_exact(store):
    for key in ("Doc", "doc", "doc ", " doc", "DOC", "do c", "do  c", "ｄｏｃ"):
        store.put(("cases",), key, {"key": key})
    for key in ("Doc", "doc", "doc ", " doc", "DOC", "do c", "do  c", "ｄｏｃ"):
        assert store.get(("cases",), key).value == {"key": key}
    store.put(("Foo",), "k", {"v": "upper"})
    store.put(("foo",), "k", {"v": "lower"})
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    assert store.get(("Foo",), "k").value == {"v": "upper"}
    assert store.get(("foo",), "k").value == {"v": "lower"}
    assert {i.namespace for i in store.search(("foo",))} == {("foo",)}
    assert store.get(("users", "alice\n"), "k").value == {"v": 2}
    assert set(store.list_namespaces(suffix=("alice",))) == {("users", "alice")}
    for namespace in [("user_1",), ("userX1",), ("star*",), ("starX",), ("a%b",), ("axxb",)]:
        store.put(namespace, "k", {"v": 1})
    for namespace in [("user_1",), ("star*",), ("a%b",)]:
        assert {i.namespace for i in store.search(namespace)} == {namespace}


async def test_batch_runs_operations_in_order_with_one_result_each(store):
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", None),
            GetOp(("test",), "key3"),
        ]
    )
    assert results[0].value == {"data": "value1"}
    assert results[1] is None and results[5] is None and results[7] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None and results[8] is None
    assert results[6].value == {"data": "value3"}


async def test_list_namespaces_matches_pages_and_cuts_depth(store):
    for namespace in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
        ("foo",),
        ("foobar", "baz"),
    ]:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(max_depth=1) == [
        ("a",),
        ("admin",),
        ("b",),
        ("foo",),
        ("foobar",),
        ("users",),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("foo",)) == [("foo",)]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert len(store.list_namespaces()) == 11
    store.delete(("foo",), "k")
    assert store.list_namespaces(prefix=("foo",)) == []
    conditions = (MatchCondition("prefix", ("a",)), MatchCondition("suffix", ("f",)))
    [listed] = store.batch([ListNamespacesOp(conditions, max_depth=2, limit=10, offset=0)])
    assert listed == [("a", "b"), ("a", "c")]


async def test_search_without_a_query_filters_and_pages_newest_first(store):
    for namespace, key, value in [
        (
            ("test", "docs"),
            "doc1",
            {"title": "First", "author": "Alice", "score": 4.5, "meta": {"lang": "en"}},
        ),
        (
            ("test", "docs"),
            "doc2",
            {"title": "Second", "author": "Bob", "score": 3.0, "meta": {"lang": "fr"}},
        ),
        (("test", "images"), "img1", {"title": "Image", "author": "Alice", "score": 4.0}),
        (("testing",), "other", {"title": "Elsewhere", "author": "Alice"}),
    ]:
        store.put(namespace, key, value)
    assert [i.key for i in store.search(("test",))] == ["img1", "doc2", "doc1"]
    assert {i.key for i in store.search(())} == {"img1", "doc2", "doc1", "other"}
    assert [i.key for i in store.search(("test", "docs"))] == ["doc2", "doc1"]
    assert [i.key for i in store.search(("test",), filter={"author": "Alice"})] == ["img1", "doc1"]
    assert [i.key for i in store.search(("test",), filter={"score": {"$gt": 3.2}})] == [
        "img1",
        "doc1",
    ]
    assert [
        i.key
        for i in store.search(
            ("test",), filter={"score": {"$gte": 3.0, "$lt": 4.5}, "author": {"$ne": "Alice"}}
        )
    ] == ["doc2"]
    assert [i.key for i in store.search(("test",), filter={"meta": {"lang": "fr"}})] == ["doc2"]
    assert [i.key for i in store.search(("test",), limit=2)] == ["img1", "doc2"]
    assert [i.key for i in store.search(("test",), offset=2)] == ["doc1"]
    assert all(i.score is None for i in store.search(("test",)))
    assert store.search(("tes",)) == []


async def test_filters_the_server_cannot_hold_still_filter(store):
    """Dotted keys read nested fields; infinities, NaN, huge numbers and NUL characters, which
    the server's filter refuses, are judged by the store instead of failing the search."""
    store.put(("items",), "cheap", {"price": 10, "user": {"access-level": "guest"}})
    store.put(("items",), "dear", {"price": 30, "user.access-level": "admin"})
    keys = lambda wanted: sorted(i.key for i in store.search(("items",), filter=wanted))  # noqa: E731
    assert keys({"user.access-level": "guest"}) == ["cheap"]
    assert keys({"user.access-level": "admin"}) == ["dear"]
    assert keys({"price": {"$lt": float("inf")}}) == ["cheap", "dear"]
    assert keys({"price": {"$gt": float("-inf"), "$lt": 20}}) == ["cheap"]
    assert keys({"price": {"$lt": 10**400}}) == ["cheap", "dear"]
    assert keys({"price": float("nan")}) == []
    assert keys({"user.access-level": "guest\x00' OR '1'='1"}) == []
    assert [
        i.key
        for i in store.search(
            ("items",),
            query="price",
            filter={"price": {"$gte": float("-inf")}, "user.access-level": "guest"},
        )
    ] == ["cheap"]


async def test_search_with_a_query_is_engrams_search_in_the_namespace(store):
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(("test",), key, value)
    store.put(("elsewhere",), "doc5", {"text": "red apple", "color": "red"})

    apples = store.search(("test",), query="apple", filter={"color": "red"})
    assert [i.key for i in apples] == ["doc1", "doc2"]
    assert apples[0].score > apples[1].score
    cars = store.search(("test",), query="car", filter={"color": "red"})
    assert [i.key for i in cars] == ["doc2", "doc1"]
    blue = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert {i.key for i in blue} == {"doc1", "doc3", "doc4"}
    green = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [i.key for i in green] == ["doc3"]

    first, second = (
        store.search(("test",), query="car", limit=2, offset=offset) for offset in (0, 2)
    )
    assert len(first) == len(second) == 2
    assert {i.key for i in first} | {i.key for i in second} == {"doc1", "doc2", "doc3", "doc4"}
    for query in ("", "car " * 100, "car!@#$%^&*()"):
        assert len(store.search(("test",), query=query)) == 4
    store.put(("test",), "doc4", {"text": "yellow submarine", "color": "yellow", "score": 3.5})
    assert store.search(("test",), query="submarine")[0].key == "doc4"
    assert store.search(("test",), query="blue car", filter={"color": "blue"}) == []
    everywhere = store.search((), query="red apple", limit=10)
    assert {i.key for i in everywhere[:2]} == {"doc1", "doc5"}
    assert len(everywhere) == 5

    store.search_mode = "semantic"
    semantic = store.search(("test",), query="green apple")
    assert semantic[0].key == "doc3" and 0.3 < semantic[0].score <= 1.0  # a cosine
    assert [i.score for i in semantic] == sorted((i.score for i in semantic), reverse=True)


async def test_a_query_over_many_namespaces_searches_the_tenant_and_keeps_the_prefix(store):
    topics = [
        "tennis on Sundays",
        "knitting scarves",
        "baking sourdough",
        "chess openings",
        "watching birds",
        "growing tomatoes",
        "learning Welsh",
        "climbing walls",
        "playing the cello",
        "collecting stamps",
    ]
    for n, topic in enumerate(topics):
        store.put(("hobbies", f"user{n}"), "hobby", {"text": f"This user enjoys {topic}."})
    store.put(("other",), "hobby", {"text": "This user enjoys baking sourdough."})
    found = store.search(("hobbies",), query="bread baking", limit=3)
    assert found[0].namespace == ("hobbies", "user2")
    assert len(found) == 3 and all(i.namespace[0] == "hobbies" for i in found)
    assert len(store.search(("hobbies",), query="hobby", limit=20)) == 10


async def test_search_finds_non_ascii_text(store):
    for key, text in [
        ("1", "这是中文"),
        ("2", "これは日本語です"),
        ("3", "이건 한국어야"),
        ("4", "Это русский"),
        ("5", "यह रूसी है"),
    ]:
        store.put(("user_123", "memories"), key, {"text": text})
    for key, text in [("1", "这是中文"), ("3", "이건 한국어야"), ("4", "Это русский")]:
        assert store.search(("user_123", "memories"), query=text)[0].key == key


async def test_what_engram_cannot_carry_is_refused(store):
    with pytest.raises(NotImplementedError):
        store.put(("ttl",), "k", {"v": 1}, ttl=5)
    with pytest.raises(NotImplementedError):
        store.batch([PutOp(("ttl",), "k", {"v": 1}, ttl=5.0)])
    for namespace in [(), ("langgraph", "x"), ("a.b",), ("a", "")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", {"v": 1})
        if namespace != ("langgraph", "x"):  # as LangGraph's stores: only put() refuses it
            with pytest.raises(InvalidNamespaceError):
                store.batch([PutOp(namespace, "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(EngramError) as raised:
        store.put(("big",), "k", {"text": "x" * 60_000})
    assert raised.value.status == 422 and "body.items.0.content" in str(raised.value)
    assert store.list_namespaces() == []


async def test_batch_may_put_under_the_root_label_langgraph_as_langgraphs_stores_do(store):
    store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])
    assert store.get(("langgraph", "x"), "k").value == {"v": 1}
    await store.abatch([PutOp(("langgraph", "y"), "k", {"v": 2})])
    assert (await store.aget(("langgraph", "y"), "k")).value == {"v": 2}


async def test_an_item_put_with_index_false_is_never_found_by_a_query(store):
    store.put(("docs",), "hidden", {"text": "the secret recipe for apple pie"}, index=False)
    store.put(("docs",), "shown", {"text": "a recipe for apple crumble"})
    for mode in (None, "semantic", "keyword"):
        store.search_mode = mode
        assert [i.key for i in store.search(("docs",), query="apple pie recipe")] == ["shown"]
        assert [i.key for i in store.search((), query="secret apple pie")] == ["shown"]
    assert store.get(("docs",), "hidden").value == {"text": "the secret recipe for apple pie"}
    assert {i.key for i in store.search(("docs",))} == {"hidden", "shown"}
    store.put(("docs",), "hidden", {"text": "the secret recipe for apple pie, shared"})
    assert "hidden" in {i.key for i in store.search(("docs",), query="apple pie recipe")}


async def test_score_is_the_similarity_comparable_across_queries(store):
    store.put(("pets",), "cat", {"text": "My cat sleeps on the sofa all afternoon."})
    store.put(("pets",), "fish", {"text": "Goldfish need a filtered tank."})
    close = store.search(("pets",), query="Where does my cat sleep?")
    far = store.search(("pets",), query="quarterly tax filing deadlines")
    assert close[0].key == "cat"
    cat_far = next(i for i in far if i.key == "cat")
    assert close[0].score > cat_far.score
    found = store.client.search(
        "Where does my cat sleep?", types=["fact"], limit=5, min_confidence=0.0, scope="pets"
    )
    assert close[0].score == pytest.approx(found.results[0].similarity)
    assert [i.score for i in close] == sorted((i.score for i in close), reverse=True)


async def test_the_async_operations_do_the_same(store):
    namespace = ("async", "docs")
    await store.aput(namespace, "doc1", {"text": "Ann lives in Lyon"})
    await store.aput(namespace, "doc1", {"text": "Ann lives in Nantes"})
    await store.aput(("async", "other"), "doc2", {"text": "Bo drinks green tea"})
    assert (await store.aget(namespace, "doc1")).value == {"text": "Ann lives in Nantes"}
    assert [v.value["text"] for v in await store.ahistory(namespace, "doc1")] == [
        "Ann lives in Nantes",
        "Ann lives in Lyon",
    ]
    found = await store.asearch(("async",), query="Where does Ann live?")
    assert [i.key for i in found] == ["doc1", "doc2"]
    assert await store.alist_namespaces(prefix=("async",)) == [
        ("async", "docs"),
        ("async", "other"),
    ]
    results = await store.abatch(
        [
            GetOp(namespace, "doc1"),
            PutOp(namespace, "doc1", None),
            GetOp(namespace, "doc1"),
            SearchOp(("async",), limit=10),
        ]
    )
    assert results[0].key == "doc1" and results[1] is None and results[2] is None
    assert [i.key for i in results[3]] == ["doc2"]
    await store.adelete(("async", "other"), "doc2")
    assert await store.alist_namespaces() == []


@dataclass
class User:
    user_id: str


class Turn(TypedDict):
    message: str
    answer: str


def _memory_node(state: Turn, runtime: Runtime[User]) -> dict[str, str]:
    """Remember what follows 'remember:', else answer from the user's memories."""
    namespace = ("memories", runtime.context.user_id)
    if state["message"].startswith("remember:"):
        runtime.store.put(
            namespace,
            str(uuid.uuid4()),
            {"text": state["message"].removeprefix("remember:").strip()},
        )
        return {"answer": "noted"}
    hits = runtime.store.search(namespace, query=state["message"], limit=1)
    return {"answer": hits[0].value["text"] if hits else "I don't know"}


async def test_a_graph_remembers_in_one_thread_and_recalls_in_another(store):
    builder = StateGraph(Turn, context_schema=User)
    builder.add_node("memory", _memory_node)
    builder.add_edge(START, "memory")
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)

    def say(thread: str, user: str, message: str) -> str:
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        answer: str = graph.invoke({"message": message}, config, context=User(user))["answer"]
        return answer

    assert say("first", "ann", "remember: Ann's favourite colour is green") == "noted"
    assert say("first", "ann", "remember: Ann's dog is called Rex") == "noted"
    assert say("second", "ann", "What colour does Ann like?") == ("Ann's favourite colour is green")
    assert say("third", "ann", "What is the name of her dog?") == "Ann's dog is called Rex"
    assert say("fourth", "bo", "What colour does Ann like?") == "I don't know"
    second = graph.get_state({"configurable": {"thread_id": "second"}}).values
    assert second["message"] == "What colour does Ann like?"
    assert len(store.search(("memories", "ann"))) == 2


async def test_the_documented_example_runs_as_written(live_url, api_key_for):
    [example] = examples("LangGraph", "python", CLIENTS)
    key = await api_key_for("langgraph-readme")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ENGRAM_URL": live_url, "ENGRAM_API_KEY": key},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Ann's favourite colour is green"


async def test_calls_started_together_run_as_a_few_bulk_requests_in_order(store):
    sent: list[str] = []

    async def count(request) -> None:
        sent.append(f"{request.method} {request.url.path}")

    store.aclient._http.event_hooks["request"].append(count)
    await store.aput(("old",), "gone", {"v": 0})
    sent.clear()
    calls = []
    for n in range(100):
        namespace = ("many", str(n % 2))
        calls += [
            store.aput(namespace, f"key{n}", {"n": n}),
            store.aget(namespace, f"key{n}"),
            store.alist_namespaces(prefix=("many",)),
            store.asearch(("many",), limit=1000),
            store.aput(namespace, f"key{n}", {"n": n, "again": True}),
        ]
    calls += [store.adelete(("old",), "gone"), store.aget(("old",), "gone")]
    results = await asyncio.gather(*calls)
    assert len(sent) <= 10, sent
    assert [results[5 * n + 1].value for n in range(100)] == [{"n": n} for n in range(100)]
    assert results[2] == [("many", "0")]
    assert results[5 * 99 + 2] == [("many", "0"), ("many", "1")]
    assert [len(results[5 * n + 3]) for n in (0, 1, 99)] == [1, 2, 100]
    assert results[-1] is None
    assert (await store.aget(("many", "1"), "key99")).value == {"n": 99, "again": True}
    assert len(await store.asearch(("many",), limit=1000)) == 100
    assert [v.value for v in await store.ahistory(("many", "0"), "key0")] == [
        {"n": 0, "again": True},
        {"n": 0},
    ]


async def test_one_bad_call_among_calls_started_together_fails_only_itself(store):
    good = store.aput(("ok",), "k", {"v": 1})
    bad = store.aput(("ok",), "big", {"text": "x" * 60_000})
    read = store.aget(("ok",), "k")
    results = await asyncio.gather(good, bad, read, return_exceptions=True)
    assert results[0] is None
    assert isinstance(results[1], EngramError) and results[1].status == 422
    assert results[2].value == {"v": 1}


async def test_filters_and_pages_are_decided_by_the_server(store):
    """A filtered listing reads only the items the filter admits, not every item of the
    store; a filtered query search asks the server for them alone."""
    await store.abatch(
        [PutOp(("bulk", str(n % 3)), f"k{n}", {"kind": "common", "n": n}) for n in range(450)]
    )
    rare = [
        await store.aput(
            ("bulk", "1"), f"rare{n}", {"kind": "rare", "n": 1000 + n, "about": "green tea"}
        )
        for n in range(3)
    ]
    assert rare == [None] * 3
    sent: list[str] = []

    async def count(request) -> None:
        sent.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")

    store.aclient._http.event_hooks["request"].append(count)
    listed = await store.asearch(("bulk",), filter={"kind": "rare"}, limit=10)
    assert sorted(item.key for item in listed) == ["rare0", "rare1", "rare2"]
    assert [line.split("?")[0] for line in sent] == ["GET /v1/facts"], sent
    sent.clear()
    ranged = await store.asearch(("bulk", "1"), filter={"n": {"$gte": 1001}}, limit=10)
    assert sorted(item.key for item in ranged) == ["rare1", "rare2"]
    assert len(sent) == 1
    sent.clear()
    found = await store.asearch(("bulk",), query="green tea", filter={"kind": "rare"}, limit=2)
    assert len(found) == 2 and all(item.value["kind"] == "rare" for item in found)
    assert [line.split("?")[0] for line in sent] == ["POST /v1/search"], sent
    assert len(await store.asearch(("bulk",), limit=500)) == 453
