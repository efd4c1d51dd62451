"""A private RAM-backed directory for decrypted secrets (the project SSH key of a database store),
removed on every way out of the process.

  - a normal exit or an error: atexit;
  - SIGTERM, SIGHUP, SIGINT (a CI job cancelled, a terminal or SSH session closed, Ctrl-C): a handler
    removes the directories, then lets the signal do what it did before (the previous handler runs, or
    the default action kills the process, so the exit status still says which signal);
  - SIGKILL, a power cut: nothing can run then, so each new directory first sweeps this user's
    directories whose process is gone. The pid is in the name: gpujob-state-<pid>-XXXXXXXX.

Better still, a secret need not be written at all: `hold(path, data)` keeps it in memory under the
path it would have, asyncssh reads it from there (gpujob.ssh.session.connect), and only a tool that
reads files itself (OpenSSH, for `gpujob ssh`) has it written, by `on_disk(path)`.
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
_held: dict[str, bytes] = {}
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


def hold(path: Path, data: bytes) -> None:
    """Keep a secret in memory under the path a file of it would have (see the module doc)."""
    with _lock:
        _held[str(path)] = data


def held(path: Path | str) -> bytes | None:
    with _lock:
        return _held.get(str(path))


def on_disk(path: Path) -> Path:
    """`path` as a file, for a tool that reads one: a held secret is written there now (0600, never
    through a link), inside its private directory, which goes when this process ends. A path that
    holds nothing in memory is returned as it is (a local store's key is a file already)."""
    data = held(path)
    if data is None:
        return path
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path
