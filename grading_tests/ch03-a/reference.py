"""The grader's own statement of the ch03-a rules, and the cases built from them.

Trusted code: it never runs in the student's process. decide_admission and transfer_check follow
one rule under two vocabularies, so the hidden suites for both are generated from one `Rule`.
"""

from __future__ import annotations

from dataclasses import dataclass
PREDICTION_FIELDS = ("prediction", "reason", "falsifier", "revision")
EXPLANATION_FIELDS = ("causal_trace", "failed_hypothesis", "remaining_limit")


@dataclass(frozen=True)
class Rule:
    """Admit the next attempt unless the call limit, then the cost exposure, forbids it."""

    function: str
    fields: tuple[str, str, str, str, str]  # used calls, max calls, spent, next cost, budget
    statuses: tuple[str, str, str]  # admit, call limit, cost limit

    @property
    def admit(self) -> str:
        return self.statuses[0]

    @property
    def call_limit(self) -> str:
        return self.statuses[1]

    @property
    def cost_limit(self) -> str:
        return self.statuses[2]

    def state(self, used: int, max_calls: int, spent: int, next_cost: int, budget: int) -> dict[str, int]:
        return dict(zip(self.fields, (used, max_calls, spent, next_cost, budget)))

    def decide(self, state: dict[str, int]) -> str:
        used, max_calls, spent, next_cost, budget = (state[name] for name in self.fields)
        if used >= max_calls:
            return self.call_limit
        if spent + next_cost > budget:
            return self.cost_limit
        return self.admit

    def is_state(self, value: object) -> bool:
        """A well-formed input: exactly these five keys, each a non-negative int (not a bool)."""
        return (
            type(value) is dict
            and set(value) == set(self.fields)
            and all(type(value[name]) is int and value[name] >= 0 for name in self.fields)
        )


ADMISSION = Rule(
    "decide_admission",
    ("used_calls", "max_calls", "spent", "next_cost", "budget"),
    ("CALL", "MODEL_CALL_LIMIT", "MODEL_COST_LIMIT"),
)
TRANSFER = Rule(
    "transfer_check",
    ("calls", "max_calls", "spent", "next_cost", "budget"),
    ("CALL", "CALL_LIMIT", "COST_LIMIT"),
)

Case = tuple[str, tuple[int, int, int, int, int]]

# The four admission cases the notebook shows students.
VISIBLE_ADMISSION: list[Case] = [
    ("first call", (0, 3, 0, 2, 6)),
    ("calls used up", (3, 3, 0, 0, 6)),
    ("next call too costly", (1, 3, 5, 2, 6)),
    ("exact fit", (1, 3, 4, 2, 6)),
]
# The four transfer cases the notebook gives, under the labels it gives them.
GIVEN_TRANSFER: list[Case] = [
    ("exact fit", (1, 3, 4, 3, 7)),
    ("next attempt too costly", (1, 3, 4, 4, 7)),
    ("two exhausted limits", (3, 3, 7, 1, 7)),
    ("zero allowed attempts", (0, 0, 0, 0, 0)),
]
VISIBLE: dict[str, list[Case]] = {ADMISSION.function: VISIBLE_ADMISSION, TRANSFER.function: GIVEN_TRANSFER}

BIG = 10**12
UNSEEN: list[Case] = [
    ("zero budget", (0, 3, 0, 2, 0)),
    ("zero budget, free attempt", (0, 3, 0, 0, 0)),
    ("exact fit", (2, 5, 7, 3, 10)),
    ("one over the budget", (2, 5, 8, 3, 10)),
    ("both limits exhausted", (4, 4, 10, 5, 10)),
    ("max_calls 0", (0, 0, 0, 1, 100)),
    ("calls already past the limit", (7, 5, 0, 1, 10)),
    ("last call left", (4, 5, 0, 1, 10)),
    ("large values within budget", (999_999, 1_000_000, BIG, 10**9, BIG + 10**9)),
    ("large values one over", (999_999, 1_000_000, BIG, 10**9 + 1, BIG + 10**9)),
]

# (kind, base, changed): one field changed, and the decision must move as the rule says.
PERTURBATIONS: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = [
    ("used calls reach max_calls", (1, 4, 5, 2, 9), (4, 4, 5, 2, 9)),
    ("max_calls drops to the calls used", (1, 4, 5, 2, 9), (1, 1, 5, 2, 9)),
    ("spent rises past the budget", (1, 4, 5, 2, 9), (1, 4, 8, 2, 9)),
    ("next_cost rises past the budget", (1, 4, 5, 2, 9), (1, 4, 5, 5, 9)),
    ("budget drops below the exposure", (1, 4, 5, 2, 9), (1, 4, 5, 2, 6)),
    ("max_calls raised above the calls used", (3, 3, 0, 1, 5), (3, 4, 0, 1, 5)),
    ("spent falls to an exact fit", (0, 3, 6, 1, 6), (0, 3, 5, 1, 6)),
    ("next_cost falls to zero", (0, 3, 6, 1, 6), (0, 3, 6, 0, 6)),
    ("budget grows to an exact fit", (0, 3, 6, 1, 6), (0, 3, 6, 1, 7)),
]

# Successive attempts whose next_cost differs every time, as the transfer task describes.
VARYING_NEXT_COST: list[tuple[int, ...]] = [
    (0, 5, 0, 3, 10),
    (1, 5, 3, 5, 10),
    (2, 5, 8, 2, 10),
    (3, 5, 10, 1, 10),
    (3, 5, 10, 0, 10),
]

# Rule checks: a pair each, so no constant answer passes one.
PRECEDENCE: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = [
    ("both limits exhausted", (3, 3, 9, 2, 10), (2, 3, 9, 2, 10)),
    ("far over both limits", (9, 2, 50, 10, 20), (1, 2, 50, 10, 20)),
    ("zero attempts and zero budget", (0, 0, 0, 1, 0), (0, 1, 0, 1, 0)),
]
BOUNDARY: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = [
    ("small budget", (1, 5, 4, 2, 6), (1, 5, 5, 2, 6)),
    ("costly next attempt", (0, 5, 0, 9, 9), (0, 5, 0, 10, 9)),
    ("large budget", (2, 9, BIG - 5, 5, BIG), (2, 9, BIG - 4, 5, BIG)),
]
# Clear of every boundary, so a boundary mistake does not also cost this rule.
UNCHANGED: list[Case] = [
    ("an admitted attempt", (1, 4, 2, 2, 9)),
    ("a call-limited attempt", (4, 4, 2, 2, 9)),
    ("a cost-limited attempt", (1, 4, 8, 2, 9)),
    ("a free attempt", (0, 4, 0, 0, 9)),
]

