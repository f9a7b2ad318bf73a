"""Audit an assignment's hidden suites: the reference must get full marks, every mutant of it must lose points.

Reads top to bottom as its pipeline: plan (extract the reference from the source notebook,
generate mutants from its AST as the `[audit]` section declares) → grade each program through
the production path (`pipeline.run_suite` with a real Sandbox, only the parts it targets, several
programs at a time) → judge (pure: caught, survived, over the gaming cap) → render (pure) → `run`,
the I/O edge. Mutants are trusted code, yet they run in the sandbox like any submission, so the
audit measures exactly what grading does.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from autograder import declaration, extraction, mutants, pipeline, scoring
from autograder.declaration import Assignment, AuditCases
from autograder.sandbox import Observation, Sandbox

FULL = 1 - 1e-6
"""A share of points at or above this is all of them (scores are rounded to 4 decimals)."""
UNANSWERED = frozenset({"timeout", "crashed", "protocol_error", "budget_exhausted"})
"""Observation outcomes no mutant is built to cause: a loaded machine or a broken sandbox."""


class AuditError(Exception):
    """The audit cannot start: the declaration or the reference is not what it needs. Instructors read it."""


@dataclass(frozen=True)
class Program:
    """One thing to grade: the reference, or one mutant of it."""

    name: str
    """"reference", or what the mutant does, e.g. "always CALL"."""
    statements: tuple[Any, ...]
    parts: tuple[str, ...]
    """The parts it is graded on."""
    required: tuple[str, ...]
    """The reference must keep all of these parts; a mutant must lose points on one of them."""
    mutant: mutants.Mutant | None = None

    @property
    def label(self) -> str:
        return f"{self.mutant.target}: {self.name}" if self.mutant else self.name


@dataclass(frozen=True)
class Graded:
    """The share of each part's points a program kept."""

    program: Program
    kept: Mapping[str, float]
    error: str = ""
    """Why grading broke (an engine or suite failure), if it did."""
    unanswered: int = 0
    """Calls that timed out or crashed: points lost to them may not be the suite's doing."""
    seconds: float = 0.0


@dataclass(frozen=True)
class Report:
    """Every program graded, with what the table and the verdict need."""

    assignment: str
    parts: tuple[str, ...]
    """The audited parts, in declaration order: the table's columns."""
    skipped: tuple[str, ...]
    """Declared parts the audit does not grade (evidence-based or manual)."""
    cap: float
    graded: tuple[Graded, ...]
    seconds: float = 0.0
    workers: int = 1

    @property
    def problems(self) -> list[str]:
        return [problem for graded in self.graded for problem in problems(graded, self.cap)]


# --------------------------------------------------------------------------------------------
# Plan


def plan(assignment: Assignment, root: Path = declaration.PROJECT_ROOT) -> list[Program]:
    """The reference and every mutant the `[audit]` section asks for, reference first."""
    audit = _section(assignment)
    path = root / audit.reference
    statements = _reference(path, assignment)
    programs = [Program("reference", statements, audit.parts, audit.parts)]
    for name, function in audit.functions.items():
        visible = visible_cases(path, function.visible) if function.visible else ()
        target = mutants.Target(name, function.statuses, visible)
        with _reference_problem():
            found = mutants.generate(statements, target, function.operators)
        parts = (function.part, *function.also)
        programs += [Program(m.name, m.statements, parts, (function.part,), m) for m in found]
    for name, cases in audit.cases.items():
        with _reference_problem():
            found = mutants.generate_cases(statements, name, cases.statuses)
        programs += [Program(m.name, m.statements, (cases.part,), (cases.part,), m) for m in found]
    return programs


def _section(assignment: Assignment) -> declaration.Audit:
    if assignment.audit is None:
        raise AuditError(f"{assignment.id} has no [audit] section in its assignment.toml; declare the reference and the functions to mutate (see README, 'Auditing the hidden suites')")
    return assignment.audit


