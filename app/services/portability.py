"""Export a tenant's records as JSON Lines, and import them back with ids and times kept.

One line per record, each an object with a `kind` (`repositories/portability.TABLES`):
entity, episode, fact (every version; `supersedes_id` and `validity` tell the history, and
each carries its valid and record time), fact_period (the valid period each version was
believed to have, over record time: what `known_at` reads), rule
(with its counters), rule_application, run, run_message, run_feedback, agent_event (a
reflection is one), reflection_consolidation, procedure (every version), arc,
working_memory, link. The other fields are the stored columns by name, except what
PostgreSQL or the model makes: embeddings and tsvectors (import makes them again from the
content with the running model, so an export stays small and does not tie the data to one
model), the append `position` of messages and ledger events (import appends them in the
export's order) and a procedure's computed success rate and mean duration.
"""

import json
import math
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, BigInteger, Boolean, Column, DateTime, Float, Integer
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.types import Uuid

from app.core.errors import Conflict, DomainError, InvalidInput
from app.core.scope import SYSTEM, Scope, lengthen_statement_timeout, scope_session, set_local
from app.core.text import keyword_text, preprocess_text
from app.embedding import Embedder
from app.repositories import fact_time as time_rows
from app.repositories import portability as portability_rows
from app.repositories.portability import MEMORY_KINDS, RECORD_KINDS, SELF_REFERENCES, TABLES
from app.schemas.common import (
    MAX_CONTENT_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    json_depth,
)
from app.services import butler_limits
from app.services.arcs import search_text as arc_text
from app.services.embeddings import Embedded, embed_texts, store_passages
from app.services.episodes import session_contexts
from app.services.procedures import procedure_text
from app.services.runs import run_text

NDJSON = "application/x-ndjson"
CHECK_VIOLATION = "23514"
FOREIGN_KEY_VIOLATION = "23503"
# A JSON value (metadata, tags, aliases, context) as its JSON text, at most.
MAX_JSON_CHARS = 2 * MAX_METADATA_BYTES
# Fields a client writes through the API, bounded there to MAX_METADATA_DEPTH levels.
DEPTH_BOUNDED_FIELDS = frozenset(
    {"metadata", "context", "meta", "active_context", "scratchpad", "decisions"}
)

# An import's statements may run this many times the request statement timeout.
IMPORT_STATEMENT_FACTOR = 10


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot export {type(value).__name__}")


def export_lines(
    sessionmaker: async_sessionmaker[AsyncSession],
    *,
    tenant_id: str,
    local_settings: Mapping[str, str] | None = None,
) -> AsyncIterator[bytes]:
    """The tenant's records, one JSON line each, read in one REPEATABLE READ snapshot (a
    session of its own, with PostgreSQL's `local_settings`: the stream outlives the
    request's transaction). Forbidden, before any line, for a key limited to butlers."""
    butler_limits.check_unlimited("the export of the whole tenant")
    return _export_lines(sessionmaker, tenant_id=tenant_id, local_settings=local_settings or {})


async def _export_lines(
    sessionmaker: async_sessionmaker[AsyncSession],
    *,
    tenant_id: str,
    local_settings: Mapping[str, str],
) -> AsyncIterator[bytes]:
    async with sessionmaker() as session:
        scope_session(session, Scope(tenant_id=tenant_id))
        if local_settings:
            await set_local(session, local_settings)
        # Begins the (read-only, rolled back on close) transaction at that isolation level.
        await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        for kind in TABLES:
            async for row in portability_rows.stream_rows(session, kind=kind, tenant_id=tenant_id):
                line = json.dumps({"kind": kind, **row}, default=_json_value, ensure_ascii=False)
                yield line.encode("utf-8") + b"\n"


def _problem(number: int, field: str, message: str) -> InvalidInput:
    return InvalidInput(f"line {number}: {field}: {message}", field=f"line {number}.{field}")


def _text_ok(value: Any, limit: int) -> bool:
    """JSON text PostgreSQL can store (UTF-8, no NUL) within `limit` characters."""
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
        encoded.encode("utf-8")
    except (UnicodeEncodeError, ValueError, RecursionError):
        return False
    return "\\u0000" not in encoded and len(encoded) <= limit


