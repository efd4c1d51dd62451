"""Job locks in the PostgreSQL store: one session-level advisory lock per job (workspace, job).

The lock lives on the store's one connection, so the server drops it the moment the holder's process
dies (its socket closes) and a holder whose session was ended by force-unlock fails at its next write.
The holder note (user, host, pid, since, command, server pid) sits in gpujob_locks, only for messages
and for force-unlock to find the session; whether a job is locked is always asked of the server.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

from gpujob.lock import LockInfo
from gpujob.state.store import checked_name


def lock_key(workspace: str, job: str) -> int:
    """The advisory lock id of a job: 64 bits of a hash of workspace and job (a signed bigint)."""
    digest = hashlib.blake2b(f"gpujob-lock\0{workspace}\0{job}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PgLocks:
    """The lock half of PgStore (which supplies the connection, `_run` and the attributes below)."""

    workspace: str
    _held: set[str]
    _conn: Any
    _pid: int
    _mutex: threading.RLock

    @property
    def location(self) -> str:
        raise NotImplementedError

    def _db(self) -> Any:
        raise NotImplementedError

    def _run(self, sql: str, args: Any = (), *, many: bool = False) -> Any:
        raise NotImplementedError

    @contextlib.contextmanager
    def lock(self, job: str, *, timeout: float = 0, command: str | None = None) -> Iterator[LockInfo]:
        key = lock_key(self.workspace, checked_name(job))
        if job in self._held:
            self._refuse(job)
        if not self._acquire(key, timeout):
            self._refuse(job)
        self._held.add(job)
        info = LockInfo.of_this_process(job, command)
        try:
            self._run(
                """INSERT INTO gpujob_locks (workspace, job, holder, backend_pid)
                   VALUES (%s, %s, %s, pg_backend_pid())
                   ON CONFLICT (workspace, job) DO UPDATE SET holder = EXCLUDED.holder, backend_pid = EXCLUDED.backend_pid""",
                (self.workspace, job, json.dumps(info.model_dump(mode="json"))),
            )
            yield info
        finally:
            self._release(job, key)

    def _acquire(self, key: int, timeout: float) -> bool:
        import psycopg

        if timeout <= 0:
            return bool(self._run("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0])
        conn = self._db()
        with self._mutex:
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(timeout * 1000)}ms",))
            try:
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                return True
            except psycopg.errors.LockNotAvailable:
                return False
            finally:
                conn.execute("SELECT set_config('lock_timeout', '0', false)")

    def _release(self, job: str, key: int) -> None:
        if job not in self._held:
            return  # the connection went, and the lock with it
        self._held.discard(job)
        conn = self._conn
        if conn is None or conn.closed or self._pid != os.getpid():
            return
        with contextlib.suppress(Exception):  # a dead connection has released everything already
            conn.execute(
                "DELETE FROM gpujob_locks WHERE workspace = %s AND job = %s AND backend_pid = pg_backend_pid()",
                (self.workspace, job),
            )
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def _refuse(self, job: str) -> None:
        from gpujob.errors import LockError

        holder = self.read_lock(job)
        who = holder.describe() if holder else "another gpujob (no holder note yet)"
        from gpujob.lock import lock_hint

        raise LockError(
            f"job '{job}' is locked by {who} (state: {self.location})", hint=lock_hint(job, holder)
        )

    def _holder_row(self, job: str) -> tuple[LockInfo, int] | None:
        row = self._run(
            "SELECT holder, backend_pid FROM gpujob_locks WHERE workspace = %s AND job = %s",
            (self.workspace, checked_name(job)),
        ).fetchone()
        if row is None:
            return None
        try:
            return LockInfo.model_validate(row[0]), int(row[1])
        except ValueError:
            return None

    def read_lock(self, job: str) -> LockInfo | None:
        found = self._holder_row(job)
        return found[0] if found else None

    def lock_held(self, job: str) -> bool:
        if job in self._held:
            return True
        key = lock_key(self.workspace, checked_name(job))
        with self._mutex:
            if self._run("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                self._run("SELECT pg_advisory_unlock(%s)", (key,))
                return False
        return True

    def force_unlock(self, job: str) -> bool:
        """End the holding session (its lock goes with it; its next write fails), then drop the note.
        Refused while the holder runs on this host: it is plainly not stuck."""
        from gpujob.errors import LockError

        found = self._holder_row(job)
        held = self.lock_held(job)
        if held and found is not None and found[0].holder_alive():
            raise LockError(
                f"job '{job}' is locked by {found[0].describe()}, and that process is still running on this host",
                hint=f"wait for it to finish, or stop it (kill {found[0].pid}); then the lock frees itself",
            )
        if held and found is not None:
            ended = self._run("SELECT pg_terminate_backend(%s)", (found[1],)).fetchone()[0]
            if not ended or not self._wait_free(job):
                raise LockError(
                    f"could not end the session holding job '{job}' (server pid {found[1]})",
                    hint="the database's owner (or a member of pg_signal_backend) can: "
                    f"SELECT pg_terminate_backend({found[1]})",
                )
        elif held:
            raise LockError(
                f"job '{job}' is locked by a session that left no holder note", hint="retry in a moment"
            )
        removed = self._run(
            "DELETE FROM gpujob_locks WHERE workspace = %s AND job = %s", (self.workspace, job)
        ).rowcount
        return bool(removed) or held

    def _wait_free(self, job: str, deadline_s: float = 5.0) -> bool:
        """The server ends a terminated session asynchronously: wait (bounded) for its lock to go."""
        import time

        end = time.monotonic() + deadline_s
        while self.lock_held(job):
            if time.monotonic() > end:
                return False
            time.sleep(0.05)
        return True

    def locked_jobs(self) -> list[str]:
        rows = self._run("SELECT job FROM gpujob_locks WHERE workspace = %s ORDER BY job", (self.workspace,))
        return [r[0] for r in rows.fetchall()]
