"""The instructor's item analysis (``python -m autograder report``, autograder/report.py).

Three levels: the statistics on a class of ten made by hand, every number derived in the
comments; the report end to end on the sample submissions of hw1 (collected and graded through
the CLI); and generated classes of 500 and 2,000 students whose gradebook rows and
``grading.json`` files are written directly with ``autograder.grading.record`` (nothing graded), checked
against a direct computation and timed.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import random
import re
import time
from collections import Counter
from html.parser import HTMLParser

import pytest

from autograder import report
from autograder.grading.grade import course_spec
from autograder.grading.result import SubmissionResult
from autograder.course import Course, load_report
from autograder.demo import build_submissions
from autograder.export import question_columns
from autograder.report import Part, PartResult, StudentResult
from gradecells import record_class
from test_autograder_workflow import run_cli

ASSIGNMENT = "hw1-rooflines"


# --- a class of ten, by hand -------------------------------------------------------------------
#
# parts: A (2 points), B (1), C (1); max total 4
#
#  student  A  B  C  total   messages of the parts short of full credit
#  s01      2  1  1  4
#  s02      2  1  0  3       C: Hint: a unit slip        (graded before answers were recorded)
#  s03      2  0  1  3       B: Hint: the 2B rule, b = 594.4
#  s04      2  0  1  3       B: Hint: the 2B rule, b = 594.6
#  s05      1  1  0  2       A: Hint: sparse FLOPs, x = 591.2 (manual partial credit)
#                            C: Hint: a unit slip, c = 10**12 (an int)
#  s06      0  1  1  2       A: Hint: sparse FLOPs, x = 590.7
#  s07      2  0  0  2       B: Hint: the 2B rule, b = [1.0, 2.0004]; C: tampered with a test cell
#  s08      0  1  0  1       A: not answered; C: Hint: a unit slip, c = 1.0004e12
#  s09      0  0  1  1       A: no hint, x = "abc"; B: not graded (the code stopped before it)
#  s10      0  0  0  0       no grading record at all

A, B, C = Part("p-a-test", "Problem A", 2.0), Part("p-b-test", "Problem B", 1.0), Part("p-c-test", "", 1.0)
PARTS = [A, B, C]

SCORES = {  # student: (A, B, C)
    "s01": (2, 1, 1), "s02": (2, 1, 0), "s03": (2, 0, 1), "s04": (2, 0, 1), "s05": (1, 1, 0),
    "s06": (0, 1, 1), "s07": (2, 0, 0), "s08": (0, 1, 0), "s09": (0, 0, 1), "s10": (0, 0, 0),
}
WRONG = "is not within 5% of the expected answer."
MESSAGES = {  # (student, part): (message, answers of that part or None)
    ("s02", "C"): (f"c = 2e9 {WRONG} Hint: a unit slip", None),
    ("s03", "B"): (f"b = 594.4 {WRONG} Hint: the 2B rule", {"b": 594.4}),
    ("s04", "B"): (f"b = 594.6 {WRONG} Hint: the 2B rule", {"b": 594.6}),
    ("s05", "A"): (f"x = 591.2 {WRONG} Hint: sparse FLOPs", {"x": 591.2}),
    ("s05", "C"): (f"c = 1e12 {WRONG} Hint: a unit slip", {"c": 10**12}),
    ("s06", "A"): (f"x = 590.7 {WRONG} Hint: sparse FLOPs", {"x": 590.7}),
    ("s07", "B"): (f"b {WRONG} Hint: the 2B rule", {"b": [1.0, 2.0004]}),
    ("s07", "C"): ("tampered with a test cell: it was changed; this question scores zero.", None),
    ("s08", "A"): ("not answered: there is no variable x when this question is checked.", None),
    ("s08", "C"): (f"c = 1.0004e12 {WRONG} Hint: a unit slip", {"c": 1.0004e12}),
    ("s09", "A"): ("x should be a number, got the string 'abc'", {"x": "abc"}),
    ("s09", "B"): ("not graded: the notebook's code stopped (timed out) before this question.", None),
}
CORRECT_ANSWERS = {"A": {"x": 197.0}, "B": {"b": 1.5}, "C": {"c": 4e11}}


def hand_class() -> list[StudentResult]:
    students = []
    for student, scores in SCORES.items():
        parts = {}
        for part, letter, score in zip(PARTS, "ABC", scores):
            if student == "s10":  # no grading.json: scores only
                parts[part.grade_id] = PartResult(float(score))
                continue
            message, answers = MESSAGES.get((student, letter), ("", CORRECT_ANSWERS[letter]))
            if student == "s02":  # a record from before answers were kept: answers == {}
                answers = None
            parts[part.grade_id] = PartResult(float(score), message, answers)
        students.append(StudentResult(student, parts))
    return students


def by_id(analysis) -> dict[str, report.PartStats]:
    return {s.part.grade_id: s for s in analysis.parts}


def groups(stats: report.PartStats) -> list[tuple[str, int, list[tuple[str, int]]]]:
    return [(g.label, g.count, [(a.answer, a.count) for a in g.answers]) for g in stats.wrong]


def test_means_and_full_credit_by_hand():
    stats = by_id(report.analyse("hw", PARTS, hand_class()))
    # A: 2+2+2+2+1+0+2+0+0+0 = 11 of 10 students; full credit (2 points): s01-s04, s07
    assert stats["p-a-test"].mean_points == pytest.approx(1.1)
    assert stats["p-a-test"].full_credit == pytest.approx(0.5)  # s05's 1 of 2 is not full credit
    # B: s01 s02 s05 s06 s08; C: s01 s03 s04 s06 s09
    for gid in ("p-b-test", "p-c-test"):
        assert stats[gid].mean_points == pytest.approx(0.5)
        assert stats[gid].full_credit == pytest.approx(0.5)
        assert stats[gid].students == 10


def test_attempted_counts_not_answered_and_not_graded_apart():
    stats = by_id(report.analyse("hw", PARTS, hand_class()))
    a, b, c = stats["p-a-test"], stats["p-b-test"], stats["p-c-test"]
    assert (a.attempted, a.not_answered, a.not_graded) == (9, 1, 0)   # s08 not answered
    assert (b.attempted, b.not_answered, b.not_graded) == (9, 0, 1)   # s09's code stopped
    assert (c.attempted, c.not_answered, c.not_graded) == (10, 0, 0)  # s10 (no record) counts


def test_discrimination_with_a_tie_at_the_cut():
    analysis = report.analyse("hw", PARTS, hand_class())
    # 10 students: groups of round(2.7) = 3. Upper: s01 (4) and 2 seats for the three tied at 3
    # (s02 s03 s04), 2/3 each. Lower: s10 (0) and s08, s09 (1): exactly 3, weight 1 each.
    assert analysis.group_size == 3
    d = {gid: s.discrimination for gid, s in by_id(analysis).items()}
    # A: upper (1 + 2/3 * (1 + 1 + 1)) / 3 = 1; lower (0 + 0 + 0) / 3 = 0
    assert d["p-a-test"] == pytest.approx(1.0)
    # B: upper (1 + 2/3 * (1 + 0 + 0)) / 3 = 5/9; lower (0 + 1 + 0) / 3 = 3/9
    assert d["p-b-test"] == pytest.approx(2 / 9)
    # C: upper (1 + 2/3 * (0 + 1 + 1)) / 3 = 7/9; lower (0 + 0 + 1) / 3 = 3/9
    assert d["p-c-test"] == pytest.approx(4 / 9)
    # taking the first two of the tied in some order would give 1/3 (s02, s03) or 0 (s03, s04)


def test_discrimination_does_not_depend_on_the_order_of_students():
    students = hand_class()
    expected = [s.discrimination for s in report.analyse("hw", PARTS, students).parts]
    for seed in range(5):
        shuffled = students[:]
        random.Random(seed).shuffle(shuffled)
        got = [s.discrimination for s in report.analyse("hw", PARTS, shuffled).parts]
        assert got == pytest.approx(expected)


@pytest.mark.parametrize("n,size", [(1, 0), (2, 1), (3, 1), (10, 3), (50, 14), (100, 27), (2000, 540)])
def test_group_size_is_27_percent_rounded_half_up(n, size):
    assert report.group_size(n) == size


def test_top_weights_share_the_seats_left_among_the_tied():
    assert report.top_weights([5, 4, 4, 4, 1], 2) == pytest.approx([1, 1 / 3, 1 / 3, 1 / 3, 0])
    assert report.top_weights([5, 4, 4, 1], 3) == pytest.approx([1, 1, 1, 0])
    assert report.top_weights([3, 3, 3, 3], 1) == pytest.approx([0.25] * 4)
    # sums of floats that differ past the 9th decimal are a tie
    assert report.top_weights([0.1 + 0.2, 0.3, 0.0], 1) == pytest.approx([0.5, 0.5, 0])


def test_discrimination_needs_two_students():
    one = hand_class()[:1]
    assert all(s.discrimination is None for s in report.analyse("hw", PARTS, one).parts)


def test_wrong_answers_grouped_by_hint_with_not_answered_apart():
    stats = by_id(report.analyse("hw", PARTS, hand_class()))
    # A: s05 (partial) and s06 answered 591.2 and 590.7, both "591"; s09 a string, no hint; s10
    # has no record; s08's "not answered" is not a wrong answer
    assert groups(stats["p-a-test"]) == [
        ("sparse FLOPs", 2, [("x = 591", 2)]),
        (report.NO_RECORD, 1, [(report.NOT_RECORDED, 1)]),
        (report.NO_HINT, 1, [('x = "abc"', 1)]),
    ]
    # B: 594.4 and 594.6 round to different answers; a list element by element; s09 not graded
    assert groups(stats["p-b-test"]) == [
        ("the 2B rule", 3, [("b = 594", 1), ("b = 595", 1), ("b = [1, 2]", 1)]),
        (report.NO_RECORD, 1, [(report.NOT_RECORDED, 1)]),
    ]
    # C: the int 10**12 and the float 1.0004e12 are one answer; s02's record kept no answers;
    # s07's tampered cell is grouped by its status
    assert groups(stats["p-c-test"]) == [
        ("a unit slip", 3, [("c = 1e+12", 2), (report.NOT_RECORDED, 1)]),
        (report.NO_RECORD, 1, [(report.NOT_RECORDED, 1)]),
        ("tampered with a test cell", 1, [(report.NOT_RECORDED, 1)]),
    ]
    assert [s.wrong_count for s in stats.values()] == [4, 4, 5]


def test_the_most_common_answers_come_first_and_only_the_top_three():
    part = Part("q", "", 1.0)
    values = [7.0, 7.001, 8.0, 8.0, 8.0, 9.0, 10.0]  # 7 twice (7.001 rounds to 7), 8 three times
    students = [StudentResult(f"s{i}", {"q": PartResult(0.0, f"q {WRONG} Hint: h", {"q": v})})
                for i, v in enumerate(values)]
    (group,) = report.analyse("hw", [part], students).parts[0].wrong
    assert (group.label, group.count) == ("h", 7)
    assert [(a.answer, a.count) for a in group.answers] == [("q = 8", 3), ("q = 7", 2), ("q = 10", 1)]


@pytest.mark.parametrize("a,b,same", [
    (591.2, 590.7, True),            # both 591
    (594.4, 594.6, False),           # 594 and 595
    (10**12, 1.0004e12, True),       # int and float: 1e+12
    (0.0, -0.0, True),
    (1.2345e-7, 1.2349e-7, True),    # 1.23e-07
    (1, "1", False),                 # a number and a string
    (True, 1, False),                # a bool is not a number
    ([1.0, 2.0], [1.0004, 2], True),
    ([1.0, 2.0], [2.0, 1.0], False),
    (None, "None", False),
    ({"error": "not a plain value"}, "not a plain value", False),
])
def test_answers_are_the_same_when_they_round_alike_to_3_figures(a, b, same):
    assert (report.value_text(a) == report.value_text(b)) is same


@pytest.mark.parametrize("value,text", [
    (590.746, "591"), (1.2345e12, "1.23e+12"), (0.5, "0.5"), (-0.0, "0"), (1234, "1230"),
    (float("nan"), "nan"), (float("inf"), "inf"), (10**400, str(10**400)),
    ("P('x', None)", '"P(\'x\', None)"'), ([None, "data", ["x", "y"]], '[None, "data", ["x", "y"]]'),
    ({"error": "a function"}, "<a function>"), (True, "True"),
])
def test_value_text(value, text):
    assert report.value_text(value) == text


def test_answer_text_names_every_answer_sorted():
    assert report.answer_text({"t_math": 1.0, "t_comms": 2.5}) == "t_comms = 2.5, t_math = 1"
    assert report.answer_text(None) == report.NOT_RECORDED
    assert report.answer_text({}) == "(no value)"


@pytest.mark.parametrize("message,kind", [
    ("not answered: there is no variable x when this question is checked.", "not answered"),
    ("not graded: this question was not reached.", "not graded"),
    ("x is not within 5%. Hint: not answered", "attempted"),  # the prefix only
    ("", "attempted"), (None, "attempted"),
])
def test_outcome(message, kind):
    assert report.outcome(message) == kind


def test_histogram_one_bar_per_point():
    analysis = report.analyse("hw", PARTS, hand_class())
    # totals 4 3 3 3 2 2 2 1 1 0, max 4: bars 0, 1, 2, 3 and full marks
    assert analysis.histogram.counts == (1, 2, 3, 3, 1)
    assert analysis.histogram.edges == (0, 1, 2, 3, 4, 5)
    assert sorted(analysis.totals) == [0, 1, 1, 2, 2, 2, 3, 3, 3, 4]
    assert analysis.mean_total == pytest.approx(2.1) and analysis.median_total == 2


def test_histogram_of_a_long_assignment_has_20_bars():
    h = report.histogram([0, 49.9, 50, 99.9, 100, 130, -1], 100)
    assert len(h.counts) == 20 and sum(h.counts) == 7
    assert h.counts[0] == 2 and h.counts[9] == 1 and h.counts[10] == 1 and h.counts[19] == 3


class StrictHTML(HTMLParser):
    """Parses a page and fails on an end tag that closes anything but the innermost open
    element, or an element left open; keeps the images' sources and the text."""

    VOID = {"meta", "img", "br", "hr", "input", "link"}

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.stack, self.images, self.text, self.tags = [], {}, [], Counter()
        self.feed(page)
        self.close()
        assert self.stack == [], f"unclosed: {self.stack}"

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        attrs = dict(attrs)
        if tag == "img":
            self.images[attrs.get("id")] = attrs["src"]
        for name in ("src", "href"):
            assert not (attrs.get(name) or "").startswith(("http", "//")), attrs
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack)
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def png(data_url: str) -> bytes:
    prefix = "data:image/png;base64,"
    assert data_url.startswith(prefix)
    data = base64.b64decode(data_url[len(prefix):], validate=True)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


