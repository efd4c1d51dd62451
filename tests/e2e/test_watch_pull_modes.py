"""`checkpoint.pull: on_finish | never` under `gpujob watch --once` (as cron drives it), against the real
simulator: on_finish pulls nothing while the run goes and everything, verified, once it exits 0; never
leaves the laptop empty and the checkpoints on the network volume. And `gpujob cost` of a watched job
shows its goodput next to the money."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.e2e.e2e_support import Project, poll
from tests.e2e.watch_support import (
    events,
    is_pod,
    progress_step,
    remote_checkpoints,
    run_log,
    sim_state,
    watch_job,
)

STEPS = 400  # 20 s of run: long enough for a tick to see it going


def once(p: Project) -> tuple[int, str]:
    r = p.gj("watch", "--once", check=False)
    return r.returncode, r.stdout + r.stderr


def local(p: Project) -> set[str]:
    return {f.name for f in (p.dir / "checkpoints").glob("step_*.json")}


def pods(p: Project) -> list[dict[str, object]]:
    return [x for x in sim_state(p)["pods"].values() if is_pod(str(x["name"])) and x["ended_at"] is None]


def pull_mode_job(p: Project, mode: str) -> None:
    watch_job(p, steps=STEPS, interval="1s")
    job = p.dir / "job.yaml"
    text = (
        job.read_text()
        .replace("pull: continuous", f"pull: {mode}")
        .replace("on_finish: terminate", "on_finish: keep")
    )
    job.write_text(text)


@pytest.mark.parametrize("mode", ["on_finish", "never"])
def test_pull_on_finish_and_never_under_watch_once(project: Project, mode: str) -> None:
    p = project
    pull_mode_job(p, mode)
    code, out = once(p)
    assert code == 2, out  # created the pod and launched the run

    # While the run goes: checkpoints appear on the volume, and neither mode pulls any of them.
    poll("two checkpoints on the volume", lambda: len(remote_checkpoints(p)) >= 2)
    code, out = once(p)
    assert code == 0, out
    assert "done at step" not in run_log(p), "the run ended before the tick that had to see it running"
    assert local(p) == set() and "pulled" not in [e["event"] for e in events(p)], out

    # The run exits 0: the next tick finishes the job (on_finish: keep leaves the pod as it is).
    poll("the run to finish", lambda: f"done at step {STEPS}" in run_log(p), deadline_s=120)
    code, out = once(p)
    assert code == 0 and "finished" in [e["event"] for e in events(p)], out
    remote = remote_checkpoints(p)
    assert f"step_{STEPS:06d}.json" in remote and len(pods(p)) == 1
    if mode == "on_finish":
        # Everything the volume holds at the end is on the laptop, verified by the pull record.
        assert set(remote) <= local(p), (sorted(remote), sorted(local(p)))
        record = p.record("pulls/quickstart.json")
        verified = {f["name"] for f in record["files"] if f["verified"]}
        assert verified >= set(remote), (sorted(verified), sorted(remote))
        for name in remote:
            ok = subprocess.run([sys.executable, "verify_ckpt.py", f"checkpoints/{name}"], cwd=p.dir)
            assert ok.returncode == 0
    else:
        # never: watch pulls nothing, ever; the checkpoints stay on the network volume.
        assert local(p) == set(), sorted(local(p))
        assert "pulled" not in [e["event"] for e in events(p)]
        assert len(remote) == 3  # keep: 3 on the volume, none lost


def test_cost_shows_goodput_next_to_the_money_for_a_watched_job(project: Project) -> None:
    p = project
    watch_job(p, steps=STEPS, interval="1s")
    assert once(p)[0] == 2
    poll("a checkpoint", lambda: remote_checkpoints(p))
    p.sim.inject("preempt", pod_id=str(pods(p)[0]["id"]))
    code, out = once(p)
    assert code == 2 and "preempted:" in out, out
    poll("the resumed run to make steps", lambda: "resumed from step" in run_log(p))
    # Two looks at the same run, steps apart, give watch its step rate (what goodput is measured against).
    for _ in range(2):
        seen = progress_step(p)
        poll("more steps", lambda seen=seen: (progress_step(p) or 0) > (seen or 0) + 5)
        assert once(p)[0] == 0

    text = p.gj("cost").stdout
    block = text.split("TOTAL")[0]
    money = re.search(r"quickstart \[runpod\]  spent \$(\d+\.\d+)", block)
    good = re.search(
        r"\n    goodput (\d\.\d\d) \((\d+\.\d+) GPU-h billed over .*; (\d+) steps done, (\d+) redone after (\d+) loss",
        block,
    )
    assert money and good, text
    assert float(money.group(1)) > 0 and 0 < float(good.group(1)) <= 1 and int(good.group(5)) == 1, text
    (job,) = json.loads(p.gj("cost", "--format", "json").stdout)["jobs"]
    # (a later read: the job still runs, so its billed GPU time and hence the figure move on)
    assert 0 < job["goodput"] <= 1 and job["goodput_detail"].startswith(f"goodput {job['goodput']:.2f} (")
    assert job["spent_usd"] > 0 and "1 loss(es)" in job["goodput_detail"]


def test_watch_pulls_the_outputs_when_the_run_finishes(project: Project) -> None:
    """Issue 23: outputs (here the synced code's *.py on the volume) come home at the end of a run,
    each checked by sha256, beside the checkpoints."""
    p = project
    pull_mode_job(p, "on_finish")
    job = p.dir / "job.yaml"
    job.write_text(job.read_text() + "outputs:\n  paths: [/workspace/code/*.py]\n")
    code, out = once(p)
    assert code == 2, out
    poll("the run to finish", lambda: f"done at step {STEPS}" in run_log(p), deadline_s=120)
    code, out = once(p)
    assert code == 0 and "finished" in [e["event"] for e in events(p)], out
    landed = p.dir / "outputs" / "workspace" / "code"
    assert (landed / "train.py").read_bytes() == (p.dir / "train.py").read_bytes()
    assert not (landed / "job.yaml").exists()  # only what the glob selects
    record = p.record("outputs/quickstart.json")
    assert (
        "/workspace/code/train.py" in record["files"] and "/workspace/code/verify_ckpt.py" in record["files"]
    )
    assert any(e["event"] == "pulled" and "output file(s)" in e.get("happened", "") for e in events(p)), (
        events(p)
    )
