"""The PostgreSQL store (psycopg 3): the same names as the local directory, in tables keyed by workspace.

One connection per process and store carries both the data and the job locks. A job lock is a
session-level advisory lock: the server drops it the moment the holder's connection ends (a kill -9
closes the socket; a host that vanishes is noticed by TCP keepalives within about a minute), so a
crashed holder never needs force-unlock. The holder's name, host, pid and start time are written
beside the lock for the refusal message. Because the lock lives on the data connection, a holder whose
lock was taken from it (force-unlock ends its session) fails at its next write instead of carrying on
unlocked.

Secrets are sealed with gpujob.state.crypto before they reach the server; the public half stays
readable. Decrypted secrets that tools need as files go to a private temp dir removed at exit.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpujob.invariant import present
from gpujob.state.dsn import safe_url
from gpujob.state.pglock import PgLocks
from gpujob.state.store import PUBLIC_SUFFIX, checked_name

CONNECT_TIMEOUT_S = 10
# The server notices a holder whose host vanished without closing its socket within ~idle+interval*count.
KEEPALIVE = "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3"


def _doc_key(workspace: str, name: str) -> int:
    digest = hashlib.blake2b(f"gpujob-doc\0{workspace}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _me() -> str:
    from gpujob.lock import _user

    return f"{_user()}@{socket.gethostname()}"


class PgStore(PgLocks):
    def __init__(self, url: str, workspace: str) -> None:
        from gpujob.redact import register
        from gpujob.state.dsn import secrets

        for value in secrets(url):  # from GPUJOB_STATE_URL or PGPASSWORD: masked in anything gpujob prints
            register(value)
        self._url = url
        self.workspace = workspace
        self._conn: Any = None
        self._pid = 0
        self._salt = b""
        self._held: set[str] = set()
        self._mutex = threading.RLock()
        self._scratch: Path | None = None
        self._files: dict[str, Path] = {}
        self.left_behind: set[Path] = set()  # local state dirs beside the job files (see create_secret)

    def __repr__(self) -> str:
        return f"PgStore({self.location!r})"

    @property
    def location(self) -> str:
        return f"{safe_url(self._url)} (workspace {self.workspace})"

    @property
    def label(self) -> str:
        return self.workspace

    # the connection

    def _db(self) -> Any:
        """The connection, made (and the schema checked) on first use; made again after a fork."""
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid() and not self._conn.closed:
                return self._conn
            if self._conn is not None and self._pid == os.getpid() and self._held:
                self._lost(None)
            if self._pid != os.getpid():
                self._held = set()  # a forked child holds none of its parent's locks
            import psycopg

            from gpujob.errors import StateError
            from gpujob.state.pgschema import ensure_schema

            try:
                conn = psycopg.connect(
                    self._url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_S,
                    application_name="gpujob",
                    options=KEEPALIVE,
                    keepalives=1,
                    keepalives_idle=30,
                    keepalives_interval=10,
                    keepalives_count=3,
                )
                self._salt = ensure_schema(conn, self.location)
            except psycopg.Error as exc:
                raise StateError(
                    f"cannot use the state database {self.location}: {_first_line(exc)}",
                    hint="check GPUJOB_STATE_URL / the state: block of gpujob.yaml, and PGPASSWORD or ~/.pgpass",
                ) from None
            self._conn, self._pid = conn, os.getpid()
            return conn

    def _lost(self, exc: Exception | None) -> None:
        from gpujob.errors import StateError

        held = ", ".join(sorted(self._held))
        self._held.clear()
        self._conn = None
        raise StateError(
            f"lost the connection to the state database {self.location} while holding the lock of {held}"
            + (f": {_first_line(exc)}" if exc else ""),
            hint="the lock went with the connection, so gpujob stopped here; re-run once the database answers "
            "(apply converges from live state)",
        ) from None

    def _run(self, sql: str, args: Any = (), *, many: bool = False) -> Any:
        """Execute one statement; a broken connection is made again unless a lock rode on it. Every
        database failure is a StateError naming the store (never a driver traceback)."""
        import psycopg

        from gpujob.errors import StateError

        for attempt in (1, 2):
            conn = self._db()
            try:
                with self._mutex:
                    if many:
                        with conn.cursor() as cur:
                            cur.executemany(sql, args)
                            return cur
                    return conn.execute(sql, args)
            except psycopg.OperationalError as exc:
                if conn.closed and self._held:
                    self._lost(exc)
                if not conn.closed or attempt == 2:
                    raise StateError(f"state database {self.location}: {_first_line(exc)}") from None
            except psycopg.Error as exc:
                raise StateError(
                    f"state database {self.location}: {_first_line(exc)}",
                    hint="a role that may only plan can read the records but not write them or read the "
                    "sealed key; apply needs the full role (docs/team-state.md)",
                ) from None
        raise AssertionError("unreachable")

    # documents

    def read(self, name: str) -> bytes | None:
        row = self._run(
            "SELECT body FROM gpujob_documents WHERE workspace = %s AND name = %s",
            (self.workspace, checked_name(name)),
        ).fetchone()
        return row[0].encode() if row else None

    def write(self, name: str, data: bytes) -> None:
        self._run(
            """INSERT INTO gpujob_documents (workspace, name, body, updated_by) VALUES (%s, %s, %s, %s)
               ON CONFLICT (workspace, name) DO UPDATE
               SET body = EXCLUDED.body, updated_at = now(), updated_by = EXCLUDED.updated_by""",
            (self.workspace, checked_name(name), data.decode(), _me()),
        )

    def update(self, name: str, change: Callable[[bytes | None], bytes]) -> bytes:
        import psycopg

        from gpujob.errors import StateError

        conn = self._db()
        try:
            with self._mutex, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_doc_key(self.workspace, name),))
                data = change(self.read(name))
                self.write(name, data)
        except psycopg.Error as exc:
            if conn.closed and self._held:
                self._lost(exc)
            raise StateError(f"state database {self.location}: {_first_line(exc)}") from None
        return data

    def create(self, name: str, data: bytes) -> bytes:
        self._run(
            """INSERT INTO gpujob_documents (workspace, name, body, updated_by) VALUES (%s, %s, %s, %s)
               ON CONFLICT (workspace, name) DO NOTHING""",
            (self.workspace, checked_name(name), data.decode(), _me()),
        )
        found = self.read(name)
        found = present(found, "the row written just above")
        return found

    def names(self, prefix: str = "") -> list[str]:
        rows = self._run(
            """SELECT name FROM gpujob_documents WHERE workspace = %(w)s AND left(name, %(n)s) = %(p)s
               UNION SELECT DISTINCT name FROM gpujob_logs WHERE workspace = %(w)s AND left(name, %(n)s) = %(p)s
               UNION SELECT name FROM gpujob_secrets WHERE workspace = %(w)s AND left(name, %(n)s) = %(p)s""",
            {"w": self.workspace, "n": len(prefix), "p": prefix},
        ).fetchall()
        return sorted(r[0] for r in rows if not r[0].endswith(PUBLIC_SUFFIX))

    # logs

    def append(self, name: str, line: bytes) -> None:
        self.extend(name, [line])

    def extend(self, name: str, lines: list[bytes]) -> None:
        rows = [(self.workspace, checked_name(name), ln.rstrip(b"\n").decode()) for ln in lines]
        self._run("INSERT INTO gpujob_logs (workspace, name, line) VALUES (%s, %s, %s)", rows, many=True)

    def lines(self, name: str, *, last: int | None = None) -> list[bytes]:
        if last is None:
            rows = self._run(
                "SELECT line FROM gpujob_logs WHERE workspace = %s AND name = %s ORDER BY seq",
                (self.workspace, checked_name(name)),
            ).fetchall()
            return [r[0].encode() for r in rows]
        rows = self._run(
            "SELECT line FROM gpujob_logs WHERE workspace = %s AND name = %s ORDER BY seq DESC LIMIT %s",
            (self.workspace, checked_name(name), max(0, last)),
        ).fetchall()
        return [r[0].encode() for r in reversed(rows)]

    # secrets

    def _sealed(self, name: str) -> bytes | None:
        row = self._run(
            "SELECT sealed FROM gpujob_secrets WHERE workspace = %s AND name = %s",
            (self.workspace, checked_name(name)),
        ).fetchone()
        return bytes(row[0]) if row else None

    def _unseal(self, name: str, sealed: bytes) -> bytes:
        from gpujob.state.crypto import state_key, unseal

        key = state_key(self.location, f"the project's secret {name} is needed")
        return unseal(key, self._salt, self.workspace, name, sealed, self.location)

    def secret(self, name: str) -> bytes | None:
        sealed = self._sealed(name)
        return None if sealed is None else self._unseal(name, sealed)

    def public(self, name: str) -> bytes | None:
        row = self._run(
            "SELECT public FROM gpujob_secrets WHERE workspace = %s AND name = %s",
            (self.workspace, checked_name(name)),
        ).fetchone()
        return row[0].encode() if row and row[0] is not None else None

    def put_secret(self, name: str, secret: bytes, public: bytes | None, replace: bool = True) -> None:
        from gpujob.state.crypto import seal, state_key

        key = state_key(self.location, f"storing the project's secret {name}")
        self._db()  # the salt comes with the connection
        sealed = seal(key, self._salt, self.workspace, name, secret)
        conflict = (
            "DO UPDATE SET sealed = EXCLUDED.sealed, public = EXCLUDED.public" if replace else "DO NOTHING"
        )
        self._run(
            f"""INSERT INTO gpujob_secrets (workspace, name, public, sealed, created_by)
                VALUES (%s, %s, %s, %s, %s) ON CONFLICT (workspace, name) {conflict}""",
            (self.workspace, checked_name(name), public.decode() if public else None, sealed, _me()),
        )

    def create_secret(self, name: str, make: Callable[[], tuple[bytes, bytes]]) -> bytes:
        found = self.secret(name)
        if found is not None:
            return found
        self._refuse_a_second_secret(name)
        secret, public = make()
        self.put_secret(name, secret, public, replace=False)  # a racing maker may have won: read back
        stored = self.secret(name)
        stored = present(stored, "the secret written just above")
        return stored

    def _refuse_a_second_secret(self, name: str) -> None:
        from gpujob.errors import StateError
        from gpujob.state.local import LocalStore

        for left in sorted(self.left_behind):
            if name in LocalStore(left).names():
                raise StateError(
                    f"{self.location} has no {name} yet, but {left} has one, and the machines made from "
                    "there trust it: gpujob will not make a second one",
                    hint=f"move that state into the database first: gpujob state migrate --from {left} "
                    f"--to <the database URL> (with GPUJOB_STATE_KEY set); or delete {left} if it is stale",
                )

    def secret_file(self, name: str) -> Path | None:
        """The secret's path, held in memory only (gpujob.state.scratch): asyncssh reads it from there,
        and `scratch.on_disk(path)` writes it for a tool that needs the file (OpenSSH)."""
        from gpujob.state import scratch

        with self._mutex:
            path = self._files.get(name)
            if path is not None and scratch.held(path) is not None and path.parent.is_dir():
                return path
            secret = self.secret(name)
            if secret is None:
                return None
            path = self.scratch_dir() / name
            scratch.hold(path, secret)
            # Where the key came from, for a machine that refuses it (gpujob.ssh.dial names it).
            path.with_name(f"{name}.origin").write_text(self.location + "\n")
            self._files[name] = path
            return path

    def scratch_dir(self) -> Path:
        with self._mutex:
            if self._scratch is None or not self._scratch.is_dir():
                # RAM-backed, removed on exit, error and SIGTERM/SIGHUP/SIGINT; stale ones swept
                from gpujob.state.scratch import private_dir

                self._scratch = private_dir()
            return self._scratch


def _first_line(exc: BaseException | None) -> str:
    text = str(exc or "").strip()
    return (text.splitlines() or [type(exc).__name__])[0]
