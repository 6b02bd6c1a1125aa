"""``feedback``: one HTML page per student, ``feedback/<student>/<assignment>/feedback.html``.

For every graded question: its points, the result and the check's message with its hint. The
message comes from the grading record beside the autograded notebook (``grading.json``, the
``SubmissionResult`` of the last grading) or, failing that, from the outputs of the test cells
in the autograded notebook. Messages quote the student's values
(``x should be a number, got the string '<script>'``), so every piece of text is HTML-escaped
(``safe_text.html_text``, which also shows control and direction characters)
and the page forbids scripts and remote content (Content-Security-Policy).

A late submission's page shows the raw score, how late it was, the penalty of the course's
policy and the final score (``deadlines.py``; computed from the raw scores, as ``export``
does, so the two always agree).

``release_solutions`` (``feedback --release-solutions``), for after the due date: every part
the student did not get full marks for also shows its expected answers (the answer names its
test reads) and the worked solution: the code of the instructor's solution cells that bind
those names, from the *source* notebook, between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (the cell's last binding of a name before the test, as the grader
captures it). Parts the student got right show nothing more. Before the due date (or with no
due date set) it is refused, unless ``force``.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scalebook.homework import spec_for
from scalebook.variants import variant_from

from .course import Course, CourseError, load_report
from .export import grade_rows
from .notebook import VARIANT_NAME, read_cells
from .safe_text import html_text

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
        for cell in read_cells(json.loads(path.read_text("utf-8"))):
            if cell.cell_type == "markdown":
                for line in cell.source.splitlines():
                    if line.startswith("#"):
                        heading = re.sub(r"[*_`$]", "", line.lstrip("#")).strip()[:120]
            if cell.graded and cell.grade_id:
                titles[cell.grade_id] = heading
    return titles


def read_autograded(course: Course, student: str, assignment: str) -> tuple[dict[str, str], list[str]]:
    """From the autograded notebook: grade_id -> the text of each test cell's outputs, and the
    errors raised by the student's own cells ("hw1-q6-dot: ZeroDivisionError: ...")."""
    messages: dict[str, str] = {}
    errors: list[str] = []
    folder = course.autograded(student, assignment)
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        try:
            nb = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        for cell in read_cells(nb):
            if cell.cell_type != "code":
                continue
            outputs = [o for o in nb["cells"][cell.index].get("outputs", []) if isinstance(o, dict)]
            if cell.graded and cell.grade_id:
                texts = []
                for output in outputs:
                    kind = output.get("output_type")
                    if kind == "error":
                        texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
                    elif kind == "stream":
                        texts.append(_join(output.get("text", "")))
                    elif kind in ("execute_result", "display_data"):
                        texts.append(_join(output.get("data", {}).get("text/plain", "")))
                messages[cell.grade_id] = ANSI.sub("", "\n".join(t for t in texts if t)).strip()
                continue
            for output in outputs:
                if output.get("output_type") == "error":
                    where = cell.grade_id or f"cell {cell.index + 1}"
                    evalue = ANSI.sub("", str(output.get("evalue", ""))).strip().splitlines()
                    errors.append(f"{where}: {output.get('ename', 'Error')}: {evalue[0] if evalue else ''}")
    return messages, errors


def _join(text) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


@dataclass
class WorkedSolution:
    """What a missed part shows once solutions are released."""
    answers: tuple[str, ...]  # the answer names the part's test reads
    code: list[str]           # the solution code of each instructor cell binding them


@dataclass
class StudentFeedback:
    student: str
    assignment: str
    status: str
    problems: list[str]
    cell_errors: list[str]
    questions: list[QuestionFeedback]
    days_late: int = 0
    penalty: float = 0.0
    submitted: datetime | None = None
    policy: str = ""
    solutions: dict[str, WorkedSolution] = field(default_factory=dict)  # grade_id -> missed part
    numbers: list[str] = field(default_factory=list)  # the student's own numbers, a line per problem
    extension: timedelta | None = None  # granted to this student: their due date moves by it
    expected: dict[str, str] = field(default_factory=dict)  # answer name -> its value for their numbers
    untimed_extension: bool = False  # marked LATE without a time, with an extension: not charged


SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"


def solution_code(source: str) -> str:
    """The lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (all of them if the
    cell has no markers), dedented."""
    lines = source.splitlines()
    if not any(SOLUTION_BEGIN in line for line in lines):
        return textwrap.dedent(source).strip("\n")
    out, inside = [], False
    for line in lines:
        if SOLUTION_BEGIN in line:
            inside = True
        elif SOLUTION_END in line:
            inside = False
        elif inside:
            out.append(line)
    return textwrap.dedent("\n".join(out)).strip("\n")


