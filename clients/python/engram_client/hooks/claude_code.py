"""`engram hook <event>`: Claude Code's hook events answered from, and stored in, a running
Engram.

SessionStart and UserPromptSubmit add the project's memories to the model's context, only
those the session was not shown yet; Stop stores the turn's new words as episodes;
PreCompact and SessionEnd hand that to a detached process and return at once. A hook never
fails the agent's turn: on any error, or when its deadline passes, it prints nothing and
exits 0.
"""

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

from engram_client.hooks.block import (
    EARLIER_TURNS_HEADING,
    RECENT_TURNS_HEADING,
    Item,
    context_items,
    memory_block,
    turn_items,
)
from engram_client.hooks.capture import capture
from engram_client.hooks.client import Engram, describe, log
from engram_client.hooks.config import (
    CONTEXT_EVENTS,
    HANDOFF_EVENTS,
    Deadline,
    HookConfig,
    project_dir,
)
from engram_client.hooks.handoff import hand_off
from engram_client.hooks.state import ShownMemories, StateLocked
from engram_client.hooks.transcript import last_prompts, read_turns

# An earlier turn is shown only when at least this similar to the prompt: unrelated prompts
# score under 0.11 against a project's turns with the packaged model, related ones 0.24 up.
MIN_TURN_SIMILARITY = 0.2
EARLIER_TURNS = 10
PRINT_MARGIN_SECONDS = 0.25
MAX_QUERY_CHARS = 4000
# SessionStart of a resumed or compacted session looks for what its last prompts were about.
START_PROMPTS = 3
# How long noting what was shown may wait for another hook of the session.
STATE_WAIT_SECONDS = 0.5


@dataclass(frozen=True)
class Injection:
    """What a context event adds: the block (may be empty), its items, and whether the
    context was emptied before it (a new, cleared or compacted session)."""

    event: str
    session_id: str | None
    block: str
    keys: list[str]
    fresh: bool

    def output(self) -> str:
        """The hook's stdout: the block as `hookSpecificOutput.additionalContext`."""
        if not self.block:
            return ""
        specific = {"hookEventName": self.event, "additionalContext": self.block}
        return json.dumps({"hookSpecificOutput": specific})


def _query(text: str) -> str:
    return " ".join(text.split())[:MAX_QUERY_CHARS]


def _context_request(query: str, butler: str, token_budget: int) -> dict[str, Any]:
    """`POST /v1/context` for the whole budget (facts already shown leave room for others;
    the block is cut to its share here), within what the endpoint takes."""
    return {
        "trigger_prompt": query,
        "butler": butler,
        "token_budget": max(10, min(token_budget, 100_000)),
    }


def search_memories(
    engram: Engram, query: str, butler: str, session_id: str | None, token_budget: int
) -> tuple[list[Item], list[Item]]:
    """The facts and rules for `query` and the turns of the project's other sessions like it,
    asked for at once; what came back before the deadline."""
    context_request = _context_request(query, butler, token_budget)
    search_request: dict[str, Any] = {
        "query": query,
        "types": ["episode"],
        "scope": butler,
        "limit": EARLIER_TURNS,
    }
    if session_id:
        search_request["filter"] = {"session_id": {"$ne": session_id}}
    pool = ThreadPoolExecutor(max_workers=2)
    context = pool.submit(engram.call, "POST", "/v1/context", json=context_request)
    earlier = pool.submit(engram.call, "POST", "/v1/search", json=search_request)
    # Keep time to print what came back when one of the two is late.
    wait_for([context, earlier], timeout=max(engram.deadline.left() - PRINT_MARGIN_SECONDS, 0.001))
    pool.shutdown(wait=False)
    hits = (_answer(earlier, "search") or {}).get("results", [])
    similar = [
        hit
        for hit in hits
        if hit.get("similarity") is None or hit["similarity"] >= MIN_TURN_SIMILARITY
    ]
    return context_items(_answer(context, "context")), turn_items(similar, EARLIER_TURNS_HEADING)


