"""Every file and line the grader writes for a person is safe to open (autograder/safe_text.py).

Three levels: the rules of :mod:`autograder.safe_text` on single values; a static scan of
``autograder/`` that finds every call writing a file or a standard stream and checks it against
the declared lists below (a new writer fails here until it is declared, and CSV writing and
HTML escaping exist only in safe_text); and a class whose ids, display names, answers, hints and
problems are hostile, run through every person-facing writer of the CLI (keys, generate
--roster, export in every format, report, feedback with released solutions), after which every
CSV cell, every HTML page and every terminal line is checked. Nothing is graded: the gradebook
rows and ``grading.json`` files are written as the grader writes them (``gradecells``).
"""

from __future__ import annotations

import ast
import csv
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.lms.formats import FORMATS
from autograder.grading.grade import course_spec
from autograder.grading.result import SubmissionResult
from autograder.course import Course
from autograder.safe_text import csv_cell, csv_text, html_text, shown, terminal_text, visible
from gradecells import record_class, run_cli

A = "hw1-rooflines"
AUTOGRADER = Path(__file__).resolve().parent.parent / "autograder"

# what an attacker in the class would type: spreadsheet formulas (OWASP's leading characters),
# text-direction controls and markup
HOSTILE = ["=1+1", "@SUM(1+1)", "+cmd", "-2+3", "\t=1", "\r=1", "\u202eexe.txt", "\u2066x\u2069",
           "<script>alert(1)</script>"]
# as student ids (a roster's ids are stripped, have no control characters and name a folder)
IDS = ["=1+1", "@SUM(1+1)", "+cmd", "-2+3", "\u202eexe.txt", "\u2066x\u2069", "<script>"]
# the same ids in keys.csv, worked out by hand: apostrophe before a formula, escapes for bidi
IDS_IN_CSV = ["'=1+1", "'@SUM(1+1)", "'+cmd", "'-2+3", "\\u202eexe.txt", "\\u2066x\\u2069", "<script>"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u061c\u200e\u200f"
                    "\u202a-\u202e\u2066-\u2069]")


# --- the rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, cell", [
    ("=1+1", "'=1+1"), ("@SUM(1+1)", "'@SUM(1+1)"), ("+cmd", "'+cmd"), ("-2+3", "'-2+3"),
    ("-1+1", "'-1+1"), ("\t=1", "'\t=1"), ("\r=1", "'\\x0d=1"), ("\u202eexe.txt", "\\u202eexe.txt"),
    ("a\u2066x\u2069", "a\\u2066x\\u2069"), ("Zoë 张伟, O'Brien", "Zoë 张伟, O'Brien"),
    ("two\nlines", "two\nlines"), ("زهرا\u200cاحمدی", "زهرا\u200cاحمدی"), ("\x1b[2J", "\\x1b[2J"),
    (-1.5, "-1.5"), (2.0, "2"), (1 / 3, "0.333333"), (-3, "-3"), (10**12, "1000000000000"),
    (None, ""), (True, "True"), ("", ""),
])
def test_csv_cell(value, cell):
    assert csv_cell(value) == cell


def test_csv_text_quotes_and_defuses_every_cell():
    text = csv_text([["student", "score"], ["=1+1", -1.5], ['say "hi", then\n=2', None]])
    assert text == "student,score\n'=1+1,-1.5\n\"say \"\"hi\"\", then\n=2\",\n"
    assert list(csv.reader(text.splitlines(keepends=True))) == [
        ["student", "score"], ["'=1+1", "-1.5"], ['say "hi", then\n=2', ""]]


def test_html_text_escapes_markup_and_shows_hidden_characters():
    assert html_text("<script>\"x\" & 'y'") == "&lt;script&gt;&quot;x&quot; &amp; &#x27;y&#x27;"
    assert html_text("\u202eexe.txt \u2066x\u2069 \u200f\u061c") == "\\u202eexe.txt \\u2066x\\u2069 \\u200f\\u061c"
    assert html_text("a\nb\tc\x00\x85\ud800\u2028") == "a\nb\tc\\x00\\x85\\ud800\\u2028"
    assert html_text(2.5) == "2.5"


def test_visible():
    assert visible("Zoë 张伟 a b") == "Zoë 张伟 a b"
    assert visible("\x1b[2J\r\n\x07\x9b\u202e\u2066\ud800\x7f") == (
        "\\x1b[2J\\x0d\\x0a\\x07\\x9b\\u202e\\u2066\\ud800\\x7f")
    assert visible("\U000e0001") == "\\U000e0001"
    assert terminal_text("a\x1b\nb\u202e\n") == "a\\x1b\nb\\u202e\n"


