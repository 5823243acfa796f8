"""The turns read from a Claude Code transcript and the butler of a project directory."""

import json
from pathlib import Path

from engram_client.hooks.config import butler_for
from engram_client.hooks.transcript import read_turns, strip_injected

PAYLOADS = Path(__file__).parent / "payloads"


def test_turns_are_the_words_said_without_tool_traffic_or_injected_memories() -> None:
    turns = read_turns(PAYLOADS / "transcript.jsonl")

    assert [(turn.turn_id, turn.speaker) for turn in turns] == [
        ("u-0002", "user"),
        ("msg_01", "assistant"),
        ("msg_02", "assistant"),
        ("u-0010", "user"),
        ("msg_03", "assistant"),
    ]
    assert turns[3].text == "Thanks. Also note that migrations run with the flyway tool."
    assert turns[4].text == "Noted: migrations use flyway."
    assert turns[0].timestamp == "2026-11-20T09:00:05.500Z"


def test_an_assistant_reply_written_over_several_lines_is_one_turn(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        {
            "type": "assistant",
            "uuid": f"a{n}",
            "timestamp": f"2026-11-20T09:00:0{n}Z",
            "message": {
                "id": "msg_9",
                "role": "assistant",
                "content": [{"type": "text", "text": f"part {n}"}],
            },
        }
        for n in (1, 2)
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + '\n{"type": "us')

    turns = read_turns(path)

    assert [(turn.turn_id, turn.text, turn.timestamp) for turn in turns] == [
        ("msg_9", "part 1\npart 2", "2026-11-20T09:00:01Z")
    ]


def test_a_memory_block_cut_short_is_still_taken_out() -> None:
    assert strip_injected("keep this <engram-memory>\n## Key Facts\n- cut") == "keep this"


def test_projects_named_alike_in_different_places_have_their_own_butlers() -> None:
    assert butler_for("/home/a/shop") != butler_for("/home/b/shop")
    assert butler_for("/home/a/shop").startswith("claude-code:shop-")
    assert butler_for("/home/a/shop/") == butler_for("/home/a/shop")
