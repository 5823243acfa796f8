"""Each Claude Code event answered as its documented contract says, against a live_url Engram:
SessionStart's context, only new memories at a prompt, Stop's last reply, and PreCompact and
SessionEnd handing their upload to a process that outlives them."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from engram_client.hooks.config import butler_for
from tests.support.hooks import (
    FIRST_SESSION,
    SECOND_SESSION,
    episodes,
    hook,
    hook_env,
    payload,
    stored_when,
    transcript_copy,
)

# The five turns of the recorded transcript, as stored.
TURNS = [
    "user: Our staging database is called quartz-owl and it listens on port 6543. "
    "Please set up the connection string for it.",
    "assistant: I'll add the quartz-owl connection string to config/database.yml.",
    "assistant: Done: config/database.yml now points at quartz-owl on port 6543.",
    "user: Thanks. Also note that migrations run with the flyway tool.",
    "assistant: Noted: migrations use flyway.",
]


def contents(url: str, key: str, butler: str) -> list[str]:
    """The contents of the butler's episodes, oldest first."""
    return [episode["content"] for episode in episodes(url, key, butler)]


def add_fact(url: str, key: str, butler: str, predicate: str, content: str) -> None:
    """A fact of the project's scope (what consolidation would learn)."""
    httpx.post(
        f"{url}/v1/facts",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
        json={"subject": "staging", "predicate": predicate, "content": content, "scope": butler},
    ).raise_for_status()


