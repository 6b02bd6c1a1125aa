"""A real class on Canvas and on Moodle, from the LMS's roster to the LMS's gradebook.

Canvas: the gradebook export (with its ``Points Possible`` row) is the roster; 15 students,
accented, hyphenated, apostrophed, Cyrillic and Chinese names, two of one display name; a
submission zip with Canvas's names (two ``LATE``, one of them within the student's extension),
one roster student who hands nothing in, one file from someone not on the roster, one
classmate's notebook handed in as one's own; then a second zip with one resubmission, the
first zip collected again over it, and a second homework after one student dropped the
course and another joined. Moodle: the participants export is the roster;
two assignments whose downloads give each student another participant id, each with its
grading worksheet, and one folder holding ``x.ipynb`` and ``x (1).ipynb``.

Every student hands in correct work (their own numbers, from the key ``keys`` gave them), so
every student must get full marks, less what the late policy charges; the copy is held back
until the instructor decides; the exports must carry the LMS's own ids.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import shlex
import zipfile
from pathlib import Path

import pytest

from autograder import cli
from autograder.course import Course
from autograder.demo import build_submissions
from autograder.export import grade_rows

A1, A2 = "hw1-rooflines", "hw2-hardware"

# Canvas: (Student as Canvas's export writes it, Canvas user id, name in Canvas's download)
CANVAS_CLASS = [
    ("Smith, Alice", "10000", "smithalice"),
    ("Smith, Alice", "10001", "smithalice"),  # another student of the same display name
    ("Dahl, Øyvind", "10168", "dahløyvind"),
    ("Núñez, José", "10201", "núñezjosé"),
    ("O'Neil, Ann-Marie", "10222", "oneilannmarie"),
    ("Smith-Jones, Bea", "10250", "smithjonesbea"),
    ("Чжан, Вэй", "10301", "чжанвэй"),
    ("张, 伟", "10302", "张伟"),
    ("Ångström, Zoë", "10400", "ångströmzoë"),
    ("Lee, Sam", "10500", "leesam"),
    ("Müller, Jürgen", "10600", "müllerjürgen"),
    ("D'Souza, Priya", "10700", "dsouzapriya"),
    ("Brown, Bob", "10800", "brownbob"),
    ("Nakamura, Ren", "10900", "nakamuraren"),  # on the roster, hands nothing in
    ("Kowalski, Jan", "11000", "kowalskijan"),  # hands in hw1, then drops the course
]
LATE = {"10168", "10600"}
ABSENT = "10900"
RESUBMITS = "10201"  # José hands in partial work first, then the correct notebook
COPIER = "10250"  # Bea hands in Alice's (10000) notebook, Alice's id and key in it
EXTENDED = "10600"  # Jürgen's file is marked LATE, and he has a two-day extension
DROPS = "11000"
JOINER = ("Okafor, Chidi", "11100", "okaforchidi")  # on the second roster only


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def write_csv(path: Path, rows: list[list]) -> Path:
    """A CSV as the LMS would give it."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def keys_of(path: Path) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return {r["lms_id"] or r["email"]: r for r in csv.DictReader(f)}


def totals(course: Course, assignment: str) -> dict[str, tuple[float, float, str]]:
    _, rows = grade_rows(course, assignment)
    return {r.student: (r.total, r.max, r.status) for r in rows}


def canvas_roster(path: Path, people) -> Path:
    return write_csv(path, [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A1} (123)"],
        ["    Points Possible", "", "", "", "", "15"],
        *([name, uid, f"S{uid}", f"login{uid}", "Section 1", ""] for name, uid, _ in people)])


