"""Audit against a seeded simulator account: the figures equal the simulator's meter rates."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.audit.account import read_account
from gpujob.audit.classify import classify
from gpujob.audit.fix import FixJob, build_fix_plan
from gpujob.plan.model import ActionKind
from gpujob.profile import load_profile
from gpujob.providers.base import LaunchRequest, VolumeRequest
from tests.owners import OTHER, PROJECT, machine
from tests.owners import volume as owned_volume

pytestmark = pytest.mark.sim
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE audit-test"
A100 = "NVIDIA A100 80GB PCIe"
IMAGE = "runpod/pytorch:2.4"
ENV = {"GPUJOB_PROJECT": PROJECT}  # the ownership marker gpujob puts into a pod's env


def pod(name: str, **kw: object) -> LaunchRequest:
    base = dict(
        name=name, gpu_id=A100, image=IMAGE, container_disk_gb=20, region="US-KS-2", ssh_public_key=KEY
    )
    return LaunchRequest.model_validate({**base, **kw})


async def seed(env: dict[str, str]) -> None:
    from gpujob.providers.registry import open_providers

    async with open_providers({"runpod", "paperspace"}, env=env) as pv:
        rp, ps = pv["runpod"], pv["paperspace"]
        ckpt = await rp.create_volume(
            VolumeRequest(name=owned_volume("bert", "ckpt"), size_gb=100, region="US-KS-2")
        )
        await rp.create_volume(
            VolumeRequest(name=owned_volume("sweep", "data"), size_gb=300, region="US-KS-2")
        )
        # Standard tier, under 1 TB: the simulator's meters (gpujob/sim/meters.py) bill a high-performance
        # volume at the standard price and a >1 TB volume wholly at the over-1 TB rate, where the profile
        # says 0.14 $/GB/mo and marginal pricing; test_classify pins the audit to the profile for those.
        await rp.create_volume(VolumeRequest(name="sky-vol", size_gb=80, region="US-KS-2"))
        await rp.create_machine(pod(machine("bert"), network_volume_id=ckpt.id, env=ENV))
        await rp.stop(await rp.create_machine(pod(machine("sweep"), volume_gb=200, env=ENV)))
        await rp.stop(
            await rp.create_machine(pod(machine("llama", OTHER), volume_gb=30, env={"GPUJOB_PROJECT": OTHER}))
        )
        await rp.create_machine(pod("my-notebook", volume_gb=20, cloud="community"))
        render = await ps.create_machine(
            LaunchRequest(name=machine("render"), gpu_id="A4000", template="tkni3aa4", region="ny2", volume_gb=100,
                          ssh_public_key=KEY, public_ip="dynamic")
        )  # fmt: skip
        await ps.claim_ip("ny2", render.id)  # type: ignore[attr-defined]
        await ps.stop(render)
        await ps.create_machine(
            LaunchRequest(name="workstation", gpu_id="A4000", template="tkni3aa4", region="ny2", volume_gb=50,
                          ssh_public_key=KEY, public_ip="dynamic")
        )  # fmt: skip


def test_audit_figures_equal_simulator_meters(tmp_path: Path) -> None:
    from gpujob.sim.testing import running_simulator

    with running_simulator(tmp_path / "sim") as sim:
        asyncio.run(seed(dict(sim.env)))
        sim.advance(3 * 86400)
        live = asyncio.run(read_account(["runpod", "paperspace"], env=dict(sim.env)))
        assert not live.read_errors
        now = datetime.fromtimestamp(sim.now(), UTC)
        report = classify(live, local_jobs={"bert": PROJECT, "sweep": PROJECT, "render": PROJECT}, now=now, idle_threshold_s=86400,
                          profiles=load_profile)  # fmt: skip
        bill = sim.bill()

    meter_rate: dict[str, float] = {}
    for line in bill["items"]:
        if not line["ended"]:
            meter_rate[line["id"]] = meter_rate.get(line["id"], 0.0) + line["rate_per_hour"]
    by_name = {i.name: i for i in report.items if i.kind != "public_ip"}  # an IP carries its machine's name
    assert {
        machine("sweep"),
        owned_volume("sweep", "data"),
        "sky-vol",
        machine("render"),
        "my-notebook",
    } <= set(by_name)
    checked = 0
    for item in report.items:
        if item.id in meter_rate:
            assert item.usd_per_hour == pytest.approx(meter_rate[item.id], abs=1e-6), (item.name, item.meters)
            checked += 1
    assert checked >= 9
    assert by_name[machine("sweep")].gotcha == "RP4" and by_name[machine("sweep")].over_threshold
    assert by_name[machine("render")].gotcha == "PS1"
    ip = next(i for i in report.items if i.kind == "public_ip")
    assert (ip.owner, ip.job, ip.gotcha) == ("this-repo", "render", "PS1")
    assert report.exit_code == 2

    jobs = [FixJob(name=n, platform=p, spec_file=f"{n}.yaml", has_checkpoint=True, project=PROJECT)
            for n, p in (("bert", "runpod"), ("sweep", "runpod"), ("render", "paperspace"))]  # fmt: skip
    plan = build_fix_plan(report, live, jobs, now=now, profiles=load_profile)
    removed = [a for a in plan.all_actions() if a.kind is not ActionKind.PULL]
    assert all(a.gated for a in removed)
    assert {a.resource_name for a in removed} == {
        machine("sweep"),
        owned_volume("sweep", "data"),
        machine("render"),
        ip.name,
    }
    owned_idle = sum(i.usd_per_hour for i in report.items if i.owner == "this-repo" and i.idle)
    assert sum(meter_rate[a.resource_id or ""] for a in removed) == pytest.approx(owned_idle, abs=1e-6)
