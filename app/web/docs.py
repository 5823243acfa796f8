"""/docs (Swagger UI) and /redoc served with their assets from the fastapi-offline package,
so both render without internet access."""

from collections.abc import Callable
from functools import partial
from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def mount_docs(app: FastAPI, title: str) -> None:
    """Add /docs, /redoc and the static assets they load (none from a CDN)."""
    app.mount(
        ASSETS, StaticFiles(directory=str(files("fastapi_offline") / "static")), name="docs-assets"
    )

    def page(
        request: Request, render: Callable[..., HTMLResponse], name: str, **assets: str
    ) -> HTMLResponse:
        """One page, its OpenAPI document and assets (keyword: file) under the root path."""
        root = request.scope.get("root_path", "")
        return render(
            openapi_url=root + (app.openapi_url or "/openapi.json"),
            title=f"{title} - {name}",
            **{key: f"{root}{ASSETS}/{file}" for key, file in assets.items()},
        )

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        return page(
            request,
            get_swagger_ui_html,
            "docs",
            swagger_js_url="swagger-ui-bundle.js",
            swagger_css_url="swagger-ui.css",
            swagger_favicon_url="favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return page(
            request,
            partial(get_redoc_html, with_google_fonts=False),
            "ReDoc",
            redoc_js_url="redoc.standalone.js",
            redoc_favicon_url="favicon.png",
        )
