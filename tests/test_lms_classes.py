"""A real class on Canvas and on Moodle, from the LMS's roster to the LMS's gradebook.

Canvas: the gradebook export (with its ``Points Possible`` row) is the roster; 13 students,
accented, hyphenated, apostrophed, Cyrillic and Chinese names; a submission zip with Canvas's
names (two ``LATE``), one roster student who hands nothing in, one file from someone not on the
roster; then a second zip with one resubmission. Moodle: the participants export is the roster;
two assignments whose downloads give each student another participant id, each with its
grading worksheet, and one folder holding ``x.ipynb`` and ``x (1).ipynb``.

Every student hands in correct work (their own numbers, from the key ``keys`` gave them), so
every student must get full marks; the exports must carry the LMS's own ids.
"""

from __future__ import annotations

import contextlib
import csv
import io
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
]
LATE = {"10168", "10600"}
ABSENT = "10900"
RESUBMITS = "10201"  # José hands in partial work first, then the correct notebook


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


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_canvas_class_from_gradebook_export_to_gradebook_import(tmp_path):
    course_dir = tmp_path / "course"
    roster = write_csv(tmp_path / "canvas_gradebook_export.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A1} (123)"],
        ["    Points Possible", "", "", "", "", "15"],
        *([name, uid, f"S{uid}", f"login{uid}", "Section 1", ""] for name, uid, _ in CANVAS_CLASS)])
    rc, out, err = run_cli("keys", "--roster", roster, "-o", tmp_path / "keys.csv", "--course", course_dir)
    assert rc == 0, out + err
    assert "13 student(s) from a Canvas gradebook export" in out and "Points Possible" in out
    keys = keys_of(tmp_path / "keys.csv")
    assert set(keys) == {uid for _, uid, _ in CANVAS_CLASS}  # keyed by Canvas's ID, not the 'ID' as a name
    course = Course(course_dir)

    def notebook(uid: str, sample: str, where: Path) -> Path:
        sid = keys[uid]["student"]  # what the student reads in their key message
        return build_submissions(A1, where / uid, students=[sample], course=course, ids={sample: sid})[sample]

    first = tmp_path / "round1.zip"
    with zipfile.ZipFile(first, "w") as z:
        for n, (_, uid, canvas_name) in enumerate(CANVAS_CLASS):
            if uid == ABSENT:
                continue
            late = "LATE_" if uid in LATE else ""
            sample = "partial" if uid == RESUBMITS else "correct"
            z.write(notebook(uid, sample, tmp_path / "built1"), f"{canvas_name}_{late}{uid}_{7000 + n}_{A1}.ipynb")
        z.write(notebook("10000", "correct", tmp_path / "stranger"), f"strangerdan_99999_7999_{A1}.ipynb")
    opts = ("-a", A1, "--course", course_dir)
    rc, out, err = run_cli("collect", first, *opts)
    assert rc == 1, out + err  # someone not on the roster: reported, collected for no one
    assert "NOT ON THE COURSE ROSTER (1)" in out and "strangerdan (Canvas user id 99999)" in out
    assert "on the roster, no notebook of hw1-rooflines (1): Ren Nakamura" in out
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 0, out + err
    before = totals(course, A1)
    sid = {uid: keys[uid]["student"] for _, uid, _ in CANVAS_CLASS}
    for uid, student in sid.items():
        if uid == ABSENT:
            assert before[student][2] == "no submission"
        elif uid == RESUBMITS:
            assert before[student][0] < before[student][1]
        else:
            assert before[student][0] == before[student][1] > 0, (student, before[student])
    full = before[sid["10000"]][1]

    second = tmp_path / "round2.zip"  # Canvas's download after José resubmitted: the new file only
    with zipfile.ZipFile(second, "w") as z:
        z.write(notebook(RESUBMITS, "correct", tmp_path / "built2"), f"núñezjosé_{RESUBMITS}_8001_{A1}.ipynb")
    rc, out, err = run_cli("collect", second, *opts, "--force")
    assert rc == 0, out + err
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 0, out + err
    assert "regraded 1 resubmitted notebook(s)" in out and sid[RESUBMITS] in out
    assert "skipped 11 already graded and unchanged" in out
    after = totals(course, A1)
    assert after[sid[RESUBMITS]][0] == full > before[sid[RESUBMITS]][0]  # the resubmission's score changed
    history = list((course.autograded(sid[RESUBMITS], A1) / "history").glob("*.json"))
    assert len(history) == 1  # the earlier result is kept

    rc, out, err = run_cli("due", *opts, "--date", "2026-02-01 23:59 UTC", "--per-day", "10")
    assert rc == 0, out + err
    rc, out, err = run_cli("export", *opts, "--format", "canvas", "--lms-assignment-id", "123",
                           "-o", tmp_path / "import.csv")
    assert rc == 0, out + err
    assert "no submission (1, exported blank): Nakamura, Ren (ren_nakamura_10900)" in err
    assert err.count("no submission time") == 1 and "2 marked LATE" in err  # one line, with a count
    with open(tmp_path / "import.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0][:2] == ["Student", "ID"] and rows[0][5] == f"{A1} (123)"
    by_id = {r[1]: r for r in rows[2:]}
    assert len(by_id) == len(rows) - 2 == 13  # each student once, under Canvas's own ID
    assert set(by_id) == {uid for _, uid, _ in CANVAS_CLASS}
    for _, uid, _ in CANVAS_CLASS:
        expected = None if uid == ABSENT else 0.9 * full if uid in LATE else full  # LATE: one day, 10%
        assert (by_id[uid][5] or None) == (expected if expected is None else f"{expected:g}"), (uid, by_id[uid])
    assert by_id["10168"][0] == "Dahl, Øyvind" and by_id["10302"][0] == "张, 伟"
    rc, out, err = run_cli("export", *opts, "--format", "canvas", "--missing", "zero", "-o", "-")
    assert rc == 0 and {r[1]: r[5] for r in csv.reader(io.StringIO(out))}[ABSENT] == "0"  # the other choice
    with course.gradebook() as gb:
        assert sorted(s.lms_user_id for s in gb.students) == sorted(uid for _, uid, _ in CANVAS_CLASS)


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
