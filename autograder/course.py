"""An nbgrader course directory and where each kind of file lives in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
EXERCISES = REPO / "exercises"
ASSIGNMENTS = ("hw1-rooflines", "hw2-hardware")


@dataclass(frozen=True)
class Course:
    """A standard nbgrader course directory rooted at ``root``.

    Layout (nbgrader's): ``source/<assignment>/`` instructor notebooks with solutions and hidden
    tests; ``release/<assignment>/`` student versions; ``submitted/<student>/<assignment>/``;
    ``autograded/<student>/<assignment>/``; ``feedback/<student>/<assignment>/``. The gradebook
    is SQLite at ``root/gradebook.db`` unless ``db_url`` names another SQLAlchemy database.
    """

    root: Path
    db_url: str | None = None

    @property
    def gradebook_url(self) -> str:
        return self.db_url or f"sqlite:///{(Path(self.root) / 'gradebook.db').resolve()}"

    def source(self, assignment: str) -> Path:
        return Path(self.root) / "source" / assignment

    def release(self, assignment: str) -> Path:
        return Path(self.root) / "release" / assignment

    def submitted(self, student: str, assignment: str) -> Path:
        return Path(self.root) / "submitted" / student / assignment

    def autograded(self, student: str, assignment: str) -> Path:
        return Path(self.root) / "autograded" / student / assignment

    def feedback(self, student: str, assignment: str) -> Path:
        return Path(self.root) / "feedback" / student / assignment
