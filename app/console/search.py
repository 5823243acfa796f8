"""/ui/search: the API's search, each hit with its score and per-signal explanation."""

import json
from typing import Any, get_args

from fastapi import APIRouter, Request, Response

from app.console.auth import ConsoleDep, DbDep
from app.console.render import ConsoleRoute, page
from app.core.config import Fusion, SearchMode
from app.core.errors import InvalidInput
from app.deps import EmbedderDep, RerankerDep, SettingsDep
from app.responses.search import search_answer_out
from app.retrieval import requests as retrieval
from app.retrieval.searcher import Searcher
from app.schemas.search import SearchRequest, SearchType, TimeMode

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
CHOICES = {
    "modes": get_args(SearchMode),
    "fusions": get_args(Fusion),
    "types": get_args(SearchType),
    "time_modes": get_args(TimeMode),
}


def _number(value: str | None, kind: type[int] | type[float], field: str) -> Any:
    if value is None or not value.strip():
        return None
    try:
        return kind(value)
    except ValueError:
        raise InvalidInput(f"{field} must be a number", field=field) from None


def search_request(params: Any) -> SearchRequest:
    """The API's search request from the search form's fields."""
    body: dict[str, Any] = {"query": params.get("q", "")}
    for name in ("mode", "fusion", "scope", "time_mode"):
        if params.get(name):
            body[name] = params.get(name)
    if types := params.getlist("types"):
        body["types"] = types
    if (limit := _number(params.get("limit"), int, "limit")) is not None:
        body["limit"] = limit
    floor = _number(params.get("min_confidence"), float, "min_confidence")
    if floor is not None:
        body["min_confidence"] = floor
    if memory_filter := params.get("filter", "").strip():
        try:
            body["filter"] = json.loads(memory_filter)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"filter: not valid JSON ({exc.msg})", field="filter") from None
    return SearchRequest.model_validate(body)


@router.get("/search")
async def search_page(
    request: Request,
    console: ConsoleDep,
    db: DbDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    reranker: RerankerDep,
) -> Response:
    """The search form and, with a query, its hits."""
    params = request.query_params
    answer = None
    if params.get("q", "").strip():
        answer = search_answer_out(
            await retrieval.search_memories(
                db,
                searcher=Searcher(console.tenant_id, embedder, settings.retrieval),
                request=search_request(params),
                reranker=reranker,
            )
        )
    return page(
        request,
        "search.html",
        answer=answer,
        params=params,
        choices=CHOICES,
        chosen_types=params.getlist("types"),
    )
