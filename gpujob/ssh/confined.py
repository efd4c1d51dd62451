"""Local writes of a pull, confined to local_dir: every directory and file below it is opened relative to
its parent without following symlinks, so a planted link (`ckpt/x.part -> /elsewhere`) is never written
through."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path

PART = ".part"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafeLocalPath(Exception):
    """A path below local_dir that is not what a pull may write to (a symlink, a file where a dir goes)."""


class LocalDir:
    """local_dir, and directories below it, opened without following symlinks."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        self._fds: dict[str, int] = {"": self.fd}

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def parent(self, name: str) -> tuple[int, str]:
        """(fd of the directory holding `name`, its last part), creating directories on the way."""
        *dirs, base = name.split("/")
        key, fd = "", self.fd
        for part in dirs:
            key = f"{key}/{part}" if key else part
            if key in self._fds:
                fd = self._fds[key]
                continue
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeLocalPath(
                        f"{key} in {self.root} is a symbolic link or not a directory"
                    ) from None
                raise
            self._fds[key] = fd
        return fd, base

    def regular_size(self, dfd: int, base: str) -> int | None:
        """Size of a regular file (never through a symlink), or None."""
        try:
            st = os.stat(base, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def sha256(self, dfd: int, base: str) -> str:
        fd = os.open(base, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
        h = hashlib.sha256()
        with os.fdopen(fd, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()

    def open_part(self, dfd: int, base: str, size: int) -> tuple[int, int]:
        """Open `.part` for writing at any offset (pwrite) without following a symlink; (fd, its size).
        Anything but a regular file under that name (a planted symlink, a FIFO) is removed first."""
        part = base + PART
        flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        current = self.regular_size(dfd, part)
        if current is None:
            try:
                os.unlink(part, dir_fd=dfd)  # a symlink or special file: unlinking never touches its target
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                raise UnsafeLocalPath(f"{part} in {self.root} is a directory") from None
            fd = os.open(part, flags | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dfd)
            return fd, 0
        if current > size:  # the remote file was replaced by a smaller one: start over
            os.unlink(part, dir_fd=dfd)
            return os.open(part, flags | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dfd), 0
        return os.open(part, flags, dir_fd=dfd), current

    def read_small(self, dfd: int, name: str, limit: int = 1 << 20) -> bytes | None:
        """A small regular file's bytes (never through a symlink), or None when there is none."""
        try:
            # O_NONBLOCK: a FIFO planted under the name must not hang the pull
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(name, flags, dir_fd=dfd)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read(limit) if stat.S_ISREG(os.fstat(fh.fileno()).st_mode) else None

    def write_small(self, dfd: int, name: str, data: bytes) -> None:
        """Replace `name` atomically (a temporary dotfile, then rename), never writing through a link."""
        tmp = f"{name}.tmp"
        self.discard(dfd, tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)

    def promote(self, dfd: int, base: str) -> None:
        try:
            os.replace(
                base + PART, base, src_dir_fd=dfd, dst_dir_fd=dfd
            )  # replaces a symlink, never follows it
        except IsADirectoryError:
            raise UnsafeLocalPath(f"{base} in {self.root} is a directory") from None

    def discard(self, dfd: int, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dfd)
