"""The benchmarks' agent-style keyword queries and their evidence counting for facts and notes."""

import pytest

from bench.quality import locomo_recall, locomo_shapes


@pytest.mark.parametrize(
    ("question", "query"),
    [
        ("When did Caroline go to the LGBTQ support group?", "caroline go lgbtq support group"),
        ("What is Caroline's identity?", "caroline identity"),
        (
            "How many times has Melanie gone to the beach in 2023?",
            "many times melanie gone beach 2023",
        ),
        (
            "What did the user buy at the farmers' market, and where did they park the car "
            "near the old train station?",
            "user buy farmers market park car",
        ),
        ("Is it a self-driving car?", "self-driving car"),
        ("What was it?", "what was it?"),
    ],
)
def test_keyword_query_keeps_the_first_six_content_words(question: str, query: str) -> None:
    assert locomo_recall.keyword_query(question) == query


def test_keyword_query_drops_repeated_words() -> None:
    assert locomo_recall.keyword_query("Did Jon paint? Did Jon paint again?") == "jon paint"


def test_query_text_leaves_questions_as_written_by_default() -> None:
    question = "When did Melanie paint a sunrise?"
    assert locomo_recall.query_text(question, "question") == question
    assert locomo_recall.query_text(question, "keywords") == "melanie paint sunrise"


def test_an_observation_counts_the_dia_ids_it_cites() -> None:
    hits = [{"D1:3"}, {"D2:4", "D2:6"}, set()]
    assert locomo_shapes.cited_recall(["D2:6", "D1:3"], hits, 1) == 0.5
    assert locomo_shapes.cited_recall(["D2:6", "D1:3"], hits, 2) == 1.0
    assert locomo_shapes.cited_recall(["D3:1"], hits, 10) == 0.0


def test_a_summary_covers_every_turn_of_its_session() -> None:
    hits = [locomo_shapes.hit_citations({"session": 2}), locomo_shapes.hit_citations({})]
    assert hits[0] == {"S2"}
    assert locomo_shapes.cited_recall(["D2:1", "D2:17", "D12:1"], hits, 10) == pytest.approx(2 / 3)
    assert locomo_shapes.cited_recall(["D2:1"], hits, 0) == 0.0


def test_observations_become_one_fact_key_per_sentence() -> None:
    conv = {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_2_date_time": "1:14 pm on 25 May, 2023",
    }
    observations = {
        "session_2_observation": {"Jon": [["Jon opened a studio.", "D2:3; D2:5"]]},
        "session_1_observation": {
            "Gina": [["Gina lost her job.", "D1:2"]],
            "Jon": [["Jon likes dance.", ["D1:4", "D1:6"]]],
        },
    }
    facts = locomo_shapes.observation_facts(conv, observations, "scope-a")
    assert [(f["subject"], f["predicate"], f["metadata"]["dia_ids"]) for f in facts] == [
        ("Gina", "observation 1.1", ["D1:2"]),
        ("Jon", "observation 1.2", ["D1:4", "D1:6"]),
        ("Jon", "observation 2.1", ["D2:3", "D2:5"]),
    ]
    assert facts[0]["valid_from"] == "2023-05-08T13:56:00+00:00"
    assert {f["scope"] for f in facts} == {"scope-a"}


def test_summaries_become_notes_without_session_ids() -> None:
    conv = {"session_1_date_time": "1:56 pm on 8 May, 2023"}
    notes = locomo_shapes.summary_notes(conv, {"session_1_summary": "They met."}, "scope-a")
    assert notes == [
        {
            "content": "They met.",
            "butler": "scope-a",
            "metadata": {"session": 1},
            "occurred_at": "2023-05-08T13:56:00+00:00",
        }
    ]
