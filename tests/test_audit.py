"""The audit grades the hidden suites: full marks for the reference, points lost by every mutant, gaming capped."""

from __future__ import annotations

import ast
import io
import shutil

import pytest

from autograder import audit, cli, declaration, mutants
from autograder.extraction import Statement

REQUIRED_NAMES = {
    "always CALL",
    "always MODEL_CALL_LIMIT",
    "always MODEL_COST_LIMIT",
    "visible cases looked up, else CALL",
    ">= as >: case['used_calls'] > case['max_calls']",
    "> as >=: case['spent'] + case['next_cost'] >= case['budget']",
    "checks swapped: case['spent'] + case['next_cost'] > case['budget'] first",
    "ignores 'next_cost' (reads 0)",
    "reads 'budget' for 'next_cost'",
    "writes a key into its input 'case'",
    "returns a str subclass",
    "returns an always-equal object",
    "raises RuntimeError",
}


@pytest.fixture(scope="module")
def planned():
    return audit.plan(declaration.load("ch03-a"))


def mutants_of(programs, target):
    return [p for p in programs if p.mutant is not None and p.mutant.target == target]


# --- the plan: what the declaration asks for, generated from the reference -------------------


def test_the_plan_starts_with_the_reference_graded_on_every_code_part(planned):
    reference = planned[0]
    assert reference.mutant is None and reference.name == "reference"
    assert reference.required == ("admission", "transfer", "counterexample", "connection")


def test_every_required_kind_of_mutant_is_generated_from_the_reference(planned):
    admission = mutants_of(planned, "decide_admission")
    assert REQUIRED_NAMES <= {p.name for p in admission}
    assert {p.mutant.operator for p in admission} == set(mutants.OPERATORS)
    assert {p.mutant.operator for p in mutants_of(planned, "transfer_check")} == set(mutants.OPERATORS)
    assert {p.mutant.operator for p in mutants_of(planned, "TRANSFER_CASES")} == set(mutants.CASE_OPERATORS)


def test_every_mutant_differs_from_the_reference(planned):
    reference = planned[0].statements
    for program in planned[1:]:
        changed = [(a.source, b.source) for a, b in zip(reference, program.statements) if a.source != b.source]
        assert changed or len(program.statements) < len(reference), program.label
        for before, after in changed:
            assert ast.dump(ast.parse(before)) != ast.dump(ast.parse(after)), program.label


def test_mutants_are_graded_on_their_functions_parts_and_must_lose_points_on_the_main_one(planned):
    by_target = {p.mutant.target: (p.parts, p.required) for p in planned[1:]}
    assert by_target["decide_admission"] == (("admission", "connection"), ("admission",))
    assert by_target["transfer_check"] == (("transfer",), ("transfer",))
    assert by_target["TRANSFER_CASES"] == (("counterexample",), ("counterexample",))


def test_the_lookup_mutants_memorise_the_visible_cases_of_the_source_notebook(planned):
    lookup = next(p for p in mutants_of(planned, "transfer_check") if p.mutant.operator == "lookup")
    assert "'spent': 4, 'next_cost': 3, 'budget': 7" in lookup.mutant.source
    assert "free attempt" not in lookup.mutant.source  # the reference's own added case is not visible


def test_only_gaming_operators_are_capped(planned):
    gaming = {p.mutant.operator for p in planned[1:] if p.mutant.gaming}
    assert gaming == {"constant", "lookup", "always equal"}


def test_an_assignment_without_an_audit_section_is_refused(ch03a):
    with pytest.raises(audit.AuditError, match=r"no \[audit\] section"):
        audit.plan(ch03a.model_copy(update={"audit": None}))


def test_a_missing_reference_notebook_is_refused_with_its_path(ch03a, tmp_path):
    with pytest.raises(audit.AuditError, match=r"audit.reference: .*ch03-a.ipynb: could not be opened"):
        audit.plan(ch03a, root=tmp_path)


def test_visible_cases_of_the_wrong_shape_are_refused(ch03a):
    wrong = declaration.AuditCases(name="VISIBLE_CASES", layout="label, arguments, expected")
    with pytest.raises(audit.AuditError, match=r"VISIBLE_CASES is not a literal list of \(label, arguments, expected\)"):
        audit.visible_cases(declaration.PROJECT_ROOT / ch03a.audit.reference, wrong)


# --- judging: pure, on hand-made gradings ----------------------------------------------------


def program(operator="boundary", parts=("admission", "connection"), gaming=False):
    mutant = mutants.Mutant("decide_admission", operator, f"a {operator} mutant", gaming, (), "")
    return audit.Program(mutant.name, (), parts, parts[:1], mutant)


REFERENCE = audit.Program("reference", (), ("admission", "connection"), ("admission", "connection"))


def report(*graded):
    return audit.Report("ch03-a", ("admission", "connection"), ("evidence",), 0.40, tuple(graded), 12.0, 2)


