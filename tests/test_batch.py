"""Batch grading: a results.json per upload, a grade sheet and a review queue."""

import csv
import io
import shutil
import zipfile

import pytest

from autograder import batch, cli


def read_csv(path):
    return list(csv.DictReader(path.open(encoding="utf-8")))


@pytest.fixture
def uploads(tmp_path, submissions):
    root = tmp_path / "uploads"
    root.mkdir()
    shutil.copytree(submissions / "correct", root / "alice")
    shutil.copytree(submissions / "gaming-eq", root / "bob")
    with zipfile.ZipFile(root / "carol.zip", "w") as bundle:
        for path in (submissions / "correct").rglob("*"):
            if path.is_file():
                bundle.write(path, path.relative_to(submissions / "correct"))
    (root / "notes.txt").write_text("not an upload")
    return root


def test_each_folder_and_zip_is_one_upload(uploads):
    assert [u.name for u in batch.find_uploads(uploads)] == ["alice", "bob", "carol.zip"]


def test_batch_writes_results_grades_and_a_review_queue(uploads, tmp_path):
    out = tmp_path / "out"
    code = cli.run(["batch", "--assignment", "ch03-a", "--submissions", str(uploads), "--out", str(out), "--workers", "2"], io.StringIO(), io.StringIO())
    assert code == 0
    grades = {row["upload"]: row for row in read_csv(out / "grades.csv")}
    assert float(grades["alice"]["score"]) == 100 and float(grades["carol.zip"]["score"]) == 100
    assert float(grades["bob"]["admission"]) == 0
    assert all((out / name / "results.json").is_file() for name in grades)
    queue = read_csv(out / "review-queue.csv")
    assert len(queue) == 3 * 7
    assert {row["state"] for row in queue if row["upload"] == "alice"} == {"answered"}


def test_a_zip_that_escapes_its_folder_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("../../outside.txt", "x")
    with pytest.raises(batch.ArchiveError, match="points outside"):
        batch.unpack(archive, tmp_path / "into")


def test_a_corrupt_zip_still_gets_a_valid_failure_document(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "dave.zip").write_bytes(b"not a zip")
    document = batch.grade_one("ch03-a", batch.find_uploads(tmp_path / "in")[0], tmp_path / "out")
    assert document["extra_data"]["autograder_failed"] is True
    assert (tmp_path / "out" / "dave.zip" / "results.json").is_file()


def test_a_bad_worker_count_is_refused_by_the_parser(tmp_path):
    err = io.StringIO()
    code = cli.run(["batch", "--assignment", "ch03-a", "--submissions", str(tmp_path), "--out", str(tmp_path), "--workers", "0"], io.StringIO(), err)
    assert code == 2 and "'0' is not a whole number of at least 1" in err.getvalue()
