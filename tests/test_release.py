"""The student version nbgrader makes of each assignment, and the committed copy of it in release/."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator
from traitlets.config import Config

from autograder import cli, release

COMMITTED = release.RELEASE_DIR / "ch03-a"
SOURCE = release.SOURCE_DIR / "ch03-a"
STUBS = {"prediction_notes", "explanation_notes", "admission", "transfer", "counterexample", "connection", "artifacts"}


def tree(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return release.generate("ch03-a", tmp_path_factory.mktemp("release") / "ch03-a")


def test_the_committed_release_is_exactly_what_generate_assignment_makes_now(regenerated: Path) -> None:
    committed, fresh = tree(COMMITTED), tree(regenerated)
    assert sorted(committed) == sorted(fresh), "release/ch03-a is out of date: run `autograder release ch03-a`"
    changed = [name for name in fresh if committed[name] != fresh[name]]
    assert changed == [], f"release/ch03-a is out of date in {changed}: run `autograder release ch03-a`"


def test_two_generations_give_the_same_bytes(regenerated: Path, tmp_path: Path) -> None:
    assert tree(release.generate("ch03-a", tmp_path / "again")) == tree(regenerated)


def test_the_release_ships_the_course_runtime(regenerated: Path) -> None:
    runtime = sorted(path.name for path in (SOURCE / "agentloop_runtime").glob("*.py"))
    assert runtime and sorted(path.name for path in (regenerated / "agentloop_runtime").iterdir()) == runtime


def test_the_release_holds_no_solution_and_no_hidden_region(regenerated: Path) -> None:
    text = (regenerated / "ch03-a.ipynb").read_text(encoding="utf-8")
    for marker in ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "Instructor copy only", 'return "MODEL_CALL_LIMIT"', "free attempt on a full budget"]:
        assert marker not in text


def test_the_release_leaves_out_what_running_the_source_in_place_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "source"
    shutil.copytree(SOURCE, source / "ch03-a")
    (source / "ch03-a" / "practical-work" / "ch03-a").mkdir(parents=True)
    (source / "ch03-a" / "practical-work" / "ch03-a" / "ch03-a-submission-v1.json").write_text("{}")
    (source / "ch03-a" / "ch03-unit-a-handoff-v1.json").write_text("{}")
    monkeypatch.setattr(release, "SOURCE_DIR", source)
    made = release.generate("ch03-a", tmp_path / "out")
    assert sorted(tree(made)) == sorted(tree(COMMITTED))


def test_a_source_cell_without_an_id_is_refused_before_nbgrader_runs(tmp_path: Path) -> None:
    notebook = json.loads((SOURCE / "ch03-a.ipynb").read_text(encoding="utf-8"))
    del notebook["cells"][3]["id"]
    (tmp_path / "ch03-a.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    with pytest.raises(release.ReleaseError, match=r"ch03-a\.ipynb: cell 4 has no id"):
        release.check_cell_ids(tmp_path)


def test_the_release_command_writes_the_folder_it_is_given(tmp_path: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    assert cli.run(["release", "ch03-a", "--into", str(tmp_path / "ch03-a")], stdout, stderr) == 0
    assert tree(tmp_path / "ch03-a") == tree(COMMITTED)
    assert f"Released ch03-a into {tmp_path / 'ch03-a'}" in stdout.getvalue()


def test_the_release_command_refuses_an_unknown_assignment(tmp_path: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    assert cli.run(["release", "no-such-unit", "--into", str(tmp_path)], stdout, stderr) == 2
    assert "unknown assignment 'no-such-unit'" in stderr.getvalue()


# nbgrader validate: what a student runs before submitting --------------------------------------


def validate(folder: Path) -> tuple[dict, dict[str, str]]:
    """nbgrader's validator on a copy of folder, and each grade cell's source → grade_id."""
    notebook = folder / "ch03-a.ipynb"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY", raising=False)  # the kernel inherits this environment
        outcome = Validator(config=Config()).validate(str(notebook))
    cells = nbformat.read(notebook, as_version=4).cells
    names = {cell.source.strip(): cell.metadata["nbgrader"]["grade_id"] for cell in cells if "nbgrader" in cell.metadata}
    return outcome, names


@pytest.mark.slow
def test_nbgrader_validate_passes_the_source_notebook(tmp_path: Path) -> None:
    outcome, _ = validate(Path(shutil.copytree(SOURCE, tmp_path / "ch03-a")))
    assert outcome == {}


@pytest.mark.slow
def test_nbgrader_validate_reports_each_unanswered_stub_of_the_release(tmp_path: Path) -> None:
    outcome, names = validate(Path(shutil.copytree(COMMITTED, tmp_path / "ch03-a")))
    assert set(outcome) == {"failed"}
    assert {names[entry["source"]] for entry in outcome["failed"]} == STUBS
