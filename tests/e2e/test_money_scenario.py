"""One truth for money: through a job's whole life against the simulator, `plan`, `status`, `cost`,
`audit` and `sim bill` show the same dollars, to the cent, at every step.

RunPod: create (the first-choice GPU has no capacity: it falls back to a cheaper one), run, stop, park
(terminate the pod, keep the network volume), start again (a fresh pod on the volume), destroy.
Paperspace: create (fallback to a cheaper machine type) with a static IP, run, a snapshot, stop, park,
start, destroy (machine, IP and snapshot). The simulated clock is frozen between steps and moved by whole
hours, so every figure is exact and the bill moves by known amounts."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim.podproc import namespaces_available
from gpujob.sim.testing import Sim, running_simulator
from tests.e2e.e2e_support import QUICKSTART, Project, poll

HOUR = 3600


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[Sim]:
    ok, why = namespaces_available()
    if not ok:
        pytest.fail(f"the money scenario needs the simulator's pods: {why}")
    with running_simulator(tmp_path / "sim", speed=0, provision_seconds=0.02, boot_seconds=0.0) as s:
        yield s


def make_project(sim: Sim, tmp_path: Path, job_yaml: str) -> Project:
    d = tmp_path / "proj"
    d.mkdir()
    for name in ("train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, d / name)
    (d / "job.yaml").write_text(job_yaml)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(sim.env)
    env.update({"CI": "true", "NO_COLOR": "1"})
    return Project(dir=d, env=env, sim=sim)


def cents(x: float) -> str:
    return f"{x:.2f}"


def run_all(p: Project, *commands: tuple[str, ...]) -> list[Any]:
    """Run read-only gpujob commands side by side (the clock is frozen: they see the same moment) and
    return their JSON outputs."""
    procs = [p.popen(*c, split=True) for c in commands]
    outs = []
    for c, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=180)
        p.outputs += [out, err]
        try:  # stdout alone, as a script reads it: nothing but the JSON document
            outs.append(json.loads(out))
        except json.JSONDecodeError as exc:
            raise AssertionError(
                f"gpujob {' '.join(c)} printed no JSON on stdout (exit {proc.returncode}): {exc}\n"
                f"stdout:\n{out}\nstderr:\n{err}"
            ) from None
    return outs


def figures(p: Project, job: str, platform: str) -> dict[str, dict[str, float]]:
    """Every command's money for the job, read from their JSON outputs."""
    plan, statuses, cost, audit = run_all(
        p,
        ("plan", "--format", "json"),
        ("status", "--format", "json"),
        ("cost", "--format", "json"),
        ("audit", "--platform", platform, "--format", "json"),
    )
    (jp,) = [j for j in plan["jobs"] if j["job"] == job]
    (status,) = [s for s in statuses if s["job"] == job]
    (jc,) = [j for j in cost["jobs"] if j["job"] == job]
    mine = [i for i in audit["items"] if i["owner"] == "this-repo" and i["job"] == job]
    bill = p.sim.bill()
    billing_now = [i for i in bill["items"] if i["platform"] == platform and not i["ended"]]
    return {
        "rate": {
            "plan": jp["current_usd_per_hour"],
            "status": status["usd_per_hour"],
            "cost": jc["burn_usd_per_hour"],
            "audit": sum(i["usd_per_hour"] for i in mine),
            "sim bill": sum(i["rate_per_hour"] for i in billing_now),
        },
        "spent": {
            "status": status["cost_usd"],
            "cost": jc["spent_usd"],
            "sim bill": bill["totals"][platform],
        },
    }


def same_money(p: Project, job: str, platform: str, step: str) -> dict[str, dict[str, float]]:
    f = figures(p, job, platform)
    for what, by_cmd in f.items():
        shown = {cmd: cents(v) for cmd, v in by_cmd.items()}
        assert len(set(shown.values())) == 1, f"{step}: {what} disagrees: {shown}"
        exact = list(by_cmd.values())
        assert max(exact) - min(exact) < 1e-4, f"{step}: {what} disagrees beyond rounding: {by_cmd}"
    return f


