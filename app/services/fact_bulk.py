"""Many facts read, stored or deleted in one request and one transaction."""

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import AutoLinkSettings
from app.core.errors import DomainError
from app.core.text import normalise_key
from app.embedding import Embedder
from app.models import Fact
from app.repositories import erasure as erasure_rows
from app.repositories import facts as fact_rows
from app.schemas.fact_bulk import FactRef
from app.schemas.facts import FactCreate
from app.services import butler_limits, events
from app.services.embeddings import embed_texts
from app.services.facts import StoredFact, check_period, lock_name, store_embedded_fact

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Deleted:
    """What one item of a bulk delete removed: its fact and every version of that fact's
    history (no fact: the tenant had none to delete)."""

    fact_id: uuid.UUID | None
    deleted_ids: list[uuid.UUID]


def key_of(ref: FactRef) -> Key | None:
    """The normalised (scope, subject, predicate) key a reference names, None for an id."""
    if ref.id is not None or ref.subject is None or ref.predicate is None:
        return None
    return (ref.scope or "global", normalise_key(ref.subject), normalise_key(ref.predicate))


async def _resolve(
    session: AsyncSession, *, tenant_id: str, refs: Sequence[FactRef], for_update: bool
) -> list[Fact | None]:
    """Each reference's fact (None when the tenant has none), in two statements."""
    by_id = await fact_rows.by_ids(
        session,
        tenant_id=tenant_id,
        ids=[r.id for r in refs if r.id is not None],
        for_update=for_update,
    )
    by_key = await fact_rows.active_by_keys(
        session,
        tenant_id=tenant_id,
        keys=[k for r in refs if (k := key_of(r)) is not None],
        for_update=for_update,
    )
    found: list[Fact | None] = []
    for ref in refs:
        key = key_of(ref)
        found.append(
            by_key.get(key)
            if key is not None
            else by_id.get(ref.id)
            if ref.id is not None
            else None
        )
    return found


async def get_facts(
    session: AsyncSession, *, tenant_id: str, refs: Sequence[FactRef]
) -> list[Fact | None]:
    """The fact each reference names, or None, in the order asked."""
    return await _resolve(session, tenant_id=tenant_id, refs=refs, for_update=False)


async def store_facts(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    items: Sequence[FactCreate],
    auto_links: AutoLinkSettings | None = None,
) -> list[StoredFact]:
    """Store the facts in order, as `facts.store_fact` stores one, all in the caller's
    transaction. Every content is embedded in one batch before the first SQL statement. An
    item the store refuses raises its error with the field named `body.items.<i>.<field>`, and
    the caller's transaction (with the items before it) rolls back."""
    for index, item in enumerate(items):
        with _item_errors(index):
            butler_limits.check_butler(item.scope, "scope")
            check_period(item)
    embedded = await embed_texts(
        session, embedder, [item.content for item in items], tenant_id=tenant_id
    )
    # Every key locked at once, in one order, so two bulk stores sharing keys never deadlock.
    await fact_rows.lock_keys(session, sorted({lock_name(tenant_id, item) for item in items}))
    stored = []
    for index, item in enumerate(items):
        one = embedded.only([index])
        with _item_errors(index):
            stored.append(
                await store_embedded_fact(
                    session, tenant_id=tenant_id, data=item, embedded=one, auto_links=auto_links
                )
            )
    return stored


async def delete_facts(
    session: AsyncSession, *, tenant_id: str, refs: Sequence[FactRef]
) -> list[Deleted]:
    """Delete the fact each reference names with every version of its history, for good;
    one `fact_deleted` event per fact. A reference to no fact deletes nothing."""
    targets = await _resolve(session, tenant_id=tenant_id, refs=refs, for_update=True)
    for index, target in enumerate(targets):
        if target is not None:
            with _item_errors(index):
                butler_limits.check_butler(target.scope, "scope")
    chains: dict[uuid.UUID, list[uuid.UUID]] = {}
    happened = []
    for fact in targets:
        if fact is None or any(fact.id in chain for chain in chains.values()):
            continue
        chain = await erasure_rows.fact_versions(session, tenant_id=tenant_id, ids=[fact.id])
        chains[fact.id] = chain
        happened.append(
            events.Event(
                "fact_deleted",
                tenant_id,
                {
                    "memory_type": "fact",
                    "memory_id": str(fact.id),
                    "deleted_ids": [str(i) for i in chain],
                },
            )
        )
    every = sorted({version for chain in chains.values() for version in chain})
    await erasure_rows.delete_facts(session, tenant_id=tenant_id, ids=every)
    await events.record(session, happened)
    results = []
    for fact in targets:
        if fact is None:
            results.append(Deleted(None, []))
            continue
        chain = chains.get(fact.id) or next(c for c in chains.values() if fact.id in c)
        results.append(Deleted(fact.id, chain))
    return results


@contextmanager
def _item_errors(index: int) -> Iterator[None]:
    """Re-raise a domain error of item `index` with its field under `body.items.<index>`."""
    try:
        yield
    except DomainError as error:
        field = f"body.items.{index}" + (f".{error.field}" if error.field else "")
        raise type(error)(f"items[{index}]: {error.detail}", field=field) from error
