"""/v1/facts: durable subject/predicate knowledge with decay and supersession."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from app.core.errors import problem_responses
from app.deps import EmbedderDep, ReadSessionDep, SessionDep, SettingsDep, TenantDep
from app.models import Fact
from app.responses.fact_bulk import (
    delete_results_out,
    get_results_out,
    put_results_out,
)
from app.responses.facts import fact_out, fact_page_out
from app.routers.created import locate
from app.routers.memory_routes import MemoryRoutes
from app.routers.params import FilterQuery
from app.schemas.fact_bulk import (
    FactBulkCreate,
    FactDeleteResults,
    FactGetResults,
    FactPutResults,
    FactRefs,
)
from app.schemas.facts import FactContradiction, FactCreate, FactListQuery, FactOut, FactPage
from app.services import fact_beliefs, fact_bulk, facts

router = APIRouter(prefix="/v1/facts", tags=["facts"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=FactOut,
    responses={
        200: {
            "model": FactOut,
            "description": "An identical active fact existed and was confirmed",
        },
        **problem_responses(409, 422),
    },
    summary="Store a fact",
)
async def create_fact(
    body: FactCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> FactOut:
    """Store an active fact with confidence 1.0 (201).

    An active fact with the same key, (scope, subject, predicate) without `entity_id` or
    (entity_id, scope, predicate) with it, becomes `superseded` in the same transaction, the
    new fact's `supersedes_id` points at it and a `supersedes` link joins them. Subject and
    predicate are compared case-folded, NFKC-normalised and with whitespace collapsed
    ("Alice" and " alice" are one key); the fact keeps them as written.

    When the active fact of the key has the same content, nothing new is stored: that fact is
    confirmed (its decay restarts, a `fact_confirmed` event is written) and returned with 200.

    A new fact is linked `related_to` (strength: the cosine similarity) the live facts and
    rules of its scope that are at least `[auto_links] threshold` similar, the nearest
    `max_links` of them.
    """
    stored = await facts.store_fact(
        session, tenant_id=tenant_id, embedder=embedder, data=body, auto_links=settings.auto_links
    )
    if stored.created:
        locate(request, response, f"/v1/facts/{stored.fact.id}")
    else:
        response.status_code = status.HTTP_200_OK
    return fact_out(stored.fact)


@router.post(
    "/bulk",
    response_model=FactPutResults,
    responses=problem_responses(409, 413, 422),
    summary="Store many facts at once",
)
async def store_facts(
    body: FactBulkCreate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> FactPutResults:
    """Store the facts in order in one transaction, each as `POST /v1/facts` stores one (a
    later item with the same key supersedes or confirms an earlier one).

    All or none: an item the store refuses (an unknown `entity_id`, an empty valid period)
    is a 422 naming `body.items.<i>.<field>`, and nothing is stored. Each result has `status`
    201 (a new version) or 200 (an identical active fact was confirmed) and the fact. Every
    content is embedded before the transaction's first statement.

    At most 100 items a request, and a body of at most `max_body_bytes` (32 MiB by
    default; beyond it 413). Over the item limit the request is a 422 naming `body.items`.
    """
    stored = await fact_bulk.store_facts(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        items=body.items,
        auto_links=settings.auto_links,
    )
    return put_results_out(stored)


@router.post(
    "/bulk/get",
    response_model=FactGetResults,
    responses=problem_responses(413, 422),
    summary="Read many facts at once",
)
async def get_facts(
    body: FactRefs, session: ReadSessionDep, tenant_id: TenantDep
) -> FactGetResults:
    """The fact each item names, in the order asked: by `id` (any validity), or by key
    (`scope`, default `global`, `subject` and `predicate`, compared as a stored fact's key
    is: the key's active fact).

    Each result has `status` 200 and the fact, or 404 and a `detail`: a missing fact fails
    only its own item. At most 1000 items a request (else 422 naming `body.items`); an item
    with neither an id nor a key, or with both, is a 422 naming `body.items.<i>`.
    """
    refs = body.items
    return get_results_out(refs, await fact_bulk.get_facts(session, tenant_id=tenant_id, refs=refs))


@router.post(
    "/bulk/delete",
    response_model=FactDeleteResults,
    responses=problem_responses(413, 422),
    summary="Delete many facts at once",
)
async def delete_facts(
    body: FactRefs, session: SessionDep, tenant_id: TenantDep
) -> FactDeleteResults:
    """Delete for good, in one transaction, the fact each item names (by `id`, or by key: the
    key's active fact) with every version of its history, as `DELETE /v1/facts/{id}` does.

    Each result has `status` 204 with the deleted `id` and `deleted_ids`, or 404 and a
    `detail` when the tenant has no such fact (that item deletes nothing; the others still
    go). Items are named as for `POST /v1/facts/bulk/get`, at most 1000 a request.
    """
    refs = body.items
    return delete_results_out(
        refs, await fact_bulk.delete_facts(session, tenant_id=tenant_id, refs=refs)
    )


@router.get("", response_model=FactPage, responses=problem_responses(422), summary="List facts")
async def list_facts(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[FactListQuery, Query()],
    memory_filter: FilterQuery = None,
) -> FactPage:
    """Facts newest first; active ones unless `validity` says otherwise. With `as_of` or
    `known_at`: the versions that held at `as_of` (default: now) as Engram believed at
    `known_at` (default: now), whatever their validity today."""
    return fact_page_out(
        await facts.list_facts(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        )
    )


routes = MemoryRoutes(router, "fact", Fact, FactOut, fact_out)
routes.get()


@router.get(
    "/{fact_id}/history",
    response_model=list[FactOut],
    responses=problem_responses(404, 422),
    summary="Supersession history of a fact",
)
async def fact_history(
    fact_id: uuid.UUID, session: ReadSessionDep, tenant_id: TenantDep
) -> list[FactOut]:
    """Every version of the fact's key linked by supersession, the latest valid period first;
    each shows its valid time (`valid_from`, `valid_until`) and record time (`recorded_at`,
    `recorded_until`)."""
    chain = await facts.fact_history_chain(session, tenant_id=tenant_id, fact_id=fact_id)
    return [fact_out(item) for item in chain]


routes.confirm()


@router.post(
    "/{fact_id}/contradict",
    response_model=FactOut,
    responses=problem_responses(404, 409, 422),
    summary="Contradict a fact",
)
async def contradict_fact(
    fact_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    body: FactContradiction | None = None,
) -> FactOut:
    """Record evidence against an active fact that no memory holds (a `contradicts` link
    from the memory that does has the same effect): `contradiction_count` grows by one and
    the confidence halves; once contradictions exceed validations (confirmations, `supports`
    links) by three the fact is `retracted`. Writes a `fact_contradicted` event (with the
    confidence before and after, and `reasoning`) and, when it ends the fact, a
    `fact_retracted` one. 409 when the fact is not active."""
    return fact_out(
        await fact_beliefs.contradict(
            session,
            tenant_id=tenant_id,
            fact_id=fact_id,
            reasoning=None if body is None else body.reasoning,
        )
    )


routes.forget(
    summary="Forget (retract) a fact",
    doc="Set validity to `retracted`; it no longer appears in search or recall.",
)
routes.delete(
    summary="Delete a fact and its history for good",
    doc="""
    Hard-delete the fact and every version of its history (what it superseded and what
    superseded it): their links, keyword postings and audit events go too. A content-free
    `fact_deleted` event records the ids and the key. 404 when the tenant has none.""",
)
