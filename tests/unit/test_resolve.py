"""Pure maths of entity resolution, LIKE escaping, alias merging and graph helpers."""

import uuid

import pytest

from app.formulas.resolve import (
    Candidate,
    apply_boosts,
    graph_boost,
    hint_terms,
    jaccard,
    rank,
    tokenize,
)
from app.repositories.entities import escape_like
from app.services.graph import edge_hop, shorten
from app.services.merge import merge_aliases


def candidate(name, match="prefix", entity_id=None):
    return Candidate(entity_id or uuid.uuid4(), name, "person", [], match)


@pytest.mark.parametrize(
    ("match", "score"), [("exact", 100.0), ("alias", 80.0), ("prefix", 50.0), ("fuzzy", 20.0)]
)
def test_base_score_of_each_tier(match, score):
    assert candidate("x", match).score == score


def test_tokenize_splits_on_non_letters_and_lowercases():
    assert tokenize("Works_at ACME-Corp, 2024!") == {"works", "at", "acme", "corp", "2024"}


def test_tokenize_keeps_non_ascii_letters():
    assert tokenize("Zoë lives in Zürich") == {"zoë", "lives", "in", "zürich"}


def test_hint_terms_join_topic_and_mentioned_names():
    assert hint_terms("Chess club", ["Dana Scully", "Fox"]) == {
        "chess",
        "club",
        "dana",
        "scully",
        "fox",
    }
    assert hint_terms(None, []) == set()


def test_jaccard_is_intersection_over_union():
    assert jaccard({"a", "b"}, {"b", "c", "d"}) == 0.25
    assert jaccard(set(), set()) == 0.0


def test_graph_boost_scales_jaccard_to_twenty():
    assert graph_boost({"acme"}, {"works", "at", "acme"}) == pytest.approx(20 / 3)
    assert graph_boost({"a"}, {"a"}) == 20.0
    assert graph_boost(set(), {"a"}) == 0.0
    assert graph_boost({"a"}, set()) == 0.0


def test_apply_boosts_adds_graph_boost_and_domain_score():
    first, second = candidate("A"), candidate("B")
    apply_boosts(
        [first, second],
        fact_terms={first.entity_id: {"a", "b"}},
        hints={"a"},
        domain_scores={second.entity_id: -2.5},
    )
    assert (first.score, second.score) == (60.0, 47.5)


def test_rank_orders_by_score_then_name_and_rounds():
    low = candidate("Aaron", "fuzzy")
    tie_b, tie_a = candidate("Bea"), candidate("Abe")
    tie_b.score = tie_a.score = 50.00004
    top = candidate("Zed", "exact")
    top.score += 1 / 3
    ranked = rank([low, tie_b, top, tie_a], limit=3)
    assert [(c.canonical_name, c.score) for c in ranked] == [
        ("Zed", 100.3333),
        ("Abe", 50.0),
        ("Bea", 50.0),
    ]


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("50%", "50\\%"),
        ("a_b", "a\\_b"),
        ("back\\slash", "back\\\\slash"),
        ("%_\\", "\\%\\_\\\\"),
        ("plain", "plain"),
    ],
)
def test_escape_like_makes_wildcards_literal(raw, escaped):
    assert escape_like(raw) == escaped


def test_merge_aliases_adds_source_name_and_new_aliases_once():
    merged, added = merge_aliases(
        target_name="Robert",
        target_aliases=["Bob"],
        source_name="Bobby",
        source_aliases=["bob", "ROBERT", "Rob", "rob"],
    )
    assert merged == ["Bob", "Bobby", "Rob"]
    assert added == ["Bobby", "Rob"]


def test_edge_hop_is_one_more_than_the_nearer_end():
    assert edge_hop(0, 1) == 1 and edge_hop(2, 1) == 2 and edge_hop(2, 2) == 3


def test_shorten_flattens_and_cuts_with_ellipsis():
    assert shorten("a\n  b") == "a b"
    assert shorten("x" * 10, limit=5) == "xxxx…"
