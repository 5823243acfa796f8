"""The agent memory views as pure functions over ledger events (no database)."""

import math
import uuid

import pytest

from app.core.config import DEFAULT_KIND_IMPORTANCE
from app.formulas import salience
from app.formulas.salience import LedgerEvent, SalienceWeights

WEIGHTS = SalienceWeights(kind_importance=DEFAULT_KIND_IMPORTANCE)


def event(
    position: int,
    *,
    agent: str = "alice",
    kind: str = "agent.spoke",
    content: str = "hello",
    turn: int | None = None,
    visibility: str = "private",
) -> LedgerEvent:
    return LedgerEvent(
        uuid.UUID(int=position),
        agent,
        kind,
        content,
        position if turn is None else turn,
        position,
        visibility,
    )


def test_an_agent_sees_its_own_events_and_global_ones():
    events = [
        event(1, agent="alice"),
        event(2, agent="bob"),
        event(3, agent="bob", kind="world.observed", visibility="global"),
    ]
    assert [e.position for e in salience.visible(events, "alice")] == [1, 3]
    assert [e.position for e in salience.visible(events, "bob")] == [2, 3]


def test_jaccard_of_keyword_sets():
    assert salience.jaccard("The baker", "the BAKER sings") == pytest.approx(2 / 3)
    assert salience.jaccard("", "") == 0.0


def test_salience_follows_the_formula():
    scored = salience.score(
        event(1, kind="clue.found", content="red door", turn=5),
        query="the red door",
        current_turn=10,
        weights=WEIGHTS,
    )
    expected = 0.30 * (2 / 3) + 0.40 * math.exp(-0.1 * 5) + 0.30 * 0.80
    assert scored.salience == pytest.approx(expected)


def test_unknown_kinds_take_the_default_importance():
    assert salience.importance("agent.sneezed", WEIGHTS) == 0.5


def test_top_k_is_chronological_and_prefers_important_old_events():
    events = [
        event(1, kind="verdict.final", content="guilty", turn=1),
        event(2, kind="agent.thought", content="hmm", turn=9),
        event(3, kind="agent.spoke", content="hi", turn=10),
    ]
    best = salience.top_k(events, query="", current_turn=10, k=2, weights=WEIGHTS)
    # verdict: 0.4*e^-0.9 + 0.3 = 0.4626; thought: 0.4*e^-0.1 + 0.12 = 0.4819;
    # spoke: 0.4 + 0.15 = 0.55 -> the thought and the spoken line, in ledger order.
    assert [s.event.position for s in best] == [2, 3]
    best = salience.top_k(events, query="guilty", current_turn=10, k=2, weights=WEIGHTS)
    assert [s.event.position for s in best] == [1, 3]


def test_semantic_relevance_replaces_jaccard():
    events = [event(1, content="alpha"), event(2, content="beta")]
    best = salience.top_k(
        events, query="alpha", current_turn=2, k=1, weights=WEIGHTS, relevance={events[1].id: 1.0}
    )
    assert best[0].event.position == 2 and best[0].relevance == 1.0


def test_reflection_is_due_after_threshold_visible_events_since_the_last():
    events = [event(n) for n in range(1, 4)]
    assert not salience.reflection_due(events, "alice", 4)
    events.append(event(4, agent="bob", kind="world.observed", visibility="global"))
    assert salience.reflection_due(events, "alice", 4)
    events.append(event(5, kind=salience.REFLECTION_KIND, visibility="global"))
    assert salience.pending_events(events, "alice") == []
    assert len(salience.pending_events(events, "bob")) == 1


def test_own_reflection_compacts_the_recent_window():
    events = [event(n) for n in range(1, 6)]
    reflection = event(6, kind=salience.REFLECTION_KIND, visibility="global")
    view = salience.view(
        [*events, reflection],
        agent_id="alice",
        current_turn=6,
        query="",
        window=8,
        k=0,
        weights=WEIGHTS,
        based_on={reflection.id: [e.id for e in events[:4]]},
        reflection_threshold=10,
    )
    assert [e.position for e in view.recent] == [5]
    assert [e.position for e in view.reflections] == [6]


def test_reflected_events_are_not_salient_either():
    events = [event(n) for n in range(1, 12)]
    reflection = event(12, kind=salience.REFLECTION_KIND, visibility="global")
    view = salience.view(
        [*events, reflection],
        agent_id="alice",
        current_turn=12,
        query="",
        window=2,
        k=5,
        weights=WEIGHTS,
        based_on={reflection.id: [e.id for e in events[:6]]},
        reflection_threshold=100,
    )
    assert [e.position for e in view.recent] == [10, 11]
    assert [s.event.position for s in view.salient] == [7, 8, 9]


def test_the_window_keeps_the_last_n_visible_events():
    events = [event(n) for n in range(1, 12)]
    view = salience.view(
        events,
        agent_id="alice",
        current_turn=11,
        query="",
        window=8,
        k=2,
        weights=WEIGHTS,
        based_on={},
        reflection_threshold=100,
    )
    assert [e.position for e in view.recent] == list(range(4, 12))
    assert [s.event.position for s in view.salient] == [2, 3]


def test_fit_to_budget_keeps_newest_recent_first_and_never_exceeds():
    events = [event(n, content="word " * 10) for n in range(1, 6)]
    view = salience.view(
        events,
        agent_id="alice",
        current_turn=5,
        query="",
        window=8,
        k=0,
        weights=WEIGHTS,
        based_on={},
        reflection_threshold=100,
    )
    fitted = salience.fit_to_budget(view, max_chars=260)
    assert len(fitted.text) <= 260
    assert [e.position for e in fitted.recent] == [3, 4, 5]
    assert fitted.text.startswith("## Recent events\n- [turn 3] alice agent.spoke: word")