def test_html_page_is_self_contained_and_escapes_what_students_wrote():
    students = hand_class()
    nasty = "<script>alert('x')</script>"
    students.append(StudentResult("evil", {
        "p-a-test": PartResult(0.0, f"x {WRONG} Hint: <b>bold</b> & co", {"x": nasty}),
        "p-b-test": PartResult(0.0, "", {"b": 1}), "p-c-test": PartResult(0.0, "", {"c": 1})}))
    page = report.render_html(report.analyse("hw <1>", PARTS, students))
    parsed = StrictHTML(page)
    assert set(parsed.images) == {"histogram", "parts"}
    for src in parsed.images.values():
        png(src)
    assert "<script" not in page and "<b>" not in page
    assert html.escape(f'x = "{nasty}"') in page
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in page and "hw &lt;1&gt;" in page
    assert "Content-Security-Policy" in page
    text = " ".join(parsed.text)
    for part in PARTS:
        assert part.grade_id in text
    assert "top 27%" in text and "tied" in text  # the definition is on the page


def test_csv_has_one_row_per_part():
    rows = list(csv.DictReader(io.StringIO(report.to_csv(report.analyse("hw", PARTS, hand_class())))))
    assert [r["grade_id"] for r in rows] == [p.grade_id for p in PARTS]
    a, b, c = rows
    assert (a["title"], a["points"], a["students"], a["attempted"], a["not_answered"], a["not_graded"]) == (
        "Problem A", "2", "10", "9", "1", "0")
    assert (a["mean_points"], a["full_credit_share"], a["discrimination"], a["wrong"]) == ("1.1", "0.5", "1", "4")
    assert list(json.loads(a["wrong_by_hint"]).items()) == [
        ("sparse FLOPs", 2), ("no grading record", 1), ("no hint", 1)]  # the largest first
    assert (a["most_common_wrong_answer"], a["most_common_wrong_count"]) == ("x = 591", "2")
    assert float(b["discrimination"]) == pytest.approx(2 / 9, abs=1e-6)
    assert b["not_graded"] == "1" and b["wrong"] == "4"
    assert json.loads(b["wrong_by_hint"]) == {"the 2B rule": 3, "no grading record": 1}
    assert (b["most_common_wrong_answer"], b["most_common_wrong_count"]) == ("b = 594", "1")
    assert json.loads(c["wrong_by_hint"]) == {"a unit slip": 3, "no grading record": 1,
                                              "tampered with a test cell": 1}
    assert (c["most_common_wrong_answer"], c["most_common_wrong_count"]) == ("c = 1e+12", "2")