def _reference(path: Path, assignment: Assignment) -> tuple[Any, ...]:
    try:
        found = extraction.extract(path, assignment.submission.names)
    except extraction.NotebookError as error:
        raise AuditError(f"audit.reference: {error}") from None
    if found.missing:
        raise AuditError(f"audit.reference {path}: defines no {', '.join(found.missing)}; the reference must define every name in submission.names")
    return found.statements


@contextlib.contextmanager
def _reference_problem() -> Iterator[None]:
    try:
        yield
    except mutants.MutationError as error:
        raise AuditError(f"audit.reference: {error}") from None


def visible_cases(path: Path, cases: AuditCases) -> tuple[tuple[tuple[object, ...], object], ...]:
    """The cases bound to `cases.name` in the notebook, as (arguments, expected); nothing is executed."""
    value = extraction.literal_value(path, cases.name)
    width = len(cases.layout.split(", "))
    if type(value) is not list or not value or not all(type(c) in (list, tuple) and len(c) == width for c in value):
        raise AuditError(f"{path}: {cases.name} is not a literal list of ({cases.layout}) cases; fix audit.functions.*.visible or the notebook")
    if cases.layout == "input, expected":
        return tuple(((case[0],), case[1]) for case in value)
    if not all(type(case[1]) in (list, tuple) for case in value):
        raise AuditError(f"{path}: the arguments of a case in {cases.name} are not a list")
    return tuple((tuple(case[1]), case[2]) for case in value)


# --------------------------------------------------------------------------------------------
# Grade


class _WatchedSandbox(Sandbox):
    """The production sandbox, counting the calls that came back without an answer."""

    unanswered = 0

    def call(self, name: str, *args: object) -> Observation:
        return self._watch(super().call(name, *args))

    def value(self, name: str) -> Observation:
        return self._watch(super().value(name))

    def _watch(self, observation: Observation) -> Observation:
        self.unanswered += observation.outcome in UNANSWERED
        return observation


def grade(assignment: Assignment, program: Program) -> Graded:
    """Grade one program on its parts through the production path; a broken grading is reported, not raised."""
    started = time.monotonic()
    sandboxes: list[_WatchedSandbox] = []

    def watched(*args: Any, **kwargs: Any) -> _WatchedSandbox:
        sandboxes.append(_WatchedSandbox(*args, **kwargs))
        return sandboxes[-1]

    try:
        run, _ = pipeline.run_suite(assignment, program.statements, {}, {}, [], watched, parts=program.parts)
    except Exception as error:  # a suite that breaks on one mutant must not hide the others
        return Graded(program, {}, f"{type(error).__name__}: {error}", seconds=time.monotonic() - started)
    kept = {p.name: p.fraction for p in scoring.score(assignment, run.outcomes) if p.name in program.parts}
    unanswered = sum(sandbox.unanswered for sandbox in sandboxes)
    return Graded(program, kept, unanswered=unanswered, seconds=time.monotonic() - started)


def grade_all(assignment: Assignment, programs: Sequence[Program], workers: int) -> list[Graded]:
    """Every program graded, in order; `workers` processes at a time (pytest runs one suite per process)."""
    if workers <= 1 or len(programs) <= 1:
        return [grade(assignment, program) for program in programs]
    with ProcessPoolExecutor(max_workers=min(workers, len(programs))) as pool:
        return list(pool.map(grade, [assignment] * len(programs), programs))


def audit(assignment: Assignment, workers: int | None = None, root: Path = declaration.PROJECT_ROOT) -> Report:
    workers = workers or os.cpu_count() or 1
    started = time.monotonic()
    programs = plan(assignment, root)
    graded = grade_all(assignment, programs, workers)
    section = _section(assignment)
    skipped = tuple(part for part in assignment.parts if part not in section.parts)
    return Report(assignment.id, section.parts, skipped, section.gaming_cap, tuple(graded), time.monotonic() - started, workers)


# --------------------------------------------------------------------------------------------
# Judge


