"""The workload quiesce script (gpujob.ssh.workload), run for real on this machine's /proc: processes
carrying the job's GPUJOB_JOB marker are stopped wherever they went (setsid, double fork); others,
including marked processes in the caller's own session and, in a plain sim pod's scope, marked
processes of another pod, are left alone. Only processes started by the test carry its marker."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpujob.ssh.workload import quiesce_command

LOOP = "trap '' TERM; while :; do sleep 0.1; done"  # ignores SIGTERM: needs the SIGKILL


@pytest.fixture
def job() -> str:
    return f"wq-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        _end(p)


def _end(p: subprocess.Popen[bytes]) -> None:
    """The process and what it started (each test process leads its own session and group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def _spawn(
    procs: list[subprocess.Popen[bytes]], env: dict[str, str], script: str, *, own_session: bool
) -> int:
    p = subprocess.Popen(["sh", "-c", script], env={**os.environ, **env}, start_new_session=own_session)
    procs.append(p)
    return p.pid


def _settled(*pids: int, deadline_s: float = 10.0) -> None:
    """Wait until each shell reached its command: exec'd into it (its cmdline is no longer `sh -c`) or,
    for a loop, started its first child (the trap is set before the loop starts)."""
    import time

    end = time.monotonic() + deadline_s
    for pid in pids:
        while not (_execd(pid) or _has_child(pid)):
            assert time.monotonic() < end, f"process {pid} never reached its command"
            time.sleep(0.01)  # polling interval, bounded by the deadline


def _execd(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return True  # gone: nothing left to wait for
    return bool(argv) and os.path.basename(argv[0]) != b"sh"


def _has_child(pid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(") ", 1)[1].split()[1]) == pid:
                        return True
            except (OSError, IndexError, ValueError):
                continue
    return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _quiesce(job: str, env: dict[str, str] | None = None) -> str:
    """The script run as the gate runs it: its own session, this machine's /proc."""
    script = quiesce_command(SimpleNamespace(name=job), 0.5)  # type: ignore[arg-type]
    env = {**{k: v for k, v in os.environ.items() if k != "GPUJOB_SIM_POD"}, **(env or {})}
    out = subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60, start_new_session=True
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return out.stdout


@pytest.fixture(params=["gnu grep", "grep without -z"])
def grep_path(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """A grep that refuses -z (busybox's) forces the script's one-look-per-process fallback."""
    if request.param == "gnu grep":
        return {}
    real = shutil.which("grep")
    wrapper = tmp_path / "bin" / "grep"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f'#!/bin/sh\nfor a in "$@"; do case "$a" in -*z*) exit 2;; esac; done\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    return {"PATH": f"{wrapper.parent}:{os.environ['PATH']}"}


def test_marked_processes_outside_any_tree_are_stopped_and_nothing_else(
    job: str, started: list[subprocess.Popen[bytes]], grep_path: dict[str, str]
) -> None:

    helper = _spawn(started, {"GPUJOB_JOB": job}, "sleep 600", own_session=True)
    stubborn = _spawn(started, {"GPUJOB_JOB": job}, LOOP, own_session=True)
    other_job = _spawn(started, {"GPUJOB_JOB": job + "x"}, "sleep 600", own_session=True)
    _settled(helper, stubborn, other_job)  # the shells exec'd or entered their loops (trap set)
    out = _quiesce(job, grep_path)
    assert f"stopped={helper} " in out and f"stopped={stubborn} " in out and "state=killed" in out, out
    assert not _alive(helper) and not _alive(stubborn)
    assert _alive(other_job) and f"={other_job} " not in out


def test_the_callers_session_and_other_pods_are_protected(
    job: str, started: list[subprocess.Popen[bytes]]
) -> None:

    pod_a = _spawn(started, {"GPUJOB_JOB": job, "GPUJOB_SIM_POD": "pod-a"}, "sleep 600", own_session=True)
    pod_b = _spawn(started, {"GPUJOB_JOB": job, "GPUJOB_SIM_POD": "pod-b"}, "sleep 600", own_session=True)
    _settled(pod_a, pod_b)
    out = _quiesce(job, {"GPUJOB_SIM_POD": "pod-a"})  # a plain pod sees only its own processes
    assert not _alive(pod_a) and _alive(pod_b), out
    _end(started[-1])
    # A marked process in the quiescing command's own session is the gate's, never the workload's.
    script = (
        f"GPUJOB_JOB={job} sleep 600 & s=$!; sh -c {quiesce_command_q(job)}; kill -0 $s && echo kept; kill $s"
    )
    out = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, timeout=60, start_new_session=True
    )
    assert "kept" in out.stdout and "state=none" in out.stdout, out.stdout + out.stderr


def quiesce_command_q(job: str) -> str:
    import shlex

    return shlex.quote(quiesce_command(SimpleNamespace(name=job), 0.5))  # type: ignore[arg-type]