RUNPOD_JOB = """
version: 1
name: money
platform: runpod
state: {state}
machine:
  gpu: [A100-80GB, RTX4090]
  spot: true
  regions: [EU-RO-1]
  image: runpod/pytorch@sha256:{digest}
  container_disk_gb: 20
storage:
  mount: /workspace
  network_volume: {{name: ckpts, size_gb: 100}}
checkpoint:
  dir: /workspace/ckpt
  interval: 2s
  keep: 3
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {{file}}
run:
  sync: {{src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}}
  command: python3 train.py
  env: {{TOTAL_STEPS: "100000", STEP_SECONDS: "0.2"}}
"""


def runpod_job(p: Project, state: str) -> None:
    (p.dir / "job.yaml").write_text(RUNPOD_JOB.format(state=state, digest="ab" * 32).lstrip())


def test_runpod_money_agrees_at_every_step(frozen: Sim, tmp_path: Path) -> None:
    p = make_project(frozen, tmp_path, RUNPOD_JOB.format(state="running", digest="ab" * 32).lstrip())
    job = "money"

    # create: no A100 anywhere, so the spot RTX4090 ($0.34/h) runs, and that is what every command bills
    frozen.inject("capacity", gpu="NVIDIA A100 80GB PCIe", platform="runpod")
    p.gj("apply", "--auto-approve")
    pods = p.live("pods")
    assert [x["gpu_id"] for x in pods] == ["NVIDIA GeForce RTX 4090"]
    f = same_money(p, job, "runpod", "created")
    assert f["rate"]["plan"] == pytest.approx(0.34 + (20 * 0.10 + 100 * 0.07) / 720, abs=1e-6)
    assert f["spent"]["cost"] == 0

    # run: 5 h at that rate
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    frozen.advance(5 * HOUR)
    f = same_money(p, job, "runpod", "after 5 h running")
    assert f["spent"]["cost"] == pytest.approx(5 * f["rate"]["plan"], abs=1e-4)
    cost_text = p.gj("cost").stdout
    assert "billed by the platform" in cost_text and "GPU 1× RTX4090 (spot)" in cost_text

    # stop: the GPU stops, the network volume goes on
    runpod_job(p, "stopped")
    p.gj("apply", "--auto-approve")
    frozen.advance(10 * HOUR)
    f = same_money(p, job, "runpod", "stopped 10 h")
    assert f["rate"]["status"] == pytest.approx(100 * 0.07 / 720, abs=1e-6)

    # park: the pod is terminated (gated), the volume with the checkpoints stays
    runpod_job(p, "parked")
    plan = p.gj("plan").stdout
    assert "money.pod.terminate" in plan and "keep network volume" in plan
    p.gj("apply", "--auto-approve", "--approve", "money.pod.terminate")
    assert p.live("pods") == [] and len(p.live("volumes")) == 1
    frozen.advance(24 * HOUR)
    same_money(p, job, "runpod", "parked 24 h")

    # start: a fresh pod on the same volume (capacity came back: the first choice is taken again)
    frozen.inject("clear")
    runpod_job(p, "running")
    p.gj("apply", "--auto-approve")
    assert [x["gpu_id"] for x in p.live("pods")] == ["NVIDIA A100 80GB PCIe"]
    frozen.advance(2 * HOUR)
    same_money(p, job, "runpod", "running again 2 h")

    # destroy: nothing bills any more, and what was spent is still counted (two pods, one volume)
    refused = p.gj("destroy", "--auto-approve", check=False)
    ids = sorted(set(re.findall(r"--approve ([^\s`]+)", refused.stderr)))
    assert ids, refused.stderr
    p.gj("destroy", "--auto-approve", *[a for i in ids for a in ("--approve", i)])
    frozen.advance(3 * HOUR)
    f = same_money(p, job, "runpod", "destroyed")
    assert all(v == 0 for v in f["rate"].values())
    assert f["spent"]["cost"] > 2.0  # 5 h + 2 h of GPU and 41 h of volume, never $0.00
    lines = json.loads(p.gj("cost", "--format", "json").stdout)["jobs"][0]["resources"]
    assert sorted((x["kind"], x["state"], x["source"]) for x in lines) == [
        ("network_volume", "gone", "billing"), ("pod", "gone", "billing"), ("pod", "gone", "billing"),
    ]  # fmt: skip


