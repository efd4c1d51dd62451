"""`gpujob audit --fix -o fix.json` then `gpujob apply fix.json` against a seeded simulator account:
this repo's idle resources (a stopped RunPod pod holding checkpoints, an unattached network volume, a
static IP on an off Paperspace machine, a snapshot) go through the teardown gate and are removed; the
foreign ones (busy, so not idle) are untouched and are all that still bills afterwards."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from typing import Any

import httpx

from gpujob.providers.base import LaunchRequest, VolumeRequest
from tests.e2e.e2e_support import Project, poll

RP_JOB = """version: 1
name: rpjob
platform: runpod
state: {state}
machine:
  gpu: [RTX4090]
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
  container_disk_gb: 20
storage:
  mount: /workspace
  volume_gb: 10
checkpoint:
  dir: /workspace/ckpt
  interval: 1s
  keep: 2
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {{file}}
run:
  sync: {{src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}}
  command: python3 train.py
  env: {{TOTAL_STEPS: "5000", STEP_SECONDS: "0.05"}}
"""
PS_JOB = """version: 1
name: psjob
platform: paperspace
state: {state}
machine:
  gpu: [A4000]
  regions: [ny2]
  template: ubuntu-22.04
  public_ip: static
storage:
  volume_gb: 50
"""
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE foreign"


def write(p: Project, rp: str, ps: str) -> None:
    (p.dir / "rp.job.yaml").write_text(RP_JOB.format(state=rp))
    (p.dir / "ps.job.yaml").write_text(PS_JOB.format(state=ps))


def rp_checkpoint(p: Project) -> str:
    rows = json.loads(p.gj("status", "rp.job.yaml", "--format", "json").stdout)
    return str((rows[0].get("run") or {}).get("last_checkpoint") or "")


async def seed(p: Project) -> dict[str, str]:
    """Foreign resources, all busy (so not idle), plus an owned unattached volume and an owned snapshot."""
    from gpujob.providers.registry import open_providers

    async with open_providers({"runpod", "paperspace"}, env=p.env) as pv:
        rp, ps = pv["runpod"], pv["paperspace"]
        scratch = await rp.create_volume(
            VolumeRequest(name=p.volume_name("rpjob", "scratch"), size_gb=10, region="EU-RO-1")
        )
        team = await rp.create_volume(VolumeRequest(name="team-data", size_gb=10, region="EU-RO-1"))
        nb = await rp.create_machine(
            LaunchRequest(name="my-notebook", gpu_id="NVIDIA GeForce RTX 4090", region="EU-RO-1",
                          image="runpod/pytorch:2.4", container_disk_gb=10, network_volume_id=team.id,
                          ssh_public_key=KEY)
        )  # fmt: skip
        ws = await ps.create_machine(
            LaunchRequest(name="workstation", gpu_id="A4000", template="ubuntu-22.04", region="ny2",
                          volume_gb=50, public_ip="static", ssh_public_key=KEY)
        )  # fmt: skip
        listed = await ps.list_resources()
    owned_machine = next(r for r in listed if r.name == p.machine_name("psjob"))
    headers = {"Authorization": f"Bearer {p.env['PAPERSPACE_API_KEY']}"}
    base = p.env["GPUJOB_PAPERSPACE_API_URL"]
    snaps = {}
    for machine_id, name in ((owned_machine.id, "gpujob-psjob-before-upgrade"), (ws.id, "workstation-daily")):
        r = httpx.post(f"{base}/snapshots", json={"machineId": machine_id, "name": name}, headers=headers)
        r.raise_for_status()
        snaps[name] = r.json()["data"]["id"]
    return {"scratch": scratch.id, "team": team.id, "nb": nb.id, "ws": ws.id, "ws_ip": ws.public_ip or "",
            "owned_snap": snaps["gpujob-psjob-before-upgrade"], "ws_snap": snaps["workstation-daily"]}  # fmt: skip


def live(p: Project) -> dict[str, dict[str, Any]]:
    """Every resource the simulator still holds, by id."""
    state = p.sim.control("state")
    out: dict[str, dict[str, Any]] = {}
    for kind in ("pods", "volumes", "machines", "ips", "snapshots"):
        for key, obj in state[kind].items():
            if obj.get("ended_at") is None and obj.get("status") != "TERMINATED":
                out[obj.get("id") or key] = obj
    return out


def shape(objs: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What an action would change: existence, run state, IP assignment (not the meters' clocks)."""
    return {k: (o.get("status"), o.get("state"), o.get("assigned_machine_id")) for k, o in objs.items()}


