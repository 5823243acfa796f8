"""/docs and /redoc load every asset from the service itself: no CDN, so they work offline."""

import re

import pytest


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_docs_pages_load_only_local_assets(client, page):
    response = await client.get(page)
    assert response.status_code == 200
    html = response.text
    assert "http://" not in html and "https://" not in html, "a remote URL in the page"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets, "the page loads no assets"
    for asset in assets:
        loaded = await client.get(asset)
        assert loaded.status_code == 200, asset
        assert len(loaded.content) > 1000 or asset.endswith(".png"), asset
    assert "/openapi.json" in html
