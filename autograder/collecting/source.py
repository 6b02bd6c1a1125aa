"""Reading a SOURCE of ``collect`` -- a folder, a ``.zip`` or one ``.ipynb`` -- into
:class:`Item` s, one per file: zip members are read in memory, never extracted, and a member
whose name would leave the archive or is a link is refused (``safe_member_name``); OS litter
is only counted. The rules that say whose file an item is are in ``identify``."""

from __future__ import annotations

import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from ..lms.formats import LmsName, moodle_folder
from ..safe_text import visible

MAX_MEMBER_BYTES = 64 * 1024 * 1024  # one notebook; larger ones are refused
MAX_ARCHIVE_BYTES = 2 * 1024 * 1024 * 1024  # all members of one zip, uncompressed
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LITTER = re.compile(r"(^|/)(__MACOSX|\.ipynb_checkpoints|__pycache__)(/|$)|(^|/)\.[^/]*$|(^|/)Thumbs\.db$")


class CollectError(Exception):
    """The SOURCE cannot be read at all (missing, not a folder/zip/notebook, corrupt zip)."""


@dataclass
class Item:
    """One file found in a SOURCE."""

    origin: str  # what the instructor sees: "subs/bob.ipynb", "canvas.zip:doe_jane_..."
    rel: PurePosixPath  # its path inside the SOURCE
    read: Callable[[], bytes]  # its contents (at most MAX_MEMBER_BYTES, else ValueError)
    student: str | None = None
    target: str | None = None  # file name in submitted/<student>/<assignment>/
    form: str = ""  # "nbgrader", "lms" or "file"
    details: dict = field(default_factory=dict)  # gradebook fields: lms_user_id, names
    reading: LmsName | None = None  # how its LMS-written name was read, if it has one
    certain: bool = False  # that name has this one reading only (no other file needed)

    def whose(self) -> str:
        """The student :func:`identify` filed it for (asking before is a bug, not bad input)."""
        if self.student is None:
            raise ValueError(f"{self.origin}: no student yet (identify() sets one)")
        return self.student

    def placed(self) -> tuple[str, str]:
        """``(student, file name in submitted/<student>/<assignment>/)`` once identified."""
        if self.target is None:
            raise ValueError(f"{self.origin}: no target file name yet (identify() sets one)")
        return self.whose(), self.target



# --- reading sources ----------------------------------------------------------------------


def scan(source: Path) -> tuple[list[Item], list[tuple[str, str]], int]:
    """The files of a SOURCE: (items, refused, litter count)."""
    source = Path(source)
    if source.is_dir():
        items, refused, litter = _scan_dir(source)
        # a Moodle submission folder given as the SOURCE still names its student
        _keep_moodle_folder(items, Path(os.path.abspath(source)).name)
        return items, refused, litter
    if source.is_file() and zipfile.is_zipfile(source):
        return _scan_zip(source)
    if source.is_file() and source.suffix == ".ipynb":
        item = Item(str(source), PurePosixPath(source.name), _file_reader(source))
        _keep_moodle_folder([item], Path(os.path.abspath(source)).parent.name)
        return [item], [], 0
    if not source.exists():
        raise CollectError(f"{visible(str(source))}: no such file or folder")
    raise CollectError(f"{visible(str(source))}: not a folder, a .zip file or a .ipynb notebook")


def _keep_moodle_folder(items: list[Item], folder: str) -> None:
    if moodle_folder(folder):
        for item in items:
            item.rel = PurePosixPath(folder, item.rel)


def _file_reader(path: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        if path.stat().st_size > MAX_MEMBER_BYTES:
            raise ValueError(f"larger than {MAX_MEMBER_BYTES // 2**20} MiB")
        return path.read_bytes()

    return read


def _scan_dir(root: Path):
    items, refused, litter = [], [], 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if LITTER.search(str(rel)):
                litter += 1
                continue
            if path.is_symlink():
                refused.append((str(path), "symbolic link"))
                continue
            items.append(Item(str(path), rel, _file_reader(path)))
        # symlinked folders are listed in dirnames but not followed: say so
        for name in list(dirnames):
            if (Path(dirpath) / name).is_symlink():
                refused.append((str(Path(dirpath) / name), "symbolic link"))
    return items, refused, litter


def _scan_zip(path: Path):
    items, refused, litter, total = [], [], 0, 0
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:  # a member name flagged UTF-8 that is not
        raise CollectError(visible(f"{path}: cannot read the zip file: {exc}")) from exc
    with archive:
        infos = archive.infolist()
    for info in infos:
        origin = f"{path}:{info.filename}"
        if info.is_dir():
            continue
        rel, why = safe_member_name(info.filename)
        if why:
            refused.append((origin, why))
            continue
        assert rel is not None, "safe_member_name gives a path or a reason"
        if LITTER.search(str(rel)):
            litter += 1
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            refused.append((origin, "symbolic link"))
            continue
        if info.flag_bits & 0x1:
            refused.append((origin, "encrypted"))
            continue
        if info.file_size > MAX_MEMBER_BYTES:
            refused.append((origin, f"larger than {MAX_MEMBER_BYTES // 2**20} MiB"))
            continue
        total += info.file_size
        if total > MAX_ARCHIVE_BYTES:
            refused.append((origin, "the archive unpacks to more than 2 GiB"))
            continue
        items.append(Item(origin, rel, _zip_reader(path, info)))
    # An archive of a folder holds everything in that one folder: look inside it (but a
    # Moodle submission folder is what names the student: keep it).
    tops = {item.rel.parts[0] for item in items}
    if len(tops) == 1 and all(len(item.rel.parts) > 1 for item in items) and not moodle_folder(next(iter(tops))):
        for item in items:
            item.rel = PurePosixPath(*item.rel.parts[1:])
    return items, refused, litter


def _zip_reader(path: Path, member: zipfile.ZipInfo) -> Callable[[], bytes]:
    def read() -> bytes:
        # by ZipInfo, not by name: an archive may hold two members of the same name
        with zipfile.ZipFile(path) as archive, archive.open(member) as f:
            data = f.read(MAX_MEMBER_BYTES + 1)  # never trust the declared size
        if len(data) > MAX_MEMBER_BYTES:
            raise ValueError(f"larger than {MAX_MEMBER_BYTES // 2**20} MiB")
        return data

    return read


def safe_member_name(name: str) -> tuple[PurePosixPath | None, str | None]:
    """A zip member's path if it stays inside the archive, else (None, why)."""
    if "\x00" in name:
        return None, "unsafe path: NUL byte"
    normal = name.replace("\\", "/")
    if normal.startswith("/") or re.match(r"[A-Za-z]:", normal):
        return None, "unsafe path: absolute"
    parts = [p for p in normal.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None, "unsafe path: leaves the archive (..)"
    if not parts:
        return None, "unsafe path: empty"
    return PurePosixPath(*parts), None
