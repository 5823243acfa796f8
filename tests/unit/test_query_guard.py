"""The query parameters a route declares: its own, its dependencies' and its query models'."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.routing import APIRoute

from app.schemas.listing import ListQuery, PageLimit
from app.web.query_guard import declared_query_names


class Listing(ListQuery):
    name: str | None = None
    limit: PageLimit = 50


def test_the_fields_of_a_query_model_are_declared_parameters() -> None:
    router = APIRouter()

    @router.get("/things")
    async def things(query: Annotated[Listing, Query()], extra: str | None = None) -> None:
        """A listing with a query model and a parameter of its own."""

    [route] = router.routes
    assert isinstance(route, APIRoute)
    assert declared_query_names(route) == {"name", "limit", "extra"}
