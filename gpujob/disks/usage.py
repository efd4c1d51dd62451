"""Bytes and inodes used on the durable mount and on `/` (the container disk), read over SSH.

A checkpoint save into a full disk fails or, worse, leaves a truncated file (U6); a disk can also run out
of inodes with bytes to spare (U7); RunPod's container disk is small and pip and HF caches fill it (RP11).
`df -P` is POSIX and reads the same on every image; `-i` gives the inodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpujob.quote import q

WARN_AT = 0.90  # status and watch warn
PARK_AT = 0.95  # watch pulls and parks: room is left for the pull's own reads and a last save


@dataclass(frozen=True)
class DiskUsage:
    path: str  # the directory asked about: "/" or the durable mount
    used_bytes: int
    total_bytes: int
    used_inodes: int | None  # None: the filesystem has no inode count (df -i shows 0 or -)
    total_inodes: int | None
    caches: tuple[tuple[str, int], ...] = ()  # (dir, bytes) of the caches on it, read once it fills (LC0.4)

    @property
    def byte_fraction(self) -> float:
        return self.used_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def inode_fraction(self) -> float:
        return (
            self.used_inodes / self.total_inodes
            if self.used_inodes is not None and self.total_inodes
            else 0.0
        )

    @property
    def fullest(self) -> tuple[str, float]:
        """("bytes" | "inodes", fraction): whichever runs out first."""
        return (
            ("inodes", self.inode_fraction)
            if self.inode_fraction > self.byte_fraction
            else ("bytes", self.byte_fraction)
        )

    def line(self) -> str:
        inodes = f", inodes {self.inode_fraction:.0%}" if self.total_inodes else ""
        return (f"{self.path} {self.used_bytes / 1e9:.1f} of {self.total_bytes / 1e9:.1f} GB "
                f"({self.byte_fraction:.0%}){inodes}")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "used_bytes": self.used_bytes, "total_bytes": self.total_bytes,
                "used_inodes": self.used_inodes, "total_inodes": self.total_inodes,
                "byte_fraction": round(self.byte_fraction, 4), "inode_fraction": round(self.inode_fraction, 4)}  # fmt: skip


def paths_of(spec: Any) -> list[str]:
    """The durable mount, then `/` (the same filesystem is read once per path all the same)."""
    mount = spec.storage.mount.rstrip("/") or "/"
    return [mount] if mount == "/" else [mount, "/"]


def command(paths: list[str]) -> str:
    args = " ".join(q(p) for p in paths)
    return f"df -P -B1 {args} 2>/dev/null; echo @@inodes; df -P -i {args} 2>/dev/null; true"


def parse(text: str, paths: list[str]) -> list[DiskUsage]:
    """df's rows in the order of `paths` (one row per path asked, even for one filesystem)."""
    blocks, _, inodes = text.partition("@@inodes")
    rows_b = _rows(blocks)
    rows_i = _rows(inodes)
    out = []
    for i, path in enumerate(paths):
        if i >= len(rows_b):
            break
        _, total, used = rows_b[i][:3]
        itotal = iused = None
        if i < len(rows_i):
            t, u = rows_i[i][1], rows_i[i][2]
            if t.isdigit() and u.isdigit() and int(t) > 0:
                itotal, iused = int(t), int(u)
        if total.isdigit() and used.isdigit():
            out.append(DiskUsage(path, int(used), int(total), iused, itotal))
    return out


def _rows(text: str) -> list[list[str]]:
    lines = [ln.split() for ln in text.strip().splitlines()]
    return [cells for cells in lines if len(cells) >= 5 and cells[0] != "Filesystem"]


def cache_dirs(spec: Any) -> list[str]:
    """Where pip, Hugging Face, apt and the rest put their caches (gpujob.ssh.launcher points HF_HOME and
    PIP_CACHE_DIR under <mount>/.cache when run.caches is durable)."""
    mount = spec.storage.mount.rstrip("/") or ""
    return [f"{mount}/.cache", "/root/.cache", "/tmp", "/var/cache/apt", "/var/lib/apt/lists"]


def du_command(dirs: list[str]) -> str:
    """`du` of each cache dir that exists, on its own filesystem only, bounded in time (LC0.4)."""
    args = " ".join(q(d) for d in dirs)
    return f'for d in {args}; do [ -d "$d" ] && timeout 20 du -sx -B1 "$d" 2>/dev/null; done; true'


def parse_du(text: str) -> list[tuple[str, int]]:
    out = []
    for line in text.splitlines():
        size, _, path = line.partition("\t")
        if size.strip().isdigit() and path.startswith("/"):
            out.append((path.strip()[:200], int(size)))
    return sorted(out, key=lambda kv: -kv[1])


def _on(path: str, disk: str) -> bool:
    return disk == "/" or path == disk or path.startswith(disk.rstrip("/") + "/")


async def read_disks(remote: Any, spec: Any) -> list[DiskUsage]:
    """One df round trip on an open connection (gpujob.ssh.session.Remote); when a disk fills, one more
    for the `du` of the caches (LC0.4: what to prune, before guessing)."""
    paths = paths_of(spec)
    result = await remote.run(command(paths), check=False, timeout=30.0, what="df (disk and inode use)")
    usages = parse(str(result.stdout), paths)
    if not any(u.fullest[1] >= WARN_AT for u in usages):
        return usages
    du = await remote.run(du_command(cache_dirs(spec)), check=False, timeout=60.0, what="du of the caches")
    sizes = parse_du(str(du.stdout))
    mount = paths[0]
    out = []
    for u in usages:
        if u.fullest[1] >= WARN_AT:
            mine = [
                (d, n)
                for d, n in sizes
                if _on(d, u.path) and (u.path != "/" or mount == "/" or not _on(d, mount))
            ]
            u = DiskUsage(u.path, u.used_bytes, u.total_bytes, u.used_inodes, u.total_inodes, tuple(mine[:4]))
        out.append(u)
    return out


def warnings(usages: list[DiskUsage], at: float = WARN_AT) -> list[str]:
    """A line per disk at or past `at` of its bytes or inodes, naming what fills first."""
    out = []
    for u in usages:
        what, frac = u.fullest
        if frac >= at:
            hint = (
                "many small files: pack them (U7)" if what == "inodes" else "a checkpoint save may fail (U6)"
            )
            if u.path == "/":
                hint += "; / is the container disk: caches and pip installs land there (RP11)"
            if u.caches:
                hint += "; caches on it: " + ", ".join(f"{d} {n / 1e9:.1f} GB" for d, n in u.caches)
            out.append(f"{u.path} is {frac:.0%} full ({what}): {hint}")
    return out
