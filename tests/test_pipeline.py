"""The pipeline always yields a valid results document, also when the grader itself breaks."""

from autograder import pipeline, results


class ExplodingSandbox:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("sandbox could not start")


def test_a_broken_grader_still_yields_a_valid_failure_document(ch03a, submissions):
    document = pipeline.grade(ch03a, submissions / "correct", sandbox_factory=ExplodingSandbox)
    results.validate(document)
    assert document["extra_data"]["autograder_failed"] is True
    visible = [t for t in document["tests"] if t["visibility"] == "visible"]
    assert "tell your instructor" in visible[0]["name"]
    hidden = [t for t in document["tests"] if t["visibility"] == "hidden"]
    assert "sandbox could not start" in hidden[0]["output"]


def test_load_errors_show_the_cell_and_only_safe_parts_of_the_message():
    from autograder.sandbox import ErrorInfo, LoadReport, StatementError

    report = LoadReport(
        defined=(),
        errors=(
            StatementError(4, 2, ErrorInfo("NameError", "name 'COURSE_ROOT' is not defined", True)),
            StatementError(6, 1, ErrorInfo("ValueError", "secret hidden input 42", True)),
            StatementError(7, 1, ErrorInfo("Leak", "secret", False)),
        ),
        outcome="loaded",
    )
    lines = pipeline.describe_load(report, None, None)
    assert lines[0] == "cell 5, line 2: NameError: name 'COURSE_ROOT' is not defined while defining your code"
    assert lines[1] == "cell 7, line 1: ValueError while defining your code"
    assert "secret" not in " ".join(lines) and "Leak" not in " ".join(lines)


def test_template_values_come_from_the_release_notebook(ch03a):
    templates = pipeline.read_templates(ch03a)
    assert set(templates["prediction_notes"]) == {"prediction", "reason", "falsifier", "revision"}
    assert set(templates["explanation_notes"]) == {"causal_trace", "failed_hypothesis", "remaining_limit"}


def test_an_oversized_evidence_file_is_refused_without_reading_it_whole(ch03a, tmp_path, monkeypatch):
    from autograder import discovery

    monkeypatch.setattr(discovery, "MAX_FILE_BYTES", 1000)
    (tmp_path / "ch03-a-submission-v1.json").write_text("[" + "1," * 5000 + "1]")
    evidence = pipeline.read_evidence(discovery.discover(tmp_path, ch03a), ch03a)
    assert evidence["submission"].data is None
    assert "larger than" in evidence["submission"].problem
