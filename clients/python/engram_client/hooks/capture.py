"""A session's turns stored as episodes: what its transcript holds, and the final reply Stop
is given before the transcript has it. Each turn is stored once."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram_client.hooks.client import Engram
from engram_client.hooks.config import SOURCE
from engram_client.hooks.state import CapturedTurns
from engram_client.hooks.transcript import (
    SAID,
    Turn,
    read_turns,
    said_id,
    since_last_prompt,
    strip_injected,
)

MAX_CONTENT_CHARS = 50_000
EPISODES_PER_REQUEST = 50
TURN_IDS_PER_QUERY = 100


def capture(
    engram: Engram,
    transcript: Path,
    butler: str,
    session_id: str,
    state_dir: Path,
    last_reply: str | None = None,
) -> int:
    """Store the turns of `transcript` not captured before as episodes of the session, and
    `last_reply` (Stop's `last_assistant_message`) when the transcript does not hold it yet;
    the number stored. A turn is captured once: the state file of the session remembers it,
    and Engram is asked for the turns it already holds (a store whose answer came too late).
    A reply stored from `last_reply` stands for the transcript turn with its words, which is
    then not stored again."""
    turns = read_turns(transcript) if transcript.is_file() else []
    stored = 0
    with CapturedTurns.locked(state_dir, session_id, engram.deadline.left()) as captured:
        turns += _unwritten_reply(turns, last_reply, captured)
        new = [turn for turn in turns if turn.turn_id not in captured]
        if not new:
            return 0
        ids = [turn.turn_id for turn in new]
        ids += sorted({said_id(turn.text) for turn in new if _is_written_reply(turn)})
        known = _stored_turn_ids(engram, butler, session_id, ids)
        echoed = _echoes(new, captured, known)
        captured.add(known | echoed)
        for chunk in _chunks(
            [turn for turn in new if turn.turn_id not in captured], EPISODES_PER_REQUEST
        ):
            engram.call(
                "POST",
                "/v1/episodes/batch",
                json={"items": [_episode(turn, butler, session_id) for turn in chunk]},
            )
            captured.add(turn.turn_id for turn in chunk)
            captured.pending.update(turn.turn_id for turn in chunk if turn.turn_id.startswith(SAID))
            captured.save()
            stored += len(chunk)
        captured.save()
    return stored


def _is_written_reply(turn: Turn) -> bool:
    return turn.speaker == "assistant" and not turn.turn_id.startswith(SAID)


def _unwritten_reply(turns: list[Turn], reply: str | None, captured: CapturedTurns) -> list[Turn]:
    """The final reply as a turn of its own when neither the transcript (since its last
    prompt) nor an earlier Stop holds it."""
    text = strip_injected(reply) if isinstance(reply, str) else ""
    if not text:
        return []
    said = said_id(text)
    written = {said_id(turn.text) for turn in since_last_prompt(turns) if _is_written_reply(turn)}
    if said in captured or said in written:
        return []
    return [Turn(said, "assistant", text, datetime.now(UTC).isoformat())]


def _echoes(new: list[Turn], captured: CapturedTurns, known: set[str]) -> set[str]:
    """The transcript turns that are a reply stored earlier from its words: each such reply
    (noted as pending, or held by Engram though the state file lost it) stands for one."""
    waiting = captured.pending | {
        said for said in known if said.startswith(SAID) and said not in captured
    }
    echoed = set()
    for turn in new:
        said = said_id(turn.text) if _is_written_reply(turn) else None
        if said in waiting:
            waiting.discard(said)
            captured.pending.discard(said)
            echoed.add(turn.turn_id)
    return echoed


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
