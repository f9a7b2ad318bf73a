"""The Gradescope zip holds what grading needs at its root, and no solutions or project tests."""

import subprocess
import zipfile

from autograder import gradescope


def built(ch03a, tmp_path):
    target = tmp_path / "ch03-a-autograder.zip"
    gradescope.build(ch03a, target)
    return zipfile.ZipFile(target)


def test_setup_and_run_autograder_sit_at_the_root_and_are_executable(ch03a, tmp_path):
    bundle = built(ch03a, tmp_path)
    for name in ("setup.sh", "run_autograder"):
        assert (bundle.getinfo(name).external_attr >> 16) & 0o111, name


def test_the_zip_holds_the_suite_the_schemas_and_the_assignment_id(ch03a, tmp_path):
    names = set(built(ch03a, tmp_path).namelist())
    assert {"grading_tests/ch03-a/assignment.toml", "schemas/ch03-a/submission.schema.json", "autograder/pipeline.py", "ASSIGNMENT"} <= names
    assert built(ch03a, tmp_path).read("ASSIGNMENT") == b"ch03-a\n"


def test_the_zip_leaves_out_solutions_tests_and_caches(ch03a, tmp_path):
    names = built(ch03a, tmp_path).namelist()
    assert not [n for n in names if n.startswith(("source/", "tests/", ".venv/")) or "__pycache__" in n]


def test_run_autograder_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(gradescope.PROJECT_ROOT / "run_autograder")]).returncode == 0


def test_run_autograder_grades_a_submission_the_way_gradescope_calls_it(tmp_path, submissions):
    import json
    import os

    results = tmp_path / "results" / "results.json"
    env = dict(os.environ, AUTOGRADER_SOURCE=str(gradescope.PROJECT_ROOT), AUTOGRADER_SUBMISSION=str(submissions / "correct"), AUTOGRADER_RESULTS=str(results))
    completed = subprocess.run(["bash", str(gradescope.PROJECT_ROOT / "run_autograder")], env=env, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(results.read_text())["score"] == 100


def test_the_package_command_writes_the_zip(tmp_path):
    import io

    from autograder import cli

    out = io.StringIO()
    assert cli.run(["package", "ch03-a", "--out", str(tmp_path / "g.zip")], out, io.StringIO()) == 0
    assert "g.zip" in out.getvalue() and zipfile.is_zipfile(tmp_path / "g.zip")