def _value(column: Column[Any], value: Any, number: int) -> Any:
    """The stored value of a JSON value, checked against the column's type and the API's
    bounds (content length, metadata size)."""
    if value is None:
        if not column.nullable:
            raise _problem(number, column.name, "must not be null")
        return None
    kind = column.type
    if isinstance(kind, DateTime):
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is not None:
                return parsed
        raise _problem(number, column.name, "must be an ISO 8601 date-time with a time zone")
    if isinstance(kind, Uuid):
        try:
            if isinstance(value, str):
                return uuid.UUID(value)
        except ValueError:
            pass
        raise _problem(number, column.name, "must be a UUID string")
    ok: bool
    if isinstance(kind, Boolean):
        ok = isinstance(value, bool)
    elif isinstance(kind, Integer):
        bound = 2**63 if isinstance(kind, BigInteger) else 2**31
        ok = isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound
    elif isinstance(kind, Float):
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and _text_ok(value, 400)
            and math.isfinite(float(value))
        )
    elif isinstance(kind, JSONB):
        ok = _text_ok(value, MAX_JSON_CHARS)
        if ok and column.name in DEPTH_BOUNDED_FIELDS and json_depth(value) > MAX_METADATA_DEPTH:
            raise _problem(
                number, column.name, f"must not nest deeper than {MAX_METADATA_DEPTH} levels"
            )
    elif isinstance(kind, ARRAY):
        ok = (
            isinstance(value, list)
            and all(isinstance(v, str) for v in value)
            and _text_ok(value, MAX_JSON_CHARS)
        )
        if ok and isinstance(kind.item_type, Uuid):
            return [_value(Column(column.name, kind.item_type), v, number) for v in value]
    else:
        # varchar(n) columns (session_id) hold at most n characters; text ones the content bound.
        longest = getattr(kind, "length", None) or MAX_CONTENT_CHARS
        ok = (
            isinstance(value, str)
            and len(value) <= longest
            and _text_ok(value, 12 * MAX_CONTENT_CHARS)
        )
    if not ok:
        raise _problem(
            number, column.name, f"is not a valid {str(kind).lower()} within the API's bounds"
        )
    return value


def _parse(number: int, raw: bytes, tenant_id: str) -> tuple[str, dict[str, Any]]:
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise _problem(number, "line", "is not a JSON object") from None
    if not isinstance(record, dict):
        raise _problem(number, "line", "is not a JSON object")
    kind = record.pop("kind", None)
    if kind not in TABLES:
        raise _problem(number, "kind", f"must be one of {', '.join(TABLES)}")
    columns = portability_rows.exported_fields(kind)
    unknown = sorted(set(record) - set(columns))
    if unknown:
        raise _problem(number, unknown[0], f"is not a field of a {kind} record")
    if record.get("tenant_id", tenant_id) != tenant_id:
        raise _problem(
            number,
            "tenant_id",
            f"is {record['tenant_id']!r}, not the caller's "
            f"tenant {tenant_id!r}; records never cross "
            "tenants",
        )
    record["tenant_id"] = tenant_id
    for name, column in columns.items():
        needed = not column.nullable and column.server_default is None
        # A link's id is newer than some exports: without one, the database makes it.
        if name not in record and (needed or (name == "id" and kind != "link")):
            raise _problem(number, name, "is required")
    return kind, {
        columns[name].name: _value(_named(columns[name], name), value, number)
        for name, value in record.items()
    }


def _named(column: Column[Any], field: str) -> Column[Any]:
    """The column, or a copy named as the export's field when that differs (for problems)."""
    if column.name == field:
        return column
    return Column(field, column.type, nullable=column.nullable)


