"""nbgrader's autograde in a course: every automatic cell records what `autograder grade` gives.

The first tests check the pure core (results document → per-cell verdicts → cell outputs that
nbgrader's own `determine_grade` reads). The slow ones build a throwaway course with the project's
nbgrader_config.py, generate the assignment, submit student notebooks made from the release, run
`nbgrader autograde` and `nbgrader generate_feedback` with real kernels, and compare nbgrader's
gradebook with `autograder grade` run on the same submitted folders.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, SaveAutoGrades
from nbgrader.utils import determine_grade

from autograder import nbgrader_course, results
from autograder.nbgrader_course import FAILED_NOTE, KernelRun, TrustedGrades, Verdict

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent  # nbgrader shells out to alembic, installed beside python
AUTOMATIC = {"admission": 25.0, "transfer": 25.0, "counterexample": 10.0, "connection": 15.0, "artifacts": 10.0, "evidence": 15.0}
WRITTEN = ("prediction_notes", "explanation_notes")


def document(**scores: float) -> dict[str, Any]:
    """A results document as pipeline.grade writes it, with the given part scores."""
    parts = {name: {"score": scores.get(name, points), "max_score": points, "manual": False} for name, points in AUTOMATIC.items()}
    parts["review"] = {"score": 0.0, "max_score": 0.0, "manual": True}
    tests = [
        {"name": "decide_admission › unseen cases", "score": 4.5, "max_score": 5.0, "output": "9 of 10 checks passed.\n  ✗ zero budget", "visibility": "visible", "tags": ["admission", "unseen"]},
        {"name": "decide_admission › every case in detail", "score": 0, "max_score": 0, "output": "inputs: {'budget': 0}", "visibility": "after_due_date", "tags": ["admission", "details"]},
        {"name": "For the instructor", "score": 0, "max_score": 0, "output": "Traceback", "visibility": "hidden", "tags": ["instructor"]},
    ]
    return {"score": sum(p["score"] for p in parts.values()), "tests": tests, "extra_data": {"parts": parts}}


def grade_cell(grade_id: str, points: float, outputs: list[Any] | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("assert VISIBLE_PASSED")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id, "points": points, "schema_version": 3}
    cell.outputs = outputs or []
    return cell


def kernel_error() -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=["AssertionError"])


# The pure core --------------------------------------------------------------------------------


def test_each_cell_scores_its_parts_points_and_nbgrader_reads_exactly_that() -> None:
    decided = nbgrader_course.verdicts(document(admission=18.25, transfer=0.0), AUTOMATIC)
    for grade_id, points in AUTOMATIC.items():
        cell = grade_cell(grade_id, points, [kernel_error()])
        cell.outputs = nbgrader_course.outputs(decided[grade_id])
        assert determine_grade(cell) == (decided[grade_id].score, points)
    assert (decided["admission"].score, decided["transfer"].score, decided["evidence"].score) == (18.25, 0.0, 15.0)


def test_a_failed_grading_scores_every_cell_zero_with_a_note_saying_so() -> None:
    failed = {"score": 0, "tests": [], "extra_data": {"assignment": "ch03-a", "autograder_failed": True, "error": "boom"}}
    decided = nbgrader_course.verdicts(failed, AUTOMATIC)
    assert decided == {grade_id: Verdict(0.0, FAILED_NOTE) for grade_id in AUTOMATIC}


def test_a_cell_that_names_no_automatic_part_scores_zero_not_full_marks() -> None:
    decided = nbgrader_course.verdicts(document(), {"bonus": 5.0, "review": 2.0})
    assert {grade_id: verdict.score for grade_id, verdict in decided.items()} == {"bonus": 0.0, "review": 0.0}
    assert "no automatic part named 'bonus'" in decided["bonus"].note


def test_a_cell_worth_other_points_than_its_part_gets_the_same_share_of_them() -> None:
    assert nbgrader_course.verdicts(document(admission=12.5), {"admission": 10.0})["admission"].score == 5.0


def test_the_note_shows_the_visible_summary_and_nothing_shown_only_after_the_due_date() -> None:
    note = nbgrader_course.verdicts(document(admission=18.25), AUTOMATIC)["admission"].note
    assert note.startswith("admission: 18.25 of 25 points, decided by the course autograder")
    assert "✗ zero budget" in note
    assert "inputs:" not in note and "Traceback" not in note


IDS = {"notebook": "ch03-a", "assignment": "ch03-a", "student": "s1", "db_url": "sqlite://"}


def trusted(notebook: nbformat.NotebookNode, graded: dict[str, Any], **traits: str) -> nbformat.NotebookNode:
    """TrustedGrades on a notebook, with pipeline.grade returning `graded` (no gradebook, no sandbox)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TrustedGrades, "_automatic_cells", lambda self, ids: {"admission": 25.0, "transfer": 25.0})
        patch.setattr(nbgrader_course.pipeline, "grade", lambda assignment, folder: graded)
        return TrustedGrades(**traits).preprocess(notebook, {"nbgrader": IDS})[0]


