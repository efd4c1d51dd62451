from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpujob.errors import ConfigError
from gpujob.jobfile.model import JobSpec
from gpujob.layout.machine import checkpoint_interval_s, job_dir, scratch_dir
from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.launcher import RunStatus, launch_run, run_status
from gpujob.ssh.session import Remote, connect
from gpujob.ssh.testing import SSHD, running_sshd

WORKLOAD = (
    'echo "run of $GPUJOB_JOB interval=$GPUJOB_CHECKPOINT_INTERVAL keep=$GPUJOB_CHECKPOINT_KEEP hf=$HF_HOME";'
    ' printf "%s" "$ODD" > ../odd.txt;'
    ' printf "%s" "$MY_SECRET" | sha256sum | cut -d" " -f1 > ../secret.sha;'
    ' echo ck > "$GPUJOB_CHECKPOINT_DIR/step-$(date +%s%N).pt";'
    " while [ ! -e release ]; do sleep 0.05; done; exit 3"
)
ODD = "sp ace 'q' \"dq\" $HOME ; `id` \n nl"


def canary() -> str:
    # Shell-hostile on purpose: if anything ever interpolated it, it would show.
    return f"CANARY-{uuid.uuid4().hex}-'\"$(touch /tmp/pwned)`id`;\nsecond line"


def make_spec(tmp_path: Path, *, command: str = WORKLOAD, setup: str | None = None, **run: Any) -> JobSpec:
    mount = tmp_path / "mount"
    return JobSpec.model_validate(
        {
            "version": 1,
            "name": f"t{uuid.uuid4().hex[:10]}",
            "platform": "runpod",
            "machine": {"gpu": "A100-80GB"},
            "storage": {"mount": str(mount)},
            "checkpoint": {"dir": f"{mount}/ckpt", "interval": "auto", "mtbf": "3h", "write_time": "30s"},
            "run": {
                "sync": {"dest": f"{mount}/code"},
                "command": command,
                "setup": setup,
                "env": {"ODD": ODD},
                **run,
            },
        }
    )


def wait_for(
    what: str, probe: Callable[[], RunStatus], ok: Callable[[RunStatus], bool], deadline: float = 30
) -> RunStatus:
    end = time.monotonic() + deadline
    while True:
        st = probe()
        if ok(st):
            return st
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}: {st}")
        time.sleep(0.05)  # polling interval, bounded by the deadline


class Session:
    def __init__(self, server: SSHD, state: Path) -> None:
        self.server, self.state = server, state

    def do(self, fn: Callable[[Remote], Any]) -> Any:
        async def go() -> Any:
            async with connect(
                self.server.endpoint,
                key_path=self.state / "id_ed25519",
                known_hosts=self.state / "kh.json",
                resource_id="pod",
            ) as remote:
                return await fn(remote)

        return asyncio.run(go())