def bound_names(code: str) -> set[str]:
    """Every name the code assigns anywhere (an over-approximation is harmless here)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def worked_solutions(course: Course, assignment: str) -> dict[str, WorkedSolution]:
    """grade_id of each test cell -> its answer names and the solution code that binds them,
    from the instructor's source notebooks (``source/<A>/``)."""
    from .grading.names import answer_names

    out: dict[str, WorkedSolution] = {}
    folder = course.source(assignment)
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        latest: dict[str, int] = {}  # answer name -> index of the last solution cell binding it
        codes: list[str] = []
        for cell in read_cells(json.loads(path.read_text("utf-8"))):
            if cell.cell_type != "code":
                continue
            if cell.solution and not cell.graded:
                codes.append(solution_code(cell.source))
                for name in bound_names(codes[-1]):
                    latest[name] = len(codes) - 1
            elif cell.graded and cell.grade_id:
                try:
                    names = answer_names(cell.source)
                except SyntaxError:
                    names = ()
                cells = sorted({latest[n] for n in names if n in latest})
                out[cell.grade_id] = WorkedSolution(tuple(names), [codes[i] for i in cells])
    return out


SAMPLE_ASIDE = re.compile(r"\s*\((?:with )?(?:the )?(?:book's )?sample\b[^)]*\)", re.IGNORECASE)
SAMPLE_COMMENT = re.compile(r"[ \t]*#\s*(?:with )?(?:the )?(?:book's )?sample\b.*$", re.IGNORECASE)
SAMPLE_TAIL = re.compile(r"\s*;\s*(?:the )?sample\b.*$", re.IGNORECASE)  # "# bf16; sample numbers: ..."


def shown_solution(code: str) -> str:
    """A solution as a student is shown it: what works it out with the book's sample numbers
    (a ``# sample numbers: ...`` comment or its ``; sample: ...`` tail, a ``(sample numbers,
    ...)`` aside) is dropped, since
    the page gives the values for the student's own numbers instead."""
    out = []
    for line in code.splitlines():
        if "sample" in line.lower():
            line = SAMPLE_TAIL.sub("", SAMPLE_COMMENT.sub("", SAMPLE_ASIDE.sub("", line))).rstrip()
            if not line.strip() or line.strip() == "#":
                continue
        out.append(line)
    return "\n".join(out)


def expected_values(course: Course, assignment: str, numbers: dict | None, wanted: set[str]) -> dict[str, str]:
    """answer name -> its value for the student's own ``numbers`` (drawn parameters), shown.

    The instructor's source notebook is run here (trusted code) as a student with those numbers
    would run it: the given and solution cells in order, the setup cell's ``VARIANT`` replaced
    by the student's; test cells and cells that use JAX are skipped, and it stops once every
    wanted name is bound. A name it cannot compute is left out."""
    import contextlib
    import io

    spec = spec_for(assignment)
    if spec is None or not numbers or not wanted:
        return {}
    try:
        variant = variant_from(spec, numbers)
    except (ValueError, KeyError, TypeError):
        return {}
    namespace: dict = {"__name__": "__solutions__"}
    folder = course.source(assignment)
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        for cell in read_cells(json.loads(path.read_text("utf-8"))):
            if cell.cell_type != "code" or cell.graded:
                continue
            source = cell.source
            code = solution_code(source) if cell.solution else source
            if "jax" in code:
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(compile(code, f"<{assignment} solution>", "exec"), namespace)  # noqa: S102
            except Exception:  # noqa: BLE001 -- a cell that needs what was skipped
                pass
            if "your_numbers(" in source:
                namespace[VARIANT_NAME] = variant
            if wanted <= set(namespace):
                break
    import matplotlib.pyplot as plt

    plt.close("all")
    return {n: _shown_value(namespace[n]) for n in sorted(wanted) if n in namespace}


def _shown_value(value) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        items = [_shown_value(v) for v in list(value)[:8]]
        return "[" + ", ".join(items) + (", ..." if len(value) > 8 else "") + "]"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def numbers_lines(assignment: str, entry: dict | None) -> list[str]:
    """The numbers a student was graded on, one line per problem, from their ``grading.json``
    (empty for a homework without per-student numbers)."""
    spec = spec_for(assignment)
    drawn = ((entry or {}).get("variant") or {}).get("numbers")
    if spec is None or not isinstance(drawn, dict):
        return []
    try:
        return variant_from(spec, drawn).table().splitlines()
    except (ValueError, KeyError, TypeError):  # numbers from an older spec of this homework
        return [f"{name} = {value}" for name, value in drawn.items()]


def check_release(course: Course, assignment: str, *, force: bool = False,
                  now: datetime | None = None) -> None:
    """Refuse to release solutions before the due date (or without one), unless ``force``."""
    from .deadlines import due_date, show_when

    if force:
        return
    due = due_date(course, assignment)
    if due is None:
        raise CourseError(f"{assignment} has no due date: set it with `python -m autograder due -a {assignment} "
                          "--date ...` before releasing solutions (or pass --force)")
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    if now < due:
        raise CourseError(f"{assignment} is due {show_when(due)}: solutions are not released before then "
                          "(pass --force to release them anyway)")


