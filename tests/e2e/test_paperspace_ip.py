"""A Paperspace machine switched from a dynamic to a static IP by `gpujob apply`: the claim survives a
kill between claim and assign (no second IP), SSH reaches the machine on the static IP across a
stop/start, and destroy releases the IP only with its approval, leaving no IP meter running."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.e2e.e2e_support import Project, poll

JOB = """version: 1
name: psip
platform: paperspace
state: {state}
machine:
  gpu: [A4000]
  regions: [ny2]
  template: ubuntu-22.04
  public_ip: {ip}
storage:
  volume_gb: 50
  mount: /workspace
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
CREATE_IP = "psip.public_ip.create"


def write(p: Project, *, ip: str, state: str = "running") -> None:
    (p.dir / "job.yaml").write_text(JOB.format(ip=ip, state=state))


def live_ips(p: Project) -> list[dict[str, Any]]:
    return [i for i in p.sim.control("state")["ips"].values() if i.get("ended_at") is None]


def machine(p: Project) -> dict[str, Any]:
    (m,) = [m for m in p.sim.control("state")["machines"].values() if m.get("ended_at") is None]
    return dict(m)


def ssh_host(p: Project) -> str:
    """Where the machine answered: its own address as the pod's sshd saw the connection."""
    out = p.gj("ssh", "--", "printenv", "SSH_CONNECTION").stdout.split()
    return out[2]


def test_static_ip_claimed_in_place_survives_stop_start_and_is_released_through_the_gate(
    project: Project,
) -> None:
    p = project
    write(p, ip="dynamic")
    p.gj("apply", "--auto-approve")
    dynamic = machine(p)["public_ip"]
    assert dynamic and not live_ips(p)

    write(p, ip="static")
    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2 and CREATE_IP in plan.stdout, plan.stdout

    # Killed right after the claim: the IP is claimed, billing, and assigned to nothing.
    killed = p.popen(
        "apply", "--auto-approve", extra_env={"GPUJOB_TEST_CRASHPOINT": f"after:{CREATE_IP}:claim"}
    )
    out, _ = killed.communicate(timeout=180)
    assert killed.returncode == 137, out
    (orphan,) = live_ips(p)
    assert orphan["assigned_machine_id"] is None

    # The re-run adopts that IP instead of claiming a second one.
    done = p.gj("apply", "--auto-approve")
    assert "0 failed" in done.stderr, done.stderr
    (ip,) = live_ips(p)
    assert ip["ip"] == orphan["ip"] and ip["assigned_machine_id"] == machine(p)["id"]
    static = ip["ip"]
    assert static != dynamic and machine(p)["public_ip"] == static
    assert ssh_host(p) == static
    assert p.gj("plan", "--detailed-exitcode", check=False).returncode == 0

    # Stop and start: a dynamic IP would change; the static one stays.
    write(p, ip="static", state="stopped")
    p.gj("apply", "--auto-approve")
    assert machine(p)["state"] == "off" and machine(p)["public_ip"] == static
    write(p, ip="static")
    p.gj("apply", "--auto-approve")
    assert machine(p)["state"] == "ready" and machine(p)["public_ip"] == static
    assert ssh_host(p) == static

    # Destroy: the IP outlives the machine, so its release is gated like the terminate.
    poll("a checkpoint to pull", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    refused = p.gj("destroy", "--auto-approve", check=False)
    assert refused.returncode == 1
    ids = sorted(set(re.findall(r"--approve ([^\s`]+)", refused.stderr)))
    assert "psip.public_ip.release-ip" in ids and "psip.machine.terminate" in ids, refused.stderr
    assert [i["ip"] for i in live_ips(p)] == [static]
    p.gj("destroy", "--auto-approve", *[a for i in ids for a in ("--approve", i)])
    assert not live_ips(p)
    billing = [i for i in p.sim.bill()["items"] if i["rate_per_hour"] and not i["ended"]]
    assert billing == [], json.dumps(billing, indent=1)
    ip_lines = [i for i in p.sim.bill()["items"] if i["kind"] in ("ip", "ips", "public_ip")]
    assert ip_lines and all(i["ended"] and i["rate_per_hour"] == 0 for i in ip_lines), ip_lines
