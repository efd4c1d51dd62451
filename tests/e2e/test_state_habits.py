"""Terraform's state habits against the simulator (real sshd pods, the CLI as subprocesses):
`gpujob state list`, `gpujob state rm` (forget, the platform untouched, the gate's records kept),
`gpujob import` (adopt a hand-made pod and volume by an in-place rename: a running pod is not
restarted; the next plan shows what differs), and `--lock-timeout` (refuse at once, refuse after the
wait, or go ahead once the holder lets go)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx

from tests.e2e.e2e_support import Project, poll

IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"


def pod_of(p: Project, pod_id: str) -> dict:
    return next(o for o in p.sim_objects("pods") if o["id"] == pod_id)


def rows(p: Project) -> list[dict]:
    return json.loads(p.gj("state", "list", "--format", "json").stdout)


def test_state_list_then_rm_forgets_without_touching_the_platform(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    poll("a few checkpoints", lambda: "step_" in p.gj("ssh", "--", "ls", "/workspace/ckpt").stdout)
    assert "all verified" in p.gj("pull").stdout
    pulled = p.store().read("pulls/quickstart.json")

    listed = rows(p)
    assert {(r["kind"], r["name"]) for r in listed} == {
        ("pod", p.machine_name()),
        ("network_volume", p.volume_name()),
    }
    assert all(r["job"] == "quickstart" and r["region"] == "EU-RO-1" and r["note"] == "" for r in listed)
    assert next(r for r in listed if r["kind"] == "pod")["ssh"].startswith("root@127.0.0.1:")  # where it runs
    pod_id = next(r["id"] for r in listed if r["kind"] == "pod")
    text = p.gj("state", "list").stdout
    assert f"state: {p.state}" in text and p.machine_name() in text and pod_id in text

    before = pod_of(p, pod_id)
    gone = p.gj("state", "rm", pod_id)
    assert f"Forgot pod {p.machine_name()} ({pod_id}) of job quickstart: untouched on runpod" in gone.stdout
    after = pod_of(p, pod_id)
    assert after["status"] == "RUNNING" and after["sshd_pid"] == before["sshd_pid"]  # nothing was called
    assert after["gen"] == before["gen"] and after["name"] == before["name"]
    assert p.store().read("pulls/quickstart.json") == pulled  # the gate's evidence stays

    listed = rows(p)
    forgotten = next(r for r in listed if r["id"] == pod_id)
    assert forgotten["note"].startswith("forgotten") and "still on the platform" in forgotten["note"]
    # The job no longer has a pod: the plan makes a new one and never touches the forgotten one.
    plan = p.gj("plan", "--no-refresh-runs", check=False).stdout
    assert "+ create pod" in plan and pod_id not in plan and "terminate" not in plan

    # A job name forgets everything the job owns; an unknown target says what there is.
    p.gj("state", "rm", "quickstart")
    assert all(r["note"].startswith("forgotten") for r in rows(p))
    unknown = p.gj("state", "rm", "nope", check=False)
    assert unknown.returncode == 1 and "nothing here is named 'nope'" in unknown.stderr
    assert len(p.live("pods")) == 1 and len(p.live("volumes")) == 1  # the platform: as it was

    # import takes them back: the same running pod, and no change left to make.
    p.gj("import", "quickstart", pod_id)
    p.gj("import", "quickstart", next(r["id"] for r in listed if r["kind"] == "network_volume"))
    assert pod_of(p, pod_id)["sshd_pid"] == before["sshd_pid"]
    assert p.gj("plan", "--detailed-exitcode", check=False).returncode == 0


def test_import_adopts_a_hand_made_pod_and_volume_without_restarting_the_pod(project: Project) -> None:
    p = project
    api = httpx.Client(base_url=p.env["GPUJOB_RUNPOD_API_URL"],
                       headers={"Authorization": f"Bearer {p.env['RUNPOD_API_KEY']}"}, timeout=30)  # fmt: skip
    with api:
        nv = api.post("/network-volumes", json={"name": "team-ckpts", "size": 10, "dataCenter": "EU-RO-1"})
        nv.raise_for_status()
        pod = api.post("/pods", json={
            "name": "alices-notebook", "image": IMAGE, "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1},
            "cloud": "SECURE", "dataCenterIds": ["EU-RO-1"], "ports": ["22/tcp"], "startSsh": True, "disk": 20,
            "env": {"KEEP": "me"}, "mounts": {"network": [{"volumeId": nv.json()["id"], "path": "/workspace"}]},
        })  # fmt: skip
        pod.raise_for_status()
    pod_id, nv_id = pod.json()["id"], nv.json()["id"]
    poll(
        "the hand-made pod to run",
        lambda: pod_of(p, pod_id)["status"] == "RUNNING" and pod_of(p, pod_id)["sshd_pid"],
    )
    before = pod_of(p, pod_id)

    # Not gpujob's: the plan would make its own pod and volume.
    assert "2 to create" in p.gj("plan", "--no-refresh-runs", check=False).stdout

    done = p.gj("import", "quickstart", pod_id)
    assert (
        f"Imported pod {pod_id} into job quickstart: renamed 'alices-notebook' -> '{p.machine_name()}'"
        in done.stdout
    )
    after = pod_of(p, pod_id)
    assert (
        after["status"] == "RUNNING"
        and after["sshd_pid"] == before["sshd_pid"]
        and after["gen"] == before["gen"]
    )
    assert after["env"] == {"KEEP": "me"} and after["name"] == p.machine_name()  # only the name changed
    # The pod is the job's; its volume is not yet (mounted, but named by nobody).
    plan = p.gj("plan", "--no-refresh-runs", check=False).stdout
    assert "+ create network volume" in plan and "create pod" not in plan

    p.gj("import", "quickstart", nv_id)
    assert any(v["id"] == nv_id and v["name"] == p.volume_name() for v in p.sim_objects("volumes"))
    assert "is job quickstart's already" in p.gj("import", "quickstart", nv_id).stdout
    # Now the plan shows only how the adopted pod differs from the job file (spot: true here).
    plan = p.gj("plan", "--no-refresh-runs", check=False).stdout
    assert "Plan: 0 to create, 1 to replace, 0 to destroy" in plan, plan
    assert (
        f"-/+ replace pod {p.machine_name()} [gated]" in plan
        and "~ spot = false -> true  # forces replacement" in plan
    )
    # The PR comment for this plan: the approve line for the gated replace, one heading, money per month,
    # the chart; and the saved plan shows the same.
    md = p.gj("plan", "--no-refresh-runs", "--format", "markdown", "-o", "plan.json", check=False).stdout
    assert "```text\ngpujob-approve: quickstart.pod.replace\n```" in md
    assert "- `quickstart.pod.replace` approves: replace pod " in md
    assert [ln for ln in md.splitlines() if ln.startswith("#")] == ["## gpujob plan"]
    assert "/mo if left running)" in md and "```mermaid\nflowchart LR" in md
    assert p.gj("show", "plan.json", "--format", "markdown").stdout == md
    assert pod_of(p, pod_id)["sshd_pid"] == before["sshd_pid"]  # planning changed nothing either

    # One machine per job; a follower, an unknown id and another job's resource are refused.
    with httpx.Client(base_url=p.env["GPUJOB_RUNPOD_API_URL"],
                      headers={"Authorization": f"Bearer {p.env['RUNPOD_API_KEY']}"}, timeout=30) as api:  # fmt: skip
        other = api.post("/pods", json={"name": "another", "image": IMAGE, "gpu": {"id": "NVIDIA GeForce RTX 4090"},
                                        "dataCenterIds": ["EU-RO-1"]}).json()["id"]  # fmt: skip
    second = p.gj("import", "quickstart", other, check=False)
    assert (
        second.returncode == 1
        and "already has pod" in second.stderr
        and "nothing was changed" in second.stderr
    )
    missing = p.gj("import", "quickstart", "pod-nope", check=False)
    assert missing.returncode == 1 and "no resource with id 'pod-nope'" in missing.stderr


HOLD = """
import sys
from gpujob.state.config import open_config, resolve
store = open_config(resolve(None))
with store.lock("quickstart", command="a test holding the lock"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_lock_timeout_refuses_at_once_waits_then_refuses_or_proceeds(project: Project) -> None:
    p = project
    holder = subprocess.Popen([sys.executable, "-c", HOLD], cwd=p.dir, env=p.env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        at_once = p.gj("pull", check=False)
        assert (
            at_once.returncode == 1
            and "is locked by" in at_once.stderr
            and "a test holding the lock" in at_once.stderr
        )
        assert "--lock-timeout" in at_once.stderr  # the hint names the flag

        started = time.monotonic()
        waited = p.gj("destroy", "--lock-timeout", "2s", check=False)
        took = time.monotonic() - started
        assert waited.returncode == 1 and "(waited 2s for it)" in waited.stderr, waited.stderr
        assert took >= 2.0

        bad = p.gj("apply", "--auto-approve", "--lock-timeout", "soon", check=False)
        assert bad.returncode == 2 and "'soon' is not a duration" in bad.stderr

        # An apply that may wait goes ahead as soon as the holder lets go.
        apply = p.popen("apply", "--auto-approve", "--lock-timeout", "2m")
        poll(
            "the apply to be waiting",
            lambda: apply.poll() is None and time.monotonic() - started > 2.5,
            every=0.1,
        )
        assert apply.poll() is None  # still waiting for the lock
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(30)
        out, _ = apply.communicate(timeout=180)
        assert apply.returncode == 0 and "Apply finished" in out, out
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)
    assert len(p.live("pods")) == 1


PS_JOB = """version: 1
name: pscore
platform: paperspace
machine:
  gpu: [A4000]
  regions: [ny2]
  template: t0nspur5
  public_ip: static
storage:
  volume_gb: 50
  mount: /workspace
run:
  command: sleep 1000
"""


def test_import_a_running_paperspace_machine_with_its_static_ip(project: Project) -> None:
    p = project
    (p.dir / "job.yaml").write_text(PS_JOB)
    api = httpx.Client(base_url=p.env["GPUJOB_PAPERSPACE_API_URL"],
                       headers={"Authorization": f"Bearer {p.env['PAPERSPACE_API_KEY']}"}, timeout=30)  # fmt: skip
    with api:
        made = api.post("/machines", json={
            "name": "bobs-box", "machineType": "A4000", "templateId": "t0nspur5", "diskSize": 50, "region": "ny2",
            "publicIpType": "static", "startOnCreate": True,
        })  # fmt: skip
        made.raise_for_status()
    mid = made.json()["data"]["id"]

    def machine() -> dict:
        return next(o for o in p.sim_objects("machines") if o["id"] == mid)

    poll("bob's machine to run", lambda: machine()["state"] == "ready" and machine()["sshd_pid"])
    before = machine()
    done = p.gj("import", "pscore", mid)
    assert "renamed 'bobs-box' -> 'gpujob-pscore--" in done.stdout
    after = machine()
    assert (
        after["state"] == "ready"
        and after["sshd_pid"] == before["sshd_pid"]
        and after["gen"] == before["gen"]
    )
    kinds = {r["kind"]: r for r in rows(p)}
    assert kinds["machine"]["id"] == mid and kinds["machine"]["name"] == p.machine_name("pscore")
    assert kinds["public_ip"]["id"] == after["public_ip"]  # the static IP follows its machine
    plan = p.gj("plan", "--no-refresh-runs", check=False).stdout
    assert f"machine {p.machine_name('pscore')} is running and matches the spec" in plan, plan
    assert "No changes: live state matches the spec" in plan  # the adopted machine is the job's as it is
    refused = p.gj("import", "pscore", after["public_ip"], check=False)
    assert refused.returncode == 1 and "follows its machine" in refused.stderr
