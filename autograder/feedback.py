"""``feedback``: one HTML page per student, ``feedback/<student>/<assignment>/feedback.html``.

For every graded question: its points, the result and the check's message with its hint. The
message comes from the grading record beside the autograded notebook (``grading.json``, the
``SubmissionResult`` of the last grading) or, failing that, from the outputs of the test cells
in the autograded notebook. Messages quote the student's values
(``x should be a number, got the string '<script>'``), so every piece of text is HTML-escaped
and the page forbids scripts and remote content (Content-Security-Policy).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .course import Course, load_report
from .export import grade_rows

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@dataclass
class QuestionFeedback:
    grade_id: str
    title: str
    score: float | None
    points: float
    message: str
    hint: str

    @property
    def result(self) -> str:
        if self.score is None:
            return "not graded"
        if self.score >= self.points:
            return "correct"
        if self.score > 0:
            return "partly correct"
        low = self.message.lower()
        if "not answered" in low or "not defined" in low:
            return "not answered"
        return "incorrect"


def split_hint(message: str) -> tuple[str, str]:
    """``"x is not within 5% ... Hint: use dense FLOPs"`` -> (message, hint)."""
    message = ANSI.sub("", message or "").strip()
    head, sep, hint = message.partition("Hint:")
    return (head.strip(), hint.strip()) if sep else (message, "")


def question_titles(course: Course, assignment: str) -> dict[str, str]:
    """grade_id -> the heading of the problem the test cell belongs to ("Problem 2 · ...")."""
    titles: dict[str, str] = {}
    folder = course.release(assignment)
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        heading = ""
        for cell in json.loads(path.read_text("utf-8")).get("cells", []):
            if cell.get("cell_type") == "markdown":
                for line in _join(cell.get("source", "")).splitlines():
                    if line.startswith("#"):
                        heading = re.sub(r"[*_`$]", "", line.lstrip("#")).strip()[:120]
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and meta.get("grade_id"):
                titles[meta["grade_id"]] = heading
    return titles


def read_autograded(course: Course, student: str, assignment: str) -> tuple[dict[str, str], list[str]]:
    """From the autograded notebook: grade_id -> the text of each test cell's outputs, and the
    errors raised by the student's own cells ("hw1-q6-dot: ZeroDivisionError: ...")."""
    messages: dict[str, str] = {}
    errors: list[str] = []
    folder = course.autograded(student, assignment)
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        try:
            cells = json.loads(path.read_text("utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue
        for index, cell in enumerate(cells):
            if cell.get("cell_type") != "code":
                continue
            meta = cell.get("metadata", {}).get("nbgrader", {})
            outputs = [o for o in cell.get("outputs", []) if isinstance(o, dict)]
            if meta.get("grade") and meta.get("grade_id"):
                texts = []
                for output in outputs:
                    kind = output.get("output_type")
                    if kind == "error":
                        texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
                    elif kind == "stream":
                        texts.append(_join(output.get("text", "")))
                    elif kind in ("execute_result", "display_data"):
                        texts.append(_join(output.get("data", {}).get("text/plain", "")))
                messages[meta["grade_id"]] = ANSI.sub("", "\n".join(t for t in texts if t)).strip()
                continue
            for output in outputs:
                if output.get("output_type") == "error":
                    where = meta.get("grade_id") or f"cell {index + 1}"
                    evalue = ANSI.sub("", str(output.get("evalue", ""))).strip().splitlines()
                    errors.append(f"{where}: {output.get('ename', 'Error')}: {evalue[0] if evalue else ''}")
    return messages, errors


def _join(text) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


@dataclass
class StudentFeedback:
    student: str
    assignment: str
    status: str
    problems: list[str]
    cell_errors: list[str]
    questions: list[QuestionFeedback]


def student_feedback(course: Course, assignment: str) -> dict[str, StudentFeedback]:
    """student -> what their page shows, for every student with a graded submission."""
    questions, rows = grade_rows(course, assignment)
    report = load_report(course, assignment)
    titles = question_titles(course, assignment)
    out = {}
    for row in rows:
        entry = report.get(row.student)
        if entry is None and not course.autograded(row.student, assignment).is_dir():
            continue  # nothing graded for this student
        from_notebook, cell_errors = read_autograded(course, row.student, assignment)
        messages = dict((entry or {}).get("messages", {})) or from_notebook
        items = []
        for gid, points in questions:
            text, hint = split_hint(messages.get(gid, ""))
            items.append(QuestionFeedback(gid, titles.get(gid, ""), row.scores.get(gid), points, text, hint))
        problems = [str(p) for p in (entry or {}).get("problems", [])]
        out[row.student] = StudentFeedback(row.student, assignment, row.status, problems, cell_errors, items)
    return out


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #ccc; padding: .4rem .6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.points { white-space: nowrap; text-align: right; }
.correct { color: #11672b; } .incorrect, .not-answered { color: #a11; } .partly-correct { color: #8a5a00; }
.hint { background: #fff7d6; }
pre { white-space: pre-wrap; margin: 0; font-family: inherit; }
"""


def render_html(fb: StudentFeedback) -> str:
    e = lambda s: html.escape(str(s), quote=True)  # noqa: E731
    student, assignment, items = fb.student, fb.assignment, fb.questions
    total = sum(q.score or 0 for q in items)
    possible = sum(q.points for q in items)
    rows = []
    for q in items:
        score = "&ndash;" if q.score is None else f"{q.score:g}"
        rows.append(
            "<tr>"
            f"<td><code>{e(q.grade_id)}</code><br>{e(q.title)}</td>"
            f"<td class=\"points\">{score} / {q.points:g}</td>"
            f"<td class=\"{e(q.result.replace(' ', '-'))}\">{e(q.result)}</td>"
            f"<td><pre>{e(q.message)}</pre></td>"
            f"<td class=\"{'hint' if q.hint else ''}\"><pre>{e(q.hint)}</pre></td>"
            "</tr>"
        )
    problem_html = ""
    if fb.problems:
        problem_html += ("<h2>Problems with the submission</h2><ul>"
                         + "".join(f"<li>{e(p)}</li>" for p in fb.problems) + "</ul>")
    if fb.cell_errors:
        problem_html += ("<h2>Errors raised by your cells</h2><p>The cells after them still ran.</p><ul>"
                         + "".join(f"<li><code>{e(x)}</code></li>" for x in fb.cell_errors) + "</ul>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{e(assignment)}: feedback for {e(student)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{e(assignment)}: feedback for {e(student)}</h1>
<p>Score: <strong>{total:g} / {possible:g}</strong> &middot; status: {e(fb.status)}</p>
{problem_html}
<table>
<thead><tr><th>Question</th><th>Points</th><th>Result</th><th>Feedback</th><th>Hint</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
</body>
</html>
"""


def write_feedback(course: Course, assignment: str, students: list[str] | None = None) -> dict[str, Path]:
    """Write the feedback pages; return student -> path."""
    written = {}
    for student, fb in sorted(student_feedback(course, assignment).items()):
        if students and student not in students:
            continue
        folder = course.feedback(student, assignment)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "feedback.html"
        path.write_text(render_html(fb), encoding="utf-8")
        written[student] = path
    return written
