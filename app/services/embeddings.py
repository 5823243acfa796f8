"""Embedding of memory text (and of its passages) with the embedding_versions bookkeeping."""

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.text import split_passages
from app.embedding import Embedder
from app.embedding.remote import RemoteEmbeddingError
from app.embedding.vectors import EmbeddingVector, Vectors
from app.repositories import embedding_switches as switch_rows
from app.repositories import passages as passage_rows
from app.repositories.embedding_switches import VECTOR_COLUMNS, SlotModels
from app.telemetry.metrics import EMBEDDINGS_DEFERRED

logger = logging.getLogger(__name__)

# A batch of long texts has tens of thousands of passages. Their rows are built and sent this
# many at a time: each row's bound values (its vector as text among them) live until its
# statement is sent: 500 texts of 49,000 characters make about 40,000 rows, whose vectors
# alone are 200 MB as text.
PASSAGE_ROWS_PER_STATEMENT = 1_000


@dataclass(frozen=True, slots=True)
class PassageVector:
    """A `window` of a text, or the text read in its `context`, with its vector."""

    kind: str
    ordinal: int
    start_char: int
    end_char: int
    vector: EmbeddingVector
    # The `embedding_next` slot's vector while the store switches models.
    next_vector: EmbeddingVector | None = None


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts, the passages of the long ones, and the model's row;
    `deferred`: none of them, the texts are stored without and embedded by the backlog."""

    vectors: Vectors
    version_id: int
    passages: list[list[PassageVector]]
    deferred: bool = False
    # The `embedding_next` slot's vectors and model while the store switches models (None:
    # the slot is cleared).
    next_vectors: Vectors | None = None
    next_version_id: int | None = None

    def vector(self, index: int) -> EmbeddingVector | None:
        """The vector of text `index`, None when deferred."""
        return None if self.deferred else self.vectors[index]

    def columns(self, index: int) -> dict[str, Any]:
        """A row's vector columns: `embedding`, `embedding_next` and their versions (all NULL
        when deferred)."""
        if self.deferred:
            return dict.fromkeys(VECTOR_COLUMNS)
        following = self.next_vectors[index] if self.next_vectors is not None else None
        return {
            "embedding": self.vectors[index],
            "embedding_version_id": self.version_id,
            "embedding_next": following,
            "embedding_next_version_id": self.next_version_id if following is not None else None,
        }

    def only(self, indexes: list[int]) -> "Embedded":
        """The vectors and passages of these texts alone."""
        return replace(
            self,
            vectors=[self.vectors[i] for i in indexes],
            passages=[self.passages[i] for i in indexes],
            next_vectors=None
            if self.next_vectors is None
            else [self.next_vectors[i] for i in indexes],
        )


@dataclass(frozen=True)
class Made:
    """Texts embedded before their transaction, by the models the last transaction said
    fill the two columns."""

    texts: list[str | None]
    tenant_id: str
    bulk: bool
    vectors: dict[Embedder, Vectors]
    background: bool = False  # no live caller waits (the embedding backlog)
    # Remote models being switched to that failed or were slow on these texts: their slot is
    # left empty, for the switch to fill.
    skipped: set[Embedder] = field(default_factory=set)


async def embed_ahead(
    embedder: Embedder,
    texts: list[str | None],
    *,
    tenant_id: str,
    bulk: bool,
    background: bool = False,
) -> Made:
    """Embed `texts` with the models that filled the columns in the last transaction."""
    made = Made(texts, tenant_id, bulk, {}, background)
    serving, following = embedder.slot_hint
    made.vectors[serving] = await _embed(serving, made)
    if following is not None:
        await _embed_next(following, made)
    return made


async def in_slots(
    session: AsyncSession, embedder: Embedder, made: Made
) -> tuple[SlotModels, Vectors, Vectors | None]:
    """The transaction's models, with the texts' vectors for `embedding` and for
    `embedding_next` (None: the slot is left empty); a model the texts were not embedded by
    (the store switched since) embeds them now."""
    slots = await switch_rows.slot_models(session, embedder)
    if slots.serving not in made.vectors:
        made.vectors[slots.serving] = await _embed(slots.serving, made)
    following = slots.next
    if following is not None and following not in made.vectors and following not in made.skipped:
        await _embed_next(following, made)
    return (
        slots,
        made.vectors[slots.serving],
        made.vectors.get(following) if following is not None else None,
    )


async def _embed_next(model: Embedder, made: Made) -> None:
    """Embed the texts with the model the store switches to; a remote one that fails, failed
    a few seconds ago or is slower than its `write_wait_seconds` is skipped: the row is
    stored without that model's vector, which the switch makes (`worker/model_switch`)."""
    if model.backend_name != "openai":
        made.vectors[model] = await _embed(model, made)
        return
    try:
        if model.failed_recently:
            raise RemoteEmbeddingError("the embeddings endpoint failed a few seconds ago")
        made.vectors[model] = await asyncio.wait_for(
            _embed(model, made), timeout=model.write_wait_seconds
        )
    except (RemoteEmbeddingError, TimeoutError) as error:
        logger.warning(
            "%d text(s) of tenant %s stored without the vectors of %r, the model "
            "the store switches to, made by the switch later: %s",
            len(made.texts),
            made.tenant_id,
            model.model_name,
            str(error) or "the embeddings endpoint is slow",
        )
        made.skipped.add(model)


