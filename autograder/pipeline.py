"""Run the stages for one submission; whatever breaks, a valid results document comes out."""

from __future__ import annotations

import re
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

from autograder import artifacts, declaration, discovery, extraction, results, scoring, suite
from autograder.declaration import Assignment
from autograder.sandbox import LoadReport, Sandbox

SandboxFactory = Callable[..., Any]

# Exception types whose message is only a name from the student's own code: safe to repeat.
_NAME_MESSAGES = {
    "NameError": re.compile(r"name '([A-Za-z_][A-Za-z0-9_]{0,60})' is not defined"),
    "ModuleNotFoundError": re.compile(r"No module named '([A-Za-z0-9_.]{1,80})'"),
}


def grade(assignment: Assignment, submission: Path, *, sandbox_factory: SandboxFactory = Sandbox) -> dict[str, Any]:
    """Grade one upload folder. Never raises: a broken grader yields the failure document."""
    started = time.monotonic()
    try:
        document = _grade(assignment, submission, sandbox_factory, started)
        results.validate(document)
    except Exception as error:  # the grader's own failure must still reach Gradescope
        document = results.failure(f"{type(error).__name__}: {error}", traceback.format_exc(), assignment.id, time.monotonic() - started)
    return document


def _grade(assignment: Assignment, submission: Path, sandbox_factory: SandboxFactory, started: float) -> dict[str, Any]:
    upload = discovery.discover(submission, assignment)
    notes = list(upload.notes)
    found = extract_code(upload, assignment, notes)
    evidence = read_evidence(upload, assignment)
    instructor_notes: list[str] = []
    templates = read_templates(assignment, instructor_notes)
    statements = found.statements if found else ()
    run, extra = run_suite(assignment, statements, evidence, templates, notes, sandbox_factory, describe=found)
    instructor_notes.extend(isolation_warnings(extra))
    parts = scoring.score(assignment, run.outcomes)
    report = results.Report(
        assignment=assignment.id,
        title=assignment.title,
        found=_found_lines(upload, evidence),
        missing=upload.missing(),
        notes=notes,
        instructor_notes=instructor_notes,
        extra=extra,
    )
    return results.build(parts, run.reviews, report, time.monotonic() - started)


def run_suite(
    assignment: Assignment,
    statements: Sequence[Any],
    evidence: Mapping[str, suite.Evidence],
    templates: Mapping[str, Any],
    notes: list[str],
    sandbox_factory: SandboxFactory = Sandbox,
    *,
    describe: extraction.Extraction | None = None,
    parts: Collection[str] | None = None,
) -> tuple[suite.SuiteRun, dict[str, Any]]:
    """Load the statements in a sandbox and run the hidden suite against it.

    The seam the audit uses too: it passes a mutant's statements instead of a student's.
    """
    with sandbox_factory(
        statements,
        call_timeout=assignment.sandbox.call_timeout_seconds,
        load_timeout=assignment.sandbox.load_timeout_seconds,
        total_seconds=assignment.sandbox.total_seconds,
    ) as student:
        if describe is not None:
            notes.extend(describe_load(student.load_report, describe, assignment))
        run = suite.run(suite.Context(assignment, student, evidence, templates, notes), parts=parts)
        return run, _sandbox_extra(student)


def extract_code(upload: discovery.Upload, assignment: Assignment, notes: list[str]) -> extraction.Extraction | None:
    """Slice the graded names out of the notebook; a broken notebook becomes a note, not a crash."""
    if upload.notebook is None:
        return None
    try:
        found = extraction.extract(upload.notebook, assignment.submission.names)
    except extraction.NotebookError as error:
        notes.append(f"{upload.relative(error.path)}: {error.problem}")
        return None
    for skipped in found.skipped_cells:
        notes.append(f"{upload.relative(upload.notebook)}: cell {skipped.cell + 1} was not read ({skipped.reason}).")
    if found.missing:
        notes.append(f"Not defined anywhere in {upload.relative(upload.notebook)}: {', '.join(found.missing)}.")
    return found


def describe_load(report: LoadReport, found: extraction.Extraction, assignment: Assignment) -> list[str]:
    """What went wrong while defining the student's names, reduced to what is safe to show."""
    lines = []
    if report.outcome != "loaded":
        lines.append(f"Your code could not be loaded for grading: {report.outcome} {report.detail}".strip())
    for error in report.errors[:10]:
        lines.append(f"cell {error.cell + 1}, line {error.line}: {_safe_error(error.error)} while defining your code")
    return lines


def _safe_error(error: Any) -> str:
    pattern = _NAME_MESSAGES.get(error.type_name) if error.builtin else None
    match = pattern.search(error.message) if pattern else None
    if match:
        return f"{error.type_name}: {match.group(0)}"
    return error.type_name if error.builtin else "an exception of a class defined in your code"


def read_evidence(upload: discovery.Upload, assignment: Assignment) -> dict[str, suite.Evidence]:
    """Read and parse each evidence file; trusted code, plain JSON only."""
    evidence = {}
    for key, found in upload.files.items():
        item = suite.Evidence(key, found.filename, found.path)
        if found.path is not None:
            with found.path.open("rb") as stream:
                raw = stream.read(discovery.MAX_FILE_BYTES + 1)
            try:
                if len(raw) > discovery.MAX_FILE_BYTES:
                    item.problem = f"{found.filename}: larger than {discovery.MAX_FILE_BYTES // 2**20} MiB, far more than the notebook writes; save it again from the notebook"
                else:
                    item.text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                item.problem = f"{found.filename}: not UTF-8 text (byte {error.start}); save it again from the notebook"
            if item.text is not None:
                item.data, problem = artifacts.parse_json(item.text, found.filename)
                item.problem = str(problem) if problem else ""
        evidence[key] = item
    return evidence


def read_templates(assignment: Assignment, instructor_notes: list[str] | None = None) -> dict[str, Any]:
    """Template values from the release notebook, to recognise answers left unchanged."""
    if not assignment.submission.template_notebook:
        return {}
    path = declaration.PROJECT_ROOT / assignment.submission.template_notebook
    if not path.is_file():
        if instructor_notes is not None:
            instructor_notes.append(f"{assignment.submission.template_notebook} is missing, so answers left as the template are not recognised; run `autograder release {assignment.id}`.")
        return {}
    return {name: extraction.literal_value(path, name) for name in assignment.submission.names}


def _found_lines(upload: discovery.Upload, evidence: dict[str, suite.Evidence]) -> list[str]:
    lines = []
    if upload.notebook is not None:
        lines.append(f"notebook: {upload.relative(upload.notebook)}")
    for item in evidence.values():
        if item.present:
            state = f" — {item.problem.removeprefix(item.filename + ': ')}" if item.problem else ""
            lines.append(f"{upload.relative(item.path)}{state}")
    return lines


def _sandbox_extra(student: Any) -> dict[str, Any]:
    isolation = getattr(student, "isolation_report", None)
    return {"isolation": isolation() if callable(isolation) else {"process": "separate process per call"}}


def isolation_warnings(extra: Mapping[str, Any]) -> list[str]:
    """One instructor-facing line per way the student code ran less isolated than it should."""
    isolation = extra.get("isolation")
    degraded = isolation.get("degraded", []) if isinstance(isolation, dict) else []
    return [f"Student code ran with degraded isolation: {reason}. See SECURITY.md." for reason in degraded]