def student_feedback(course: Course, assignment: str, *,
                     release_solutions: bool = False) -> dict[str, StudentFeedback]:
    """student -> what their page shows, for every student with a graded submission."""
    from .deadlines import load_policy

    questions, rows = grade_rows(course, assignment)
    from .overrides import current

    policy = load_policy(course, assignment).describe()
    overridden = current(course, assignment)
    worked = worked_solutions(course, assignment) if release_solutions else {}
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
        mine = overridden.get(row.student, {})
        for gid, points in questions:
            text, hint = split_hint(messages.get(gid, ""))
            if gid in mine:  # the instructor's score replaces the autograder's verdict
                text, hint = f"Score set by the instructor: {mine[gid].get('reason', '')}", ""
            items.append(QuestionFeedback(gid, titles.get(gid, ""), row.scores.get(gid), points, text, hint))
        problems = [str(p) for p in (entry or {}).get("problems", [])]
        missed = {q.grade_id: worked[q.grade_id] for q in items
                  if q.grade_id in worked and (q.score is None or q.score < q.points)}
        wanted = {n for w in missed.values() for n in w.answers}
        numbers = ((entry or {}).get("variant") or {}).get("numbers")
        out[row.student] = StudentFeedback(row.student, assignment, row.status, problems, cell_errors, items,
                                           row.days_late, row.penalty, row.submitted, policy, missed,
                                           numbers_lines(assignment, entry), row.extension,
                                           expected_values(course, assignment, numbers, wanted),
                                           row.untimed_extension)
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
pre.solution { font-family: monospace; background: #f6f8fa; padding: .5rem; margin: .3rem 0; }
"""


def render_html(fb: StudentFeedback) -> str:
    e = html_text
    student, assignment, items = fb.student, fb.assignment, fb.questions
    total = sum(q.score or 0 for q in items)
    possible = sum(q.points for q in items)
    score_html = f"Score: <strong>{total:g} / {possible:g}</strong>"
    granted = ""
    if fb.extension:
        granted = f" &middot; extension granted: {e(_duration(fb.extension))}"
    if fb.untimed_extension:
        granted += (" &middot; marked late by the LMS, which knows nothing of your extension: it may be on "
                    "time, so no late penalty is charged until the instructor has its submission time")
    if fb.days_late > 0:
        final = total - fb.penalty
        when = ("marked late by the LMS (no submission time; charged the least, one day)"
                if fb.submitted is None else f"submitted {e(_when(fb.submitted))}")
        score_html = (f"Raw score: {total:g} / {possible:g} &middot; {when}, "
                      f"{fb.days_late} day(s) late: penalty {round(fb.penalty, 6):g} ({e(fb.policy)}) &middot; "
                      f"final score: <strong>{round(final, 6):g} / {possible:g}</strong>")
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
    if fb.numbers:
        problem_html += ("<h2>Your numbers</h2><p>Each student has their own; these are the ones your "
                         "answers were checked against.</p><ul class=\"numbers\">"
                         + "".join(f"<li>{e(line)}</li>" for line in fb.numbers) + "</ul>")
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
<p>{score_html} &middot; status: {e(fb.status)}{granted}</p>
{problem_html}
<table>
<thead><tr><th>Question</th><th>Points</th><th>Result</th><th>Feedback</th><th>Hint</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{_solutions_html(fb, e)}
</body>
</html>
"""


def _duration(delta: timedelta) -> str:
    from .deadlines import duration_text

    return duration_text(delta)


def _when(when: datetime | None) -> str:
    from .deadlines import show_when

    return show_when(when)


def _solutions_html(fb: StudentFeedback, e) -> str:
    if not fb.solutions:
        return ""
    parts = ["<h2>Solutions of the parts you missed</h2>"]
    for gid, worked in fb.solutions.items():
        names = ", ".join(f"<code>{e(n)}</code>" + (f" = {e(fb.expected[n])}" if n in fb.expected else "")
                          for n in worked.answers) or "&ndash;"
        mine = " for your numbers" if any(n in fb.expected for n in worked.answers) else ""
        parts.append(f"<h3><code>{e(gid)}</code></h3><p>Expected answers{mine}: {names}</p>")
        parts += [f"<pre class=\"solution\"><code>{e(shown_solution(code))}</code></pre>" for code in worked.code]
    return "\n".join(parts)


def write_feedback(course: Course, assignment: str, students: list[str] | None = None, *,
                   release_solutions: bool = False, force: bool = False) -> dict[str, Path]:
    """Write the feedback pages; return student -> path. ``release_solutions`` adds the worked
    solutions of missed parts and is refused before the due date unless ``force``."""
    if release_solutions:
        check_release(course, assignment, force=force)
    written = {}
    for student, fb in sorted(student_feedback(course, assignment, release_solutions=release_solutions).items()):
        if students and student not in students:
            continue
        folder = course.feedback(student, assignment)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "feedback.html"
        path.write_text(render_html(fb), encoding="utf-8")
        written[student] = path
    return written
