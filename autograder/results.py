"""Write Gradescope's results.json: visible summaries, hidden-case details after the due date."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import jsonschema

from autograder.scoring import GroupScore, PartScore, total
from autograder.suite import Outcome, ReviewItem

REVIEW_TAG = "HUMAN_REVIEW_REQUIRED"
#: Gradescope refuses outputs of 100,000 characters or more; stay far below it.
OUTPUT_CAP = 20_000
RESULTS_SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "gradescope-results.schema.json"


@dataclass(frozen=True)
class Report:
    """What the pipeline learned besides the test outcomes."""

    assignment: str
    title: str
    found: Sequence[str] = ()
    missing: Sequence[str] = ()
    notes: Sequence[str] = ()
    instructor_notes: Sequence[str] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def cap(text: str, limit: int = OUTPUT_CAP) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 60] + f"\n… [cut: {len(text) - limit + 60} more characters]"


def _group_output(group: GroupScore) -> str:
    lines = [f"{group.passed} of {group.total} checks passed."]
    for outcome in group.failed[:20]:
        lines.append(f"  ✗ {outcome.kind}: {outcome.reason or 'failed'}")
    if len(group.failed) > 20:
        lines.append(f"  … and {len(group.failed) - 20} more")
    if group.failed and group.hint:
        lines.append(f"Next step: {group.hint}")
    return "\n".join(lines)


def _details_output(part: PartScore) -> str:
    lines = [f"Every case of '{part.title}', with inputs and expected values."]
    for group in part.groups:
        for outcome in group.outcomes:
            mark = "✓" if outcome.passed else "✗"
            lines.append(f"{mark} [{group.title}] {outcome.kind}")
            failures_first = sorted(outcome.details, key=lambda row: not row.get("result", "").startswith("failed"))
            for row in failures_first[:8]:
                lines.append("    " + "; ".join(f"{k}: {v}" for k, v in row.items()))
    return "\n".join(lines)


def _test(name: str, number: str, score: float, max_score: float, output: str, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "number": number,
        "score": score,
        "max_score": max_score,
        "status": "passed" if score >= max_score else "failed",
        "output": cap(output),
        "visibility": "visible",
    }
    entry.update(extra)
    return entry


def _review_output(item: ReviewItem) -> str:
    if item.missing:
        state = "left empty — write your answer in the notebook and save again"
    elif item.unchanged:
        state = "unchanged from the template — replace the instruction with your own answer"
    else:
        state = "answered; a person will grade it"
    return f"{item.field}: {state}\n(from {item.source})\n\n{item.text}"


def review_queue(reviews: Iterable[ReviewItem]) -> list[dict[str, Any]]:
    return [
        {"field": r.field, "part": r.part, "text": cap(r.text, 5000), "unchanged": r.unchanged, "missing": r.missing, "source": r.source}
        for r in reviews
    ]


def build(parts: Sequence[PartScore], reviews: Sequence[ReviewItem], report: Report, seconds: float) -> dict[str, Any]:
    """Pure: the results.json document for one graded submission."""
    tests = [_upload_entry(report)]
    for p_index, part in enumerate((p for p in parts if not p.manual), start=1):
        for g_index, group in enumerate(part.groups, start=1):
            tests.append(
                _test(
                    f"{part.title} › {group.title}",
                    f"{p_index}.{g_index}",
                    group.score,
                    group.max_score,
                    _group_output(group),
                    tags=[part.name, group.name] + (["rule"] if group.rule else []),
                )
            )
        tests.append(
            _test(
                f"{part.title} › every case in detail (shown after the due date)",
                f"{p_index}.{len(part.groups) + 1}",
                0,
                0,
                _details_output(part),
                visibility="after_due_date",
                tags=[part.name, "details"],
            )
        )
    for r_index, item in enumerate(reviews, start=1):
        entry = _test(f"Needs a person: {item.field}", f"R.{r_index}", 0, 0, _review_output(item), tags=[REVIEW_TAG, item.part, item.group])
        entry["status"] = "failed" if item.missing or item.unchanged else "passed"
        tests.append(entry)
    instructor = [o for p in parts for g in p.groups for o in g.outcomes if o.error]
    if instructor or report.instructor_notes:
        tests.append(_instructor_entry(report, instructor))
    score = total(parts)
    automatic = sum(p.max_score for p in parts if not p.manual)
    return {
        "score": score,
        "execution_time": round(seconds, 3),
        "output": _summary(score, automatic, len(reviews), report),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "assignment": report.assignment,
            "parts": {p.name: {"score": p.score, "max_score": p.max_score, "manual": p.manual} for p in parts},
            "review_queue": review_queue(reviews),
            "missing_files": list(report.missing),
            **report.extra,
        },
    }


def _summary(score: float, automatic: float, reviews: int, report: Report) -> str:
    lines = [f"{report.title}: {score:g} of {automatic:g} automatic points."]
    if reviews:
        lines.append(f"{reviews} written answers are graded by a person; they are listed below and do not change this score.")
    if report.missing:
        lines.append("Missing from your upload: " + "; ".join(report.missing) + ".")
    lines.append("Hidden cases stay hidden until the due date: the summaries name the kind of case, not its inputs.")
    return "\n".join(lines)


def _upload_entry(report: Report) -> dict[str, Any]:
    lines = ["Found:"] + [f"  • {f}" for f in report.found]
    if report.missing:
        lines += ["Missing (checks that need these files score 0):"] + [f"  • {m}" for m in report.missing]
    if report.notes:
        lines += ["Notes (cells are counted from 1, markdown cells included):"] + [f"  • {n}" for n in report.notes]
    entry = _test("Your upload", "0", 0, 0, "\n".join(lines), tags=["upload"])
    entry["status"] = "failed" if report.missing else "passed"
    return entry


def _instructor_entry(report: Report, broken: Sequence[Outcome]) -> dict[str, Any]:
    lines = list(report.instructor_notes)
    for outcome in broken:
        lines.append(f"{outcome.nodeid} could not run:\n{outcome.error}")
    return _test("For the instructor", "I", 0, 0, "\n\n".join(lines), visibility="hidden", tags=["instructor"])


def failure(error: str, trace: str, assignment: str, seconds: float = 0.0) -> dict[str, Any]:
    """The document written when the grader itself failed: visible notice, hidden traceback."""
    return {
        "score": 0,
        "execution_time": round(seconds, 3),
        "output": "The autograder failed while grading this submission. This is not a verdict on your work: tell your instructor. Your upload was not changed.",
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            _test("The autograder failed — tell your instructor", "0", 0, 0, cap(error, 2000)) | {"status": "failed"},
            _test("Autograder traceback (instructors only)", "0.1", 0, 0, trace, visibility="hidden") | {"status": "failed"},
        ],
        "extra_data": {"assignment": assignment, "autograder_failed": True, "error": cap(error, 2000)},
    }


def validate(document: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError when the document breaks Gradescope's format."""
    schema = json.loads(RESULTS_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(document)
    tests_total = round(sum(t["score"] for t in document["tests"]), 4)
    if abs(tests_total - document["score"]) > 1e-6:
        raise ValueError(f"score {document['score']} differs from the sum of test scores {tests_total}")


def write(document: dict[str, Any], path: Path) -> None:
    """Atomically replace whatever is at `path` with the document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if path.is_dir() and not path.is_symlink():
            raise IsADirectoryError(f"{path} is a folder; give a file path for --results")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
