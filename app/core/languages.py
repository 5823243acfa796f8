"""How keyword search reads text of any language: the PostgreSQL text search configuration a
text is stemmed with, and scripts written without spaces cut into character pairs.

A stored text and a query go through the same steps: `keyword_document` and `keyword_query`.
"""

import functools
import re
import threading
import unicodedata
from typing import Any, NamedTuple

# A text whose language is unknown, or has no stemmer below, is read as English: stored texts
# were all English-stemmed before languages were told apart, and an English query finds them.
DEFAULT_CONFIG = "english"
# Words as written, lower-cased: what every query is also read as, so it finds texts of
# languages without a stemmer, whatever language it was taken for.
SIMPLE_CONFIG = "simple"

# ISO 639-1 code -> the PostgreSQL text search configuration (with a Snowball stemmer and stop
# words) of that language, as PostgreSQL 18 ships them. Other languages are read `simple`.
STEMMED = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "nn": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
CONFIGS = frozenset({DEFAULT_CONFIG, SIMPLE_CONFIG, *STEMMED.values()})

# Detection reads this much of a text: enough to tell its language, and bounded in cost.
DETECTED_CHARS = 300
# Below this probability the detector's guess is not taken.
MIN_CONFIDENCE = 0.5

# The keyword index keeps this many distinct words of a stored text, those that occur first
# (a character pair of text written without spaces counts as one word): the cost of storing
# and matching one text stays bounded whatever its length and script.
MAX_DOCUMENT_LEXEMES = 10_000
# A query is read up to its this many distinct words (pairs as above); the rest is not
# searched by keyword (its meaning still is).
MAX_QUERY_WORDS = 256

# Scripts written without spaces between words (first and last code point of each block):
# their runs of letters are cut into overlapping pairs of characters.
_UNSPACED_BLOCKS = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK extensions B to G
)

# Scripts each used by one language with a stemmer: a text in them whose language the
# detector cannot tell (too short) is still stemmed for it.
_SCRIPT_CONFIGS = (
    ((0x0370, 0x03FF), "greek"),
    ((0x0400, 0x04FF), "russian"),
    ((0x0530, 0x058F), "armenian"),
    ((0x0600, 0x06FF), "arabic"),
    ((0x0900, 0x097F), "hindi"),
    ((0x0B80, 0x0BFF), "tamil"),
)


class KeywordDocument(NamedTuple):
    """A text as the keyword index reads it: its configuration and its words."""

    config: str
    text: str


class KeywordQuery(NamedTuple):
    """A query as keyword search reads it: its words and every configuration it is read with."""

    text: str
    configs: tuple[str, ...]


_UNSPACED_RUN = re.compile(
    "[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in _UNSPACED_BLOCKS) + "]+"
)


def _clusters(run: str) -> list[str]:
    """A run of characters cut before each character that is no combining mark (and before
    the first), so each character keeps its marks; each piece is sliced once, so the time is
    linear in the run's length however many marks follow one character."""
    starts = [
        index
        for index, char in enumerate(run)
        if index == 0 or not unicodedata.category(char).startswith("M")
    ]
    return [run[start:end] for start, end in zip(starts, [*starts[1:], len(run)], strict=True)]


def _pairs(run: str) -> str:
    """A run of characters as its overlapping pairs, each character with its combining
    marks."""
    clusters = _clusters(run)
    if len(clusters) == 1:
        return clusters[0]
    return " ".join(clusters[i] + clusters[i + 1] for i in range(len(clusters) - 1))


def unspaced_runs(text: str) -> list[str]:
    """The runs of letters of scripts written without spaces in `text`, as written."""
    return _UNSPACED_RUN.findall(text)


def segment(text: str) -> str:
    """The text with each run of letters of a script written without spaces replaced by its
    overlapping character pairs ("東京大学" -> "東京 京大 大学"), a character's combining
    marks kept with it; other text unchanged."""
    return _UNSPACED_RUN.sub(lambda run: f" {_pairs(run.group())} ", text)


_lock = threading.Lock()


