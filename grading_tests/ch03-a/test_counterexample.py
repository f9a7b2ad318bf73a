"""The student's own TRANSFER_CASES: at least one new, correct case that catches a constant answer."""

import pytest

from autograder import judge, mutants
from reference import GIVEN_TRANSFER, TRANSFER

PART = "counterexample"
GIVEN_INPUTS = [[TRANSFER.state(*values)] for _, values in GIVEN_TRANSFER]
GIVEN_EXPECTED = [TRANSFER.decide(TRANSFER.state(*values)) for _, values in GIVEN_TRANSFER]


def student_cases(student, check):
    observed = student.value("TRANSFER_CASES")
    check.that(observed.ok, f"TRANSFER_CASES: {judge.what_happened(observed)}", judge.full_story(observed))
    cases = observed.returned
    check.that(type(cases) in (list, tuple), "TRANSFER_CASES is not a list", judge.show(cases))
    return [case for case in cases if type(case) in (list, tuple) and len(case) == 3]


def new_cases(cases):
    """Cases whose inputs differ from every given case: a given case under a new label is not new."""
    return [case for case in cases if not any(judge.same(list(case[1]) if type(case[1]) is tuple else case[1], given) for given in GIVEN_INPUTS)]


def right_by_the_rule(case) -> bool:
    _, arguments, expected = case
    if type(arguments) not in (list, tuple) or len(arguments) != 1 or not TRANSFER.is_state(arguments[0]):
        return False
    return judge.same(expected, TRANSFER.decide(arguments[0]))


@pytest.mark.part(PART, group="added", kind="a case with new inputs")
def test_a_case_with_new_inputs_was_added(student, check):
    added = new_cases(student_cases(student, check))
    check.that(bool(added), "no case with inputs different from the four given ones", added=len(added))


@pytest.mark.part(PART, group="correct", kind="expected value follows the rule")
def test_an_added_case_has_the_expected_value_the_rule_gives(student, check):
    added = new_cases(student_cases(student, check))
    right = [case for case in added if right_by_the_rule(case)]
    check.that(bool(right), "no added case whose inputs are valid and whose expected value the rule gives", added=judge.show(added))


@pytest.mark.part(PART, group="rejects_constant", kind="catches the best constant answer")
def test_an_added_case_rejects_the_best_constant_answer(student, check):
    best = mutants.best_constants(GIVEN_EXPECTED, TRANSFER.statuses)
    right = [case for case in new_cases(student_cases(student, check)) if right_by_the_rule(case)]
    catching = [case for case in right if mutants.rejects_all(case[2], best)]
    names = " / ".join(m.name for m in best)
    check.that(bool(catching), f"no correct added case rejects the constant answer that passes the given cases best ({names})", correct_cases=judge.show(right))
