"""Tool argument types: the request models' own bounded types, described for an agent in a
few words (the REST schema's longer descriptions are the docs')."""

import uuid
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from app.schemas.common import Content, Importance, MemoryType, Metadata, Name, Reason, Tags
from app.schemas.filters import (
    FIELDS,
    LIST_NAMES,
    OPERATORS,
    FilterError,
    MemoryFilter,
    parse_filter,
    record_fields_text,
)
from app.schemas.listing import PageCursor, PageLimit
from app.schemas.search import QueryText

MemoryTypeArg = Annotated[MemoryType, Field(description="episode, fact or rule.")]
MemoryIdArg = Annotated[uuid.UUID, Field(description="The memory's id (a UUID).")]
RuleIdArg = Annotated[uuid.UUID, Field(description="The rule's id (a UUID).")]
FactIdArg = Annotated[uuid.UUID, Field(description="The fact's id (a UUID).")]
EntityIdArg = Annotated[uuid.UUID, Field(description="The entity's id (a UUID).")]
ContentArg = Annotated[
    Content, Field(description="The text to remember (up to 50,000 characters).")
]
ButlerArg = Annotated[
    Name,
    Field(
        description="The agent (butler) this is about or for; it is also the scope of its episodes."
    ),
]
SubjectArg = Annotated[Name, Field(description="Who or what the fact is about, e.g. 'Ann'.")]
PredicateArg = Annotated[Name, Field(description="The property, e.g. 'favourite colour'.")]
ReasonArg = Annotated[Reason | None, Field(description="What went wrong (kept with the rule).")]
ImportanceArg = Annotated[Importance, Field(description="0 to 10; weighs in recall.")]
ScopeArg = Annotated[Name, Field(description="'global' for every agent, or a butler's name.")]
OptionalScopeArg = Annotated[
    Name | None,
    Field(
        description="Facts and rules of 'global' and this scope, episodes of this butler; "
        "omitted means every scope."
    ),
]
TagsArg = Annotated[Tags | None, Field(description="Free labels (up to 50).")]
ContextArg = Annotated[
    Metadata | None,
    Field(description="Where the rule was applied (a JSON object, kept with the feedback)."),
]
MetadataArg = Annotated[Metadata | None, Field(description="The caller's own JSON object.")]
TenantArg = Annotated[
    str | None,
    Field(
        max_length=200,
        description="Optional. The API key decides the tenant; when given, it "
        "must be the key's own tenant.",
    ),
]
AsOfArg = Annotated[
    str | None,
    Field(
        max_length=64,
        description="ISO 8601 time with a zone: facts as they held then. Default: now.",
    ),
]
KnownAtArg = Annotated[
    str | None,
    Field(
        max_length=64,
        description="ISO 8601 time with a zone: facts as the memory believed them "
        "then. Default: now.",
    ),
]
ValidFromArg = Annotated[
    str | None,
    Field(
        max_length=64,
        description="When the fact started to hold (ISO 8601 with a zone); default: now.",
    ),
]
ValidUntilArg = Annotated[
    str | None, Field(max_length=64, description="When it stopped holding (ISO 8601 with a zone).")
]
QueryArg = Annotated[QueryText, Field(description="What to look for, in words.")]
PageLimitArg = PageLimit
CursorArg = Annotated[PageCursor, Field(description="next_cursor of the previous page.")]


def filter_description(record_type: str | None = None) -> str:
    """A `filter` argument's description: what it keeps, an example, its fields and
    operators (docs/search.md#filters tells the rest)."""
    if record_type is None:
        what, fields = "memories", "metadata.<key>, " + ", ".join(FIELDS)
        example = '{"metadata.topic": "travel", "importance": {"$gte": 7}}'
    else:
        what, fields = LIST_NAMES[record_type], record_fields_text(record_type)
        example = '{"<field>": value, "<field>": {"$gte": value}}'
    return (
        f"Keeps only the {what} it admits, e.g. {example}. Fields: {fields}. Operators: "
        f"{' '.join(OPERATORS)}; $and $or $not combine."
    )


FilterArg = Annotated[dict[str, Any] | None, Field(description=filter_description())]
# The `filter` of the lists of entities, runs, procedures, arcs and links: only their own
# fields.
EntityFilterArg = Annotated[dict[str, Any] | None, Field(description=filter_description("entity"))]
RunFilterArg = Annotated[dict[str, Any] | None, Field(description=filter_description("run"))]
ProcedureFilterArg = Annotated[
    dict[str, Any] | None, Field(description=filter_description("procedure"))
]
ArcFilterArg = Annotated[dict[str, Any] | None, Field(description=filter_description("arc"))]
LinkFilterArg = Annotated[dict[str, Any] | None, Field(description=filter_description("link"))]


def filter_of(raw: dict[str, Any] | None, record_type: str | None = None) -> MemoryFilter | None:
    """The tree of a `filter` argument (of the list of `record_type` records when given); a
    malformed one is a tool error naming its path."""
    try:
        return None if raw is None else parse_filter(raw, record_type)
    except FilterError as error:
        raise ToolError(f"Invalid value for: filter\n- {error}") from None