def test_shown_is_what_the_check_below_calls_hidden():
    every = "".join(map(chr, range(0x3000))) + "\ud800\udfff\ufeff"
    assert HIDDEN.findall(shown(every)) == []
    assert HIDDEN.sub("", every) == "".join(c for c in every if shown(c) == c)


# --- every writer is declared ----------------------------------------------------------------------
#
# A writer is a call that writes a file or a standard stream: Path.write_text/write_bytes,
# nbformat.write, sys.stdout/stderr.write, open/os.fdopen with a writing mode. (Raw os.write to
# a file descriptor is the sandbox's pipes to its own processes: no person reads those bytes.)

PERSON = {  # (module, function) -> what it writes; every one is run end to end below
    ("keys.py", "cmd_keys"): "keys.csv, or the keys on standard output: variants.keys_csv",
    ("export.py", "cmd_export"): "the export on standard output: export.export_csv's text",
    ("export.py", "export_csv"): "grades-, canvas-, moodle-<A>.csv: export.to_csv, lms.formats.to_canvas, to_moodle",
    ("feedback.py", "write_feedback"): "feedback/<student>/<A>/feedback.html, with released solutions",
    ("report.py", "write_report"): "report-<A>.html and report-<A>.csv",
    ("variants.py", "write_roster_notebooks"): "<course>/keys.csv (and each student's notebook, JSON)",
}
NOT_FOR_PEOPLE = {  # (module, function) -> what it writes and why no person reads it as CSV/HTML/text
    ("marks.py", "mark_late"): "the LMS's LATE mark: fixed text and the LMS's name",
    ("marks.py", "keep_order"): "the LMS's order of a collected file (JSON)",
    ("collect.py", "_write"): "a collected notebook, the bytes the student handed in",
    ("course.py", "prepare"): "nbgrader's copies of the instructor's notebooks (JSON)",
    ("course.py", "set_variants_enabled"): "the course's settings (JSON)",
    ("course.py", "course_secret"): "the course's secret key",
    ("course.py", "default_course"): "the course's gradebook URL (gradebook.url)",
    ("roster.py", "register_roster"): "the course's roster (roster.json)",
    ("roster.py", "save_participants"): "each assignment's Moodle participant ids (lms/<A>.json)",
    ("course.py", "generate_exercises"): "exercises/ notebooks from the instructor's solutions/",
    ("deadlines.py", "save_policy"): "the late policy (JSON)",
    ("deadlines.py", "set_submission_time"): "nbgrader's timestamp.txt: a time the instructor gave",
    ("demo.py", "build_submissions"): "sample submissions (notebooks) from the reference solutions",
    ("nbgrader_config.py", "write_course_config"): "nbgrader's configuration (Python)",
    ("record.py", "atomic_write"): "grading records (JSON) and autograded notebooks",
    ("cells.py", "_skipped"): "the sandboxed runner's stderr, captured as a cell's output",
    ("start.py", "setup"): "/proc/self/oom_score_adj",
    ("zygote.py", "_fresh_tmp"): "empty files that hold the sandbox's mount points",
    ("template.py", "__init__"): "the pipe that feeds a template's job its input",
    ("cgroup.py", "_write"): "cgroup control files",
}
# the modules that may use the csv writer and html.escape: the one that owns the rules
FORMAT_OWNER = "safe_text.py"


def _writes(call: ast.Call) -> bool:
    func = call.func
    name = ast.unparse(func)
    if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes"):
        return True
    if name in ("nbformat.write", "sys.stdout.write", "sys.stderr.write"):
        return True
    if name in ("open", "os.fdopen"):
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        return isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+")
    return False


def scan(path: Path) -> tuple[set[tuple[str, str]], list[str]]:
    """(module, function) of every writer call in ``path``; and every use of the csv writer
    or html.escape (``module:line``)."""
    writers, formats = set(), []

    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call) and _writes(child):
                writers.add((path.name, inner))
            if (isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
                    and (child.value.id, child.attr) in (("csv", "writer"), ("csv", "DictWriter"), ("html", "escape"))):
                formats.append(f"{path.name}:{child.lineno}")
            if isinstance(child, ast.ImportFrom) and child.module in ("csv", "html"):
                formats.append(f"{path.name}:{child.lineno}")
            walk(child, inner)

    walk(ast.parse(path.read_text("utf-8")), "<module>")
    return writers, formats


def test_every_writer_in_the_autograder_is_declared():
    found, formats = set(), []
    for path in sorted(AUTOGRADER.rglob("*.py")):
        writers, uses = scan(path)
        found |= writers
        formats += [] if path.name == FORMAT_OWNER else uses
    assert not PERSON.keys() & NOT_FOR_PEOPLE.keys()
    assert found - PERSON.keys() - NOT_FOR_PEOPLE.keys() == set(), "a new writer: declare it above"
    assert PERSON.keys() | NOT_FOR_PEOPLE.keys() <= found, "a declared writer is gone: remove it above"
    assert formats == [], f"CSV and HTML text is made by {FORMAT_OWNER} alone"


