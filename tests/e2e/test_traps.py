"""Issue 14's traps against the simulator, where a live read is involved: the balance (GraphQL
`myself`, RP8), a stopped pod holding un-pulled checkpoints (RP8), RP1's printed fix, and a run whose
checkpoints are not written or not resumed from (run facts over SSH, and `gpujob status`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.e2e.e2e_support import Project, poll


def edit(p: Project, *pairs: tuple[str, str]) -> None:
    job = p.dir / "job.yaml"
    text = job.read_text()
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    job.write_text(text)


def findings(p: Project, code: str) -> list[dict]:  # type: ignore[type-arg]
    p.gj("plan", "-o", "plan.json", check=False)
    saved = json.loads((p.dir / "plan.json").read_text())
    out = [f for j in saved["jobs"] for f in j["findings"] if f["code"] == code]
    out += [f for j in saved["jobs"] for a in j["actions"] for f in a["findings"] if f["code"] == code]
    return out


def last_step(p: Project) -> int:
    name = (p.status().get("run") or {}).get("last_checkpoint") or ""
    m = re.search(r"step_(\d+)", name)
    return int(m.group(1)) if m else 0


ON_VOLUME_DISK = ("  network_volume: {name: ckpts, size_gb: 10, tier: standard}\n", "  volume_gb: 10\n")


def test_plan_says_how_long_the_balance_lasts_and_a_failed_read_only_notes_it(project: Project) -> None:
    p = project
    plan = p.gj("plan")
    assert "[RP8] the RunPod balance $1,000,000.00 lasts" in plan.stdout  # the simulator's starting credit

    p.sim.inject("clear", balance=2.0)
    (low,) = findings(p, "RP8")
    assert low["severity"] == "warning" and low["summary"].startswith("the RunPod balance $2.00 lasts")
    assert "under 3 days" in low["summary"] and "auto-pay" in low["fix"]

    edit(p, ("  caches: durable\n", "  caches: durable\n  max_runtime: 48h\n"))
    blocked = p.gj("plan", "--detailed-exitcode", check=False)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr  # an error finding blocks the plan
    assert "less than run.max_runtime (48 h)" in blocked.stdout and "to the RunPod balance" in blocked.stdout
    assert "job.yaml:" in blocked.stdout

    # GraphQL down: the balance is unknown, the plan still goes (prices fall back to the profile). Every
    # GraphQL call fails, not just the first: the plan reads spot prices there too, at the same time.
    p.sim.inject("clear", balance=1_000_000.0)
    p.sim.inject("http_error", platform="runpod", path="/graphql", status=403, count=1000)
    quiet = p.gj("plan", "--detailed-exitcode", check=False)
    assert quiet.returncode == 2, quiet.stdout + quiet.stderr  # changes to make, nothing blocking
    assert "the RunPod balance was not read" in quiet.stdout, quiet.stdout


def test_state_stopped_pulls_and_verifies_the_newest_checkpoint_first_and_a_self_stop_needs_approval(
    project: Project,
) -> None:
    """Issue 42, the Iron Law: checkpoints only on the pod's volume disk, `state: stopped` pulls them after
    the run's last save and verifies the newest before the stop; on_finish: stop (the pod's own stop,
    which cannot pull) plans as an error until its approval is given."""
    p = project
    edit(p, ON_VOLUME_DISK)
    p.gj("apply", "--auto-approve")
    poll("a few checkpoints", lambda: last_step(p) >= 20)
    edit(p, ("state: running", "state: stopped"))
    (before,) = [x for x in findings(p, "RP8") if x.get("action_id") == "quickstart.pod.stop"]
    assert (
        before["severity"] == "info"
        and "are pulled and the newest verified (no pull on record)" in before["summary"]
    )
    stopped = p.gj("apply", "--auto-approve")
    assert p.status()["machine"]["status"] == "EXITED"
    out = stopped.stdout + stopped.stderr
    assert re.search(
        r"newest checkpoint step_\d+\.json \(1 file\(s\), [^)]*\) pulled and verified first", out
    ), out
    rec = p.record("pulls/quickstart.json")
    assert rec["before_stop"] and rec["files"] and all(x["verified"] for x in rec["files"])
    newest = max(rec["files"], key=lambda x: x["name"])
    assert (p.dir / "checkpoints" / newest["name"]).stat().st_size == newest["size"]
    assert not [x for x in findings(p, "RP8") if "un-pulled" in x["summary"]]  # everything is home

    # the pod's own stop cannot pull: an error until approved
    edit(p, ("state: stopped", "state: running"))
    edit(p, ("on_finish: keep", "on_finish: stop"))
    refused = p.gj("plan", check=False)
    assert refused.returncode == 1 and "[self-stop-unpulled]" in refused.stdout, refused.stdout
    assert "--approve quickstart.pod.self-stop" in refused.stdout
    accepted = p.gj("plan", "--approve", "quickstart.pod.self-stop", check=False)
    assert accepted.returncode == 0 and "risk accepted: quickstart.pod.self-stop approved" in accepted.stdout


def test_a_pod_stopped_outside_gpujob_with_unpulled_checkpoints_warns_and_the_printed_fix_brings_them_home(
    project: Project,
) -> None:
    """RP8: a stop gpujob did not make (the console, a low balance) leaves what the run wrote on the pod's
    disk; the plan warns, and its printed fix brings it home."""
    from gpujob.sim import rp_engine

    p = project
    edit(p, ON_VOLUME_DISK)
    p.gj("apply", "--auto-approve")
    poll("a few checkpoints", lambda: last_step(p) >= 5)
    rp_engine.stop(p.sim.engine, p.status()["machine"]["id"])
    edit(p, ("state: running", "state: stopped"))
    (f,) = [x for x in findings(p, "RP8") if "un-pulled" in x["summary"]]
    assert f["severity"] == "warning" and "holds un-pulled checkpoints (/workspace/ckpt)" in f["summary"]
    assert "no pull on record" in f["summary"] and "about 30 days" in f["detail"]
    assert f["source"]["key"] == "state" and f["fix"].startswith("set state: running and `gpujob apply`")
    edit(p, ("state: stopped", "state: running"))
    p.gj("apply", "--auto-approve")
    assert "all verified" in p.gj("pull").stdout
    assert not [x for x in findings(p, "RP8") if "un-pulled" in x["summary"]]


def test_rp1_fix_as_printed_a_start_without_gpu_leads_to_a_replace_on_a_fresh_host(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    poll("a checkpoint", lambda: last_step(p) >= 5)
    edit(p, ("state: running", "state: stopped"))
    p.gj("apply", "--auto-approve")
    pod_id = p.status()["machine"]["id"]

    edit(p, ("state: stopped", "state: running"))
    start = p.gj("plan").stdout
    assert "▶ start" in start and "[RP1]" in start and "replaces the pod on a fresh host" in start
    p.sim.inject("zero_gpu", pod_id=pod_id)
    failed = p.gj("apply", "--auto-approve", check=False)
    assert failed.returncode != 0

    saved = p.gj("plan", "-o", "plan.json").stdout
    assert "RP1: the last start of" in saved
    actions = [a["kind"] for j in json.loads((p.dir / "plan.json").read_text())["jobs"] for a in j["actions"]]
    assert actions[0] == "replace" and "delete-volume" not in actions
    p.gj("apply", "plan.json", "--approve", "quickstart.pod.replace")
    st = p.status()
    assert st["machine"]["status"] == "RUNNING" and st["machine"]["id"] != pod_id
    assert [v["name"] for v in p.live("volumes")] == [p.volume_name()]  # the network volume was kept
    resumed = poll(
        "the run to resume", lambda: re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "500").stdout)
    )
    assert int(resumed.group(1)) >= 5


STALL = """
import os, pathlib, time
d = pathlib.Path(os.environ["GPUJOB_CHECKPOINT_DIR"]); d.mkdir(parents=True, exist_ok=True)
progress = os.environ["GPUJOB_PROGRESS_FILE"]
(d / "step_000001.json").write_text("{}")  # one checkpoint, then never another
step = 0
while True:
    step += 1
    pathlib.Path(progress).write_text(f"{step}\\n")
    time.sleep(0.1)
