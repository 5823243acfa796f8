"""Log lines carry the request id, as text or as one JSON object per line."""

import json
import logging

from app.telemetry.logs import TEXT_FORMAT, JsonFormatter, RequestIdFilter, current_request_id


def record(message: str) -> logging.LogRecord:
    made = logging.LogRecord("engram.test", logging.WARNING, __file__, 1, message, None, None)
    RequestIdFilter().filter(made)
    return made


def test_a_json_line_names_the_request_it_was_logged_for():
    token = current_request_id.set("req-42")
    try:
        line = JsonFormatter().format(record("model slow"))
    finally:
        current_request_id.reset(token)
    parsed = json.loads(line)
    assert (parsed["level"], parsed["logger"], parsed["message"], parsed["request_id"]) == (
        "WARNING",
        "engram.test",
        "model slow",
        "req-42",
    )
    assert parsed["time"].endswith("+00:00")


def test_text_lines_show_the_request_id_or_a_dash_outside_requests():
    formatter = logging.Formatter(TEXT_FORMAT)
    assert "[-] outside" in formatter.format(record("outside"))
    token = current_request_id.set("abc")
    try:
        assert "[abc] inside" in formatter.format(record("inside"))
    finally:
        current_request_id.reset(token)