async def import_lines(
    session: AsyncSession,
    *,
    embedder: Embedder,
    tenant_id: str,
    body: bytes,
    max_records: int,
    keyword_context: bool = False,
) -> dict[str, int]:
    """Insert the records of an export into the tenant, in the caller's one transaction,
    keeping ids and every time; counts per kind. A line of another tenant is refused, and so
    is a record pointing at another tenant's rows. An episode of a session is embedded (and
    with `keyword_context` indexed) after the imported turns before it, as if stored anew;
    runs, messages, ledger events, procedures and arcs are embedded and indexed by the text
    they are when stored. More than `max_records` records is a 422 before any is read."""
    butler_limits.check_unlimited("import")
    # One statement inserts every record of a kind: up to `max_records` rows and their
    # keyword postings.
    await lengthen_statement_timeout(session, IMPORT_STATEMENT_FACTOR)
    lines = body.splitlines()
    if sum(1 for raw in lines if raw.strip()) > max_records:
        raise InvalidInput(
            f"an import holds at most {max_records} records (lines); import "
            "a smaller export, or raise max_import_records",
            field="body",
        )
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in TABLES}
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            kind, row = _parse(number, raw, tenant_id)
            by_kind[kind].append(row)
    if not any(by_kind.values()):
        raise InvalidInput("the body holds no records: send the lines of an export", field="body")
    await _check_ids(session, by_kind)
    later: dict[str, list[tuple[uuid.UUID, uuid.UUID]]] = {kind: [] for kind in SELF_REFERENCES}
    for kind, column in SELF_REFERENCES.items():
        for row in by_kind[kind]:
            if row.get(column) is not None:
                later[kind].append((row["id"], row.pop(column)))
    memories = [(kind, row) for kind in MEMORY_KINDS for row in by_kind[kind]]
    records = [(kind, row) for kind in RECORD_KINDS for row in by_kind[kind]]
    embedded = await _embed(
        session, embedder, tenant_id, memories, records, keyword_context=keyword_context
    )
    for kind, rows in by_kind.items():
        # Neighbouring rows with the same fields go in one statement (missing fields take
        # their defaults), in line order: messages and ledger events are appended in it.
        for group in _runs_of_same_fields(rows):
            try:
                await portability_rows.insert_rows(session, kind=kind, rows=group)
            except IntegrityError as error:
                raise _refused(kind, error) from None
    if embedded is not None:
        for kind in MEMORY_KINDS:
            indexes = [i for i, (row_kind, _) in enumerate(memories) if row_kind == kind]
            await store_passages(
                session,
                kind,
                tenant_id=tenant_id,
                memory_ids=[memories[i][1]["id"] for i in indexes],
                embedded=embedded.only(indexes),
            )
    for kind, pairs in later.items():
        await portability_rows.set_self_references(
            session, kind=kind, tenant_id=tenant_id, pairs=pairs
        )
    # Facts of an export made before fact periods existed are believed as they are now.
    await time_rows.fill_missing_periods(session, tenant_id=tenant_id)
    outside = await portability_rows.references_outside(session, tenant_id=tenant_id)
    if outside:
        raise InvalidInput(
            f"records point at rows the tenant does not have: {', '.join(outside)}",
            field=outside[0],
        )
    return {kind: len(rows) for kind, rows in by_kind.items()}


async def _check_ids(session: AsyncSession, by_kind: dict[str, list[dict[str, Any]]]) -> None:
    """Refuse a body that holds a record's id twice, or an id a row of any tenant has: ids
    stay unique across tenants, as every statement that names a row by its id relies on."""
    ids = {
        kind: [row["id"] for row in rows if row.get("id") is not None]
        for kind, rows in by_kind.items()
    }
    for kind, kind_ids in ids.items():
        if len(set(kind_ids)) < len(kind_ids):
            raise Conflict(f"a {kind} record's id appears twice in the body", field=f"{kind}.id")
    async with AsyncSession(session.bind) as system:
        scope_session(system, SYSTEM)
        for kind, kind_ids in ids.items():
            if kind_ids and await portability_rows.any_id_in_use(system, kind=kind, ids=kind_ids):
                raise Conflict(f"a {kind} record has an id that already exists", field=f"{kind}.id")


_NAMED_CONSTRAINT = re.compile(r'constraint "([^"]+)"')
# A shard's copy of a constraint carries the shard's id (Citus): ck_facts_validity_102024.
_SHARD_SUFFIX = re.compile(r"_\d{6,}$")


def _refused(kind: str, error: IntegrityError) -> DomainError:
    """The problem of a constraint the records broke, naming the kind and the column."""
    sqlstate = getattr(error.orig, "sqlstate", None)
    cause = getattr(error.orig, "__cause__", None)
    constraint = str(getattr(cause, "constraint_name", None) or "")
    if not constraint:  # a Citus worker's error names it in its message only
        named = _NAMED_CONSTRAINT.search(str(error.orig))
        constraint = named.group(1) if named else ""
    constraint = _SHARD_SUFFIX.sub("", constraint)
    table = TABLES[kind].name
    column = constraint
    for prefix in (f"ck_{table}_", f"fk_{table}_", f"uq_{table}_"):
        if constraint.startswith(prefix):
            column = constraint.removeprefix(prefix)
    if sqlstate == CHECK_VIOLATION:
        return InvalidInput(
            f"a {kind} record has a {column} the service does not know", field=f"{kind}.{column}"
        )
    if sqlstate == FOREIGN_KEY_VIOLATION:
        column = column.rsplit("_", 1)[0] if "_id_" in column else column
        return InvalidInput(
            f"a {kind} record points at a row that does not exist ({column})",
            field=f"{kind}.{column}",
        )
    if constraint == f"pk_{table}":
        return Conflict(f"a {kind} record has an id that already exists", field=f"{kind}.id")
    return Conflict(
        f"{kind} records conflict with stored data ({constraint or 'a key'})", field=kind
    )


