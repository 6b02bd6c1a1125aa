"""``report``: the instructor's item analysis of one assignment, as an HTML page and a CSV.

Per graded part (the ``grade_id`` of a test cell), over the students with a graded submission:

- **attempted**: students whose message for the part does not start with "not answered" (no
  answer variable) or "not graded" (the code stopped before the part); those two are counted
  apart. A student without a grading record counts as having attempted every part.
- **mean points** and **full-credit share** (score at least the part's points).
- **discrimination**, the upper-lower index: the mean share of the part's points earned by the
  top 27% of students by total score, minus that of the bottom 27%. Each group holds
  ``g = round(0.27 * N)`` students (at least 1; none when N < 2). Students tied at a group's
  cut share the seats left equally: with ``a`` students strictly above the cut score and ``t``
  tied at it, each tied student counts with weight ``(g - a) / t``, so a group always weighs
  exactly ``g`` and the index does not depend on the order of tied students. Totals are
  compared rounded to 9 decimals.
- **wrong answers**: attempted but short of full credit, grouped by the misconception the
  check's hint names (a message ending in ``Hint: <text>``), else by the status that zeroed the
  part (invalid notebook, tampered test cell, grader error), else "no hint". Within a group the
  answers are counted as text, numbers rounded to 3 significant figures: two answers are the
  same when they round alike (591.2 and 590.7 are both "591"; 594.4 and 594.6 are "594" and
  "595", two answers; the int 10**12 and the float 1.0004e12 are both "1e+12").

The assignment gets a histogram of totals. Everything is read from what grading recorded: the
scores from the gradebook (nbgrader's; a manual grade wins, as in ``export``), all of them in one
query; messages and answers from each student's ``grading.json``. Nothing is graded again.

The statistics are pure functions of plain data (:func:`analyse`); :func:`to_csv` and
:func:`render_html` render them. Every answer and hint goes through ``safe_text`` (HTML-escaped,
control and direction characters shown, no formula in a CSV cell): answers are the students' own
values.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .course import Course, CourseError
from .export import question_columns
from .feedback import CSP, STYLE, question_titles, split_hint
from .integrity import Suspect
from .safe_text import csv_text, html_text, number_text

UPPER_LOWER = 0.27        # share of the class in each discrimination group
LOW_DISCRIMINATION = 0.2  # below this a part tells strong from weak students poorly
TOP_ANSWERS = 3           # most common answers shown per group of wrong answers
NOT_ANSWERED = "not answered"
NOT_GRADED = "not graded"
NO_HINT = "no hint"
NO_RECORD = "no grading record"
NOT_RECORDED = "(answer not recorded)"
# statuses that zero a part whatever the answer (check.INVALID, TAMPERED, GRADER_ERROR)
ZEROING_STATUSES = ("invalid notebook", "tampered with a test cell", "grader error")


# --- plain data in ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    grade_id: str
    title: str
    points: float


@dataclass(frozen=True)
class PartResult:
    """One student's recorded result on one part."""

    score: float
    message: str | None = None   # None: no grading record for this student
    answers: dict | None = None  # {answer name: value or {"error": why}}; None: not recorded


@dataclass(frozen=True)
class StudentResult:
    student: str
    parts: dict[str, PartResult]

    def score(self, grade_id: str) -> float:
        result = self.parts.get(grade_id)
        return result.score if result is not None else 0.0

    @property
    def total(self) -> float:
        return float(sum(r.score for r in self.parts.values()))


# --- statistics out --------------------------------------------------------------------------

@dataclass(frozen=True)
class AnswerCount:
    answer: str
    count: int


@dataclass(frozen=True)
class WrongGroup:
    label: str                          # the hint, a zeroing status, "no hint" or "no grading record"
    count: int
    answers: tuple[AnswerCount, ...]    # the most common first


@dataclass(frozen=True)
class PartStats:
    part: Part
    students: int
    attempted: int
    not_answered: int
    not_graded: int
    mean_points: float | None
    full_credit: float | None           # share of students, 0..1
    discrimination: float | None        # -1..1; None with fewer than 2 students or no points
    wrong: tuple[WrongGroup, ...]       # the largest group first

    @property
    def wrong_count(self) -> int:
        return sum(g.count for g in self.wrong)