def test_csv_defuses_spreadsheet_formulas_and_keeps_hints_with_separators_whole():
    part = Part("q", "=1+1", 1.0)
    hint = "-cmd|' /C calc'!A0; a, b: c"
    students = [StudentResult(f"s{i}", {"q": PartResult(0.0, f"q {WRONG} Hint: {hint}", {"q": 1})})
                for i in range(2)]
    (row,) = csv.DictReader(io.StringIO(report.to_csv(report.analyse("hw", [part], students))))
    assert row["title"] == "'=1+1"
    assert json.loads(row["wrong_by_hint"]) == {hint: 2}
    assert not any(v.startswith(("=", "+", "-", "@")) for v in row.values())


# --- end to end on the sample submissions --------------------------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """hw1's sample submissions, collected and graded through the CLI, then reported."""
    root = tmp_path_factory.mktemp("report-loop")
    course = Course(root / "course")
    built = build_submissions(ASSIGNMENT, root / "incoming", course=course)
    common = ["-a", ASSIGNMENT, "--course", course.root]
    collect = run_cli("collect", root / "incoming", *common)
    grade = run_cli("grade", *common, "-q")
    out = run_cli("report", *common, "--output-dir", root / "out")
    return course, root / "out", sorted(built), (collect, grade, out)


