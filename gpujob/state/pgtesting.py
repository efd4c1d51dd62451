"""A real PostgreSQL server in a temporary directory, for tests and benchmarks.

initdb + pg_ctl from the installed PostgreSQL (/usr/lib/postgresql/<version>/bin, or $GPUJOB_TEST_PG_BIN,
or PATH). PostgreSQL refuses to run as root, so under root the server runs as an unprivileged user
(`postgres` when the package made one, else `nobody`) through setpriv. It listens on 127.0.0.1 on a
free port with trust authentication, fsync off: a throwaway server, never a pattern for a real one.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "gpujob_admin"


def pg_bin() -> Path:
    override = os.environ.get("GPUJOB_TEST_PG_BIN")
    if override:
        return Path(override)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL is not installed (no initdb): apt-get install postgresql (see .ci/run)")


def _runner() -> tuple[list[str], str | None]:
    """(command prefix, user) that runs the server unprivileged."""
    if os.geteuid() != 0:
        return [], None
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        return ["setpriv", f"--reuid={user}", f"--regid={pwd.getpwnam(user).pw_gid}", "--clear-groups"], user
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    root: Path
    port: int
    bin: Path
    prefix: list[str]

    def url(self, database: str = "postgres", user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def new_database(self, name: str) -> str:
        """A fresh, empty database; its URL."""
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def local_postgres() -> Iterator[PgServer]:
    binary = pg_bin()
    prefix, user = _runner()
    # Under root, in /tmp whatever $TMPDIR says: the unprivileged user must be able to reach it.
    root = Path(tempfile.mkdtemp(prefix="gpujob-pg-", dir="/tmp" if user is not None else None))
    if user is not None:
        pw = pwd.getpwnam(user)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    data, sock = root / "data", root / "sock"
    port = _free_port()
    run = [*prefix]

    def sh(*argv: str) -> None:
        done = subprocess.run([*run, *argv], capture_output=True, text=True, cwd=root, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stdout}{done.stderr}")

    sh("mkdir", "-m", "0700", str(sock))
    sh(
        str(binary / "initdb"),
        "-D",
        str(data),
        "-U",
        SUPERUSER,
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--locale=C",
        "-N",
    )
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -F -c max_connections=60"
    try:
        sh(
            str(binary / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-l",
            str(root / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        yield PgServer(root=root, port=port, bin=binary, prefix=prefix)
    finally:
        subprocess.run(
            [*run, str(binary / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            cwd=root,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)
