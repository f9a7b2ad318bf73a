"""The `autograder` command: I/O at the edge, everything else in the stages."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence, TextIO

from autograder import declaration, pipeline, results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autograder", description="Grade bounded-agent-loop assignments. Student code runs in a sandbox; trusted code judges it.")
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade one upload folder and write a Gradescope results.json")
    grade.add_argument("--assignment", required=True, help="assignment id, e.g. ch03-a (see `autograder list`)")
    grade.add_argument("--submission", required=True, type=Path, help="folder holding what the student uploaded")
    grade.add_argument("--results", required=True, type=Path, help="where to write results.json (replaced atomically)")
    grade.add_argument("--quiet", action="store_true", help="print nothing on success")

    show = commands.add_parser("show", help="print a results.json as a table")
    show.add_argument("results", type=Path)

    commands.add_parser("list", help="list the assignments this grader knows")

    batch = commands.add_parser("batch", help="grade every upload in a folder: results, grades.csv, review-queue.csv")
    batch.add_argument("--assignment", required=True, help="assignment id, e.g. ch03-a")
    batch.add_argument("--submissions", required=True, type=Path, help="folder with one subfolder (or .zip) per student")
    batch.add_argument("--out", required=True, type=Path, help="folder for <upload>/results.json, grades.csv and review-queue.csv")
    batch.add_argument("--workers", type=_positive, default=None, help="uploads graded at once (default: one per core)")

    release = commands.add_parser("release", help="make release/<assignment> from source/<assignment> with nbgrader generate_assignment")
    release.add_argument("assignment", help="assignment id, e.g. ch03-a")
    release.add_argument("--into", type=Path, default=None, help="folder to write instead of release/<assignment> (replaced)")

    package = commands.add_parser("package", help="build the autograder zip to upload to Gradescope")
    package.add_argument("assignment", help="assignment id, e.g. ch03-a")
    package.add_argument("--out", type=Path, default=None, help="zip to write (default: <assignment>-gradescope.zip)")

    audit = commands.add_parser("audit", help="grade the hidden suites: the reference must score full marks, every mutant of it must lose points")
    audit.add_argument("assignment", help="assignment id, e.g. ch03-a; its assignment.toml needs an [audit] section")
    audit.add_argument("--workers", type=_positive, default=None, help="programs graded at once (default: one per core)")
    return parser


def run(argv: Sequence[str], stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            args = _parser().parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    handler = {"grade": _grade, "show": _show, "list": _list, "batch": _batch, "release": _release, "audit": _audit, "package": _package}[args.command]
    try:
        return handler(args, stdout, stderr)
    except _Refused as refusal:
        stderr.write(f"autograder: error: {refusal}\n")
        return 2


class _Refused(Exception):
    """The command could not do its job at all (nothing was written)."""


def _assignment(assignment_id: str) -> declaration.Assignment:
    try:
        return declaration.load(assignment_id)
    except declaration.DeclarationError as error:
        raise _Refused(str(error)) from None


def _grade(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    assignment = _assignment(args.assignment)
    if not args.submission.is_dir():
        raise _Refused(f"--submission {args.submission}: not a folder; give the folder holding the student's upload")
    # Whatever was at the results path goes now: if grading dies half-way, the file says so.
    unfinished = results.failure("grading did not finish", "", assignment.id)
    _write_results(unfinished, args.results)
    document = pipeline.grade(assignment, args.submission.resolve())  # every student process is dead after this
    _write_results(document, args.results)
    for warning in pipeline.isolation_warnings(document.get("extra_data", {})):
        stderr.write(f"autograder: warning: {warning}\n")
    if not args.quiet:
        stdout.write(render(document) + f"\nWrote {args.results}\n")
    return 0


def _write_results(document: dict[str, Any], path: Path) -> None:
    try:
        results.write(document, path)
    except OSError as error:
        raise _Refused(f"--results {path}: cannot write there ({error.strerror or error})") from None


def _show(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    try:
        document = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise _Refused(f"{args.results}: cannot read a results.json there ({error})") from None
    stdout.write(render(document) + "\n")
    return 0


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _batch(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from autograder import batch

    _assignment(args.assignment)
    if not args.submissions.is_dir():
        raise _Refused(f"--submissions {args.submissions}: not a folder; give the folder holding one upload per student")
    graded, queued = batch.run(args.assignment, args.submissions, args.out, args.workers, progress=stderr)
    stdout.write(f"Graded {graded} uploads into {args.out}: grades.csv, review-queue.csv ({queued} answers need a person), <upload>/results.json\n")
    return 0


def _list(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    for assignment_id in declaration.available():
        stdout.write(f"{assignment_id}\t{declaration.load(assignment_id).title}\n")
    return 0


def _release(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from autograder import release  # imports nbgrader, which grading never needs

    try:
        written = release.generate(args.assignment, args.into)
    except (declaration.DeclarationError, release.ReleaseError) as error:
        raise _Refused(str(error)) from None
    stdout.write(f"Released {args.assignment} into {written}\n")
    return 0


def _package(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from autograder import gradescope

    assignment = _assignment(args.assignment)
    target = args.out or Path(f"{assignment.id}-gradescope.zip")
    names = gradescope.build(assignment, target)
    stdout.write(f"Wrote {target} ({len(names)} files). Upload it as the autograder of a Gradescope programming assignment.\n")
    return 0


def _audit(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from autograder import audit

    try:
        return audit.run(declaration.load(args.assignment), stdout, args.workers)
    except (declaration.DeclarationError, audit.AuditError) as error:
        raise _Refused(str(error)) from None


def render(document: dict[str, Any]) -> str:
    """A results document as a terminal table: every entry, its score, and what students see."""
    rows = []
    for test in document.get("tests", []):
        score = f"{test['score']:g}/{test['max_score']:g}" if test.get("max_score") else "—"
        mark = "✓" if test.get("status") == "passed" else "✗"
        seen = {"visible": "", "after_due_date": " (after due date)", "hidden": " (hidden)"}.get(test.get("visibility", ""), "")
        rows.append(f"{mark} {score:>11}  {test['name']}{seen}")
        if _worth_printing(test):
            rows.extend(f"{'':15}{line}" for line in test.get("output", "").splitlines()[:12])
    queue = document.get("extra_data", {}).get("review_queue", [])
    footer = [f"Score: {document.get('score', 0):g}", f"Answers waiting for a person: {len(queue)}"]
    return "\n".join([document.get("output", ""), "", *rows, "", *footer])


def _worth_printing(test: dict[str, Any]) -> bool:
    """The upload summary, failed visible checks and notes for the instructor; not the details."""
    tags = test.get("tags", [])
    if "upload" in tags or "instructor" in tags:
        return True
    return test.get("status") == "failed" and test.get("visibility") == "visible" and test.get("max_score", 0) > 0


def main() -> None:
    sys.exit(run(sys.argv[1:]))
