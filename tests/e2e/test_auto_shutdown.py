"""A changed Paperspace auto_shutdown is applied in place: the plan shows an update (no replace, no
warning), apply writes it as disable then enable (the simulator, like the platform, ignores a new
timer sent to a machine whose auto-shutdown is already on), and the new timer is the one that fires."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.e2e_support import Project, poll

JOB = """version: 1
name: psas
platform: paperspace
machine:
  gpu: [A4000]
  regions: [ny2]
  template: ubuntu-22.04
  auto_shutdown: {hours}h
storage:
  volume_gb: 50
"""
UPDATE = "psas.machine[auto_shutdown].update"
HOUR = 3600.0


def machine(p: Project) -> dict[str, Any]:
    (m,) = [m for m in p.sim.control("state")["machines"].values() if m.get("ended_at") is None]
    return dict(m)


def test_auto_shutdown_change_is_an_in_place_update_that_takes(project: Project) -> None:
    p = project
    (p.dir / "job.yaml").write_text(JOB.format(hours=2))
    p.gj("apply", "--auto-approve")
    first = machine(p)
    assert (first["auto_shutdown_enabled"], first["auto_shutdown_timeout"]) == (True, 2)

    (p.dir / "job.yaml").write_text(JOB.format(hours=4))
    plan = p.gj("plan", "--detailed-exitcode", "-o", "plan.json", check=False)
    assert plan.returncode == 2 and UPDATE in plan.stdout, plan.stdout
    saved = json.loads((p.dir / "plan.json").read_text())
    acts = [(a["id"], a["kind"]) for j in saved["jobs"] for a in j["actions"] if a["kind"] != "no-op"]
    assert acts == [(UPDATE, "update")]
    assert not [f for f in plan.stdout.splitlines() if "PS2" in f]

    done = p.gj("apply", "plan.json")
    assert f"set auto-shutdown of {p.machine_name('psas')} to 4h" in done.stderr + done.stdout
    after = machine(p)
    assert after["id"] == first["id"] and after["state"] == "ready"
    assert (after["auto_shutdown_enabled"], after["auto_shutdown_timeout"]) == (True, 4)
    assert p.gj("plan", "--detailed-exitcode", check=False).returncode == 0

    # The old 2h timer would have fired by now; the new 4h one has not.
    p.sim.advance(3 * HOUR)
    assert machine(p)["state"] == "ready"
    p.sim.advance(1.5 * HOUR)
    poll("the 4h auto-shutdown to power the machine off", lambda: machine(p)["state"] == "off")
