"""A private RAM-backed directory for decrypted secrets (the project SSH key of a database store),
removed on every way out of the process.

  - a normal exit or an error: atexit;
  - SIGTERM, SIGHUP, SIGINT (a CI job cancelled, a terminal or SSH session closed, Ctrl-C): a handler
    removes the directories, then lets the signal do what it did before (the previous handler runs, or
    the default action kills the process, so the exit status still says which signal);
  - SIGKILL, a power cut: nothing can run then, so each new directory first sweeps this user's
    directories whose process is gone. The pid is in the name: gpujob-state-<pid>-XXXXXXXX.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

PREFIX = "gpujob-state-"
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_dirs: list[Path] = []
_previous: dict[int, Any] = {}
_lock = threading.Lock()


def base() -> str | None:
    """/dev/shm when the system has it (a decrypted key should not reach a disk), else the temp dir."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None


def private_dir() -> Path:
    """A new 0700 directory, removed when this process ends however it ends (see the module doc)."""
    where = base()
    sweep(Path(where or tempfile.gettempdir()))
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=where))
    with _lock:
        first = not _dirs
        _dirs.append(path)
    if first:
        atexit.register(remove_all)
        _install()
    return path


def remove_all() -> None:
    with _lock:
        for d in _dirs:
            shutil.rmtree(d, ignore_errors=True)
        _dirs.clear()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    remove_all()
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)  # e.g. Python's SIGINT handler: KeyboardInterrupt, then atexit
        return
    if previous == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)  # die of the signal as before, the key already gone
    os.kill(os.getpid(), signum)


def _install() -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers; atexit and the next sweep still clean up
    for sig in SIGNALS:
        current = signal.getsignal(sig)
        if current is _on_signal:
            continue
        _previous[sig] = current
        signal.signal(sig, _on_signal)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(where: Path) -> list[Path]:
    """Remove this user's scratch directories left by processes that are gone; returns them."""
    removed: list[Path] = []
    try:
        entries = list(where.iterdir())
    except OSError:
        return removed
    uid = os.getuid()
    for d in entries:
        if not d.name.startswith(PREFIX):
            continue
        pid_text = d.name[len(PREFIX) :].split("-", 1)[0]
        try:
            st = d.lstat()
        except OSError:
            continue
        if st.st_uid != uid or not d.is_dir() or d.is_symlink():
            continue
        # An old name without a pid (gpujob-state-XXXXXXXX) cannot say whose it was: only its age can.
        if pid_text.isdigit():
            if _alive(int(pid_text)):
                continue
        else:
            import time

            if time.time() - st.st_mtime < 24 * 3600:
                continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed
