"""The HTTP routers, in the order they appear in the OpenAPI document."""

from fastapi import APIRouter

from app.routers import (
    entities,
    episodes,
    erasures,
    events,
    facts,
    graph,
    health,
    jobs,
    ledger,
    links,
    portability,
    rules,
    runs,
    search,
    stats,
)

ROUTERS: list[APIRouter] = [
    health.router,
    episodes.router,
    facts.router,
    rules.router,
    jobs.router,
    entities.router,
    links.router,
    runs.router,
    ledger.router,
    graph.router,
    search.router,
    stats.router,
    erasures.router,
    portability.router,
    events.router,
]
