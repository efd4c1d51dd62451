"""Local files as the gate and the pull read them: never through a symlink in the last part."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def local_sha256(path: Path) -> str:
    """sha256 of a regular local file, never through a symlink in its last part; "" when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