def canvas_cells(text: str) -> dict[str, str]:
    """Canvas user id -> the assignment's cell of a Canvas import file."""
    return {r[1]: r[5] for r in list(csv.reader(io.StringIO(text)))[2:]}


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_canvas_class_from_gradebook_export_to_gradebook_import(tmp_path):
    import json
    import warnings

    course_dir = tmp_path / "course"
    roster = canvas_roster(tmp_path / "canvas_gradebook_export.csv", CANVAS_CLASS)
    rc, out, err = run_cli("keys", "--roster", roster, "-o", tmp_path / "keys.csv", "--course", course_dir)
    assert rc == 0, out + err
    assert "15 student(s) from a Canvas gradebook export" in out and "Points Possible" in out
    keys = keys_of(tmp_path / "keys.csv")
    assert set(keys) == {uid for _, uid, _ in CANVAS_CLASS}  # keyed by Canvas's ID, not the 'ID' as a name
    course = Course(course_dir)

    def notebook(uid: str, sample: str, where: Path, assignment: str = A1) -> Path:
        sid = keys[uid]["student"]  # what the student reads in their key message
        return build_submissions(assignment, where / uid, students=[sample], course=course,
                                 ids={sample: sid})[sample]

    first = tmp_path / "round1.zip"
    with zipfile.ZipFile(first, "w") as z:
        for n, (_, uid, canvas_name) in enumerate(CANVAS_CLASS):
            if uid == ABSENT:
                continue
            late = "LATE_" if uid in LATE else ""
            sample = "partial" if uid == RESUBMITS else "correct"
            built = notebook("10000" if uid == COPIER else uid, sample, tmp_path / ("copy" if uid == COPIER else "built1"))
            z.write(built, f"{canvas_name}_{late}{uid}_{7000 + n}_{A1}.ipynb")
        z.write(notebook("10000", "correct", tmp_path / "stranger"), f"strangerdan_99999_7999_{A1}.ipynb")
    opts = ("-a", A1, "--course", course_dir)
    rc, out, err = run_cli("collect", first, *opts)
    assert rc == 1, out + err  # someone not on the roster: reported, collected for no one
    assert "NOT ON THE COURSE ROSTER (1)" in out and "strangerdan (Canvas user id 99999)" in out
    assert "on the roster, no notebook of hw1-rooflines (1): Ren Nakamura" in out
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 0, out + err
    sid = {uid: keys[uid]["student"] for _, uid, _ in CANVAS_CLASS}
    assert "FLAGGED, NOT FULLY GRADED (1)" in out and f"  {sid[COPIER]}: numbers: " in out, out
    before = totals(course, A1)
    for uid, student in sid.items():
        if uid == ABSENT:
            assert before[student][2] == "no submission"
        elif uid == RESUBMITS:
            assert before[student][0] < before[student][1]
        elif uid == COPIER:  # the grader's word, not "graded"
            assert before[student][2] == "flagged (held back)", before[student]
        else:
            assert before[student][0] == before[student][1] > 0, (student, before[student])
    full = before[sid["10000"]][1]
    copied = before[sid[COPIER]][0]
    assert 0 < copied < full  # the parts where the two students' numbers give the same answers
    assert run_cli("feedback", *opts)[0] == 0

    second = tmp_path / "round2.zip"  # Canvas's download after José resubmitted: the new file only
    with zipfile.ZipFile(second, "w") as z:
        z.write(notebook(RESUBMITS, "correct", tmp_path / "built2"), f"núñezjosé_{RESUBMITS}_8001_{A1}.ipynb")
    rc, out, err = run_cli("collect", second, *opts, "--force")
    assert rc == 0, out + err
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 0, out + err
    assert "regraded 1 resubmitted notebook(s)" in out and sid[RESUBMITS] in out
    assert "skipped 13 already graded and unchanged" in out
    assert re.search(r"^time: [0-9.]+ s in all$", out, re.M), out  # one submission: no rate, no "2 in parallel"
    # the feedback page José was given shows his old score: grade says so
    assert f"feedback pages written before this grading (1): {sid[RESUBMITS]}" in out, out
    after = totals(course, A1)
    assert after[sid[RESUBMITS]][0] == full > before[sid[RESUBMITS]][0]  # the resubmission's score changed
    history = list((course.autograded(sid[RESUBMITS], A1) / "history").glob("*.json"))
    assert len(history) == 1  # the earlier result is kept

    # the first download collected again, --force and all: the older file never replaces the newer
    rc, out, err = run_cli("collect", first, *opts, "--force")
    assert rc == 1, out + err  # (the stranger again)
    assert "KEPT THE NEWER NOTEBOOK (1)" in out and "Canvas file id 8001 collected, newer than this file's 7003" in out
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 0 and "regraded" not in out and "skipped 14 already graded" in out, out + err
    assert totals(course, A1)[sid[RESUBMITS]][0] == full

    rc, out, err = run_cli("due", *opts, "--date", "2026-02-01 23:59 UTC", "--per-day", "10")
    assert rc == 0, out + err
    rc, out, err = run_cli("due", *opts, "--extend", sid[EXTENDED], "--days", "2")
    assert rc == 0 and f"{sid[EXTENDED]}: extension of 2 day(s) on {A1}" in out, out + err
    assert "0:00:00" not in out and f"extensions (1): {sid[EXTENDED]} 2 day(s)" in out
    rc, out, err = run_cli("export", *opts, "--format", "canvas", "--lms-assignment-id", "123",
                           "-o", tmp_path / "import.csv")
    assert rc == 1, out + err  # a flagged submission waits for the instructor
    assert "no submission (1, exported blank): Nakamura, Ren (ren_nakamura_10900)" in err
    # one line, with a count; the extended student's LATE file is not charged, and that is said
    assert err.count("no submission time") == 1 and "1 marked LATE by Canvas are charged" in err
    assert f"NOT CHARGED (1): Müller, Jürgen ({sid[EXTENDED]}, extension 2 day(s))" in err
    assert f"due -a {A1} --submitted STUDENT WHEN" in err
    assert f"HELD BACK (1, exported blank)" in err and f"Smith-Jones, Bea ({sid[COPIER]}): numbers: " in err
    with open(tmp_path / "import.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0][:2] == ["Student", "ID"] and rows[0][5] == f"{A1} (123)"
    by_id = {r[1]: r for r in rows[2:]}
    assert len(by_id) == len(rows) - 2 == 15  # each student once, under Canvas's own ID
    assert set(by_id) == {uid for _, uid, _ in CANVAS_CLASS}
    for _, uid, _ in CANVAS_CLASS:
        expected = (None if uid in (ABSENT, COPIER) else full if uid == EXTENDED
                    else 0.9 * full if uid in LATE else full)  # LATE: one day, 10%
        assert (by_id[uid][5] or None) == (expected if expected is None else f"{expected:g}"), (uid, by_id[uid])
    assert by_id["10168"][0] == "Dahl, Øyvind" and by_id["10302"][0] == "张, 伟"
    rc, out, err = run_cli("export", *opts, "--format", "canvas", "--missing", "zero", "-o", "-")
    cells = canvas_cells(out)
    assert rc == 1 and cells[ABSENT] == "0" and cells[COPIER] == ""  # the other choice; a held one stays blank
    rc, out, err = run_cli("export", *opts, "-o", tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as f:
        status = {r["student"]: r["status"] for r in csv.DictReader(f)}
    assert rc == 1 and status[sid[COPIER]] == "flagged (held back)" and "HELD BACK (1, in the status column)" in err
    assert run_cli("feedback", *opts)[0] == 0
    page = (course.feedback(sid[EXTENDED], A1) / "feedback.html").read_text("utf-8")
    assert "knows nothing of your extension" in page and "charged the least" not in page
    page = (course.feedback(sid[COPIER], A1) / "feedback.html").read_text("utf-8")
    assert "status: flagged (held back)" in page

    # the instructor decides: Jürgen's time from Canvas, 10 h after his extended due date; Bea's
    # copy accepted as graded
    rc, out, err = run_cli("due", *opts, "--submitted", sid[EXTENDED], "2026-02-04 10:00 UTC")
    assert rc == 0 and "2026-02-04 10:00:00 UTC" in out, out + err
    rc, out, err = run_cli("override", *opts, "-s", sid[COPIER], "--accept", "--reason", "talked to both: fine")
    assert rc == 0, out + err
    rc, out, err = run_cli("export", *opts, "--format", "canvas", "-o", "-")
    cells = canvas_cells(out)
    assert rc == 0 and "HELD BACK" not in err and "NOT CHARGED" not in err, err
    assert cells[EXTENDED] == f"{0.9 * full:g}" and cells[COPIER] == f"{copied:g}"
    assert totals(course, A1)[sid[COPIER]][2] == "flagged (accepted)"
    with course.gradebook() as gb:
        assert sorted(s.lms_user_id for s in gb.students) == sorted(uid for _, uid, _ in CANVAS_CLASS)

    # March: Jan dropped the course, Chidi joined
    newer = canvas_roster(tmp_path / "canvas_gradebook_export-march.csv",
                          [p for p in CANVAS_CLASS if p[1] != DROPS] + [JOINER])
    rc, out, err = run_cli("keys", "--roster", newer, "-o", tmp_path / "keys.csv", "--course", course_dir)
    assert rc == 0, out + err
    assert "joined since the last roster (1): Chidi Okafor (chidi_okafor_11100)" in out, out
    assert f"LEFT since the last roster (1): Jan Kowalski ({sid[DROPS]})" in out, out
    keys = keys_of(tmp_path / "keys.csv")
    assert DROPS not in keys and JOINER[1] in keys
    kept = json.loads((course_dir / "roster.json").read_text("utf-8"))["students"]
    assert kept[sid[DROPS]]["left"] and "left" not in kept[keys[JOINER[1]]["student"]]
    opts2 = ("-a", A2, "--course", course_dir)
    with warnings.catch_warnings(record=True) as caught:  # an extension before any submission
        warnings.simplefilter("always")
        rc, out, err = run_cli("due", *opts2, "--extend", sid["10000"], "--days", "1")
    assert rc == 0 and not [w for w in caught if "SAWarning" in type(w.message).__name__], caught
    hw2 = tmp_path / "hw2.zip"
    with zipfile.ZipFile(hw2, "w") as z:
        for n, (_, uid, canvas_name) in enumerate([p for p in CANVAS_CLASS if p[1] != DROPS] + [JOINER]):
            if uid != ABSENT:
                z.write(notebook(uid, "correct", tmp_path / "hw2", A2), f"{canvas_name}_{uid}_{9000 + n}_{A2}.ipynb")
    rc, out, err = run_cli("collect", hw2, *opts2)
    assert rc == 0, out + err
    assert f"on the roster, no notebook of {A2} (1): Ren Nakamura" in out  # not Jan: he left
    rc, out, err = run_cli("grade", *opts2, "-q")
    assert rc == 0 and "every submission was fully graded" in out, out + err
    rc, out, err = run_cli("export", *opts2, "--format", "canvas", "--missing", "zero", "-o", "-")
    cells = canvas_cells(out)
    assert rc == 0, out + err
    assert DROPS not in cells and cells[ABSENT] == "0" and float(cells[JOINER[1]]) > 0  # no 0 for who left
    rc, out, err = run_cli("export", *opts, "--format", "canvas", "-o", "-")
    assert canvas_cells(out)[DROPS] == f"{full:g}"  # kept for the homework he handed in


# Moodle: (first name, last name, email); participant ids differ per assignment
MOODLE_CLASS = [
    ("Alice", "Smith", "alice.smith@uni.example"),
    ("Øyvind", "Dahl", "oyvind.dahl@uni.example"),
    ("Ann-Marie", "O'Neil", "am.oneil@uni.example"),
    ("Вэй", "Чжан", "wei.zhang@uni.example"),
    ("José", "Núñez", "jose.nunez@uni.example"),
    ("Bob", "Brown", "bob.brown@uni.example"),
]
PARTICIPANTS = {A1: 500000, A2: 600000}
TIMES = {A1: "Sunday, 1 February 2026, 11:30 PM", A2: "Monday, 2 February 2026, 9:00 AM"}


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_moodle_class_over_two_assignments(tmp_path):
    course_dir = tmp_path / "course"
    roster = write_csv(tmp_path / "participants.csv", [
        ["First name", "Last name", "ID number", "Email address", "Roles", "Groups"],
        *([first, last, "", email, "Student", "No groups"] for first, last, email in MOODLE_CLASS)])
    rc, out, err = run_cli("keys", "--roster", roster, "-o", tmp_path / "keys.csv", "--course", course_dir)
    assert rc == 0, out + err
    keys = keys_of(tmp_path / "keys.csv")
    assert set(keys) == {e for _, _, e in MOODLE_CLASS}
    assert keys["alice.smith@uni.example"]["student"] == "alice.smith"
    course = Course(course_dir)
    for assignment in (A1, A2):
        base = PARTICIPANTS[assignment]
        sheet = tmp_path / f"worksheet-{assignment}.csv"
        download = tmp_path / f"{assignment}.zip"
        with open(sheet, "w", newline="", encoding="utf-8") as f, zipfile.ZipFile(download, "w") as z:
            w = csv.writer(f)
            w.writerow(["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                        "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
                        "Feedback comments"])
            for n, (first, last, email) in enumerate(MOODLE_CLASS):
                pid, full = base + 7 * n, f"{first} {last}"
                w.writerow([f"Participant {pid}", full, email, "Submitted for grading", "", "20", "Yes",
                            TIMES[assignment], "-", ""])
                sid = keys[email]["student"]
                folder = f"{full}_{pid}_assignsubmission_file_"
                built = build_submissions(assignment, tmp_path / "built" / assignment / sid,
                                          students=["correct", "partial"], course=course,
                                          ids={"correct": sid, "partial": sid})
                if n == 0 and assignment == A2:  # uploaded twice: Moodle renamed the newer one
                    z.write(built["partial"], f"{folder}/{assignment}.ipynb")
                    z.write(built["correct"], f"{folder}/{assignment} (1).ipynb")
                else:
                    z.write(built["correct"], f"{folder}/{assignment}.ipynb")
        opts = ("-a", assignment, "--course", course_dir)
        rc, out, err = run_cli("collect", download, *opts)
        assert rc == 1 and "give its grading worksheet (--worksheet" in out, out + err
        rc, out, err = run_cli("collect", download, *opts, "--worksheet", sheet)
        assert rc == 0, out + err
        assert "submission times: 6 from the worksheet" in out
        if assignment == A2:
            assert f"kept the newest by the LMS's order {download}:Alice Smith_{base}_assignsubmission_file_/" \
                   f"{assignment} (1).ipynb" in out
        rc, out, err = run_cli("grade", *opts, "-q")
        assert rc == 0, out + err
        scores = totals(course, assignment)
        assert len(scores) == 6 and all(t == m > 0 and s == "graded" for t, m, s in scores.values()), scores
        rc, out, err = run_cli("export", *opts, "--format", "moodle", "-o", tmp_path / f"moodle-{assignment}.csv")
        assert rc == 0, out + err
        with open(tmp_path / f"moodle-{assignment}.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert sorted(r["Identifier"] for r in rows) == sorted(f"Participant {base + 7 * n}" for n in range(6))
        by_name = {r["Full name"]: r for r in rows}
        assert by_name["Вэй Чжан"]["Identifier"] == f"Participant {base + 21}"
        assert all(float(r["Grade"]) == float(r["Maximum Grade"]) for r in rows)
        rc, out, err = run_cli("export", *opts, "--format", "canvas", "-o", "-")
        assert rc == 1 and "no Canvas user id" in err  # participant ids never pass for Canvas ids
    with course.gradebook() as gb:
        assert sorted(s.id for s in gb.students) == sorted(k["student"] for k in keys.values())
    stamp = (course.submitted("alice.smith", A1) / "timestamp.txt").read_text()
    assert stamp.startswith("2026-02-01 23:30:00")

    # an older download of hw1 (Alice's first, partial upload, as its worksheet says) over the newer
    base, email = PARTICIPANTS[A1], MOODLE_CLASS[0][2]
    folder = f"Alice Smith_{base}_assignsubmission_file_"
    older, sheet = tmp_path / "older.zip", tmp_path / "older-worksheet.csv"
    write_csv(sheet, [["Identifier", "Full name", "Email address", "Status", "Last modified (submission)"],
                      [f"Participant {base}", "Alice Smith", email, "Submitted for grading",
                       "Sunday, 1 February 2026, 9:00 PM"]])
    with zipfile.ZipFile(older, "w") as z:
        z.write(tmp_path / "built" / A1 / "alice.smith" / "partial.ipynb", f"{folder}/{A1}.ipynb")
    rc, out, err = run_cli("collect", older, "-a", A1, "--course", course_dir, "--worksheet", sheet, "--force")
    assert rc == 0 and "KEPT THE NEWER NOTEBOOK (1)" in out, out + err
    assert "submitted 2026-02-01 23:30 UTC collected, newer than this one's 2026-02-01 21:00" in out, out
    assert (course.submitted("alice.smith", A1) / "timestamp.txt").read_text() == stamp
    rc, out, err = run_cli("grade", "-a", A1, "--course", course_dir, "-q")
    assert rc == 0 and "regraded" not in out, out + err


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_class_keyed_by_the_wrong_ids_is_told_so_first_and_grade_fails(tmp_path):
    """The setup the issue found: keys made for Canvas's bare user ids (a plain roster), while
    the Canvas download names the same students ``<name>_<user id>``. Every notebook then holds
    another id than its submitter's: grade must say so first and exit 1, each student's first
    problem must be that, and no line about read-only prompts that only carry other numbers."""
    import json

    from test_variants_course import answered

    course_dir = tmp_path / "course"
    plain = tmp_path / "ids.csv"
    plain.write_text("id\n10000\n10001\n10002\n10003\n")
    rc, out, err = run_cli("generate", A1, "--roster", plain, "--course", course_dir)
    assert rc == 0, out + err
    download = tmp_path / "canvas.zip"
    with zipfile.ZipFile(download, "w") as z:
        for n, name in enumerate(("smithalice", "dahlrolf", "leesam", "brownbob")):
            uid = f"1000{n}"
            nb = json.loads((course_dir / "personal" / A1 / uid / f"{A1}.ipynb").read_text())
            z.writestr(f"{name}_{uid}_{700 + n}_{A1}.ipynb", json.dumps(answered(nb)))
    opts = ("-a", A1, "--course", course_dir)
    assert run_cli("collect", download, *opts)[0] == 0
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 1, out + err
    assert out.startswith("MOST OF THE CLASS IS FLAGGED: 4 of 4"), out
    trouble = out[out.index("NOT FULLY GRADED"):].splitlines()[1:]
    assert len(trouble) == 4
    for line in trouble:
        student, why = line.strip().split(": ", 1)
        assert why.startswith("numbers: the notebook's STUDENT_ID is '1000"), line
    assert "read-only" not in out


# --- the README's recipes, run as written -----------------------------------------------------

README = Path(__file__).resolve().parents[1] / "README.md"
README_CANVAS = [("Smith, Alice", "10000", "smithalice"), ("Núñez, José", "10201", "núñezjosé"),
                 ("Чжан, Вэй", "10301", "чжанвэй"), ("Brown, Bob", "10800", "brownbob")]
README_MOODLE = [("Alice", "Smith", "alice.smith@uni.example"), ("Øyvind", "Dahl", "oyvind.dahl@uni.example"),
                 ("José", "Núñez", "jose.nunez@uni.example")]


def readme_commands() -> list[list[str]]:
    """Every command line of the README's recipes, from "A Canvas course" through "Deadlines,
    extensions and corrections", in order (comments dropped)."""
    text = README.read_text("utf-8")
    recipes = text[text.index("### A Canvas course"):text.index("**The gradebook**")]
    lines = [line for block in re.findall(r"```sh\n(.*?)```", recipes, re.S) for line in block.splitlines()]
    return [words for words in (shlex.split(line, comments=True) for line in lines) if words]


class TheLms:
    """The files a recipe's command names that the LMS (and the students) give the instructor,
    made when a command first needs them, from the keys the recipe has handed out by then."""

    def __init__(self, root: Path):
        self.root = root

    def course(self) -> Course:
        return Course(Path(os.environ["SCALEBOOK_COURSE"]))

    def notebook(self, key: str, assignment: str, sample: str = "correct") -> Path:
        sid = keys_of(self.root / "keys.csv")[key]["student"]
        return build_submissions(assignment, self.root / "built" / assignment / sid, students=[sample],
                                 course=self.course(), ids={sample: sid})[sample]

    def make(self, name: str) -> None:
        if name == "canvas_gradebook_export.csv":
            canvas_roster(self.root / name, README_CANVAS)
        elif name == "canvas_gradebook_export-march.csv":  # Bob dropped, Chidi joined
            canvas_roster(self.root / name, README_CANVAS[:3] + [JOINER])
        elif name == "submissions.zip":
            with zipfile.ZipFile(self.root / name, "w") as z:
                for n, (_, uid, canvas) in enumerate(README_CANVAS):
                    late = "LATE_" if uid == "10800" else ""
                    sample = "partial" if uid == RESUBMITS else "correct"
                    z.write(self.notebook(uid, A1, sample), f"{canvas}_{late}{uid}_{7000 + n}_{A1}.ipynb")
        elif name == "submissions-2.zip":
            with zipfile.ZipFile(self.root / name, "w") as z:
                z.write(self.notebook(RESUBMITS, A1), f"núñezjosé_{RESUBMITS}_8001_{A1}.ipynb")
        elif name in ("participants.csv", "participants-march.csv"):
            people = README_MOODLE if name == "participants.csv" else README_MOODLE[1:]  # Alice dropped
            write_csv(self.root / name, [["First name", "Last name", "ID number", "Email address", "Roles"],
                                         *([f, la, "", e, "Student"] for f, la, e in people)])
        elif m := re.fullmatch(r"hw([12])-(submissions\.zip|worksheet\.csv)", name):
            assignment = A1 if m[1] == "1" else A2
            base = PARTICIPANTS[assignment]
            with zipfile.ZipFile(self.root / f"hw{m[1]}-submissions.zip", "w") as z, \
                    open(self.root / f"hw{m[1]}-worksheet.csv", "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["Identifier", "Full name", "Email address", "Status", "Last modified (submission)"])
                for n, (first, last, email) in enumerate(README_MOODLE):
                    pid = base + 7 * n
                    w.writerow([f"Participant {pid}", f"{first} {last}", email, "Submitted for grading",
                                TIMES[assignment]])
                    z.write(self.notebook(email, assignment),
                            f"{first} {last}_{pid}_assignsubmission_file_/{assignment}.ipynb")


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_readme_recipes_run_as_written_top_to_bottom(tmp_path, monkeypatch):
    """Each command line of the README's Canvas, Moodle and deadlines recipes, in order, in a
    folder where the LMS's files appear as the recipe asks for them: every one must succeed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SCALEBOOK_DB", raising=False)
    lms, said = TheLms(tmp_path), {}
    commands = readme_commands()
    assert sum(w[:1] == ["export"] for w in commands) == 2 and len(commands) > 25
    for words in commands:
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            monkeypatch.setenv(name, os.path.expanduser(value))
            continue
        assert words[:3] == [".venv/bin/python", "-m", "autograder"], f"a README line the test cannot run: {words}"
        argv = words[3:]
        for word in argv:
            if re.fullmatch(r"[\w.-]+\.(csv|zip)", word) and not (tmp_path / word).exists() and argv[0] != "export" \
                    and word != "keys.csv":
                lms.make(word)
        rc, out, err = run_cli(*argv)
        assert rc == 0, f"README: {' '.join(words)}\n{out}{err}"
        said[" ".join(argv)] = said.get(" ".join(argv), "") + out + err
    # what the recipes promise, read back
    canvas = canvas_cells((tmp_path / "canvas-hw1.csv").read_text("utf-8"))
    full = float(canvas["10000"])
    assert canvas == {"10000": f"{full:g}", "10201": f"{full:g}", "10301": f"{full:g}", "10800": f"{0.9 * full:g}"}
    assert any("feedback pages written before this grading (1)" in text for text in said.values())
    assert "LEFT since the last roster (1): Bob Brown (bob_brown_10800)" in said[
        "keys --roster canvas_gradebook_export-march.csv -o keys.csv"]
    moodle = Path(os.environ["SCALEBOOK_COURSE"])
    assert (moodle / "feedback" / "alice.smith" / A2 / "feedback.html").is_file()
    with open(tmp_path / "moodle-hw2.csv", newline="", encoding="utf-8") as f:
        assert all(float(r["Grade"]) == float(r["Maximum Grade"]) for r in csv.DictReader(f))
    assert "extensions (1): alice.smith 2 day(s)" in said["due -a hw2-hardware"]