@pytest.mark.slow
@pytest.mark.sandbox
def test_report_on_the_sample_submissions(graded):
    course, out, students, (collect, grade, (rc, text)) = graded
    assert collect[0] == 0, collect[1]
    assert grade[0] == 0, grade[1]
    assert rc == 0, text
    assert f"({len(students)} students)" in text
    questions = question_columns(course, ASSIGNMENT)
    with course.gradebook() as gb:  # the scores, through nbgrader's own objects
        scores = {s: {g.name: float(g.score) for nb in gb.find_submission(ASSIGNMENT, s).notebooks
                      for g in nb.grades} for s in students}
    messages = {s: e["messages"] for s, e in load_report(course, ASSIGNMENT).items()}
    assert sorted(messages) == students
    with open(out / f"report-{ASSIGNMENT}.csv", newline="", encoding="utf-8") as f:
        rows = {r["grade_id"]: r for r in csv.DictReader(f)}
    assert list(rows) == [gid for gid, _ in questions]
    n = len(students)
    for gid, points in questions:
        row, got = rows[gid], [scores[s][gid] for s in students]
        assert int(row["students"]) == n
        assert float(row["mean_points"]) == pytest.approx(sum(got) / n, abs=1e-6)
        assert float(row["full_credit_share"]) == pytest.approx(sum(g >= points for g in got) / n, abs=1e-6)
        said = [messages[s][gid] for s in students]
        assert int(row["not_answered"]) == sum(m.startswith("not answered") for m in said)
        assert int(row["attempted"]) == n - int(row["not_answered"]) - int(row["not_graded"])
        assert int(row["wrong"]) == sum(g < points and not m.startswith(("not answered", "not graded"))
                                        for g, m in zip(got, said))
    # the sample "empty" answered nothing; "misconceptions" took the datasheet's sparse FLOPs;
    # "tampered" replaced problem 5's check; "partial" gave a string there
    assert int(rows["hw1-q1a-bytes-test"]["not_answered"]) >= 1
    q5 = json.loads(rows["hw1-q5-h100-test"]["wrong_by_hint"])
    sparse = [label for label in q5 if "with sparsity" in label]
    assert len(sparse) == 1 and q5[sparse[0]] == 1, q5
    assert q5["tampered with a test cell"] == 1 and q5["no hint"] >= 1, q5  # + unkeyed, copied if they lost it

    page = (out / f"report-{ASSIGNMENT}.html").read_text("utf-8")
    parsed = StrictHTML(page)
    png(parsed.images["histogram"])
    for gid, _ in questions:
        assert gid in " ".join(parsed.text)
    assert "<script" not in page  # "partial" answered problem 5 with a <script> string
    assert html.escape("<script>alert('x')</script>") in page
    # whose numbers: "copied" handed in "correct"'s notebook, "unkeyed" entered no id or key
    whose = page[page.index('id="numbers"'):page.index("How to read this")]
    not_own = whose[:whose.index("Possible copying")]
    assert "<code>copied</code>" in not_own and "<code>unkeyed</code>" in not_own
    assert "<code>correct</code>" not in not_own
    copying = whose[whose.index("Possible copying"):]
    assert re.search(r"<code>copied</code></td><td><code>correct</code>", copying), copying
    assert "copied: " in text and "lost parts fit correct's numbers" in text


