"""Calls Engram makes to services the operator configures (LLM, embeddings, reranker)."""

from pydantic import SecretStr


def endpoint(base_url: str, path: str) -> str:
    """`path` under the configured base URL, whether or not that ends with a slash."""
    return base_url.rstrip("/") + path


def json_headers(api_key: SecretStr | str | None) -> dict[str, str]:
    """A JSON request's headers, with the key as a Bearer token when one is set."""
    headers = {"Content-Type": "application/json"}
    if api_key is not None:
        secret = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        headers["Authorization"] = f"Bearer {secret}"
    return headers
