"""A throwaway PostgreSQL server for the tests: started in a temporary folder, removed after.

``with PostgresServer.start() as server: url = server.create_database("loop")`` runs Debian's
PostgreSQL binaries (``/usr/lib/postgresql/<version>/bin``: initdb, pg_ctl, postgres) on a
free loopback port, with a data directory and a socket directory of its own, trust
authentication for the superuser ``postgres`` on 127.0.0.1 only, and no durability (fsync off:
nothing in it outlives the test run). Leaving the ``with`` stops it (immediate shutdown) and
removes every file it wrote.

initdb and postgres refuse to run as root. As root (as the tests run here and in CI) the
server runs as an unprivileged user -- Debian's ``postgres`` system user, else ``nobody`` --
through ``setpriv``, and the temporary folder is handed to that user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DEBIAN_PACKAGE = "postgresql"
SUPERUSER = "postgres"


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb, pg_ctl and postgres, else
    the folder of an ``initdb`` on PATH that has them beside it, else None."""
    def complete(folder: Path) -> bool:
        return all(os.access(folder / tool, os.X_OK) for tool in ("initdb", "pg_ctl", "postgres"))

    def version(folder: str) -> tuple:
        name = Path(folder).parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit())

    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        if complete(Path(folder)):
            return Path(folder)
    initdb = shutil.which("initdb")
    if initdb and complete(Path(initdb).parent):
        return Path(initdb).parent
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_account() -> pwd.struct_passwd | None:
    """The unprivileged account to run the server as when we are root (None: run as we are)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable("running as root and there is no 'postgres' or 'nobody' user to run "
                              "PostgreSQL as (initdb refuses root)")


@dataclass
class PostgresServer:
    bindir: Path
    workdir: Path            # temporary: data/, the socket and the log
    port: int
    account: pwd.struct_passwd | None
    seconds_to_start: float = 0.0
    databases: list[str] = field(default_factory=list)

    @property
    def datadir(self) -> Path:
        return self.workdir / "data"

    @property
    def log(self) -> Path:
        return self.workdir / "server.log"

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of a database on this server (``postgresql://``: SQLAlchemy's
        default PostgreSQL driver, psycopg 3)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    # --- life cycle ------------------------------------------------------------------------

    @classmethod
    def start(cls, attempts: int = 3) -> "PostgresServer":
        """initdb and start a server; raise :class:`PostgresUnavailable` without binaries."""
        bindir = find_bindir()
        if bindir is None:
            raise PostgresUnavailable(
                "the PostgreSQL server is not installed (no /usr/lib/postgresql/*/bin/initdb and "
                f"pg_ctl): install Debian's {DEBIAN_PACKAGE} package (apt-get install {DEBIAN_PACKAGE})")
        t0 = time.monotonic()
        workdir = Path(tempfile.mkdtemp(prefix="scalebook-pg-"))
        server = cls(bindir, workdir, 0, _server_account())
        try:
            if server.account is not None:
                os.chown(workdir, server.account.pw_uid, server.account.pw_gid)
            server._tool("initdb", "--pgdata", str(server.datadir), "--username", SUPERUSER,
                         "--auth", "trust", "--encoding", "UTF8", "--no-locale", "--no-sync")
            for attempt in range(attempts):  # the free port may be taken before we bind it
                server.port = free_port()
                try:
                    server._pg_ctl_start()
                    break
                except RuntimeError:
                    if attempt == attempts - 1:
                        raise
        except BaseException:
            server._remove()
            raise
        server.seconds_to_start = time.monotonic() - t0
        return server

    def _pg_ctl_start(self) -> None:
        options = " ".join([
            f"-p {self.port}", "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={self.workdir}",
            "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
            "-c max_connections=50",
        ])
        self._tool("pg_ctl", "start", "--pgdata", str(self.datadir), "--wait", "--timeout", "60",
                   "--log", str(self.log), "-o", options)

    def stop(self) -> None:
        """Stop the server at once and remove its files."""
        try:
            if (self.datadir / "postmaster.pid").exists():
                self._tool("pg_ctl", "stop", "--pgdata", str(self.datadir), "--mode", "immediate",
                           "--wait", "--timeout", "30")
        finally:
            self._remove()

    def _remove(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "PostgresServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- use -----------------------------------------------------------------------------

    def create_database(self, name: str) -> str:
        """Create an empty database ``name`` (letters, digits, ``_``); return its URL."""
        if not name.replace("_", "").isalnum() or not name.isascii():
            raise ValueError(f"not a simple database name: {name!r}")
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        return self.url(name)

    # --- running the binaries ------------------------------------------------------------------

    def _tool(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.account is not None:
            cmd = ["setpriv", f"--reuid={self.account.pw_uid}", f"--regid={self.account.pw_gid}",
                   "--clear-groups", "--", *cmd]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        proc = subprocess.run(cmd, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} {' '.join(args[:2])} failed ({proc.returncode}): "
                               f"{(proc.stdout + proc.stderr)[-2000:]}\n{log}")