def test_a_mutant_that_keeps_every_point_of_its_part_survives_and_fails_the_audit():
    survivor = audit.Graded(program(), {"admission": 1.0, "connection": 0.5})
    assert audit.problems(survivor, 0.40) == ["decide_admission: a boundary mutant: survived, kept every point of admission"]
    text = audit.render(report(audit.Graded(REFERENCE, {"admission": 1.0, "connection": 1.0}), survivor))
    assert text.rstrip().endswith("Audit FAILED: 1 problem.")


def test_a_mutant_caught_on_its_part_may_pass_a_part_that_only_also_calls_the_function():
    caught = audit.Graded(program(), {"admission": 0.9, "connection": 1.0})
    assert audit.problems(caught, 0.40) == []
    assert [audit.cell(caught, p, 0.40) for p in ("admission", "connection")] == ["caught 90%", "passes 100%"]


def test_a_gaming_mutant_over_the_cap_fails_the_audit_even_when_caught():
    greedy = audit.Graded(program("lookup", gaming=True), {"admission": 0.41, "connection": 0.1})
    assert audit.problems(greedy, 0.40) == ["decide_admission: a lookup mutant: kept 41.0% of admission, over the 40% gaming cap"]
    assert audit.cell(greedy, "admission", 0.40) == "OVER CAP 41%"


def test_a_gaming_mutant_at_the_cap_passes_and_a_plain_mutant_may_keep_more():
    assert audit.problems(audit.Graded(program("constant", gaming=True), {"admission": 0.40, "connection": 0.0}), 0.40) == []
    assert audit.problems(audit.Graded(program(), {"admission": 0.9, "connection": 0.9}), 0.40) == []


def test_the_reference_losing_a_point_fails_the_audit():
    reference = audit.Graded(REFERENCE, {"admission": 0.96, "connection": 1.0})
    assert audit.problems(reference, 0.40) == ["the reference lost points on admission: kept 96.0%"]
    assert audit.cell(reference, "admission", 0.40) == "LOST 96%"


def test_a_grading_that_broke_is_a_problem_shown_in_its_cells():
    broken = audit.Graded(program(), {}, "SuiteError: declared groups with no hidden test")
    assert audit.problems(broken, 0.40) == ["decide_admission: a boundary mutant: could not be graded (SuiteError: declared groups with no hidden test)"]
    assert audit.cell(broken, "admission", 0.40) == "ERROR"


def test_a_mutant_caught_only_through_timeouts_is_not_trusted():
    timed_out = audit.Graded(program(), {"admission": 0.3, "connection": 0.5}, unanswered=12)
    assert audit.problems(timed_out, 0.40) == ["decide_admission: a boundary mutant: 12 calls timed out or crashed, so its score may not be the suite's doing; rerun on a quieter machine"]
    assert audit.cell(timed_out, "admission", 0.40) == "UNSURE 30%"


def test_the_table_marks_caught_survived_and_untested_cells_under_their_parts():
    text = audit.render(report(
        audit.Graded(REFERENCE, {"admission": 1.0, "connection": 1.0}),
        audit.Graded(program(), {"admission": 0.25, "connection": 1.0}),
        audit.Graded(program("raises", parts=("admission",)), {"admission": 1.0}),
    ))
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("program"))
    caught = next(line for line in lines if "a boundary mutant" in line)
    survived = next(line for line in lines if "a raises mutant" in line)
    assert caught.index("caught 25%") == header.index("admission")
    assert caught.index("passes 100%") == header.index("connection")
    assert "SURVIVED 100%" in survived and survived.rstrip().endswith("SURVIVED 100%")
    assert "decide_admission" in lines[lines.index(caught) - 1]
    assert "2 mutants: 1 caught, 1 survived" in text and "Not audited" in text and "evidence" in text


def test_a_clean_report_says_the_audit_passed():
    text = audit.render(report(
        audit.Graded(REFERENCE, {"admission": 1.0, "connection": 1.0}),
        audit.Graded(program(), {"admission": 0.25, "connection": 0.5}),
    ))
    assert text.rstrip().endswith("Audit passed: the reference gets full marks and every mutant loses points.")


# --- the declaration's [audit] section ---------------------------------------------------------

AUDIT = """
id = "demo"
title = "Demo"
[submission]
names = ["f"]
[parts.one]
title = "one"
points = 10
[parts.one.groups]
a = { title = "a", share = 1 }
[audit]
reference = "source/demo.ipynb"
parts = ["one"]
[audit.functions.f]
part = "one"
statuses = ["A", "B"]
"""


def load(tmp_path, text):
    folder = tmp_path / "suites" / "demo"
    folder.mkdir(parents=True)
    (folder / "assignment.toml").write_text(text)
    return declaration.load("demo", tmp_path / "suites")


def test_an_audit_section_loads_with_a_default_gaming_cap(tmp_path):
    assert load(tmp_path, AUDIT).audit.gaming_cap == 0.40


