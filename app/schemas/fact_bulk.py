"""Bulk fact requests and responses: many facts read, stored or deleted in one request."""

import uuid
from typing import Literal

from pydantic import Field, model_validator

from app.schemas.common import Name, RequestModel, ResponseModel, UUIDIn
from app.schemas.facts import FactCreate, FactOut

MAX_BULK_ITEMS = 1000
# A store takes some milliseconds a fact (its versions, links and events): 100 keep one
# request within seconds.
MAX_BULK_STORE_ITEMS = 100


class FactRef(RequestModel):
    """One fact: by `id`, or by key (`subject` and `predicate`, with `scope`, default
    `global`): the key's active fact, compared as a stored fact's key is (case-folded, NFKC,
    whitespace collapsed). Keys anchored on an entity are reached by id."""

    id: UUIDIn | None = None
    scope: Name | None = None
    subject: Name | None = None
    predicate: Name | None = None

    @model_validator(mode="after")
    def _one_way(self) -> "FactRef":
        by_key = (self.scope, self.subject, self.predicate) != (None, None, None)
        if self.id is not None and by_key:
            raise ValueError("give either id or a key (scope, subject, predicate), not both")
        if self.id is None and (self.subject is None or self.predicate is None):
            raise ValueError("give id, or subject and predicate (and scope)")
        return self


class FactRefs(RequestModel):
    """Up to 1000 facts by id or key."""

    items: list[FactRef] = Field(min_length=1, max_length=MAX_BULK_ITEMS)


class FactBulkCreate(RequestModel):
    """Up to 100 facts stored in one transaction, in order (a later item of the same key
    supersedes or confirms an earlier one)."""

    items: list[FactCreate] = Field(min_length=1, max_length=MAX_BULK_STORE_ITEMS)


class FactGetResult(ResponseModel):
    """One item of a bulk read: 200 with the fact, or 404 with no fact."""

    status: Literal[200, 404]
    fact: FactOut | None = None
    detail: str | None = None


class FactPutResult(ResponseModel):
    """One item of a bulk store: 201 a new version, 200 an identical active fact confirmed."""

    status: Literal[200, 201]
    fact: FactOut


class FactDeleteResult(ResponseModel):
    """One item of a bulk delete: 204 deleted (with every version of its history), or 404
    when the tenant had no such fact (nothing to do)."""

    status: Literal[204, 404]
    id: uuid.UUID | None = Field(None, description="The fact the item named.")
    deleted_ids: list[uuid.UUID] = Field(
        default_factory=list, description="Every version deleted with it."
    )
    detail: str | None = None


class FactGetResults(ResponseModel):
    items: list[FactGetResult]


class FactPutResults(ResponseModel):
    items: list[FactPutResult]


class FactDeleteResults(ResponseModel):
    items: list[FactDeleteResult]
