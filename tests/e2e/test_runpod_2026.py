"""RunPod as it is in 2026 (issue #40), through the CLI against the shared simulator: a migrated pod is
followed (new id and IP, same volume and markers), a create waits for capacity when the job says so, and
a spot that RunPod withdrew while GraphQL still answers plans on-demand or refuses."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.e2e.e2e_support import Project, poll


def plan_json(p: Project) -> tuple[int, dict[str, Any]]:
    done = p.gj("plan", "--format", "json", check=False)
    return done.returncode, json.loads(done.stdout[done.stdout.find("{") :])


def last_step(p: Project) -> int:
    m = re.search(r"step_(\d+)", (p.status().get("run") or {}).get("last_checkpoint") or "")
    return int(m.group(1)) if m else 0


def test_a_migrated_pod_is_followed_and_the_run_resumes_on_it(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    (pod,) = p.live("pods")
    before = poll("a few checkpoints", lambda: (s := last_step(p)) >= 20 and s)
    p.sim.inject("preempt")  # the spot pod stops; its GPU is taken meanwhile, so RunPod offers migration
    poll("the pod to be down", lambda: p.status()["machine"]["status"] != "RUNNING")
    moved = p.sim.inject("migrate", pod_id=pod["id"])["migrated"]
    assert moved["from"] == pod["id"] and moved["to"] != pod["id"]
    (new,) = p.live("pods")
    assert new["id"] == moved["to"]
    # The run is planned onto a running pod: a plan while the new pod still boots sees no run to judge.
    # (Read at the simulator: a gpujob status here would follow the migration before the plan sees it.)
    poll("the new pod to run", lambda: [x["status"] for x in p.live("pods")] == ["RUNNING"])
    code, plan = plan_json(p)
    assert code == 0, plan
    (job,) = plan["jobs"]
    assert [a["kind"] for a in job["actions"]] == ["launch"]  # no create beside it, no destroy
    note = {f["code"]: f for f in job["findings"]}["pod-migrated"]
    assert (
        pod["id"] in note["summary"] and moved["to"] in note["summary"] and "pod-migration" in note["detail"]
    )
    st = p.status()
    assert st["machine"]["id"] == moved["to"]
    assert any(e["event"] == "migrated" and moved["to"] in e["happened"] for e in st["events"]), st["events"]
    assert p.record("launches/quickstart.json")["resource_id"] == moved["to"]
    p.gj("apply", "--auto-approve")
    resumed = poll(
        "the run to resume", lambda: re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "2000").stdout)
    )
    assert int(resumed.group(1)) >= before
    assert [x["id"] for x in p.live("pods")] == [moved["to"]]
    audit = json.loads(p.gj("audit", "--platform", "runpod", "--format", "json").stdout)
    (item,) = [i for i in audit["items"] if i["kind"] == "pod"]
    assert item["id"] == moved["to"] and item["owner"] == "this-repo"  # followed, never "foreign"


def edit(p: Project, old: str, new: str) -> None:
    path = p.dir / "job.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_waiting_create_queues_at_zero_cost_and_is_placed_once_capacity_returns(project: Project) -> None:
    p = project
    edit(p, "  spot: true\n", "  spot: false\n  when_unavailable: wait\n  wait_up_to: 10m\n")
    p.sim.inject("capacity", platform="runpod", count=1_000_000)  # no stock anywhere until cleared
    code, plan = plan_json(p)
    assert code == 0, plan
    (job,) = plan["jobs"]
    (create,) = [a for a in job["actions"] if a["kind"] == "create" and a["resource_kind"] == "pod"]
    assert any("RunPod's queue" in r and "$0.00/h" in r for r in create["reasons"]), create["reasons"]
    wait = {f["code"]: f for f in job["findings"]}["capacity-wait"]
    assert "no candidate reports stock now" in wait["summary"] and "$0.00/h" in wait["summary"]
    proc = p.popen("apply", "--auto-approve", extra_env={"GPUJOB_QUEUE_POLL_S": "0.1"})
    try:
        queued = poll(
            "the create to wait in RunPod's queue",
            lambda: [q for q in p.sim.control("state")["queued"].values() if q["status"] == "QUEUED"],
        )
        assert p.live("pods") == []  # a queued pod is not a pod: nothing bills while it waits
        p.sim.inject("clear")
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "waiting in RunPod's queue (Deploy When Available)" in out and "billing $0.00/h" in out, out
    (pod,) = p.live("pods")
    assert p.sim.control("state")["queued"][queued[0]["id"]]["pod_id"] == pod["id"]
    assert f"RunPod placed the queued pod {pod['id']}" in out
    poll("the run to checkpoint on the placed pod", lambda: last_step(p) > 0)


def test_spot_withdrawn_while_graphql_answers_plans_on_demand_or_refuses(project: Project) -> None:
    p = project
    p.sim.engine.options.runpod_spot = "withdrawn"  # as `gpujob sim up --runpod-spot withdrawn`
    code, plan = plan_json(p)  # the quickstart says spot: true
    assert code == 1, plan
    err = {f["code"]: f for j in plan["jobs"] for f in j["findings"]}["spot-withdrawn"]
    assert err["severity"] == "error" and "needs a spot create" in err["summary"]
    assert "RTX4090 ×1 $0.69/h" in err["summary"] and "A6000 ×1" in err["summary"], err["summary"]
    edit(p, "  spot: true\n", "  spot: prefer\n")
    code, plan = plan_json(p)
    assert code == 0, plan
    (job,) = plan["jobs"]
    note = {f["code"]: f for f in job["findings"]}["spot-prefer"]
    assert "offers no spot" in note["summary"] and "8e5aebdb" in note["summary"]  # the reason and its source
    assert "on-demand $0.69/h, within max_price_per_hour $1.00/h" in note["summary"], note["summary"]
    assert job["running_usd_per_hour"] <= 1.0  # under budget.max_hourly_usd
    p.gj("apply", "--auto-approve")
    (pod,) = p.live("pods")
    assert pod["interruptible"] is False
