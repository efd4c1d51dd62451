"""The on-box agent (`launcher.sh guard`): budget.max_total_usd and run.stall_after held on the pod itself
with nobody watching. The real launcher script, run locally, a stand-in runpodctl recording its calls."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from gpujob.jobfile.model import JobSpec
from gpujob.ssh.launcher import Guard, _quiesce_command, render_launcher
from tests.ssh.test_launcher_self_stop import Box, spec_of


class GuardedBox(Box):
    def __init__(self, tmp_path: Path, spec: JobSpec, guard: Guard | None) -> None:
        super().__init__(tmp_path, spec)
        (self.jobdir / "launcher.sh").write_text(
            render_launcher(spec, scratch_root=str(tmp_path / "scratch"), guard=guard)
        )
        (self.jobdir / "quiesce.sh").write_text(_quiesce_command(spec, 2))

    def wait_stopped(self, deadline: float = 20) -> str:
        end = time.monotonic() + deadline
        while not (self.calls.exists() and self.calls.read_text()):
            assert time.monotonic() < end, (self.jobdir / "run.log").read_text()
            time.sleep(0.05)  # polling interval, bounded by the deadline
        return (self.jobdir / "stopped_itself").read_text()

    def wait_step(self, step: int, deadline: float = 30) -> None:
        end = time.monotonic() + deadline
        while _step(self) < step:
            assert time.monotonic() < end, (self.jobdir / "run.log").read_text()
            assert not self.calls.exists(), (self.jobdir / "stopped_itself").read_text()
            time.sleep(0.05)  # polling interval, bounded by the deadline


def _step(box: Box) -> int:
    try:
        return int((box.jobdir / "progress").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _alive(box: Box) -> bool:
    """The run's process is there and no zombie (a reparented one may wait unreaped)."""
    status = Path(f"/proc/{int((box.jobdir / 'pid').read_text())}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def test_the_pod_stops_itself_before_the_budget_runs_out(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "trap 'exit 0' TERM; while :; do echo tick; sleep 0.1; done")
    box = GuardedBox(tmp_path, spec, Guard(budget_s=1, budget_text="$1.00 left at $2.00/h", every_s=0.2))
    box.start()
    why = box.wait_stopped()
    assert "budget.max_total_usd: $1.00 left at $2.00/h" in why
    assert box.calls.read_text().splitlines() == ["stop pod pod-42"]
    log = (box.jobdir / "run.log").read_text()
    assert "run stopped by gpujob" in log  # the quiesce ran before the stop
    assert not _alive(box)


def test_a_run_that_stops_progressing_but_stays_alive_is_parked(tmp_path: Path) -> None:
    command = 'echo 7 > "$GPUJOB_PROGRESS_FILE"; echo started; sleep 600'
    spec = spec_of(tmp_path, command)
    spec = spec.model_copy(update={"run": spec.run.model_copy(update={"stall_after": _s(2)})})  # type: ignore[union-attr]
    box = GuardedBox(tmp_path, spec, Guard(every_s=0.2))
    box.start()
    why = box.wait_stopped()
    assert "run.stall_after 2s: no new step, checkpoint or log line for" in why and "(last step 7)" in why
    assert not _alive(box)


def test_a_run_that_keeps_writing_is_not_a_stall(tmp_path: Path) -> None:
    command = 'i=0; while :; do i=$((i+1)); echo "$i" > "$GPUJOB_PROGRESS_FILE"; sleep 0.3; done'
    spec = spec_of(tmp_path, command)
    spec = spec.model_copy(update={"run": spec.run.model_copy(update={"stall_after": _s(2)})})  # type: ignore[union-attr]
    box = GuardedBox(tmp_path, spec, Guard(every_s=0.2))
    box.start()
    # Step 10 is 2.7 s of 0.3 s steps in the run's own time: past the 2.4 s a stall would need
    # (stall_after plus two checks); a loaded machine only makes it later. Nothing may have stopped it.
    box.wait_step(10)
    assert not box.calls.exists()
    assert _alive(box)
    subprocess.run(["bash", "-c", _quiesce_command(spec, 2)], env=box.env, capture_output=True)


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_the_guard_is_rendered_only_where_a_machine_can_stop_itself(tmp_path: Path, platform: str) -> None:
    spec = spec_of(tmp_path, "true").model_copy(update={"platform": platform})
    text = render_launcher(spec, guard=Guard(budget_s=60, stall_s=60))
    assert subprocess.run(["bash", "-n"], input=text.encode()).returncode == 0
    assert ("guard) guard ;;" in text) is (platform == "runpod")
    assert "guard) guard ;;" not in render_launcher(spec_of(tmp_path, "true"))  # nothing held: no agent


def _s(seconds: int):  # type: ignore[no-untyped-def]
    from datetime import timedelta

    return timedelta(seconds=seconds)