def test_trusted_grades_replace_whatever_the_kernel_left_in_every_automatic_cell() -> None:
    errored = grade_cell("admission", 25.0, [kernel_error()])
    hidden = grade_cell("transfer", 25.0)
    hidden.metadata["nbgrader"]["grade"] = False  # a submission that hid the cell from SaveAutoGrades
    notebook = trusted(nbformat.v4.new_notebook(cells=[errored, hidden]), document(admission=5.0, transfer=7.5))
    assert [determine_grade(cell) for cell in notebook.cells] == [(5.0, 25.0), (7.5, 25.0)]


def test_when_the_trusted_grading_fails_a_silent_cell_scores_zero_and_says_so() -> None:
    failed = results.failure("RuntimeError: boom", "Traceback ...", "ch03-a")
    notebook = trusted(nbformat.v4.new_notebook(cells=[grade_cell("admission", 25.0)]), failed)
    assert determine_grade(notebook.cells[0]) == (0.0, 25.0)
    assert notebook.cells[0].outputs[0].text.startswith(FAILED_NOTE)


def test_an_assignment_without_a_declaration_scores_zero_not_the_kernels_verdict() -> None:
    cell = grade_cell("admission", 25.0)
    notebook = trusted(nbformat.v4.new_notebook(cells=[cell]), document(), assignment="no-such-unit")
    assert determine_grade(notebook.cells[0]) == (0.0, 25.0)


def test_without_a_gradebook_the_automatic_cells_are_found_by_their_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(*args: Any) -> None:
        raise OSError("no gradebook here")

    monkeypatch.setattr(nbgrader_course, "Gradebook", unreadable)
    monkeypatch.setattr(nbgrader_course.pipeline, "grade", lambda assignment, folder: document(admission=5.0))
    notebook = nbformat.v4.new_notebook(cells=[grade_cell("admission", 25.0)])
    notebook, _ = TrustedGrades().preprocess(notebook, {"nbgrader": IDS})
    assert determine_grade(notebook.cells[0]) == (5.0, 25.0)


def test_the_autograde_chain_swaps_in_kernel_run_and_puts_trusted_grades_right_before_saving() -> None:
    chain = nbgrader_course.autograde_preprocessors()
    assert Execute not in chain and chain[0] is KernelRun
    assert chain[chain.index(SaveAutoGrades) - 1] is TrustedGrades


# A course with real nbgrader and real kernels --------------------------------------------------

CORRECT_ADMISSION = '''def decide_admission(case):
    """Whether the next model attempt may start."""
    if case["used_calls"] >= case["max_calls"]:
        return "MODEL_CALL_LIMIT"
    if case["spent"] + case["next_cost"] > case["budget"]:
        return "MODEL_COST_LIMIT"
    return "CALL"'''
CORRECT_TRANSFER = '''def transfer_check(state):
    """Whether the next attempt may start."""
    if state["calls"] >= state["max_calls"]:
        return "CALL_LIMIT"
    if state["spent"] + state["next_cost"] > state["budget"]:
        return "COST_LIMIT"
    return "CALL"'''
