"""/v1/stats: counts for health monitoring."""

from fastapi import APIRouter

from app.core.errors import problem_responses
from app.deps import SessionDep, SettingsDep, TenantDep
from app.routers.params import Text
from app.schemas.stats import StatsOut
from app.services.stats import memory_stats

router = APIRouter(prefix="/v1", tags=["stats"])


@router.get(
    "/stats",
    response_model=StatsOut,
    responses=problem_responses(422),
    summary="Memory counts by lifecycle state",
)
async def get_stats(
    session: SessionDep, tenant_id: TenantDep, settings: SettingsDep, scope: Text = None
) -> StatsOut:
    """Episodes (total, pending, backlog age), facts by validity (active split into active and
    fading) and rules by maturity plus forgotten. With `scope`, facts and rules of 'global'
    and that scope are counted, and episodes of the butler of that name.
    `consolidation_configured` is false (and `warnings` says so) without an LLM."""
    return await memory_stats(
        session,
        tenant_id=tenant_id,
        scope=scope,
        consolidation_configured=settings.llm.base_url is not None,
    )
