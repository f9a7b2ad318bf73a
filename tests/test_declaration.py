"""The declaration is validated when read, and its errors name the file and the field."""

import pytest

from autograder import declaration

GOOD = """
id = "demo"
title = "Demo"
[submission]
names = ["f"]
[parts.one]
title = "one"
points = 10
[parts.one.groups]
a = { title = "a", share = 0.5 }
b = { title = "b", share = 0.5 }
"""


def write(tmp_path, text, name="demo"):
    folder = tmp_path / "suites" / name
    folder.mkdir(parents=True)
    (folder / "assignment.toml").write_text(text)
    return tmp_path / "suites"


def test_ch03a_declares_one_hundred_automatic_points(ch03a):
    assert ch03a.total_points == 100
    assert ch03a.parts["review"].manual and ch03a.parts["review"].points == 0


def test_a_good_declaration_loads_with_its_folders(tmp_path):
    assignment = declaration.load("demo", write(tmp_path, GOOD), tmp_path / "schemas")
    assert assignment.suite_dir.name == "demo"
    assert assignment.schema_dir == tmp_path / "schemas" / "demo"


def test_an_unknown_assignment_lists_the_known_ones(tmp_path):
    suites = write(tmp_path, GOOD)
    with pytest.raises(declaration.DeclarationError, match=r"unknown assignment 'ch99'.*known assignments: demo"):
        declaration.load("ch99", suites)


def test_shares_that_do_not_sum_to_one_are_refused_with_the_part_named(tmp_path):
    suites = write(tmp_path, GOOD.replace("share = 0.5 }\nb", "share = 0.4 }\nb"))
    with pytest.raises(declaration.DeclarationError, match=r"parts\.one.*sum to 1"):
        declaration.load("demo", suites)


def test_an_unknown_key_is_refused(tmp_path):
    suites = write(tmp_path, GOOD + "\nwieght = 3\n")
    with pytest.raises(declaration.DeclarationError, match="wieght"):
        declaration.load("demo", suites)


def test_invalid_toml_names_the_file(tmp_path):
    suites = write(tmp_path, "id = ")
    with pytest.raises(declaration.DeclarationError, match="assignment.toml: not valid TOML"):
        declaration.load("demo", suites)


def test_an_id_that_disagrees_with_its_folder_is_refused(tmp_path):
    suites = write(tmp_path, GOOD, name="other")
    with pytest.raises(declaration.DeclarationError, match="make them agree"):
        declaration.load("other", suites)
