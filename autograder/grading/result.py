"""What grading one submission gives: its status and, per question, score and message.

The statuses, most serious first, say what went wrong with a submission as a whole; "graded"
means nothing did. :class:`SubmissionResult` is the record every stage after the check passes
on: ``grading.json`` beside the autograded copy, the gradebook, the feedback and the report read
it back. Data only: nothing here runs student code.
"""

from __future__ import annotations

import dataclasses

# Submission statuses, most serious first; "graded" means nothing went wrong.
GRADER_ERROR = "grader error"
INVALID = "invalid notebook"
TAMPERED = "tampered with a test cell"
TIMED_OUT = "timed out"
MEMORY = "memory limit"
OUTPUT = "output limit"
CRASHED = "crashed"
EXITED = "exited early"
GRADED = "graded"
SEVERITY = [GRADER_ERROR, INVALID, TAMPERED, TIMED_OUT, MEMORY, OUTPUT, CRASHED, EXITED, GRADED]


@dataclasses.dataclass
class SubmissionResult:
    student: str
    assignment: str
    status: str
    scores: dict[str, float]
    max_scores: dict[str, float]
    messages: dict[str, str]
    problems: list[str]
    # grade_id -> {answer name: the value the test saw (short plain data) or {"error": why}}:
    # what the instructor's report groups wrong answers by
    answers: dict[str, dict] = dataclasses.field(default_factory=dict)
    # per-student numbers: {"numbers": the drawn inputs graded against, "entered_id",
    # "entered_key": what the notebook held, "problem": why it is not the submitter's own, or
    # None}; empty for a homework without variants
    variant: dict = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SubmissionResult":
        fields = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        return cls(**fields)
