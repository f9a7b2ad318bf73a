"""Each evidence file is present, is JSON, and matches its JSON Schema (errors name file and path)."""

import pytest

from autograder import artifacts

PART = "artifacts"
FILES = ["handoff", "submission", "lab_report"]


@pytest.mark.parametrize("key", [pytest.param(k, id=k, marks=pytest.mark.part(PART, group=k, kind="matches its schema")) for k in FILES])
def test_the_evidence_file_matches_its_schema(assignment, evidence, check, key):
    item = evidence[key]
    check.that(item.present, f"{item.filename} is not in your upload; run the notebook cell that saves it and upload the file")
    check.that(item.problem == "", item.problem)
    problems = artifacts.check(item.data, artifacts.load_schema(assignment.schema_path(key)), item.filename)
    shown = "\n".join(str(p) for p in problems[:10])
    more = f"\n… and {len(problems) - 10} more" if len(problems) > 10 else ""
    check.that(not problems, f"{len(problems)} problem(s):\n{shown}{more}")