async def _embed(model: Embedder, made: Made) -> Vectors:
    """The texts of `made` embedded by `model`."""
    if not made.texts:
        return []
    return await model.aembed_batch(
        made.texts, tenant_id=made.tenant_id, bulk=made.bulk, background=made.background
    )


async def embed_texts(
    session: AsyncSession,
    embedder: Embedder,
    texts: list[str],
    *,
    tenant_id: str,
    contexts: Sequence[str | None] = (),
    bulk: bool | None = None,
    background: bool = False,
) -> Embedded:
    """Embed `texts`, the passages of those longer than one window and their `contexts`
    (a text read after what came before it; None for none), in one batch off the event
    loop, then find the model version's id.

    The model runs before this function touches the database, so a caller that has not run
    SQL yet holds no connection while it waits. The model serves `tenant_id` in its turn;
    `bulk` work (by default: more than one text) waits behind the tenant's searches and
    single writes; `background` work (the backlog) never marks a remote model failed for
    live callers.
    """
    spans = [
        split_passages(text, size=embedder.passage_chars, overlap=embedder.passage_overlap)
        for text in texts
    ]
    windows = [
        text[start:end]
        for text, text_spans in zip(texts, spans, strict=True)
        for start, end in text_spans
    ]
    in_context = [context for context in contexts if context is not None]
    made = await embed_ahead(
        embedder,
        [*texts, *windows, *in_context],
        tenant_id=tenant_id,
        bulk=len(texts) > 1 if bulk is None else bulk,
        background=background,
    )
    slots, vectors, next_vectors = await in_slots(session, embedder, made)
    extra_vectors = iter(vectors[len(texts) :])
    extra_next = iter(next_vectors[len(texts) :] if next_vectors is not None else [])
    passages: list[list[PassageVector]] = [
        [
            PassageVector(
                "window", ordinal, start, end, next(extra_vectors), next(extra_next, None)
            )
            for ordinal, (start, end) in enumerate(text_spans)
        ]
        for text_spans in spans
    ]
    for index, context in enumerate(contexts):
        if context is not None:
            passages[index].append(
                PassageVector(
                    "context", 0, 0, len(texts[index]), next(extra_vectors), next(extra_next, None)
                )
            )
    return Embedded(
        vectors[: len(texts)],
        slots.serving_id,
        passages,
        next_vectors=next_vectors[: len(texts)] if next_vectors is not None else None,
        next_version_id=slots.next_id,
    )


