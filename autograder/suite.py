"""Run an assignment's hidden pytest suite against one submission and collect one outcome per test.

The suite runs in the grader's own (trusted) interpreter. It never imports student code: the
`student` fixture is a sandbox in another process that hands back plain data. Tests report through
the `check` and `review` fixtures, which keep what students may see apart from hidden details.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator, Mapping

import pytest

from autograder import judge
from autograder.declaration import Assignment

MARKER = "part"
_MARKER_HELP = f'{MARKER}(name, group=...): the graded part and group of the assignment this test belongs to'


class GradingFailure(AssertionError):
    """A check failed; `verdict.reason` is safe for students, `verdict.detail` is not."""

    def __init__(self, verdict: judge.Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


class SuiteError(Exception):
    """The hidden suite itself is broken (bad tags, import errors): an instructor problem."""


@dataclass
class Outcome:
    """What one hidden test concluded."""

    nodeid: str
    part: str
    group: str
    kind: str
    passed: bool = False
    reason: str = ""
    details: list[dict[str, str]] = field(default_factory=list)
    error: str = ""  # traceback when the test itself broke: instructors only


@dataclass(frozen=True)
class ReviewItem:
    """An answer a person must grade."""

    part: str
    group: str
    field: str
    text: str
    template: str | None
    source: str

    @property
    def missing(self) -> bool:
        return not self.text.strip()

    @property
    def unchanged(self) -> bool:
        return self.template is not None and _normalise(self.text) == _normalise(self.template)


def _normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Evidence:
    """One evidence file as discovered and parsed (parsing is trusted code: plain JSON)."""

    key: str
    filename: str
    path: Path | None
    text: str | None = None
    data: Any = None
    problem: str = ""  # why `data` is None although the file exists

    @property
    def present(self) -> bool:
        return self.path is not None


@dataclass
class Context:
    """Everything a hidden suite may look at for one submission."""

    assignment: Assignment
    student: Any  # a sandbox.Sandbox, or anything with call/value/defines
    evidence: Mapping[str, Evidence]
    templates: Mapping[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Check:
    """Judge an observation, record hidden details, and fail the test with a student-safe reason."""

    def __init__(self, outcome: Outcome) -> None:
        self._outcome = outcome

    def record(self, **details: object) -> None:
        self._outcome.details.append({k: v if isinstance(v, str) else judge.show(v) for k, v in details.items()})

    def verdict(self, verdict: judge.Verdict, **hidden: object) -> None:
        if not verdict.passed:
            self.record(**hidden, result=f"failed: {verdict.detail or verdict.reason}")
            raise GradingFailure(verdict)
        if hidden:
            self.record(**hidden, result="passed")

    def value(self, observation: judge.ObservationLike, expected: object, **hidden: object) -> None:
        self.verdict(judge.expect_value(observation, expected), expected=expected, **hidden)

    def member(self, observation: judge.ObservationLike, allowed: Iterable[str], **hidden: object) -> None:
        self.verdict(judge.expect_member(observation, allowed), **hidden)

    def unchanged(self, observation: judge.ObservationLike, before: tuple, **hidden: object) -> None:
        self.verdict(judge.expect_unchanged(observation, before), **hidden)

    def that(self, condition: bool, reason: str, detail: str = "", **hidden: object) -> None:
        self.verdict(judge.PASS if condition else judge.Verdict(False, reason, detail), **hidden)


class HiddenSuite:
    """The pytest plugin: fixtures for hidden tests, tag validation, outcome collection."""

    def __init__(self, context: Context, parts: Collection[str] | None = None) -> None:
        self.context = context
        self.parts = parts
        self.outcomes: dict[str, Outcome] = {}
        self.reviews: list[ReviewItem] = []
        self.problems: list[str] = []

    # -- tags -----------------------------------------------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", _MARKER_HELP)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Tag every test; keep only the parts asked for (the audit grades one part at a time)."""
        kept = []
        for item in items:
            tag = self._tag(item)
            if tag is not None and (self.parts is None or tag[0] in self.parts):
                self.outcomes[item.nodeid] = Outcome(item.nodeid, *tag, kind=_kind(item))
                kept.append(item)
        if self.problems:
            raise pytest.UsageError("hidden suite has badly tagged tests:\n  " + "\n  ".join(self.problems))
        items[:] = kept

    def _tag(self, item: pytest.Item) -> tuple[str, str] | None:
        markers = list(item.iter_markers(MARKER))
        parts = self.context.assignment.parts
        if len(markers) != 1:
            self.problems.append(f"{item.nodeid}: has {len(markers)} @pytest.mark.{MARKER} tags, needs exactly one")
            return None
        marker = markers[0]
        name = marker.args[0] if marker.args else marker.kwargs.get("name")
        group = marker.kwargs.get("group")
        if name not in parts:
            self.problems.append(f"{item.nodeid}: part {name!r} is not declared (declared: {', '.join(parts)})")
            return None
        if group not in parts[name].groups:
            groups = ", ".join(parts[name].groups)
            self.problems.append(f"{item.nodeid}: group {group!r} is not declared in part {name!r} (declared: {groups})")
            return None
        return name, group

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.problems.append(f"{report.nodeid or 'suite'}: could not be collected:\n{report.longreprtext[-2000:]}")

    # -- outcomes -------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
        yield
        outcome = self.outcomes.get(item.nodeid)
        if outcome is None or call.when == "teardown":
            return
        if call.excinfo is None:
            if call.when == "call":
                outcome.passed = True
            return
        outcome.passed = False
        error = call.excinfo.value
        failure = _grading_failure(error)
        if type(error).__name__.startswith("Flaky"):
            # hypothesis replayed an input and the student's function answered differently.
            outcome.reason = "gave different answers to the same input on different calls"
        elif failure is not None:
            outcome.reason = failure.verdict.reason
        elif isinstance(error, AssertionError):
            outcome.reason = "did not meet this check"
            outcome.details.append({"assertion": str(error)[:500]})
        elif call.excinfo.errisinstance(pytest.skip.Exception):
            outcome.reason = "not checked"
        else:
            outcome.reason = "this check could not run; your instructor has been told"
            outcome.error = "".join(traceback.format_exception(error))[-4000:]

    # -- fixtures -------------------------------------------------------------------------
    @pytest.fixture
    def student(self) -> Any:
        return self.context.student

    @pytest.fixture
    def evidence(self) -> Mapping[str, Evidence]:
        return self.context.evidence

    @pytest.fixture
    def assignment(self) -> Assignment:
        return self.context.assignment

    @pytest.fixture
    def templates(self) -> Mapping[str, Any]:
        return self.context.templates

    @pytest.fixture
    def check(self, request: pytest.FixtureRequest) -> Check:
        return Check(self.outcomes[request.node.nodeid])

    @pytest.fixture
    def review(self, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
        outcome = self.outcomes[request.node.nodeid]

        def record(field_name: str, text: object, template: object, source: str) -> ReviewItem:
            item = ReviewItem(
                outcome.part,
                outcome.group,
                field_name,
                text if type(text) is str else "",
                template if type(template) is str else None,
                source,
            )
            self.reviews.append(item)
            return item

        return record


def _grading_failure(error: BaseException) -> GradingFailure | None:
    """The GradingFailure behind an error, also inside exception groups (hypothesis raises those)."""
    if isinstance(error, GradingFailure):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _grading_failure(inner)
            if found is not None:
                return found
    return None


def _kind(item: pytest.Item) -> str:
    marker = item.get_closest_marker(MARKER)
    if marker is not None and "kind" in marker.kwargs:
        return str(marker.kwargs["kind"])
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.id:
        return callspec.id
    name = getattr(item, "originalname", item.name)
    return name.removeprefix("test_").replace("_", " ")


@dataclass
class SuiteRun:
    outcomes: list[Outcome]
    reviews: list[ReviewItem]
    exit_code: int


def run(context: Context, suite_dir: Path | None = None, parts: Collection[str] | None = None) -> SuiteRun:
    """Run the hidden suite in this (trusted) interpreter; raise SuiteError if it is broken."""
    suite_dir = suite_dir or context.assignment.suite_dir
    plugin = HiddenSuite(context, parts)
    args = [
        str(suite_dir),
        f"--rootdir={suite_dir}",
        "-c",
        str(suite_dir.parent / "pytest.ini"),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        "-p",
        "no:randomly",
        "--import-mode=importlib",
    ]
    with _importable(suite_dir):
        exit_code = int(pytest.main(args, plugins=[plugin]))
    if plugin.problems:
        raise SuiteError("; ".join(plugin.problems))
    if exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise SuiteError(f"pytest stopped with exit code {exit_code} while running {suite_dir}")
    _check_every_group_has_tests(context.assignment, plugin.outcomes.values(), parts)
    return SuiteRun(list(plugin.outcomes.values()), plugin.reviews, exit_code)


@contextlib.contextmanager
def _importable(suite_dir: Path) -> Iterator[None]:
    """Let a suite import its helper modules by plain name, and forget them afterwards.

    Two assignments may both have a `reference.py`; purging keeps one from seeing the other's.
    """
    folder = str(suite_dir)
    # A module already imported under one of the suite's file names (the project's own
    # tests/test_artifacts.py, say) would be reused by pytest instead of the suite's file.
    own_names = {path.stem for path in suite_dir.glob("*.py")}
    shadowing = {name: sys.modules.pop(name) for name in list(sys.modules) if name.partition(".")[0] in own_names}
    sys.path.insert(0, folder)
    before = set(sys.modules)
    try:
        yield
    finally:
        sys.path.remove(folder)
        for name in set(sys.modules) - before:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(folder):
                del sys.modules[name]
        sys.modules.update(shadowing)


def _check_every_group_has_tests(assignment: Assignment, outcomes: Iterable[Outcome], parts: Collection[str] | None) -> None:
    seen = {(o.part, o.group) for o in outcomes}
    wanted = {p: part for p, part in assignment.parts.items() if parts is None or p in parts}
    empty = [f"{p}.{g}" for p, part in wanted.items() for g in part.groups if (p, g) not in seen]
    if empty:
        raise SuiteError(f"declared groups with no hidden test: {', '.join(empty)}; add tests or remove them from assignment.toml")
