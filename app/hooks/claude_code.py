"""`engram hook <event>`: Claude Code's hook events answered from, and stored in, a running
Engram.

UserPromptSubmit prints the project's memory block for the prompt; Stop, PreCompact and
SessionEnd store the transcript's new turns as episodes. A hook never fails the agent's
turn: on any error, or when its deadline passes, it prints nothing and exits 0.
"""

import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import httpx

from app.hooks.injected import neutralise, wrap
from app.hooks.state import CapturedTurns
from app.hooks.transcript import Turn, read_turns

CONTEXT_EVENTS = ("UserPromptSubmit",)
CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
EVENTS = CONTEXT_EVENTS + CAPTURE_EVENTS

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_SECONDS = 3.0
DEFAULT_TOKEN_BUDGET = 1500
# Facts and rules (the context endpoint) may use this share of the budget; earlier turns of
# the project's other sessions get what they leave.
FACTS_AND_RULES_SHARE = 0.6
# An earlier turn is shown only when it is at least this similar to the prompt.
MIN_TURN_SIMILARITY = 0.3
EARLIER_TURNS = 10
MAX_LINE_CHARS = 600
PRINT_MARGIN_SECONDS = 0.25
MAX_QUERY_CHARS = 4000
MAX_CONTENT_CHARS = 50_000
MAX_NAME_CHARS = 200
EPISODES_PER_REQUEST = 50
TURN_IDS_PER_QUERY = 100
SOURCE = "claude-code"


@dataclass(frozen=True)
class HookConfig:
    """Where Engram is and how long and how much a hook may take."""

    url: str
    api_key: str | None
    timeout: float
    token_budget: int
    butler: str | None
    state_dir: Path

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "HookConfig":
        """The configuration the environment gives (ENGRAM_URL, ENGRAM_API_KEY, ...)."""
        env = dict(os.environ if environ is None else environ)
        url = env.get("ENGRAM_URL") or DEFAULT_URL
        return cls(
            url=url.rstrip("/"),
            api_key=env.get("ENGRAM_API_KEY") or None,
            timeout=_positive(env.get("ENGRAM_HOOK_TIMEOUT"), DEFAULT_TIMEOUT_SECONDS),
            token_budget=int(_positive(env.get("ENGRAM_HOOK_TOKEN_BUDGET"), DEFAULT_TOKEN_BUDGET)),
            butler=env.get("ENGRAM_BUTLER") or None,
            state_dir=_state_dir(env),
        )


def _positive(raw: str | None, default: float) -> float:
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default


def _state_dir(env: dict[str, str]) -> Path:
    if explicit := env.get("ENGRAM_HOOK_STATE_DIR"):
        return Path(explicit).expanduser()
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home(), ".local", "state"))
    return Path(base).expanduser() / "engram" / "claude-code"


def butler_for(cwd: str) -> str:
    """The butler a project directory's memories belong to: `claude-code:<name>-<hash>`, the
    directory's name and 8 hex digits of its absolute path (two checkouts named alike stay
    apart)."""
    path = os.path.realpath(cwd)
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    name = os.path.basename(path.rstrip(os.sep)) or "root"
    return f"{SOURCE}:{name[: MAX_NAME_CHARS - 30]}-{digest}"


class Deadline:
    """The time left of a hook's total allowance."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left (at least a millisecond, so a timeout is never zero)."""
        return max(self.end - time.monotonic(), 0.001)

    def passed(self) -> bool:
        """Whether the allowance is spent."""
        return time.monotonic() >= self.end


