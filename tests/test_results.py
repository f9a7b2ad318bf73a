"""results.json follows Gradescope's format, keeps hidden cases hidden, and is written atomically."""

import json

import jsonschema
import pytest

from autograder import results, scoring
from autograder.suite import Outcome, ReviewItem

REPORT = results.Report(assignment="ch03-a", title="Unit A", found=["notebook: a.ipynb"], missing=["ch03-a-submission-v1.json"])


def outcomes(ch03a, passing=True):
    rows = []
    for part_name, part in ch03a.parts.items():
        for group in part.groups:
            rows.append(Outcome(f"{part_name}-{group}", part_name, group, "zero budget", passed=passing, reason="" if passing else "returned a different status than the rule gives", details=[{"inputs": "{'budget': 0}", "expected": "'COST_LIMIT'"}]))
    return rows


def document(ch03a, passing=True, reviews=()):
    return results.build(scoring.score(ch03a, outcomes(ch03a, passing)), list(reviews), REPORT, 1.5)


def test_a_full_document_is_valid_and_its_score_is_the_sum_of_its_tests(ch03a):
    doc = document(ch03a)
    results.validate(doc)
    assert doc["score"] == pytest.approx(100)
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))


def test_numbers_are_strings_and_execution_time_is_a_number(ch03a):
    doc = document(ch03a)
    assert all(isinstance(t["number"], str) for t in doc["tests"])
    assert isinstance(doc["execution_time"], float)


def test_hidden_case_details_appear_only_in_entries_shown_after_the_due_date(ch03a):
    doc = document(ch03a, passing=False)
    for test in doc["tests"]:
        if "{'budget': 0}" in test["output"]:
            assert test["visibility"] == "after_due_date"
    assert any(t["visibility"] == "after_due_date" for t in doc["tests"])


def test_a_visible_summary_names_the_kind_of_case_that_failed(ch03a):
    doc = document(ch03a, passing=False)
    unseen = next(t for t in doc["tests"] if t["name"] == "decide_admission › unseen cases")
    assert unseen["visibility"] == "visible" and unseen["status"] == "failed"
    assert "zero budget" in unseen["output"]
    assert "COST_LIMIT" not in unseen["output"]


def test_every_review_item_is_tagged_and_worth_no_points(ch03a):
    items = [
        ReviewItem("review", "prediction", "prediction.reason", "Because three turns fit.", "Name the rule.", "notebook"),
        ReviewItem("review", "prediction", "prediction.revision", "Name the rule.", "Name the rule.", "notebook"),
    ]
    doc = document(ch03a, reviews=items)
    queued = [t for t in doc["tests"] if results.REVIEW_TAG in t.get("tags", [])]
    assert len(queued) == 2
    assert all(t["max_score"] == 0 and t["score"] == 0 for t in queued)
    assert "Because three turns fit." in queued[0]["output"]
    assert "unchanged from the template" in queued[1]["output"]
    assert [q["field"] for q in doc["extra_data"]["review_queue"]] == ["prediction.reason", "prediction.revision"]


def test_missing_files_are_named_in_the_summary(ch03a):
    assert "ch03-a-submission-v1.json" in document(ch03a)["output"]


def test_outputs_are_capped_far_below_gradescopes_limit():
    assert len(results.cap("x" * 500_000)) <= results.OUTPUT_CAP


def test_the_failure_document_is_valid_and_hides_the_traceback():
    doc = results.failure("KeyError: 'x'", "Traceback ... secret path", "ch03-a")
    results.validate(doc)
    visible = [t for t in doc["tests"] if t["visibility"] == "visible"]
    hidden = [t for t in doc["tests"] if t["visibility"] == "hidden"]
    assert "tell your instructor" in visible[0]["name"]
    assert "secret path" in hidden[0]["output"] and all("secret path" not in t["output"] for t in visible)


def test_validate_rejects_a_score_that_is_not_the_sum_of_the_tests(ch03a):
    doc = document(ch03a)
    doc["score"] += 1
    with pytest.raises(ValueError, match="sum of test scores"):
        results.validate(doc)


def test_validate_rejects_an_unknown_status(ch03a):
    doc = document(ch03a)
    doc["tests"][0]["status"] = "partial"
    with pytest.raises(jsonschema.ValidationError):
        results.validate(doc)


def test_write_replaces_an_existing_file_atomically(tmp_path):
    target = tmp_path / "results" / "results.json"
    target.parent.mkdir()
    target.write_text('{"score": 100, "forged": true}')
    results.write({"score": 1, "tests": []}, target)
    assert json.loads(target.read_text()) == {"score": 1, "tests": []}
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]


def test_write_refuses_a_folder_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "results.json"
    target.mkdir()
    with pytest.raises(IsADirectoryError):
        results.write({"score": 0}, target)
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_a_failed_group_tells_the_student_what_to_do_next(ch03a):
    doc = document(ch03a, passing=False)
    boundary = next(t for t in doc["tests"] if t["name"] == "transfer_check › rule: equality allowed at the money boundary")
    assert "Next step: Spending exactly the budget is allowed" in boundary["output"]
    passed = next(t for t in document(ch03a)["tests"] if t["name"] == boundary["name"])
    assert "Next step" not in passed["output"]
