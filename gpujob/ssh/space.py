"""Room for a pull, checked before any byte is written: the local free space under `pull_to` (with a
margin) and the remote disk a claimed size must fit on. A pod names its files' sizes; a size larger
than its own disk (a sparse file, a forged listing) or than what is free here is refused, so no bound
gpujob derives from a size (gpujob.ssh.deadline.Limits.for_bytes) is larger than what the disks allow.
Every pull goes through gpujob.ssh.pull.pull_checkpoints, which asks here first.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gpujob.errors import SSHError

MARGIN_MIN = 64 * 1024 * 1024  # the local disk keeps at least this free after a pull
MARGIN_SHARE = 0.02  # ... or this share of what is pulled, whichever is larger


class NoRoom(SSHError):
    """A pull that cannot fit, refused before it wrote anything."""


def size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def local_free(path: Path) -> int:
    """Bytes free to this user on the filesystem that holds (or will hold) `path`."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def margin(needed: int) -> int:
    return max(MARGIN_MIN, int(needed * MARGIN_SHARE))


# The size of the filesystem holding the dir (POSIX df: 1024-byte blocks in column 2).
DISK_COMMAND = "df -Pk -- {dir} 2>/dev/null | awk 'NR==2 {{print $2}}'"


def parse_disk(text: str) -> int | None:
    """Bytes, from df's 1024-byte blocks; None when df said nothing usable (the check is then skipped)."""
    word = text.strip()
    return int(word) * 1024 if word.isdigit() and int(word) > 0 else None


def check(
    claims: dict[str, int],
    *,
    needed: int,
    free: int,
    disk: int | None,
    local_dir: Path,
    remote_dir: str,
    where: str,
) -> None:
    """NoRoom when a claimed file is larger than the remote disk or than the local free space, or
    when the bytes still to fetch (`needed`) and the margin do not fit in `free`."""
    left = "nothing was written"
    for name, claimed in sorted(claims.items()):
        if disk is not None and claimed > disk:
            raise NoRoom(
                f"{remote_dir}/{name} on {where} claims {size(claimed)} ({claimed} bytes), more than the "
                f"remote disk holds ({size(disk)}); refused before pulling",
                hint=f"{left}; a file larger than its disk is sparse or forged: look at it with gpujob ssh",
            )
    if needed + margin(needed) > free:
        raise NoRoom(
            f"pulling {size(needed)} into {local_dir} needs {size(needed + margin(needed))} with the "
            f"margin, but only {size(free)} is free there",
            hint=f"{left}; free space there or set checkpoint.pull_to to a larger disk, then pull again",
        )