def _runs_of_same_fields(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rows cut wherever the set of fields changes, order kept."""
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        if groups and groups[-1][0].keys() == row.keys():
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def record_text(kind: str, row: dict[str, Any]) -> tuple[str, str]:
    """(the text embedded, the text keyword-indexed) of a run, message, ledger event,
    procedure or arc, as when it is stored."""
    if kind == "run":
        text = run_text(row["task_id"], row.get("summary"))
        return text, text
    if kind == "procedure":
        steps = row.get("steps")
        actions = (
            [str(step.get("action", "")) for step in steps or [] if isinstance(step, dict)]
            if isinstance(steps, list)
            else []
        )
        text = procedure_text(row["name"], row.get("description") or "", actions)
        return text, text
    if kind == "arc":
        lessons = row.get("lessons")
        text = arc_text(
            row["title"],
            row.get("summary") or "",
            row.get("outcome"),
            [str(lesson) for lesson in lessons] if isinstance(lessons, list) else [],
        )
        return text, text
    return row["content"], preprocess_text(row["content"])


async def _embed(
    session: AsyncSession,
    embedder: Embedder,
    tenant_id: str,
    memories: list[tuple[str, dict[str, Any]]],
    records: list[tuple[str, dict[str, Any]]],
    *,
    keyword_context: bool,
) -> Embedded | None:
    """Embed every memory (the windows of long ones, the contexts of session turns) and
    every searchable record in one batch, before any SQL (no connection held meanwhile);
    the memories' part, for their passages."""
    if not memories and not records:
        return None
    contexts = _session_contexts(memories, turns=embedder.context_turns)
    texts = [record_text(kind, row) for kind, row in records]
    embedded = await embed_texts(
        session,
        embedder,
        [row["content"] for _, row in memories] + [t for t, _ in texts],
        tenant_id=tenant_id,
        contexts=contexts,
    )
    columns = (embedded.columns(index) for index in range(len(memories) + len(records)))
    for (kind, row), context in zip(memories, contexts, strict=True):
        row.update(next(columns))
        row["search_text"] = preprocess_text(
            keyword_text(
                row["content"],
                context,
                with_context=keyword_context
                and kind == "episode"
                and _session_key(row) is not None
                and embedder.context_turns > 0,
            )
        )
    for (_, row), (_, search_text) in zip(records, texts, strict=True):
        row.update(next(columns))
        row["search_text"] = search_text
    return embedded.only(list(range(len(memories))))


def _session_key(row: dict[str, Any]) -> tuple[str, ...] | None:
    """An imported episode's session: (butler, session_id), else (butler, "inferred", its
    inferred session), never equal to a sent one."""
    if row.get("session_id") is not None:
        return (str(row.get("butler")), str(row["session_id"]))
    if row.get("inferred_session") is not None:
        return (str(row.get("butler")), "inferred", str(row["inferred_session"]))
    return None


def _session_contexts(
    memories: list[tuple[str, dict[str, Any]]], *, turns: int
) -> list[str | None]:
    """Each imported episode of a session (sent or inferred) read after the `turns` imported
    turns before it in its butler and session (by `sequence`, then line order); None for the
    others."""
    contexts: list[str | None] = [None] * len(memories)
    if turns <= 0:
        return contexts
    order = sorted(
        (
            index
            for index, (kind, row) in enumerate(memories)
            if kind == "episode" and _session_key(row) is not None
        ),
        key=lambda i: (
            memories[i][1].get("sequence") is None,
            memories[i][1].get("sequence") or 0,
            i,
        ),
    )
    found = session_contexts(
        [(_session_key(memories[i][1]), memories[i][1]["content"]) for i in order], turns=turns
    )
    for index, context in zip(order, found, strict=True):
        contexts[index] = context
    return contexts
