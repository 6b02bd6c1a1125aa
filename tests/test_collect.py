"""Who a collected notebook belongs to: only names the LMS (or nbgrader) wrote may say.

Regression tests for identity spoofing in LMS downloads (a Moodle student naming the file in
their own submission folder after another student), for students of one name told apart by
their LMS user id, and for names with no Latin letters. The course is prepared once (nbgrader
``generate_assignment``) and copied for each test.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from autograder.collect import Item, collect, identify, lms_student_id, slug
from autograder.course import ASSIGNMENTS, Course

A = "hw1-rooflines"
NB = f"{A}.ipynb"


def notebook(who: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "who": who}).encode()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("prepared") / "course"
    Course(root).prepare(A)
    return root


@pytest.fixture
def course(prepared, tmp_path) -> Course:
    root = tmp_path / "course"
    shutil.copytree(prepared, root)
    return Course(root)


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def who(course: Course, student: str) -> str:
    return json.loads((course.submitted(student, A) / NB).read_bytes())["who"]


def lms_ids(course: Course) -> dict[str, str | None]:
    with course.gradebook() as gb:
        return {s.id: s.lms_user_id for s in gb.students}


def add_student(course: Course, student: str, **kw) -> None:
    with course.gradebook() as gb:
        gb.add_student(student, **kw)


def ident(path: str) -> tuple[Item, str | None]:
    item = Item(path, PurePosixPath(path), lambda: b"")
    return item, identify(item, A, [NB], list(ASSIGNMENTS))


MOODLE_ALICE = f"Alice Smith_101_assignsubmission_file_/{NB}"
MOODLE_BOB = f"Bob Brown_202_assignsubmission_file_/{NB}"


# --- a student cannot name another student ---------------------------------------------------


def test_a_file_named_after_another_student_in_a_moodle_folder_is_the_folders_student(course, tmp_path):
    add_student(course, "bob", lms_user_id="202")  # e.g. collected before, or from a roster
    download = make_zip(tmp_path / "moodle.zip", {
        MOODLE_ALICE: notebook("alice"),
        f"Mallory Jones_666_assignsubmission_file_/bob_1_2_{NB}": notebook("mallory"),
    })
    report = collect([download], course, A)
    assert not course.submitted("bob", A).exists(), report.render(course)
    ids = lms_ids(course)
    assert ids["bob"] == "202"  # never overwritten with the id the file name made up
    assert report.ok, report.render(course)
    assert report.students == ["alice_smith_101", "mallory_jones_666"]
    assert who(course, "mallory_jones_666") == "mallory"
    assert ids["mallory_jones_666"] == "666"


def test_a_file_named_after_another_student_cannot_make_their_submission_a_duplicate(course, tmp_path):
    download = make_zip(tmp_path / "moodle.zip", {
        MOODLE_ALICE: notebook("alice"),
        f"Mallory Jones_666_assignsubmission_file_/alice_smith_1_2_{NB}": notebook("mallory"),
        MOODLE_BOB: notebook("bob"),
    })
    report = collect([download], course, A)
    assert not report.duplicates, report.render(course)
    assert report.ok, report.render(course)
    assert who(course, "alice_smith_101") == "alice"
    assert who(course, "mallory_jones_666") == "mallory"
    assert who(course, "bob_brown_202") == "bob"


@pytest.mark.parametrize("path", [
    f"Mallory Jones_666_assignsubmission_file_/bob_1_2_{NB}",  # a Canvas name
    f"Mallory Jones_666_assignsubmission_file_/Bob Brown_202_assignsubmission_file_{NB}",  # a Moodle name
    f"Mallory Jones_666_assignsubmission_file_/Bob Brown_202_assignsubmission_file_/{NB}",  # a Moodle folder
    f"Mallory Jones_666_assignsubmission_file_/submitted/bob/{A}/{NB}",  # the nbgrader layout
    f"Mallory Jones_666_assignsubmission_file_/bob.ipynb",  # a plain name
    f"Mallory Jones_666_assignsubmission_file_bob_1_2_{NB}",  # a Canvas name after Moodle's prefix
    f"downloads/Mallory Jones_666_assignsubmission_file_/bob_1_2_{NB}",
])
def test_only_the_moodle_prefix_names_the_student(path):
    item, why = ident(path)
    assert why is None
    assert (item.student, item.details["lms_user_id"], item.target) == ("mallory_jones_666", "666", NB)


def test_only_the_canvas_prefix_names_the_student():
    item, why = ident(f"jonesmallory_666_9_Bob Brown_202_assignsubmission_file_{NB}")
    assert why is None and (item.student, item.details["lms_user_id"]) == ("jonesmallory_666", "666")


def test_a_moodle_zip_of_one_submission_keeps_its_folder(course, tmp_path):
    download = make_zip(tmp_path / "one.zip", {"Mallory Jones_666_assignsubmission_file_/bob.ipynb": notebook("m")})
    report = collect([download], course, A)
    assert report.students == ["mallory_jones_666"], report.render(course)


def test_a_moodle_folder_given_as_the_source_names_the_student(course, tmp_path):
    folder = tmp_path / "Mallory Jones_666_assignsubmission_file_"
    folder.mkdir()
    (folder / "bob.ipynb").write_bytes(notebook("m"))
    assert collect([folder], course, A).students == ["mallory_jones_666"]
    assert collect([folder / "bob.ipynb"], course, A).students == ["mallory_jones_666"]


# --- students are keyed by their LMS user id ------------------------------------------------


def test_two_students_of_one_name_are_two_students(course, tmp_path):
    download = make_zip(tmp_path / "lms.zip", {
        f"Wei Zhang_111_assignsubmission_file_/{NB}": notebook("wei 111"),
        f"Wei Zhang_222_assignsubmission_file_/{NB}": notebook("wei 222"),
        f"zhangwei_333_1_{NB}": notebook("wei 333"),
        f"zhangwei_444_2_{NB}": notebook("wei 444"),
    })
    report = collect([download], course, A)
    assert report.ok, report.render(course)
    assert report.students == ["wei_zhang_111", "wei_zhang_222", "zhangwei_333", "zhangwei_444"]
    for student in report.students:
        uid = student.rsplit("_", 1)[1]
        assert who(course, student) == f"wei {uid}"
        assert lms_ids(course)[student] == uid
    # collected again (a later download): same students, nothing replaced
    again = collect([download], course, A, force=True)
    assert again.ok and len(again.unchanged) == 4 and not again.collected


@pytest.mark.parametrize("name,student", [
    ("Вэй Чжан", "lms_777"),
    ("张伟", "lms_777"),
    ("José Núñez", "jose_nunez_777"),
    ("Łukasz Żółć", "lukasz_zolc_777"),
    ("Ann-Marie O'Neil", "ann_marie_o_neil_777"),
])
def test_names_without_latin_letters_get_an_id_from_the_lms_user_id(name, student):
    assert lms_student_id(name, "777") == student
    item, why = ident(f"{name}_777_assignsubmission_file_/{NB}")
    assert why is None and item.student == student and item.details["lms_user_id"] == "777"


def test_a_non_latin_name_is_collected_with_its_name_recorded(course, tmp_path):
    download = make_zip(tmp_path / "lms.zip", {
        f"Вэй Чжан_777_assignsubmission_file_/{NB}": notebook("wei"),
        f"张伟_888_assignsubmission_file_{NB}": notebook("zhang"),
    })
    report = collect([download], course, A)
    assert report.ok and report.students == ["lms_777", "lms_888"], report.render(course)
    with course.gradebook() as gb:
        wei = gb.find_student("lms_777")
        assert (wei.first_name, wei.last_name, wei.lms_user_id) == ("Вэй", "Чжан", "777")


def test_slug():
    assert slug("Jane Doe") == "jane_doe" and slug("Вэй Чжан") == "" and slug("Zoë Ångström") == "zoe_angstrom"
    assert len(lms_student_id("x" * 300, "12345")) <= 128


def test_the_gradebook_student_of_an_lms_user_id_keeps_their_id(course, tmp_path):
    add_student(course, "jdoe", lms_user_id="4242", first_name="Janet")
    download = make_zip(tmp_path / "lms.zip", {f"Jane Doe_4242_assignsubmission_file_/{NB}": notebook("jane")})
    report = collect([download], course, A)
    assert report.ok and report.students == ["jdoe"], report.render(course)
    with course.gradebook() as gb:
        jdoe = gb.find_student("jdoe")
        assert (jdoe.first_name, jdoe.last_name, jdoe.lms_user_id) == ("Janet", "Doe", "4242")
    assert "jane_doe_4242" not in lms_ids(course)


def test_an_existing_students_lms_user_id_is_never_changed(course, tmp_path):
    add_student(course, "jane_doe", lms_user_id="5")
    add_student(course, "sam_lee_4242", lms_user_id="9")
    download = make_zip(tmp_path / "lms.zip", {
        f"Jane Doe_6_assignsubmission_file_/{NB}": notebook("jane"),
        f"Sam Lee_4242_assignsubmission_file_/{NB}": notebook("sam"),
    })
    report = collect([download], course, A)
    assert report.students == ["jane_doe_6"]
    assert not report.ok
    assert [why for _, why in report.refused] == [
        "LMS user id conflict: student sam_lee_4242 in the gradebook has LMS user id 9, not 4242"]
    assert "LMS user id conflict" in report.render(course)
    assert not course.submitted("sam_lee_4242", A).exists()
    ids = lms_ids(course)
    assert (ids["jane_doe"], ids["sam_lee_4242"], ids["jane_doe_6"]) == ("5", "9", "6")


def test_two_files_of_one_lms_user_id_are_one_student(course, tmp_path):
    # two downloads, the student renamed in between: one student, two files -> duplicates
    report = collect([
        make_zip(tmp_path / "a.zip", {f"Jane Doe_4242_assignsubmission_file_/{NB}": notebook("1")}),
        make_zip(tmp_path / "b.zip", {f"Jane Smith_4242_assignsubmission_file_/{NB}": notebook("2")}),
    ], course, A)
    assert list(report.duplicates) == ["jane_doe_4242"] and not report.collected, report.render(course)
