"""Explanation fields go to a person: each becomes a HUMAN_REVIEW_REQUIRED entry with the student's text."""

import pytest

from reference import EXPLANATION_FIELDS, PREDICTION_FIELDS

PART = "review"
FIELDS = [("prediction_notes", "prediction", "prediction", f) for f in PREDICTION_FIELDS] + [
    ("explanation_notes", "explanation", "explanation", f) for f in EXPLANATION_FIELDS
]


def answer_text(student, evidence, variable, json_key, name):
    """The notebook's own value wins; the saved submission file is the fallback."""
    observed = student.value(variable)
    if observed.ok and type(observed.returned) is dict and type(observed.returned.get(name)) is str:
        return observed.returned[name], f"{variable} in your notebook"
    saved = evidence["submission"].data
    if type(saved) is dict and type(saved.get(json_key)) is dict and type(saved[json_key].get(name)) is str:
        return saved[json_key][name], f"{json_key}.{name} in ch03-a-submission-v1.json"
    return "", "nowhere: neither the notebook nor the submission file has it"


@pytest.mark.parametrize(
    "variable, json_key, group, name",
    [pytest.param(*row, id=f"{row[1]}.{row[3]}", marks=pytest.mark.part(PART, group=row[2], kind=f"{row[1]}.{row[3]}")) for row in FIELDS],
)
def test_the_answer_is_queued_for_a_person(student, evidence, templates, review, check, variable, json_key, group, name):
    text, source = answer_text(student, evidence, variable, json_key, name)
    template = (templates.get(variable) or {}).get(name)
    item = review(f"{json_key}.{name}", text, template, source)
    check.that(not item.missing, "left empty")
    check.that(not item.unchanged, "unchanged from the template")