async def embed_for_write(
    session: AsyncSession,
    embedder: Embedder,
    texts: list[str],
    *,
    tenant_id: str,
    contexts: Sequence[str | None] = (),
) -> Embedded:
    """`embed_texts` for a write that must not wait on, nor fail because of, a remote model:
    when the endpoint fails (or failed a few seconds ago) or takes longer than the embedder's
    `write_wait_seconds`, the texts are stored without vectors (found by keyword at once)
    and the embedding backlog (`worker/reembed.embed_backlog`) embeds them later. A local
    model is waited for."""
    if embedder.backend_name != "openai":
        return await embed_texts(session, embedder, texts, tenant_id=tenant_id, contexts=contexts)
    try:
        if embedder.failed_recently:
            raise RemoteEmbeddingError("the embeddings endpoint failed a few seconds ago")
        return await asyncio.wait_for(
            embed_texts(session, embedder, texts, tenant_id=tenant_id, contexts=contexts),
            timeout=embedder.write_wait_seconds,
        )
    except (RemoteEmbeddingError, TimeoutError) as error:
        logger.warning(
            "%d text(s) of tenant %s stored without vectors, embedded later: %s",
            len(texts),
            tenant_id,
            error or "the embeddings endpoint is slow",
        )
        EMBEDDINGS_DEFERRED.inc(len(texts))
        embedder.deferred_at = time.monotonic()
        return Embedded([], 0, [[] for _ in texts], deferred=True)


async def store_passages(
    session: AsyncSession,
    memory_type: str,
    *,
    tenant_id: str,
    memory_ids: Sequence[uuid.UUID],
    embedded: Embedded,
    replace: bool = False,
) -> None:
    """Store the passages of `embedded` for the memories it was made for, in order;
    `replace` first deletes the memories' old passages (new content or a new model)."""
    if replace:
        await passage_rows.delete_passages(
            session, memory_type, tenant_id=tenant_id, memory_ids=memory_ids
        )
    rows = (
        {
            "tenant_id": tenant_id,
            "memory_id": memory_id,
            "kind": p.kind,
            "ordinal": p.ordinal,
            "start_char": p.start_char,
            "end_char": p.end_char,
            "embedding": p.vector,
            "embedding_version_id": embedded.version_id,
            "embedding_next": p.next_vector,
            "embedding_next_version_id": embedded.next_version_id
            if p.next_vector is not None
            else None,
        }
        for memory_id, passages in zip(memory_ids, embedded.passages, strict=True)
        for p in passages
    )
    for statement_rows in _slices(rows, PASSAGE_ROWS_PER_STATEMENT):
        await passage_rows.insert_passages(session, memory_type, statement_rows)


async def replace_context_passages(
    session: AsyncSession,
    embedder: Embedder,
    *,
    tenant_id: str,
    passages: dict[uuid.UUID, tuple[int, int] | None],
    made: Made,
) -> None:
    """Give these episodes context passages in place of theirs: (start, end) of the text
    whose vector `made` holds at the same place among the kept ones (None: no passage)."""
    if not passages:
        return
    await passage_rows.delete_passages(
        session, "episode", tenant_id=tenant_id, memory_ids=list(passages), kind="context"
    )
    kept = {episode_id: span for episode_id, span in passages.items() if span}
    if kept:
        slots, vectors, next_vectors = await in_slots(session, embedder, made)
        embedded = Embedded(
            [],
            slots.serving_id,
            [
                [
                    PassageVector(
                        "context",
                        0,
                        start,
                        end,
                        vectors[index],
                        next_vectors[index] if next_vectors is not None else None,
                    )
                ]
                for index, (start, end) in enumerate(kept.values())
            ],
            next_version_id=slots.next_id,
        )
        await store_passages(
            session, "episode", tenant_id=tenant_id, memory_ids=list(kept), embedded=embedded
        )


def _slices(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    while statement_rows := list(islice(rows, size)):
        yield statement_rows
