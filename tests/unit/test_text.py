"""Text preprocessing for search vectors and queries."""

from app.core.text import MAX_SEARCH_TEXT_BYTES, preprocess_search_query, preprocess_text


def test_nul_bytes_removed() -> None:
    assert preprocess_text("a\x00b\x00") == "ab"


def test_whitespace_collapsed_and_stripped() -> None:
    assert preprocess_text("  one\t\ttwo\n\nthree   ") == "one two three"


def test_truncated_to_one_megabyte_on_codepoint_boundary() -> None:
    text = "é" * MAX_SEARCH_TEXT_BYTES  # 2 bytes each
    result = preprocess_text(text)
    encoded = result.encode("utf-8")
    assert len(encoded) <= MAX_SEARCH_TEXT_BYTES
    assert len(encoded) >= MAX_SEARCH_TEXT_BYTES - 1
    assert set(result) == {"é"}


def test_empty_text_gives_empty_string() -> None:
    assert preprocess_text(None) == ""
    assert preprocess_text("") == ""


def test_search_query_is_cleaned_but_never_truncated() -> None:
    long_query = "word " * 300_000
    assert preprocess_search_query("  a\x00b \n c ") == "ab c"
    assert len(preprocess_search_query(long_query)) == len(long_query.strip())
    assert preprocess_search_query("") == ""
    assert preprocess_search_query(None) == ""


def test_a_text_is_blank_exactly_when_nothing_visible_is_left():
    import random

    from app.core.text import is_blank, visible_text

    alphabet = [
        " ",
        "\t",
        "\n",
        "\u200b",
        "\ufeff",
        "\u202e",
        "\x07",
        "\u00a0",
        "\u3000",
        "\u0e49",
        "ร",
        "a",
        "\u0301",
        "\uff21",
        "\u2028",
    ]
    chooser = random.Random(70)
    texts = [
        "",
        *alphabet,
        *("".join(chooser.choices(alphabet, k=chooser.randint(1, 8))) for _ in range(3000)),
    ]
    for text in texts:
        assert is_blank(text) == (not visible_text(text).strip()), repr(text)
