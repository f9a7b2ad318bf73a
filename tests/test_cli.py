"""The command line: exit 0 whenever a valid results.json was written, a one-line error otherwise."""

import io
import json

from autograder import cli, results


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_grading_the_correct_example_writes_valid_results_and_prints_the_table(tmp_path, submissions):
    target = tmp_path / "results.json"
    code, out, err = run("grade", "--assignment", "ch03-a", "--submission", str(submissions / "correct"), "--results", str(target))
    assert code == 0, err
    document = json.loads(target.read_text())
    results.validate(document)
    assert "decide_admission › unseen cases" in out and f"Wrote {target}" in out


def test_a_low_score_still_exits_zero(tmp_path, submissions):
    code, _, _ = run("grade", "--assignment", "ch03-a", "--submission", str(submissions / "gaming-eq"), "--results", str(tmp_path / "r.json"), "--quiet")
    assert code == 0
    assert json.loads((tmp_path / "r.json").read_text())["score"] < 50


def test_an_unknown_assignment_is_a_one_line_error_and_writes_nothing(tmp_path, submissions):
    code, out, err = run("grade", "--assignment", "ch99", "--submission", str(submissions / "correct"), "--results", str(tmp_path / "r.json"))
    assert code == 2
    assert err.count("\n") == 1 and "unknown assignment 'ch99'" in err and "ch03-a" in err
    assert not (tmp_path / "r.json").exists()


def test_a_submission_that_is_not_a_folder_is_refused(tmp_path):
    code, _, err = run("grade", "--assignment", "ch03-a", "--submission", str(tmp_path / "nope"), "--results", str(tmp_path / "r.json"))
    assert code == 2 and "not a folder" in err


def test_a_results_path_that_cannot_be_written_is_refused(tmp_path, submissions):
    (tmp_path / "taken").mkdir()
    code, _, err = run("grade", "--assignment", "ch03-a", "--submission", str(submissions / "correct"), "--results", str(tmp_path / "taken"))
    assert code == 2 and "--results" in err


def test_missing_arguments_are_reported_by_the_parser():
    code, _, err = run("grade", "--assignment", "ch03-a")
    assert code == 2 and "--submission" in err


def test_list_names_the_known_assignments():
    code, out, _ = run("list")
    assert code == 0 and out.startswith("ch03-a\tBounded Agent Loop: Unit A")


def test_show_prints_a_saved_results_file(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results.failure("boom", "trace", "ch03-a")))
    code, out, _ = run("show", str(path))
    assert code == 0 and "tell your instructor" in out
