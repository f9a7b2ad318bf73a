"""Shared fixtures: the ch03-a declaration and the example submissions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import declaration

SUBMISSIONS = Path(__file__).parent / "submissions"


@pytest.fixture(scope="session")
def ch03a() -> declaration.Assignment:
    return declaration.load("ch03-a")


@pytest.fixture
def submissions() -> Path:
    return SUBMISSIONS


@dataclass(frozen=True)
class FakeError:
    type_name: str
    message: str = ""
    builtin: bool = True


@dataclass(frozen=True)
class FakeObservation:
    """An observation as the sandbox would hand it back, built by hand for pure-logic tests."""

    outcome: str = "returned"
    returned: object = None
    raised: FakeError | None = None
    args_after: tuple = ()
    name: str = "decide_admission"
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == "returned"