@pytest.mark.slow  # runs the autograder CLI on a course database
def test_report_of_an_assignment_never_graded_is_a_usage_error(tmp_path):
    course = Course(tmp_path / "course")
    course.prepare(ASSIGNMENT)
    rc, out = run_cli("report", "-a", ASSIGNMENT, "--course", course.root)
    assert rc == 2 and "no graded submission" in out, out


# --- generated classes, written straight into the gradebook ---------------------------------------

HINTS = ("sparse FLOPs", "the 2B rule", "a unit slip")
# (recorded value, its text): several values per text, of different types
WRONG_VALUES = [(591.2, "591"), (590.7, "591"), (10**12, "1e+12"), (1.0004e12, "1e+12"),
                ("abc", '"abc"'), ([1.0, 2.0001], "[1, 2]"), (594.6, "595")]


def generate_class(course: Course, n: int, seed: int = 0) -> dict:
    """Write ``n`` graded submissions of hw1 (gradebook rows and grading.json, as the grader
    would) and return what was generated: {student: {grade_id: (score, message, hint, answer)}}
    with ``hint`` the group a wrong answer belongs to and ``answer`` its text as the report
    shows it (None when the part was not attempted)."""
    rng = random.Random(seed)
    course.prepare(ASSIGNMENT)
    spec = course_spec(course, ASSIGNMENT)
    truth: dict[str, dict[str, tuple]] = {}
    results = []
    for i in range(n):
        student = f"gen{i:05d}"
        ability = rng.random()
        old = i % 10 == 3  # graded before answers were recorded: answers == {}
        scores, messages, answers, truth[student] = {}, {}, {}, {}
        for t in spec.tests:
            gid, name = t.grade_id, (t.names or ("x",))[0]
            roll, hint = rng.random(), ""
            if roll < ability:
                value, text, score, message = t.points, "1", t.points, ""
            elif roll < ability + 0.1:
                value, text, score = None, None, 0.0
                message = f"not answered: there is no variable {name} when this question is checked."
            elif roll < ability + 0.15:
                value, text, score = None, None, 0.0
                message = "not graded: the notebook's code stopped (timed out) before this question."
            else:
                value, text = rng.choice(WRONG_VALUES)
                hint = rng.choice(HINTS + ("",))
                score, message = 0.0, f"{name} {WRONG}" + (f" Hint: {hint}" if hint else "")
            scores[gid], messages[gid] = float(score), message
            if value is not None:
                answers[gid] = {name: value}
            shown = None if text is None else report.NOT_RECORDED if old else f"{name} = {text}"
            truth[student][gid] = (float(score), message, hint or "no hint", shown)
        results.append(SubmissionResult(student, ASSIGNMENT, "graded", scores, dict(spec.max_scores),
                                        messages, [], {} if old else answers))
    record_class(course, spec, results)
    return truth


