"""A client for any OpenAI-compatible /v1/chat/completions endpoint, with retries."""

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import httpx

from app.core.config import LLMSettings
from app.core.outbound import endpoint, json_headers

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_ERROR_BODY = 300


class LLMError(Exception):
    """The model could not produce an answer (after every retry)."""


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str


class ChatClient:
    """POSTs chat completions; retries timeouts, connection errors, 429 and 5xx with backoff."""

    def __init__(
        self, settings: LLMSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if not settings.base_url:
            raise ValueError("LLM base_url is not configured")
        self._settings = settings
        self._url = endpoint(settings.base_url, "/chat/completions")
        headers = json_headers(settings.api_key)
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout_seconds), headers=headers, transport=transport
        )

    async def __aenter__(self) -> "ChatClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def complete(self, messages: list[ChatMessage]) -> str:
        """The assistant message's text; LLMError once every attempt has failed."""
        body = {
            "model": self._settings.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": 0,
        }
        attempts = self._settings.max_retries + 1
        last_error = "no attempt made"
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(backoff_delay(self._settings.backoff_seconds, attempt))
            try:
                response = await self._http.post(self._url, json=body)
            except httpx.TimeoutException:
                last_error = f"timed out after {self._settings.timeout_seconds:g}s"
            except httpx.TransportError as exc:
                last_error = f"connection failed: {type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    return _message_text(response)
                last_error = f"HTTP {response.status_code}: {response.text[:MAX_ERROR_BODY]}"
                if response.status_code not in RETRYABLE_STATUSES:
                    break
            logger.warning("LLM call attempt %d/%d failed: %s", attempt + 1, attempts, last_error)
        raise LLMError(f"LLM request failed after {attempt + 1} attempt(s): {last_error}")


def backoff_delay(base_seconds: float, attempt: int) -> float:
    """Exponential backoff before retry `attempt` (1-based): base * 2^(attempt-1)."""
    return float(base_seconds * 2 ** (attempt - 1))


def _message_text(response: httpx.Response) -> str:
    try:
        payload: Any = response.json()
        content = payload["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError("LLM response is not a chat completion") from None
    if content is None:
        return ""
    if not isinstance(content, str):
        raise LLMError("LLM response content is not text")
    return content
