"""Local files as the gate and the pull read them: never through a symlink in the last part."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def local_sha256(path: Path) -> str:
    """sha256 of a regular local file, never through a symlink in its last part; "" when there is none."""
    try:
        # O_NONBLOCK: a FIFO in its place must not hang the gate waiting for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # checked before fdopen, which refuses a directory
        os.close(fd)
        return ""
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
