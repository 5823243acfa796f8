"""Unknown query parameters are refused (422 naming them) instead of silently ignored."""

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel

from app.core.errors import InvalidInput


def declared_query_names(route: APIRoute) -> frozenset[str]:
    """The query parameter names a route declares, its dependencies' and query models'
    included."""
    names: set[str] = set()
    pending: list[Dependant] = [route.dependant]
    while pending:
        dependant = pending.pop()
        for param in dependant.query_params:
            model = param.field_info.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                names.update(field.alias or name for name, field in model.model_fields.items())
            else:
                names.add(param.alias)
        pending.extend(dependant.dependencies)
    return frozenset(names)


async def reject_unknown_query_params(request: Request) -> None:
    """422 naming the first query parameter the route does not declare (a typo like `limt`)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    declared = declared_query_names(route)
    for name in request.query_params:
        if name not in declared:
            raise InvalidInput(f"unknown query parameter {name!r}", field=f"query.{name}")
