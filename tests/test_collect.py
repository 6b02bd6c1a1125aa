"""Who a collected notebook belongs to: only names the LMS (or nbgrader) wrote may say.

Regression tests for identity spoofing in LMS downloads (a Moodle student naming the file in
their own submission folder after another student), for students of one name told apart by
their LMS user id, for names with no Latin letters, for LMS names that read as more than one
student (a Canvas name ending in another student's user id), and for names from a submission
reaching the instructor's terminal (escape sequences, CR, bidi overrides). The course is
prepared once (nbgrader ``generate_assignment``) and copied for each test.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from autograder.collect import Item, collect, identify
from autograder.lms.formats import Claims, lms_readings, lms_student_id, read_lms_name, slug
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
    """student -> Canvas user id, or Moodle participant id of A (never kept as a user id)."""
    from autograder.lms.roster import load_participants

    moodle = {s: e["participant"] for s, e in load_participants(course, A).items()}
    with course.gradebook() as gb:
        return {s.id: s.lms_user_id or moodle.get(s.id) for s in gb.students}


def add_student(course: Course, student: str, **kw) -> None:
    with course.gradebook() as gb:
        gb.add_student(student, **kw)


def ident(path: str) -> tuple[Item, str | None]:
    item = Item(path, PurePosixPath(path), lambda: b"")
    return item, identify(item, A, [NB], list(ASSIGNMENTS))


MOODLE_ALICE = f"Alice Smith_101_assignsubmission_file_/{NB}"
MOODLE_BOB = f"Bob Brown_202_assignsubmission_file_/{NB}"


# --- a student cannot name another student ---------------------------------------------------


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
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


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
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
    assert (item.student, item.details["participant"], item.target) == ("mallory_jones_666", "666", NB)


def test_only_the_canvas_prefix_names_the_student():
    item, why = ident(f"jonesmallory_666_9_Bob Brown_202_assignsubmission_file_{NB}")
    assert why is None and (item.student, item.details["lms_user_id"]) == ("jonesmallory_666", "666")


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_moodle_zip_of_one_submission_keeps_its_folder(course, tmp_path):
    download = make_zip(tmp_path / "one.zip", {"Mallory Jones_666_assignsubmission_file_/bob.ipynb": notebook("m")})
    report = collect([download], course, A)
    assert report.students == ["mallory_jones_666"], report.render(course)


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_moodle_folder_given_as_the_source_names_the_student(course, tmp_path):
    folder = tmp_path / "Mallory Jones_666_assignsubmission_file_"
    folder.mkdir()
    (folder / "bob.ipynb").write_bytes(notebook("m"))
    assert collect([folder], course, A).students == ["mallory_jones_666"]
    assert collect([folder / "bob.ipynb"], course, A).students == ["mallory_jones_666"]


# --- students are keyed by their LMS user id ------------------------------------------------


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
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
    assert why is None and item.student == student and item.details["participant"] == "777"


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_non_latin_name_is_collected_with_its_name_recorded(course, tmp_path):
    download = make_zip(tmp_path / "lms.zip", {
        f"Вэй Чжан_777_assignsubmission_file_/{NB}": notebook("wei"),
        f"张伟_888_assignsubmission_file_{NB}": notebook("zhang"),
    })
    report = collect([download], course, A)
    assert report.ok and report.students == ["lms_777", "lms_888"], report.render(course)
    with course.gradebook() as gb:
        wei = gb.find_student("lms_777")
        assert (wei.first_name, wei.last_name, wei.lms_user_id) == ("Вэй", "Чжан", None)  # 777: a participant id
    assert lms_ids(course)["lms_777"] == "777"


def test_slug():
    assert slug("Jane Doe") == "jane_doe" and slug("Вэй Чжан") == "" and slug("Zoë Ångström") == "zoe_angstrom"
    assert len(lms_student_id("x" * 300, "12345")) <= 128


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_the_gradebook_student_of_an_lms_user_id_keeps_their_id(course, tmp_path):
    add_student(course, "jdoe", lms_user_id="4242", first_name="Janet")
    download = make_zip(tmp_path / "lms.zip", {f"doejane_4242_1_{NB}": notebook("jane")})
    report = collect([download], course, A)
    assert report.ok and report.students == ["jdoe"], report.render(course)
    with course.gradebook() as gb:
        jdoe = gb.find_student("jdoe")
        assert (jdoe.first_name, jdoe.last_name, jdoe.lms_user_id) == ("Janet", None, "4242")
    assert "doejane_4242" not in lms_ids(course)


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_moodle_participant_id_is_never_taken_for_a_user_id(course, tmp_path):
    add_student(course, "jdoe", lms_user_id="4242")  # Canvas-style user id 4242
    download = make_zip(tmp_path / "lms.zip", {f"Jane Doe_4242_assignsubmission_file_/{NB}": notebook("jane")})
    report = collect([download], course, A)
    assert report.students == ["jane_doe_4242"], report.render(course)
    assert "participant id" in report.render(course)  # and it says why --worksheet is better


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_an_existing_students_lms_user_id_is_never_changed(course, tmp_path):
    add_student(course, "doejane", lms_user_id="5")
    add_student(course, "leesam_4242", lms_user_id="9")
    download = make_zip(tmp_path / "lms.zip", {
        f"doejane_6_1_{NB}": notebook("jane"),
        f"leesam_4242_2_{NB}": notebook("sam"),
    })
    report = collect([download], course, A)
    assert report.students == ["doejane_6"]
    assert not report.ok
    assert [why for _, why in report.refused] == [
        "LMS user id conflict: student leesam_4242 in the gradebook has LMS user id 9, not 4242"]
    assert "LMS user id conflict" in report.render(course)
    assert not course.submitted("leesam_4242", A).exists()
    ids = lms_ids(course)
    assert (ids["doejane"], ids["leesam_4242"], ids["doejane_6"]) == ("5", "9", "6")


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_two_files_of_one_lms_user_id_are_one_student(course, tmp_path):
    # two downloads, the student renamed in between: one student, two files -> duplicates
    report = collect([
        make_zip(tmp_path / "a.zip", {f"Jane Doe_4242_assignsubmission_file_/{NB}": notebook("1")}),
        make_zip(tmp_path / "b.zip", {f"Jane Smith_4242_assignsubmission_file_/{NB}": notebook("2")}),
    ], course, A)
    assert list(report.duplicates) == ["jane_doe_4242"] and not report.collected, report.render(course)


# --- a name cannot take another student's LMS user id (LMS names are read every way) ---------
# Canvas keeps a name's "_" and digits (it writes <name>_<user id>_<file id>_<file>), so a
# student can make their name end in another student's user id: "mallory_1234" of user 5555
# downloads as mallory_1234_5555_99_<file>, which also reads as user 1234 ("mallory").

ALICE = f"smithalice_1234_88_{NB}"  # Canvas: alice is user 1234
BOB = f"brownbob_2002_77_{NB}"
MALLORY = f"mallory_1234_5555_99_{NB}"  # user 5555, named "mallory_1234"


def test_lms_readings_are_every_way_a_name_reads():
    readings = lms_readings(MALLORY)
    assert [(r.lms, r.name, r.uid, r.file) for r in readings] == [
        ("Canvas", "mallory", "1234", f"99_{NB}"), ("Canvas", "mallory_1234", "5555", NB)]
    assert read_lms_name(readings, Claims())[:2] == (None, False)
    # the download's own, unambiguous file of user 1234 names them otherwise: 5555 is left
    reading, certain, why = read_lms_name(readings, Claims({"1234": {"smithalice"}}, {"Canvas"}))
    assert (reading.uid, reading.name, certain, why) == ("5555", "mallory_1234", False, None)
    # a Moodle-like name with "_" in it is one no Moodle writes: alone it reads as Canvas user
    # 1234; in a download whose certain files are Moodle's, a Canvas reading is refuted
    crafted = lms_readings(f"trudy_1234_7777_assignsubmission_file_{NB}")
    assert read_lms_name(crafted, Claims())[0].uid == "1234"
    assert read_lms_name(crafted, Claims({}, {"Moodle"}))[:2] == (None, False)
    # a late submission reads one user id two ways: one student, by the earliest marker
    reading, certain, _ = read_lms_name(lms_readings(f"doe_LATE_12_34_{NB}"), Claims())
    assert (reading.name, reading.uid, certain) == ("doe", "12", True)
    assert reading.late  # Canvas's mark is kept, for the late penalty when there is no time
    assert not read_lms_name(lms_readings(f"doe_12_34_{NB}"), Claims())[0].late
    assert not read_lms_name(lms_readings(f"doe_12_34_LATE_{NB}"), Claims())[0].late  # the student's own name


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_name_ending_in_another_students_lms_user_id_does_not_hold_them_back(course, tmp_path):
    download = make_zip(tmp_path / "canvas.zip", {
        ALICE: notebook("alice"), MALLORY: notebook("mallory"), BOB: notebook("bob")})
    report = collect([download], course, A)
    assert report.ok and not report.duplicates, report.render(course)
    assert report.students == ["brownbob_2002", "mallory_1234_5555", "smithalice_1234"]
    assert who(course, "smithalice_1234") == "alice" and who(course, "mallory_1234_5555") == "mallory"
    ids = lms_ids(course)
    assert (ids["smithalice_1234"], ids["mallory_1234_5555"]) == ("1234", "5555")


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
@pytest.mark.parametrize("roster", [False, True])
def test_a_name_that_reads_as_two_students_is_reported_and_collected_for_no_one(course, tmp_path, roster):
    if roster:  # alice is in the gradebook already (a roster, an earlier collect) but has not submitted
        add_student(course, "alice", lms_user_id="1234")
    download = make_zip(tmp_path / "canvas.zip", {MALLORY: notebook("mallory"), BOB: notebook("bob")})
    report = collect([download], course, A)
    text = report.render(course)
    assert report.students == ["brownbob_2002"], text  # bob is not held back either
    assert [origin for origin, _ in report.ambiguous] == [f"{download}:{MALLORY}"]
    assert not report.ok and not report.duplicates and not report.refused, text
    assert "AMBIGUOUS" in text
    assert "Canvas user 1234 ('mallory')" in text and "Canvas user 5555 ('mallory_1234')" in text
    assert not (Path(course.root) / "submitted" / "alice").exists()
    assert set(lms_ids(course)) == {"brownbob_2002"} | ({"alice"} if roster else set())


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_name_imitating_another_students_name_and_id_is_ambiguous(course, tmp_path):
    impostor = f"smithalice_1234_5555_99_{NB}"  # user 5555 took alice's name and id as their name
    download = make_zip(tmp_path / "canvas.zip", {ALICE: notebook("alice"), impostor: notebook("mallory")})
    report = collect([download], course, A)
    assert report.students == ["smithalice_1234"] and who(course, "smithalice_1234") == "alice", report.render(course)
    assert [origin for origin, _ in report.ambiguous] == [f"{download}:{impostor}"] and not report.duplicates


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_moodle_names_ending_in_another_students_id(course, tmp_path):
    download = make_zip(tmp_path / "moodle.zip", {
        f"Alice Smith_1234_assignsubmission_file_{NB}": notebook("alice"),
        f"Mallory 1234_5555_assignsubmission_file_{NB}": notebook("mallory"),  # what Moodle writes ("_" -> " ")
        # a folder is read from its end, whatever its name holds
        f"eve_1234_assignsubmission_file_x_6666_assignsubmission_file_/{NB}": notebook("eve"),
        # no Moodle writes "_" in a name: read as Canvas this is user 1234, whom the download names otherwise
        f"trudy_1234_7777_assignsubmission_file_{NB}": notebook("trudy"),
    })
    report = collect([download], course, A)
    text = report.render(course)
    assert report.students == ["alice_smith_1234", "eve_1234_assignsubmission_file_x_6666", "mallory_1234_5555"], text
    assert who(course, "alice_smith_1234") == "alice" and who(course, "mallory_1234_5555") == "mallory"
    assert who(course, "eve_1234_assignsubmission_file_x_6666") == "eve"
    assert [o for o, _ in report.ambiguous] == [f"{download}:trudy_1234_7777_assignsubmission_file_{NB}"], text
    assert not report.duplicates


# --- names from a submission reach the terminal escaped ---------------------------------------

HOSTILE_NAMES = {
    "\x1b]0;owned\x07notes.txt": b"x",  # an OSC sequence retitles the terminal (ignored: not a notebook)
    f"evil\x1b[2K\rbob_1_2_{NB}": notebook("evil"),  # erase the line, return: collected (Canvas user 1)
    "\u202ebnpi.ipynb": notebook("rlo"),  # a right-to-left override disguises the name: refused
    f"sub\x9b31m\x1b[8m/alice.ipynb": notebook("c1"),  # a C1 CSI and ESC in a folder name: refused
    f"Eve\rMallory_77_assignsubmission_file_/{NB}": notebook("cr"),  # a CR in a Moodle name: collected
}


def run_cli(*argv) -> tuple[int, str]:
    from autograder import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue()


def raw_controls(text: str) -> list[str]:
    return sorted({c for c in text if not c.isprintable() and c != "\n"})


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_names_from_a_submission_are_printed_escaped(course, tmp_path):
    download = make_zip(tmp_path / "lms.zip", HOSTILE_NAMES)
    rc, out = run_cli("collect", download, "-a", A, "--course", course.root)
    assert raw_controls(out) == [], out
    for escaped in ("\\x1b]0;owned\\x07notes.txt", "evil\\x1b[2K\\x0dbob", "\\u202ebnpi", "sub\\x9b31m\\x1b[8m",
                    "Eve\\x0dMallory"):
        assert escaped in out, out
    assert rc == 1  # refused files
    assert {"evil_2k_bob_1", "eve_mallory_77"} <= set(lms_ids(course))
    assert sum(f"{download}:" in line for line in out.splitlines()) == len(HOSTILE_NAMES)  # one line each


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_an_error_about_a_source_is_printed_escaped(course, tmp_path):
    rc, out = run_cli("collect", tmp_path / "no\x1b[2Jwhere\u202e", "-a", A, "--course", course.root)
    assert rc == 2 and raw_controls(out) == [] and "no\\x1b[2Jwhere\\u202e: no such file" in out, out


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_a_zip_whose_member_name_is_not_utf8_is_refused_cleanly(course, tmp_path):
    path = make_zip(tmp_path / "bad.zip", {"a\u00e9b.ipynb": notebook("x")})  # flagged UTF-8
    path.write_bytes(path.read_bytes().replace("a\u00e9b".encode(), b"a\xff\xfeb"))
    rc, out = run_cli("collect", path, "-a", A, "--course", course.root)
    assert rc == 2 and "cannot read the zip file" in out and raw_controls(out) == [], out


@pytest.mark.slow  # nbgrader prepares the course (the prepared fixture: ~20 s)
def test_copies_of_one_notebook_give_the_newest_by_the_lms_order(course, tmp_path):
    download = make_zip(tmp_path / "lms.zip", {
        f"doejane_4242_70_{NB}": notebook("first"),
        f"doejane_4242_71_{NB[:-6]}-1.ipynb": notebook("second"),  # Canvas's name for the re-upload
        f"Ann Lee_500_assignsubmission_file_/{NB}": notebook("old"),
        f"Ann Lee_500_assignsubmission_file_/{NB[:-6]} (1).ipynb": notebook("new"),
        f"leesam_77_80_{NB}": notebook("a"),
        f"leesam_77_81_{NB[:-6]}-draft.ipynb": notebook("b"),  # two files, not copies: which?
    })
    report = collect([download], course, A)
    text = report.render(course)
    assert who(course, "doejane_4242") == "second" and who(course, "ann_lee_500") == "new", text
    assert f"kept the newest by the LMS's order {download}:doejane_4242_71_" in text
    assert list(report.duplicates) == ["leesam_77"] and not course.submitted("leesam_77", A).exists()
