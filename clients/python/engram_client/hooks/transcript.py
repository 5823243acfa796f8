"""The conversation turns of a Claude Code transcript (JSONL), without tool traffic or what
the hook itself injected."""

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from engram_client.hooks.injected import CLOSE_TAG, OPEN_TAG

# The memory block `engram hook UserPromptSubmit` added to the model's context.
_INJECTED = re.compile(re.escape(OPEN_TAG) + r".*?(?:" + re.escape(CLOSE_TAG) + r"|\Z)", re.DOTALL)
# Text Claude Code adds around a turn for the model, not said by anyone.
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
# The id prefix of a reply stored from its words (`said_id`).
SAID = "said:"
# Echoes of slash commands and their local output.
_COMMAND_ECHO = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "Caveat: The messages below were generated",
)


@dataclass(frozen=True)
class Turn:
    """One thing said: its id in the transcript, the speaker, the text and when."""

    turn_id: str
    speaker: str
    text: str
    timestamp: str | None


def strip_injected(text: str) -> str:
    """The text without any Engram memory block or system reminder in it."""
    return _SYSTEM_REMINDER.sub("", _INJECTED.sub("", text)).strip()


def said_id(text: str) -> str:
    """The id of an assistant reply known by its words alone (Stop's `last_assistant_message`
    before the transcript has it): `said:` and a digest of the words, whitespace left out, so
    the reply's transcript turn, however its blocks are joined, has the same one."""
    words = "".join(strip_injected(text).split())
    return SAID + hashlib.sha256(words.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def since_last_prompt(turns: list[Turn]) -> list[Turn]:
    """The turns after the last user turn (all of them when there is none)."""
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].speaker == "user":
            return turns[index + 1 :]
    return turns


def last_prompts(turns: list[Turn], count: int) -> list[str]:
    """The texts of the last `count` user turns, oldest first."""
    return [turn.text for turn in turns if turn.speaker == "user"][-count:]


def _texts(content: object) -> list[str]:
    """The plain text blocks of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def _said(entry: dict[str, object]) -> tuple[str, str] | None:
    """(speaker, text) of a transcript line that is a user's or the assistant's words."""
    kind = entry.get("type")
    message = entry.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return None
    if entry.get("isMeta") or entry.get("isSidechain") or entry.get("isCompactSummary"):
        return None
    text = strip_injected("\n".join(_texts(message.get("content"))))
    if not text or (kind == "user" and text.startswith(_COMMAND_ECHO)):
        return None
    return str(kind), text


def read_turns(path: Path) -> list[Turn]:
    """The turns of the transcript at `path`, in order.

    An assistant reply written as several lines (one per content block) is one turn, keyed by
    its message id; a user's message is keyed by its line's uuid. Lines that are not JSON
    (a line being written) are skipped."""
    turns: list[Turn] = []
    by_message: dict[str, int] = {}
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or (said := _said(entry)) is None:
                continue
            speaker, text = said
            message = entry["message"]
            message_id = message.get("id") if speaker == "assistant" else None
            if isinstance(message_id, str) and message_id in by_message:
                index = by_message[message_id]
                earlier = turns[index]
                turns[index] = Turn(
                    earlier.turn_id, speaker, f"{earlier.text}\n{text}", earlier.timestamp
                )
                continue
            turn_id = message_id if isinstance(message_id, str) else entry.get("uuid")
            if not isinstance(turn_id, str):
                continue
            timestamp = entry.get("timestamp")
            if isinstance(message_id, str):
                by_message[message_id] = len(turns)
            turns.append(
                Turn(turn_id, speaker, text, timestamp if isinstance(timestamp, str) else None)
            )
    return turns