def approvals(fix: str) -> list[str]:
    ids = [line.split()[0] for line in fix.splitlines() if line.startswith("  ") and "." in line.split()[0]]
    return [a for i in ids if not i.endswith(".pull") for a in ("--approve", i)]


def test_audit_fix_plan_applies_through_the_gate_and_leaves_only_foreign_spend(project: Project) -> None:
    p = project
    (p.dir / "job.yaml").unlink()  # only this test's two jobs are this repo's
    write(p, "running", "running")
    p.gj("apply", "--auto-approve")
    poll("a checkpoint on the pod", lambda: "step_" in rp_checkpoint(p))
    write(p, "stopped", "stopped")
    p.gj("apply", "--auto-approve")
    ids = asyncio.run(seed(p))
    (pod,) = [o for o in live(p).values() if o.get("name") == p.machine_name("rpjob")]
    (ps_ip,) = [o for o in live(p).values() if o.get("assigned_machine_id") and o.get("ip") != ids["ws_ip"]]
    foreign = {ids[k] for k in ("team", "nb", "ws", "ws_ip", "ws_snap")}
    foreign_before = {k: v for k, v in live(p).items() if k in foreign}
    assert len(foreign_before) == 5

    audit = p.gj("audit", "--idle-threshold", "1s", "--fix", "-o", "fix.json", check=False)
    assert audit.returncode == 2, audit.stdout + audit.stderr
    plan = json.loads((p.dir / "fix.json").read_text())
    targets = {a["resource_id"] for j in plan["jobs"] for a in j["actions"] if a["kind"] != "pull"}
    assert targets == {
        pod["id"],
        ids["scratch"],
        ps_ip["ip"],
        ids["owned_snap"],
        ps_ip["assigned_machine_id"],
    }
    approve = approvals(audit.stdout + audit.stderr)
    assert len(approve) == 2 * 5, approve

    # No approvals: refused before anything runs.
    before = shape(live(p))
    refused = p.gj("apply", "fix.json", check=False)
    assert refused.returncode == 1 and "need explicit approval" in refused.stderr, refused.stderr
    assert shape(live(p)) == before

    # Approved, but the pulled checkpoints fail checkpoint.verify: the pod and its job's volume stay
    # (and the pod, started for the pull, is stopped again); the other job's teardown goes on.
    # The stop above pulled and verified the newest checkpoint already (#42: no stop strands one): a
    # checkpoint the run wrote after that pull is what the gate must pull and verify now.
    disk = p.sim.data_dir / "runpod" / "pods" / pod["id"] / "volume" / "ckpt"
    newest = sorted(disk.glob("step_*"))[-1]
    shutil.copy(newest, disk / ("step_99999999" + newest.suffix))
    verifier = p.dir / "verify_ckpt.py"
    good = verifier.read_text()
    verifier.write_text("import sys\nsys.exit(1)\n")
    bad = p.gj("apply", "fix.json", *approve, check=False)
    assert bad.returncode == 1 and "failed verification" in bad.stdout + bad.stderr, bad.stdout + bad.stderr
    after_bad = live(p)
    assert pod["id"] in after_bad and after_bad[pod["id"]]["status"] == "EXITED"
    assert ids["scratch"] in after_bad
    assert ps_ip["ip"] not in after_bad and ids["owned_snap"] not in after_bad
    verifier.write_text(good)

    # A fresh fix plan for what is left; with a verified pull it goes through.
    again = p.gj("audit", "--idle-threshold", "1s", "--fix", "-o", "fix2.json", check=False)
    assert again.returncode == 2
    done = p.gj("apply", "fix2.json", *approvals(again.stdout + again.stderr))
    assert re.search(r"\b0 failed", done.stderr), done.stderr
    record = p.record("pulls/rpjob.json")
    assert record["files"] and all(f["verified"] for f in record["files"])

    final = p.gj("audit", "--idle-threshold", "1s")
    assert final.returncode == 0
    remaining = live(p)
    assert set(remaining) == foreign
    assert shape(remaining) == shape(foreign_before)
    billing = {i["id"] for i in p.sim.bill()["items"] if i["rate_per_hour"] and not i["ended"]}
    assert billing == foreign, billing
