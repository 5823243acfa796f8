"""/v1/working-memory: one short-lived record per (agent, session), guarded by ETags."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Path, Request, Response, status

from app.core.constants import MAX_SESSION_ID_CHARS
from app.core.errors import UnsupportedMediaType, problem_responses
from app.deps import SessionDep, SettingsDep, TenantDep
from app.responses.working_memory import scratchpad_entry_out, working_memory_out
from app.routers.created import locate
from app.schemas.working_memory import (
    ScratchpadEntry,
    ScratchpadWrite,
    WorkingMemoryOut,
    WorkingMemoryWrite,
)
from app.services import working_memory
from app.services.working_memory import Key

router = APIRouter(prefix="/v1/working-memory", tags=["working-memory"])

MERGE_PATCH = "application/merge-patch+json"
AgentId = Annotated[str, Path(min_length=1, max_length=200, description="The agent.")]
SessionId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_SESSION_ID_CHARS,
        description="The session: any string up to 200 characters.",
    ),
]
ScratchpadKey = Annotated[str, Path(min_length=1, max_length=200, description="A scratchpad key.")]
IfMatch = Annotated[
    str | None,
    Header(
        max_length=2000,
        description="Write only if the record's ETag is one of these (or `*` "
        "for any existing record); 412 otherwise.",
    ),
]
IfNoneMatch = Annotated[
    str | None,
    Header(
        max_length=2000,
        description="`*`: create only, 412 when a live record exists (of two "
        "concurrent creations exactly one succeeds); a list of ETags: "
        "412 when the record's is one of them.",
    ),
]
ETAG_HEADER = {"ETag": {"description": "The record's entity tag.", "schema": {"type": "string"}}}
LIFETIME = """

Every read and write moves `expires_at` to now + `ttl_seconds` (24 h unless the record sets
its own, `working_memory.ttl_hours` in the settings). An expired record is gone: 404 here,
and the cleanup job deletes it."""
WRITE_RULES = """

