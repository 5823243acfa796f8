"""Behind a TLS-terminating proxy the console's cookies are Secure when the proxy is trusted
(ENGRAM_FORWARDED_ALLOW_IPS), from its X-Forwarded-Proto; a client elsewhere cannot claim
HTTPS with the same header."""

import httpx
import uvicorn

from app.cli import uvicorn_options

PROXY, STRANGER = "10.1.2.3", "10.9.9.9"


async def _cookie(app, settings, client_ip: str) -> str:
    """The Set-Cookie of the sign-in page, served as `engram serve` serves it."""
    config = uvicorn.Config(app, **uvicorn_options(settings))
    config.load()
    transport = httpx.ASGITransport(app=config.loaded_app, client=(client_ip, 50_000))
    async with httpx.AsyncClient(transport=transport, base_url="http://engram.test") as http:
        response = await http.get("/ui", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200, response.text
    return response.headers["set-cookie"]


async def test_a_trusted_proxys_https_makes_the_cookie_secure(app, settings, monkeypatch):
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    behind = settings.model_copy(update={"forwarded_allow_ips": f"127.0.0.1,{PROXY}/32"})

    assert "secure" in (await _cookie(app, behind, PROXY)).lower()
    assert "secure" not in (await _cookie(app, behind, STRANGER)).lower()


async def test_without_the_setting_only_loopback_is_trusted(app, settings, monkeypatch):
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)

    assert "secure" not in (await _cookie(app, settings, PROXY)).lower()
    assert "secure" in (await _cookie(app, settings, "127.0.0.1")).lower()
