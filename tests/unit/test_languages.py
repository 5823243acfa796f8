"""How keyword search reads a text: its configuration and its character pairs."""

from app.core.languages import config_for, keyword_document, keyword_query, segment


def test_unspaced_runs_become_overlapping_pairs_and_other_text_stays():
    assert segment("東京大学 and Kyoto") == " 東京 京大 大学  and Kyoto"
    assert segment("北") == " 北 "
    assert segment("plain words") == "plain words"


def test_a_thai_mark_stays_with_its_letter():
    # ร้าน: ร with its tone mark, then า, then น.
    assert segment("ร้าน").split() == ["ร้า", "าน"]


def test_languages_map_to_their_stemmer_else_simple():
    assert config_for("de") == "german"
    assert config_for("pt-BR") == "portuguese"
    assert config_for("german") == "german"
    assert config_for("vi") == "simple"


def test_a_short_text_takes_its_script_s_language():
    assert keyword_document("Где собака?").config == "russian"
    assert keyword_document("ok").config == "english"


def test_a_query_is_read_in_its_language_english_and_word_for_word():
    assert keyword_query("Wo haben die Kinder gestern gespielt?").configs == (
        "german",
        "english",
        "simple",
    )
    assert keyword_query("Gärten", "de").configs == ("german", "english", "simple")


def test_the_packaged_model_knows_english_and_another_any_language_unless_told():
    from app.core.config import Settings

    assert Settings().model_languages == frozenset({"en"})
    assert Settings(embedding_model="/models/multilingual-e5-small").model_languages is None
    assert Settings(embedding_languages="en, de").model_languages == frozenset({"en", "de"})
    assert Settings(embedding_languages="any").model_languages is None


def test_a_query_is_outside_the_model_s_languages_only_when_clearly_so():
    from app.core.languages import outside

    english = frozenset({"en"})
    assert outside("Welches Kind besuchte gestern einen Garten?", english)
    assert outside("Где Анна жила в прошлом году?", english)
    assert outside("她去年住在哪里？", english)
    assert not outside("Where did Ann live last year?", english)
    assert not outside("Welches Kind besuchte gestern einen Garten?", None)
    assert not outside("Where did Ann live?", english, given="en-GB")
    assert outside("Where did Ann live?", english, given="de")


def _segment_as_before(text: str) -> str:
    """Segmentation as it was first written (each mark added to its growing cluster), the
    reference the linear one must agree with."""
    import unicodedata

    from app.core.languages import _UNSPACED_RUN

    def pairs(run: str) -> str:
        clusters: list[str] = []
        for char in run:
            if clusters and unicodedata.category(char).startswith("M"):
                clusters[-1] += char
            else:
                clusters.append(char)
        if len(clusters) == 1:
            return clusters[0]
        return " ".join(clusters[i] + clusters[i + 1] for i in range(len(clusters) - 1))

    return _UNSPACED_RUN.sub(lambda run: f" {pairs(run.group())} ", text)


# Letters of unspaced scripts, their combining marks (Thai's, Japanese's sound marks), a mark
# outside those scripts, and spaced text around them.
MIXED_ALPHABET = [
    "ร",
    "า",
    "น",
    "\u0e49",
    "\u0e31",
    "\u0e4c",
    "か",
    "\u3099",
    "\u309a",
    "東",
    "京",
    "\u0301",
    "e",
    " ",
    "\u17b6",
    "ក",
    "·",
]


def test_segmentation_reads_mixed_text_as_it_always_did():
    import random

    chooser = random.Random(70)
    texts = [
        "",
        "\u0e49",
        "\u0e49ร",
        "ร\u0e49\u0e49",
        *("".join(chooser.choices(MIXED_ALPHABET, k=chooser.randint(1, 60))) for _ in range(2000)),
    ]
    for text in texts:
        assert segment(text) == _segment_as_before(text), repr(text)


def _best_seconds(text: str, tries: int = 3) -> float:
    import time

    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        segment(text)
        best = min(best, time.perf_counter() - started)
    return best


def test_segmentation_takes_linear_time_in_a_letter_s_combining_marks():
    small = _best_seconds("ร" + "\u0e49" * 50_000)
    large = _best_seconds("ร" + "\u0e49" * 200_000)
    # Four times the marks, about four times the time (rebuilding the growing cluster at
    # each mark takes sixteen).
    assert large < 6 * small + 0.02, f"{small:.4f} s for 50,000 marks, {large:.4f} s for 200,000"