class Engram:
    """The few calls a hook makes, each bounded by what is left of the deadline."""

    def __init__(self, config: HookConfig, deadline: Deadline) -> None:
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.http = httpx.Client(base_url=config.url, headers=headers, timeout=config.timeout)
        self.deadline = deadline

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of one request; an HTTPError for a failure or a 4xx/5xx."""
        response = self.http.request(method, path, timeout=self.deadline.left(), **kwargs)
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()


def memory_block(
    engram: Engram, prompt: str, butler: str, session_id: str | None, token_budget: int
) -> str:
    """The project's memories for the prompt, wrapped in the tags that mark them as injected
    and labelled as data; empty when there is nothing to show. At most `token_budget * 4`
    characters of memories inside the tags."""
    query = " ".join(prompt.split())[:MAX_QUERY_CHARS]
    if not query:
        return ""
    budget = token_budget * 4
    context_request = {
        "trigger_prompt": query,
        "butler": butler,
        "token_budget": max(10, int(token_budget * FACTS_AND_RULES_SHARE)),
    }
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
    facts = _answer(context, "context") or {}
    # A block with no memory in it is only its heading.
    text = neutralise(str(facts.get("context", "")).strip()) if facts.get("items") else ""
    heading = "## Earlier conversations in this project"
    lines = []
    used = len(text) + 2 + len(heading)
    for hit in (_answer(earlier, "search") or {}).get("results", []):
        similarity = hit.get("similarity")
        if similarity is not None and similarity < MIN_TURN_SIMILARITY:
            continue
        line = neutralise(_turn_line(hit))
        if used + 1 + len(line) <= budget:
            lines.append(line)
            used += 1 + len(line)
    if lines:
        text = "\n\n".join(part for part in (text, heading + "\n" + "\n".join(lines)) if part)
    if not text:
        return ""
    return wrap(
        f"Memories Engram keeps for this project ({butler}); use them when they help.", text
    )


def _answer(future: Any, name: str) -> Any:
    if not future.done():
        _log(f"{name}: no answer before the deadline")
        return None
    try:
        return future.result()
    except (httpx.HTTPError, ValueError) as error:
        _log(f"{name}: {_describe(error)}")
        return None


def _turn_line(hit: dict[str, Any]) -> str:
    day = str(hit.get("occurred_at") or "")[:10]
    content = " ".join(str(hit.get("content", "")).split())
    if len(content) > MAX_LINE_CHARS:
        content = content[: MAX_LINE_CHARS - 1] + "…"
    return f"- ({day}) {content}" if day else f"- {content}"


def capture(engram: Engram, transcript: Path, butler: str, session_id: str, state_dir: Path) -> int:
    """Store the turns of `transcript` not captured before as episodes of the session; the
    number stored. A turn is captured once: the state file of the session remembers it, and
    Engram is asked for the turns it already holds (a store whose answer came too late)."""
    turns = read_turns(transcript)
    stored = 0
    with CapturedTurns.locked(state_dir, session_id, engram.deadline.left()) as captured:
        new = [turn for turn in turns if turn.turn_id not in captured]
        if not new:
            return 0
        known = _stored_turn_ids(engram, butler, session_id, [turn.turn_id for turn in new])
        captured.add(known)
        for chunk in _chunks(
            [turn for turn in new if turn.turn_id not in known], EPISODES_PER_REQUEST
        ):
            engram.call(
                "POST",
                "/v1/episodes/batch",
                json={"items": [_episode(turn, butler, session_id) for turn in chunk]},
            )
            captured.add(turn.turn_id for turn in chunk)
            captured.save()
            stored += len(chunk)
        captured.save()
    return stored


def _stored_turn_ids(engram: Engram, butler: str, session_id: str, turn_ids: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(turn_ids, TURN_IDS_PER_QUERY):
        page = engram.call(
            "GET",
            "/v1/episodes",
            params={
                "butler": butler,
                "session_id": session_id,
                "include_expired": "true",
                "limit": 200,
                "filter": json.dumps({"metadata.turn_id": {"$in": chunk}}),
            },
        )
        found.update(str(item.get("metadata", {}).get("turn_id")) for item in page["items"])
    return found


def _episode(turn: Turn, butler: str, session_id: str) -> dict[str, Any]:
    content = f"{turn.speaker}: {turn.text}"[:MAX_CONTENT_CHARS]
    episode: dict[str, Any] = {
        "content": content,
        "butler": butler,
        "session_id": session_id,
        "metadata": {"source": SOURCE, "turn_id": turn.turn_id},
    }
    if (occurred := _aware(turn.timestamp)) is not None:
        episode["occurred_at"] = occurred
    return episode


def _aware(timestamp: str | None) -> str | None:
    if not timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return parsed.isoformat() if parsed.tzinfo is not None else None


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def handle(event: str, payload: dict[str, Any], config: HookConfig, deadline: Deadline) -> str:
    """What the hook prints for `event` (empty for the capturing events)."""
    cwd = payload.get("cwd")
    butler = config.butler or butler_for(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    session_id = payload.get("session_id")
    session_id = session_id if isinstance(session_id, str) and session_id.strip() else None
    engram = Engram(config, deadline)
    try:
        if event in CONTEXT_EVENTS:
            prompt = payload.get("prompt")
            block = memory_block(
                engram,
                prompt if isinstance(prompt, str) else "",
                butler,
                session_id,
                config.token_budget,
            )
            if not block:
                return ""
            return json.dumps(
                {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}
            )
        transcript = payload.get("transcript_path")
        if session_id is None or not isinstance(transcript, str) or not transcript:
            _log(f"{event}: the payload has no session_id or transcript_path")
            return ""
        capture(engram, Path(transcript).expanduser(), butler, session_id[:200], config.state_dir)
        return ""
    finally:
        engram.close()


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
        output = handle(event, payload, config, deadline)
    except Exception as error:  # the agent's turn goes on whatever happened here
        _log(f"{event}: {_describe(error)}")
        return 0
    finally:
        watchdog.cancel()
    if output and not deadline.passed():
        stdout.write(output + "\n")
        stdout.flush()
    return 0


def _give_up() -> None:
    _log("deadline passed; nothing done")
    os._exit(0)


def _describe(error: BaseException) -> str:
    if isinstance(error, httpx.HTTPStatusError):
        return (
            f"Engram answered {error.response.status_code} to "
            f"{error.request.method} {error.request.url.path}: {error.response.text[:300]}"
        )
    return f"{type(error).__name__}: {error}"


def _log(message: str) -> None:
    sys.stderr.write(f"engram hook: {message}\n")
