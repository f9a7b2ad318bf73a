"""decide_admission plugged into the grader's own loop, on replayed transcripts with new costs and ids."""

import pytest

from autograder import judge
from trusted_loop import FAIL, AdmissionBroke, answer, drafts, run_loop, stock

PART = "connection"

# (kind, script, limits, expected (status, model_calls, tool_calls, estimated_cents)), worked by hand.
SCENARIOS = {
    "exact_fit": [
        ("budget fits every attempt exactly", [stock("q-17"), drafts("q-18a", "q-18b"), answer()], dict(max_calls=5, call_cost=3, budget=9), ("COMPLETED", 3, 3, 9)),
        ("budget one cent short of the last attempt", [stock("q-17"), drafts("q-18a", "q-18b"), answer()], dict(max_calls=5, call_cost=3, budget=8), ("MODEL_COST_LIMIT", 2, 3, 6)),
    ],
    "failed_charged": [
        ("failure then completion within limits", [FAIL, stock("w-1"), answer()], dict(max_calls=3, call_cost=2, budget=6, retry_failures=True), ("COMPLETED", 3, 1, 6)),
        ("charged failure exhausts the budget", [FAIL, stock("w-1"), answer()], dict(max_calls=3, call_cost=2, budget=5, retry_failures=True), ("MODEL_COST_LIMIT", 2, 1, 4)),
        ("charged failure exhausts the calls", [FAIL, stock("w-1"), answer()], dict(max_calls=2, call_cost=2, budget=100, retry_failures=True), ("MODEL_CALL_LIMIT", 2, 1, 4)),
    ],
    "zero_budget": [
        ("zero budget refuses the first attempt", [stock("z-1"), answer()], dict(max_calls=4, call_cost=2, budget=0), ("MODEL_COST_LIMIT", 0, 0, 0)),
        ("zero budget with free attempts", [stock("z-1"), drafts("z-2", "z-3"), answer()], dict(max_calls=2, call_cost=0, budget=0), ("MODEL_CALL_LIMIT", 2, 3, 0)),
    ],
    "precedence": [
        ("both limits reached together", [stock("p-1"), drafts("p-2", "p-3"), answer()], dict(max_calls=2, call_cost=3, budget=6), ("MODEL_CALL_LIMIT", 2, 3, 6)),
        ("no attempts and no budget", [answer()], dict(max_calls=0, call_cost=1, budget=0), ("MODEL_CALL_LIMIT", 0, 0, 0)),
    ],
}


def scenarios():
    for group, rows in SCENARIOS.items():
        for kind, script, limits, expected in rows:
            yield pytest.param(script, limits, expected, id=f"{group}: {kind}", marks=pytest.mark.part(PART, group=group, kind=kind))


@pytest.mark.parametrize("script, limits, expected", scenarios())
def test_the_loop_stops_with_the_right_status_and_counters(student, check, script, limits, expected):
    def admission(state):
        observed = student.call("decide_admission", state)
        if not observed.ok:
            raise AdmissionBroke(judge.what_happened(observed))
        return observed.returned

    try:
        run = run_loop(admission, script, **limits)
    except AdmissionBroke as broke:
        check.that(False, f"decide_admission {broke} inside the loop", limits=limits)
        return
    decisions = [decision for _, decision in run.decisions]
    check.that(
        run.counters() == expected,
        "the loop ended with a different status or counters than the rule gives",
        f"expected (status, model_calls, tool_calls, estimated_cents) = {expected}, got {run.counters()}",
        limits=limits,
        decisions=decisions,
    )
    answered = {m["tool_call_id"] for m in run.messages if m["role"] == "tool"}
    requested = {c["id"] for m in run.messages if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    check.that(answered == requested, "a tool request was left without its observation", limits=limits)
