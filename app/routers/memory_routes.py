"""The per-id routes that facts, rules and episodes declare alike: read one (a reference),
confirm, forget, delete for good."""

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Path, Response
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import problem_responses
from app.deps import TenantDep, get_read_session, get_session
from app.services import deletion, memories
from app.services.events import Memory

# A service call on one memory: (session, model, tenant_id=..., memory_id=...).
MemoryCall = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class MemoryRoutes:
    """Adds the per-id routes of one memory type (`noun`: fact, rule, episode) to its router;
    each route is named `<verb>_<noun>`, its path parameter `<noun>_id`."""

    router: APIRouter
    noun: str
    model: type[Memory]
    response_model: type[BaseModel]
    out: Callable[[Any], BaseModel]

    def _route(
        self,
        verb: str,
        act: MemoryCall,
        *,
        method: str,
        tail: str,
        read: bool,
        summary: str,
        doc: str,
        answer: Callable[[Any], Any],
        **options: Any,
    ) -> None:
        model = self.model
        id_param = Path(alias=f"{self.noun}_id")
        session_dep = Depends(get_read_session if read else get_session, scope="function")

        async def endpoint(
            *,
            memory_id: uuid.UUID = id_param,
            session: AsyncSession = session_dep,
            tenant_id: TenantDep,
        ) -> Any:
            return answer(await act(session, model, tenant_id=tenant_id, memory_id=memory_id))

        endpoint.__doc__ = doc
        self.router.add_api_route(
            f"/{{{self.noun}_id}}{tail}",
            endpoint,
            methods=[method],
            name=f"{verb}_{self.noun}",
            summary=summary,
            **options,
        )

    def get(self) -> None:
        """GET /{id}: the memory, counting the read as a reference."""
        article = "an" if self.noun[0] in "aeiou" else "a"
        self._route(
            "get",
            memories.get_memory,
            method="GET",
            tail="",
            read=True,
            answer=self.out,
            response_model=self.response_model,
            responses=problem_responses(404, 422),
            summary=f"Get {article} {self.noun} (counts as a reference)",
            doc=f"Return the {self.noun} and bump its reference_count and last_referenced_at.",
        )

    def confirm(self) -> None:
        """POST /{id}/confirm: restart the memory's confidence decay."""
        self._route(
            "confirm",
            memories.confirm,
            method="POST",
            tail="/confirm",
            read=False,
            answer=self.out,
            response_model=self.response_model,
            responses=problem_responses(404, 409, 422),
            summary=f"Confirm a {self.noun}",
            doc="Set last_confirmed_at to now, restarting its confidence decay.",
        )

    def forget(self, *, summary: str, doc: str) -> None:
        """POST /{id}/forget: the memory leaves search and recall."""
        self._route(
            "forget",
            memories.forget,
            method="POST",
            tail="/forget",
            read=False,
            answer=self.out,
            response_model=self.response_model,
            responses=problem_responses(404, 422),
            summary=summary,
            doc=doc,
        )

    def delete(self, *, summary: str, doc: str) -> None:
        """DELETE /{id}: the memory goes for good (204)."""
        self._route(
            "delete",
            deletion.delete_memory,
            method="DELETE",
            tail="",
            read=False,
            answer=lambda _counts: Response(status_code=204),
            responses=problem_responses(404, 422),
            summary=summary,
            doc=doc,
            status_code=204,
            response_class=Response,
            response_model=None,
        )
