"""Discovery finds the notebook and evidence files at any depth and under decorated names."""

import os

import pytest

from autograder import discovery


@pytest.mark.parametrize(
    "name, canonical",
    [
        ("ch03-a-submission-v1.json", "ch03-a-submission-v1.json"),
        ("ch03-a-submission-v1 (1).json", "ch03-a-submission-v1.json"),
        ("ch03-a-submission-v1(2).json", "ch03-a-submission-v1.json"),
        ("Copy of ch03-a-submission-v1.json", "ch03-a-submission-v1.json"),
        ("ch03-a-submission-v1 - Copy.json", "ch03-a-submission-v1.json"),
        ("CH03-A-Submission-V1.JSON", "ch03-a-submission-v1.json"),
    ],
)
def test_decorated_names_map_back_to_the_original(name, canonical):
    assert discovery.canonical_name(name) == canonical


def test_a_different_file_is_not_mistaken_for_an_evidence_file():
    assert discovery.canonical_name("ch03-a-submission-v2.json") != "ch03-a-submission-v1.json"


def test_files_in_nested_folders_with_spaces_and_suffixes_are_found(ch03a, submissions):
    upload = discovery.discover(submissions / "another-style", ch03a)
    assert upload.notebook is not None and upload.notebook.name == "ch03-a (1).ipynb"
    assert all(found.present for found in upload.files.values())
    assert upload.missing() == []


def test_every_missing_file_is_named(ch03a, tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    upload = discovery.discover(tmp_path, ch03a)
    missing = upload.missing()
    assert "ch03-unit-a-handoff-v1.json" in missing
    assert "ch03-a-submission-v1.json" in missing
    assert "ch03-a-llm-lab-report-v1.json" in missing
    assert any("notebook" in m for m in missing)


def test_the_exact_name_wins_over_a_decorated_copy_and_the_copy_is_noted(ch03a, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ch03-a-submission-v1.json").write_text("{}")
    (tmp_path / "ch03-a-submission-v1 (1).json").write_text("{}")
    upload = discovery.discover(tmp_path, ch03a)
    assert upload.files["submission"].path == tmp_path / "a" / "ch03-a-submission-v1.json"
    assert any("Several copies" in note for note in upload.notes)


def test_an_empty_copy_loses_to_a_non_empty_one(ch03a, tmp_path):
    (tmp_path / "ch03-a-submission-v1.json").write_text("")
    (tmp_path / "ch03-a-submission-v1 (1).json").write_text("{}")
    upload = discovery.discover(tmp_path, ch03a)
    assert upload.files["submission"].path.name == "ch03-a-submission-v1 (1).json"


def test_checkpoint_copies_of_the_notebook_are_ignored(ch03a, tmp_path):
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "ch03-a-checkpoint.ipynb").write_text('{"cells": []}')
    (tmp_path / "ch03-a.ipynb").write_text('{"cells": [], "def decide_admission": 1}')
    assert discovery.discover(tmp_path, ch03a).notebook == tmp_path / "ch03-a.ipynb"


def test_the_notebook_that_defines_the_graded_names_is_chosen(ch03a, tmp_path):
    (tmp_path / "scratch.ipynb").write_text('{"cells": []}')
    (tmp_path / "work.ipynb").write_text('{"cells": [{"source": "def decide_admission(case):"}]}')
    assert discovery.discover(tmp_path, ch03a).notebook == tmp_path / "work.ipynb"


def test_symlinks_are_not_followed(ch03a, tmp_path):
    target = tmp_path / "outside"
    target.mkdir()
    (target / "ch03-a-submission-v1.json").write_text("{}")
    upload_dir = tmp_path / "upload"
    upload_dir.mkdir()
    os.symlink(target / "ch03-a-submission-v1.json", upload_dir / "ch03-a-submission-v1.json")
    assert not discovery.discover(upload_dir, ch03a).files["submission"].present


def test_discovery_never_changes_the_upload(ch03a, submissions):
    root = submissions / "another-style"
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    discovery.discover(root, ch03a)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before