def test_the_scan_sees_each_kind_of_writer(tmp_path):
    source = tmp_path / "writers.py"
    source.write_text("import csv, html, sys\nfrom html import escape\n"
                      "def a(p): p.write_text('x')\ndef b(p): open(p, 'w')\ndef c(p): open(p)\n"
                      "def d(): sys.stdout.write('x')\ndef e(f): csv.writer(f)\ndef f(s): html.escape(s)\n")
    writers, formats = scan(source)
    assert writers == {("writers.py", "a"), ("writers.py", "b"), ("writers.py", "d")}
    assert formats == ["writers.py:2", "writers.py:7", "writers.py:8"]


# --- a hostile class through every person-facing writer ----------------------------------------------

def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def check_csv(path: Path) -> list[list[str]]:
    """The rows of ``path``, after checking that no cell is a formula or holds hidden characters."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    for row in rows:
        for cell in row:
            assert not (cell[:1] in FORMULA_START and not _is_number(cell)), f"{path.name}: formula {cell!r}"
            assert not HIDDEN.search(cell), f"{path.name}: hidden character in {cell!r}"
    return rows


def check_html(path: Path) -> str:
    page = path.read_text("utf-8")
    assert not HIDDEN.search(page), f"{path.name}: hidden character at {HIDDEN.search(page).start()}"
    assert "<script" not in page.lower(), path
    return page


def check_terminal(text: str) -> None:
    bad = [c for c in text if not (c.isprintable() or c in "\n\t")]
    assert not bad, f"the terminal got {bad!r}"


def hostile_course(root: Path) -> tuple[Course, str]:
    """A course of hw1 whose students are :data:`IDS`, named with :data:`HOSTILE` (the last one
    without a name: the LMS files show the id), each answering every part with hostile text
    (one answer with a lone surrogate), with hostile hints and problems, and one score of -1.5
    (a manual grade); returns it and the part with the negative score."""
    course = Course(root / "course")
    course.prepare(A)
    spec = course_spec(course, A)
    with course.gradebook() as gb:
        for i, student in enumerate(IDS):
            named = i < len(IDS) - 1
            gb.add_student(student, lms_user_id=str(1000 + i),
                           last_name=HOSTILE[i] if named else None,
                           first_name=HOSTILE[(i + 4) % len(HOSTILE)] if named else None)
    results = []
    for i, student in enumerate(IDS):
        scores, messages, answers = {}, {}, {}
        for j, t in enumerate(spec.tests):
            value, name = HOSTILE[(i + j) % len(HOSTILE)], (t.names or ("x",))[0]
            scores[t.grade_id] = 0.0
            messages[t.grade_id] = f"{name} should be a number, got the string '{value}'. Hint: {value}"
            answers[t.grade_id] = {name: value + "\ud800" if j == 0 else value}
        results.append(SubmissionResult(student, A, "graded", scores, dict(spec.max_scores), messages,
                                        [f"problem: {HOSTILE[(i + 2) % len(HOSTILE)]}"], answers))
    record_class(course, spec, results)
    from autograder.lms.roster import save_participants  # as if collected from Moodle too, with its worksheet

    save_participants(course, A, {s: {"participant": str(1000 + i), "submitted": None} for i, s in enumerate(IDS)})
    negative = spec.tests[0].grade_id
    with course.gradebook() as gb:
        gb.find_grade(negative, A, A, IDS[0]).manual_score = -1.5
        gb.db.commit()
    return course, negative


# name -> (the command's arguments, given the course root, the roster and an output folder; the
# writers of PERSON it runs)
RUNS = {
    "keys to stdout": (lambda roster, out: ["keys", "--roster", roster], {("keys.py", "cmd_keys")}),
    "keys": (lambda roster, out: ["keys", "--roster", roster, "--output", out / "keys.csv"], {("keys.py", "cmd_keys")}),
    "generate --roster": (lambda roster, out: ["generate", A, "--roster", roster, "--output-dir", out],
                          {("variants.py", "write_roster_notebooks")}),
    **{f"export --format {fmt}": (lambda roster, out, fmt=fmt: ["export", "-a", A, "--format", fmt, "--output",
                                                                out / f"{fmt}.csv"], {("export.py", "export_csv")})
       for fmt in FORMATS},
    "export to stdout": (lambda roster, out: ["export", "-a", A, "--output", "-"], {("export.py", "cmd_export")}),
    "report": (lambda roster, out: ["report", "-a", A, "--output-dir", out], {("report.py", "write_report")}),
    "feedback --release-solutions": (lambda roster, out: ["feedback", "-a", A, "--release-solutions", "--force"],
                                     {("feedback.py", "write_feedback")}),
}


def test_every_writer_for_people_is_run_with_hostile_text():
    assert set().union(*(writers for _, writers in RUNS.values())) == PERSON.keys()


@dataclass(frozen=True)
class Run:
    """What one command did: its terminal text, the CSV and HTML files it wrote, or what it raised."""

    text: str
    files: tuple[Path, ...]
    error: str = ""


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory) -> tuple[Course, str, dict[str, Run]]:
    """Every command of :data:`RUNS` on the hostile course, in order, each writing into its
    own folder (feedback into the course's); a command that raises is recorded, not fatal."""
    root = tmp_path_factory.mktemp("hostile")
    course, negative = hostile_course(root)
    roster = root / "roster.csv"
    roster.write_text("id\n" + "".join(f'"{s}"\n' for s in IDS), "utf-8")

    def stamps() -> dict[Path, int]:
        return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.suffix in (".csv", ".html")}

    runs = {}
    for number, (name, (argv, _)) in enumerate(RUNS.items()):
        out = root / f"out{number}"
        out.mkdir()
        before = stamps()
        try:
            rc, text = run_cli(*argv(roster, out), "--course", course.root)
            error = "" if rc == 0 else f"exit status {rc}"
        except Exception as exc:  # noqa: BLE001 -- recorded for the test of this command
            text, error = "", f"{type(exc).__name__}: {exc}"
        written = tuple(sorted(p for p, t in stamps().items() if before.get(p) != t))
        runs[name] = Run(text, written, error)
    return course, negative, runs