@functools.cache
def _identifier() -> Any:
    """The language identifier, its bundled model loaded once."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    with _lock:
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect(text: str, confidence: float = MIN_CONFIDENCE) -> str | None:
    """The text's language (ISO 639 code) when the detector is at least `confidence` sure,
    else None."""
    sample = text[:DETECTED_CHARS]
    if not any(c.isalpha() for c in sample):
        return None
    language, probability = _identifier().classify(sample)
    return str(language) if probability >= confidence else None


# Languages written in a script other than Latin: a query mostly in such a script is in one
# of them, whatever its detected language.
NON_LATIN = frozenset(
    {
        "am",
        "ar",
        "be",
        "bg",
        "bn",
        "el",
        "fa",
        "gu",
        "he",
        "hi",
        "hy",
        "ja",
        "ka",
        "kk",
        "km",
        "kn",
        "ko",
        "lo",
        "mk",
        "ml",
        "mn",
        "mr",
        "my",
        "ne",
        "pa",
        "ru",
        "si",
        "sr",
        "ta",
        "te",
        "th",
        "uk",
        "ur",
        "yi",
        "zh",
    }
)
# Below this confidence a query's detected language does not outweigh the model's own.
FOREIGN_CONFIDENCE = 0.7


def outside(query: str, languages: frozenset[str] | None, given: str | None = None) -> bool:
    """Whether `query` is, clearly, in none of `languages` (None: a model of any language):
    its given language, else its detected one when the detector is sure, else its script."""
    if languages is None:
        return False
    if given:
        return given.strip().lower().split("-")[0].split("_")[0] not in languages
    letters = [char for char in query[:DETECTED_CHARS] if char.isalpha()]
    if not letters:
        return False
    language = detect(query, FOREIGN_CONFIDENCE)
    if language is not None:
        return language not in languages
    foreign_script = sum(1 for char in letters if not _latin(char)) * 2 > len(letters)
    return foreign_script and not languages & NON_LATIN


def _latin(char: str) -> bool:
    return ord(char) < 0x250 or 0x1E00 <= ord(char) <= 0x1EFF


def _script_config(text: str) -> str | None:
    """The configuration of the one-language script most of the text's letters are in."""
    counts: dict[str, int] = {}
    letters = 0
    for char in text[:DETECTED_CHARS]:
        if not char.isalpha():
            continue
        letters += 1
        code = ord(char)
        for block, config in _SCRIPT_CONFIGS:
            if block[0] <= code <= block[1]:
                counts[config] = counts.get(config, 0) + 1
    best = max(counts, key=counts.__getitem__, default=None)
    return best if best is not None and counts[best] * 2 > letters else None


def config_for(language: str) -> str:
    """The configuration of a language code ("de", "pt-BR") or configuration name ("german");
    `simple` for a language without a stemmer."""
    name = language.strip().lower()
    if name in CONFIGS:
        return name
    return STEMMED.get(name.split("-")[0].split("_")[0], SIMPLE_CONFIG)


def text_config(text: str, language: str | None = None) -> str:
    """The configuration a text is read with: its given language's, else its detected
    language's, else that of the script it is written in, else English."""
    if language:
        return config_for(language)
    detected = detect(text)
    if detected is not None:
        return config_for(detected)
    return _script_config(text) or DEFAULT_CONFIG


def keyword_document(text: str, language: str | None = None) -> KeywordDocument:
    """A stored text as the keyword index reads it."""
    return KeywordDocument(text_config(text, language), segment(text))


@functools.lru_cache(maxsize=1024)
def keyword_query(query: str, language: str | None = None) -> KeywordQuery:
    """A query as keyword search reads it: segmented as texts are, and read with its own
    language's configuration, English's (texts of unknown language, and those stored before
    languages were told apart) and `simple`'s (texts of languages without a stemmer)."""
    configs = dict.fromkeys([text_config(query, language), DEFAULT_CONFIG, SIMPLE_CONFIG])
    return KeywordQuery(first_words(segment(query), MAX_QUERY_WORDS), tuple(configs))


_WORD = re.compile(r"\w+")


def first_words(text: str, limit: int) -> str:
    """The text up to the end of its `limit`-th distinct word (any case)."""
    seen: set[str] = set()
    for word in _WORD.finditer(text):
        seen.add(word.group().lower())
        if len(seen) == limit:
            return text[: word.end()]
    return text
