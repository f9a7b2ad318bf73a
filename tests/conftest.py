"""Shared fixtures: the ch03-a declaration and the example submissions."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import declaration
from autograder.sandbox import Sandbox

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


@dataclass(frozen=True)
class Stmt:
    """Stands in for extraction's Statement record."""

    cell: int
    line: int
    source: str


MakeSandbox = Callable[..., Sandbox]


@pytest.fixture
def make_sandbox() -> Iterator[MakeSandbox]:
    """Build a sandbox from sources, one statement per cell, all closed after the test."""
    made: list[Sandbox] = []

    def make(*sources: str, **options: object) -> Sandbox:
        statements = [Stmt(i + 1, 1, textwrap.dedent(s).strip()) for i, s in enumerate(sources)]
        sandbox = Sandbox(statements, **options)  # type: ignore[arg-type]
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()
