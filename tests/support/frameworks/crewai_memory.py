"""CrewAI: a crew with `EngramMemory` whose agent's LLM is an OpenAI-compatible stub on
loopback; prints the crew's answer, the episodes stored, what recall found, and what it
found once reset."""

import json
import sys
from typing import Any

from crewai import LLM, Agent, Crew, Task

from engram_client import EngramClient, RetryPolicy
from engram_client.crewai import EngramMemory

ANN = "Ann's favourite colour is green"


def main(url: str, key: str, llm_url: str) -> dict[str, Any]:
    """The observations, by name."""
    seen: dict[str, Any] = {}
    with EngramClient(url, api_key=key, retry=RetryPolicy(retries=2)) as engram:
        memory = EngramMemory(engram, butler="crew")
        memory.remember(ANN, categories=["people"], agent_role="planner")
        agent = Agent(
            role="assistant",
            goal="Answer questions about people",
            backstory="You know the team.",
            llm=LLM(model="gpt-4o-mini", base_url=llm_url, api_key="stub"),
        )
        task = Task(
            description="What colour does Ann like?", expected_output="A colour", agent=agent
        )
        result = Crew(agents=[agent], tasks=[task], memory=memory).kickoff()
        seen["answer"] = result.raw
        seen["episodes"] = [
            {k: row[k] for k in ("content", "metadata")}
            for row in engram.list_page("episodes", butler="crew")["items"]
        ]
        seen["recalled"] = [m.record.content for m in memory.recall("Ann colour", limit=3)]
        seen["categories"] = [m.record.categories for m in memory.recall("Ann colour", limit=1)]
        memory.reset()
        seen["after_reset"] = [m.record.content for m in memory.recall("Ann colour")]
    return seen


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
