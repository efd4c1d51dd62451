"""Switching a running Paperspace machine to a static IP: the plan says the machine will be stopped,
restarted, and the run relaunched (the IP type is only known to switch with the machine off)."""

from __future__ import annotations

from collections.abc import Callable

from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from tests.owners import machine as machine_name
from tests.plan.plan_helpers import NOW, ago, live

JOB = """
version: 1
name: seg
platform: paperspace
state: running
machine:
  gpu: A4000
  regions: [ny2]
  template: ml-in-a-box
  public_ip: static
storage:
  volume_gb: 100
"""


def test_static_ip_switch_on_a_running_machine_says_it_stops_and_restarts(
    write_job: Callable[..., object],
) -> None:
    machine = LiveResource(
        platform="paperspace",
        kind="machine",
        id="m1",
        name=machine_name("seg"),
        status="running",
        gpu_id="A4000",
        gpu_count=1,
        region="ny2",
        template="ml-in-a-box",
        volume_gb=100,
        public_ip_kind="dynamic",
        created_at=ago(3),
    )
    plan = build_plan([write_job(JOB)], live(machine), now=NOW, env={}, pull_records=None)  # type: ignore[list-item]
    ips = [a for a in plan.all_actions() if a.resource_kind == "public_ip" and a.kind is ActionKind.CREATE]
    assert [a.id for a in ips] == ["seg.public_ip.create"]
    assert any("stopped for the switch" in r and "relaunches" in r for r in ips[0].reasons)
