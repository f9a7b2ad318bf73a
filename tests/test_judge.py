"""The judge compares plain data with exact types and keeps hidden details out of student reasons."""

from hypothesis import given
from hypothesis import strategies as st

from autograder import judge
from autograder.sandbox import Opaque
from conftest import FakeError, FakeObservation

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)


@given(plain)
def test_any_plain_value_is_the_same_as_itself(value):
    assert judge.same(value, value)


def test_true_is_not_the_same_as_one():
    assert not judge.same(True, 1)
    assert not judge.same({"a": True}, {"a": 1})


def test_a_tuple_is_not_the_same_as_a_list():
    assert not judge.same((1, 2), [1, 2])


def test_an_opaque_value_is_never_the_same_as_anything():
    stand_in = Opaque("student.Anything", "'CALL'")
    assert not judge.same(stand_in, "CALL")
    assert not judge.same(stand_in, stand_in)


def test_dicts_must_have_exactly_the_same_keys():
    assert not judge.same({"a": 1, "b": 2}, {"a": 1})
    assert judge.same({"a": [1, "x"]}, {"a": [1, "x"]})


def test_the_right_status_passes():
    assert judge.expect_value(FakeObservation(returned="CALL"), "CALL").passed


def test_a_wrong_status_names_no_expected_value_in_the_reason():
    verdict = judge.expect_value(FakeObservation(returned="CALL"), "MODEL_COST_LIMIT")
    assert not verdict.passed
    assert "MODEL_COST_LIMIT" not in verdict.reason
    assert "MODEL_COST_LIMIT" in verdict.detail


def test_a_str_stand_in_fails_with_a_reason_about_its_type():
    verdict = judge.expect_value(FakeObservation(returned=Opaque("Anything", "'CALL'")), "CALL")
    assert not verdict.passed
    assert "not a plain built-in value" in verdict.reason


def test_an_exception_from_student_code_is_named_only_when_builtin():
    builtin = judge.expect_value(FakeObservation("raised", raised=FakeError("KeyError", "'budget'")), "CALL")
    custom = judge.expect_value(FakeObservation("raised", raised=FakeError("SecretLeak", "hidden", builtin=False)), "CALL")
    assert builtin.reason == "raised KeyError"
    assert "SecretLeak" not in custom.reason and "class defined in your code" in custom.reason


def test_membership_needs_an_exact_str_status():
    assert judge.expect_member(FakeObservation(returned="CALL"), ("CALL", "STOP")).passed
    assert not judge.expect_member(FakeObservation(returned="PAUSE"), ("CALL", "STOP")).passed
    assert not judge.expect_member(FakeObservation(returned=Opaque("S", "'CALL'")), ("CALL",)).passed


def test_a_changed_input_is_reported_without_showing_it_to_the_student():
    verdict = judge.expect_unchanged(FakeObservation(returned="CALL", args_after=({"spent": 99},)), ({"spent": 4},))
    assert not verdict.passed
    assert "99" not in verdict.reason and "99" in verdict.detail


def test_an_untouched_input_passes():
    assert judge.expect_unchanged(FakeObservation(returned="CALL", args_after=({"spent": 4},)), ({"spent": 4},)).passed


def test_a_timeout_is_described_without_details():
    assert judge.what_happened(FakeObservation("timeout", detail="after 2 s")) == "did not return in time"
