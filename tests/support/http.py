"""Small HTTP helpers shared by the API tests."""

from typing import Any


async def post(client: Any, path: str, **body: Any) -> dict[str, Any]:
    """POST a JSON body that must be created (201) and return the created resource."""
    response = await client.post(path, json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result
