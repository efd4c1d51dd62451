"""The plan's money equals the simulator's meter: read live state through the real providers, plan, then
let simulated time pass and compare the bill with the plan's running and parked rates (within a cent)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from gpujob.live import LiveState
from gpujob.plan.planner import build_plan
from gpujob.spec.load import load_specs
from tests.owners import PROJECT, machine
from tests.owners import volume as owned_volume

pytestmark = pytest.mark.sim

JOB = """
version: 1
name: meter
platform: runpod
state: {state}
machine:
  gpu: A40
  regions: [EU-RO-1]
  image: img@sha256:{digest}
  container_disk_gb: 40
storage:
  network_volume: {{name: ckpts, size_gb: 200}}
checkpoint:
  dir: /workspace/ckpt
  interval: 30m
""".replace("{digest}", "cd" * 32)


def _read(env: dict[str, str], ids: list[tuple[str, str]]) -> LiveState:
    """Live state through the real RunPod provider: the job's resources by id, plus live quotes.
    (By id rather than list_resources(): the simulator does not serve GET /v2/registries yet.)"""
    from gpujob.providers.registry import open_providers

    async def go() -> LiveState:
        async with open_providers({"runpod"}, env=env) as providers:
            p = providers["runpod"]
            found = await asyncio.gather(*(p.get(kind, rid) for kind, rid in ids))
            return LiveState(
                read_at=datetime.now(UTC), resources=[r for r in found if r], quotes=await p.quotes()
            )

    return asyncio.run(go())


def _wait_status(rp: httpx.Client, pod_id: str, status: str) -> None:
    deadline = time.monotonic() + 20
    while rp.get(f"/pods/{pod_id}").json().get("status") != status:
        assert time.monotonic() < deadline, f"pod never reached {status}"
        time.sleep(0.02)


def test_running_and_parked_rates_match_the_simulated_bill(tmp_path: Path) -> None:
    from gpujob.sim.podproc import namespaces_available
    from gpujob.sim.testing import running_simulator

    ok, why = namespaces_available()
    if not ok:
        pytest.skip(why)
    with running_simulator(tmp_path / "sim", speed=0, provision_seconds=0.01, boot_seconds=0.0) as sim:
        env = dict(sim.env)
        with httpx.Client(
            base_url=env["GPUJOB_RUNPOD_API_URL"],
            headers={"Authorization": f"Bearer {env['RUNPOD_API_KEY']}"},
            timeout=20,
        ) as rp:
            vol = rp.post(
                "/network-volumes",
                json={"name": owned_volume("meter", "ckpts"), "size": 200, "dataCenter": "EU-RO-1"},
            )
            assert vol.status_code == 201, vol.text
            pod = rp.post(
                "/pods",
                json={
                    "name": machine("meter"),
                    "env": {"GPUJOB_PROJECT": PROJECT},
                    "image": "img@sha256:" + "cd" * 32,
                    "gpu": {"id": "NVIDIA A40", "count": 1},
                    "disk": 40,
                    "dataCenterIds": ["EU-RO-1"],
                    "mounts": {
                        "network": [{"volumeId": vol.json()["id"], "path": "/workspace"}],
                    },
                },
            )
            assert pod.status_code == 201, pod.text
            pod_id = pod.json()["id"]
            _wait_status(rp, pod_id, "RUNNING")
            ids = [("pod", pod_id), ("network_volume", vol.json()["id"])]

            (tmp_path / "job.yaml").write_text(JOB.format(state="running").lstrip())
            loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([tmp_path / "job.yaml"])]
            live = _read(env, ids)
            plan = build_plan(loaded, live, now=live.read_at, env={})
            job = plan.jobs[0]
            assert job.current_usd_per_hour > 0

            before = sim.bill()["totals"]["runpod"]
            sim.advance(10 * 3600)
            spent = sim.bill()["totals"]["runpod"] - before
            assert spent == pytest.approx(job.current_usd_per_hour * 10, abs=0.01)

            rp.post(f"/pods/{pod_id}/action", json={"action": "stop"}).raise_for_status()
            _wait_status(rp, pod_id, "EXITED")
            (tmp_path / "job.yaml").write_text(JOB.format(state="stopped").lstrip())
            loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([tmp_path / "job.yaml"])]
            live = _read(env, ids)
            plan = build_plan(loaded, live, now=live.read_at, env={})
            job = plan.jobs[0]
            assert [a.kind.value for a in job.actions] == ["no-op"]

            before = sim.bill()["totals"]["runpod"]
            sim.advance(720 * 3600)
            parked = sim.bill()["totals"]["runpod"] - before
            assert parked == pytest.approx(job.parked_usd_per_month, abs=0.01)
            assert parked == pytest.approx(
                200 * 0.07, abs=0.01
            )  # the network volume; a stopped container disk is free
