"""The API key a request carries, and the words of the 401 for a missing or unknown one:
REST's dependency, the MCP endpoint and the rate limits read a key the same way."""

from collections.abc import Iterable

MISSING_KEY = "an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
UNKNOWN_KEY = "the API key is unknown or revoked"
# The WWW-Authenticate header of every 401.
CHALLENGE = 'Bearer realm="engram"'


def api_key_of(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The key of a request's raw headers: `Authorization: Bearer <key>`, else `X-API-Key`;
    the first of each header counts."""
    first = dict(reversed(list(headers)))
    scheme, _, credentials = first.get(b"authorization", b"").partition(b" ")
    if scheme.lower() == b"bearer" and credentials.strip():
        return credentials.strip().decode("latin-1")
    header_key = first.get(b"x-api-key")
    return header_key.decode("latin-1") if header_key else None
