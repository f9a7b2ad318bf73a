"""Constant-answer mutants: the cheapest way to game a status function, and the cases that catch it.

One implementation serves two users: the `counterexample` part asks whether a student's own case
rejects the constant answer that does best on the given cases, and the audit grades the hidden
suites against the same mutants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class ConstantMutant:
    """A function that ignores its input and always returns `answer`."""

    answer: str

    def __call__(self, *args: object) -> str:
        return self.answer

    @property
    def name(self) -> str:
        return f"always {self.answer}"


def constant_mutants(statuses: Sequence[str]) -> list[ConstantMutant]:
    """One constant mutant per status."""
    return [ConstantMutant(status) for status in statuses]


def passes(mutant: ConstantMutant, expected: object) -> bool:
    return type(expected) is str and expected == mutant.answer


def best_constants(expected_values: Sequence[object], statuses: Sequence[str]) -> list[ConstantMutant]:
    """The constant mutants that pass the most of the given cases (several on a tie).

    With the four given ch03-a transfer cases (CALL, COST_LIMIT, CALL_LIMIT, CALL_LIMIT) this is
    `always CALL_LIMIT`, which passes half of them.
    """
    mutants = constant_mutants(statuses)
    scores = [sum(passes(m, e) for e in expected_values) for m in mutants]
    top = max(scores, default=0)
    return [m for m, score in zip(mutants, scores) if score == top]


def rejects_all(expected: object, mutants: Sequence[ConstantMutant]) -> bool:
    """A case rejects a mutant when the mutant's answer is not the case's expected value."""
    return all(not passes(mutant, expected) for mutant in mutants)