def start_memories(
    engram: Engram, payload: dict[str, Any], butler: str, config: HookConfig
) -> tuple[list[Item], list[Item]]:
    """SessionStart's memories. A resumed or compacted session's last prompts are the query;
    a new one gets the project's most recent turns of other sessions, and the facts and rules
    for what they (else the project's name) are about."""
    session_id = _session_id(payload)
    transcript = payload.get("transcript_path")
    path = Path(transcript).expanduser() if isinstance(transcript, str) and transcript else None
    turns = read_turns(path) if path is not None and path.is_file() else []
    if query := _query(" ".join(last_prompts(turns, START_PROMPTS))):
        return search_memories(engram, query, butler, session_id, config.token_budget)
    params: dict[str, Any] = {"butler": butler, "limit": EARLIER_TURNS}
    if session_id:
        params["filter"] = json.dumps({"session_id": {"$ne": session_id}})
    try:
        recent = engram.call("GET", "/v1/episodes", params=params)["items"][::-1]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
        log(f"recent turns: {describe(error)}")
        recent = []
    cwd = payload.get("cwd")
    name = os.path.basename(project_dir(config.project_dir, cwd if isinstance(cwd, str) else None))
    query = _query(" ".join([name, *(str(turn.get("content", "")) for turn in recent)]))
    try:
        answer = engram.call(
            "POST", "/v1/context", json=_context_request(query, butler, config.token_budget)
        )
    except (httpx.HTTPError, ValueError) as error:
        log(f"context: {describe(error)}")
        answer = None
    return context_items(answer), turn_items(recent, RECENT_TURNS_HEADING)


def _answer(future: Any, name: str) -> Any:
    if not future.done():
        log(f"{name}: no answer before the deadline")
        return None
    try:
        return future.result()
    except (httpx.HTTPError, ValueError) as error:
        log(f"{name}: {describe(error)}")
        return None


def _session_id(payload: dict[str, Any]) -> str | None:
    session_id = payload.get("session_id")
    return session_id[:200] if isinstance(session_id, str) and session_id.strip() else None


def inject(
    engram: Engram, event: str, payload: dict[str, Any], butler: str, config: HookConfig
) -> Injection:
    """The memories a context event adds: those the session was not shown yet (all of them
    after SessionStart other than a resume, whose context kept what it was shown)."""
    session_id = _session_id(payload)
    if event == "SessionStart":
        facts, turns = start_memories(engram, payload, butler, config)
    else:
        prompt = payload.get("prompt")
        query = _query(prompt if isinstance(prompt, str) else "")
        facts, turns = (
            search_memories(engram, query, butler, session_id, config.token_budget)
            if query
            else ([], [])
        )
    fresh = event == "SessionStart" and payload.get("source") != "resume"
    shown: set[str] = set()
    if session_id is not None and not fresh:
        shown = ShownMemories.read(config.state_dir, session_id).ids
    block, chosen = memory_block(
        butler,
        [item for item in facts if item.key not in shown],
        [item for item in turns if item.key not in shown],
        config.token_budget,
    )
    return Injection(event, session_id, block, [item.key for item in chosen], fresh)


def handle(
    event: str, payload: dict[str, Any], config: HookConfig, deadline: Deadline
) -> Injection | None:
    """What `event` adds to the context (None for the capturing events)."""
    butler = config.butler_of(payload.get("cwd"))
    if event in HANDOFF_EVENTS:
        hand_off(event, payload, config)
        return None
    engram = Engram(config, deadline)
    try:
        if event in CONTEXT_EVENTS:
            return inject(engram, event, payload, butler, config)
        session_id = _session_id(payload)
        transcript = payload.get("transcript_path")
        if session_id is None:
            log(f"{event}: the payload has no session_id")
            return None
        path = Path(transcript).expanduser() if isinstance(transcript, str) else Path("")
        reply = payload.get("last_assistant_message")
        capture(engram, path, butler, session_id, config.state_dir, reply)
        return None
    finally:
        engram.close()


def note_shown(config: HookConfig, injection: Injection, printed: bool) -> None:
    """Note which memories the session was shown (all it had, when its context was emptied
    before the block)."""
    if injection.session_id is None or not (injection.fresh or printed):
        return
    try:
        with ShownMemories.locked(
            config.state_dir, injection.session_id, STATE_WAIT_SECONDS
        ) as shown:
            if injection.fresh:
                shown.ids = set()
            if printed:
                shown.add(injection.keys)
            shown.save()
    except (OSError, StateLocked) as error:
        log(f"{injection.event}: what was shown is not noted ({describe(error)})")


def run_hook(event: str, config: HookConfig, stdin: TextIO, stdout: TextIO) -> int:
    """Run one hook event within the deadline; always 0 (an error is one line on stderr)."""
    deadline = Deadline(config.timeout)
    # Whatever hangs (a DNS lookup, a lock), the process ends at the deadline.
    watchdog = threading.Timer(config.timeout, _give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        payload = json.loads(stdin.read() or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the payload is not a JSON object")
        injection = handle(event, payload, config, deadline)
        printed = False
        if injection is not None and injection.block and not deadline.passed():
            stdout.write(injection.output() + "\n")
            stdout.flush()
            printed = True
        if injection is not None:
            note_shown(config, injection, printed)
    except Exception as error:  # the agent's turn goes on whatever happened here
        log(f"{event}: {describe(error)}")
    finally:
        watchdog.cancel()
    return 0


def _give_up() -> None:
    log("deadline passed; nothing done")
    os._exit(0)
