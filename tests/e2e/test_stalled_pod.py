"""A pod that stops answering, end to end: the simulator's pods run every SSH command through the stall
shim (gpujob/sim/ssh_fault.sh), and `gpujob status`, `logs` and `pull` run as processes with small
GPUJOB_SSH_* bounds. Each returns within its bound, exits 1, and names what stalled; a pull cut off
mid-file keeps its partial file and the next pull, once the pod answers again, completes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import Project, poll
from tests.sim_pods import pod_simulator

IDLE_S = 2.0
# What a stall may cost here: the idle timeout, plus the CLI's own start, the API reads and the
# connection on a loaded 2-core machine (generous; a hang would be minutes).
BOUND_S = IDLE_S + 13.0
LIMITS = {
    "GPUJOB_SSH_IDLE_TIMEOUT": "2",
    "GPUJOB_SSH_COMMAND_TIMEOUT": "6",
    "GPUJOB_SSH_CONNECT_TIMEOUT": "5",
}


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    """The e2e simulator, with the stall shim in every pod."""
    with pod_simulator(tmp_path / "sim", "the end-to-end tests", ssh_faults=True) as s:
        yield s


def _timed(p: Project, *args: str) -> tuple[float, int, str]:
    started = time.monotonic()
    out = p.gj(*args, check=False, timeout=120)
    return time.monotonic() - started, out.returncode, out.stdout + out.stderr


def _checkpointing(p: Project) -> str:
    p.gj("apply", "--auto-approve")
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    p.env.update(LIMITS)
    return str(p.live("pods")[0]["id"])


def test_status_logs_and_pull_on_a_pod_whose_commands_never_answer(project: Project) -> None:
    p = project
    pod = _checkpointing(p)
    p.sim.stall_ssh(pod, "sleep")

    elapsed, code, out = _timed(p, "status")
    assert code == 1 and elapsed < BOUND_S, (elapsed, out)
    assert (
        "Error: reading the run status of quickstart on root@127.0.0.1:" in out and f"({pod}) stalled" in out
    )
    assert f"stalled: no data for {IDLE_S:g}s" in out and "GPUJOB_SSH_IDLE_TIMEOUT" in out, out

    elapsed, code, out = _timed(p, "logs", "-n", "4")
    assert code == 1 and elapsed < BOUND_S, (elapsed, out)
    assert "Error: reading the last 4 lines of /workspace/.gpujob/quickstart/run.log on" in out, out
    assert f"stalled: no data for {IDLE_S:g}s" in out, out

    elapsed, code, out = _timed(p, "pull")
    assert code == 1 and elapsed < BOUND_S, (elapsed, out)
    assert "Error: listing checkpoints in /workspace/ckpt on" in out, out
    assert f"stalled: no data for {IDLE_S:g}s" in out, out
    assert "nothing was pulled yet" in out, out

    p.sim.stall_ssh(pod, None)
    assert "all verified" in p.gj("pull").stdout  # the pod answers again: a re-run just works


def test_a_pull_cut_off_mid_file_keeps_its_part_and_the_next_pull_completes(project: Project) -> None:
    p = project
    pod = _checkpointing(p)
    p.sim.stall_ssh(pod, "after", nbytes=16, match="tail -c +")  # each download stops after 16 bytes

    elapsed, code, out = _timed(p, "pull")
    assert code == 1 and elapsed < BOUND_S, (elapsed, out)
    assert "Error: pull of /workspace/ckpt/step_" in out, out
    assert f"stalled: no data for {IDLE_S:g}s (after " in out, out  # bytes moved count stderr too
    assert "is kept; the next pull resumes it" in out, out
    parts = list((p.dir / "checkpoints").glob("*.part"))
    assert [f.stat().st_size for f in parts] == [16], sorted(
        x.name for x in (p.dir / "checkpoints").iterdir()
    )

    p.sim.stall_ssh(pod, None)
    assert "all verified" in p.gj("pull").stdout


TERM = "quickstart.pod.terminate"
DELVOL = "quickstart.network_volume.delete-volume"
APPROVE = ("--auto-approve", "--approve", TERM, "--approve", DELVOL)


def _still_there(p: Project, pod: str) -> None:
    """Nothing destructive happened: the pod (running, not stopped) and its volume are both there."""
    pods, volumes = p.live("pods"), p.live("volumes")
    assert [(o["id"], o["status"]) for o in pods] == [(pod, "RUNNING")], pods
    assert len(volumes) == 1, volumes


PULL = "quickstart.checkpoints.pull"


@pytest.mark.parametrize(
    ("fault", "failed", "summary"),
    [
        # The plan's pull step meets the stall: the gated steps after it never start.
        pytest.param(("sleep", 0, "", ""), PULL, "0 done, 1 failed, 2 skipped", id="every-command-sleeps"),
        pytest.param(
            ("after", 16, "tail -c +", ""), PULL, "0 done, 1 failed, 2 skipped", id="pull-cut-off-mid-file"
        ),
        # The pull step goes through; the gate stops the run (its final save is new), and the gate's own
        # final pull is cut off mid-file: the gate refuses, nothing is terminated.
        pytest.param(
            ("after", 16, "tail -c +", "before a teardown"),
            TERM,
            "1 done, 1 failed, 1 skipped",
            id="gate-final-pull-cut-off",
        ),
    ],
)
def test_destroy_stuck_in_its_pull_refuses_the_teardown_and_a_rerun_finishes_it(
    project: Project, fault: tuple[str, int, str, str], failed: str, summary: str
) -> None:
    p = project
    pod = _checkpointing(p)
    mode, nbytes, match, armed_by = fault
    p.sim.stall_ssh(pod, mode, nbytes=nbytes, match=match, armed_by=armed_by)

    elapsed, code, out = _timed(p, "destroy", *APPROVE)
    assert code == 1 and elapsed < BOUND_S, (elapsed, out)
    assert f"✗ {failed} failed: " in out and f"({pod}) stalled: no data for {IDLE_S:g}s" in out, out
    assert "GPUJOB_SSH_IDLE_TIMEOUT" in out, out
    assert f"Destroy finished: {summary}." in out, out
    assert f"{DELVOL} skipped: after {failed} failed" in out, out  # the state it left
    _still_there(p, pod)

    p.sim.stall_ssh(pod, None)
    done = p.gj("destroy", *APPROVE)
    assert "0 failed" in done.stderr, done.stderr
    assert p.live("pods") == [] and p.live("volumes") == []


def _preempted(p: Project) -> str:
    """A checkpointing run whose spot pod is then preempted: the next apply starts it and syncs."""
    pod = _checkpointing(p)
    assert p.sim.inject("preempt")["preempted"] == [pod]
    poll("the pod to be down", lambda: p.live("pods")[0]["status"] != "RUNNING")
    # A changed file, so the sync sends a stream (an unchanged tree costs only the listing).
    train = p.dir / "train.py"
    train.write_text(train.read_text() + "\n# changed after the preemption\n" + "#" * 4000 + "\n")
    return pod


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(("sleep", 0, ""), id="every-command-sleeps"),
        pytest.param(("take", 1024, "--no-same-owner -f - -C"), id="sync-cut-off-mid-stream"),
    ],
)
def test_apply_stuck_in_its_sync_fails_within_its_bound_and_a_rerun_converges(
    project: Project, fault: tuple[str, int, str]
) -> None:
    p = project
    pod = _preempted(p)
    mode, nbytes, match = fault
    p.sim.stall_ssh(pod, mode, nbytes=nbytes, match=match)

    elapsed, code, out = _timed(p, "apply", "--auto-approve")
    assert code == 1 and elapsed < BOUND_S + 10, (elapsed, out)  # + the start of the pod
    assert f"({pod}) stalled: no data for {IDLE_S:g}s" in out, out
    assert "GPUJOB_SSH_IDLE_TIMEOUT" in out, out
    if mode == "take":
        assert "code sync to /workspace/code on" in out and "nothing is half-written" in out, out
        placed = p.gj("ssh", "--", "tail", "-c", "40", "/workspace/code/train.py").stdout
        assert "#" * 39 not in placed  # the partial upload was never placed under its real name
    _still_there(p, pod)

    p.sim.stall_ssh(pod, None)
    again = p.gj("apply", "--auto-approve")
    assert "run launched on" in again.stdout + again.stderr, again.stdout
    poll("the run to resume", lambda: "resumed from step" in p.gj("logs", "-n", "2000").stdout)
    assert p.gj("ssh", "--", "tail", "-c", "40", "/workspace/code/train.py").stdout.strip().endswith("#" * 30)
    assert p.gj("plan", "--detailed-exitcode", check=False).returncode == 0  # converged: nothing to do
