"""The decrypted-secret directory (gpujob.state.scratch) goes on every way out of the process: SIGTERM,
SIGHUP and SIGINT remove it before the signal acts, and a SIGKILLed process's copy is swept by the next
one. Real processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpujob.state import scratch

CHILD = textwrap.dedent(
    """
    import sys, time
    from gpujob.state.scratch import private_dir
    d = private_dir()
    (d / "id_ed25519").write_text("secret key")
    print(d, flush=True)
    time.sleep(60)
    """
)


def _child() -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line, "the child made no directory"
    path = Path(line)
    assert (path / "id_ed25519").exists()
    assert path.name.startswith(f"{scratch.PREFIX}{proc.pid}-")
    return proc, path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_removes_the_key_and_still_ends_the_process(sig: signal.Signals) -> None:
    proc, path = _child()
    proc.send_signal(sig)
    code = proc.wait(20)
    assert not path.exists()
    assert code == -sig  # died of the signal as without the handler (SIGINT: KeyboardInterrupt, then so)


def test_a_killed_processs_copy_is_swept_by_the_next_one() -> None:
    proc, path = _child()
    proc.kill()
    proc.wait(20)
    assert path.exists()  # nothing can run on SIGKILL
    mine = scratch.private_dir()
    try:
        assert not path.exists()
        assert mine.exists()
    finally:
        scratch.remove_all()
    assert not mine.exists()


def test_a_live_processs_copy_and_other_names_are_left_alone(tmp_path: Path) -> None:
    live = tmp_path / f"{scratch.PREFIX}{os.getpid()}-abc"
    dead_pid = _dead_pid()
    dead = tmp_path / f"{scratch.PREFIX}{dead_pid}-abc"
    other = tmp_path / "gpujob-other-1"
    old_unnamed = tmp_path / f"{scratch.PREFIX}zz9k1x"
    new_unnamed = tmp_path / f"{scratch.PREFIX}q8w7e6"
    for d in (live, dead, other, old_unnamed, new_unnamed):
        d.mkdir()
    day_ago = time.time() - 2 * 86400
    os.utime(old_unnamed, (day_ago, day_ago))
    assert sorted(scratch.sweep(tmp_path)) == sorted([dead, old_unnamed])
    assert live.exists() and other.exists() and new_unnamed.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