@pytest.mark.parametrize("name", list(RUNS))
def test_every_cell_page_and_line_is_safe(hostile_runs, name):
    run = hostile_runs[2][name]
    assert not run.error, f"{name}: {run.error}\n{run.text}"
    assert run.files or name.endswith("stdout")
    for path in run.files:
        if path.suffix == ".csv":
            check_csv(path)
        else:
            check_html(path)
    check_terminal(run.text)


def test_the_hostile_text_is_there_defused_not_dropped(hostile_runs):
    course, negative, runs = hostile_runs
    assert all(not r.error for r in runs.values())
    files = {p.name: p for r in runs.values() for p in r.files if p.name != "feedback.html"}
    for run in ("keys", "generate --roster"):
        (keys,) = runs[run].files
        assert [r[0] for r in check_csv(keys)[1:]] == IDS_IN_CSV
    assert runs["keys to stdout"].text == runs["keys"].files[0].read_text("utf-8")
    grades = check_csv(files["csv.csv"])
    by_id = {r[0]: r for r in grades[1:]}
    assert sorted(by_id) == sorted(IDS_IN_CSV)
    assert by_id["'=1+1"][grades[0].index(negative)] == "-1.5"  # a number stays a number
    assert runs["export to stdout"].text == files["csv.csv"].read_text("utf-8")
    # "Last, First" in Canvas, "First Last" in Moodle, the id without a name; by LMS user id
    assert {r[1]: (r[0], r[5]) for r in check_csv(files["canvas.csv"])[2:]} == {
        "1000": ("'=1+1, \t=1", "-1.5"), "1001": ("'@SUM(1+1), \\x0d=1", "0"),
        "1002": ("'+cmd, \\u202eexe.txt", "0"), "1003": ("'-2+3, \\u2066x\\u2069", "0"),
        "1004": ("'\t=1, <script>alert(1)</script>", "0"), "1005": ("'\\x0d=1, =1+1", "0"), "1006": ("<script>", "0")}
    assert {r[0]: r[1] for r in check_csv(files["moodle.csv"])[1:]} == {
        "Participant 1000": "'\t=1 =1+1", "Participant 1001": "'\\x0d=1 @SUM(1+1)",
        "Participant 1002": "\\u202eexe.txt +cmd", "Participant 1003": "\\u2066x\\u2069 -2+3",
        "Participant 1004": "<script>alert(1)</script> \t=1", "Participant 1005": "'=1+1 \\x0d=1",
        "Participant 1006": "<script>"}
    report_page = files[f"report-{A}.html"].read_text("utf-8")
    assert "\\u202eexe.txt" in report_page and "&lt;script&gt;alert(1)&lt;/script&gt;" in report_page
    assert "\\ud800" in report_page
    assert "\\u2066x\\u2069" in files[f"report-{A}.csv"].read_text("utf-8")
    assert len(runs["feedback --release-solutions"].files) == len(IDS)
    page = (course.feedback(IDS[4], A) / "feedback.html").read_text("utf-8")
    assert "feedback for \\u202eexe.txt" in page and "problem: \\u202eexe.txt" in page
    assert "Solutions of the parts you missed" in page
