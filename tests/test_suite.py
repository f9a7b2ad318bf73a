"""The hidden-suite plugin tags every test, collects outcomes, and keeps hidden details apart."""

from __future__ import annotations

import textwrap

import pytest

from autograder import declaration, suite
from conftest import FakeObservation

DECLARATION = """
id = "demo"
title = "Demo"
[submission]
names = ["double"]
[parts.calc]
title = "double"
points = 10
[parts.calc.groups]
basic = { title = "basic cases", share = 0.5 }
edge = { title = "edge cases", share = 0.5 }
"""


class FakeStudent:
    """Answers like a student's `double` that is wrong for negative numbers."""

    def call(self, name, value):
        return FakeObservation(returned=value * 2 if value >= 0 else value, name=name)


def make_suite(tmp_path, tests: str, text: str = DECLARATION) -> declaration.Assignment:
    folder = tmp_path / "suites" / "demo"
    folder.mkdir(parents=True)
    (folder / "assignment.toml").write_text(text)
    (tmp_path / "suites" / "pytest.ini").write_text("[pytest]\n")
    (folder / "test_demo.py").write_text(textwrap.dedent(tests))
    return declaration.load("demo", tmp_path / "suites", tmp_path / "schemas")


def run(assignment, student=None):
    return suite.run(suite.Context(assignment, student or FakeStudent(), {}))


GOOD_TESTS = """
    import pytest

    @pytest.mark.part("calc", group="basic")
    @pytest.mark.parametrize("value", [1, 5], ids=["one", "five"])
    def test_basic(student, check, value):
        check.value(student.call("double", value), value * 2, inputs=value)

    @pytest.mark.part("calc", group="edge", kind="a negative number")
    def test_negative(student, check):
        check.value(student.call("double", -3), -6, inputs=-3)
"""


def test_each_test_becomes_an_outcome_with_its_part_group_and_kind(tmp_path):
    outcomes = run(make_suite(tmp_path, GOOD_TESTS)).outcomes
    assert sorted((o.part, o.group, o.kind, o.passed) for o in outcomes) == [
        ("calc", "basic", "five", True),
        ("calc", "basic", "one", True),
        ("calc", "edge", "a negative number", False),
    ]


def test_a_failed_check_keeps_its_student_reason_apart_from_hidden_details(tmp_path):
    failed = next(o for o in run(make_suite(tmp_path, GOOD_TESTS)).outcomes if not o.passed)
    assert failed.reason == "returned a different value than the rule gives"
    assert "-3" not in failed.reason
    assert any("-3" in row.get("inputs", "") for row in failed.details)


def test_a_test_without_a_part_tag_stops_the_run_with_its_name(tmp_path):
    tests = GOOD_TESTS + """
    def test_untagged(student):
        pass
    """
    with pytest.raises(suite.SuiteError, match="test_untagged: has 0 @pytest.mark.part tags"):
        run(make_suite(tmp_path, tests))


def test_a_test_with_two_part_tags_is_refused(tmp_path):
    tests = GOOD_TESTS + """
    @pytest.mark.part("calc", group="basic")
    @pytest.mark.part("calc", group="edge")
    def test_twice(student):
        pass
    """
    with pytest.raises(suite.SuiteError, match="test_twice: has 2"):
        run(make_suite(tmp_path, tests))


def test_an_undeclared_group_is_refused_with_the_declared_ones_listed(tmp_path):
    tests = GOOD_TESTS + """
    @pytest.mark.part("calc", group="corner")
    def test_corner(student):
        pass
    """
    with pytest.raises(suite.SuiteError, match="group 'corner' is not declared in part 'calc' \\(declared: basic, edge\\)"):
        run(make_suite(tmp_path, tests))


def test_a_declared_group_without_tests_is_refused(tmp_path):
    tests = """
    import pytest

    @pytest.mark.part("calc", group="basic")
    def test_basic(student, check):
        pass
    """
    with pytest.raises(suite.SuiteError, match="calc.edge"):
        run(make_suite(tmp_path, tests))


def test_a_broken_hidden_test_fails_with_a_neutral_reason_and_a_traceback_for_instructors(tmp_path):
    tests = GOOD_TESTS.replace("check.value(student.call(\"double\", -3)", "check.value(student.nonexistent(-3)")
    outcome = next(o for o in run(make_suite(tmp_path, tests)).outcomes if o.group == "edge")
    assert not outcome.passed
    assert outcome.reason == "this check could not run; your instructor has been told"
    assert "AttributeError" in outcome.error


def test_an_import_error_in_the_suite_is_an_instructor_problem(tmp_path):
    with pytest.raises(suite.SuiteError, match="could not be collected"):
        run(make_suite(tmp_path, "import not_a_module_anywhere\n"))


def test_only_the_requested_parts_run(tmp_path):
    text = DECLARATION + '[parts.other]\ntitle = "o"\npoints = 1\n[parts.other.groups]\nx = { title = "x", share = 1.0 }\n'
    tests = GOOD_TESTS + """
    @pytest.mark.part("other", group="x")
    def test_other(student):
        raise RuntimeError("must not run")
    """
    assignment = make_suite(tmp_path, tests, text)
    outcomes = suite.run(suite.Context(assignment, FakeStudent(), {}), parts={"calc"}).outcomes
    assert {o.part for o in outcomes} == {"calc"}


def test_review_items_record_text_and_template(tmp_path):
    text = DECLARATION.replace('edge = { title = "edge cases", share = 0.5 }', 'edge = { title = "edge cases", share = 0.5 }\n[parts.notes]\ntitle = "notes"\npoints = 0\nmanual = true\n[parts.notes.groups]\nwhy = { title = "why", share = 1.0 }')
    tests = GOOD_TESTS + """
    @pytest.mark.part("notes", group="why")
    def test_note(review, check):
        item = review("why", "Write here.", "Write here.", "notebook")
        check.that(not item.unchanged, "unchanged from the template")
    """
    run_ = run(make_suite(tmp_path, tests, text))
    assert [(r.field, r.unchanged) for r in run_.reviews] == [("why", True)]
    assert next(o for o in run_.outcomes if o.part == "notes").reason == "unchanged from the template"


def test_suite_helpers_are_forgotten_after_the_run(tmp_path):
    import sys

    tests = GOOD_TESTS.replace("import pytest", "import pytest\n    import demo_helper_module")
    assignment = make_suite(tmp_path, tests)
    (assignment.suite_dir / "demo_helper_module.py").write_text("X = 1\n")
    run(assignment)
    assert "demo_helper_module" not in sys.modules
    assert str(assignment.suite_dir) not in sys.path


def test_a_module_already_imported_under_a_suite_file_name_does_not_replace_the_suite_file(tmp_path):
    import sys
    import types

    impostor = types.ModuleType("test_demo")
    impostor.__file__ = str(tmp_path / "elsewhere" / "test_demo.py")
    sys.modules["test_demo"] = impostor
    try:
        outcomes = run(make_suite(tmp_path, GOOD_TESTS)).outcomes
        assert len(outcomes) == 3
        assert sys.modules["test_demo"] is impostor
    finally:
        del sys.modules["test_demo"]
