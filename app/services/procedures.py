"""Procedural memory: create, version, status, execution tracking and search."""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, InvalidInput, found
from app.core.text import preprocess_text
from app.embedding import Embedder
from app.models import Procedure
from app.repositories import links as link_rows
from app.repositories import procedures as procedure_rows
from app.repositories import rows as record_rows
from app.repositories.links import LinkEnds
from app.repositories.procedures import ProcedureFilters
from app.retrieval.records import RecordHit, search_records
from app.retrieval.searcher import Searcher
from app.schemas.common import MemoryRef
from app.schemas.filters import MemoryFilter
from app.schemas.procedures import (
    ProcedureCreate,
    ProcedureListQuery,
    ProcedureSearchRequest,
    ProcedureStep,
    ProcedureVersionCreate,
)
from app.services import butler_limits, events
from app.services.embeddings import embed_texts


@dataclass(frozen=True)
class Definition:
    """What one version of a procedure says (everything but identity and counters)."""

    description: str
    steps: list[ProcedureStep]
    preconditions: dict[str, Any]
    postconditions: dict[str, Any]
    learned_from: list[MemoryRef]
    status: str


def search_text(name: str, definition: Definition) -> str:
    """The text a procedure is embedded and keyword-indexed by: name, description, actions."""
    return procedure_text(name, definition.description, [step.action for step in definition.steps])


def procedure_text(name: str, description: str, actions: list[str]) -> str:
    """The text of a procedure with this name, description and step actions."""
    return preprocess_text(f"{name}. {description} {' '.join(actions)}")


def _event(event_type: str, tenant_id: str, row: Procedure, **payload: Any) -> events.Event:
    return events.Event(
        event_type,
        tenant_id,
        {
            "procedure_id": str(row.id),
            "agent_id": row.agent_id,
            "name": row.name,
            "version": row.version,
            **payload,
        },
    )


async def _check_sources(session: AsyncSession, tenant_id: str, refs: list[MemoryRef]) -> None:
    for index, ref in enumerate(refs):
        if not await link_rows.memory_exists(
            session, tenant_id=tenant_id, memory_type=ref.memory_type, memory_id=ref.memory_id
        ):
            raise InvalidInput(
                f"{ref.memory_type} {ref.memory_id} does not exist",
                field=f"learned_from.{index}.memory_id",
            )


async def _insert(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    agent_id: str,
    name: str,
    definition: Definition,
    version: int,
    procedure_id: uuid.UUID | None = None,
) -> Procedure:
    """Embed, check the sources, insert, and link the procedure to what it was learned from."""
    text = search_text(name, definition)
    embedded = await embed_texts(session, embedder, [text], tenant_id=tenant_id)
    await _check_sources(session, tenant_id, definition.learned_from)
    values: dict[str, Any] = {
        "tenant_id": tenant_id,
        "agent_id": agent_id,
        "name": name,
        "description": definition.description,
        "steps": [step.model_dump(mode="json") for step in definition.steps],
        "preconditions": definition.preconditions,
        "postconditions": definition.postconditions,
        "learned_from": [ref.model_dump(mode="json") for ref in definition.learned_from],
        "status": definition.status,
        "version": version,
        **embedded.columns(0),
    }
    if procedure_id is not None:
        values["id"] = procedure_id
    row = await record_rows.insert_searchable(session, Procedure, values=values, search_text=text)
    for ref in definition.learned_from:
        await link_rows.create_link(
            session,
            tenant_id=tenant_id,
            ends=LinkEnds("procedure", row.id, ref.memory_type, ref.memory_id),
            relation="derived_from",
        )
    return row


async def create_procedure(
    session: AsyncSession, *, tenant_id: str, embedder: Embedder, data: ProcedureCreate
) -> Procedure:
    """Store version 1 of a procedure; Conflict when the agent already has one of this name."""
    butler_limits.check_butler(data.agent_id, "agent_id")
    if await procedure_rows.current_named(
        session, tenant_id=tenant_id, agent_id=data.agent_id, name=data.name
    ):
        raise Conflict(
            f"agent {data.agent_id!r} already has a procedure named {data.name!r}; "
            "add a version to it instead",
            field="name",
        )
    definition = Definition(
        data.description,
        data.steps,
        data.preconditions,
        data.postconditions,
        data.learned_from,
        data.status,
    )
    row = await _insert(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        agent_id=data.agent_id,
        name=data.name,
        definition=definition,
        version=1,
    )
    await events.record(session, [_event("procedure_created", tenant_id, row)])
    return row


async def get_procedure(
    session: AsyncSession, *, tenant_id: str, procedure_id: uuid.UUID, for_update: bool = False
) -> Procedure:
    """The tenant's procedure, optionally locked; NotFound otherwise."""
    row = await record_rows.one_of_tenant(
        session, Procedure, tenant_id=tenant_id, row_id=procedure_id, for_update=for_update
    )
    return found(row, f"procedure {procedure_id} not found")


