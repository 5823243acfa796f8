"""SQL shared by the three memory tables: fetch, lock, reference bump, insert, update,
confirm, forget."""

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any, TypeVar
from typing import cast as cast_type

from sqlalchemy import (
    ColumnElement,
    Table,
    bindparam,
    cast,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import REGCONFIG
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.languages import DEFAULT_CONFIG, MAX_DOCUMENT_LEXEMES, keyword_document, segment
from app.core.scope import transaction_now
from app.models import Base, Episode, Fact, Rule
from app.repositories import fact_time

M = TypeVar("M", bound=Episode | Fact | Rule)
# A table with the search columns: the memories, ledger events, run messages.
Searchable = TypeVar("Searchable", bound=Base)

MODELS: dict[str, type[Episode] | type[Fact] | type[Rule]] = {
    "episode": Episode,
    "fact": Fact,
    "rule": Rule,
}


def to_tsvector(
    text: str | ColumnElement[Any], config: str | ColumnElement[Any] = DEFAULT_CONFIG
) -> ColumnElement[Any]:
    """SQL for the tsvector of text already read for its language (`keyword_document`),
    built with the text search configuration `config`: its first `MAX_DOCUMENT_LEXEMES`
    distinct lexemes (mem_040)."""
    return func.engram_first_lexemes(
        func.to_tsvector(cast(config, REGCONFIG), text), literal_column(str(MAX_DOCUMENT_LEXEMES))
    )


# Texts of more characters than this (all of a statement's rows together) are read for the
# keyword index (`keyword_document`: segmentation) on a thread, so the event loop serves other
# requests meanwhile; below it the thread's hop costs more than the reading.
OFF_LOOP_CHARS = 20_000


async def search_columns(search_text: str, language: str | None = None) -> dict[str, Any]:
    """A row's keyword columns for its text: the tsvector and the configuration it is built
    with, that of `language` when given, else of the text's detected language."""
    if len(search_text) > OFF_LOOP_CHARS:
        document = await asyncio.to_thread(keyword_document, search_text, language)
    else:
        document = keyword_document(search_text, language)
    return {
        "search_vector": to_tsvector(document.text, document.config),
        "search_config": document.config,
    }


# The keyword columns of rows written together, each with its `search_text` and its
# configuration bound (`with_documents`). The configuration is bound twice under two names:
# multi-row statements leave out a second use of one parameter of a row.
BOUND_SEARCH_COLUMNS: dict[str, Any] = {
    "search_vector": to_tsvector(bindparam("search_text"), bindparam("search_config")),
    "search_config": cast(bindparam("search_config_column"), REGCONFIG),
}


async def with_documents(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose `search_text` (with an optional `language`) is replaced by the text and the
    configuration `BOUND_SEARCH_COLUMNS` builds their tsvector from (on a thread when their
    texts are long)."""
    if sum(len(row["search_text"]) for row in rows) > OFF_LOOP_CHARS:
        return await asyncio.to_thread(_with_documents, rows)
    return _with_documents(rows)


async def segmented(texts: Sequence[str]) -> list[str]:
    """Each text segmented as the keyword index reads it (`languages.segment`), on a thread
    when they are long."""
    if sum(map(len, texts)) > OFF_LOOP_CHARS:
        return await asyncio.to_thread(lambda: [segment(text) for text in texts])
    return [segment(text) for text in texts]


def _with_documents(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    prepared = []
    for row in rows:
        values = dict(row)
        document = keyword_document(values.pop("search_text"), values.pop("language", None))
        prepared.append(
            {
                **values,
                "search_text": document.text,
                "search_config": document.config,
                "search_config_column": document.config,
            }
        )
    return prepared


async def get(
    session: AsyncSession,
    model: type[M],
    *,
    tenant_id: str,
    memory_id: uuid.UUID,
    for_update: bool = False,
) -> M | None:
    """One row of the tenant, optionally locked FOR UPDATE."""
    stmt = select(model).where(model.id == memory_id, model.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


async def bump_reference(
    session: AsyncSession, model: type[M], *, tenant_id: str, memory_id: uuid.UUID
) -> M | None:
    """Atomically count one reference and return the updated row (None when absent)."""
    stmt = (
        update(model)
        .where(model.id == memory_id, model.tenant_id == tenant_id)
        .values(reference_count=model.reference_count + 1, last_referenced_at=func.now())
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def insert_rows(
    session: AsyncSession,
    model: type[Searchable],
    rows: Sequence[dict[str, Any]],
    **sql_values: Any,
) -> list[Searchable]:
    """Insert rows (each with a `search_text` for its tsvector, and optionally the `language`
    it is read in) and return them in order.

    `sql_values` are SQL expressions applied to every row, such as `expires_at`.
    """
    # Ids made here let the rows go as multi-row statements and be matched to their
    # parameters after. SQLAlchemy, asked to keep the order of ids PostgreSQL makes, sends
    # one statement per row, each firing the tables' statement triggers.
    with_ids = [row if "id" in row else {**row, "id": uuid.uuid4()} for row in rows]
    stmt = insert(model).values(**BOUND_SEARCH_COLUMNS, **sql_values).returning(model)
    result = await session.execute(stmt, await with_documents(with_ids))
    by_id = {cast_type(Any, row).id: row for row in result.scalars()}
    return [by_id[row["id"]] for row in with_ids]


async def update_row(
    session: AsyncSession,
    model: type[M],
    *,
    tenant_id: str,
    memory_id: uuid.UUID,
    values: dict[str, Any],
) -> M:
    """Apply `values` to one row of the tenant and return it."""
    stmt = (
        update(model)
        .where(model.tenant_id == tenant_id, model.id == memory_id)
        .values(**values)
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one()


async def confirm_row(
    session: AsyncSession, model: type[M], *, tenant_id: str, memory_id: uuid.UUID
) -> M:
    """Restart the decay of one fact or rule from now; a fact counts one more validation."""
    values: dict[str, Any] = {"last_confirmed_at": func.now(), "fading_since": None}
    if model is Fact:
        values["validation_count"] = Fact.validation_count + 1
    return await update_row(session, model, tenant_id=tenant_id, memory_id=memory_id, values=values)


async def forget_row(
    session: AsyncSession, model: type[M], *, tenant_id: str, memory_id: uuid.UUID
) -> M:
    """Forget one row: an episode expires now, a fact is retracted (no longer believed from
    now), a rule is flagged forgotten."""
    values: dict[str, Any]
    if model is Episode:
        values = {"expires_at": func.now(), "forgotten_at": func.now()}
    elif model is Fact:
        values = {
            "validity": "retracted",
            "recorded_until": fact_time.record_end(Fact.created_at, await transaction_now(session)),
        }
    else:
        values = {"forgotten_at": func.now()}
    return await update_row(session, model, tenant_id=tenant_id, memory_id=memory_id, values=values)


async def rows_read_as(
    session: AsyncSession, model: type[M], *, config: str, after: uuid.UUID | None, limit: int
) -> list[M]:
    """Up to `limit` rows (of every tenant) whose tsvector was built with `config`, by id,
    after `after`."""
    stmt = (
        select(model)
        .where(model.search_config == cast(config, REGCONFIG))
        .order_by(model.id)
        .limit(limit)
    )
    if after is not None:
        stmt = stmt.where(model.id > after)
    return list((await session.execute(stmt)).scalars())


async def set_search_texts(
    session: AsyncSession, model: type[M], texts: dict[uuid.UUID, str]
) -> None:
    """Rebuild these rows' tsvectors (and configurations) from the given texts, each read
    for its detected language (their keyword postings follow, by trigger)."""
    if not texts:
        return
    table = cast_type(Table, model.__table__)
    stmt = update(table).where(table.c.id == bindparam("row_id")).values(**BOUND_SEARCH_COLUMNS)
    await session.execute(
        stmt,
        await with_documents(
            [{"row_id": row_id, "search_text": text} for row_id, text in texts.items()]
        ),
    )
