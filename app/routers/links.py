"""/v1/links: edges between memories, records and entities."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.core.errors import problem_responses
from app.deps import ReadSessionDep, SessionDep, TenantDep
from app.responses.links import link_out
from app.responses.pages import page_out
from app.routers.params import LinkFilterQuery
from app.schemas.common import LinkEndType, Page
from app.schemas.links import LinkCreate, LinkListQuery, LinkOut, Relation
from app.services import links

router = APIRouter(prefix="/v1/links", tags=["links"])

LINK_LIFECYCLE = """
Links follow their ends: when an episode, fact, rule, run, procedure, arc or entity row is
deleted, every link touching it is deleted in the same statement by a database trigger, so no
link ever points at a missing row. Forgetting is a state change, not a deletion: links to a
forgotten episode, retracted fact or forgotten rule are kept (provenance stays explainable) and
the graph shows the node's state.
"""

CREATE_DESCRIPTION = """Create a directed edge; idempotent.

A link is keyed by its source, its target and its relation: two memories may be joined by
several relations (`supports` beside an automatic `related_to`, say). 201 with the new link;
200 with the existing link when the same edge (same relation) exists. `created_by` defaults to
the caller's API key (`key:<id>`); `reasoning` says why. Creating a link writes a
`link_created` event.

A new `contradicts` link to an active fact contradicts it: its `contradiction_count` grows by
one and its confidence halves; once contradictions exceed validations by three it is
retracted. A new `supports` link to an active fact adds one to its `validation_count`.

422 when an end is not a memory, record or entity of the tenant, or source and target are the
same.
"""


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=LinkOut,
    responses={
        200: {"model": LinkOut, "description": "The link already existed"},
        **problem_responses(409, 422),
    },
    summary="Link two memories",
    description=CREATE_DESCRIPTION + LINK_LIFECYCLE,
)
async def create_link(
    body: LinkCreate, response: Response, session: SessionDep, tenant_id: TenantDep
) -> LinkOut:
    """Create the link, or return the identical existing one with 200."""
    link, created = await links.create_link(session, tenant_id=tenant_id, data=body)
    if not created:
        response.status_code = status.HTTP_200_OK
    return link_out(link)


@router.get(
    "",
    response_model=Page[LinkOut],
    responses=problem_responses(404, 422),
    summary="Links of a memory",
)
async def list_links(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[LinkListQuery, Query()],
    memory_filter: LinkFilterQuery = None,
) -> Page[LinkOut]:
    """Links leaving and/or entering the memory, newest first; 404 when it does not exist;
    `filter` keeps those it admits."""
    return page_out(
        await links.list_links(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        link_out,
    )


@router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404, 422),
    summary="Delete links",
    description="Delete the edge of `relation` from source to target, or every "
    "edge from source to target when `relation` is omitted; each deletion writes a "
    "`link_deleted` event. 404 when there is none. Counts a deleted `contradicts` "
    "or `supports` link added to a fact stay: they record what happened.\n" + LINK_LIFECYCLE,
)
async def delete_link(
    session: SessionDep,
    tenant_id: TenantDep,
    source_type: LinkEndType,
    source_id: uuid.UUID,
    target_type: LinkEndType,
    target_id: uuid.UUID,
    relation: Relation | None = None,
) -> Response:
    ends = links.LinkEnds(source_type, source_id, target_type, target_id)
    await links.delete_link(session, tenant_id=tenant_id, ends=ends, relation=relation)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
