"""The HTTP routers, in the order they appear in the OpenAPI document."""

from fastapi import APIRouter

from app.routers import (
    arcs,
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
    procedures,
    rules,
    runs,
    search,
    stats,
    working_memory,
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
    working_memory.router,
    procedures.router,
    arcs.router,
]
