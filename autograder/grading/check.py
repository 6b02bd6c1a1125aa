"""The answers checked: the sandbox's records read back, the instructor's tests run on them.

What comes back from the sandbox is untrusted bytes. :func:`read_records` size-caps, parses and
schema-checks each record and keeps a value only if it is plain data (:func:`plain`); then
:func:`score` runs each test cell's *instructor* source here, in a fresh namespace holding only
those values (:func:`run_test`). ``AssertionError`` gives zero and its message; a missing name
gives "not answered". :func:`check_solutions` holds the instructor's own solutions to full
marks before any student is graded. Nothing here runs the student's code: a student can at
most set the values of their own answers. See ``DESIGN.md``.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import dataclasses
import io
import json
import signal

from scalebook.variants import Variant

from ..notebook import IDENTITY, VARIANT_NAME
from ..sandbox import Limits, Outcome
from .result import (CRASHED, EXITED, GRADED, GRADER_ERROR, INVALID, MEMORY, OUTPUT, SEVERITY,
                     TAMPERED, TIMED_OUT, SubmissionResult)
from .spec import SELF_CHECK_STUDENT, Spec, StudentNumbers, TestCell
from .submission import Validation, clean_text

MAX_RECORD_BYTES = 4 << 20
MAX_MESSAGE = 2000
PLAIN_DEPTH = 16
PLAIN_ELEMENTS = 200_000


class _Budget:
    def __init__(self, n: int):
        self.n = n


def plain(value, depth: int = 0, budget: _Budget | None = None):
    """A copy of ``value`` if it is plain JSON data within limits (strings cleaned of lone
    surrogates), else raise ValueError."""
    budget = budget or _Budget(PLAIN_ELEMENTS)
    budget.n -= 1
    if budget.n < 0 or depth > PLAIN_DEPTH:
        raise ValueError("too large")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if len(value) > 100_000:
            raise ValueError("too long a string")
        return clean_text(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, list):
        return [plain(v, depth + 1, budget) for v in value]
    raise ValueError(f"not plain data ({type(value).__name__})")


@dataclasses.dataclass
class RunReport:
    """The sandbox's records, validated."""

    cells: dict[int, dict]                  # index -> {"stdout","stderr","error"}
    captures: dict[str, dict]               # grade_id -> name -> {"value"} | {"error"}
    started: list[int]                      # cell indices in the order they started
    done: bool
    junk: int                               # records that were not valid


def read_records(validation: Validation, outcome: Outcome) -> RunReport:
    code_indices = {s["index"] for s in validation.steps if s["kind"] == "code"}
    capture_names = {s["grade_id"]: set(s["names"]) for s in validation.steps if s["kind"] == "capture"}
    rep = RunReport({}, {}, [], False, 0)
    for line in outcome.lines:
        if len(line) > MAX_RECORD_BYTES:
            rep.junk += 1
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rep.junk += 1
            continue
        if not isinstance(rec, dict):
            rep.junk += 1
            continue
        t = rec.get("t")
        try:
            if t == "start":
                i = rec["index"]
                if type(i) is int and i in code_indices:
                    rep.started.append(i)
            elif t == "cell":
                i = rec["index"]
                if type(i) is not int or i not in code_indices or i in rep.cells:
                    raise ValueError
                out, err, error = rec.get("stdout", ""), rec.get("stderr", ""), rec.get("error")
                if not isinstance(out, str) or not isinstance(err, str):
                    raise ValueError
                if error is not None:
                    if not isinstance(error, dict):
                        raise ValueError
                    error = {k: clean_text(str(error.get(k, ""))[:8000])
                             for k in ("ename", "evalue", "traceback")}
                rep.cells[i] = {"stdout": clean_text(out[:100_000]), "stderr": clean_text(err[:100_000]),
                                "error": error}
            elif t == "capture":
                gid = rec["grade_id"]
                values = rec["values"]
                if gid not in capture_names or gid in rep.captures or not isinstance(values, dict):
                    raise ValueError
                clean = {}
                for name, entry in values.items():
                    if name not in capture_names[gid] or not isinstance(entry, dict):
                        continue
                    if "value" in entry:
                        try:
                            clean[name] = {"value": plain(entry["value"])}
                        except (ValueError, RecursionError):
                            clean[name] = {"error": "not a plain value (too large or malformed)"}
                    else:
                        why = str(entry.get("error", "not a plain value"))[:300]
                        clean[name] = {"error": clean_text(why)}
                rep.captures[gid] = clean
            elif t == "done":
                rep.done = True
            else:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            rep.junk += 1
    return rep


