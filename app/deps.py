"""Request dependencies: settings, the per-request transaction, the tenant, the embedder."""

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings
from app.embedding import EmbeddingEngine


def get_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One transaction per request, committed before the response is sent."""
    async with request.app.state.sessionmaker() as session, session.begin():
        yield session


def get_tenant_id(settings: Annotated[Settings, Depends(get_settings)]) -> str:
    """The caller's tenant. Until API keys exist every caller is the default tenant."""
    return settings.default_tenant


def get_engine(request: Request) -> EmbeddingEngine:
    """The shared embedding engine."""
    engine: EmbeddingEngine = request.app.state.embedding_engine
    return engine


SettingsDep = Annotated[Settings, Depends(get_settings)]
# scope="function": the commit happens before the response leaves, so a failed commit
# is reported to the caller instead of a success.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
TenantDep = Annotated[str, Depends(get_tenant_id)]
EngineDep = Annotated[EmbeddingEngine, Depends(get_engine)]