# Cost checked before calls (admission), and an exact fit refused (transfer).
WRONG_ADMISSION = '''def decide_admission(case):
    """Whether the next model attempt may start."""
    if case["spent"] + case["next_cost"] > case["budget"]:
        return "MODEL_COST_LIMIT"
    if case["used_calls"] >= case["max_calls"]:
        return "MODEL_CALL_LIMIT"
    return "CALL"'''
WRONG_TRANSFER = CORRECT_TRANSFER.replace('> state["budget"]', '>= state["budget"]')
# A kernel hook: from the first check on, every cell runs as an empty one, so stock nbgrader sees
# six grade cells with no error and gives full marks.
BLANK_THE_CHECKS = '''def decide_admission(case):
    return "CALL"


_checks_reached = []


def _skip_the_checks(lines):
    if lines and lines[0].startswith("assert VISIBLE_PASSED"):
        _checks_reached.append(True)
    return [] if _checks_reached else lines


get_ipython().input_transformers_cleanup.append(_skip_the_checks)'''
COUNTEREXAMPLE = '\nTRANSFER_CASES.append(("free attempt on a spent budget", [{"calls": 1, "max_calls": 2, "spent": 7, "next_cost": 0, "budget": 7}], "CALL"))'
PREDICTION = '''prediction_notes = {
    "prediction": "The loop makes 3 model calls and 3 tool calls and completes with 6 cents charged.",
    "reason": "Three turns at 2 cents fit the 8-cent budget and the 4-call limit.",
    "falsifier": "A status other than COMPLETED after the third turn.",
    "revision": "Failed attempts are charged too, which I had not expected.",
}'''
EXPLANATION = '''explanation_notes = {
    "causal_trace": "Case 3: spent 5 plus next_cost 2 is 7, over the budget of 6, so MODEL_COST_LIMIT.",
    "failed_hypothesis": "I thought a refused draft would end the run; it did not.",
    "remaining_limit": "Replayed turns say nothing about a live model's choices.",
}'''
KILL_THE_KERNEL = "import os\n\nos._exit(0)  # the kernel dies before the checks run"


@dataclass(frozen=True)
class Student:
    """One submission: its answer cells, and a cell inserted right before the Checks, if any."""

    admission: str
    transfer: str
    late_cell: str | None = None


STUDENTS = {
    "correct": Student(CORRECT_ADMISSION, CORRECT_TRANSFER),
    "partly-wrong": Student(WRONG_ADMISSION, WRONG_TRANSFER),
    "gaming": Student(BLANK_THE_CHECKS, 'def transfer_check(state):\n    return "CALL"'),
    "killer": Student(CORRECT_ADMISSION, WRONG_TRANSFER, late_cell=KILL_THE_KERNEL),
}


def without_api_key() -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    return environment | {"PATH": f"{VENV_BIN}{os.pathsep}{environment.get('PATH', '')}"}


def nbgrader(course: Path, *args: str) -> None:
    done = subprocess.run([str(VENV_BIN / "nbgrader"), *args], cwd=course, env=without_api_key(), capture_output=True, text=True)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def fill_in(notebook: nbformat.NotebookNode, student: Student) -> nbformat.NotebookNode:
    answers = {
        "admission_answer": student.admission,
        "transfer_answer": student.transfer,
        "prediction_notes": PREDICTION,
        "explanation_notes": EXPLANATION,
    }
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        elif grade_id == "counterexample_answer":
            cell.source += COUNTEREXAMPLE
    if student.late_cell:
        checks = next(i for i, cell in enumerate(notebook.cells) if cell.source.startswith("## Checks"))
        notebook.cells.insert(checks, nbformat.v4.new_code_cell(student.late_cell, id="late-cell"))
    return notebook


