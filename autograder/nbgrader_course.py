"""nbgrader's autograde for a course, with every automatic score decided outside the student's kernel."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor, SaveAutoGrades
from traitlets import Unicode

from autograder import declaration, pipeline

FAILED_NOTE = (
    "The course autograder could not grade this submission, so this cell scores 0 for now. "
    "This is not a verdict on your work: tell your instructor, who will grade it again."
)
KERNEL_NOTE = (
    "Your notebook's kernel stopped here ({error}), so the cells below were not run. "
    "Your score does not depend on this run: the course autograder grades your saved notebook and files."
)


@dataclass(frozen=True)
class Verdict:
    """What one automatic grade cell shows and scores: the trusted grader's result for its part."""

    score: float
    note: str


def verdicts(document: Mapping[str, Any], cells: Mapping[str, float]) -> dict[str, Verdict]:
    """Pure: a results document from `pipeline.grade` → one verdict per grade cell (grade_id → points).

    A cell scores its part's share of the cell's points; a failed grading, or a cell that names no
    automatic part, scores 0 with a note saying why. Nothing here ever defaults to full marks.
    """
    parts = document.get("extra_data", {}).get("parts")
    if document.get("extra_data", {}).get("autograder_failed") or not isinstance(parts, dict):
        return {grade_id: Verdict(0.0, FAILED_NOTE) for grade_id in cells}
    return {grade_id: _verdict(document, parts.get(grade_id), grade_id, points) for grade_id, points in cells.items()}


def _verdict(document: Mapping[str, Any], part: Any, grade_id: str, points: float) -> Verdict:
    if not isinstance(part, dict) or part.get("manual") or not part.get("max_score"):
        return Verdict(0.0, f"{FAILED_NOTE}\n(The assignment declares no automatic part named '{grade_id}'.)")
    score = float(part["score"])
    if float(part["max_score"]) != points:  # the notebook's points win; the declaration's split the share
        score = score / float(part["max_score"]) * points
    score = min(max(score, 0.0), points)
    return Verdict(score, _summary(document, grade_id, score, points))


def _summary(document: Mapping[str, Any], part: str, score: float, points: float) -> str:
    """Only what Gradescope shows before the due date: the kind of each failed case, never its inputs."""
    lines = [f"{part}: {score:g} of {points:g} points, decided by the course autograder outside this notebook."]
    for test in document.get("tests", []):
        if test.get("tags", [None])[0] == part and test.get("visibility") == "visible":
            lines.append(f"\n{test['name']}: {test['score']:g}/{test['max_score']:g}\n{test['output']}")
    return "\n".join(lines)


def outputs(verdict: Verdict, execution_count: int | None = None) -> list[NotebookNode]:
    """The cell's new outputs: the note, then the score where nbgrader's `determine_grade` reads it."""
    return [
        nbformat.v4.new_output("stream", name="stdout", text=verdict.note + "\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": repr(verdict.score)}, execution_count=execution_count),
    ]


