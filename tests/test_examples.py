"""Every example upload in tests/submissions, graded end to end, gets the results it must get.

The expectations are worked out from each submission's code by hand (which rule it breaks, which
file is broken), never copied from a grader run.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from autograder import declaration, pipeline, results

SUBMISSIONS = Path(__file__).parent / "submissions"
FUNCTION_PARTS = ("admission", "transfer", "connection")
AUTOMATIC = ("admission", "transfer", "counterexample", "connection", "artifacts", "evidence")
GAMING_CAP = 0.40


@functools.cache
def graded(name: str) -> dict:
    return pipeline.grade(declaration.load("ch03-a"), SUBMISSIONS / name)


def part(document: dict, name: str) -> dict:
    return document["extra_data"]["parts"][name]


def fraction(document: dict, name: str) -> float:
    entry = part(document, name)
    return entry["score"] / entry["max_score"]


def failed_groups(document: dict, part_name: str) -> set[str]:
    return {
        t["tags"][1]
        for t in document["tests"]
        if t.get("tags", [None])[0] == part_name and t["max_score"] > 0 and t["status"] == "failed"
    }


def visible_text(document: dict) -> str:
    shown = [t["output"] + t["name"] for t in document["tests"] if t["visibility"] == "visible"]
    return document["output"] + "\n".join(shown)


@pytest.mark.parametrize("name", ["correct", "py-export", "another-style"])
def test_a_correct_submission_in_any_style_scores_full_marks(name):
    document = graded(name)
    results.validate(document)
    assert {p: fraction(document, p) for p in AUTOMATIC} == {p: 1.0 for p in AUTOMATIC}
    assert document["score"] == pytest.approx(100)


def test_every_explanation_of_a_correct_submission_is_queued_for_a_person():
    queue = graded("correct")["extra_data"]["review_queue"]
    assert len(queue) == 7
    assert all(item["text"] and not item["unchanged"] for item in queue)


def test_cost_before_calls_loses_exactly_the_precedence_checks():
    document = graded("partly-wrong")
    # decide_admission checks cost first: wrong whenever both limits are exhausted.
    assert failed_groups(document, "admission") == {"unseen", "property", "precedence"}
    assert failed_groups(document, "connection") == {"precedence"}


def test_greater_or_equal_at_the_money_boundary_loses_the_boundary_checks():
    document = graded("partly-wrong")
    # transfer_check refuses an exact fit: wrong wherever spent + next_cost == budget.
    assert failed_groups(document, "transfer") == {"visible", "unseen", "perturbation", "property", "boundary"}


def test_honest_evidence_of_partly_wrong_code_keeps_its_evidence_points():
    document = graded("partly-wrong")
    assert fraction(document, "evidence") == 1.0
    assert fraction(document, "artifacts") == 1.0


@pytest.mark.parametrize("name", ["gaming-constant", "gaming-lookup"])
def test_constant_answers_and_visible_lookups_earn_at_most_forty_percent(name):
    document = graded(name)
    for part_name in FUNCTION_PARTS:
        assert fraction(document, part_name) <= GAMING_CAP, part_name


def test_evidence_copied_from_a_correct_run_does_not_match_a_constant_answer():
    assert {"transfer_rows", "core_report"} <= failed_groups(graded("gaming-constant"), "evidence")


def test_evidence_copied_from_a_correct_run_does_not_match_a_lookup_on_the_added_case():
    # The lookup passes the visible contract, so its core_report is honest; its added case is not.
    assert failed_groups(graded("gaming-lookup"), "evidence") == {"transfer_rows"}


def test_objects_that_claim_to_equal_everything_earn_nothing():
    document = graded("gaming-eq")
    assert [fraction(document, p) for p in FUNCTION_PARTS] == [0.0, 0.0, 0.0]


def test_truncated_json_is_named_with_its_line_and_the_rest_is_still_graded():
    document = graded("broken-json")
    assert failed_groups(document, "artifacts") == {"submission"}
    assert fraction(document, "admission") == 1.0 and fraction(document, "connection") == 1.0
    assert "ch03-a-submission-v1.json: is not valid JSON (line" in visible_text(document)


def test_wrong_types_are_reported_with_file_and_json_path():
    document = graded("bad-types")
    text = visible_text(document)
    assert "ch03-a-submission-v1.json: transfer[2].passed: 'yes' is not of type 'boolean'" in text
    assert "ch03-a-llm-lab-report-v1.json: scripted.model_calls: '5' is not of type 'integer'" in text
    assert failed_groups(document, "artifacts") == {"submission", "lab_report"}


def test_a_corrupt_notebook_is_named_and_the_evidence_files_are_still_graded():
    document = graded("corrupt-notebook")
    results.validate(document)
    assert "ch03-a.ipynb: is not valid JSON" in document["tests"][0]["output"]
    assert fraction(document, "admission") == 0.0
    assert fraction(document, "artifacts") == 1.0
    assert "lab_report" not in failed_groups(document, "evidence")


def test_feedback_never_shows_a_path_of_the_grading_machine():
    for name in ["correct", "corrupt-notebook", "broken-json"]:
        text = json.dumps(graded(name))
        assert str(SUBMISSIONS) not in text and str(declaration.PROJECT_ROOT) not in text, name


def test_an_empty_upload_names_every_missing_file(tmp_path):
    document = pipeline.grade(declaration.load("ch03-a"), tmp_path)
    results.validate(document)
    assert document["score"] == 0
    for filename in ["ch03-unit-a-handoff-v1.json", "ch03-a-submission-v1.json", "ch03-a-llm-lab-report-v1.json", "notebook"]:
        assert filename in document["output"]


def test_grading_never_changes_the_upload():
    root = SUBMISSIONS / "correct"
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()}
    pipeline.grade(declaration.load("ch03-a"), root)
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()} == before
