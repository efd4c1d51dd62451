"""What a move left behind on a machine the gate cannot reach, in the simulator: the preempted RunPod
pod of a job now on Paperspace boots without sshd (the simulator's no_sshd fault, RP10).

`apply --release-left` starts the stopped pod to pull from it, cannot reach it, stops it again and is
refused with the risk; nothing is deleted. Approved with `<id>.unverified`, the next command tries the
pod again, and only after that same command failed to reach it deletes it unchecked; the volume is
still looked at (through a temporary pod that answers) before it is deleted.
"""

from __future__ import annotations

import time
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.failover_support import JOB, approve, ids, mine, moved_by_apply, sha

CONNECT_S = 3
ENDPOINT_S = 15  # also what a temporary pod for the volume gets to answer: room for a loaded machine
# Two starts of the pod and its failed looks (the connect and endpoint limits), the CLI's start and its
# API reads on a loaded 2-core machine: generous, but a wait that ignored the limits (600 s) fails it.
BOUND_S = 120.0
TERM = f"{JOB}.left.runpod.pod.terminate"
DELETE = f"{JOB}.left.runpod.network_volume.delete-volume"


def test_an_unreachable_left_pod_is_refused_stopped_again_and_only_then_overridable(
    sim: Sim, tmp_path: Path
) -> None:
    p = moved_by_apply(sim, tmp_path, "anywhere-reach")
    pods, volumes = mine(p, "pods"), mine(p, "volumes")
    pod = pods[0]["id"]
    p.gj("pull")
    record_before = p.record(f"pulls/{JOB}.json")
    sim.inject("clear")  # RunPod has capacity again, so the gate can start the pod for its look
    sim.inject("no_sshd", pod_id=pod, count=2)  # its next two boots: RUNNING, SSH refused
    p.env["GPUJOB_SSH_CONNECT_TIMEOUT"] = str(CONNECT_S)
    p.env["GPUJOB_ENDPOINT_WAIT"] = str(ENDPOINT_S)

    # (a) approved, but the pod cannot be reached: refused with the risk, the pod stopped again
    started = time.monotonic()
    refused = p.gj(
        "apply", "--release-left", "--auto-approve", *approve(TERM, DELETE), check=False, timeout=300
    )
    elapsed, said = time.monotonic() - started, refused.stdout + refused.stderr
    assert refused.returncode != 0 and elapsed < BOUND_S, (elapsed, said)
    assert f"{TERM}: refused: cannot reach" in said, said
    assert "the action erases" in said and "the newest verified pull" in said, said  # the risk
    assert "starting" in said and "to pull its checkpoints" in said, said  # the gate did start it
    assert "stopping" in said and "again" in said, said
    assert f"'.unverified' next to its plain approval of {TERM}" in said, said  # words, not a flag
    assert ids(mine(p, "pods"))[0][0] == pod and ids(mine(p, "volumes")) == ids(volumes)
    poll("the pod stopped again", lambda: mine(p, "pods")[0]["status"] == "EXITED", deadline_s=30)
    aside = p.dir / "checkpoints-from-runpod"
    assert not aside.exists() or not [f for f in aside.iterdir() if f.is_file()]
    assert p.record(f"pulls/{JOB}.json") == record_before

    # (b) the override alone does not skip the look: the command starts the pod and tries it first
    on_volume = sim.data_dir / "runpod" / "volumes" / volumes[0]["id"] / "ckpt"
    held = {f.name: sha(f) for f in on_volume.iterdir() if f.is_file()}
    assert held
    started = time.monotonic()
    done = p.gj(
        "apply", "--release-left", "--auto-approve", *approve(TERM, f"{TERM}.unverified", DELETE), timeout=300
    )
    elapsed, out = time.monotonic() - started, done.stdout + done.stderr
    assert elapsed < BOUND_S + 120, (elapsed, out)  # + the temporary pod for the volume's look
    tried, loss = out.find("to pull its checkpoints"), out.find("DATA LOSS approved")
    assert 0 <= tried < loss, out  # a start and a failed reach in this command, then the override
    assert f"as approved with {TERM}.unverified" in out, out
    assert not mine(p, "pods") and not mine(p, "volumes"), out
    # The volume was not covered by the override: it was looked at and its files pulled aside first.
    assert "temporary pod" in out, out
    assert {n: sha(aside / n) for n in held} == held
    assert p.record(f"pulls/{JOB}.json") == record_before
