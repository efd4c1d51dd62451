"""The local directory store: .gpujob/ beside the job file (or $GPUJOB_STATE_DIR), as gpujob always kept it.

Each name is a file under the root. Documents are replaced atomically (temp file, fsync, rename), logs
are appended in one write each (O_APPEND, fsync), secrets are files created 0600. The directory is made
0700 on the first write only: reading (planning) never creates it. Locks are gpujob.lock's file locks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gpujob.invariant import InvariantError
from gpujob.state.store import PUBLIC_SUFFIX, checked_name

if TYPE_CHECKING:
    from gpujob.lock import LockInfo

TAIL_BLOCK = 64 << 10


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalStore) and self.root.resolve() == other.root.resolve()

    def __hash__(self) -> int:
        return hash(self.root.resolve())

    @property
    def location(self) -> str:
        return str(self.root)

    @property
    def label(self) -> str:
        root = self.root.resolve()
        return root.parent.name if root.name == ".gpujob" else root.name

    def _path(self, name: str) -> Path:
        return self.root / checked_name(name)

    def _dir_for(self, path: Path) -> None:
        if not self.root.is_dir():
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.root, 0o700)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    # documents

    def read(self, name: str) -> bytes | None:
        try:
            return self._path(name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        path = self._path(name)
        self._dir_for(path)
        _write_atomic(path, data, 0o600)

    def update(self, name: str, change: Callable[[bytes | None], bytes]) -> bytes:
        from filelock import FileLock

        path = self._path(name)
        self._dir_for(path)
        with FileLock(str(path) + ".lock"):
            data = change(self.read(name))
            _write_atomic(path, data, 0o600)
        return data

    def create(self, name: str, data: bytes) -> bytes:
        path = self._path(name)
        self._dir_for(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        _write_atomic(tmp, data, 0o600)
        try:
            os.link(tmp, path)  # atomic and exclusive: fails when another process made it first
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return path.read_bytes()

    def names(self, prefix: str = "") -> list[str]:
        if not self.root.is_dir():
            return []
        out = []
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root)
            if not path.is_file() or path.is_symlink() or _not_state(rel):
                continue
            name = rel.as_posix()
            if name.startswith(prefix):
                out.append(name)
        return sorted(out)

    # logs

    def append(self, name: str, line: bytes) -> None:
        self.extend(name, [line])

    def extend(self, name: str, lines: list[bytes]) -> None:
        path = self._path(name)
        self._dir_for(path)
        data = b"".join(line.rstrip(b"\n") + b"\n" for line in lines)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)  # one write: concurrent appenders never interleave
            os.fsync(fd)
        finally:
            os.close(fd)

    def lines(self, name: str, *, last: int | None = None) -> list[bytes]:
        try:
            with self._path(name).open("rb") as fh:
                data = fh.read() if last is None else _tail(fh, last)
        except FileNotFoundError:
            return []
        out = data.splitlines()
        return out if last is None else out[-last:] if last > 0 else []

    # secrets (plain 0600 files here, as ssh itself keeps keys)

    def secret(self, name: str) -> bytes | None:
        path = self.secret_file(name)
        return path.read_bytes() if path is not None else None

    def public(self, name: str) -> bytes | None:
        return self.read(name + PUBLIC_SUFFIX)

    def create_secret(self, name: str, make: Callable[[], tuple[bytes, bytes]]) -> bytes:
        from filelock import FileLock

        path = self._path(name)
        self._dir_for(path)
        with FileLock(str(self.root / f".{name}.lock")):
            found = self.secret(name)
            if found is not None:
                return found
            secret, public = make()
            _write_atomic(path, secret, 0o600)
            _write_atomic(self._path(name + PUBLIC_SUFFIX), public, 0o644)
            return secret

    def put_secret(self, name: str, secret: bytes, public: bytes | None) -> None:
        """Store a secret as it is (migration)."""
        path = self._path(name)
        self._dir_for(path)
        _write_atomic(path, secret, 0o600)
        if public is not None:
            _write_atomic(self._path(name + PUBLIC_SUFFIX), public, 0o644)

    def secret_file(self, name: str) -> Path | None:
        path = self._path(name)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            return None
        if mode & 0o077:  # loosened by a copy or an editor; ssh refuses such keys anyway
            os.chmod(path, 0o600)
        return path

    def scratch_dir(self) -> Path:
        path = self.root / ".scratch"
        self._dir_for(path / "x")
        return path

    # locks (gpujob.lock: an OS file lock plus a note naming the holder)

    @contextlib.contextmanager
    def lock(self, job: str, *, timeout: float = 0, command: str | None = None) -> Iterator[LockInfo]:
        from gpujob.lock import job_lock

        self._dir_for(self.root / "locks" / "x")
        with job_lock(self.root, job, timeout=timeout, command=command) as info:
            yield info

    def read_lock(self, job: str) -> LockInfo | None:
        from gpujob.lock import read_lock

        return read_lock(self.root, job)

    def lock_held(self, job: str) -> bool:
        from filelock import FileLock, Timeout

        path = self.root / "locks" / f"{checked_name(job)}.lock"
        if not path.exists():
            return False
        probe = FileLock(str(path), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        probe.release()
        return False

    def force_unlock(self, job: str) -> bool:
        from gpujob.lock import force_unlock

        return force_unlock(self.root, job)

    def locked_jobs(self) -> list[str]:
        folder = self.root / "locks"
        return sorted({p.stem for p in folder.glob("*.json")} | {p.stem for p in folder.glob("*.lock")})


def _not_state(rel: Path) -> bool:
    """Files in the directory that are not records: locks, temp files, public halves (they travel
    with their secret), hidden scratch files."""
    parts = rel.parts
    name = parts[-1]
    return (
        parts[0] == "locks"
        or any(p.startswith(".") for p in parts)
        or name.endswith((".tmp", ".lock", PUBLIC_SUFFIX))
    )


def _tail(fh: object, last: int) -> bytes:
    """Enough whole lines from the end of the file for `last` lines (never the whole file if long)."""
    import io

    if not isinstance(fh, io.BufferedReader):
        raise InvariantError("internal error: the log is not opened for binary reading (please report this)")
    end = fh.seek(0, os.SEEK_END)
    start, data = end, b""
    while start > 0 and data.count(b"\n") <= last:
        start = max(0, start - TAIL_BLOCK)
        fh.seek(start)
        data = fh.read(end - start)
    if start > 0:
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""  # the first line is probably cut
    return data


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Temp file, fsync, rename: a kill never leaves half a record or a loose secret."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