def work_as(student: Student, release: Path, folder: Path) -> Path:
    """What a student does: fill in the release, run it top to bottom (writing the evidence), save."""
    shutil.copytree(release, folder)
    notebook = fill_in(nbformat.read(folder / "ch03-a.ipynb", as_version=4), student)
    client = NotebookClient(notebook, kernel_name="python3", timeout=120, allow_errors=True, resources={"metadata": {"path": str(folder)}})
    try:
        client.execute(env=without_api_key())
    except DeadKernelError:
        pass  # the killer's own run dies too, after its evidence is written
    nbformat.write(notebook, folder / "ch03-a.ipynb")
    return folder


def trusted_grade(folder: Path, results: Path) -> dict[str, Any]:
    """`autograder grade` on the folder nbgrader graded, in its own process like on Gradescope."""
    command = [str(VENV_BIN / "autograder"), "grade", "--assignment", "ch03-a", "--submission", str(folder), "--results", str(results), "--quiet"]
    subprocess.run(command, check=True, env=without_api_key(), capture_output=True)
    return json.loads(results.read_text(encoding="utf-8"))


@dataclass
class Course:
    root: Path
    trusted: dict[str, dict[str, Any]]
    timings: dict[str, float]

    def grades(self, student: str) -> dict[str, Any]:
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}", "agentloop") as gradebook:
            notebook = gradebook.find_submission_notebook("ch03-a", "ch03-a", student)
            return {grade.name: (grade.auto_score, grade.needs_manual_grade) for grade in notebook.grades}

    def submitted(self, student: str) -> Path:
        return self.root / "submitted" / student / "ch03-a"

    def feedback(self, student: str) -> str:
        page = (self.root / "feedback" / student / "ch03-a" / "ch03-a.html").read_text(encoding="utf-8")
        return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    timings: dict[str, float] = {}
    started = time.monotonic()
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(ROOT / "source" / "ch03-a", root / "source" / "ch03-a", ignore=shutil.ignore_patterns("__pycache__"))
    nbgrader(root, "generate_assignment", "ch03-a", "--create", "--force")
    timings["generate_assignment"] = time.monotonic() - started

    mark = time.monotonic()
    desks = tmp_path_factory.mktemp("desks")
    for name, student in STUDENTS.items():
        shutil.copytree(work_as(student, root / "release" / "ch03-a", desks / name), root / "submitted" / name / "ch03-a")
    timings["students run their notebooks"] = time.monotonic() - mark

    mark = time.monotonic()
    nbgrader(root, "autograde", "ch03-a")
    timings["nbgrader autograde"] = time.monotonic() - mark

    # One grading at a time: two sandboxes side by side may share one sandbox user and its kill rule.
    mark = time.monotonic()
    results_dir = tmp_path_factory.mktemp("results")
    documents = {name: trusted_grade(root / "submitted" / name / "ch03-a", results_dir / f"{name}.json") for name in STUDENTS}
    timings["autograder grade"] = time.monotonic() - mark

    mark = time.monotonic()
    nbgrader(root, "generate_feedback", "ch03-a")
    timings["generate_feedback"] = time.monotonic() - mark
    timings["whole course"] = time.monotonic() - started
    print("\ncourse timings (s):", json.dumps({k: round(v, 1) for k, v in timings.items()}))
    yield Course(root, documents, timings)


def parts(document: dict[str, Any]) -> dict[str, float]:
    return {name: document["extra_data"]["parts"][name]["score"] for name in AUTOMATIC}


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_each_automatic_cell_records_exactly_what_autograder_grade_gives(course: Course, student: str) -> None:
    assert not course.trusted[student]["extra_data"].get("autograder_failed")
    recorded = course.grades(student)
    assert {name: recorded[name] for name in AUTOMATIC} == {name: (score, False) for name, score in parts(course.trusted[student]).items()}