RP4_JOB = """
version: 1
name: rp4
platform: runpod
state: {state}
machine:
  gpu: [RTX4090]
  regions: [EU-RO-1]
  image: runpod/pytorch@sha256:{digest}
  container_disk_gb: 20
storage:
  mount: /workspace
  volume_gb: 10
checkpoint:
  dir: /workspace/ckpt
  interval: 2s
  keep: 3
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {{file}}
run:
  sync: {{src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}}
  command: python3 train.py
  env: {{TOTAL_STEPS: "100000", STEP_SECONDS: "0.2"}}
"""


def test_runpod_stopped_pod_volume_disk_bills_twice_in_status_as_everywhere(
    frozen: Sim, tmp_path: Path
) -> None:
    """RP4: a stopped pod's volume disk bills at 2x the running rate. `gpujob status` shows that rate
    (not $0.00/h), meter by meter, and it is the plan's, the audit's, `gpujob cost`'s and the bill's."""
    p = make_project(frozen, tmp_path, RP4_JOB.format(state="running", digest="cd" * 32).lstrip())
    p.gj("apply", "--auto-approve")
    frozen.advance(1 * HOUR)
    same_money(p, "rp4", "runpod", "running 1 h")

    (p.dir / "job.yaml").write_text(RP4_JOB.format(state="stopped", digest="cd" * 32).lstrip())
    p.gj("apply", "--auto-approve")
    frozen.advance(2 * HOUR)
    f = same_money(p, "rp4", "runpod", "stopped 2 h")
    stopped = 10 * 0.20 / 720  # the volume disk at the stopped rate; the container disk bills nothing
    assert all(v == pytest.approx(stopped, abs=1e-6) for v in f["rate"].values()), f["rate"]
    (row,) = json.loads(p.gj("status", "--format", "json").stdout)
    assert [(x["what"], round(x["usd_per_hour"], 6)) for x in row["billing_now"]] == [
        ("volume disk 10 GB (stopped, 2×)", round(stopped, 6))
    ]
    text = p.gj("status").stdout
    assert "$0.0028/h now" in text and "volume disk 10 GB (stopped, 2×) $0.0028/h" in text, text
    assert "$0.00/h" not in text


def _sim_state(p: Project) -> Any:
    return p.sim.control("state")


PAPERSPACE_JOB = """
version: 1
name: psmoney
platform: paperspace
state: {state}
machine:
  gpu: [A5000, A4000]
  regions: [ny2]
  template: ubuntu-22.04
  public_ip: static
storage:
  volume_gb: 100
  mount: /workspace
checkpoint:
  dir: /workspace/ckpt
  interval: 2s
  keep: 3
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {{file}}
run:
  sync: {{src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}}
  command: python3 train.py
  env: {{TOTAL_STEPS: "100000", STEP_SECONDS: "0.2"}}
  max_runtime: 48h
budget:
  max_total_usd: 20
"""


def paperspace_job(p: Project, state: str) -> None:
    (p.dir / "job.yaml").write_text(PAPERSPACE_JOB.format(state=state).lstrip())


def take_snapshot(p: Project, machine_id: str, name: str) -> str:
    """A snapshot the way a user takes one (gpujob never makes them): POST /snapshots."""
    import httpx

    headers = {"Authorization": f"Bearer {p.env['PAPERSPACE_API_KEY']}"}
    base = p.env["GPUJOB_PAPERSPACE_API_URL"]
    r = httpx.post(f"{base}/snapshots", json={"machineId": machine_id, "name": name}, headers=headers)
    r.raise_for_status()
    return str(r.json()["data"]["id"])