`If-Match` is optional and honoured on every write: with it the write happens only over that
version (412 when the ETag is stale or no record exists). It is not required (no 428): PATCH
and the scratchpad operations lock the row and change only what they name, so concurrent
writers of different keys never lose each other's update; a client that reads, edits and
PUTs the whole document should send If-Match."""


def _key(tenant_id: str, agent_id: str, session_id: str) -> Key:
    return Key(tenant_id=tenant_id, agent_id=agent_id, session_id=session_id)


def _tagged(response: Response, out: WorkingMemoryOut) -> WorkingMemoryOut:
    response.headers["ETag"] = out.etag
    return out


async def require_merge_patch(request: Request, tenant_id: TenantDep) -> None:
    """415 when the body is declared as anything but application/merge-patch+json (checked
    after the API key, so an anonymous caller gets its 401 first). Without a Content-Type the
    body is read as a merge patch; a missing body is the usual 422."""
    declared = request.headers.get("content-type")
    if declared is None:
        return
    if declared.split(";")[0].strip().lower() != MERGE_PATCH:
        raise UnsupportedMediaType(
            f"send the patch as {MERGE_PATCH} (RFC 7396)", field="Content-Type"
        )


@router.get(
    "/{agent_id}/{session_id}",
    response_model=WorkingMemoryOut,
    responses={200: {"headers": ETAG_HEADER}, **problem_responses(404, 422)},
    summary="Get a working memory",
    description="The record and its ETag." + LIFETIME,
)
async def get_working_memory(
    agent_id: AgentId,
    session_id: SessionId,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
) -> WorkingMemoryOut:
    row = await working_memory.get(session, key=_key(tenant_id, agent_id, session_id))
    return _tagged(response, working_memory_out(row))


@router.put(
    "/{agent_id}/{session_id}",
    response_model=WorkingMemoryOut,
    responses={
        200: {"headers": ETAG_HEADER, "description": "Replaced"},
        201: {"model": WorkingMemoryOut, "headers": ETAG_HEADER, "description": "Created"},
        **problem_responses(404, 412, 422),
    },
    summary="Create or replace a working memory",
    description="Create the record (201) or replace all of its fields (200); omitted "
    "fields become empty. `If-None-Match: *` makes it a create: a second "
    "agent creating the same session gets a 412 instead of overwriting "
    "the first." + WRITE_RULES + LIFETIME,
)
async def put_working_memory(
    agent_id: AgentId,
    session_id: SessionId,
    body: WorkingMemoryWrite,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    settings: SettingsDep,
    if_match: IfMatch = None,
    if_none_match: IfNoneMatch = None,
) -> WorkingMemoryOut:
    row = await working_memory.replace(
        session,
        key=_key(tenant_id, agent_id, session_id),
        data=body,
        if_match=if_match,
        if_none_match=if_none_match,
        default_ttl_hours=settings.working_memory.ttl_hours,
    )
    if row.version == 1:
        response.status_code = status.HTTP_201_CREATED
        locate(request, response, request.url.path.removeprefix(request.scope.get("root_path", "")))
    return _tagged(response, working_memory_out(row))


@router.patch(
    "/{agent_id}/{session_id}",
    response_model=WorkingMemoryOut,
    dependencies=[Depends(require_merge_patch)],
    responses={200: {"headers": ETAG_HEADER}, **problem_responses(404, 412, 415, 422)},
    summary="Merge-patch a working memory",
    description="Apply a JSON Merge Patch (RFC 7396, `Content-Type: "
    "application/merge-patch+json`; another declared type is a 415) to "
    "the document "
    "`{active_context, scratchpad, retrieved_memory_ids, decisions, "
    "ttl_seconds}`: objects merge key by key, `null` removes a key (a "
    "top-level `null` resets that member to empty, or the TTL to the "
    "default), arrays are replaced whole. Unknown members or an invalid "
    "result are a 422 naming the field." + WRITE_RULES + LIFETIME,
)
async def patch_working_memory(
    agent_id: AgentId,
    session_id: SessionId,
    patch: Annotated[dict[str, Any], Body(media_type=MERGE_PATCH)],
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    settings: SettingsDep,
    if_match: IfMatch = None,
) -> WorkingMemoryOut:
    row = await working_memory.merge_patch(
        session,
        key=_key(tenant_id, agent_id, session_id),
        patch=patch,
        if_match=if_match,
        default_ttl_hours=settings.working_memory.ttl_hours,
    )
    return _tagged(response, working_memory_out(row))


@router.delete(
    "/{agent_id}/{session_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404, 412, 422),
    summary="Delete a working memory",
)
async def delete_working_memory(
    agent_id: AgentId,
    session_id: SessionId,
    session: SessionDep,
    tenant_id: TenantDep,
    if_match: IfMatch = None,
) -> Response:
    """End the session's working memory now (If-Match honoured)."""
    await working_memory.delete(
        session, key=_key(tenant_id, agent_id, session_id), if_match=if_match
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{agent_id}/{session_id}/scratchpad/{key}",
    response_model=ScratchpadEntry,
    responses={200: {"headers": ETAG_HEADER}, **problem_responses(404, 422)},
    summary="Get a scratchpad key",
)
async def get_scratchpad_key(
    agent_id: AgentId,
    session_id: SessionId,
    key: ScratchpadKey,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
) -> ScratchpadEntry:
    """The value under one scratchpad key; the ETag header is the record's."""
    row, value = await working_memory.get_scratchpad_value(
        session, key=_key(tenant_id, agent_id, session_id), name=key
    )
    response.headers["ETag"] = working_memory_out(row).etag
    return scratchpad_entry_out(key, value)


@router.put(
    "/{agent_id}/{session_id}/scratchpad/{key}",
    response_model=WorkingMemoryOut,
    responses={200: {"headers": ETAG_HEADER}, **problem_responses(404, 412, 422)},
    summary="Set a scratchpad key",
)
async def put_scratchpad_key(
    agent_id: AgentId,
    session_id: SessionId,
    key: ScratchpadKey,
    body: ScratchpadWrite,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    if_match: IfMatch = None,
) -> WorkingMemoryOut:
    """Store `value` under the key, leaving the other keys alone; the record must exist."""
    row = await working_memory.put_scratchpad_value(
        session, key=_key(tenant_id, agent_id, session_id), name=key, data=body, if_match=if_match
    )
    return _tagged(response, working_memory_out(row))


@router.delete(
    "/{agent_id}/{session_id}/scratchpad/{key}",
    response_model=WorkingMemoryOut,
    responses={200: {"headers": ETAG_HEADER}, **problem_responses(404, 412, 422)},
    summary="Delete a scratchpad key",
)
async def delete_scratchpad_key(
    agent_id: AgentId,
    session_id: SessionId,
    key: ScratchpadKey,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    if_match: IfMatch = None,
) -> WorkingMemoryOut:
    """Remove the key (404 when absent) and return the record."""
    row = await working_memory.delete_scratchpad_value(
        session, key=_key(tenant_id, agent_id, session_id), name=key, if_match=if_match
    )
    return _tagged(response, working_memory_out(row))
