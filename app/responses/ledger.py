"""Ledger events, reflections and an agent's context."""

from typing import Any, TypeVar

from pydantic import BaseModel

from app.models import AgentEvent
from app.schemas.ledger import (
    AgentContextOut,
    AgentEventOut,
    EventAppendOut,
    ReflectionOut,
    SalientEventOut,
)
from app.services.ledger import AgentContext, Appended, Reflection

Shown = TypeVar("Shown", bound=BaseModel)


def agent_event_out(row: AgentEvent) -> AgentEventOut:
    """A ledger event as the API shows it (no embedding)."""
    return AgentEventOut.model_validate(row)


def _event_with(model: type[Shown], event: AgentEvent, **fields: Any) -> Shown:
    """`event` as the API shows it, with more `fields` beside its own."""
    return model.model_validate({**dict(agent_event_out(event)), **fields})


def event_append_out(appended: Appended) -> EventAppendOut:
    """An appended event and the agents now due a reflection."""
    return _event_with(
        EventAppendOut, appended.event, reflection_due_for=appended.reflection_due_for
    )


def reflection_out(reflection: Reflection) -> ReflectionOut:
    """A reflection with the events it is based on."""
    return _event_with(ReflectionOut, reflection.event, based_on=reflection.based_on)


def agent_context_out(context: AgentContext) -> AgentContextOut:
    """An agent's context block and the events in it."""
    fitted, rows = context.fitted, context.rows
    return AgentContextOut(
        context=fitted.text,
        token_budget=context.token_budget,
        characters=len(fitted.text),
        recent=[agent_event_out(rows[e.id]) for e in fitted.recent],
        salient=[
            _event_with(
                SalientEventOut,
                rows[s.event.id],
                relevance=s.relevance,
                recency=s.recency,
                importance=s.importance,
                salience=s.salience,
            )
            for s in fitted.salient
        ],
        reflections=[
            reflection_out(Reflection(rows[e.id], context.based_on.get(e.id, [])))
            for e in fitted.reflections
        ],
        pending_events=context.memory.pending,
        reflection_due=context.memory.reflection_due,
    )
