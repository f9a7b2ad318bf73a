"""Build the zip Gradescope wants: setup.sh and run_autograder at its root, the grader beside them."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Iterator

from autograder.declaration import PROJECT_ROOT, Assignment

#: What the grader needs at grading time, relative to the project root. Solutions (source/),
#: the project's own tests and any local virtualenv stay out of the zip.
ALWAYS = ("setup.sh", "run_autograder", "pyproject.toml", "README.md", "autograder", "grading_tests/pytest.ini", "schemas/gradescope-results.schema.json")
SKIPPED_PARTS = {"__pycache__", ".hypothesis", ".pytest_cache"}
EXECUTABLE = {"setup.sh", "run_autograder"}


def members(assignment: Assignment, root: Path = PROJECT_ROOT) -> Iterator[tuple[Path, str]]:
    """(file on disk, name in the zip) for everything the autograder zip holds."""
    paths = [root / p for p in ALWAYS] + [assignment.suite_dir, assignment.schema_dir]
    if assignment.submission.template_notebook:
        paths.append((root / assignment.submission.template_notebook).parent)
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            relative = file.relative_to(root)
            if not SKIPPED_PARTS.intersection(relative.parts) and file.suffix != ".pyc":
                yield file, relative.as_posix()


def build(assignment: Assignment, target: Path, root: Path = PROJECT_ROOT) -> list[str]:
    """Write the zip; returns the names it holds. The assignment id goes in ASSIGNMENT."""
    names = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for file, name in members(assignment, root):
            info = zipfile.ZipInfo.from_file(file, name)
            info.external_attr = (0o755 if name in EXECUTABLE else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, file.read_bytes())
            names.append(name)
        bundle.writestr(_plain_file("ASSIGNMENT"), assignment.id + "\n")
        names.append("ASSIGNMENT")
    return names


def _plain_file(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info
