"""Constant-answer mutants and the cases that reject them; mutants generated from a reference's AST."""

import ast

import pytest

from autograder import mutants
from autograder.extraction import Cell, extract_cells

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


# --- mutants generated from a reference's AST -------------------------------------------------

REFERENCE = '''
def decide(state):
    """Admit unless a limit forbids it."""
    if state["calls"] >= state["max_calls"]:
        return "CALL_LIMIT"
    if state["spent"] + state["next_cost"] > state["budget"]:
        return "COST_LIMIT"
    return "CALL"

CASES = [("given", [{"calls": 3, "max_calls": 3, "spent": 0, "next_cost": 0, "budget": 6}], "CALL_LIMIT")]
CASES.append(("mine", [{"calls": 0, "max_calls": 2, "spent": 6, "next_cost": 0, "budget": 6}], "CALL"))
'''
EXACT_FIT = {"calls": 1, "max_calls": 3, "spent": 4, "next_cost": 2, "budget": 6}
BOTH_LIMITS = {"calls": 3, "max_calls": 3, "spent": 6, "next_cost": 2, "budget": 6}
TARGET = mutants.Target("decide", STATUSES, visible=(((EXACT_FIT,), "CALL"),))


def statements(source=REFERENCE, names=("decide", "CASES")):
    return extract_cells([Cell(0, source)], list(names)).statements


def generated(operator, source=REFERENCE, target=TARGET):
    return mutants.generate(statements(source), target, [operator])


def loaded(mutant):
    namespace: dict = {}
    exec("\n".join(s.source for s in mutant.statements), namespace)
    return namespace


def function_of(mutant):
    return loaded(mutant)[mutant.target]


def test_the_constant_rewrite_keeps_the_signature_and_docstring_and_answers_the_constant():
    tree = ast.parse(REFERENCE).body[0]
    rewritten = mutants.ConstantMutant("COST_LIMIT").rewrite(tree)
    assert ast.get_docstring(rewritten) == "Admit unless a limit forbids it."
    assert [a.arg for a in rewritten.args.args] == ["state"]
    namespace: dict = {}
    exec(ast.unparse(rewritten), namespace)
    assert namespace["decide"](EXACT_FIT) == "COST_LIMIT"


def test_the_audit_constants_are_the_counterexample_constants():
    assert [m.name for m in generated("constant")] == [m.name for m in mutants.constant_mutants(STATUSES)]
    assert all(m.gaming for m in generated("constant"))


def test_a_lookup_answers_the_visible_cases_and_the_default_elsewhere():
    lookups = {m.name: function_of(m) for m in generated("lookup")}
    assert set(lookups) == {f"visible cases looked up, else {s}" for s in STATUSES}
    decide = lookups["visible cases looked up, else COST_LIMIT"]
    assert decide(dict(EXACT_FIT)) == "CALL"
    assert decide({**EXACT_FIT, "calls": 0}) == "COST_LIMIT"


def test_each_boundary_is_moved_on_its_own():
    flips = {m.name: function_of(m) for m in generated("boundary")}
    assert len(flips) == 2
    money = next(f for name, f in flips.items() if "budget" in name)
    calls = next(f for name, f in flips.items() if "max_calls" in name and "budget" not in name)
    assert money(EXACT_FIT) == "COST_LIMIT"
    assert calls({**EXACT_FIT, "calls": 3}) == "CALL"


def test_swapping_the_checks_puts_the_cost_first():
    (swapped,) = generated("swapped")
    assert function_of(swapped)(BOTH_LIMITS) == "COST_LIMIT"


def test_an_elif_chain_is_swapped_too():
    source = REFERENCE.replace('        return "CALL_LIMIT"\n    if', '        return "CALL_LIMIT"\n    elif')
    (swapped,) = generated("swapped", source)
    assert function_of(swapped)(BOTH_LIMITS) == "COST_LIMIT"


def test_ignoring_next_cost_admits_an_attempt_that_would_overrun():
    ignored = {m.name: function_of(m) for m in generated("ignored key")}
    assert set(ignored) == {f"ignores {k!r} (reads 0)" for k in ["calls", "max_calls", "spent", "next_cost", "budget"]}
    assert ignored["ignores 'next_cost' (reads 0)"]({**EXACT_FIT, "next_cost": 3}) == "CALL"


def test_a_wrong_key_reads_another_key_of_the_same_input():
    wrong = {m.name: function_of(m) for m in generated("wrong key")}
    assert wrong["reads 'budget' for 'next_cost'"]({**EXACT_FIT, "spent": 1}) == "COST_LIMIT"
    assert len(wrong) == 5


def test_the_input_mutant_answers_right_and_changes_its_input():
    (mutant,) = generated("mutates input")
    state = dict(EXACT_FIT)
    assert function_of(mutant)(state) == "CALL" and state != EXACT_FIT


def test_a_str_subclass_and_an_always_equal_object_pass_a_plain_equality_check():
    (subclass,) = generated("str subclass")
    (anything,) = generated("always equal")
    answer = function_of(subclass)(EXACT_FIT)
    assert answer == "CALL" and type(answer) is not str
    assert function_of(anything)(EXACT_FIT) == "COST_LIMIT" and anything.gaming


def test_the_raising_mutant_raises():
    (raising,) = generated("raises")
    with pytest.raises(RuntimeError):
        function_of(raising)(EXACT_FIT)


def test_every_mutant_differs_from_the_reference_in_the_rewritten_function_only():
    reference = statements()
    for mutant in mutants.generate(reference, TARGET):
        changed = [i for i, (a, b) in enumerate(zip(reference, mutant.statements)) if a.source != b.source]
        assert len(changed) == 1 and "decide" in reference[changed[0]].defines, mutant.name
        assert ast.dump(ast.parse(mutant.source)) != ast.dump(ast.parse(reference[changed[0]].source))


def test_a_rewrite_identical_to_the_reference_is_not_a_mutant():
    source = 'def decide(state):\n    return "CALL"\n'
    names = [m.name for m in generated("constant", source)]
    assert names == ["always CALL_LIMIT", "always COST_LIMIT"]


def test_returns_of_nested_functions_are_left_alone():
    source = 'def decide(state):\n    def helper():\n        return 1\n    return "CALL" if helper() else "COST_LIMIT"\n'
    (wrapped,) = generated("str subclass", source)
    assert "return 1\n" in wrapped.source


def test_a_missing_function_is_a_mutation_error_naming_it():
    with pytest.raises(mutants.MutationError, match=r"def missing"):
        mutants.generate(statements(), mutants.Target("missing", STATUSES))


def test_the_added_cases_are_dropped_copied_from_a_given_case_or_given_a_wrong_expected_value():
    found = {m.operator: loaded(m)["CASES"] for m in mutants.generate_cases(statements(), "CASES", STATUSES)}
    assert set(found) == set(mutants.CASE_OPERATORS)
    given = ("given", [{"calls": 3, "max_calls": 3, "spent": 0, "next_cost": 0, "budget": 6}], "CALL_LIMIT")
    assert found["no case added"] == [given]
    assert found["given case renamed"][1] == ("mine", *given[1:])
    assert found["wrong expected"][1][2] != "CALL"


def test_a_case_list_the_reference_never_extends_cannot_be_mutated():
    source = REFERENCE.split("CASES.append")[0]
    with pytest.raises(mutants.MutationError, match="adds no case to CASES"):
        mutants.generate_cases(statements(source), "CASES", STATUSES)