@pytest.mark.slow
def test_the_students_get_the_scores_their_work_deserves(course: Course) -> None:
    totals = {name: sum(parts(document).values()) for name, document in course.trusted.items()}
    assert totals["correct"] == 100
    assert 50 < totals["partly-wrong"] < 100
    assert totals["gaming"] < totals["partly-wrong"]
    assert parts(course.trusted["killer"])["admission"] == 25 and parts(course.trusted["killer"])["transfer"] < 25


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_written_answers_wait_for_a_person(course: Course, student: str) -> None:
    recorded = course.grades(student)
    assert {name: recorded[name] for name in WRITTEN} == {name: (None, True) for name in WRITTEN}


@pytest.mark.slow
def test_a_kernel_that_blanks_the_checks_would_get_full_marks_from_stock_nbgrader_but_not_here(course: Course) -> None:
    executed = nbformat.read(course.submitted("gaming") / "ch03-a.ipynb", as_version=4)
    stock = {cell.metadata["nbgrader"]["grade_id"]: determine_grade(cell) for cell in executed.cells if cell.metadata.get("nbgrader", {}).get("grade_id") in AUTOMATIC}
    assert stock == {name: (points, points) for name, points in AUTOMATIC.items()}
    recorded = course.grades("gaming")
    assert recorded["admission"][0] < 0.4 * AUTOMATIC["admission"] and recorded["transfer"][0] < 0.4 * AUTOMATIC["transfer"]
    assert {name: recorded[name][0] for name in AUTOMATIC} == parts(course.trusted["gaming"])


@pytest.mark.slow
def test_a_kernel_killed_in_a_late_cell_still_gets_the_trusted_scores(course: Course) -> None:
    autograded = nbformat.read(course.root / "autograded" / "killer" / "ch03-a" / "ch03-a.ipynb", as_version=4)
    late = next(cell for cell in autograded.cells if cell.source == KILL_THE_KERNEL)
    assert [output.ename for output in late.outputs if output.output_type == "error"] == ["DeadKernelError"]
    assert {name: score for name, (score, _) in course.grades("killer").items() if name in AUTOMATIC} == parts(course.trusted["killer"])


def hidden_inputs() -> set[str]:
    """Every hidden input of the ch03-a suites, as the grader or a careless note would print it."""
    spec = importlib.util.spec_from_file_location("ch03a_reference", ROOT / "grading_tests" / "ch03-a" / "reference.py")
    assert spec and spec.loader
    reference = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = reference  # its dataclasses look their module up while being defined
    spec.loader.exec_module(reference)
    values = [v for _, v in reference.UNSEEN + reference.UNCHANGED] + list(reference.VARYING_NEXT_COST)
    values += [v for _, first, second in reference.PERTURBATIONS + reference.PRECEDENCE + reference.BOUNDARY for v in (first, second)]
    visible = {v for _, v in reference.VISIBLE_ADMISSION + reference.GIVEN_TRANSFER}
    forms = set()
    for rule in (reference.ADMISSION, reference.TRANSFER):
        for state in (rule.state(*v) for v in values if v not in visible):
            forms |= {repr(state), repr(dict(sorted(state.items()))), json.dumps(state), json.dumps(state, sort_keys=True)}
    return forms


def hidden_test_names() -> set[str]:
    suites = (ROOT / "grading_tests" / "ch03-a").glob("test_*.py")
    return {name for path in suites for name in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.MULTILINE)}


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_feedback_shows_the_trusted_scores_and_no_hidden_case(course: Course, student: str) -> None:
    page = course.feedback(student)
    assert page.count("decided by the course autograder outside this notebook") == len(AUTOMATIC)
    assert '{"used_calls": 0, "max_calls": 3, "spent": 0, "next_cost": 2, "budget": 6}' in page  # a visible case is readable
    assert [form for form in hidden_inputs() if form in page] == []
    assert [name for name in hidden_test_names() if name in page] == []


@pytest.mark.slow
def test_the_hidden_inputs_looked_for_are_the_ones_the_grader_prints_after_the_due_date(course: Course) -> None:
    details = "\n".join(t["output"] for t in course.trusted["partly-wrong"]["tests"] if t["visibility"] == "after_due_date")
    assert any(form in details for form in hidden_inputs())
