"""Run the gpujob CLI under a pseudo-terminal (stdin, stdout and stderr all a TTY), as a person sees it."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path


def run_in_pty(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 240) -> tuple[int, bytes]:
    """(exit code, every byte the terminal received) of `python -m gpujob ARGS`."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpujob", *args],
        cwd=cwd,
        env={"TERM": "xterm-256color", **env},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(
                    f"gpujob {' '.join(args)} ran over {timeout}s:\n{out.decode(errors='replace')}"
                )
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: every process holding the terminal's other side has exited
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=30), bytes(out)
