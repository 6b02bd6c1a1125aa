"""The course directory and its gradebook: remembered, never split, never made by a typo; and
the command line's manners (a closed pipe, a missing course)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gradecells import run_cli

from autograder.course import DB_FILE, REPO, Course, default_course


def roster(tmp_path, n: int = 3):
    path = tmp_path / "roster.csv"
    path.write_text("id\n" + "".join(f"s{i}\n" for i in range(n)))
    return path


def config_url(course_root) -> str:
    """The gradebook URL nbgrader (and formgrader) read from the course's nbgrader_config.py."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course_root)).load_config()
    return config.CourseDirectory.db_url


@pytest.mark.slow  # runs the autograder CLI on a course database
def test_the_course_remembers_its_database_and_refuses_another(tmp_path, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_DB", raising=False)
    root, url = tmp_path / "course", f"sqlite:///{tmp_path / 'elsewhere.db'}"
    rc, out = run_cli("keys", "--roster", roster(tmp_path), "--course", root, "--db", url)
    assert rc == 0, out
    assert (root / DB_FILE).read_text().strip() == url and (root / DB_FILE).stat().st_mode & 0o777 == 0o600
    assert config_url(root) == url  # formgrader opens the same gradebook
    assert default_course(root).gradebook_url == url  # a later command without --db
    rc, out = run_cli("keys", "--course", root)  # the students are in the remembered gradebook
    assert rc == 0 and "s2" in out, out
    assert not (root / "gradebook.db").exists()  # nothing split off into a second gradebook
    other = f"sqlite:///{tmp_path / 'other.db'}"
    rc, out = run_cli("keys", "--course", root, "--db", other)
    assert rc == 2 and "keeps its gradebook at" in out and "elsewhere.db" in out, out
    monkeypatch.setenv("SCALEBOOK_DB", other)
    rc, out = run_cli("keys", "--course", root)
    assert rc == 2 and "keeps its gradebook at" in out, out
    monkeypatch.setenv("SCALEBOOK_DB", url)
    assert run_cli("keys", "--course", root)[0] == 0


@pytest.mark.slow  # runs the autograder CLI on a course database
def test_a_sqlite_course_is_not_split_by_a_later_url(tmp_path, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_DB", raising=False)
    root = tmp_path / "course"
    assert run_cli("keys", "--roster", roster(tmp_path), "--course", root)[0] == 0
    assert (root / "gradebook.db").is_file() and not (root / DB_FILE).exists()
    rc, out = run_cli("keys", "--course", root, "--db", f"sqlite:///{tmp_path / 'new.db'}")
    assert rc == 2 and "already grades into its SQLite gradebook" in out, out
    assert run_cli("keys", "--course", root, "--db", f"sqlite:///{root / 'gradebook.db'}")[0] == 0  # its own, named


def test_a_mistyped_course_is_an_error_and_is_not_created(tmp_path):
    for command in (["grade", "-a", "hw1-rooflines"], ["export", "-a", "hw1-rooflines"],
                    ["report", "-a", "hw1-rooflines"], ["feedback", "-a", "hw1-rooflines"]):
        rc, out = run_cli(*command, "--course", tmp_path / "cuorse")
        assert rc == 2 and "there is no course at" in out and "Traceback" not in out, out
        assert not (tmp_path / "cuorse").exists()


@pytest.mark.slow  # writes 3,000 keys through a pipe to a closing reader
def test_a_closed_pipe_ends_quietly(tmp_path):
    root = tmp_path / "course"
    assert run_cli("keys", "--roster", roster(tmp_path, 3000), "--course", root)[0] == 0
    proc = subprocess.run(f"{sys.executable} -m autograder keys --course {root} | head -1",
                          shell=True, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("student,"), proc.stdout
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert Course(root).root == root


@pytest.mark.slow  # runs nbgrader's `alembic heads` command once, to compare (3 s)
def test_a_new_gradebook_gets_nbgraders_schema_version_without_a_command(tmp_path, monkeypatch):
    """A gradebook the autograder creates records the revision nbgrader's own ``alembic heads``
    command prints, read in this process: no command is run (each one is a new Python, 3 s of
    CPU, for every course and scratch gradebook)."""
    import nbgrader.api
    from nbgrader.dbutil import write_alembic_ini
    from sqlalchemy import text

    from autograder.course import ensure_tools_on_path, open_gradebook
    from autograder.nbgrader_config import alembic_head

    ensure_tools_on_path()
    write_alembic_ini(str(tmp_path / "alembic.ini"), f"sqlite:///{tmp_path / 'unused.db'}")
    out = subprocess.run(["alembic", "-c", str(tmp_path / "alembic.ini"), "heads"],
                         capture_output=True, text=True, check=True)
    assert alembic_head() == out.stdout.split("\n")[0].split(" ")[0]

    def no_command(*args, **kwargs):
        raise AssertionError(f"a command was run: {args}")

    def nbgraders_own():   # stands for nbgrader's lookup, whatever an earlier test made of it
        raise AssertionError("nbgrader's own version lookup (the alembic command) ran")

    monkeypatch.setattr(nbgrader.api.sp, "check_output", no_command)
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgraders_own)
    with open_gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        version = gb.db.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert version == alembic_head()