@dataclass(frozen=True)
class Histogram:
    edges: tuple[float, ...]            # bar k counts edges[k] <= total < edges[k + 1]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class ItemAnalysis:
    assignment: str
    parts: tuple[PartStats, ...]
    totals: tuple[float, ...]           # one per student, in the order given
    max_total: float
    group_size: int                     # students in each discrimination group
    histogram: Histogram

    @property
    def students(self) -> int:
        return len(self.totals)

    @property
    def mean_total(self) -> float | None:
        return sum(self.totals) / len(self.totals) if self.totals else None

    @property
    def median_total(self) -> float | None:
        ordered = sorted(self.totals)
        n = len(ordered)
        if not n:
            return None
        return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


# --- the statistics, pure ----------------------------------------------------------------------

def outcome(message: str | None) -> str:
    """``"not answered"``, ``"not graded"`` or ``"attempted"`` (also when there is no record)."""
    text = (message or "").lstrip()
    if text.startswith(NOT_ANSWERED):
        return NOT_ANSWERED
    if text.startswith(NOT_GRADED):
        return NOT_GRADED
    return "attempted"


_FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def hint_label(hint: str) -> str:
    """A hint as a misconception's name: the figures it quotes (``624 TFLOPS``, ``9e+10
    bytes/s``: anything of 3 or more characters, a decimal point or an exponent) become ``…``,
    so students with their own numbers who make the same slip share one group. Small counts
    and ratios (``2 bytes``, ``2:4``, ``2B``) stay."""

    def one(match: re.Match) -> str:
        token = match.group(0)
        return "…" if len(token) >= 3 or "." in token or "e" in token.lower() else token

    return _FIGURE.sub(one, hint)


def wrong_label(message: str | None) -> str:
    """The group of a wrong answer: its hint (:func:`hint_label`), else the status that zeroed
    it, else "no hint"."""
    if message is None:
        return NO_RECORD
    text, hint = split_hint(message)
    if hint:
        return hint_label(hint)
    return next((s for s in ZEROING_STATUSES if text.startswith(s)), NO_HINT)


def sig3(number) -> str:
    """A number rounded to 3 significant figures, as text: 590.746 -> "591", 1.2345e12 ->
    "1.23e+12", 0.5 -> "0.5", -0.0 -> "0". Two numbers are the same answer when these agree."""
    try:
        rounded = float(format(number, ".3g"))
    except (OverflowError, ValueError):
        return str(number)
    return "0" if rounded == 0 else format(rounded, "g")