@pytest.mark.parametrize("change, message", [
    (('part = "one"\nstatuses', 'part = "two"\nstatuses'), r"audit\.functions\.f: part 'two' is not declared"),
    (('statuses = ["A", "B"]', 'statuses = ["A"]\nalso = ["one", "x"]'), r"part 'x' is not declared"),
    (('[audit.functions.f]', '[audit.functions.g]'), r"'g' is not one of submission.names"),
    (('statuses = ["A", "B"]', 'statuses = ["A"]\noperators = ["constnat"]'), r"unknown operator\(s\) 'constnat'"),
    (('parts = ["one"]', 'parts = ["one"]\ngaming_cap = 1.5'), r"gaming_cap"),
])
def test_a_wrong_audit_section_is_refused_when_loaded(tmp_path, change, message):
    with pytest.raises(declaration.DeclarationError, match=message):
        load(tmp_path, AUDIT.replace(*change))


def test_a_part_audited_for_mutants_must_be_checked_on_the_reference_too(tmp_path):
    text = AUDIT.replace("[parts.one.groups]", '[parts.one.groups]\n').replace(
        "[audit]", '[parts.two]\ntitle = "two"\npoints = 1\n[parts.two.groups]\na = { title = "a", share = 1 }\n[audit]'
    ).replace('statuses = ["A", "B"]', 'statuses = ["A", "B"]\nalso = ["two"]')
    with pytest.raises(declaration.DeclarationError, match=r"part 'two' is not in audit.parts"):
        load(tmp_path, text)


# --- the command ------------------------------------------------------------------------------


def test_auditing_an_unknown_assignment_is_a_one_line_error():
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["audit", "ch99"], out, err) == 2
    assert err.getvalue().count("\n") == 1 and "unknown assignment 'ch99'" in err.getvalue()


# --- end to end through the real pipeline and sandbox ------------------------------------------

WEAK_DECLARATION = """
id = "weak"
title = "A suite that only checks one visible case"
[submission]
names = ["decide_admission"]
[parts.admission]
title = "decide_admission"
points = 10
[parts.admission.groups]
visible = {{ title = "visible", share = 1 }}
[audit]
reference = "source/ch03-a/ch03-a.ipynb"
parts = ["admission"]
[audit.functions.decide_admission]
part = "admission"
statuses = ["CALL", "MODEL_CALL_LIMIT", "MODEL_COST_LIMIT"]
operators = {operators}
"""
WEAK_SUITE = """
import pytest

@pytest.mark.part("admission", group="visible")
def test_the_first_visible_case(student, check):
    state = {{"used_calls": 0, "max_calls": 3, "spent": 0, "next_cost": 2, "budget": 6}}
    check.value(student.call("decide_admission", state), {expected!r})
"""


def weak(tmp_path, expected="CALL", operators=("constant",)):
    folder = tmp_path / "weak"
    folder.mkdir()
    shutil.copy(declaration.SUITES_DIR / "pytest.ini", tmp_path / "pytest.ini")
    (folder / "assignment.toml").write_text(WEAK_DECLARATION.format(operators=list(operators)).replace("'", '"'))
    (folder / "test_weak.py").write_text(WEAK_SUITE.format(expected=expected))
    return declaration.load("weak", tmp_path)


@pytest.mark.slow
def test_a_weak_suite_lets_a_constant_survive_and_the_audit_exits_non_zero(tmp_path):
    out = io.StringIO()
    assert audit.run(weak(tmp_path), out, workers=1) == 1
    text = out.getvalue()
    always_call = next(line for line in text.splitlines() if "always CALL " in line + " ")
    assert "OVER CAP 100%" in always_call
    assert "decide_admission: always CALL: survived, kept every point of admission" in text
    assert "caught 0%" in next(line for line in text.splitlines() if "always MODEL_COST_LIMIT" in line)


@pytest.mark.slow
def test_a_suite_the_reference_fails_makes_the_audit_exit_non_zero(tmp_path):
    out = io.StringIO()
    assert audit.run(weak(tmp_path, expected="MODEL_CALL_LIMIT", operators=("raises",)), out, workers=1) == 1
    assert "✗ the reference lost points on admission: kept 0.0%" in out.getvalue()


@pytest.mark.slow
def test_the_ch03a_suites_give_the_reference_full_marks_and_catch_a_constant_answer_in_parallel(ch03a):
    always_call = ch03a.audit.functions["decide_admission"].model_copy(update={"operators": ("constant",), "statuses": ("CALL",)})
    section = ch03a.audit.model_copy(update={"functions": {"decide_admission": always_call}, "cases": {}})
    reference, constant = audit.audit(ch03a.model_copy(update={"audit": section}), workers=2).graded
    assert reference.kept == {p: 1.0 for p in ch03a.audit.parts} and reference.unanswered == 0
    assert constant.program.name == "always CALL"
    assert 0 < constant.kept["admission"] <= 0.40 and constant.kept["connection"] <= 0.40


@pytest.mark.slow
def test_the_audit_sandbox_counts_calls_that_never_answer():
    hang = Statement(0, 1, "def f():\n    while True:\n        pass\n", ("f",))
    with audit._WatchedSandbox([hang], call_timeout=0.3) as sandbox:
        assert sandbox.call("f").outcome == "timeout"
        assert sandbox.value("f").outcome == "returned"
    assert sandbox.unanswered == 1