def problems(graded: Graded, cap: float) -> list[str]:
    """What is wrong with the suites, as this program shows it; empty when it behaved as it must."""
    program = graded.program
    if graded.error:
        return [f"{program.label}: could not be graded ({graded.error})"]
    if graded.unanswered:
        return [f"{program.label}: {graded.unanswered} calls timed out or crashed, so its score may not be the suite's doing; rerun on a quieter machine"]
    if program.mutant is None:
        return [f"the reference lost points on {part}: kept {graded.kept[part]:.1%}" for part in program.required if graded.kept[part] < FULL]
    found = []
    if all(graded.kept[part] >= FULL for part in program.required):
        found.append(f"{program.label}: survived, kept every point of {', '.join(program.required)}")
    if program.mutant.gaming:
        found += [
            f"{program.label}: kept {graded.kept[part]:.1%} of {part}, over the {cap:.0%} gaming cap"
            for part in program.parts if graded.kept[part] > cap
        ]
    return found


def cell(graded: Graded, part: str, cap: float) -> str:
    """One cell of the table: what the program kept of one part, and what that means."""
    program = graded.program
    if part not in program.parts:
        return ""
    if graded.error:
        return "ERROR"
    kept = graded.kept[part]
    if graded.unanswered:
        return f"UNSURE {kept:.0%}"
    if program.mutant is None:
        word = "full" if kept >= FULL else "LOST"
    elif program.mutant.gaming and kept > cap:
        word = "OVER CAP"
    elif kept < FULL:
        word = "caught"
    elif part in program.required:
        word = "SURVIVED"
    else:
        word = "passes"  # a part that also calls the function need not notice every mutant
    return f"{word} {kept:.0%}"


# --------------------------------------------------------------------------------------------
# Render


def render(report: Report) -> str:
    """The audit as a table of programs × parts, then a summary and every problem found."""
    header = ["program", *report.parts]
    rows, target = [], None
    for graded in report.graded:
        mutant = graded.program.mutant
        if mutant is not None and mutant.target != target:
            target = mutant.target
            rows.append([target, *([""] * len(report.parts))])
        name = f"  {graded.program.name}" if mutant else graded.program.name
        rows.append([name, *(cell(graded, part, report.cap) for part in report.parts)])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join([
        f"Audit of the {report.assignment} hidden suites: the reference and {len(report.graded) - 1} mutants, gaming cap {report.cap:.0%}",
        "",
        *lines,
        "",
        *_summary(report),
    ])


def _summary(report: Report) -> list[str]:
    mutated = [g for g in report.graded if g.program.mutant is not None]
    survived = [g for g in mutated if g.program.mutant is not None and not g.error and all(g.kept[p] >= FULL for p in g.program.required)]
    gaming = [g for g in mutated if g.program.mutant is not None and g.program.mutant.gaming]
    lines = [
        f"{len(mutated)} mutants: {len(mutated) - len(survived)} caught, {len(survived)} survived; "
        f"{len(gaming)} of them gaming, capped at {report.cap:.0%} of each part.",
        f"Not audited (they judge an upload's own evidence files, not code): {', '.join(report.skipped) or 'none'}.",
        f"Graded in {report.seconds:.0f} s with {report.workers} worker{'s' if report.workers != 1 else ''}.",
        "",
    ]
    found = report.problems
    if not found:
        return [*lines, "Audit passed: the reference gets full marks and every mutant loses points."]
    return [*lines, *(f"✗ {problem}" for problem in found), f"Audit FAILED: {len(found)} problem{'s' if len(found) != 1 else ''}."]


# --------------------------------------------------------------------------------------------
# Edge


def run(assignment: Assignment, stdout: TextIO, workers: int | None = None) -> int:
    """Audit, print the table; 0 when the suites hold up, 1 when any problem was found."""
    report = audit(assignment, workers)
    stdout.write(render(report) + "\n")
    return 1 if report.problems else 0