def run_test(test: TestCell, values: dict[str, dict],
             variant: Variant | None = None) -> tuple[bool, str]:
    """Run the instructor's test cell on the captured values, with ``VARIANT`` bound to the
    numbers the student is graded on. (passed, message)."""
    ns: dict = {"__name__": "__grader__", "__builtins__": builtins}
    if variant is not None:
        ns[VARIANT_NAME] = variant
    for name, entry in values.items():
        if name in test.names and "value" in entry:  # answer names only, never the test's own
            ns[name] = copy.deepcopy(entry["value"])
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(test.code, ns)
    except AssertionError as exc:
        msg = clean_text(str(exc)).strip() or "AssertionError: the answer is not correct."
        return False, msg[:MAX_MESSAGE]
    except NameError as exc:
        missing: str | None = getattr(exc, "name", None)
        captured = values.get(missing) if missing else None
        if captured is not None and "error" in captured:
            return False, (f"{missing} is {captured['error']}: answers must be numbers, strings, "
                           f"lists or arrays of numbers, or PartitionSpecs.")
        if missing in test.names:
            return False, f"not answered: there is no variable {missing} when this question is checked."
        return False, clean_text(f"NameError: {exc}")[:MAX_MESSAGE]
    except RecursionError:
        return False, "RecursionError while checking the answer."
    except Exception as exc:  # the answer made the check fail some other way
        return False, clean_text(f"{type(exc).__name__}: {exc}")[:MAX_MESSAGE]
    return True, ""


def _memory_trouble(rep: RunReport, outcome: Outcome) -> bool:
    if any(c["error"] and c["error"]["ename"] == "MemoryError" for c in rep.cells.values()):
        return True
    if outcome.signal in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGKILL):
        low = outcome.raw_output.lower()
        return any(w in low for w in ("bad_alloc", "memoryerror", "cannot allocate", "out of memory",
                                      "resource_exhausted", "failed to allocate"))
    return False


def _where(validation: "Validation", stopped_in: int | None) -> str:
    """Where a run stopped, by question: the test the stopped cell was working towards."""
    if stopped_in is None:
        return ""
    after = sorted((i, gid) for gid, i in validation.test_positions.items() if i > stopped_in)
    if after:
        return f" in the code for {after[0][1]} (cell {stopped_in})"
    return f" after the last question (cell {stopped_in})"


def score(spec: Spec, student: str, validation: Validation, outcome: Outcome | None,
          limits: Limits, numbers: StudentNumbers | None) -> tuple[SubmissionResult, RunReport | None]:
    """The result of one submission, checked against ``student``'s ``numbers`` (drawn by
    :meth:`.spec.Spec.numbers_for`; None: the homework has no variants). ``outcome`` is None
    when nothing was run."""
    max_scores = spec.max_scores
    scores = {gid: 0.0 for gid in max_scores}
    messages: dict[str, str] = {}
    answers: dict[str, dict] = {}
    if validation.invalid is not None:
        for gid in max_scores:
            messages[gid] = f"{INVALID}: {validation.invalid}"
        return SubmissionResult(student, spec.assignment, INVALID, scores, dict(max_scores),
                                messages, [f"{INVALID}: {validation.invalid}"]), None
    problems = list(validation.problems)
    statuses = [TAMPERED] if validation.tampered else []
    rep = read_records(validation, outcome) if outcome is not None else RunReport({}, {}, [], True, 0)
    stopped_in = None
    if outcome is not None and not rep.done:
        unfinished = [i for i in rep.started if i not in rep.cells]
        stopped_in = unfinished[0] if unfinished else (rep.started[-1] if rep.started else None)
    where = _where(validation, stopped_in)
    if outcome is not None:
        if outcome.timed_out:
            statuses.append(TIMED_OUT)
            problems.append(f"{TIMED_OUT}: the notebook's code ran longer than {limits.timeout:g} s{where}")
        elif outcome.cpu_exceeded:
            statuses.append(TIMED_OUT)
            problems.append(f"{TIMED_OUT}: the notebook's code used more than "
                            f"{limits.rlimits()['cpu'] - 1} s of CPU time{where}")
        if outcome.output_exceeded:
            statuses.append(OUTPUT)
            problems.append(f"{OUTPUT}: the notebook's code wrote more than "
                            f"{limits.output >> 20} MB of output{where}; it was stopped")
        if outcome.memory_exceeded:  # the job's cgroup hit its cap (all its processes together)
            statuses.append(MEMORY)
            problems.append(f"{MEMORY}: the notebook's processes together needed more than "
                            f"{limits.job_memory_bytes() / (1 << 30):g} GB of memory"
                            + (where if not rep.done else "") + "; they were stopped")
        elif _memory_trouble(rep, outcome):
            statuses.append(MEMORY)
            problems.append(f"{MEMORY}: the notebook's code needed more than "
                            f"{limits.memory / (1 << 30):g} GB of memory"
                            + (where if not rep.done else ""))
        if not rep.done and not (outcome.timed_out or outcome.output_exceeded or outcome.cpu_exceeded):
            if outcome.signal is not None and MEMORY not in statuses:
                try:
                    signame = signal.Signals(outcome.signal).name
                except ValueError:
                    signame = str(outcome.signal)
                statuses.append(CRASHED)
                problems.append(f"{CRASHED}: the notebook's code was killed by {signame}{where}")
            elif outcome.signal is None:
                statuses.append(EXITED)
                problems.append(f"{EXITED}: the notebook's code ended the run (exit status "
                                f"{outcome.returncode}){where}; later questions were not reached")
        if rep.junk:
            problems.append(f"{rep.junk} unexpected record(s) from the notebook's run were ignored")
    variant = numbers.variant if numbers is not None else None
    variant_note = _variant_note(student, numbers, rep.captures.get(IDENTITY), outcome)
    if variant_note.get("problem"):  # whose numbers: the real problem, so said first
        problems.insert(0, f"numbers: {variant_note['problem']}")
    for t in spec.tests:
        gid = t.grade_id
        if gid in validation.tampered:
            messages[gid] = f"{TAMPERED}: {validation.tampered[gid]}; this question scores zero."
            continue
        values = rep.captures.get(gid)
        if values is None:
            if outcome is not None and not rep.done:
                why = next((s for s in statuses if s != TAMPERED), EXITED)
                messages[gid] = f"not graded: the notebook's code stopped ({why}) before this question."
            else:
                messages[gid] = "not graded: this question was not reached."
            continue
        passed, msg = run_test(t, values, variant)
        if passed:
            scores[gid] = t.points
        messages[gid] = msg
        answers[gid] = {name: recorded_answer(values[name]) for name in t.names if name in values}
    status = min(statuses, key=SEVERITY.index) if statuses else GRADED
    return SubmissionResult(student, spec.assignment, status, scores, dict(max_scores), messages,
                            problems, answers, variant_note), rep