def expected_analysis(truth: dict, questions: list[tuple[str, float]]) -> dict:
    """The numbers the report must give, computed directly from what was generated."""
    students = sorted(truth)
    n = len(students)
    totals = {s: sum(truth[s][gid][0] for gid, _ in questions) for s in students}
    g = int(0.27 * n + 0.5)

    def weight(s, sign):  # the seats left at this score, shared by everyone tied at it
        above = sum(1 for o in students if sign * totals[o] > sign * totals[s])
        tied = sum(1 for o in students if totals[o] == totals[s])
        return min(1.0, max(0.0, (g - above) / tied))

    upper = {s: weight(s, 1) for s in students}
    lower = {s: weight(s, -1) for s in students}
    out = {}
    for gid, points in questions:
        got = {s: truth[s][gid][0] for s in students}
        wrong = Counter((truth[s][gid][2], truth[s][gid][3]) for s in students
                        if truth[s][gid][3] is not None and got[s] < points)
        groups = Counter()
        for (label, _), k in wrong.items():
            groups[label] += k
        out[gid] = {
            "mean": sum(got.values()) / n,
            "full": sum(v >= points for v in got.values()) / n,
            "not_answered": sum(truth[s][gid][1].startswith("not answered") for s in students),
            "not_graded": sum(truth[s][gid][1].startswith("not graded") for s in students),
            "disc": (sum(upper[s] * got[s] for s in students) / g
                     - sum(lower[s] * got[s] for s in students) / g) / points,
            "groups": groups,
            "wrong": wrong,
        }
    return out