def injected(done: subprocess.CompletedProcess[str], event: str) -> str:
    """The additional context a hook printed, in the shape Claude Code reads."""
    assert done.returncode == 0, done.stderr
    specific = json.loads(done.stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == event
    return str(specific["additionalContext"])


def git_project(tmp_path: Path) -> Path:
    """A checkout (a `.git` directory) with a `src` directory."""
    project = tmp_path / "helios-api"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    return project


async def test_a_fact_of_the_first_session_is_in_the_seconds_session_start(
    live_url: str, api_key_for: Any, tmp_path: Path
) -> None:
    key = await api_key_for("claude-code-start")
    project = git_project(tmp_path)
    butler = butler_for(str(project))
    env = hook_env(tmp_path, live_url, key, ENGRAM_HOOK_TIMEOUT="60")
    first = transcript_copy(tmp_path, "first.jsonl", FIRST_SESSION)
    stopped = hook("Stop", payload("stop", cwd=str(project), transcript_path=str(first)), env)
    assert (stopped.returncode, stopped.stdout) == (0, ""), stopped.stderr
    add_fact(live_url, key, butler, "migrated with", "Staging migrations run with flyway")
    second = tmp_path / "second.jsonl"  # a new session: Claude Code has not written it yet

    started = hook(
        "SessionStart",
        payload("session_start", cwd=str(project / "src"), transcript_path=str(second)),
        env,
    )

    context = injected(started, "SessionStart")
    assert context.startswith("<engram-memory>") and context.endswith("</engram-memory>")
    assert "## Key Facts" in context and "Staging migrations run with flyway" in context
    assert "## Recent conversations in this project" in context
    assert all(turn in context for turn in TURNS)
    # The prompt finds the same memories: the session was shown them, they are not repeated.
    prompt = payload("user_prompt_submit", cwd=str(project / "src"), transcript_path=str(second))
    repeated = hook("UserPromptSubmit", prompt, env)
    assert (repeated.returncode, repeated.stdout) == (0, ""), repeated.stderr

    add_fact(live_url, key, butler, "listens on", "The staging database listens on port 6543")
    newer = injected(hook("UserPromptSubmit", prompt, env), "UserPromptSubmit")

    assert "listens on port 6543" in newer
    assert "flyway" not in newer and "quartz-owl" not in newer
    # A resumed session kept its context; a compacted one lost it and is given it all again.
    start = payload("session_start", cwd=str(project), transcript_path=str(second))
    resumed = hook("SessionStart", start.replace('"startup"', '"resume"'), env)
    assert (resumed.returncode, resumed.stdout) == (0, ""), resumed.stderr
    compacted = hook("SessionStart", start.replace('"startup"', '"compact"'), env)
    again = injected(compacted, "SessionStart")
    assert "flyway" in again and "listens on port 6543" in again


async def test_stop_stores_the_last_reply_the_transcript_lacks_once(
    live_url: str, api_key_for: Any, tmp_path: Path
) -> None:
    key = await api_key_for("claude-code-last-reply")
    project = tmp_path / "shop"
    project.mkdir()
    butler = butler_for(str(project))
    env = hook_env(tmp_path, live_url, key, ENGRAM_HOOK_TIMEOUT="60")
    first = transcript_copy(tmp_path, "first.jsonl", FIRST_SESSION)
    lines = first.read_text().splitlines(keepends=True)
    last = lines.pop()  # the final reply, not yet written when Stop fires
    first.write_text("".join(lines))
    reply = "Noted: migrations use flyway."
    stop = payload(
        "stop", cwd=str(project), transcript_path=str(first), last_assistant_message=reply
    )

    assert hook("Stop", stop, env).returncode == 0
    assert contents(live_url, key, butler) == TURNS
    assert hook("Stop", stop, env).returncode == 0  # Stop again, the transcript still behind
    with first.open("a") as transcript:
        transcript.write(last)  # the transcript catches up
    assert hook("Stop", stop, env).returncode == 0

    assert contents(live_url, key, butler) == TURNS
    # A reply the transcript already holds is not stored from the payload as well.
    other = transcript_copy(tmp_path, "other.jsonl", SECOND_SESSION)
    whole = payload(
        "stop",
        session_id=SECOND_SESSION,
        cwd=str(project),
        transcript_path=str(other),
        last_assistant_message=reply,
    )
    assert hook("Stop", whole, env).returncode == 0
    assert contents(live_url, key, butler) == TURNS + TURNS


def run_killed_at(
    event: str, stdin: str, env: dict[str, str], seconds: float
) -> tuple[int | None, float]:
    """`engram hook <event>` as Claude Code runs it, its process group killed `seconds` after
    it started unless it ended before; (its exit code, None when killed, and how long it
    ran)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "hook", event],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,
    )
    try:
        process.communicate(stdin, timeout=max(seconds - (time.monotonic() - started), 0.01))
        return process.returncode, time.monotonic() - started
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None, time.monotonic() - started


async def test_a_session_end_killed_at_its_timeout_still_stores_every_turn(
    live_url: str, api_key_for: Any, tmp_path: Path
) -> None:
    key = await api_key_for("claude-code-session-end")
    project = tmp_path / "shop"
    project.mkdir()
    butler = butler_for(str(project))
    env = hook_env(tmp_path, live_url, key)
    first = transcript_copy(tmp_path, "first.jsonl", FIRST_SESSION)
    stdin = payload("session_end", cwd=str(project), transcript_path=str(first))

    code, _ = run_killed_at("SessionEnd", stdin, env, 1.5)

    assert code in (0, None)
    assert stored_when(lambda stored: len(stored) >= 5, live_url, key, butler) == TURNS


def test_pre_compact_and_session_end_return_before_the_upload_ends(tmp_path: Path) -> None:
    listener = socket.socket()  # takes connections, never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = hook_env(tmp_path, url, ENGRAM_HOOK_TIMEOUT="30", ENGRAM_HOOK_UPLOAD_TIMEOUT="3")
    first = transcript_copy(tmp_path, "first.jsonl", FIRST_SESSION)
    log = tmp_path / "state" / "engram" / "claude-code" / "uploads.log"
    try:
        for event, name in (("PreCompact", "pre_compact"), ("SessionEnd", "session_end")):
            started = time.monotonic()
            done = hook(event, payload(name, cwd=str(tmp_path), transcript_path=str(first)), env)
            waited = time.monotonic() - started

            assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
            assert waited < 10  # starting Python on a busy machine; an upload would take 30
        # Each upload ends by itself (at its deadline, or waiting for the other's lock) and
        # says so in the log.
        give_up = time.monotonic() + 60
        while len(log.read_text().splitlines()) < 2 and time.monotonic() < give_up:
            time.sleep(0.1)
    finally:
        listener.close()
    ended = log.read_text()
    assert f"PreCompact {FIRST_SESSION}: " in ended and f"SessionEnd {FIRST_SESSION}: " in ended
