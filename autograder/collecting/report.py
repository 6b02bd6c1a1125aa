"""What ``collect`` did, for the instructor's terminal: :class:`CollectReport`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..course import Course
from ..safe_text import visible
from .source import Item


@dataclass
class CollectReport:
    assignment: str
    collected: list[Item] = field(default_factory=list)
    unchanged: list[Item] = field(default_factory=list)
    conflicts: list[Item] = field(default_factory=list)  # already collected with other contents
    duplicates: dict[str, list[Item]] = field(default_factory=dict)
    invalid_json: list[Item] = field(default_factory=list)  # collected, but will not grade
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (origin, why)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (origin, why)
    ambiguous: list[tuple[str, str]] = field(default_factory=list)  # (origin, readings): filed for no one
    litter: int = 0
    not_on_roster: list[tuple[str, str]] = field(default_factory=list)  # (origin, who): collected for no one
    no_submission: list[str] = field(default_factory=list)  # roster students without a notebook: names
    newest: list[tuple[str, Item, list[Item]]] = field(default_factory=list)  # (student, kept, older ones)
    older: list[tuple[Item, str]] = field(default_factory=list)  # (item, why): a newer notebook was kept
    notes: list[str] = field(default_factory=list)  # what the instructor should know (one line each)

    @property
    def ok(self) -> bool:
        return not (self.conflicts or self.duplicates or self.refused or self.ambiguous or self.not_on_roster)

    @property
    def students(self) -> list[str]:
        return sorted({i.whose() for i in self.collected + self.unchanged})

    def render(self, course: Course) -> str:
        """The report for the instructor's terminal: one line per file, each shown ``visible``
        (a name with a newline or escape sequences in it stays on its line, inert)."""
        lines = []
        where = Path(course.root) / "submitted"
        lines.append(f"collected {len(self.collected)} notebook(s) of {self.assignment} into {where}")
        for item in self.collected:
            lines.append(f"  {item.student:<20} <- {item.origin}{_detail_text(item)}")
        for student, kept, older in self.newest:
            lines.append(f"  {student}: {len(older) + 1} notebooks, kept the newest by the LMS's order "
                         f"{kept.origin}; not collected: " + ", ".join(i.origin for i in older))
        if self.unchanged:
            lines.append(f"unchanged (already collected, same contents): {len(self.unchanged)}")
            for item in self.unchanged:
                lines.append(f"  {item.student:<20} <- {item.origin}")
        if self.invalid_json:
            lines.append("collected but not a valid notebook (will be graded 'invalid notebook'):")
            for item in self.invalid_json:
                lines.append(f"  {item.student:<20} <- {item.origin}")
        if self.duplicates:
            lines.append("DUPLICATES, not collected (keep one file per student and collect again):")
            for student, items in sorted(self.duplicates.items()):
                lines.append(f"  {student}: " + ", ".join(i.origin for i in items))
        if self.older:
            lines.append(f"KEPT THE NEWER NOTEBOOK ({len(self.older)}): these files are older than the ones "
                         f"collected before, by the LMS's own order (collect --force --allow-older puts them back):")
            for item, why in self.older:
                lines.append(f"  {item.student:<20} <- not {item.origin} ({why})")
        if self.conflicts:
            lines.append("ALREADY COLLECTED with other contents, left as they are (use --force to replace):")
            for item in self.conflicts:
                lines.append(f"  {item.student:<20} <- {item.origin}")
        if self.ambiguous:
            lines.append("AMBIGUOUS LMS names, collected for no one (rename or move them to collect them):")
            lines.extend(f"  {origin} ({why})" for origin, why in self.ambiguous)
        if self.not_on_roster:
            lines.append(f"NOT ON THE COURSE ROSTER ({len(self.not_on_roster)}), collected for no one (add them "
                         f"with keys --roster and a newer roster file, then collect again):")
            lines.extend(f"  {who} <- {origin}" for origin, who in self.not_on_roster)
        if self.no_submission:
            lines.append(f"on the roster, no notebook of {self.assignment} ({len(self.no_submission)}): "
                         + ", ".join(self.no_submission))
        lines.extend(self.notes)
        if self.refused:
            lines.append("REFUSED:")
            lines.extend(f"  {origin} ({why})" for origin, why in self.refused)
        if self.ignored:
            lines.append("ignored:")
            lines.extend(f"  {origin} ({why})" for origin, why in self.ignored)
        if self.litter:
            lines.append(f"ignored {self.litter} OS/editor file(s) (__MACOSX, dotfiles, checkpoints)")
        return "\n".join(visible(line) for line in lines)


def _detail_text(item: Item) -> str:
    uid, pid = item.details.get("lms_user_id"), item.details.get("participant")
    return f" (Canvas user id {uid})" if uid else f" (Moodle participant {pid})" if pid else ""
