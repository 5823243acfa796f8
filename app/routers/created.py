"""The `Location` header of a 201: where the created resource can be read."""

from urllib.parse import quote

from fastapi import Request, Response

# Characters a path may hold as they are (RFC 3986 pchar and "/"); the rest is %-encoded.
PATH_SAFE = "/:@!$&'()*+,;=-._~"


def locate(request: Request, response: Response, path: str) -> None:
    """Point the response's `Location` at `path` (under the app's root path), %-encoded, so
    a path segment of any script fits the ASCII header."""
    response.headers["Location"] = quote(request.scope.get("root_path", "") + path, safe=PATH_SAFE)
