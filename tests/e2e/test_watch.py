"""`gpujob watch` against the real simulator: a spot job preempted at random (exponential gaps), whose
host loses its GPU once (RP1) while its first GPU has no capacity, runs to the end with nobody acting,
every checkpoint pulled and verified, nothing left billing that the file does not ask for; and a
watcher SIGKILLed at random points never yields two pods, two runs or a lost checkpoint."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time

from tests.e2e.e2e_support import Project, poll
from tests.e2e.watch_support import (
    Monitor,
    Preempter,
    events,
    remote_checkpoints,
    resumes_never_went_back,
    run_log,
    sim_state,
    start_watch,
    watch_job,
)

STEPS = 300


def verified_copy(p: Project, name: str, digest: str) -> str | None:
    """What is wrong with the laptop's copy of checkpoint `name` (sha256 `digest` on the volume), or None."""
    copy = p.dir / "checkpoints" / name
    if not copy.is_file():
        return f"{name} was never pulled"
    if hashlib.sha256(copy.read_bytes()).hexdigest() != digest:
        return f"{name}: the local copy differs from the volume's"
    ok = subprocess.run([sys.executable, "verify_ckpt.py", str(copy)], cwd=p.dir, capture_output=True)
    return None if ok.returncode == 0 else f"{name} fails verify_ckpt.py: {ok.stderr!r}"


def assert_finished_clean(p: Project, monitor: Monitor, pre: Preempter) -> None:
    """Every checkpoint that mattered pulled and verified; only the network volume still bills.

    What gpujob can promise with keep: 3 is not "every checkpoint ever written is on the laptop": the run
    rotates a checkpoint away after two newer ones (about 4 s of run here), so one written while nobody
    could pull (a watcher killed, a pull in flight) may be gone before it is fetched. The promise is the
    resume points: the newest checkpoint on the volume at every preemption (the one the next run resumes
    from, pulled once the job runs again, before it can rotate away) and the final one, each pulled,
    byte-identical to what the volume held, and passing checkpoint.verify; plus every checkpoint still
    on the volume at the end."""
    log = run_log(p)
    assert f"done at step {STEPS}" in log, log[-2000:]
    assert resumes_never_went_back(log) == []
    remote = remote_checkpoints(p)
    final = f"step_{STEPS:06d}.json"
    assert final in remote
    points = {name: digest for name, digest in (x for x, _ in pre.at_preemption if x is not None)}
    assert len(points) >= 1 and set(points) <= monitor.seen_checkpoints, (points, pre.at_preemption)
    must = {**points, **remote}
    assert all(monitor.seen_digests.get(n, d) == d for n, d in must.items())  # one content per name
    problems = [why for name, digest in sorted(must.items()) if (why := verified_copy(p, name, digest))]
    assert problems == [], (problems, pre.at_preemption)
    assert not list((p.dir / "checkpoints").glob("*.part"))
    # Exactly one: the monitor did see the pod and its training process (so "never two" means something).
    assert (monitor.max_pods, monitor.max_runs) == (1, 1), (monitor.max_pods, monitor.max_runs)
    assert monitor.samples > 50
    billing = [i for i in p.sim.bill()["items"] if i["rate_per_hour"] > 0]
    assert {i["item"] for i in billing} == {"network_volume"}, billing  # storage.network_volume asks for it
    live = [x for x in sim_state(p)["pods"].values() if x["ended_at"] is None]
    assert live == []


def test_random_preemptions_rp1_and_a_capacity_outage_finish_with_no_human(project: Project) -> None:
    p = project
    watch_job(p, steps=STEPS)
    seed = random.randrange(1 << 30)

    def before(n: int) -> None:
        if n == 2:  # the resume after this preemption finds no GPU on its host (RP1) ...
            pods = [x["id"] for x in sim_state(p)["pods"].values() if x["status"] == "RUNNING"]
            p.sim.inject("zero_gpu", pod_id=pods[0])
            p.sim.inject("capacity", gpu="RTX 4090", count=None)  # ... and the first GPU is sold out
        if n == 4:
            p.sim.inject("clear")  # the outage ends

    with Monitor(p) as monitor, Preempter(p, mtbf_s=3.0, limit=5, seed=seed, before=before) as pre:
        proc = start_watch(p)
        try:
            out, _ = proc.communicate(timeout=240)
        finally:
            proc.kill()
    assert proc.returncode == 0, f"seed {seed}\n{out}"
    assert pre.done >= 3, f"seed {seed}: only {pre.done} preemptions\n{out}"
    kinds = [e["event"] for e in events(p)]
    assert kinds.count("preempted") >= pre.done - 1, out  # a preemption mid-recovery may fold into one
    assert "host-lost-gpu" in kinds and "finished" in kinds, out
    assert "no capacity for 1× RTX4090 in EU-RO-1" in out and "A6000" in out, out
    assert "needs-human" not in kinds, out
    finished = next(e for e in events(p) if e["event"] == "finished")
    assert "goodput" in finished["did"] and "redone after" in finished["did"]
    assert_finished_clean(p, monitor, pre)
    status = p.status()
    assert status["watch"]["goodput"]["losses"] >= 1 and status["events"][-1]["event"] == "finished"
    # The pictures (piped: plain ASCII): steps over time with each lost run marked, money over time.
    series = status["watch"]["series"]
    assert len(series["lost"]) == status["watch"]["goodput"]["losses"] and len(series["steps"]) >= 2
    text = p.gj("status").stdout
    assert "steps over time" in text and "money spent over time" in text and "x run lost" in text, text
    assert text.isascii() and "\x1b" not in text
    cost = p.gj("cost", check=False).stdout
    assert "(recorded by gpujob watch):" in cost and "steps over time" in cost, cost


def test_sigkill_at_random_points_never_two_pods_two_runs_or_a_lost_checkpoint(project: Project) -> None:
    p = project
    watch_job(p, steps=STEPS)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kills = 0
    with Monitor(p) as monitor, Preempter(p, mtbf_s=4.0, limit=3, seed=seed, first_gap_s=1.0) as pre:
        deadline = time.monotonic() + 240
        while True:
            proc = start_watch(p)
            if kills < 8:
                # Kill anywhere: during a create, a launch, a pull, a tick, or while idle.
                time.sleep(
                    rng.uniform(0.2, 3.0)
                )  # the random point is the test's input, not a wait for a state
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    kills += 1
                proc.communicate(timeout=30)
                continue
            out, _ = proc.communicate(timeout=max(10.0, deadline - time.monotonic()))
            break
    assert proc.returncode == 0, f"seed {seed}, after {kills} kills\n{out}"
    assert kills == 8
    # The watchers were killed around real preemptions (the simulator stopped the pod; the first comes 1 s
    # into the first run), a watcher saw one and recovered it, and the run resumed from a checkpoint.
    assert pre.done >= 1, f"seed {seed}: no preemption happened\n{out}"
    assert run_log(p).count("resumed from step") >= 1, run_log(p)[-2000:]
    kinds = [e["event"] for e in events(p)]
    assert "preempted" in kinds and "recovered" in kinds[kinds.index("preempted") :], kinds  # seen, undone
    assert_finished_clean(p, monitor, pre)
    # The lock of a killed watcher never blocked the next one (flock dies with its holder).
    assert "locked by" not in out
    poll("status to read back", lambda: p.status()["watch"]["finished"])
