"""Grade a folder of uploads on the grader's own machine: a results.json each, a grade sheet, a review queue."""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
import zipfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

from tqdm import tqdm

from autograder import declaration, pipeline, results

#: An upload archive larger than this when unpacked is refused, not graded.
MAX_UNPACKED_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class StudentUpload:
    """One student's upload: a folder, or a .zip unpacked into a scratch folder."""

    name: str
    path: Path


class ArchiveError(Exception):
    pass


def find_uploads(root: Path) -> list[StudentUpload]:
    """Each folder or .zip directly under root is one student's upload, named after it (a zip keeps its suffix)."""
    uploads = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            uploads.append(StudentUpload(entry.name, entry))
        elif entry.suffix.lower() == ".zip" and entry.is_file():
            uploads.append(StudentUpload(entry.name, entry))
    return uploads


def unpack(archive: Path, into: Path) -> Path:
    """Unpack a zip safely: no member may land outside `into`, and the total size is bounded."""
    with zipfile.ZipFile(archive) as bundle:
        members = bundle.infolist()
        if sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
            raise ArchiveError(f"{archive.name}: unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB")
        for member in members:
            target = (into / member.filename).resolve()
            if not target.is_relative_to(into.resolve()):
                raise ArchiveError(f"{archive.name}: member {member.filename!r} points outside the archive")
        bundle.extractall(into)
    return into


def grade_one(assignment_id: str, upload: StudentUpload, out_dir: Path) -> dict[str, Any]:
    """Grade one upload into out_dir/<name>/results.json; returns the document."""
    assignment = declaration.load(assignment_id)
    if upload.path.is_dir():
        document = pipeline.grade(assignment, upload.path)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="upload-"))
        try:
            document = pipeline.grade(assignment, unpack(upload.path, scratch))
        except (ArchiveError, zipfile.BadZipFile) as error:
            document = results.failure(f"{upload.path.name}: not a readable zip archive ({error})", "", assignment_id)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    results.write(document, out_dir / upload.name / "results.json")
    return document


def grade_all(assignment_id: str, uploads: Sequence[StudentUpload], out_dir: Path, workers: int, progress: TextIO | None) -> Iterator[tuple[StudentUpload, dict[str, Any]]]:
    """Grade every upload, `workers` at a time, yielding as each finishes."""
    bar = tqdm(total=len(uploads), unit="upload", file=progress, disable=progress is None)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(grade_one, assignment_id, upload, out_dir): upload for upload in uploads}
        for future in as_completed(futures):
            bar.update(1)
            yield futures[future], future.result()
    bar.close()


def write_grades(rows: Sequence[tuple[StudentUpload, dict[str, Any]]], parts: Sequence[str], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["upload", "score", *parts, "missing_files", "autograder_failed"])
        for upload, document in sorted(rows, key=lambda row: row[0].name):
            extra = document.get("extra_data", {})
            scores = [extra.get("parts", {}).get(p, {}).get("score", "") for p in parts]
            writer.writerow([upload.name, document["score"], *scores, "; ".join(extra.get("missing_files", [])), bool(extra.get("autograder_failed"))])


def write_review_queue(rows: Sequence[tuple[StudentUpload, dict[str, Any]]], path: Path) -> int:
    """One row per answer a person must grade; returns how many."""
    count = 0
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["upload", "field", "state", "text"])
        for upload, document in sorted(rows, key=lambda row: row[0].name):
            for item in document.get("extra_data", {}).get("review_queue", []):
                state = "empty" if item["missing"] else "unchanged from the template" if item["unchanged"] else "answered"
                writer.writerow([upload.name, item["field"], state, item["text"]])
                count += 1
    return count


def run(assignment_id: str, root: Path, out_dir: Path, workers: int | None, progress: TextIO | None) -> tuple[int, int]:
    """Grade every upload under root; returns (uploads graded, answers queued for review)."""
    assignment = declaration.load(assignment_id)
    uploads = find_uploads(root)
    out_dir.mkdir(parents=True, exist_ok=True)
    workers = workers or max(1, min(len(uploads), os.cpu_count() or 1))
    rows = list(grade_all(assignment_id, uploads, out_dir, workers, progress))
    write_grades(rows, list(assignment.parts), out_dir / "grades.csv")
    queued = write_review_queue(rows, out_dir / "review-queue.csv")
    return len(rows), queued
