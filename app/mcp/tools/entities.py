"""Entity tools: create, get, update, resolve a name, merge two entities, list entities and
an entity's facts, delete an entity for good."""

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.formulas.fact_time import point_in_time
from app.mcp.args import (
    CursorArg,
    EntityFilterArg,
    EntityIdArg,
    MetadataArg,
    PageLimitArg,
    TenantArg,
    filter_of,
)
from app.mcp.calls import Caller, JsonObject, build, call, page_call, read_call
from app.mcp.toolset import ToolSet
from app.responses.data_rights import deleted_out
from app.responses.entities import entity_out, merge_out, resolve_out
from app.responses.facts import fact_page_out
from app.schemas.common import AwareDatetimeIn, Name, Validity
from app.schemas.data_rights import DeletedOut
from app.schemas.entities import (
    Aliases,
    ContextHints,
    EntityCreate,
    EntityListQuery,
    EntityOut,
    EntityType,
    EntityUpdate,
    MergeOut,
    MergeRequest,
    ResolveCandidate,
    ResolveRequest,
)
from app.schemas.facts import FactPage
from app.services import deletion, entities
from app.services.merge import merge_entities

NameArg = Annotated[Name, Field(description="The entity's canonical name, e.g. 'Ann Smith'.")]
AliasesArg = Annotated[
    Aliases | None,
    Field(description="Other names it goes by; on update the whole list is replaced."),
]
FactsArg = Annotated[
    deletion.FactsOfEntity,
    Field(
        description="detach: the entity's facts stay, anchored to no entity; delete: they go too, "
        "every version of their history."
    ),
]


class ResolveResult(BaseModel):
    """The candidates of entity_resolve, best first; empty when nothing matches."""

    candidates: list[ResolveCandidate]


def _check_tenant(tenant_id: str | None, caller: Caller) -> None:
    """A tool's tenant_id argument may only name the caller's own tenant."""
    if tenant_id is not None and tenant_id != caller.tenant_id:
        raise ToolError(
            "Invalid value for: tenant_id\n- tenant_id: the API key decides the "
            "tenant; leave tenant_id out or pass the key's own tenant"
        )


tools = ToolSet("entities")


@tools.add()
async def entity_create(
    canonical_name: NameArg,
    entity_type: EntityType,
    ctx: Context,
    tenant_id: TenantArg = None,
    aliases: AliasesArg = None,
    metadata: MetadataArg = None,
) -> JsonObject:
    """Register a person, organization, place or other thing that facts can be anchored to
    (pass its id as entity_id to memory_store_fact). Call entity_resolve first: a second
    entity with the same name and type is refused."""
    data = build(
        EntityCreate,
        canonical_name=canonical_name,
        entity_type=entity_type,
        aliases=aliases,
        metadata=metadata,
    )

    async def work(session: AsyncSession, caller: Caller) -> EntityOut:
        _check_tenant(tenant_id, caller)
        row = await entities.create_entity(session, tenant_id=caller.tenant_id, data=data)
        return entity_out(row)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def entity_get(entity_id: EntityIdArg, ctx: Context) -> JsonObject:
    """Read an entity by id; a merged one says in metadata.merged_into where it went."""

    async def work(session: AsyncSession, caller: Caller) -> EntityOut:
        row = await entities.get_entity(session, tenant_id=caller.tenant_id, entity_id=entity_id)
        return entity_out(row)

    return await read_call(ctx, work)


@tools.add()
async def entity_update(
    entity_id: EntityIdArg,
    ctx: Context,
    canonical_name: NameArg | None = None,
    aliases: AliasesArg = None,
    metadata: MetadataArg = None,
) -> JsonObject:
    """Rename an entity, replace its aliases (pass the whole list) or add metadata keys
    (merged into what is stored). Arguments left out stay as they are."""
    data = build(EntityUpdate, canonical_name=canonical_name, aliases=aliases, metadata=metadata)

    async def work(session: AsyncSession, caller: Caller) -> EntityOut:
        row = await entities.update_entity(
            session, tenant_id=caller.tenant_id, entity_id=entity_id, data=data
        )
        return entity_out(row)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def entity_resolve(
    name: NameArg,
    ctx: Context,
    tenant_id: TenantArg = None,
    entity_type: EntityType | None = None,
    context_hints: ContextHints | None = None,
    enable_fuzzy: bool = False,
) -> JsonObject:
    """Find which known entity a name refers to ('Ann', 'the Smiths'), best first; use it before
    creating an entity or anchoring a fact. Never creates."""
    request = build(
        ResolveRequest,
        name=name,
        entity_type=entity_type,
        context_hints=context_hints,
        enable_fuzzy=enable_fuzzy,
    )

    async def work(session: AsyncSession, caller: Caller) -> ResolveResult:
        _check_tenant(tenant_id, caller)
        candidates = await entities.resolve_name(
            session, tenant_id=caller.tenant_id, request=request
        )
        return ResolveResult(candidates=resolve_out(candidates))

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(destructive_hint=True))
async def entity_merge(target_id: EntityIdArg, source_id: EntityIdArg, ctx: Context) -> JsonObject:
    """Merge a duplicate entity (source_id) into the one to keep (target_id): its facts and
    names move to the target."""
    request = build(MergeRequest, source_id=source_id)

    async def work(session: AsyncSession, caller: Caller) -> MergeOut:
        result = await merge_entities(
            session, tenant_id=caller.tenant_id, target_id=target_id, source_id=request.source_id
        )
        return merge_out(result)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def entity_list(
    ctx: Context,
    entity_type: EntityType | None = None,
    name: Name | None = None,
    include_merged: bool = False,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: EntityFilterArg = None,
) -> JsonObject:
    """List known entities newest first, optionally of one type or whose name contains `name`.
    To find which entity a name means, use entity_resolve."""
    query = build(
        EntityListQuery,
        entity_type=entity_type,
        name=name,
        include_merged=include_merged,
        limit=limit,
        cursor=cursor,
    )
    return await page_call(
        ctx,
        entities.list_entities,
        entity_out,
        query=query,
        memory_filter=filter_of(filter, "entity"),
    )


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def entity_facts(
    entity_id: EntityIdArg,
    ctx: Context,
    validity: Validity | None = None,
    as_of: AwareDatetimeIn | None = None,
    known_at: AwareDatetimeIn | None = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
) -> JsonObject:
    """Everything known about an entity: the facts anchored to it, newest first (with as_of /
    known_at, as they held or were believed then)."""

    async def work(session: AsyncSession, caller: Caller) -> FactPage:
        return fact_page_out(
            await entities.list_entity_facts(
                session,
                tenant_id=caller.tenant_id,
                entity_id=entity_id,
                validity=validity,
                limit=limit,
                cursor=cursor,
                at=point_in_time(as_of, known_at),
            )
        )

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def entity_delete(
    entity_id: EntityIdArg, ctx: Context, facts: FactsArg = "detach"
) -> JsonObject:
    """Delete an entity for good, with the entities merged into it; its facts are detached
    (the default) or deleted. Returns the rows deleted (and facts detached) per table."""

    async def work(session: AsyncSession, caller: Caller) -> DeletedOut:
        counts = await deletion.delete_entity(
            session, tenant_id=caller.tenant_id, entity_id=entity_id, facts=facts
        )
        return deleted_out("entity", entity_id, counts)

    return await call(ctx, work)
