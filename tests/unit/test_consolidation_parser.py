"""The consolidation output parser: fenced and bare JSON, validation, parse_errors."""

import uuid

import pytest

from app.worker.consolidation.parser import (
    NO_JSON_ERROR,
    extract_json_block,
    parse_consolidation_output,
)

FACT = '{"subject": "user", "predicate": "likes", "content": "The user likes tea."}'
ID = "5f1c2b4e-9a7d-4c1e-8f00-0123456789ab"


def test_fenced_json_block_is_decoded():
    output = f'Here you go:\n```json\n{{"new_facts": [{FACT}]}}\n```\nDone.'
    result = parse_consolidation_output(output)
    assert [f.content for f in result.new_facts] == ["The user likes tea."]
    assert result.parse_errors == []


def test_fenced_block_wins_over_earlier_braces():
    output = f'Notes {{not json}}\n```json\n{{"new_facts": [{FACT}]}}\n```'
    assert len(parse_consolidation_output(output).new_facts) == 1


def test_bare_json_uses_outermost_balanced_braces():
    output = f'Result: {{"new_facts": [{FACT}], "new_rules": [{{"content": "Say }} hi"}}]}} end'
    result = parse_consolidation_output(output)
    assert len(result.new_facts) == 1
    assert [r.content for r in result.new_rules] == ["Say } hi"]


def test_no_json_reports_the_spec_message():
    result = parse_consolidation_output("I could not find anything durable.")
    assert result.parse_errors == [NO_JSON_ERROR]
    assert result.new_facts == result.updated_facts == result.new_rules == []
    assert result.confirmations == []


def test_empty_output_reports_no_json():
    assert parse_consolidation_output("").parse_errors == [NO_JSON_ERROR]
    assert parse_consolidation_output(None).parse_errors == [NO_JSON_ERROR]


def test_unbalanced_braces_report_no_json():
    assert parse_consolidation_output('{"new_facts": [').parse_errors == [NO_JSON_ERROR]


def test_invalid_json_is_reported_not_raised():
    result = parse_consolidation_output("```json\n{'new_facts': []}\n```")
    assert len(result.parse_errors) == 1
    assert result.parse_errors[0].startswith("Invalid JSON in consolidation output")


def test_new_fact_requires_subject_predicate_and_content():
    output = (
        '{"new_facts": [{"subject": "user", "predicate": "", "content": "x"},'
        ' {"subject": "user", "content": "x"}, ' + FACT + "]}"
    )
    result = parse_consolidation_output(output)
    assert len(result.new_facts) == 1
    assert result.parse_errors == [
        "new_facts[0]: missing or empty predicate",
        "new_facts[1]: missing or empty predicate",
    ]


def test_new_fact_defaults_permanence_tags_and_importance():
    output = (
        '{"new_facts": [{"subject": "a", "predicate": "b", "content": "c",'
        ' "permanence": "forever", "tags": "x"}]}'
    )
    [fact] = parse_consolidation_output(output).new_facts
    assert fact.permanence == "standard"
    assert fact.tags == []
    assert fact.importance == 5.0


def test_new_fact_keeps_a_valid_permanence():
    output = '{"new_facts": [{"subject": "a", "predicate": "b", "content": "c", "permanence": "volatile"}]}'  # noqa: E501
    assert parse_consolidation_output(output).new_facts[0].permanence == "volatile"


def test_importance_is_clamped_to_one_through_ten():
    output = (
        '{"new_facts": ['
        '{"subject": "a", "predicate": "b", "content": "c", "importance": 42},'
        '{"subject": "a", "predicate": "d", "content": "c", "importance": -3},'
        '{"subject": "a", "predicate": "e", "content": "c", "importance": 7.5}]}'
    )
    result = parse_consolidation_output(output)
    assert [f.importance for f in result.new_facts] == [10.0, 1.0, 7.5]


def test_updated_fact_requires_a_uuid_target_id():
    output = (
        '{"updated_facts": ['
        '{"target_id": "nope", "subject": "a", "predicate": "b", "content": "c"},'
        '{"subject": "a", "predicate": "b", "content": "c"},'
        f'{{"target_id": "{ID}", "subject": "a", "predicate": "b", "content": "c"}}]}}'
    )
    result = parse_consolidation_output(output)
    assert [f.target_id for f in result.updated_facts] == [uuid.UUID(ID)]
    assert result.parse_errors == [
        "updated_facts[0]: target_id is not a valid UUID: 'nope'",
        "updated_facts[1]: missing or empty target_id",
    ]


def test_invalid_confirmation_ids_are_skipped_and_reported():
    result = parse_consolidation_output(f'{{"confirmations": ["{ID}", "abc", 7]}}')
    assert result.confirmations == [uuid.UUID(ID)]
    assert result.parse_errors == [
        "confirmations[1]: not a valid UUID: 'abc'",
        "confirmations[2]: not a valid UUID: 7",
    ]


def test_source_episode_ids_are_parsed_and_bad_ones_reported():
    output = (
        '{"new_rules": [{"content": "Be brief.", "source_episode_ids": '
        f'["{ID}", "zzz", "{ID}"]}}]}}'
    )
    result = parse_consolidation_output(output)
    assert result.new_rules[0].source_episode_ids == [uuid.UUID(ID)]
    assert result.parse_errors == ["new_rules[0].source_episode_ids: not a valid UUID: 'zzz'"]


def test_a_section_that_is_not_a_list_is_reported():
    result = parse_consolidation_output('{"new_facts": {"subject": "a"}}')
    assert result.parse_errors == ["new_facts: expected a list, got dict"]


def test_a_top_level_array_is_not_an_object():
    assert extract_json_block("[1, 2]") is None
    assert parse_consolidation_output("```json\n[1]\n```").parse_errors == [NO_JSON_ERROR]


def test_procedures_are_parsed_with_steps_in_order():
    output = (
        '{"procedures": [{"name": "deploy", "steps": ["test", {"action": "ship", '
        '"params_template": {"env": "prod"}, "conditions": "bad"}], '
        f'"source_episode_ids": ["{ID}"]}}]}}'
    )
    result = parse_consolidation_output(output)
    [procedure] = result.procedures
    assert procedure.name == "deploy"
    assert [(s.action, s.params_template, s.conditions) for s in procedure.steps] == [
        ("test", {}, {}),
        ("ship", {"env": "prod"}, {}),
    ]
    assert procedure.source_episode_ids == [uuid.UUID(ID)]
    assert result.parse_errors == []


@pytest.mark.parametrize(
    "item",
    [
        '{"steps": ["a"]}',
        '{"name": "x", "steps": []}',
        '{"name": "x", "steps": [{"params_template": {}}]}',
        '"x"',
    ],
)
def test_a_malformed_procedure_is_a_parse_error(item):
    result = parse_consolidation_output(f'{{"procedures": [{item}]}}')
    assert result.procedures == []
    assert [error.split(":")[0] for error in result.parse_errors] == ["procedures[0]"]
