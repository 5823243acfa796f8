"""The HTTP routers, in the order they appear in the OpenAPI document."""

from fastapi import APIRouter

from app.routers import (
    arcs,
    entities,
    episodes,
    facts,
    graph,
    health,
    jobs,
    links,
    procedures,
    rules,
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
    graph.router,
    search.router,
    stats.router,
    working_memory.router,
    procedures.router,
    arcs.router,
]