def value_text(value) -> str:
    """One recorded answer value as text: numbers by :func:`sig3`, strings quoted, lists
    element by element, an answer that could not be recorded as ``<why>``."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return sig3(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        if set(value) == {"error"}:
            return f"<{value['error']}>"
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)


def answer_text(answers: dict | None) -> str:
    """A part's answers as one text, ``"a = 1, b = [2, 3]"`` (names sorted); the key by which
    wrong answers are counted."""
    if answers is None:
        return NOT_RECORDED
    if not answers:
        return "(no value)"
    return ", ".join(f"{name} = {value_text(answers[name])}" for name in sorted(answers))


def group_size(students: int, fraction: float = UPPER_LOWER) -> int:
    """Students in each discrimination group: ``fraction * students`` rounded half up, at least
    1; 0 when there are fewer than 2 students (no index)."""
    if students < 2:
        return 0
    return max(1, math.floor(fraction * students + 0.5))


def top_weights(totals: list[float], size: int) -> list[float]:
    """Each student's weight in the group of the ``size`` highest totals: 1 above the cut, 0
    below, and the students tied at the cut share the seats left, ``(size - above) / tied``
    each. The weights add up to ``size`` (when there are that many students)."""
    keys = [round(t, 9) for t in totals]
    counts = Counter(keys)
    weight, above = {}, 0
    for value in sorted(counts, reverse=True):
        tied = counts[value]
        weight[value] = min(1.0, max(0.0, (size - above) / tied))
        above += tied
    return [weight[k] for k in keys]


def discrimination(shares: list[float], upper: list[float], lower: list[float]) -> float | None:
    """Mean share in the upper group minus mean share in the lower group (weights as
    :func:`top_weights` gives them)."""
    up, low = sum(upper), sum(lower)
    if not shares or up <= 0 or low <= 0:
        return None
    return sum(w * s for w, s in zip(upper, shares)) / up - sum(w * s for w, s in zip(lower, shares)) / low


def part_stats(part: Part, students: list[StudentResult], upper: list[float], lower: list[float],
               top: int = TOP_ANSWERS) -> PartStats:
    """The statistics of one part (``upper``/``lower``: each student's group weights)."""
    n = len(students)
    scores = [s.score(part.grade_id) for s in students]
    outcomes: Counter[str] = Counter()
    groups: dict[str, Counter] = {}
    for student, score in zip(students, scores):
        result = student.parts.get(part.grade_id)
        message = result.message if result is not None else None
        kind = outcome(message)
        outcomes[kind] += 1
        if kind == "attempted" and score < part.points:
            label = wrong_label(message)
            groups.setdefault(label, Counter())[answer_text(result.answers if result else None)] += 1
    wrong = tuple(sorted(
        (WrongGroup(label, sum(c.values()),
                    tuple(AnswerCount(a, k) for a, k in sorted(c.items(), key=lambda x: (-x[1], x[0]))[:top]))
         for label, c in groups.items()),
        key=lambda g: (-g.count, g.label)))
    shares = [s / part.points for s in scores] if part.points > 0 else []
    return PartStats(
        part=part, students=n, attempted=outcomes["attempted"],
        not_answered=outcomes[NOT_ANSWERED], not_graded=outcomes[NOT_GRADED],
        mean_points=sum(scores) / n if n else None,
        full_credit=sum(1 for s in scores if s >= part.points) / n if n else None,
        discrimination=discrimination(shares, upper, lower),
        wrong=wrong,
    )


def histogram(totals: list[float], max_total: float) -> Histogram:
    """Bars of the score histogram. Up to 40 points: one bar per whole point, bar k holding
    ``k <= total < k + 1`` (the last bar: full marks). Beyond: 20 bars of equal width, the last
    closed. Totals outside ``[0, max_total]`` (extra credit) go to the end bars."""
    top = max(max_total, 0.0)
    if top <= 40 and float(top).is_integer():
        bars = int(top) + 1
        edges = tuple(float(k) for k in range(bars + 1))
        index = lambda t: int(math.floor(t))  # noqa: E731
    else:
        bars, width = 20, top / 20
        edges = tuple(k * width for k in range(bars + 1))
        index = lambda t: int(math.floor(t / width))  # noqa: E731
    counts = [0] * bars
    for t in totals:
        counts[min(max(index(t), 0), bars - 1)] += 1
    return Histogram(edges, tuple(counts))


def analyse(assignment: str, parts: list[Part], students: list[StudentResult]) -> ItemAnalysis:
    """The item analysis of a class."""
    totals = [sum(s.score(p.grade_id) for p in parts) for s in students]
    size = group_size(len(students))
    upper = top_weights(totals, size)
    lower = top_weights([-t for t in totals], size)
    stats = tuple(part_stats(p, students, upper, lower) for p in parts)
    max_total = float(sum(p.points for p in parts))
    return ItemAnalysis(assignment, stats, tuple(totals), max_total, size, histogram(totals, max_total))


# --- reading the recorded results ------------------------------------------------------------

def read_scores(course: Course, assignment: str) -> dict[str, dict[str, float]]:
    """student -> {grade_id: score} for every submission of ``assignment`` in the gradebook, in
    one query (nbgrader's ``Grade.score``: the manual score if any, else the autograder's, plus
    extra credit)."""
    from nbgrader.api import Assignment, Grade, GradeCell, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import select

    query = (select(SubmittedAssignment.student_id, GradeCell.name, Grade.score)
             .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
             .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
             .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
             .join(GradeCell, GradeCell.id == Grade.cell_id)
             .where(Assignment.name == assignment))
    out: dict[str, dict[str, float]] = {}
    with course.gradebook() as gb:
        for student, grade_id, score in gb.db.execute(query):
            out.setdefault(student, {})[grade_id] = float(score or 0.0)
        gb.db.commit()  # end the read transaction
    return out


def read_class(course: Course, assignment: str) -> tuple[list[Part], list[StudentResult]]:
    """The parts (in notebook order, titled) and one :class:`StudentResult` per student with a
    submission in the gradebook (sorted by id), messages and answers from ``grading.json``."""
    from .grading.plan import load_result

    titles = question_titles(course, assignment)
    parts = [Part(gid, titles.get(gid, ""), points) for gid, points in question_columns(course, assignment)]
    scores = read_scores(course, assignment)
    students = []
    for student in sorted(scores):
        record = load_result(course, student, assignment)
        results = {}
        for part in parts:
            score = scores[student].get(part.grade_id, 0.0)
            if record is None:
                results[part.grade_id] = PartResult(score)
                continue
            answers = record.answers.get(part.grade_id) if record.answers else None
            results[part.grade_id] = PartResult(score, record.messages.get(part.grade_id, ""),
                                                answers if isinstance(answers, dict) else None)
        students.append(StudentResult(student, results))
    return parts, students


# --- rendering ---------------------------------------------------------------------------------

CSV_COLUMNS = ["grade_id", "title", "points", "students", "attempted", "not_answered", "not_graded",
               "mean_points", "full_credit_share", "discrimination", "wrong", "wrong_by_hint",
               "most_common_wrong_answer", "most_common_wrong_count"]


def _num(value: float | None) -> str:
    return "" if value is None else number_text(value)


def to_csv(analysis: ItemAnalysis) -> str:
    """One row per part (columns :data:`CSV_COLUMNS`). ``wrong_by_hint`` is a JSON object
    ``{label: count}``, the largest group first (hints hold commas and semicolons, so no plain
    separator would do); ``most_common_wrong_answer`` and its count are those of the largest
    group."""
    rows: list[list[object]] = [list(CSV_COLUMNS)]
    for s in analysis.parts:
        first = s.wrong[0].answers[0] if s.wrong and s.wrong[0].answers else None
        rows.append([
            s.part.grade_id, s.part.title, s.part.points, s.students, s.attempted,
            s.not_answered, s.not_graded, s.mean_points, s.full_credit, s.discrimination,
            s.wrong_count, json.dumps({g.label: g.count for g in s.wrong}, ensure_ascii=False),
            first.answer if first else "", first.count if first else None,
        ])
    return csv_text(rows)


def _png(fig) -> str:
    """A matplotlib figure as a ``data:`` URL (Agg, no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def histogram_image(analysis: ItemAnalysis) -> str:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    h = analysis.histogram
    fig = Figure(figsize=(7, 3))
    ax = fig.add_subplot()
    if len(h.counts) == analysis.max_total + 1:  # one bar per whole point: centred on it
        ax.bar(h.edges[:-1], h.counts, width=0.9, color="#4c72b0")
        ax.set_xlim(-0.6, analysis.max_total + 0.6)
    else:
        widths = [b - a for a, b in zip(h.edges, h.edges[1:])]
        ax.bar(h.edges[:-1], h.counts, width=widths, align="edge", color="#4c72b0", edgecolor="white")
    ax.set_xlabel(f"total score (of {analysis.max_total:g})")
    ax.set_ylabel("students")
    ax.set_title(f"{analysis.assignment}: scores of {analysis.students} students")
    locator = ax.yaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # the default AutoLocator is one: whole students only
        locator.set_params(integer=True)
    return _png(fig)


def parts_image(analysis: ItemAnalysis) -> str:
    """Per part: the share that attempted it and the share with full credit (horizontal bars)."""
    from matplotlib.figure import Figure

    parts = analysis.parts
    fig = Figure(figsize=(7, 0.8 + 0.28 * len(parts)))
    ax = fig.add_subplot()
    ys = list(range(len(parts)))[::-1]
    n = max(analysis.students, 1)
    ax.barh(ys, [s.attempted / n for s in parts], height=0.8, color="#c6d4ea", label="attempted")
    ax.barh(ys, [s.full_credit or 0 for s in parts], height=0.5, color="#2b7a3d", label="full credit")
    ax.set_yticks(ys, [s.part.grade_id for s in parts], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of students")
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


REPORT_STYLE = STYLE + """
body { max-width: 75rem; }
td.num { text-align: right; white-space: nowrap; }
td.low { background: #fde8e8; }
ul.wrong { margin: 0; padding-left: 1.1rem; }
.count { color: #555; }
img { max-width: 100%; }
"""


def _pct(share: float | None) -> str:
    return "&ndash;" if share is None else f"{100 * share:.0f}%"


def _fixed(value: float | None, digits: int = 2) -> str:
    return "&ndash;" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class Integrity:
    """Whose numbers the submissions hold (a homework with per-student numbers)."""

    not_own: tuple[tuple[str, str], ...]   # (student, the grader's note): graded with their own
    suspects: tuple[Suspect, ...]          # lost parts whose answers fit a classmate's numbers


def integrity_html(integrity: Integrity | None, e) -> str:
    if integrity is None:
        return ""
    parts = ["<h2 id=\"numbers\">Whose numbers</h2>",
             "<p>Each student answers their own numbers. A notebook that holds another id or key was "
             "graded with the submitter's numbers and is flagged in the gradebook. A student is listed "
             "under possible copying when the answers of parts they lost pass those parts' checks with "
             "one classmate's numbers (at least two parts, and at least half of the parts they lost): "
             "a lead to follow up, not proof.</p>"]
    if integrity.not_own:
        parts.append("<h3>Notebooks not the student's own</h3><table><thead><tr><th>Student</th>"
                     "<th>What the grader found</th></tr></thead><tbody>"
                     + "".join(f"<tr><td><code>{e(s)}</code></td><td>{e(why)}</td></tr>"
                               for s, why in integrity.not_own) + "</tbody></table>")
    else:
        parts.append("<p>Every notebook held its submitter's own id and key.</p>")
    if integrity.suspects:
        rows = "".join(
            f"<tr><td><code>{e(x.student)}</code></td><td><code>{e(x.classmate)}</code></td>"
            f"<td class=\"num\">{x.classmate_parts} of {x.lost}</td>"
            f"<td>{', '.join(f'<code>{e(g)}</code>' for g in x.fitting)}</td></tr>"
            for x in integrity.suspects)
        parts.append("<h3>Possible copying</h3><table><thead><tr><th>Student</th><th>Numbers their "
                     "answers fit</th><th>Lost parts that fit them</th><th>Parts whose answers fit a "
                     "classmate's numbers</th></tr></thead><tbody>" + rows + "</tbody></table>")
    else:
        parts.append("<p>No student's lost parts fit a classmate's numbers.</p>")
    return "\n".join(parts)


def render_html(analysis: ItemAnalysis, integrity: Integrity | None = None) -> str:
    """The page: summary, definitions, histogram, per-part chart and table, and (per-student
    numbers) whose numbers the submissions hold. Self-contained (images are ``data:`` URLs; the
    CSP forbids scripts and remote content)."""
    e = html_text
    a = analysis
    rows = []
    for s in a.parts:
        groups = "".join(
            f"<li><span class=\"hint\">{e(g.label)}</span> <span class=\"count\">({g.count})</span>: "
            + ", ".join(f"<code>{e(x.answer)}</code> &times;{x.count}" for x in g.answers)
            + "</li>"
            for g in s.wrong)
        wrong_html = f"<ul class=\"wrong\">{groups}</ul>" if groups else "&ndash;"
        low = s.discrimination is not None and s.discrimination < LOW_DISCRIMINATION
        rows.append(
            "<tr>"
            f"<td><code>{e(s.part.grade_id)}</code><br>{e(s.part.title)}</td>"
            f"<td class=\"num\">{s.part.points:g}</td>"
            f"<td class=\"num\">{s.attempted} ({_pct(s.attempted / s.students if s.students else None)})</td>"
            f"<td class=\"num\">{_fixed(s.mean_points)}</td>"
            f"<td class=\"num\">{_pct(s.full_credit)}</td>"
            f"<td class=\"num{' low' if low else ''}\">{_fixed(s.discrimination)}</td>"
            f"<td>{wrong_html}</td>"
            f"<td class=\"num\">{s.not_answered}"
            + (f"<br><span class=\"count\">+{s.not_graded} not graded</span>" if s.not_graded else "")
            + "</td></tr>"
        )
    mean, median = a.mean_total, a.median_total
    bars = "".join(
        f"<tr><td>{lo:g}{'' if i == len(a.histogram.counts) - 1 else f' &ndash; &lt;{hi:g}'}</td>"
        f"<td class=\"num\">{c}</td></tr>"
        for i, (lo, hi, c) in enumerate(zip(a.histogram.edges, a.histogram.edges[1:], a.histogram.counts)))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{e(a.assignment)}: item analysis</title>
<style>{REPORT_STYLE}</style>
</head>
<body>
<h1>{e(a.assignment)}: item analysis</h1>
<p>{a.students} students with a graded submission &middot; mean total
<strong>{_fixed(mean)}</strong> &middot; median {_fixed(median)} &middot; of {a.max_total:g} points.</p>
<h2>Scores</h2>
<img id="histogram" alt="histogram of total scores" src="{histogram_image(a)}">
<details><summary>the histogram's counts</summary>
<table><thead><tr><th>total</th><th>students</th></tr></thead><tbody>{bars}</tbody></table></details>
<h2>Parts</h2>
<img id="parts" alt="share of students who attempted each part and who got full credit" src="{parts_image(a)}">
<table>
<thead><tr><th>Part</th><th>Points</th><th>Attempted</th><th>Mean points</th><th>Full credit</th>
<th>Discrimination</th><th>Wrong answers, by the misconception their hint names</th><th>Not answered</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{integrity_html(integrity, e)}
<h2>How to read this</h2>
<dl>
<dt>Attempted</dt><dd>the check's message does not start with &ldquo;not answered&rdquo; (no answer
variable) or &ldquo;not graded&rdquo; (the notebook stopped before the part); those are in the last
column, not among the wrong answers.</dd>
<dt>Full credit</dt><dd>share of students whose score is the part's points (or more).</dd>
<dt>Discrimination</dt><dd>the upper-lower index: mean share of the part's points in the top 27% of
students by total score, minus the same in the bottom 27% (here {a.group_size} students each).
Students tied at a group's cut share the seats left equally, so each group weighs exactly
{a.group_size}. It runs from &minus;1 to 1; below {LOW_DISCRIMINATION:g} (shaded) the part tells
strong from weak students poorly: check its wording and its expected answer.</dd>
<dt>Wrong answers</dt><dd>attempted but short of full credit, grouped by the hint of the check
(a known misconception), else by the status that zeroed the part, else &ldquo;{NO_HINT}&rdquo;;
the {TOP_ANSWERS} most common answers of each group with their counts. Numbers are rounded to 3
significant figures, so answers that agree to 3 figures count as one.</dd>
</dl>
</body>
</html>
"""


def render_table(analysis: ItemAnalysis) -> str:
    """The parts for a terminal: attempted, mean, full credit, discrimination, top misconception."""
    head = ["part", "attempted", "mean", "full", "discr.", "most common wrong (hint)"]
    body = [[s.part.grade_id, str(s.attempted), _num(None if s.mean_points is None else round(s.mean_points, 2)),
             "-" if s.full_credit is None else f"{100 * s.full_credit:.0f}%",
             "-" if s.discrimination is None else f"{s.discrimination:.2f}",
             f"{s.wrong[0].label} ({s.wrong[0].count})" if s.wrong else ""] for s in analysis.parts]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(head, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in body]
    return "\n".join(lines)


def read_integrity(course: Course, assignment: str, students: list[str]) -> Integrity | None:
    """Whose numbers the graded notebooks hold (None: the homework gives everyone the same)."""
    from scalebook.homework import spec_for

    from .grading.grade import course_spec
    from .integrity import find_copies, recorded_class

    if spec_for(assignment) is None:
        return None
    recorded = recorded_class(course, assignment, students)
    not_own = tuple((r.student, r.problem) for r in recorded if r.problem)
    suspects = tuple(find_copies(course_spec(course, assignment), recorded))
    return Integrity(not_own, suspects)


def write_report(course: Course, assignment: str, output_dir: Path
                 ) -> tuple[ItemAnalysis, Path, Path, Integrity | None]:
    """Write ``report-<assignment>.html`` and ``.csv`` into ``output_dir``; return the analysis,
    the two paths and whose numbers the notebooks hold."""
    parts, students = read_class(course, assignment)
    if not students:
        raise CourseError(f"the gradebook {course.gradebook_url} has no graded submission of {assignment}: "
                          "collect and grade it first")
    analysis = analyse(assignment, parts, students)
    integrity = read_integrity(course, assignment, [s.student for s in students])
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    html_path, csv_path = output_dir / f"report-{assignment}.html", output_dir / f"report-{assignment}.csv"
    html_path.write_text(render_html(analysis, integrity), encoding="utf-8")
    csv_path.write_text(to_csv(analysis), encoding="utf-8")
    return analysis, html_path, csv_path, integrity
