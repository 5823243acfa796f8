"""/v1/links: provenance edges between episodes, facts and rules."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.deps import ReadSessionDep, SessionDep, TenantDep
from app.errors import problem_responses
from app.routers.params import Cursor, Limit
from app.schemas.common import LinkEndType, Page
from app.schemas.links import Direction, LinkCreate, LinkOut, Relation
from app.services import links
from app.services.responses.links import link_out
from app.services.responses.pages import page_out

router = APIRouter(prefix="/v1/links", tags=["links"])

LINK_LIFECYCLE = """
Links follow their memories: when an episode, fact or rule row is deleted (the episode cleanup
job), every link touching it is deleted in the same statement by a database trigger, so no link
ever points at a missing row. Forgetting is a state change, not a deletion: links to a forgotten
episode, retracted fact or forgotten rule are kept (provenance stays explainable) and the graph
shows the node's state.
"""

CREATE_DESCRIPTION = """Create a directed edge; idempotent.

201 with the new link; 200 with the existing link when the same edge (same relation) exists.
422 when an end is not a memory of the tenant, or source and target are the same memory.
409 when the two memories are already linked in this direction with another relation (one
edge per ordered pair; delete it first).
"""


@router.post("", status_code=status.HTTP_201_CREATED, response_model=LinkOut,
             responses={200: {"model": LinkOut, "description": "The link already existed"},
                        **problem_responses(409, 422)},
             summary="Link two memories", description=CREATE_DESCRIPTION + LINK_LIFECYCLE)
async def create_link(body: LinkCreate, response: Response, session: SessionDep,
                      tenant_id: TenantDep) -> LinkOut:
    """Create the link, or return the identical existing one with 200."""
    link, created = await links.create_link(session, tenant_id=tenant_id, data=body)
    if not created:
        response.status_code = status.HTTP_200_OK
    return link_out(link)


@router.get("", response_model=Page[LinkOut], responses=problem_responses(404, 422),
            summary="Links of a memory")
async def list_links(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    memory_type: LinkEndType,
    memory_id: uuid.UUID,
    direction: Annotated[Direction, Query(description="outgoing: the memory is the source; "
                                                      "incoming: the target.")] = "both",
    relation: Relation | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Page[LinkOut]:
    """Links leaving and/or entering the memory, newest first; 404 when it does not exist."""
    return page_out(await links.list_links(
        session, tenant_id=tenant_id, memory_type=memory_type, memory_id=memory_id,
        direction=direction, relation=relation, limit=limit, cursor=cursor), link_out)


@router.delete("", status_code=status.HTTP_204_NO_CONTENT,
               responses=problem_responses(404, 422), summary="Delete a link",
               description="Delete the edge from source to target (its key); 404 when there "
               "is none.\n" + LINK_LIFECYCLE)
async def delete_link(session: SessionDep, tenant_id: TenantDep, source_type: LinkEndType,
                      source_id: uuid.UUID, target_type: LinkEndType,
                      target_id: uuid.UUID) -> Response:
    await links.delete_link(session, tenant_id=tenant_id, source_type=source_type,
                            source_id=source_id, target_type=target_type, target_id=target_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