"""

FORGETFUL = """
import os, pathlib, time
d = pathlib.Path(os.environ["GPUJOB_CHECKPOINT_DIR"]); d.mkdir(parents=True, exist_ok=True)
progress = os.environ["GPUJOB_PROGRESS_FILE"]
step = 0  # never looks at the checkpoints it wrote before
print("starting fresh at step 0", flush=True)
while True:
    step += 1
    pathlib.Path(progress).write_text(f"{step}\\n")
    if step % 10 == 0:
        (d / f"step_{step:06d}.json").write_text("{}")
    # 0.2 s a step: the launcher looks for the first step every 20 ms, but a loaded 2-core machine can
    # delay that look past a 0.05 s step, and a first step of 2 is no longer "from step 0"
    time.sleep(0.2)
"""


def test_a_live_run_that_stopped_checkpointing_is_named_in_plan_and_status(project: Project) -> None:
    p = project
    (p.dir / "stall.py").write_text(STALL)
    edit(p, ("command: python3 train.py", "command: python3 stall.py"))
    p.gj("apply", "--auto-approve")
    # interval 2s: after 4s without a new checkpoint (and 4s up) the run is behind its promise
    stale = poll("the stale checkpoint finding", lambda: findings(p, "checkpoint-stale"), deadline_s=60)
    assert "step_000001.json" in stale[0]["summary"] and "while the run is alive" in stale[0]["summary"]
    st = p.status()
    assert [w["code"] for w in st["run"]["warnings"]] == ["checkpoint-stale"]
    text = p.gj("status").stdout
    assert "warning:   [checkpoint-stale] the newest checkpoint (step_000001.json)" in text


def test_a_run_that_starts_from_zero_after_checkpoints_is_named(project: Project, tmp_path: Path) -> None:
    p = project
    (p.dir / "forgetful.py").write_text(FORGETFUL)
    edit(p, ("command: python3 train.py", "command: python3 forgetful.py"))
    p.gj("apply", "--auto-approve")
    poll("checkpoints past one interval", lambda: last_step(p) >= 15)  # 3 s at 0.2 s a step: over 2 s
    p.gj("ssh", "--", "tmux", "kill-server")
    poll("the run to be lost", lambda: (p.status().get("run") or {}).get("state") == "lost")
    p.gj("apply", "--auto-approve")  # relaunch: the command starts at step 0 again
    poll("the new run to report steps", lambda: (p.status().get("run") or {}).get("state") == "running")
    found = poll("the resume-from-zero finding", lambda: findings(p, "resume-from-zero"), deadline_s=60)
    assert "started again from step 0 although the run before it reached step" in found[0]["summary"]
    assert found[0]["source"]["key"] == "run.command"
    assert "resume-from-zero" in [w["code"] for w in p.status()["run"]["warnings"]]
