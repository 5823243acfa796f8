"""/ui/episodes/{id}, /ui/facts/{id}, /ui/rules/{id}: a memory's page and its corrections,
each a form POST to the page's URL plus its verb."""

import json
import uuid
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.console.auth import ChangeDep, ConsoleDep, DbDep
from app.console.render import ConsoleRoute, page
from app.core.errors import InvalidInput, NotFound
from app.deps import EmbedderDep, SettingsDep
from app.models import Episode, Fact, Rule
from app.responses.events import event_out
from app.responses.facts import fact_out
from app.responses.links import link_out
from app.responses.memories import memory_out
from app.schemas.common import RESERVED_METADATA_KEYS
from app.schemas.memory_labels import LabelsUpdate
from app.services import deletion, memories, memory_edits, rules
from app.services.memory_views import memory_view

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
MODELS: dict[str, Any] = {"episodes": Episode, "facts": Fact, "rules": Rule}
PLURAL = {
    "episode": "episodes",
    "fact": "facts",
    "rule": "rules",
    "entity": "entities",
    "run": "runs",
}


def _back(kind: str, memory_id: uuid.UUID, done: str) -> RedirectResponse:
    return RedirectResponse(f"/ui/{kind}/{memory_id}?done={done}", status_code=303)


async def _memory_page(
    request: Request, kind: str, memory_id: uuid.UUID, console: Any, db: Any
) -> Response:
    found = await memory_view(db, MODELS[kind], tenant_id=console.tenant_id, memory_id=memory_id)
    summaries = {(node.type, node.id): node for node in found.neighbours.nodes}
    entities = [node for node in found.neighbours.nodes if node.type == "entity"]
    memory = memory_out(found.row)
    editable = {
        key: value for key, value in memory.metadata.items() if key not in RESERVED_METADATA_KEYS
    }
    return page(
        request,
        "memory.html",
        kind=kind,
        memory=memory,
        editable=editable,
        versions=[fact_out(row) for row in found.versions],
        links=[link_out(row) for row in found.links],
        nodes=summaries,
        entities=entities,
        events=[event_out(row) for row in found.events],
        plural=PLURAL,
    )


@router.get("/episodes/{memory_id}")
async def episode_page(
    request: Request, memory_id: uuid.UUID, console: ConsoleDep, db: DbDep
) -> Response:
    """An episode: content, state, what was derived from it, its events."""
    return await _memory_page(request, "episodes", memory_id, console, db)


@router.get("/facts/{memory_id}")
async def fact_page(
    request: Request, memory_id: uuid.UUID, console: ConsoleDep, db: DbDep
) -> Response:
    """A fact: content, lifecycle, version chain, provenance, entities, events."""
    return await _memory_page(request, "facts", memory_id, console, db)


@router.get("/rules/{memory_id}")
async def rule_page(
    request: Request, memory_id: uuid.UUID, console: ConsoleDep, db: DbDep
) -> Response:
    """A rule: content, maturity and feedback counts, provenance, events."""
    return await _memory_page(request, "rules", memory_id, console, db)


@router.post("/{kind}/{memory_id}/forget")
async def forget(
    kind: str, memory_id: uuid.UUID, form: ChangeDep, console: ConsoleDep, db: DbDep
) -> Response:
    """Forget: an episode expires, a fact is retracted, a rule is flagged forgotten."""
    await memories.forget(db, _model(kind), tenant_id=console.tenant_id, memory_id=memory_id)
    return _back(kind, memory_id, "forgotten")


@router.post("/{kind}/{memory_id}/confirm")
async def confirm(
    kind: str, memory_id: uuid.UUID, form: ChangeDep, console: ConsoleDep, db: DbDep
) -> Response:
    """Confirm a fact or rule: its decay starts again."""
    await memories.confirm(db, _model(kind), tenant_id=console.tenant_id, memory_id=memory_id)
    return _back(kind, memory_id, "confirmed")


@router.post("/{kind}/{memory_id}/delete")
async def delete(
    kind: str,
    memory_id: uuid.UUID,
    form: ChangeDep,
    console: ConsoleDep,
    db: DbDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> Response:
    """Delete for good (a fact with every version of its history)."""
    if _model(kind) is Episode:
        await deletion.delete_episode(
            db,
            tenant_id=console.tenant_id,
            episode_id=memory_id,
            embedder=embedder,
            keyword_context=settings.keyword_context,
        )
    else:
        await deletion.delete_memory(
            db, _model(kind), tenant_id=console.tenant_id, memory_id=memory_id
        )
    return RedirectResponse("/ui?done=deleted", status_code=303)


@router.post("/{kind}/{memory_id}/labels")
async def edit_labels(
    kind: str, memory_id: uuid.UUID, form: ChangeDep, console: ConsoleDep, db: DbDep
) -> Response:
    """Replace a fact's or rule's tags (comma-separated) and metadata (a JSON object)."""
    labels = LabelsUpdate.model_validate(
        {"tags": _tags(form.get("tags")), "metadata": _metadata(form.get("metadata"))}
    )
    await memory_edits.edit_labels(
        db, _model(kind), tenant_id=console.tenant_id, memory_id=memory_id, labels=labels
    )
    return _back(kind, memory_id, "edited")


@router.post("/rules/{memory_id}/helpful")
async def helpful(
    memory_id: uuid.UUID, form: ChangeDep, console: ConsoleDep, db: DbDep
) -> Response:
    """Mark a rule helpful (its effectiveness and maturity follow)."""
    await rules.mark_helpful(db, tenant_id=console.tenant_id, rule_id=memory_id, context={})
    return _back("rules", memory_id, "helpful")


@router.post("/rules/{memory_id}/harmful")
async def harmful(
    memory_id: uuid.UUID, form: ChangeDep, console: ConsoleDep, db: DbDep
) -> Response:
    """Mark a rule harmful, with an optional reason (its maturity may drop)."""
    reason = form.get("reason")
    text = reason.strip() if isinstance(reason, str) else ""
    await rules.mark_harmful(
        db, tenant_id=console.tenant_id, rule_id=memory_id, reason=text[:2000] or None, context={}
    )
    return _back("rules", memory_id, "harmful")


def _model(kind: str) -> Any:
    if kind not in MODELS:
        raise NotFound(f"no memory type {kind!r}")
    return MODELS[kind]


def _tags(value: object) -> list[str]:
    text = value if isinstance(value, str) else ""
    return [tag.strip() for tag in text.split(",") if tag.strip()]


def _metadata(value: object) -> Any:
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(f"metadata is not JSON: {error.msg}", field="metadata") from None
