"""/ui/entities: list and resolve, an entity's page with its 2-hop graph, merge with a
preview."""

import uuid
from typing import Any, cast, get_args

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.console.auth import ChangeDep, ConsoleDep, DbDep
from app.console.graph_svg import SIZE, layout
from app.console.render import ConsoleRoute, page
from app.core.errors import InvalidInput
from app.responses.entities import entity_out
from app.responses.facts import fact_out
from app.schemas.entities import EntityListQuery, EntityType, ResolveCandidate, ResolveRequest
from app.schemas.graph import GraphRelation
from app.services import entities, graph
from app.services.merge import merge_entities
from app.services.merge_preview import preview_merge

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
LISTED = 100
GRAPH_NODES = 60


@router.get("/entities")
async def entity_list(request: Request, console: ConsoleDep, db: DbDep) -> Response:
    """Entities, newest first, filtered by name and type; or the ranked matches of a name."""
    params = request.query_params
    entity_type = params.get("entity_type") or None
    if entity_type is not None and entity_type not in get_args(EntityType):
        raise InvalidInput("unknown entity type", field="entity_type")
    name = params.get("name", "").strip() or None
    if params.get("resolve") and name:
        found = await entities.resolve_name(
            db,
            tenant_id=console.tenant_id,
            request=(
                ResolveRequest.model_validate(
                    {"name": name, "entity_type": entity_type, "enable_fuzzy": True}
                )
            ),
        )
        candidates = [ResolveCandidate.model_validate(candidate) for candidate in found]
        return page(
            request,
            "entities.html",
            rows=[],
            candidates=candidates,
            params=params,
            types=get_args(EntityType),
        )
    # The console's search box takes any text: a name beyond the API's bound finds nothing.
    query = EntityListQuery.model_construct(
        entity_type=cast(EntityType | None, entity_type), name=name, limit=LISTED
    )
    rows, _ = await entities.list_entities(db, tenant_id=console.tenant_id, query=query)

    return page(
        request,
        "entities.html",
        rows=[entity_out(row) for row in rows],
        candidates=None,
        params=params,
        types=get_args(EntityType),
    )


@router.get("/entities/{entity_id}")
async def entity_page(
    request: Request, entity_id: uuid.UUID, console: ConsoleDep, db: DbDep
) -> Response:
    """An entity: names, its facts, and its neighbourhood 2 hops out as a picture."""
    around = await graph.neighbourhood(
        db,
        tenant_id=console.tenant_id,
        node_type="entity",
        node_id=entity_id,
        hops=2,
        relations=list(get_args(GraphRelation)),
        max_nodes=GRAPH_NODES,
    )
    row = await entities.get_entity(db, tenant_id=console.tenant_id, entity_id=entity_id)
    listing = await entities.list_entity_facts(
        db,
        tenant_id=console.tenant_id,
        entity_id=entity_id,
        validity="active",
        limit=LISTED,
        cursor=None,
    )
    nodes, lines = layout(around)
    return page(
        request,
        "entity.html",
        entity=entity_out(row),
        facts=[fact_out(fact) for fact in listing.rows],
        nodes=nodes,
        lines=lines,
        size=SIZE,
        truncated=around.truncated,
    )


def _source(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(value).strip())
    except ValueError:
        raise InvalidInput("source must be an entity id", field="source_id") from None


@router.get("/entities/{entity_id}/merge")
async def merge_page(
    request: Request, entity_id: uuid.UUID, console: ConsoleDep, db: DbDep
) -> Response:
    """What merging the source into this entity would do; the form that does it."""
    source_id = _source(request.query_params.get("source_id"))
    preview = await preview_merge(
        db, tenant_id=console.tenant_id, target_id=entity_id, source_id=source_id
    )
    return page(
        request,
        "merge.html",
        target=entity_out(preview.target),
        source=entity_out(preview.source),
        moving=[fact_out(fact) for fact in preview.moving],
        contests=[(fact_out(w), fact_out(loser)) for w, loser in preview.contests],
        aliases_added=preview.aliases_added,
    )


@router.post("/entities/{entity_id}/merge")
async def merge(entity_id: uuid.UUID, form: ChangeDep, console: ConsoleDep, db: DbDep) -> Response:
    """Merge the source entity into this one (as POST /v1/entities/{id}/merge)."""
    await merge_entities(
        db,
        tenant_id=console.tenant_id,
        target_id=entity_id,
        source_id=_source(form.get("source_id")),
    )
    return RedirectResponse(f"/ui/entities/{entity_id}?done=merged", status_code=303)