def test_paperspace_money_agrees_at_every_step(frozen: Sim, tmp_path: Path) -> None:
    p = make_project(frozen, tmp_path, PAPERSPACE_JOB.format(state="running").lstrip())
    job = "psmoney"
    gpu, disk, ip, snap = 0.76, 100 * 0.06 / 720, 0.0045, 100 * 0.29 / 720  # A4000, 100 GB, static IP, PS9

    # create: no A5000 in ny2, so an A4000 runs, with a static IP and a 100 GB disk
    frozen.inject("capacity", gpu="A5000", platform="paperspace")
    p.gj("apply", "--auto-approve")
    (m,) = p.live("machines")
    assert m["machine_type"] == "A4000"
    f = same_money(p, job, "paperspace", "created")
    assert f["rate"]["plan"] == pytest.approx(gpu + disk + ip, abs=1e-6)
    assert f["spent"]["cost"] == 0

    # run 5 h; the budget left is the budget minus what was spent
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    frozen.advance(5 * HOUR)
    f = same_money(p, job, "paperspace", "after 5 h running")
    spent = 5 * (gpu + disk + ip)
    assert f["spent"]["cost"] == pytest.approx(spent, abs=1e-4)
    cost = p.gj("cost", check=False)  # exit 2: 48 h at this rate projects over the budget
    assert cost.returncode == 2 and f"budget $20.00: ${20 - spent:.2f} left" in cost.stdout, cost.stdout
    assert f"projected ${spent + 43 * (gpu + disk + ip):.2f} at run.max_runtime" in cost.stdout

    # a snapshot (taken by the user; gpujob never makes one): priced at its machine's 100 GB disk (PS9)
    snapshot = take_snapshot(p, m["id"], "psmoney-before-stop")
    frozen.advance(1 * HOUR)
    f = same_money(p, job, "paperspace", "snapshot 1 h")
    assert f["rate"]["plan"] == pytest.approx(gpu + disk + ip + snap, abs=1e-6)

    # stop: the GPU stops; disk, static IP and snapshot go on billing (PS1)
    paperspace_job(p, "stopped")
    p.gj("apply", "--auto-approve")
    frozen.advance(10 * HOUR)
    f = same_money(p, job, "paperspace", "stopped 10 h")
    assert f["rate"]["status"] == pytest.approx(disk + ip + snap, abs=1e-6)

    # park: on Paperspace the machine off is the cheapest state that keeps the disk, so nothing changes,
    # and the parked monthly total is the disk, the IP at its $3 cap and the snapshot
    paperspace_job(p, "parked")
    assert p.gj("plan", "--detailed-exitcode", check=False).returncode == 0
    frozen.advance(24 * HOUR)
    f = same_money(p, job, "paperspace", "parked 24 h")
    plan, audit = run_all(
        p, ("plan", "--format", "json"), ("audit", "--platform", "paperspace", "--format", "json")
    )
    mine = [i for i in audit["items"] if i["job"] == job]
    assert plan["jobs"][0]["parked_usd_per_month"] == pytest.approx(6.00 + 3.00 + 29.00, abs=1e-6)
    assert sum(i["usd_per_month"] for i in mine) == pytest.approx(38.00, abs=1e-4)
    # the job's SSH startup script is listed as the job's too: free, so no gotcha and no money
    assert {i["kind"]: i["gotcha"] for i in mine} == {
        "machine": "PS1", "public_ip": "PS1", "snapshot": "PS9", "startup_script": None
    }  # fmt: skip

    # start again, 1.5 h: Paperspace bills every started hour in full (the profile's
    # compute_billing_granularity), so the GPU has billed 2 h of this start, in the bill and in gpujob
    paperspace_job(p, "running")
    p.gj("apply", "--auto-approve")
    frozen.advance(int(1.5 * HOUR))
    f = same_money(p, job, "paperspace", "running again 1.5 h")
    (compute,) = [i for i in frozen.bill()["items"] if i["id"] == m["id"] and i["item"] == "compute"]
    assert compute["usd"] == pytest.approx((5 + 1 + 2) * gpu, abs=1e-6)
    # the projection to max_runtime (48 h from this start) adds the hours not yet billed: 46 of each meter
    (jc,) = json.loads(p.gj("cost", "--format", "json", check=False).stdout)["jobs"]
    assert jc["projected_at_max_runtime_usd"] == pytest.approx(
        jc["spent_usd"] + 46 * (gpu + disk + ip + snap), abs=1e-4
    )

    # destroy: machine, static IP and snapshot, each through the gate
    refused = p.gj("destroy", "--auto-approve", check=False)
    ids = sorted(set(re.findall(r"--approve ([^\s`]+)", refused.stderr)))
    assert ids == ["psmoney.machine.terminate", "psmoney.public_ip.release-ip",
                   f"psmoney.snapshot[{snapshot}].delete-snapshot"], refused.stderr  # fmt: skip
    p.gj("destroy", "--auto-approve", *[a for i in ids for a in ("--approve", i)])
    frozen.advance(3 * HOUR)
    f = same_money(p, job, "paperspace", "destroyed")
    assert all(v == 0 for v in f["rate"].values())
    # 8 h of GPU; the disk and the IP 42 started hours, the snapshot 37 (from hour 5 to 41.5)
    total = 8 * gpu + 42 * (disk + ip) + 37 * snap
    assert f["spent"]["cost"] == pytest.approx(total, abs=1e-4)
    lines = json.loads(p.gj("cost", "--format", "json").stdout)["jobs"][0]["resources"]
    assert sorted((x["kind"], x["state"], x["source"]) for x in lines) == [
        ("machine", "gone", "estimate"), ("public_ip", "gone", "estimate"), ("snapshot", "gone", "estimate"),
    ]  # fmt: skip