class SolutionsFail(Exception):
    """The instructor's own solutions do not get full marks: no student can be graded."""


def check_solutions(spec: Spec, numbers: StudentNumbers | None, limits: Limits,
                    validation: Validation, future) -> SubmissionResult:
    """Judge the instructor's solutions (their ``validation``, run in a sandbox: ``future``) as
    the student :data:`.spec.SELF_CHECK_STUDENT`, on its own ``numbers``; raise
    :class:`SolutionsFail` unless they get full marks."""
    try:
        outcome = future.result()
    except Exception as exc:
        raise SolutionsFail(f"the sandbox failed on the instructor's solutions: {exc}") from exc
    if outcome.error:
        raise SolutionsFail(f"the sandbox failed on the instructor's solutions: {outcome.error}")
    result, _ = score(spec, SELF_CHECK_STUDENT, validation, outcome, limits, numbers)
    bad = {g: result.messages.get(g, "") for g, p in result.scores.items() if p != result.max_scores[g]}
    if result.status != GRADED or bad:
        detail = "; ".join(f"{g}: {m}" for g, m in bad.items()) or "; ".join(result.problems)
        raise SolutionsFail(f"the instructor's own solutions to {spec.assignment} do not pass its "
                            f"tests when graded ({result.status}): {detail}")
    return result


def _variant_note(student: str, numbers: StudentNumbers | None, captured: dict | None,
                  outcome) -> dict:
    """What ``grading.json`` keeps about the numbers: those graded against and, with variants
    on, whether the notebook held the submitter's own id and key."""
    if numbers is None:
        return {}
    note = {"numbers": dict(numbers.drawn), "entered_id": None, "entered_key": None, "problem": None}
    key = numbers.key
    if key is None or outcome is None:
        return note
    from .. import variants as course_variants

    identity = course_variants.identity_problem(student, key, captured, variants_on=True)
    note.update(identity.to_json())
    return note


MAX_RECORDED_ANSWER = 200  # characters of JSON: a number, a short list, a PartitionSpec


def recorded_answer(entry: dict):
    """What ``grading.json`` keeps of one captured answer: the value itself when it is short,
    else a note; the reasons a value could not be captured stay as they are."""
    if "value" not in entry:
        return {"error": str(entry.get("error", "not captured"))[:MAX_RECORDED_ANSWER]}
    text = json.dumps(entry["value"])
    if len(text) > MAX_RECORDED_ANSWER:
        return {"error": f"a value of {len(text)} characters (not kept)"}
    return entry["value"]


def grader_error(spec: Spec, student: str, stage: str, exc: BaseException) -> SubmissionResult:
    """The record of a submission the grader failed on (its own fault or an input it did not
    foresee): zero, flagged in the gradebook, graded again with ``--force`` once fixed."""
    what = clean_text(f"{type(exc).__name__}: {exc}")[:300]
    max_scores = spec.max_scores
    msg = f"{GRADER_ERROR}: the grader failed while {stage}; this question is not graded yet."
    return SubmissionResult(student, spec.assignment, GRADER_ERROR, {g: 0.0 for g in max_scores},
                            dict(max_scores), {g: msg for g in max_scores},
                            [f"{GRADER_ERROR} while {stage} ({what}): recorded as zero and "
                             f"flagged; fix the grader and grade this student again with --force"])