@pytest.mark.slow  # grades a generated class of 500 students
def test_a_generated_class_of_500_matches_a_direct_computation(tmp_path, capsys):
    course = Course(tmp_path / "course")
    truth = generate_class(course, 500)
    # a manual grade (formgrader) wins over the autograder's: the report reads the gradebook.
    # Give half a point to the first student who got none on part 1a, take the point from one
    # who had it.
    gid = "hw1-q1a-bytes-test"
    zero = next(s for s in sorted(truth) if truth[s][gid][0] == 0 and truth[s][gid][3] is not None)
    full = next(s for s in sorted(truth) if truth[s][gid][0] == 1)
    with course.gradebook() as gb:
        for student, manual in ((zero, 0.5), (full, 0.0)):
            gb.find_grade(gid, ASSIGNMENT, ASSIGNMENT, student).manual_score = manual
            truth[student][gid] = (manual, *truth[student][gid][1:])
        gb.db.commit()

    start = time.perf_counter()
    rc, out = run_cli("report", "-a", ASSIGNMENT, "--course", course.root, "--output-dir", tmp_path / "out")
    seconds = time.perf_counter() - start
    assert rc == 0, out
    with capsys.disabled():
        print(f"\nreport of 500 generated students: {seconds:.2f} s")

    parts, students = report.read_class(course, ASSIGNMENT)
    assert students[[s.student for s in students].index(zero)].score(gid) == 0.5
    assert students[[s.student for s in students].index(full)].score(gid) == 0.0
    analysis = report.analyse(ASSIGNMENT, parts, students)
    expected = expected_analysis(truth, question_columns(course, ASSIGNMENT))
    with open(tmp_path / "out" / f"report-{ASSIGNMENT}.csv", newline="", encoding="utf-8") as f:
        rows = {r["grade_id"]: r for r in csv.DictReader(f)}
    assert analysis.students == 500 and analysis.group_size == 135
    assert list(rows) == [s.part.grade_id for s in analysis.parts] == list(expected)
    for stats in analysis.parts:
        want, row = expected[stats.part.grade_id], rows[stats.part.grade_id]
        assert stats.mean_points == pytest.approx(want["mean"])
        assert stats.full_credit == pytest.approx(want["full"])
        assert stats.discrimination == pytest.approx(want["disc"])
        assert (stats.not_answered, stats.not_graded) == (want["not_answered"], want["not_graded"])
        assert stats.attempted == 500 - want["not_answered"] - want["not_graded"]
        assert {g.label: g.count for g in stats.wrong} == dict(want["groups"])
        for g in stats.wrong:
            answers = sorted(((k, a) for (label, a), k in want["wrong"].items() if label == g.label),
                             key=lambda x: (-x[0], x[1]))[:report.TOP_ANSWERS]
            assert [(a.answer, a.count) for a in g.answers] == [(a, k) for k, a in answers]
        assert float(row["mean_points"]) == pytest.approx(want["mean"], abs=1e-6)
        assert float(row["full_credit_share"]) == pytest.approx(want["full"], abs=1e-6)
        assert float(row["discrimination"]) == pytest.approx(want["disc"], abs=1e-6)
        assert int(row["wrong"]) == sum(want["groups"].values())
    assert sum(analysis.histogram.counts) == 500


