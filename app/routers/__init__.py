"""The HTTP routers, in the order they appear in the OpenAPI document."""

from fastapi import APIRouter

from app.routers import episodes, facts, health, jobs, rules

ROUTERS: list[APIRouter] = [
    health.router,
    episodes.router,
    facts.router,
    rules.router,
    jobs.router,
]
