"""Carrying checkpoints to where the next run reads them: pushing the verified local copies onto a
replaced machine's new disk, and moving them on one machine when checkpoint.dir changed. Either way
nothing is removed before its copy was read back with the same sha256."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from gpujob.errors import SSHError
from gpujob.quote import q, remote_path
from gpujob.ssh.confined import LocalDir
from gpujob.ssh.listing import RemoteListing, list_remote, name_problem
from gpujob.ssh.session import Remote

Progress = Callable[[int, int], object]


async def push_checkpoints(
    remote: Remote,
    local_dir: Path,
    names: list[str],
    remote_dir: str,
    *,
    progress: Progress | None = None,
) -> int:
    """Copy local checkpoints (the verified copies of a pull) into `remote_dir`, each written to a
    dotfile and renamed (a run starting meanwhile never sees half a file), keeping its mtime so
    "newest" means the same on the new disk. Returns the bytes sent."""
    rdir = remote_path(remote_dir)
    local = LocalDir(Path(local_dir))
    sent = 0
    try:
        sizes = {}
        for name in names:
            if name_problem(name) is not None:
                raise SSHError(f"refusing to push {name!r}: {name_problem(name)}")
            dfd, base = local.parent(name)
            size = local.regular_size(dfd, base)
            if size is None:
                raise SSHError(f"cannot push {name!r}: no regular file in {local.root}")
            sizes[name] = size
        total = sum(sizes.values())
        for name in names:
            dfd, base = local.parent(name)
            fd = os.open(base, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
            with os.fdopen(fd, "rb") as fh:
                mtime = os.fstat(fh.fileno()).st_mtime
                sub, _, leaf = f"{rdir}/{name}".rpartition("/")
                tmp = f"{sub}/.{leaf}.gpujob-push"
                cmd = (
                    f"mkdir -p {q(sub)} && cat > {q(tmp)} && touch -m -d @{mtime:.6f} {q(tmp)} "
                    f"&& mv -f {q(tmp)} {q(sub + '/' + leaf)}"
                )

                def count(n: int) -> None:
                    nonlocal sent
                    sent += n
                    if progress is not None:
                        progress(sent, total)

                await remote.stream_in(
                    cmd,
                    _blocks(fh, count),
                    size=sizes[name],
                    what=f"push of {name} to {rdir}",
                    left="the file goes to a temporary name first: the checkpoint dir is unchanged",
                )
    finally:
        local.close()
    return sent


async def move_checkpoints(remote: Remote, old_dir: str, new_dir: str) -> RemoteListing | None:
    """checkpoint.dir changed on a machine that keeps its disk: move the checkpoints the last run wrote
    into `old_dir` to `new_dir`, so the next run resumes from its step. Only when `new_dir` holds no
    checkpoint yet (a run already writing there is not overwritten). Copies, reads every copy back
    (name, size, sha256), then removes the originals. Returns what was moved, or None."""
    old, new = remote_path(old_dir), remote_path(new_dir)
    if old == new or new.startswith(old + "/") or old.startswith(new + "/"):
        return None
    src = await list_remote(remote, old)
    if not src.files or (await list_remote(remote, new)).files:
        return None
    names = sorted(src.files)
    # The names come from a listing (each one checked by name_problem) and travel as a NUL list on stdin.
    payload = b"".join(n.encode() + b"\0" for n in names)
    copy = 'for f; do mkdir -p -- "$0/$(dirname -- "$f")" && cp -p -- "$f" "$0/$f" || exit 1; done'
    await remote.run(
        f"mkdir -p {q(new)} && cd {q(old)} && xargs -0 sh -c {q(copy)} {q(new)}",
        input=payload,
        timeout=remote.limits.for_bytes(2 * src.total_bytes),
        what=f"copying the checkpoints from {old} to {new}",
        left=f"{old} is unchanged; {new} may hold part of the copy",
    )
    landed = await list_remote(remote, new)
    wrong = [n for n in names if landed.files.get(n) != src.files[n]]
    if wrong:
        raise SSHError(
            f"copying checkpoints from {old} to {new}: {len(wrong)} file(s) read back differently: "
            + ", ".join(repr(n) for n in wrong[:5]),
            hint=f"{old} is unchanged; remove {new} and run the command again",
        )
    await remote.run(
        f"cd {q(old)} && xargs -0 rm -f --",
        input=payload,
        what=f"removing the moved checkpoints from {old}",
        left=f"copies are in {new}; the originals in {old} may remain",
    )
    return src


def _blocks(fh: BinaryIO, on_bytes: Callable[[int], None]) -> Iterator[bytes]:
    while block := fh.read(1 << 20):
        on_bytes(len(block))
        yield block
