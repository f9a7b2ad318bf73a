"""decide_admission (part `admission`) and transfer_check (part `transfer`): one rule, two vocabularies.

Every case is generated for both functions; each generated test carries the part tag of its function.
"""

import pytest
from hypothesis import given

import rule_checks as checks
from reference import ADMISSION, BOUNDARY, PERTURBATIONS, PRECEDENCE, TRANSFER, UNCHANGED, UNSEEN, VARYING_NEXT_COST, VISIBLE

PARTS = {ADMISSION: "admission", TRANSFER: "transfer"}


def each(group, rows=None, kind=None):
    """One pytest.param per function (and per row), tagged with that function's part."""
    params = []
    for rule, part in PARTS.items():
        table = VISIBLE[rule.function] if rows == "visible" else rows
        for row in table or [(kind,)]:
            label = row[0]
            mark = pytest.mark.part(part, group=group, kind=label)
            params.append(pytest.param(rule, *row[1:], id=f"{rule.function}: {label}", marks=mark))
    return params


@pytest.mark.parametrize("rule, values", each("visible", "visible"))
def test_the_visible_cases_hold(student, check, rule, values):
    checks.expect_rule(student, check, rule, values)


@pytest.mark.parametrize("rule, values", each("unseen", UNSEEN))
def test_an_unseen_case_follows_the_rule(student, check, rule, values):
    checks.expect_rule(student, check, rule, values)


@pytest.mark.parametrize("rule, base, changed", each("perturbation", PERTURBATIONS))
def test_changing_one_field_moves_the_decision(student, check, rule, base, changed):
    checks.expect_pair(student, check, rule, base, changed)


@pytest.mark.parametrize("rule", each("perturbation", kind="next_cost varying between attempts"))
def test_a_varying_next_cost_is_read_every_time(student, check, rule):
    checks.expect_sequence(student, check, rule, VARYING_NEXT_COST)


@pytest.mark.parametrize("rule", each("property", kind="random small values"))
@checks.GRADING
@given(values=checks.states(checks.small))
def test_random_small_cases_agree_with_the_rule(student, check, rule, values):
    checks.expect_rule(student, check, rule, values)


@pytest.mark.parametrize("rule", each("property", kind="random large values"))
@checks.GRADING
@given(values=checks.states(checks.large))
def test_random_large_cases_agree_with_the_rule(student, check, rule, values):
    checks.expect_rule(student, check, rule, values)


@pytest.mark.parametrize("rule", each("type", kind="every answer is exactly a str status"))
def test_every_answer_is_exactly_one_of_the_statuses(student, check, rule):
    cases = [values for _, values in UNSEEN + VISIBLE[rule.function]]
    checks.expect_statuses(student, check, rule, cases)


@pytest.mark.parametrize("rule, both, cost_only", each("precedence", PRECEDENCE))
def test_the_call_limit_is_checked_before_the_cost(student, check, rule, both, cost_only):
    checks.expect_pair(student, check, rule, both, cost_only)


@pytest.mark.parametrize("rule, exact, over", each("boundary", BOUNDARY))
def test_equality_at_the_money_boundary_is_admitted(student, check, rule, exact, over):
    checks.expect_pair(student, check, rule, exact, over)


@pytest.mark.parametrize("rule, values", each("unchanged", UNCHANGED))
def test_the_input_is_left_unchanged(student, check, rule, values):
    checks.expect_unchanged(student, check, rule, values)