@pytest.mark.slow
def test_report_of_2000_students(tmp_path, capsys):
    """The report reads a class of 2,000 and says so (its time is printed, never asserted: a
    loaded machine is no defect; bench/grading.py --class-size times the grader at that size)."""
    course = Course(tmp_path / "course")
    t0 = time.perf_counter()
    generate_class(course, 2000, seed=1)
    made = time.perf_counter() - t0
    start = time.perf_counter()
    rc, out = run_cli("report", "-a", ASSIGNMENT, "--course", course.root, "--output-dir", tmp_path / "out")
    seconds = time.perf_counter() - start
    assert rc == 0, out
    assert "(2000 students)" in out
    with capsys.disabled():
        print(f"\nreport of 2000 generated students: {seconds:.2f} s (generating them took {made:.1f} s)")


@pytest.mark.parametrize("hint, label", [
    ("The starred 624 TFLOPS is 'with sparsity' (2:4 structured sparsity).",
     "The starred … TFLOPS is 'with sparsity' (2:4 structured sparsity)."),
    ("travels one way: 9e+10 bytes/s, not the 1.8e+11 bytes/s", "travels one way: … bytes/s, not the … bytes/s"),
    ("2B is the B << D shortcut; B = 1024 is not small", "2B is the B << D shortcut; B = … is not small"),
    ("int8 takes one byte per element; two bytes is bf16.", "int8 takes one byte per element; two bytes is bf16."),
    ("at 1,979 teraFLOPS, 3.35 TB/s", "at … teraFLOPS, … TB/s"),
])
def test_hints_quoting_a_students_own_figures_group_as_one_misconception(hint, label):
    assert report.hint_label(hint) == label
    a, b = report.wrong_label(f"x is wrong. Hint: {hint}"), report.wrong_label(
        f"x is wrong. Hint: {hint.replace('624', '1,979').replace('1024', '2048')}")
    assert a == b == label
