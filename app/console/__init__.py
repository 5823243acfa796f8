"""The web console at /ui: a third front door beside `routers/` and `mcp/`, with their rules
(each page or action calls the services and maps rows with `app/responses/`)."""

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.console import data, entities, erase, home, memories, runs, search

STATIC = Path(__file__).parent / "static"
ROUTERS = (
    home.router,
    search.router,
    erase.router,
    entities.router,
    runs.router,
    data.router,
    memories.router,
)


def mount_console(app: FastAPI) -> None:
    """Serve the console's pages and its stylesheet (no script, nothing from elsewhere).

    The routes join the app's route table directly, without the app's dependencies: the API's
    refusal of unknown query parameters does not suit HTML forms, and no middleware is
    added, so a /v1 request's path is unchanged.
    """
    for router in ROUTERS:
        app.router.routes.extend(router.routes)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="console-static")
