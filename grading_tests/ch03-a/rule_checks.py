"""Check bodies shared by the decide_admission and transfer_check suites (one rule, two vocabularies)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from reference import Rule

# Grading must be reproducible: the same submission gets the same examples every time.
GRADING = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=150,
    suppress_health_check=list(HealthCheck),
)

small = st.integers(min_value=0, max_value=12)
large = st.integers(min_value=0, max_value=10**15)


def states(values: st.SearchStrategy[int]) -> st.SearchStrategy[tuple[int, ...]]:
    return st.tuples(values, values, values, values, values)


def ask(student, rule: Rule, values):
    return student.call(rule.function, rule.state(*values))


def expect_rule(student, check, rule: Rule, values, **hidden) -> None:
    state = rule.state(*values)
    check.value(student.call(rule.function, state), rule.decide(state), inputs=state, **hidden)


def expect_pair(student, check, rule: Rule, first, second) -> None:
    """Both halves of a contrastive pair must follow the rule."""
    expect_rule(student, check, rule, first, half="first")
    expect_rule(student, check, rule, second, half="second")


def expect_unchanged(student, check, rule: Rule, values) -> None:
    state = rule.state(*values)
    observed = student.call(rule.function, state)
    check.value(observed, rule.decide(state), inputs=state)
    check.unchanged(observed, (state,), inputs=state)


def expect_statuses(student, check, rule: Rule, cases) -> None:
    for values in cases:
        state = rule.state(*values)
        check.member(student.call(rule.function, state), rule.statuses, inputs=state)


def expect_sequence(student, check, rule: Rule, sequence) -> None:
    for step, values in enumerate(sequence, start=1):
        expect_rule(student, check, rule, values, attempt=str(step))
