"""What the LMS said of one submission, kept beside the collected notebook in
``submitted/<student>/<A>/``: ``collect`` writes it, ``deadlines`` and ``collect`` read it.

- ``lms_late.txt`` (:data:`LMS_LATE_MARK`): Canvas named the file ``..._LATE_...``: it came
  after the *assignment's* due date (Canvas's download gives no time, and the mark knows
  nothing of a student's extension).
- ``lms_file.json`` (:data:`LMS_FILE`): the LMS's own order of the collected file (Canvas's
  file id, larger for a newer upload), so that collecting an older download again never puts
  an older notebook over a newer one.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Beside a notebook Canvas named ``..._LATE_...``: the LMS says it came after the due date.
LMS_LATE_MARK = "lms_late.txt"
#: Beside a notebook collected from an LMS download: ``{"lms": "Canvas", "order": <file id>}``.
LMS_FILE = "lms_file.json"


def mark_late(folder: Path, lms: str | None, late: bool) -> None:
    """Keep the LMS's LATE mark beside the notebook; a notebook collected without the mark
    removes an older one."""
    mark = folder / LMS_LATE_MARK
    if lms is not None and late:
        mark.write_text(f"{lms} marked this submission LATE\n", "utf-8")
    elif mark.is_file():
        mark.unlink()


def is_marked_late(folder: Path) -> bool:
    return (folder / LMS_LATE_MARK).is_file()


def keep_order(folder: Path, lms: str | None, order: int | None) -> None:
    """Record the LMS's order of the notebook just collected (none: forget an older one)."""
    path = folder / LMS_FILE
    if lms is not None and order:
        path.write_text(json.dumps({"lms": lms, "order": order}) + "\n", "utf-8")
    elif path.is_file():
        path.unlink()


def kept_order(folder: Path) -> tuple[str, int] | None:
    """``(lms, order)`` of the notebook collected in ``folder``, or None when unknown."""
    try:
        data = json.loads((folder / LMS_FILE).read_text("utf-8"))
        return str(data["lms"]), int(data["order"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
