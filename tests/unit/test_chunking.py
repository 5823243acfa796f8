"""Cutting a request into bounded model calls."""

from app.embedding.chunking import estimated_tokens, plan_chunks


def test_estimate_is_capped_by_the_models_window() -> None:
    assert estimated_tokens("x" * 49_000, max_seq_length=256) == 256
    assert estimated_tokens("a dog", max_seq_length=256) == 4


def test_chunks_hold_at_most_max_texts() -> None:
    texts = ["short text"] * 70
    plan = plan_chunks(texts, max_texts=32, max_tokens=10_000, max_seq_length=256)
    assert [len(chunk) for chunk in plan] == [32, 32, 6]
    assert sorted(i for chunk in plan for i in chunk) == list(range(70))


def test_long_texts_make_smaller_chunks() -> None:
    texts = ["word " * 1000] * 20
    plan = plan_chunks(texts, max_texts=32, max_tokens=2048, max_seq_length=256)
    assert [len(chunk) for chunk in plan] == [8, 8, 4]


def test_longest_texts_come_first() -> None:
    texts = ["a", "a much longer text than the others", "medium text"]
    assert plan_chunks(texts, max_texts=2, max_tokens=10_000, max_seq_length=256) == [[1, 2], [0]]


def test_a_text_over_the_budget_still_gets_a_call_of_its_own() -> None:
    plan = plan_chunks(["y" * 5000, "z" * 5000], max_texts=32, max_tokens=100, max_seq_length=256)
    assert plan == [[0], [1]]


def test_no_texts_make_no_chunks() -> None:
    assert plan_chunks([], max_texts=32, max_tokens=2048, max_seq_length=256) == []
