"""Per-submission claims: two graders started at once on one gradebook grade each submission once.

Before a grader grades a submission it *claims* it with :meth:`SubmissionClaims.try_claim`; a
submission claimed by another grader process is left to that process. A claim is held until
``release`` (or ``close``) or until the process that holds it dies, however it dies: a grader
killed mid-run leaves nothing behind that would stop the next run. Whether a submission is
already *graded* is the gradebook's business (``record.py``); claims only keep two live graders
from grading the same one at the same time.

Where the claims live follows the gradebook (:func:`open_claims`):

- **PostgreSQL**: session-level advisory locks (``pg_try_advisory_lock(k1, k2)``) on one
  connection of their own, so every grader on the database sees them, on any machine. The two
  int4 keys are the 64 bits of a BLAKE2b hash of (namespace, assignment, student). The server
  drops them when the connection ends, which it does when the process dies.
- **SQLite and anything else**: ``flock`` locks on files
  ``<course root>/.grading-claims/<assignment>/<hash of the student>.lock``. The kernel drops
  them when the process dies. A file's name is a hash, never a path made of the student id.
  ``release`` removes the file while still holding its lock; ``try_claim`` checks, once it
  holds a lock, that the file it locked is still the one at that path, else it tries again.

Claims are exclusive even within one process: ``try_claim`` of a student that this object (or
another one, in any process) already holds returns False. Every method is thread-safe.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from pathlib import Path

CLAIMS_FOLDER = ".grading-claims"
_NAMESPACE = b"scalebook-autograder-claim"


class SubmissionClaims:
    """Per-submission claims shared by every grader process on one course/gradebook."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False

    def try_claim(self, student: str) -> bool:
        """Claim ``student``'s submission without waiting. True: this object holds it until
        :meth:`release`, :meth:`close` or the death of this process; False: someone holds it."""
        with self._lock:
            if self._closed:
                raise ValueError("the claims are closed")
            return self._claim(student)

    def release(self, student: str) -> None:
        """Give up the claim on ``student`` (nothing happens if it is not held)."""
        with self._lock:
            self._release(student)

    def held(self) -> set[str]:
        """The students this object holds claims on."""
        with self._lock:
            return set(self._held())

    def close(self) -> None:
        """Release every claim and free what holds them; closing twice is harmless."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close()

    def __enter__(self) -> "SubmissionClaims":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # what each kind of claim implements (called with self._lock held)
    def _claim(self, student: str) -> bool:
        raise NotImplementedError

    def _release(self, student: str) -> None:
        raise NotImplementedError

    def _held(self):
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


def claim_key(assignment: str, student: str) -> tuple[int, int]:
    """The two signed 32-bit keys of a submission's advisory lock (stable across processes,
    machines and Python versions: not Python's ``hash``)."""
    h = hashlib.blake2b(digest_size=8)
    for part in (_NAMESPACE, assignment.encode("utf-8", "surrogatepass"),
                 student.encode("utf-8", "surrogatepass")):
        h.update(len(part).to_bytes(4, "big") + part)
    digest = h.digest()
    return (int.from_bytes(digest[:4], "big", signed=True),
            int.from_bytes(digest[4:], "big", signed=True))


def claim_file_name(student: str) -> str:
    """The lock file of a student: a hash of the id, so no id can name another path."""
    return hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".lock"


class AdvisoryLockClaims(SubmissionClaims):
    """Claims as PostgreSQL session-level advisory locks on one dedicated connection."""

    def __init__(self, db_url: str, assignment: str) -> None:
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        super().__init__()
        self.assignment = assignment
        # autocommit: the connection never sits "idle in transaction" while it holds locks
        self._engine = create_engine(db_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        try:
            conn = self._engine.connect()
        except BaseException:
            self._engine.dispose()
            raise
        try:
            # a grader whose machine dies (no FIN from its socket) frees its claims within a
            # minute or so, not when the operating system's two-hour keepalive gives up
            for setting in ("tcp_keepalives_idle = 30", "tcp_keepalives_interval = 10",
                            "tcp_keepalives_count = 3"):
                conn.execute(text(f"SET {setting}"))
        except BaseException:
            conn.close()
            self._engine.dispose()
            raise
        self._conn = conn
        self._keys: dict[str, tuple[int, int]] = {}

    def _sql(self, statement: str, keys: tuple[int, int]):
        from sqlalchemy import text

        return self._conn.execute(text(statement), {"k1": keys[0], "k2": keys[1]}).scalar()

    def _claim(self, student: str) -> bool:
        if student in self._keys:
            return False
        keys = claim_key(self.assignment, student)
        if not self._sql("SELECT pg_try_advisory_lock(:k1, :k2)", keys):
            return False
        self._keys[student] = keys
        return True

    def _release(self, student: str) -> None:
        keys = self._keys.pop(student, None)
        if keys is not None:
            self._sql("SELECT pg_advisory_unlock(:k1, :k2)", keys)

    def _held(self):
        return self._keys

    def _close(self) -> None:
        from sqlalchemy import text

        self._keys.clear()
        try:
            self._conn.execute(text("SELECT pg_advisory_unlock_all()"))
        except Exception:  # the connection is gone: so are its locks
            pass
        finally:
            self._conn.close()
            self._engine.dispose()


class FileLockClaims(SubmissionClaims):
    """Claims as ``flock`` locks on one file per student in ``folder``."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fds: dict[str, int] = {}

    def _claim(self, student: str) -> bool:
        if student in self._fds:
            return False
        path = self.folder / claim_file_name(student)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            # the holder before us may have removed the file after we opened it: then our lock
            # is on a file nobody else will ever open, and we must lock the one at the path
            try:
                on_disk = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                on_disk = None
            mine = os.fstat(fd)
            if on_disk is not None and (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino):
                self._fds[student] = fd
                return True
            os.close(fd)

    def _release(self, student: str) -> None:
        fd = self._fds.pop(student, None)
        if fd is None:
            return
        try:
            os.unlink(self.folder / claim_file_name(student))  # while still locked: see _claim
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def _held(self):
        return self._fds

    def _close(self) -> None:
        for student in list(self._fds):
            self._release(student)


def is_postgresql(db_url: str) -> bool:
    """Whether an SQLAlchemy URL names a PostgreSQL database (any driver)."""
    from sqlalchemy.engine import make_url

    return make_url(db_url).get_backend_name() == "postgresql"


def open_claims(gradebook_url: str, course_root: Path, assignment: str) -> SubmissionClaims:
    """The claims of ``assignment``'s submissions: advisory locks in the gradebook at
    ``gradebook_url`` when that is PostgreSQL, else lock files in the course folder."""
    if not assignment or assignment in (".", "..") or "/" in assignment or "\0" in assignment:
        raise ValueError(f"not an assignment name: {assignment!r}")
    if is_postgresql(gradebook_url):
        return AdvisoryLockClaims(gradebook_url, assignment)
    return FileLockClaims(Path(course_root) / CLAIMS_FOLDER / assignment)
