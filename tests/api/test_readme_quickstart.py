"""The README's first store-and-search, curl and Python, against a live server as written."""

import asyncio
import json
import os
import re
import subprocess
import sys

import httpx

from tests.support.paths import REPO_ROOT
from tests.support.readme import examples

SECTION = "Store a memory and find it"
README_URL = "http://127.0.0.1:8000"


def curl_requests(block: str) -> list[tuple[str, dict]]:
    """Each `curl -s <url> ... -d '<json>'` of a bash block as (path, parsed body)."""
    commands = re.split(r"^curl ", block, flags=re.M)[1:]
    requests = []
    for command in commands:
        [path] = re.findall(rf"{re.escape(README_URL)}(/\S+)", command)
        [body] = re.findall(r"-d '(.*?)'", command, flags=re.S)
        requests.append((path, json.loads(body)))
    return requests


async def test_the_curl_example_stores_an_episode_and_finds_it(live_url, api_key_for):
    [block] = examples(SECTION, "bash")
    [(store_path, episode), (search_path, query)] = curl_requests(block)
    key = await api_key_for("readme-curl")
    async with httpx.AsyncClient(
        base_url=live_url, headers={"Authorization": f"Bearer {key}"}
    ) as http:
        stored = await http.post(store_path, json=episode)
        found = await http.post(search_path, json=query)
    assert stored.status_code == 201, stored.text
    assert found.status_code == 200, found.text
    assert found.json()["results"][0]["id"] == stored.json()["id"]


async def test_the_python_example_runs_as_written(live_url, api_key_for):
    [example] = examples(SECTION, "python")
    key = await api_key_for("readme-python")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "ENGRAM_URL": live_url, "ENGRAM_API_KEY": key},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Ann lives in Lyon."


def test_the_examples_talk_to_the_address_the_service_starts_on():
    [block] = examples(SECTION, "bash")
    [example] = examples(SECTION, "python")
    assert len(curl_requests(block)) == 2
    assert f'"{README_URL}"' in example
    assert "engram serve --no-auth" in examples("Start", "bash")[0]
