"""The `Location` header of a 201: where the created resource can be read."""

from fastapi import Request, Response


def locate(request: Request, response: Response, path: str) -> None:
    """Point the response's `Location` at `path` (under the app's root path)."""
    response.headers["Location"] = request.scope.get("root_path", "") + path