class TrustedGrades(NbGraderPreprocessor):
    """Replace each automatic grade cell's outputs with the trusted grader's score for its part.

    Runs after the kernel and before SaveAutoGrades. The score comes from `pipeline.grade` on the
    student's submitted folder (the uploaded notebook and evidence files), never from anything the
    kernel printed, raised or wrote.
    """

    assignment = Unicode(
        "",
        help="Declaration id in grading_tests/ to grade with; empty means the nbgrader assignment id.",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        ids = resources["nbgrader"]
        try:
            cells = self._automatic_cells(ids)
        except Exception:  # no gradebook: still never let the kernel's verdict through
            self.log.exception("TrustedGrades: cannot read the grade cells of %s from the gradebook", ids["notebook"])
            cells = {c.metadata.nbgrader["grade_id"]: float(c.metadata.nbgrader.get("points", 0)) for c in nb.cells if _automatic(c)}
        found = self._decide(ids, cells)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in found and cell.cell_type == "code":
                # Restore what makes nbgrader score this cell, whatever the submission's metadata says.
                cell.metadata.nbgrader.update(grade=True, solution=False, points=cells[grade_id])
                cell.outputs = outputs(found.pop(grade_id), cell.get("execution_count"))
        for grade_id in found:
            self.log.error("TrustedGrades: %s has no grade cell '%s'; set OverwriteCells.add_missing_cells", ids["notebook"], grade_id)
        return nb, resources

    def _automatic_cells(self, ids: Mapping[str, str]) -> dict[str, float]:
        """The instructor's grade cells without a solution (grade_id → points), from the gradebook."""
        with Gradebook(ids["db_url"]) as gradebook:
            notebook = gradebook.find_notebook(ids["notebook"], ids["assignment"])
            solutions = {cell.name for cell in notebook.solution_cells}
            return {cell.name: float(cell.max_score) for cell in notebook.grade_cells if cell.name not in solutions}

    def _decide(self, ids: Mapping[str, str], cells: Mapping[str, float]) -> dict[str, Verdict]:
        try:
            assignment = declaration.load(self.assignment or ids["assignment"])
            folder = self.submitted_folder(ids["assignment"], ids["student"])
            document = pipeline.grade(assignment, folder)
        except Exception:  # pipeline.grade never raises; loading the declaration can
            self.log.exception("TrustedGrades: could not grade %s for %s", ids["assignment"], ids["student"])
            document = {"extra_data": {"autograder_failed": True}}
        if document.get("extra_data", {}).get("autograder_failed"):
            self.log.error("TrustedGrades: grading %s for %s failed: %s", ids["assignment"], ids["student"], document["extra_data"].get("error"))
        decided = verdicts(document, cells)
        self.log.info("TrustedGrades: %s", ", ".join(f"{k}={v.score:g}" for k, v in decided.items()))
        return decided

    def submitted_folder(self, assignment_id: str, student_id: str) -> Path:
        coursedir = CourseDirectory(config=self.config)
        return Path(coursedir.format_path(coursedir.submitted_directory, student_id, assignment_id))


def _automatic(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution") and "grade_id" in meta


class KernelRun(Execute):
    """nbgrader's Execute, except that a kernel that dies or breaks ends the run, not the autograde.

    The run only fills in outputs for feedback. Stock Execute lets a dead kernel (`os._exit`) fail
    the whole submission, so TrustedGrades would never get to record the trusted scores.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict | None = None, km: Any = None) -> tuple[NotebookNode, ResourcesDict]:
        self._running: int | None = None
        try:
            return super().preprocess(nb, resources, km)
        except Exception as error:  # whatever the student's kernel did, grading carries on
            self.log.error("KernelRun: the kernel stopped at cell %s: %s: %s", self._running, type(error).__name__, error)
            if self._running is not None and nb.cells[self._running].cell_type == "code":
                note = KERNEL_NOTE.format(error=type(error).__name__)
                nb.cells[self._running].outputs.append(
                    nbformat.v4.new_output("error", ename=type(error).__name__, evalue=note, traceback=[note])
                )
            return nb, resources or {}

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int) -> tuple[NotebookNode, ResourcesDict]:
        self._running = index
        return super().preprocess_cell(cell, resources, index)


def autograde_preprocessors() -> list[type]:
    """nbgrader's own autograde list, with KernelRun for Execute and TrustedGrades just before SaveAutoGrades."""
    stock = list(Autograde.class_traits()["autograde_preprocessors"].default())
    if Execute not in stock or SaveAutoGrades not in stock:
        raise RuntimeError(f"this nbgrader's autograde preprocessors lack Execute or SaveAutoGrades: {stock}")
    chain = [KernelRun if step is Execute else step for step in stock]
    chain.insert(chain.index(SaveAutoGrades), TrustedGrades)
    return chain
