"""Data-rights tools: erasure by selector and export, as POST /v1/erasures and GET /v1/export
do."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import EntityIdArg
from app.mcp.calls import Caller, JsonObject, build, call
from app.mcp.toolset import ToolSet
from app.responses.data_rights import export_page_out
from app.responses.jobs import job_out
from app.schemas.common import Name
from app.schemas.data_rights import ExportPageOut, ExportPageRequest
from app.schemas.erasures import ErasureCreate
from app.schemas.jobs import JobOut
from app.services import erasures
from app.services.export_pages import export_page

RunIdArg = Annotated[uuid.UUID, Field(description="A task run's id (a UUID).")]
SelectorArg = Annotated[Name | None, Field(description="Selector (give exactly one).")]


tools = ToolSet("admin")


@tools.add(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def memory_erase(
    ctx: Context,
    butler: SelectorArg = None,
    scope: SelectorArg = None,
    subject: SelectorArg = None,
    entity_id: EntityIdArg | None = None,
    session_id: str | None = None,
    run_id: RunIdArg | None = None,
    task_id: SelectorArg = None,
    tenant: bool = False,
    confirm: Name | None = None,
) -> JsonObject:
    """Erase for good, as a background job, everything one selector matches: butler, scope,
    subject, entity_id, session_id, run_id, task_id, or tenant=true with confirm set to your
    tenant id. Returns the job; follow it with job_get."""
    request = build(
        ErasureCreate,
        butler=butler,
        scope=scope,
        subject=subject,
        entity_id=None if entity_id is None else str(entity_id),
        session_id=session_id,
        run_id=None if run_id is None else str(run_id),
        task_id=task_id,
        tenant=tenant,
        confirm=confirm,
    )

    async def work(session: AsyncSession, caller: Caller) -> JobOut:
        return job_out(
            await erasures.request_erasure(session, tenant_id=caller.tenant_id, request=request)
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_export(ctx: Context, limit: int = 500, cursor: str | None = None) -> JsonObject:
    """Export the tenant's memories a page at a time, as GET /v1/export does; pass next_cursor
    back as cursor until it is null."""
    request = build(ExportPageRequest, limit=limit, cursor=cursor)

    async def work(session: AsyncSession, caller: Caller) -> ExportPageOut:
        records, next_offset = await export_page(
            caller.sessionmaker,
            tenant_id=caller.tenant_id,
            offset=int(request.cursor or 0),
            limit=request.limit,
        )
        return export_page_out(records, next_offset)

    return await call(ctx, work)
