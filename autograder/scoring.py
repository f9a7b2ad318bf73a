"""Turn test outcomes into points, using only the weights in the assignment's declaration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from autograder.declaration import Assignment
from autograder.suite import Outcome


@dataclass(frozen=True)
class GroupScore:
    part: str
    name: str
    title: str
    rule: bool
    max_score: float
    score: float
    outcomes: tuple[Outcome, ...]
    hint: str = ""

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.passed)


@dataclass(frozen=True)
class PartScore:
    name: str
    title: str
    manual: bool
    max_score: float
    groups: tuple[GroupScore, ...]

    @property
    def score(self) -> float:
        return round(sum(g.score for g in self.groups), 4)

    @property
    def fraction(self) -> float:
        return self.score / self.max_score if self.max_score else 1.0


def score(assignment: Assignment, outcomes: Iterable[Outcome]) -> list[PartScore]:
    """Each group earns its share of the part in proportion to the tests it passed."""
    by_group: dict[tuple[str, str], list[Outcome]] = {}
    for outcome in outcomes:
        by_group.setdefault((outcome.part, outcome.group), []).append(outcome)
    parts = []
    for part_name, part in assignment.parts.items():
        groups = []
        for group_name, group in part.groups.items():
            members = tuple(by_group.get((part_name, group_name), ()))
            max_score = round(part.points * group.share, 4)
            earned = max_score * sum(o.passed for o in members) / len(members) if members else 0.0
            groups.append(GroupScore(part_name, group_name, group.title, group.rule, max_score, round(earned, 4), members, group.hint))
        parts.append(PartScore(part_name, part.title, part.manual, part.points, tuple(groups)))
    return parts


def total(parts: Iterable[PartScore]) -> float:
    return round(sum(g.score for p in parts for g in p.groups), 4)
