"""Constant-answer mutants and the cases that reject them."""

from autograder import mutants

STATUSES = ("CALL", "CALL_LIMIT", "COST_LIMIT")


def test_the_best_constant_on_the_given_transfer_cases_is_call_limit():
    best = mutants.best_constants(["CALL", "COST_LIMIT", "CALL_LIMIT", "CALL_LIMIT"], STATUSES)
    assert [m.answer for m in best] == ["CALL_LIMIT"]


def test_a_tie_keeps_every_best_constant():
    best = mutants.best_constants(["CALL", "COST_LIMIT"], STATUSES)
    assert [m.answer for m in best] == ["CALL", "COST_LIMIT"]


def test_a_case_rejects_a_mutant_only_when_the_expected_value_differs():
    best = [mutants.ConstantMutant("CALL_LIMIT")]
    assert mutants.rejects_all("CALL", best)
    assert not mutants.rejects_all("CALL_LIMIT", best)


def test_a_mutant_ignores_its_input():
    mutant = mutants.ConstantMutant("CALL")
    assert mutant({"calls": 9}) == "CALL" and mutant() == "CALL"
