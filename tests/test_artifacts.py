"""Tests for autograder.artifacts: ch03-a evidence files against their schemas."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from autograder import artifacts
from autograder.artifacts import (
    MESSAGE_LIMIT,
    SchemaFileError,
    SchemaProblem,
    check,
    check_file,
    load_schema,
    parse_json,
)

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas" / "ch03-a"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"

HANDOFF = "ch03-unit-a-handoff-v1.json"
SUBMISSION = "ch03-a-submission-v1.json"
LAB_REPORT = "ch03-a-llm-lab-report-v1.json"

# Where the notebook writes each file (relative to the upload) and which schema governs it.
EVIDENCE = {
    HANDOFF: (Path(HANDOFF), "handoff.schema.json"),
    SUBMISSION: (Path("practical-work/ch03-a") / SUBMISSION, "submission.schema.json"),
    LAB_REPORT: (Path("practical-work/ch03-a") / LAB_REPORT, "llm-lab-report.schema.json"),
}

# An assistant turn that requests no tools has no tool_calls; every other key is always written.
OPTIONAL_KEYS = {"tool_calls"}


@cache
def schema_for(name: str) -> dict[str, Any]:
    return load_schema(SCHEMAS / EVIDENCE[name][1])


def evidence_path(folder: str, name: str) -> Path:
    return SUBMISSIONS / folder / EVIDENCE[name][0]


@cache
def _correct_text(name: str) -> str:
    return evidence_path("correct", name).read_text(encoding="utf-8")


def correct(name: str) -> Any:
    """A fresh copy of a correct evidence file, safe to break."""
    return json.loads(_correct_text(name))


def problems_in(instance: object, name: str) -> list[str]:
    return [str(problem) for problem in check(instance, schema_for(name), name)]


def key_paths(value: object, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*path, key)
            yield from key_paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from key_paths(child, (*path, index))


def dotted(path: tuple[str | int, ...]) -> str:
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
    return text.removeprefix(".")


# Subschemas under these keywords restate a field already described where it is declared.
RESTATING = {"if", "then", "else", "dependentSchemas"}


def declared_fields(node: object, where: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(node, list):
        for index, child in enumerate(node):
            yield from declared_fields(child, f"{where}[{index}]")
    elif isinstance(node, dict):
        for key, child in node.get("properties", {}).items():
            yield f"{where}.{key}", child
        for key, child in node.items():
            if key not in RESTATING:
                yield from declared_fields(child, f"{where}/{key}")


# --- the schemas themselves ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_every_schema_passes_the_draft_2020_12_metaschema(name: str) -> None:
    schema = json.loads((SCHEMAS / EVIDENCE[name][1]).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_every_schema_has_an_id_a_title_naming_its_file_and_a_description(name: str) -> None:
    schema = schema_for(name)
    assert schema["$id"].endswith("/" + EVIDENCE[name][1])
    assert name in schema["title"]
    assert schema["description"]


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_every_field_in_a_schema_is_described_for_instructors(name: str) -> None:
    fields = declared_fields(schema_for(name))
    undescribed = [where for where, field in fields if not (field or {}).get("description")]
    assert undescribed == []


def test_the_schema_directory_holds_exactly_the_three_schemas() -> None:
    found = sorted(path.name for path in SCHEMAS.iterdir())
    assert found == sorted(schema for _, schema in EVIDENCE.values())


# --- correct and broken example submissions -----------------------------------------------


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_a_correct_evidence_file_has_no_problems(name: str) -> None:
    assert check_file(evidence_path("correct", name), schema_for(name)) == []


def test_the_correct_handoff_answers_every_tool_request_by_id_in_order() -> None:
    messages = correct(HANDOFF)["messages"]
    requested = [call["id"] for m in messages for call in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert requested == answered == ["stock-1", "draft-v", "draft-s"]


def test_wrong_types_are_reported_with_the_file_and_the_json_path() -> None:
    reported = {
        name: [str(p) for p in check_file(evidence_path("bad-types", name), schema_for(name))]
        for name in EVIDENCE
    }
    assert reported == {
        HANDOFF: [],
        SUBMISSION: ["ch03-a-submission-v1.json: transfer[2].passed: 'yes' is not of type 'boolean'"],
        LAB_REPORT: [
            "ch03-a-llm-lab-report-v1.json: scripted.model_calls: '5' is not of type 'integer'"
        ],
    }


def test_a_truncated_file_is_reported_with_its_name_line_and_column() -> None:
    text = evidence_path("broken-json", SUBMISSION).read_text(encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as decoded:
        json.loads(text)
    instance, problem = parse_json(text, SUBMISSION)
    assert instance is None and problem is not None
    assert (problem.file, problem.path) == (SUBMISSION, "")
    assert f"line {decoded.value.lineno}, column {decoded.value.colno}" in problem.message
    assert str(problem).startswith("ch03-a-submission-v1.json: is not valid JSON")
    assert "re-run the notebook cell that saves this file" in problem.message


def test_check_file_turns_a_truncated_file_into_one_problem() -> None:
    problems = check_file(evidence_path("broken-json", SUBMISSION), schema_for(SUBMISSION))
    assert [p.message.split(" (")[0] for p in problems] == ["is not valid JSON"]


def test_parse_json_returns_the_value_and_no_problem_for_valid_text() -> None:
    assert parse_json(_correct_text(HANDOFF), HANDOFF) == (correct(HANDOFF), None)


def test_check_file_reports_an_unreadable_file_instead_of_raising(tmp_path: Path) -> None:
    (missing,) = check_file(tmp_path / SUBMISSION, schema_for(SUBMISSION))
    assert (missing.file, missing.path) == (SUBMISSION, "")
    assert missing.message.startswith("cannot be read")


# --- submission record --------------------------------------------------------------------


def test_a_missing_top_level_field_is_named() -> None:
    submission = correct(SUBMISSION)
    del submission["explanation_review"]
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: 'explanation_review' is a required property"
    ]


def test_a_missing_nested_field_is_named_under_its_parent() -> None:
    submission = correct(SUBMISSION)
    del submission["core_report"]["handoff"]
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: core_report: 'handoff' is a required property"
    ]


def test_an_extra_field_is_reported_by_name() -> None:
    submission = correct(SUBMISSION)
    submission["transfer"][1]["score"] = 10
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: transfer[1]: Additional properties are not allowed "
        "('score' was unexpected)"
    ]


@pytest.mark.parametrize("review", ["PASSED", "human_review_required", None])
def test_an_explanation_review_other_than_human_review_required_is_rejected(review: object) -> None:
    submission = correct(SUBMISSION)
    submission["explanation_review"] = review
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: explanation_review: 'HUMAN_REVIEW_REQUIRED' was expected"
    ]


def test_a_boolean_count_is_not_accepted_as_an_integer() -> None:
    submission = correct(SUBMISSION)
    submission["core_report"]["completed"] = True
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: core_report.completed: True is not of type 'integer'"
    ]


def test_an_unknown_expected_status_names_the_allowed_statuses() -> None:
    submission = correct(SUBMISSION)
    submission["transfer"][0]["expected"] = "MAYBE"
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: transfer[0].expected: "
        "'MAYBE' is not one of ['CALL', 'CALL_LIMIT', 'COST_LIMIT']"
    ]


def test_a_malformed_raises_expectation_is_reported_inside_the_object() -> None:
    submission = correct(SUBMISSION)
    submission["transfer"][0]["expected"] = {"raises": 3}
    assert problems_in(submission, SUBMISSION) == [
        "ch03-a-submission-v1.json: transfer[0].expected.raises: 3 is not of type 'string'"
    ]


def test_an_expected_value_matching_no_form_lists_what_each_form_wanted() -> None:
    submission = correct(SUBMISSION)
    submission["transfer"][0]["expected"] = [1]
    (problem,) = check(submission, schema_for(SUBMISSION), SUBMISSION)
    assert problem.path == "transfer[0].expected"
    assert "is not of type 'string'" in problem.message
    assert "is not of type 'object'" in problem.message


@pytest.mark.parametrize(
    "observed", [{"unfinished": True}, {"raises": "ValueError"}, "CALL", 7, None, ["CALL"]]
)
def test_any_json_value_is_accepted_as_an_observation(observed: object) -> None:
    submission = correct(SUBMISSION)
    submission["transfer"][0]["observed"] = observed
    assert problems_in(submission, SUBMISSION) == []


# --- message shape ------------------------------------------------------------------------


def test_a_huge_value_in_a_wrong_typed_field_gives_a_capped_message() -> None:
    report = correct(LAB_REPORT)
    report["scripted"]["model_calls"] = "9" * 100_000
    (problem,) = check(report, schema_for(LAB_REPORT), LAB_REPORT)
    assert problem.path == "scripted.model_calls"
    assert len(problem.message) <= MESSAGE_LIMIT
    assert problem.message.endswith("is not of type 'integer'")


def test_an_answer_over_400_characters_is_reported_as_too_long_in_a_short_message() -> None:
    report = correct(LAB_REPORT)
    report["session"]["answer"] = "a" * 401
    (problem,) = check(report, schema_for(LAB_REPORT), LAB_REPORT)
    assert problem.path == "session.answer"
    assert problem.message.endswith("is too long")
    assert len(problem.message) < 120


def test_problems_are_sorted_by_path_with_indexes_compared_as_numbers() -> None:
    submission = correct(SUBMISSION)
    submission["transfer"] = [copy.deepcopy(submission["transfer"][0]) for _ in range(11)]
    submission["transfer"][10]["passed"] = "no"
    submission["transfer"][2]["passed"] = "no"
    submission["unit"] = "ch03-b"
    paths = [problem.path for problem in check(submission, schema_for(SUBMISSION), SUBMISSION)]
    assert paths == ["transfer[2].passed", "transfer[10].passed", "unit"]


def test_the_same_problem_found_twice_is_reported_once() -> None:
    schema = {"allOf": [{"type": "integer"}, {"type": "integer"}]}
    assert check("x", schema, "f.json") == [
        SchemaProblem("f.json", "", "'x' is not of type 'integer'")
    ]


def test_a_problem_reads_as_file_path_message_and_omits_an_empty_path() -> None:
    assert str(SchemaProblem("f.json", "a[0].b", "bad")) == "f.json: a[0].b: bad"
    assert str(SchemaProblem("f.json", "", "bad")) == "f.json: bad"


def test_a_key_that_is_not_an_identifier_keeps_jsonschemas_bracket_notation() -> None:
    schema = {"properties": {"my note": {"type": "integer"}}}
    assert check({"my note": "x"}, schema, "f.json") == [
        SchemaProblem("f.json", "['my note']", "'x' is not of type 'integer'")
    ]


# --- handoff transcript -------------------------------------------------------------------


def test_a_completed_handoff_without_its_answer_is_reported() -> None:
    handoff = correct(HANDOFF)
    del handoff["answer"]
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: 'answer' is a required property"
    ]


def test_a_handoff_that_stopped_at_a_limit_may_omit_the_answer() -> None:
    handoff = correct(HANDOFF)
    handoff["status"] = "MODEL_CALL_LIMIT"
    del handoff["answer"]
    assert problems_in(handoff, HANDOFF) == []


def test_an_answer_on_a_handoff_that_stopped_at_a_limit_is_reported_at_the_status() -> None:
    handoff = correct(HANDOFF)
    handoff["status"] = "MODEL_FAILED"
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: status: 'MODEL_FAILED' is not one of "
        "['COMPLETED', 'EMPTY_REPLY']"
    ]


def test_a_status_the_loop_cannot_return_is_rejected() -> None:
    handoff = correct(HANDOFF)
    handoff["status"] = "TOOL_LIMIT"
    del handoff["answer"]
    (problem,) = check(handoff, schema_for(HANDOFF), HANDOFF)
    assert problem.path == "status"
    assert problem.message.startswith("'TOOL_LIMIT' is not one of")


def test_a_tool_message_without_its_call_id_is_reported() -> None:
    handoff = correct(HANDOFF)
    del handoff["messages"][5]["tool_call_id"]
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: messages[5]: 'tool_call_id' is a required property"
    ]


def test_tool_call_arguments_must_be_json_text_not_an_object() -> None:
    handoff = correct(HANDOFF)
    handoff["messages"][2]["tool_calls"][0]["function"]["arguments"] = {}
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: messages[2].tool_calls[0].function.arguments: "
        "{} is not of type 'string'"
    ]


def test_a_tool_call_of_another_kind_is_rejected() -> None:
    handoff = correct(HANDOFF)
    handoff["messages"][4]["tool_calls"][1]["type"] = "web_search"
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: messages[4].tool_calls[1].type: 'function' was expected"
    ]


def test_a_system_message_with_tool_fields_is_reported() -> None:
    handoff = correct(HANDOFF)
    handoff["messages"][0]["tool_call_id"] = "stock-1"
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: messages[0]: Additional properties are not allowed "
        "('tool_call_id' was unexpected)"
    ]


def test_an_unknown_role_is_reported() -> None:
    handoff = correct(HANDOFF)
    handoff["messages"][3]["role"] = "observer"
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: messages[3].role: 'observer' is not one of "
        "['system', 'user', 'assistant', 'tool']"
    ]


def test_a_negative_count_is_rejected() -> None:
    handoff = correct(HANDOFF)
    handoff["estimated_cents"] = -2
    assert problems_in(handoff, HANDOFF) == [
        "ch03-unit-a-handoff-v1.json: estimated_cents: -2 is less than the minimum of 0"
    ]


# --- LLM lab report -----------------------------------------------------------------------


def test_a_live_session_must_name_its_model() -> None:
    report = correct(LAB_REPORT)
    report["session"]["source"] = "live"
    assert problems_in(report, LAB_REPORT) == [
        "ch03-a-llm-lab-report-v1.json: session.model: None is not of type 'string'"
    ]


def test_a_scripted_session_must_not_name_a_model() -> None:
    report = correct(LAB_REPORT)
    report["session"]["model"] = "gpt-5.1"
    assert problems_in(report, LAB_REPORT) == [
        "ch03-a-llm-lab-report-v1.json: session.model: 'gpt-5.1' is not of type 'null'"
    ]


def test_a_refusal_for_another_reason_is_rejected() -> None:
    report = correct(LAB_REPORT)
    report["scripted"]["refused"][0]["reason"] = "tool_failed"
    assert problems_in(report, LAB_REPORT) == [
        "ch03-a-llm-lab-report-v1.json: scripted.refused[0].reason: "
        "'DRAFT_COST_LIMIT' was expected"
    ]


def test_a_drafted_entry_must_be_the_draft_arguments_not_a_sku() -> None:
    report = correct(LAB_REPORT)
    report["session"]["drafted"] = ["SKU-VANILLA"]
    assert problems_in(report, LAB_REPORT) == [
        "ch03-a-llm-lab-report-v1.json: session.drafted[0]: 'SKU-VANILLA' is not of type 'object'"
    ]


# --- broken schemas (instructor-facing) ---------------------------------------------------


def test_a_schema_with_an_unknown_type_raises_an_error_naming_the_schema_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "handoff.schema.json"
    path.write_text(json.dumps({"type": "strng"}), encoding="utf-8")
    with pytest.raises(SchemaFileError) as raised:
        load_schema(path)
    assert raised.value.path == path
    assert str(raised.value).startswith(f"schema {path}: is not a valid schema at $.type")


def test_a_schema_file_that_is_not_json_raises_with_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "submission.schema.json"
    path.write_text('{\n  "type": "object",\n', encoding="utf-8")
    with pytest.raises(SchemaFileError, match=r"submission\.schema\.json: is not valid JSON at line 3"):
        load_schema(path)


def test_a_schema_for_another_draft_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.schema.json"
    path.write_text(json.dumps({"$schema": "http://json-schema.org/draft-07/schema#"}))
    with pytest.raises(SchemaFileError, match="draft-07"):
        load_schema(path)


def test_a_missing_schema_file_raises_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SchemaFileError, match="absent.schema.json: cannot be read"):
        load_schema(tmp_path / "absent.schema.json")


# --- property -----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_dropping_any_required_key_from_a_correct_file_is_always_reported(
    data: st.DataObject,
) -> None:
    name = data.draw(st.sampled_from(sorted(EVIDENCE)), label="file")
    instance = correct(name)
    droppable = [path for path in key_paths(instance) if path[-1] not in OPTIONAL_KEYS]
    path = data.draw(st.sampled_from(droppable), label="key")
    parent = instance
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    reported = [(p.path, p.message) for p in check(instance, schema_for(name), name)]
    assert (dotted(path[:-1]), f"'{path[-1]}' is a required property") in reported


def test_json_nested_deeper_than_any_evidence_is_refused_before_decoding() -> None:
    data, problem = artifacts.parse_json("[" * 200_000 + "]" * 200_000, "ch03-a-submission-v1.json")
    assert data is None and problem is not None
    assert "200000 levels deep" in str(problem)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '{"a": "[[[[{{{{", "b": ["x\\"]"]}'
    assert json.loads(text) == {"a": "[[[[{{{{", "b": ['x"]']}
    assert artifacts.nesting_depth(text) == 2
