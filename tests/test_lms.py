"""Reading the LMS's own files (autograder/lms.py): rosters, worksheets, times, matching."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta, timezone

import pytest

from autograder.course import Course, CourseError
from autograder.lms.formats import (CANVAS, MOODLE, PLAIN, Worksheet, WorksheetRow, parse_lms_time, read_roster_file,
                                    read_worksheet)
from autograder.lms.roster import match_worksheet, register_roster


def write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


CANVAS_HEAD = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "hw1-rooflines (55)"]
CANVAS_ROWS = [["Dahl, Øyvind", "10168", "", "", "S1", ""], ["O'Neil, Ann-Marie", "10222", "", "", "S1", ""],
               ["Чжан, Вэй", "10301", "", "", "S1", ""]]


@pytest.mark.parametrize("points_row", [True, False])
def test_a_canvas_export_is_keyed_by_the_canvas_user_id(tmp_path, points_row):
    rows = [CANVAS_HEAD, *([["    Points Possible", "", "", "", "", "15"]] if points_row else []), *CANVAS_ROWS]
    roster = read_roster_file(write(tmp_path / "export.csv", rows))
    assert roster.lms == CANVAS and len(roster.skipped) == int(points_row)
    assert [(s.id, s.lms_user_id, s.first_name, s.last_name) for s in roster.students] == [
        ("oyvind_dahl_10168", "10168", "Øyvind", "Dahl"),
        ("ann_marie_o_neil_10222", "10222", "Ann-Marie", "O'Neil"),
        ("lms_10301", "10301", "Вэй", "Чжан")]


def test_a_moodle_participants_export_is_keyed_by_id_number_else_email(tmp_path):
    rows = [["First name", "Surname", "ID number", "Email address"],
            ["José", "Núñez", "", "jose.nunez@uni.example"], ["Zoë", "Ångström", "S-0042", "zoe@uni.example"],
            ["José", "Núñez", "", "Jose.Nunez@other.example"]]  # same local part, another person
    roster = read_roster_file(write(tmp_path / "p.csv", rows))
    assert roster.lms == MOODLE
    assert [(s.id, s.email, s.id_number) for s in roster.students] == [
        ("jose.nunez", "jose.nunez@uni.example", None), ("S-0042", "zoe@uni.example", "S-0042"),
        ("Jose.Nunez_2", "Jose.Nunez@other.example", None)]
    assert all(s.lms_user_id is None for s in roster.students)  # never a participant id


def test_a_worksheet_is_read_with_its_participants_and_times(tmp_path):
    path = write(tmp_path / "w.csv", [
        ["Identifier", "Full name", "Email address", "Status", "Last modified (submission)"],
        ["Participant 500007", "Ann-Marie O'Neil", "am@uni.example", "Submitted", "Tuesday, 3 February 2026, 2:05 PM"],
        ["Participant 500014", "Вэй Чжан", "wei@uni.example", "No submission", "-"],
        ["Participant 500021", "Bob Brown", "bob@uni.example", "Submitted", "sometime"]])
    sheet = read_worksheet(path, timezone(timedelta(hours=1)))
    assert [(r.participant, r.full_name, r.submitted) for r in sheet.rows] == [
        ("500007", "Ann-Marie O'Neil", datetime(2026, 2, 3, 13, 5)), ("500014", "Вэй Чжан", None),
        ("500021", "Bob Brown", None)]
    assert sheet.unreadable_times == ["line 4: 'sometime'"]
    assert read_roster_file(path).lms == MOODLE  # a worksheet is a roster too
    write(tmp_path / "bad.csv", [["Identifier", "Full name"], ["Student 7", "x"]])
    with pytest.raises(CourseError, match="is not 'Participant <n>'"):
        read_worksheet(tmp_path / "bad.csv")


def test_times_say_their_zone_or_take_the_one_given():
    assert parse_lms_time("Tuesday, 3 February 2026, 2:05 PM") == datetime(2026, 2, 3, 14, 5)
    assert parse_lms_time("2026-02-03 14:05 +0100") == datetime(2026, 2, 3, 13, 5)
    assert parse_lms_time("-") is None and parse_lms_time("") is None


def test_a_worksheet_row_finds_its_student_by_email_then_a_unique_name(tmp_path):
    course = Course(tmp_path / "course")
    (tmp_path / "course").mkdir()
    roster = read_roster_file(write(tmp_path / "p.csv", [
        ["First name", "Last name", "Email address"], ["Ann-Marie", "O'Neil", "am@uni.example"],
        ["Wei", "Zhang", "wei@uni.example"], ["Sam", "Lee", "sam1@uni.example"], ["Sam", "Lee", "sam2@uni.example"]]))
    register_roster(course, roster)
    sheet = Worksheet([WorksheetRow("1", "Ann-Marie O'Neil", "AM@uni.example", None, None),  # email, any case
                       WorksheetRow("2", "wei  zhang", "changed@uni.example", None, None),  # one such name
                       WorksheetRow("3", "Sam Lee", None, None, None),  # two Sam Lees: no guess
                       WorksheetRow("4", "Dan Stranger", "dan@else.example", None, None)])
    found, unmatched = match_worksheet(course, sheet)
    assert {p: s.id for p, s in found.items()} == {"1": "am", "2": "wei"}
    assert [r.participant for r in unmatched] == ["3", "4"]


def test_a_roster_of_another_lms_is_refused(tmp_path):
    course = Course(tmp_path / "course")
    (tmp_path / "course").mkdir()
    register_roster(course, read_roster_file(write(tmp_path / "c.csv", [CANVAS_HEAD, *CANVAS_ROWS])))
    moodle = read_roster_file(write(tmp_path / "m.csv", [["First name", "Last name", "Email address"],
                                                         ["A", "B", "a@b.example"]]))
    with pytest.raises(CourseError, match="came from Canvas"):
        register_roster(course, moodle)
    # the same export again (say, a newer one) keeps every id
    again = register_roster(course, read_roster_file(tmp_path / "c.csv"))
    assert [s.id for s in again] == ["oyvind_dahl_10168", "ann_marie_o_neil_10222", "lms_10301"]
    plain = read_roster_file(write(tmp_path / "ids.csv", [["id"], ["x1"]]))
    assert plain.lms == PLAIN
