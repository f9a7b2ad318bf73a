"""Points come from the declaration: a group's share of the part, split evenly among its tests."""

import pytest

from autograder import scoring
from autograder.suite import Outcome


def outcome(part, group, passed):
    return Outcome(f"{part}::{group}::{passed}", part, group, "kind", passed=passed)


def test_a_part_with_every_test_passed_earns_its_points(ch03a):
    outcomes = [outcome("admission", g, True) for g in ch03a.parts["admission"].groups]
    admission = next(p for p in scoring.score(ch03a, outcomes) if p.name == "admission")
    assert admission.score == pytest.approx(25)


def test_half_the_tests_of_a_group_earn_half_its_share(ch03a):
    outcomes = [outcome("admission", "unseen", True), outcome("admission", "unseen", False)]
    unseen = next(g for p in scoring.score(ch03a, outcomes) for g in p.groups if (p.name, g.name) == ("admission", "unseen"))
    assert unseen.max_score == pytest.approx(25 * 0.20)
    assert unseen.score == pytest.approx(25 * 0.20 / 2)


def test_a_group_without_outcomes_earns_nothing(ch03a):
    parts = scoring.score(ch03a, [])
    assert scoring.total(parts) == 0


def test_a_missed_rule_costs_its_whole_share(ch03a):
    groups = ch03a.parts["transfer"].groups
    outcomes = [outcome("transfer", g, g != "boundary") for g in groups]
    transfer = next(p for p in scoring.score(ch03a, outcomes) if p.name == "transfer")
    assert transfer.score == pytest.approx(25 * (1 - groups["boundary"].share))


def test_the_manual_part_carries_no_automatic_points(ch03a):
    outcomes = [outcome("review", "prediction", True)]
    assert scoring.total(scoring.score(ch03a, outcomes)) == 0