def test_paperspace_dynamic_ip_bills_only_while_running_and_started_hours_in_full(
    frozen: Sim, tmp_path: Path
) -> None:
    """A dynamic IP is charged while the machine runs (never $0), and every meter bills each started hour
    of its billing period in full: the GPU's and the IP's periods end at the stop and begin again at
    the start, the disk's runs on."""
    text = PAPERSPACE_JOB.replace("public_ip: static", "public_ip: dynamic").replace(
        "gpu: [A5000, A4000]", "gpu: [A4000]"
    )
    p = make_project(frozen, tmp_path, text.format(state="running").lstrip())
    job = "psmoney"
    gpu, disk, ip = 0.76, 100 * 0.06 / 720, 0.0045
    p.gj("apply", "--auto-approve")
    f = same_money(p, job, "paperspace", "created")
    assert f["rate"]["status"] == pytest.approx(gpu + disk + ip, abs=1e-6)  # the IP is not free

    frozen.advance(int(2.5 * HOUR))
    same_money(p, job, "paperspace", "running 2.5 h")
    (p.dir / "job.yaml").write_text(text.format(state="stopped").lstrip())
    p.gj("apply", "--auto-approve")
    frozen.advance(1 * HOUR)
    f = same_money(p, job, "paperspace", "stopped 1 h")
    assert f["rate"]["status"] == pytest.approx(disk, abs=1e-6)  # the dynamic IP went with the power-off

    (p.dir / "job.yaml").write_text(text.format(state="running").lstrip())
    p.gj("apply", "--auto-approve")
    frozen.advance(int(0.5 * HOUR))
    f = same_money(p, job, "paperspace", "running again 0.5 h")
    # GPU and IP: 3 started hours, then 1; the disk: 4 started hours of one period
    assert f["spent"]["cost"] == pytest.approx((3 + 1) * (gpu + ip) + 4 * disk, abs=1e-4)
