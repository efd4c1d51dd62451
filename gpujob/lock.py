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

from gpujob.model import Model


class LockInfo(Model):
    job: str
    user: str
    host: str
    pid: int
    since: datetime
    command: str

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
    """Remove the lock and its note (for a holder that is gone). True when something was removed."""
    removed = False
    for path in _paths(state_dir, job):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
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
        hint = "wait for it to finish"
        if holder is not None and holder.holder_alive() is False:
            hint = f"that process is gone, so the lock is stale: gpujob force-unlock {job}"
        else:
            hint += f"; if that process is gone: gpujob force-unlock {job}"
        raise LockError(f"job '{job}' is locked by {who}", hint=hint) from None
    info = LockInfo(
        job=job,
        user=_user(),
        host=socket.gethostname(),
        pid=os.getpid(),
        since=datetime.now(UTC),
        command=command or _command_line(),
    )
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


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return str(os.getuid())
