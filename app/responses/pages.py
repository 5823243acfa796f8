"""A listing's rows and cursor as one page of responses."""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from app.schemas.common import Page

ItemT = TypeVar("ItemT")


def page_out(
    listing: tuple[Sequence[Any], str | None], item_out: Callable[[Any], ItemT]
) -> Page[ItemT]:
    """The page of a `(rows, next_cursor)` listing, each row mapped by `item_out`."""
    rows, next_cursor = listing
    return Page(items=[item_out(row) for row in rows], next_cursor=next_cursor)
