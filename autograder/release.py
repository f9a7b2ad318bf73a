"""Make the student version of an assignment with nbgrader's own generate_assignment."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from nbgrader.converters import GenerateAssignment
from nbgrader.converters.base import NbGraderException
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder import declaration

SOURCE_DIR = declaration.PROJECT_ROOT / "source"
RELEASE_DIR = declaration.PROJECT_ROOT / "release"
#: What running a source notebook in place leaves beside it; never part of a release.
#: (The evidence files the declaration names are added to this list per assignment.)
WORK_PRODUCTS = ("practical-work",)


class ReleaseError(Exception):
    """The release could not be made; the message names the file and what to do."""


def generate(assignment_id: str, destination: Path | None = None) -> Path:
    """Run generate_assignment on source/<id> and put the student version at destination.

    nbgrader works in a throwaway course folder without a database, so the project root gets
    no gradebook.db and the same source always gives the same bytes.
    """
    assignment = declaration.load(assignment_id)
    source = SOURCE_DIR / assignment.id
    destination = destination or RELEASE_DIR / assignment.id
    check_cell_ids(source)
    with tempfile.TemporaryDirectory(prefix="autograder-release-") as scratch:
        course = Path(scratch)
        shutil.copytree(source, course / "source" / assignment.id)
        _run_generate_assignment(course, assignment.id, ignore=_ignored(assignment))
        _replace(destination, course / "release" / assignment.id)
    return destination


def check_cell_ids(source: Path) -> None:
    """Refuse a notebook with a cell lacking an id: nbformat would invent a random one each run."""
    for notebook in sorted(source.glob("*.ipynb")):
        try:
            cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError) as error:
            raise ReleaseError(f"{notebook}: not a readable notebook ({error})") from None
        for number, cell in enumerate(cells, start=1):
            if not cell.get("id"):
                raise ReleaseError(
                    f"{notebook}: cell {number} has no id, so every release would get a new random one; "
                    "give each cell a fixed id (e.g. with `nbformat.validator.normalize`) and run again"
                )


def _ignored(assignment: declaration.Assignment) -> list[str]:
    nbgrader_defaults = CourseDirectory.class_traits()["ignore"].default()
    return [*nbgrader_defaults, *WORK_PRODUCTS, *(spec.filename for spec in assignment.files.values())]


def _run_generate_assignment(course: Path, assignment_id: str, *, ignore: list[str]) -> None:
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.assignment_id = assignment_id
    config.CourseDirectory.ignore = ignore
    config.GenerateAssignment.no_database = True  # what `--no-db` sets: no gradebook at all
    config.SaveCells.enabled = False
    config.GenerateAssignment.force = True
    converter = GenerateAssignment(coursedir=CourseDirectory(config=config), config=config)
    converter.log = _quiet_log()
    try:
        converter.start()
    except NbGraderException as error:
        raise ReleaseError(f"nbgrader generate_assignment failed for {assignment_id}: {error}") from None


def _quiet_log() -> logging.Logger:
    """nbgrader narrates every copied file at INFO; keep its warnings and errors only."""
    log = logging.getLogger("autograder.release.nbgrader")
    log.setLevel(logging.WARNING)
    return log


def _replace(destination: Path, generated: Path) -> None:
    if not generated.is_dir():
        raise ReleaseError(f"nbgrader wrote nothing to {generated}; check the notebooks in the source folder")
    if destination.exists():
        shutil.rmtree(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(generated, destination)
