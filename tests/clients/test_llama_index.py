"""LlamaIndex with Engram against a live server: a chat engine on the framework's MockLLM, whose
Memory has an EngramMemoryBlock, hands old turns to Engram and a later session gets them
back, with Engram's facts, in the prompt."""

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory

from engram_client import AsyncEngramClient
from engram_client.llama_index import EngramMemoryBlock
from tests.support.readme import CLIENTS, examples


def chat(engram: AsyncEngramClient, session_id: str) -> SimpleChatEngine:
    """A chat engine whose short-term memory keeps only the last turn or so; MockLLM answers
    with the prompt it was given, memory included."""
    memory = Memory.from_defaults(
        session_id=session_id,
        token_limit=100,
        token_flush_size=20,
        memory_blocks=[EngramMemoryBlock(client=engram, butler="chat")],
    )
    return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)


async def test_a_later_session_gets_the_turns_an_earlier_one_let_go(engram):
    monday = chat(engram, "monday")
    for said in (
        "Ann's favourite colour is green.",
        "Her dog is called Rex.",
        "She lives in Lyon.",
    ):
        await monday.achat(said)
    stored = (await engram.list_page("episodes", session_id="monday"))["items"]
    assert "Ann's favourite colour is green." in [episode["content"] for episode in stored]
    assert {episode["butler"] for episode in stored} == {"chat"}
    assert {episode["metadata"]["role"] for episode in stored} == {"user", "assistant"}

    await engram.store_fact("Ann", "pet", "Ann has a dog called Rex.", scope="chat")
    answer = (await chat(engram, "tuesday").achat("What colour does Ann like?")).response
    assert "Ann's favourite colour is green." in answer
    assert "[Ann] [pet]: Ann has a dog called Rex." in answer


async def test_a_block_with_nothing_to_give_adds_nothing(engram):
    block = EngramMemoryBlock(client=engram)
    assert await block.aget([]) == ""
    engine = chat(engram, "empty")
    answer = (await engine.achat("Hello there")).response
    assert "Memory Context" not in answer and "Past Conversation" not in answer


def test_the_documented_example_compiles():
    [example] = examples("LlamaIndex", "python", CLIENTS)
    compile(example, "docs/clients.md", "exec")