def launcher_procs(spec: JobSpec) -> int:
    """Wrapper processes of this job's run (subshells forked by a wrapper are not counted)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in out.splitlines()]
    mine = {
        r[0]: r[1] for r in rows if len(r) == 3 and r[2].startswith(f"bash {job_dir(spec)}/launcher.sh run")
    }
    return sum(1 for ppid in mine.values() if ppid not in mine)


def grep_canary(value: str, *paths: Path | str) -> list[str]:
    first = value.split("\n")[0]
    out = subprocess.run(
        ["grep", "-rlF", "-s", "-D", "skip", "--", first, *map(str, paths)], capture_output=True, text=True
    )
    return out.stdout.split()


def test_interval_auto_is_young_daly(tmp_path: Path) -> None:
    assert checkpoint_interval_s(make_spec(tmp_path)) == 804  # sqrt(2 * 10800 * 30), rounded down


def test_launch_under_tmux_setup_once_exit_code_idempotent_and_no_secret_leak(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    secret = canary()
    spec = make_spec(tmp_path, setup="echo once >> ../setup.count", secrets=["MY_SECRET"])
    scratch = str(tmp_path / "container")
    s = Session(sshd, state)
    mount, code = tmp_path / "mount", tmp_path / "mount" / "code"
    returned: list[str] = []

    def status() -> RunStatus:
        st = s.do(lambda r: run_status(r, spec))
        returned.append(repr(st))
        return st

    def launch() -> bool:
        started = s.do(lambda r: launch_run(r, spec, secrets={"MY_SECRET": secret}, scratch_root=scratch))
        returned.append(repr(started))
        return bool(started)

    try:
        assert launch() is True
        st = wait_for(
            "run alive with a checkpoint", status, lambda st: st.alive and st.last_checkpoint is not None
        )
        assert st.detach == "tmux" and st.exit_code is None and st.started_at and st.state == "running"
        assert st.last_checkpoint_age_s is not None and st.last_checkpoint_age_s < 30
        assert subprocess.run(["tmux", "has-session", "-t", f"=gpujob-{spec.name}"]).returncode == 0
        assert "interval=804 keep=3" in st.log_tail and f"hf={mount}/.cache/huggingface" in st.log_tail
        assert (mount / "odd.txt").read_text() == ODD
        assert (mount / "secret.sha").read_text().strip() == hashlib.sha256(secret.encode()).hexdigest()
        ps = subprocess.run(["ps", "-efww"], capture_output=True, text=True).stdout
        assert secret.split("\n")[0] not in ps
        assert launcher_procs(spec) == 1
        pid = (mount / ".gpujob" / spec.name / "pid").read_text()

        assert launch() is False  # alive: a no-op
        assert launcher_procs(spec) == 1
        assert (mount / ".gpujob" / spec.name / "pid").read_text() == pid

        (code / "release").touch()
        st = wait_for("exit recorded", status, lambda st: not st.alive and st.exit_code is not None)
        assert st.exit_code == 3 and st.finished_at and not st.setup_failed and st.state == "exited"
        assert subprocess.run(["tmux", "has-session", "-t", f"=gpujob-{spec.name}"]).returncode != 0

        launch()  # exited: runs again, setup does not
        wait_for("second run", status, lambda st: st.exit_code == 3 and st.log_tail.count("starting at") == 2)
        assert (mount / "setup.count").read_text() == "once\n"

        Path(scratch_dir(spec, scratch)).joinpath("setup.done").unlink()  # a fresh container
        launch()
        wait_for("third run", status, lambda st: st.exit_code == 3 and st.log_tail.count("starting at") == 3)
        assert (mount / "setup.count").read_text() == "once\nonce\n"

        assert grep_canary(secret, tmp_path, "/tmp", "/dev/shm", "/run") == []
        assert all(secret.split("\n")[0] not in text for text in returned)
        assert not Path("/tmp/pwned").exists()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", f"=gpujob-{spec.name}"], stderr=subprocess.DEVNULL)


def test_nohup_fallback_without_tmux(tmp_path: Path, no_tmux_path: str) -> None:
    secret = canary()
    state = tmp_path / "state"
    _, line = ensure_project_key(state)
    spec = make_spec(tmp_path, secrets=["MY_SECRET"])
    scratch = str(tmp_path / "container")
    with running_sshd(tmp_path / "own", set_env={"PATH": no_tmux_path}) as server:
        server.authorize(line)
        s = Session(server, state)
        assert s.do(lambda r: r.run("command -v tmux", check=False)).exit_status != 0

        def launch() -> None:
            s.do(lambda r: launch_run(r, spec, secrets={"MY_SECRET": secret}, scratch_root=scratch))

        def status() -> RunStatus:
            return s.do(lambda r: run_status(r, spec))  # type: ignore[no-any-return]

        launch()
        st = wait_for("nohup run alive", status, lambda st: st.alive and st.last_checkpoint is not None)
        assert st.detach == "nohup"
        launch()
        assert launcher_procs(spec) == 1
        (tmp_path / "mount" / "code" / "release").touch()
        st = wait_for("exit recorded", status, lambda st: st.exit_code is not None)
        assert st.exit_code == 3 and not st.alive
        sha = (tmp_path / "mount" / "secret.sha").read_text().strip()
        assert sha == hashlib.sha256(secret.encode()).hexdigest()
        assert grep_canary(secret, tmp_path, "/tmp", "/dev/shm", "/run") == []


def test_setup_failure_recorded_and_command_not_run(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, setup="echo broken >&2; exit 5", command="touch ../ran", detach="nohup")
    s = Session(sshd, state)
    s.do(lambda r: launch_run(r, spec, secrets={}, scratch_root=str(tmp_path / "c")))
    st = wait_for(
        "setup failure", lambda: s.do(lambda r: run_status(r, spec)), lambda st: st.exit_code is not None
    )
    assert st.exit_code == 5 and st.setup_failed and st.state == "setup_failed" and "broken" in st.log_tail
    assert not (tmp_path / "mount" / "ran").exists()


def test_missing_secret_is_a_config_error(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, secrets=["NOT_SET_ANYWHERE"])
    with pytest.raises(ConfigError) as err:
        Session(sshd, state).do(lambda r: launch_run(r, spec, secrets={}))
    assert "NOT_SET_ANYWHERE" in str(err.value)
    assert not (tmp_path / "mount" / ".gpujob").exists()


def test_status_of_a_job_never_launched(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    st = Session(sshd, state).do(lambda r: run_status(r, make_spec(tmp_path)))
    assert (st.alive, st.exit_code, st.started_at, st.last_checkpoint, st.log_tail) == (
        False,
        None,
        None,
        None,
        "",
    )
    assert st.state == "not_started"


def test_killed_run_is_not_alive_and_relaunches(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    """A preempted machine kills the run without an exit code; a stale pid on the mount is not ours."""
    spec = make_spec(tmp_path, command="while [ ! -e release ]; do sleep 0.05; done", detach="nohup")
    s = Session(sshd, state)
    scratch = str(tmp_path / "c")
    jobdir = Path(job_dir(spec))

    def status() -> RunStatus:
        return s.do(lambda r: run_status(r, spec))  # type: ignore[no-any-return]

    try:
        assert s.do(lambda r: launch_run(r, spec, secrets={}, scratch_root=scratch)) is True
        wait_for("alive", status, lambda st: st.alive)
        pid = int((jobdir / "pid").read_text())
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        assert children
        os.kill(pid, signal.SIGKILL)  # the wrapper first, like a machine going away: no exit code
        for child in children:
            os.kill(int(child), signal.SIGKILL)
        st = wait_for("dead", status, lambda st: not st.alive)
        assert st.exit_code is None and st.finished_at is None and st.state == "lost"

        # A pid that now belongs to some other process (a new container reusing numbers) is not alive.
        (jobdir / "pid").write_text(f"{os.getpid()}\n")
        assert status().alive is False

        assert s.do(lambda r: launch_run(r, spec, secrets={}, scratch_root=scratch)) is True
        wait_for("alive again", status, lambda st: st.alive)
    finally:
        (tmp_path / "mount" / "code" / "release").touch()
    wait_for("exited", status, lambda st: st.exit_code == 0)


def test_progress_first_and_previous_steps_are_recorded_per_run(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    """$GPUJOB_PROGRESS_FILE: the newest step, the first step of this run, and the earlier runs."""
    report = 'for s in $(seq "$FROM" "$TO"); do echo "$s loss" > "$GPUJOB_PROGRESS_FILE"; sleep 0.2; done'
    spec = make_spec(tmp_path, command=report, detach="nohup", env={"FROM": "3", "TO": "7"})
    s = Session(sshd, state)
    scratch = str(tmp_path / "c")

    def status() -> RunStatus:
        return s.do(lambda r: run_status(r, spec))  # type: ignore[no-any-return]

    s.do(lambda r: launch_run(r, spec, secrets={}, scratch_root=scratch))
    st = wait_for("first run done", status, lambda st: st.exit_code == 0)
    assert st.progress is not None and st.progress.step == 7 and st.progress.age_s < 30
    assert st.progress_first is not None and st.progress_first.step == 3
    assert st.history == []

    again = spec.model_copy(deep=True)
    assert again.run is not None
    again.run.env.update({"FROM": "6", "TO": "8"})
    s.do(lambda r: launch_run(r, again, secrets={}, scratch_root=scratch))
    st = wait_for(
        "second run done",
        status,
        lambda st: st.exit_code == 0 and st.progress is not None and st.progress.step == 8,
    )
    assert st.progress_first is not None and st.progress_first.step == 6
    (prev,) = st.history
    assert prev.exit_code == 0 and prev.first is not None and prev.last is not None
    assert (prev.first.step, prev.last.step) == (3, 7)
    assert prev.last.age_s >= st.progress_first.age_s  # the old run's last step came first

    (Path(job_dir(spec)) / "progress").write_text("$(id) not a step\n")
    assert status().progress is None  # user-written text: anything but a number is ignored


def test_the_run_check_knows_the_run_from_a_start_that_got_its_old_pid(tmp_path: Path) -> None:
    """A restarted container numbers processes from 1 again: the durable pid file's number may now be
    the very `launcher.sh start` asking. Only `bash <launcher> run ...` is the run."""
    import subprocess

    from gpujob.ssh.launcher import IS_RUN

    self_path = tmp_path / "launcher.sh"
    self_path.write_text("sleep 30\n")  # bash stays, with its argv, until the sleep ends
    procs = {
        argv[0]: subprocess.Popen(["bash", str(self_path), *argv], start_new_session=True)
        for argv in (["start"], ["run", str(tmp_path / "fifo")], ["status"])
    }
    other = subprocess.Popen(["sleep", "30"])
    try:

        def is_run(pid: int) -> bool:
            script = f'pid={pid}; SELF="{self_path}"; {IS_RUN}'
            return subprocess.run(["sh", "-c", script]).returncode == 0

        assert is_run(procs["run"].pid)
        assert not is_run(procs["start"].pid) and not is_run(procs["status"].pid)
        assert not is_run(other.pid) and not is_run(2**22 + 7)
    finally:
        for p in procs.values():
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        other.kill()
        other.wait()
