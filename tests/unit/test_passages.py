"""Splitting long content into overlapping passages that fit the model's window."""

import pytest

from app.core.text import context_text, split_passages


def test_content_that_fits_one_window_has_no_passages():
    assert split_passages("a short note", size=800, overlap=160) == []
    assert split_passages("x" * 800, size=800, overlap=160) == []


@pytest.mark.parametrize("overlap", [0, 40, 160])
def test_passages_cover_the_text_in_bounded_overlapping_windows(overlap):
    text = " ".join(f"word{i}" for i in range(700))
    spans = split_passages(text, size=800, overlap=overlap)

    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(0 < end - start <= 800 for start, end in spans)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert not text[end:start].strip()  # nothing but whitespace between neighbours
        if overlap:
            assert end - start >= overlap // 2
    # Windows start and end on word boundaries.
    for start, end in spans:
        assert start == 0 or text[start - 1] == " "
        assert end == len(text) or text[end] == " "


def test_a_word_longer_than_half_a_window_is_cut_rather_than_looping():
    text = "y" * 2500
    spans = split_passages(text, size=800, overlap=160)

    assert spans[-1][1] == len(text)
    assert all(end - start <= 800 for start, end in spans)


def test_context_text_puts_the_ends_of_earlier_turns_before_the_turn():
    long_turn = "A: " + "x" * 500 + " the end of it"
    text = context_text(["B: short", long_turn], "C: the turn")

    lines = text.split("\n")
    assert lines[0] == "B: short"
    assert lines[1].startswith("…") and lines[1].endswith("the end of it")
    assert len(lines[1]) <= 201
    assert lines[2] == "C: the turn"