async def list_procedures(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: ProcedureListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[Procedure], str | None]:
    """A page of the tenant's procedures, newest first; current versions unless asked."""
    filters = ProcedureFilters(
        agent_id=query.agent_id,
        name=query.name,
        status=query.status,
        include_superseded=query.include_superseded,
        memory_filter=memory_filter,
    )
    return await procedure_rows.list_procedures(
        session, tenant_id=tenant_id, filters=filters, limit=query.limit, cursor=query.cursor
    )


async def list_versions(
    session: AsyncSession, *, tenant_id: str, procedure_id: uuid.UUID
) -> list[Procedure]:
    """Every version of the procedure's chain, oldest first."""
    row = await get_procedure(session, tenant_id=tenant_id, procedure_id=procedure_id)
    return await procedure_rows.versions(
        session, tenant_id=tenant_id, agent_id=row.agent_id, name=row.name
    )


async def create_version(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    procedure_id: uuid.UUID,
    data: ProcedureVersionCreate,
) -> Procedure:
    """Supersede the procedure by a new version, atomically.

    The old row is locked; only the current version can be superseded (Conflict otherwise,
    also for the loser of two concurrent calls). The old version becomes deprecated with
    `superseded_by` set; the new one has version + 1 and inherits what the request omits.
    """
    old = await get_procedure(
        session, tenant_id=tenant_id, procedure_id=procedure_id, for_update=True
    )
    if old.superseded_by is not None:
        raise Conflict(
            f"procedure {procedure_id} (version {old.version}) is already superseded "
            f"by {old.superseded_by}; version the latest one"
        )
    inherited_status = "draft" if old.status == "deprecated" else old.status
    definition = Definition(
        description=old.description if data.description is None else data.description,
        steps=data.steps,
        preconditions=old.preconditions if data.preconditions is None else data.preconditions,
        postconditions=(old.postconditions if data.postconditions is None else data.postconditions),
        learned_from=(
            [MemoryRef.model_validate(ref, strict=False) for ref in old.learned_from]
            if data.learned_from is None
            else data.learned_from
        ),
        status=data.status or inherited_status,
    )
    new_id = uuid.uuid4()
    # The old row leaves the current-name index first; the deferred foreign key lets it
    # point at the new row before that row exists.
    await procedure_rows.update_procedure(
        session,
        tenant_id=tenant_id,
        procedure_id=old.id,
        values={"superseded_by": new_id, "status": "deprecated"},
    )
    row = await _insert(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        agent_id=old.agent_id,
        name=old.name,
        definition=definition,
        version=old.version + 1,
        procedure_id=new_id,
    )
    await events.record(
        session,
        [
            _event("procedure_superseded", tenant_id, old, superseded_by=str(row.id)),
            _event("procedure_created", tenant_id, row, supersedes=str(old.id)),
        ],
    )
    return row


async def set_status(
    session: AsyncSession, *, tenant_id: str, procedure_id: uuid.UUID, status: str
) -> Procedure:
    """Move a procedure to `status`; a superseded version cannot leave deprecated."""
    row = await get_procedure(
        session, tenant_id=tenant_id, procedure_id=procedure_id, for_update=True
    )
    if row.status == status:
        return row
    if row.superseded_by is not None:
        raise Conflict(
            f"procedure {procedure_id} is superseded by {row.superseded_by}; it stays deprecated"
        )
    updated = await procedure_rows.update_procedure(
        session, tenant_id=tenant_id, procedure_id=row.id, values={"status": status}
    )
    await events.record(
        session,
        [
            _event(
                "procedure_status_changed",
                tenant_id,
                updated,
                old_status=row.status,
                new_status=status,
            )
        ],
    )
    return updated


async def record_execution(
    session: AsyncSession,
    *,
    tenant_id: str,
    procedure_id: uuid.UUID,
    success: bool,
    duration_ms: int | None,
) -> Procedure:
    """Count one execution atomically; NotFound when the tenant has no such procedure,
    Conflict when this version is superseded (executions count on the current one)."""
    row = await procedure_rows.record_execution(
        session,
        tenant_id=tenant_id,
        procedure_id=procedure_id,
        success=success,
        duration_ms=duration_ms,
    )
    if row is not None:
        return row
    old = await get_procedure(session, tenant_id=tenant_id, procedure_id=procedure_id)
    raise Conflict(
        f"procedure {procedure_id} is version {old.version} of {old.name!r}, "
        f"deprecated and superseded by {old.superseded_by}; record executions "
        "on the current version",
        field="procedure_id",
    )


async def search_procedures(
    session: AsyncSession,
    *,
    searcher: Searcher,
    request: ProcedureSearchRequest,
) -> list[RecordHit]:
    """Semantic and keyword legs fused as memories are (the configured fusion), or one leg alone."""
    tenant_id, embedder, retrieval = searcher.tenant_id, searcher.embedder, searcher.retrieval
    filters = ProcedureFilters(
        agent_id=request.agent_id,
        status=request.status,
        include_superseded=request.include_superseded,
    )

    query = procedure_rows.search_query(tenant_id=tenant_id, filters=filters)
    return await search_records(
        session,
        embedder=embedder,
        retrieval=retrieval,
        record_query=query,
        text=request.query,
        mode=request.mode,
        limit=request.limit,
    )
