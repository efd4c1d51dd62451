"""One writer per job: an exclusive file lock plus a JSON note saying who holds it.

The lock itself is an OS lock (filelock/flock), so it vanishes with a crashed holder; the JSON note
stays behind and only serves to name the holder in the refusal message.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpujob.model import Model


class LockInfo(Model):
    job: str
    user: str
    host: str
    pid: int
    since: datetime
    command: str

    @classmethod
    def of_this_process(cls, job: str, command: str | None = None) -> LockInfo:
        """The holder note for a lock this process is taking (file or database backend)."""
        return cls(
            job=job,
            user=_user(),
            host=socket.gethostname(),
            pid=os.getpid(),
            since=datetime.now(UTC),
            command=command or _command_line(),
        )

    def describe(self) -> str:
        when = self.since.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{self.user}@{self.host} (pid {self.pid}) since {when}, running `{self.command}`"

    def holder_alive(self) -> bool | None:
        """Whether the holder process still exists; None when it is on another host (unknowable)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _paths(state_dir: Path, job: str) -> tuple[Path, Path]:
    locks = state_dir / "locks"
    return locks / f"{job}.lock", locks / f"{job}.json"


def read_lock(state_dir: Path, job: str) -> LockInfo | None:
    """The holder note, or None when nobody holds (or ever held) the job's lock."""
    _, meta = _paths(state_dir, job)
    try:
        return LockInfo.model_validate_json(meta.read_text())
    except (OSError, ValueError):
        return None


def force_unlock(state_dir: Path, job: str) -> bool:
    """Remove a stale lock and its note. True when something was removed.

    Refuses (LockError naming the holder) while the holder note's process is alive on this host, or
    while the lock is held and nothing proves its holder gone: removing a held lock file lets a second
    apply lock a fresh file beside the first one's. The file is removed only while this process holds
    it, so no one can take it in between."""
    from filelock import FileLock, Timeout

    from gpujob.errors import LockError

    lock_path, meta = _paths(state_dir, job)
    holder = read_lock(state_dir, job)
    alive = holder.holder_alive() if holder else None
    who = holder.describe() if holder else "a process that left no holder note"
    if alive:
        raise LockError(
            f"job '{job}' is locked by {who}, and that process is still running on this host",
            hint=f"wait for it to finish, or stop it (kill {holder.pid if holder else '?'}); then the lock frees itself",
        )
    removed = False
    if lock_path.exists():
        probe = FileLock(str(lock_path), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            if alive is None:  # no note, or a holder on another host: nothing proves it gone
                raise LockError(
                    f"job '{job}' is locked right now by {who}",
                    hint="wait for it to finish; a lock held over NFS frees itself when its holder's host is gone",
                ) from None
            # The note's process is gone, yet the lock is held: a newer holder that has not written its
            # note yet, or a soft lock left behind. Only the first is worth waiting for; both refuse.
            raise LockError(
                f"job '{job}' is held by a process that has not named itself yet (the last note, {who}, is stale)",
                hint="retry in a moment",
            ) from None
        try:
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
                removed = True
        finally:
            probe.release()
    with contextlib.suppress(FileNotFoundError):
        meta.unlink()
        removed = True
    return removed


def _command_line() -> str:
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv else ["gpujob"]
    return " ".join(argv)[:200]


@contextlib.contextmanager
def job_lock(
    state_dir: Path, job: str, *, timeout: float = 0, command: str | None = None
) -> Iterator[LockInfo]:
    """Hold the job's lock for the block. Raises LockError naming the holder when it is taken."""
    from filelock import FileLock, Timeout

    from gpujob.errors import LockError

    lock_path, meta = _paths(state_dir, job)
    lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = FileLock(str(lock_path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        holder = read_lock(state_dir, job)
        who = holder.describe() if holder else "another process (no holder note found)"
        raise LockError(f"job '{job}' is locked by {who}", hint=lock_hint(job, holder)) from None
    info = LockInfo.of_this_process(job, command)
    try:
        tmp = meta.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(info.model_dump(mode="json")))
        os.replace(tmp, meta)
        yield info
    finally:
        with contextlib.suppress(FileNotFoundError):
            current = read_lock(state_dir, job)
            if current is not None and current.pid == info.pid and current.since == info.since:
                meta.unlink()
        lock.release()


def lock_hint(job: str, holder: LockInfo | None) -> str:
    """What to do about a job locked by `holder`. force-unlock only where it can help: it refuses a
    holder that visibly runs on this host, so that one gets how to stop it instead."""
    # --yes: the hint must work without a terminal too.
    unlock = f"`gpujob force-unlock {job} --yes`"
    alive = holder.holder_alive() if holder is not None else None
    if holder is not None and alive is False:
        return f"that process is gone, so the lock is stale: {unlock}"
    if holder is not None and alive:
        return (
            f"wait for it to finish: it is running on this host (pid {holder.pid}), and the lock frees itself "
            f"when it exits; to end it sooner, stop that process (`kill {holder.pid}`)"
        )
    if holder is None:
        return "wait for it to finish, then retry"
    return f"wait for it to finish; if that process on {holder.host} is gone or hangs: {unlock}"


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return str(os.getuid())


def user_at_host() -> str:
    """Who is acting, as records name them: alice@laptop."""
    return f"{_user()}@{socket.gethostname()}"


@contextlib.contextmanager
def locked_within(
    store: Any, job: str, *, timeout: float = 0.0, command: str | None = None
) -> Iterator[LockInfo]:
    """A store's job lock, waited for up to `timeout` seconds (--lock-timeout); the refusal says how
    long it waited and how to wait longer."""
    from gpujob.errors import LockError

    with contextlib.ExitStack() as stack:
        try:
            info = stack.enter_context(store.lock(job, timeout=timeout, command=command))
        except LockError as exc:
            if timeout <= 0:
                wait = "or wait for it: --lock-timeout 5m"
                raise LockError(str(exc), hint=f"{exc.hint}; {wait}" if exc.hint else wait) from None
            raise LockError(f"{exc} (waited {_seconds(timeout)} for it)", hint=exc.hint) from None
        yield info


def _seconds(value: float) -> str:
    return f"{value:g}s" if value < 120 else f"{value / 60:g}m"
