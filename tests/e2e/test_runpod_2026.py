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
