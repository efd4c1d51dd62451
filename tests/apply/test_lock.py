from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpujob.errors import LockError
from gpujob.lock import force_unlock, job_lock, read_lock


def test_lock_records_holder_and_releases(tmp_path):
    with job_lock(tmp_path, "bert", command="gpujob apply") as info:
        held = read_lock(tmp_path, "bert")
        assert held is not None and held.pid == os.getpid() and held.command == "gpujob apply"
        assert info.job == "bert"
    assert read_lock(tmp_path, "bert") is None
    with job_lock(tmp_path, "bert"):  # free again
        pass


def test_second_holder_is_refused_naming_the_first(tmp_path):
    with job_lock(tmp_path, "bert", command="gpujob apply job.yaml"), pytest.raises(LockError) as err:  # noqa: SIM117
        with job_lock(tmp_path, "bert"):
            pass
    msg = err.value.render()
    assert "gpujob apply job.yaml" in msg and f"pid {os.getpid()}" in msg and "since" in msg
    # The holder is alive on this host: force-unlock would refuse it, so the hint does not offer it.
    assert "force-unlock" not in msg and f"`kill {os.getpid()}`" in msg


def test_the_lock_hint_offers_force_unlock_only_where_it_can_help() -> None:
    import socket
    from datetime import UTC, datetime

    from gpujob.lock import LockInfo, lock_hint

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def note(host: str, pid: int) -> LockInfo:
        return LockInfo(
            job="bert", pid=pid, host=host, user="u", since=datetime.now(UTC), command="gpujob apply"
        )

    here = socket.gethostname()
    assert lock_hint("bert", note(here, dead.pid)).endswith("stale: `gpujob force-unlock bert --yes`")
    elsewhere = lock_hint("bert", note("ci-runner-7", 4242))
    assert "ci-runner-7" in elsewhere and "`gpujob force-unlock bert --yes`" in elsewhere
    alive = lock_hint("bert", note(here, os.getpid()))
    assert "force-unlock" not in alive and f"`kill {os.getpid()}`" in alive
    assert "force-unlock" not in lock_hint("bert", None)


HOLDER = """
import sys
from pathlib import Path
from gpujob.lock import job_lock
with job_lock(Path(sys.argv[1]), "bert", command="child apply"):
    print("ready", flush=True)
    sys.stdin.readline()
"""


def test_lock_excludes_another_process_and_dies_with_it(tmp_path):
    # A real second process (not fork: forking a threaded xdist worker can deadlock).
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        with pytest.raises(LockError, match="child apply"), job_lock(tmp_path, "bert"):
            pass
    finally:
        child.kill()
        child.wait(10)
    # The OS lock died with the holder; only its note is left, and it no longer blocks.
    note = read_lock(tmp_path, "bert")
    assert note is not None and note.holder_alive() is False
    with job_lock(tmp_path, "bert"):
        pass


def test_force_unlock_removes_lock_and_note(tmp_path):
    with job_lock(tmp_path, "bert"):
        pass
    (tmp_path / "locks" / "bert.json").write_text(
        '{"job":"bert","user":"u","host":"h","pid":1,"since":"2026-01-01T00:00:00Z","command":"x"}'
    )
    assert read_lock(tmp_path, "bert") is not None
    assert force_unlock(tmp_path, "bert") is True
    assert read_lock(tmp_path, "bert") is None
    assert force_unlock(tmp_path, "bert") is False
