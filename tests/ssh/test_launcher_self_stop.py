"""teardown.on_finish / on_failure: stop, carried out by the launcher itself as the run ends: the real
launcher script, run locally, with a stand-in `runpodctl` on PATH that records what it was asked."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from gpujob.jobfile.model import JobSpec
from gpujob.layout.machine import job_dir
from gpujob.ssh.launcher import _quiesce_command, render_launcher


def spec_of(tmp_path: Path, command: str, *, on_finish: str = "keep", on_failure: str = "keep") -> JobSpec:
    mount = tmp_path / "mount"
    return JobSpec.model_validate(
        {
            "version": 1,
            "name": f"t{uuid.uuid4().hex[:10]}",
            "platform": "runpod",
            "machine": {"gpu": "A100-80GB"},
            "storage": {"mount": str(mount)},
            "run": {"sync": {"dest": f"{mount}/code"}, "command": command, "detach": "nohup"},
            "teardown": {"on_finish": on_finish, "on_failure": on_failure},
        }
    )


class Box:
    """The launcher on this machine, with a runpodctl that writes its argv into `calls`."""

    def __init__(self, tmp_path: Path, spec: JobSpec) -> None:
        self.spec, self.jobdir = spec, Path(job_dir(spec))
        self.jobdir.mkdir(parents=True)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        self.calls = tmp_path / "runpodctl.calls"
        tool = bin_dir / "runpodctl"
        tool.write_text(f'#!/bin/sh\necho "$@" >> {self.calls}\n')
        tool.chmod(0o755)
        (self.jobdir / "launcher.sh").write_text(
            render_launcher(spec, scratch_root=str(tmp_path / "scratch"))
        )
        self.env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RUNPOD_POD_ID": "pod-42"}

    def start(self) -> None:
        out = subprocess.run(
            ["bash", str(self.jobdir / "launcher.sh"), "start"], input=b"", env=self.env, capture_output=True
        )
        assert b"gpujob: started" in out.stdout, out

    def wait_exit(self, deadline: float = 20) -> int:
        end = time.monotonic() + deadline
        while not (self.jobdir / "exit_code").exists():
            assert time.monotonic() < end, (self.jobdir / "run.log").read_text()
            time.sleep(0.05)  # polling interval, bounded by the deadline
        return int((self.jobdir / "exit_code").read_text())

    def settled_calls(self) -> list[str]:
        """runpodctl runs right after the exit code is written: wait for the launcher to end first."""
        pid = int((self.jobdir / "pid").read_text())
        end = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < end:
            time.sleep(0.05)
        return self.calls.read_text().splitlines() if self.calls.exists() else []


@pytest.mark.parametrize(
    ("command", "on_finish", "on_failure", "code", "stops"),
    [
        ("true", "stop", "keep", 0, True),
        ("true", "keep", "stop", 0, False),
        ("exit 1", "keep", "stop", 1, True),
        ("exit 1", "stop", "keep", 1, False),
        ("exit 7", "keep", "keep", 7, False),
        # A signal ended the run (a preemption's SIGTERM): never a stop, whatever the settings.
        ("kill -TERM $$", "stop", "stop", 143, False),
    ],
)
def test_the_launcher_stops_its_pod_only_when_the_run_ends_on_its_own_as_the_job_file_asks(
    tmp_path: Path, command: str, on_finish: str, on_failure: str, code: int, stops: bool
) -> None:
    box = Box(tmp_path, spec_of(tmp_path, command, on_finish=on_finish, on_failure=on_failure))
    box.start()
    assert box.wait_exit() == code
    calls = box.settled_calls()
    assert calls == (["stop pod pod-42"] if stops else [])
    log = (box.jobdir / "run.log").read_text()
    assert ("stopping this pod" in log) is stops
    assert (box.jobdir / "stopped_itself").exists() is stops


def test_gpujobs_own_quiesce_disarms_the_stop_before_it_signals_the_run(tmp_path: Path) -> None:
    # The run would exit 0 on SIGTERM (a run that saves and exits cleanly): still no stop.
    command = "trap 'exit 0' TERM; while :; do sleep 0.05; done"
    box = Box(tmp_path, spec_of(tmp_path, command, on_finish="stop", on_failure="stop"))
    box.start()
    end = time.monotonic() + 10
    while not (box.jobdir / "armed").exists():
        assert time.monotonic() < end
        time.sleep(0.05)
    out = subprocess.run(
        ["bash", "-c", _quiesce_command(box.spec, 10)], env=box.env, capture_output=True, text=True
    )
    assert "state=stopped" in out.stdout, out
    assert box.settled_calls() == []
    assert not (box.jobdir / "stopped_itself").exists()


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
@pytest.mark.parametrize("on_finish", ["keep", "stop", "terminate"])
@pytest.mark.parametrize("on_failure", ["keep", "stop"])
def test_every_rendering_of_the_launcher_is_valid_bash(
    tmp_path: Path, platform: str, on_finish: str, on_failure: str
) -> None:
    spec = spec_of(tmp_path, "true", on_finish=on_finish, on_failure=on_failure)
    spec = spec.model_copy(update={"platform": platform})
    text = render_launcher(spec)
    assert subprocess.run(["bash", "-n"], input=text.encode()).returncode == 0
    # Paperspace machines are never stopped from inside (see gpujob.ssh.launcher.SELF_STOP).
    assert ("stop_self" in text) is (platform == "runpod" and "stop" in (on_finish, on_failure))


def test_a_pod_without_runpodctl_says_it_keeps_billing_and_leaves_no_stop_record(tmp_path: Path) -> None:
    box = Box(tmp_path, spec_of(tmp_path, "true", on_finish="stop"))
    (tmp_path / "bin" / "runpodctl").write_text("#!/bin/sh\nexit 127\n")
    box.start()
    assert box.wait_exit() == 0
    box.settled_calls()
    assert "could not stop this pod" in (box.jobdir / "run.log").read_text()
    assert not (box.jobdir / "stopped_itself").exists()
