"""The provider clients driving the simulator through whole lifecycles: spot pods over GraphQL, the
Paperspace startup-script SSH key and its dynamic / static IPs, snapshots, and one audit-style read
of a seeded account that must return every billable resource, normalised, with its rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.errors import ProviderError
from gpujob.live import LiveResource
from gpujob.providers.base import LaunchRequest, VolumeRequest
from gpujob.providers.runpod.client import GraphQLRetired
from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.session import connect
from tests.providers.conftest import Backend, sim_backend

pytestmark = pytest.mark.anyio

RTX = "NVIDIA GeForce RTX 4090"
POD = LaunchRequest(name="gpujob-bert", gpu_id=RTX, image="img", volume_gb=20, region="US-KS-2")
MACHINE = LaunchRequest(name="gpujob-bert", gpu_id="A4000", template="tkni3aa4", region="ny2", volume_gb=50)


def api(b: Backend, platform: str) -> httpx.Client:
    """A raw client on the simulator, for what the provider protocol does not do (seeding)."""
    if platform == "runpod":
        url, key = b.env["GPUJOB_RUNPOD_API_URL"], b.env["RUNPOD_API_KEY"]
    else:
        url, key = b.env["GPUJOB_PAPERSPACE_API_URL"], b.env["PAPERSPACE_API_KEY"]
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=20)


def by_id(resources: list[LiveResource]) -> dict[str, LiveResource]:
    return {r.id: r for r in resources}


async def test_spot_pod_rented_over_graphql_and_resumed_with_a_bid(simg: Backend) -> None:
    simb = simg
    async with simb.open({"runpod"}) as p:
        rp = p["runpod"]
        if simg.graphql_gone:
            # 2027: spot: true cannot be had at all, and says so (not "check the job file")
            with pytest.raises(GraphQLRetired) as info:
                await rp.create_machine(POD.model_copy(update={"spot": True, "bid_per_gpu": 0.4}))
            assert "HTTP 410" in str(info.value) and "machine.spot: prefer" in (info.value.hint or "")
            assert simb.sim.engine.state.pods == {}
            # prefer: an on-demand pod, which v2 stops and starts like any other
            pod = await rp.create_machine(POD.model_copy(update={"spot": "prefer"}))
            assert not pod.spot and not simb.sim.engine.state.pods[pod.id].interruptible
            resumed = await rp.start(await rp.stop(pod))
            assert resumed.status == "running" and resumed.ssh is not None and not resumed.spot
            await rp.terminate(resumed)
            return
        pod = await rp.create_machine(POD.model_copy(update={"spot": True, "bid_per_gpu": 0.4}))
        sim_pod = simb.sim.engine.state.pods[pod.id]
        assert sim_pod.interruptible and sim_pod.bid_per_gpu == 0.4
        # v2 has no interruptible flag: gpujob tells its spot pods by its own env marker.
        assert pod.spot and pod.status == "running" and pod.ssh is not None
        assert by_id(await rp.list_resources())[pod.id].spot

        assert simb.sim.inject("preempt", pod_id=pod.id, grace=0)["preempted"] == [pod.id]
        preempted = await rp.get("pod", pod.id)
        assert preempted is not None and preempted.status == "stopped" and preempted.spot

        resumed = await rp.start(preempted)
        assert resumed.status == "running" and resumed.ssh is not None
        assert (
            simb.sim.engine.state.pods[pod.id].bid_per_gpu == 0.4
        )  # resume bids what create bid, not on-demand
        await rp.terminate(resumed)
        assert await rp.get("pod", pod.id) is None
        preferred = await rp.create_machine(POD.model_copy(update={"name": "gpujob-p", "spot": "prefer"}))
        assert preferred.spot and simb.sim.engine.state.pods[preferred.id].interruptible  # spot while offered
        await rp.terminate(preferred)


async def test_a_stopped_spot_pod_cannot_resume_once_graphql_is_gone(simb: Backend) -> None:
    async with simb.open({"runpod"}) as p:
        rp = p["runpod"]
        pod = await rp.create_machine(POD.model_copy(update={"spot": True, "bid_per_gpu": 0.4}))
        stopped = await rp.stop(pod)
        simb.sim.engine.options.runpod_graphql = "gone"  # the calendar turns while the pod is stopped
        with pytest.raises(GraphQLRetired, match="cannot be resumed") as info:
            await rp.start(stopped)
        assert "same network volume" in (info.value.hint or "")
        still = await rp.get("pod", pod.id)
        assert still is not None and still.status == "stopped"
        # remembered for the command: the next GraphQL read fails at once, without asking (the
        # simulator answers again, and still the client does not call)
        simb.sim.engine.options.runpod_graphql = "live"
        with pytest.raises(GraphQLRetired, match="reading the balance"):
            await rp.account()
        assert rp.spot_unavailable() == "HTTP 410 Gone"


async def test_limited_graphql_is_paced_by_its_retry_after(tmp_path: Path) -> None:
    with sim_backend(tmp_path / "sim", runpod_graphql="limited", pods=False) as b:
        async with b.open({"runpod"}) as p:
            for _ in range(4):  # every third call is a 429 with Retry-After: 1
                account = await p["runpod"].account()
                assert account is not None and account.balance_usd is not None
        assert any(1.0 <= s <= 1.6 for s in b.clock.sleeps), b.clock.sleeps


async def test_paperspace_startup_script_key_and_dynamic_ip(simb: Backend, tmp_path: Path) -> None:
    key_path, public_key = ensure_project_key(tmp_path / "state")
    known = tmp_path / "state" / "known_hosts.json"
    async with simb.open({"paperspace"}) as p:
        ps = p["paperspace"]
        m = await ps.create_machine(MACHINE.model_copy(update={"ssh_public_key": public_key}))
        (script,) = simb.sim.engine.state.scripts.values()
        assert script.name == "gpujob-bert-ssh" and script.is_run_once and public_key in script.script
        first = ps.ssh_endpoint(m)
        assert first is not None and first.host == m.public_ip and m.public_ip_kind == "dynamic"
        async with connect(first, key_path=key_path, known_hosts=known, resource_id=m.id) as remote:
            assert (await remote.run("echo hello > /workspace/kept && echo ok")).stdout.strip() == "ok"

        stopped = await ps.stop(m)
        assert stopped.status == "stopped" and ps.ssh_endpoint(stopped) is None and not stopped.public_ip
        started = await ps.start(stopped)
        second = ps.ssh_endpoint(started)
        assert second is not None and second.host != first.host  # a dynamic IP is new at every start
        async with connect(second, key_path=key_path, known_hosts=known, resource_id=m.id) as remote:
            assert (await remote.run("cat /workspace/kept")).stdout.strip() == "hello"
        # the audit sees the script as its machine's; a script no machine is named for is a leftover
        simb.sim.engine.state.scripts["s-left"] = script.model_copy(
            update={"id": "s-left", "name": "gpujob-old-ssh"}
        )
        seen = {r.name: r for r in await ps.audit_resources() if r.kind == "startup_script"}
        assert seen["gpujob-bert-ssh"].machine_id == m.id and seen["gpujob-old-ssh"].machine_id is None
        await ps.terminate(started)
        # gpujob deletes the startup script it made for the machine when the machine goes, no other
        assert [s.name for s in simb.sim.engine.state.scripts.values()] == ["gpujob-old-ssh"]


async def test_static_ip_claim_assign_release(simb: Backend) -> None:
    async with simb.open({"paperspace"}) as p:
        ps: Any = p["paperspace"]
        m = await ps.create_machine(MACHINE.model_copy(update={"public_ip": "static"}))
        assert m.public_ip_kind == "static" and m.public_ip
        owned = [r for r in await ps.list_resources() if r.kind == "public_ip"]
        assert [(r.id, r.name, r.machine_id) for r in owned] == [(m.public_ip, "gpujob-bert", m.id)]
        again = await ps.start(await ps.stop(m))
        assert again.public_ip == m.public_ip  # a static IP survives stop / start

        bare = await ps.create_machine(MACHINE.model_copy(update={"name": "gpujob-ip", "public_ip": "none"}))
        assert bare.public_ip is None and ps.ssh_endpoint(bare) is None
        claimed = await ps.claim_ip("ny2", bare.id)
        assert claimed.machine_id == bare.id and claimed.public_ip_kind == "static"
        refreshed = await ps.get("machine", bare.id)
        assert refreshed.public_ip == claimed.id and refreshed.public_ip_kind == "static"

        await ps.terminate(again)  # the machine goes, its static IP stays (and bills) until released
        leftover = by_id(await ps.list_resources())[m.public_ip]
        assert leftover.kind == "public_ip" and leftover.machine_id is None and leftover.name == ""
        for ip in (leftover, claimed):
            await ps.release_ip(ip)
            await ps.release_ip(ip)  # already released: fine
        assert not [r for r in await ps.list_resources() if r.kind == "public_ip"]
        assert (await ps.get("machine", bare.id)).public_ip is None


async def test_snapshot_listed_then_deleted(simb: Backend) -> None:
    async with simb.open({"paperspace"}) as p:
        ps = p["paperspace"]
        m = await ps.create_machine(MACHINE.model_copy(update={"public_ip": "none"}))
        with api(simb, "paperspace") as raw:
            r = raw.post("/snapshots", json={"machineId": m.id, "name": "gpujob-bert-snap"})
            assert r.status_code == 200 and r.json()["event"]["name"] == "snapshot-create"
        (snap,) = [r for r in await ps.list_resources() if r.kind == "snapshot"]
        assert (snap.name, snap.machine_id, snap.status) == ("gpujob-bert-snap", m.id, "available")
        assert snap.attributes["machine_name"] == "gpujob-bert"
        await ps.delete_snapshot(snap)
        assert await ps.get("snapshot", snap.id) is None
        assert simb.sim.engine.state.snapshots[snap.id].ended_at is not None
        await ps.delete_snapshot(snap)  # already gone: fine


async def test_list_resources_returns_every_billable_resource(simb: Backend) -> None:
    async with simb.open({"runpod", "paperspace"}) as p:
        rp, ps = p["runpod"], p["paperspace"]
        up = await rp.create_machine(POD)
        down = await rp.stop(await rp.create_machine(POD.model_copy(update={"name": "gpujob-parked"})))
        vol = await rp.create_volume(VolumeRequest(name="gpujob-bert-data", size_gb=50, region="US-KS-2"))
        on = await ps.create_machine(MACHINE)
        off = await ps.stop(await ps.create_machine(MACHINE.model_copy(update={"name": "gpujob-off"})))
        with api(simb, "runpod") as raw:
            tpl = raw.post("/templates", json={"name": "gpujob-tpl", "image": "img"}).json()
            reg = raw.post("/registries", json={"name": "hub", "username": "u", "password": "p"}).json()
        with api(simb, "paperspace") as raw:
            ip = raw.post("/public-ips", json={"region": "ny2"}).json()
            snap = raw.post("/snapshots", json={"machineId": off.id, "name": "gpujob-off-snap"}).json()
            ctpl = raw.post("/custom-templates", json={"machineId": off.id, "name": "gpujob-ct"}).json()
            net = raw.post("/private-networks", json={"name": "n", "region": "ny2"}).json()
            body = {"name": "gpujob-drive", "networkId": net["id"], "region": "ny2", "size": 100}
            drive = raw.post("/shared-drives", json=body).json()

        listed = by_id(await rp.list_resources() + await ps.list_resources())

    bill = simb.sim.bill()
    rate = {(i["id"], i["item"]): i["rate_per_hour"] for i in bill["items"]}
    billable = {i["id"] for i in bill["items"] if not i["ended"]}
    assert billable <= set(listed)  # nothing that bills is invisible to gpujob (and so to the audit)
    expected = {
        # id: (kind, status, cost_per_hour as the platform reports it)
        up.id: ("pod", "running", pytest.approx(rate[(up.id, "gpu")])),
        down.id: ("pod", "stopped", 0.0),  # v2 `cost` is 0 once EXITED (the volume disk still bills)
        vol.id: ("network_volume", "available", None),
        tpl["id"]: ("template", "available", None),
        reg["id"]: ("registry_auth", "available", None),
        on.id: ("machine", "running", pytest.approx(rate[(on.id, "compute")])),
        off.id: ("machine", "stopped", None),
        ip["ip"]: ("public_ip", "available", None),
        snap["data"]["id"]: ("snapshot", "available", None),
        ctpl["data"]["id"]: ("template", "available", None),
        drive["id"]: ("shared_drive", "available", None),
    }
    assert set(listed) == set(expected)
    for rid, want in expected.items():
        r = listed[rid]
        assert (r.kind, r.status, r.cost_per_hour) == want, rid
    assert rate[(up.id, "gpu")] > 0 and rate[(down.id, "volume_disk")] > 0
    assert listed[up.id].ssh is not None and listed[down.id].ssh is None
    assert listed[on.id].ssh is not None and listed[off.id].ssh is None
    assert listed[vol.id].volume_gb == 50 and listed[drive["id"]].volume_gb == 100
    assert listed[on.id].region == "ny2" and listed[up.id].region == "US-KS-2"
    assert listed[snap["data"]["id"]].machine_id == off.id and listed[ctpl["data"]["id"]].machine_id == off.id


async def test_updates_in_place(simb: Backend) -> None:
    async with simb.open({"runpod", "paperspace"}) as p:
        rp: Any = p["runpod"]
        ps: Any = p["paperspace"]
        pod = await rp.stop(await rp.create_machine(POD))
        grown = await rp.update(pod, {"mounts": {"persistent": {"size": 40, "path": "/workspace"}}})
        assert grown.volume_gb == 40 and grown.status == "stopped"
        assert simb.sim.engine.state.pods[pod.id].volume_gb == 40

        m = await ps.create_machine(MACHINE.model_copy(update={"public_ip": "none"}))
        changed = await ps.update(m, {"autoShutdownEnabled": True, "autoShutdownTimeout": 3})
        assert changed.auto_shutdown_hours == 3 and changed.status == "running"
        with pytest.raises(ProviderError, match="must be off"):  # resizing needs a stop (PS trap 6)
            await ps.update(changed, {"diskSize": 100})
        resized = await ps.update(await ps.stop(changed), {"diskSize": 100})
        assert resized.volume_gb == 100 and resized.status == "stopped"


async def test_paperspace_start_while_starting_is_benign(tmp_path: Path) -> None:
    with sim_backend(tmp_path / "sim", boot_seconds=1.0) as b:
        async with b.open({"paperspace"}) as p:
            ps = p["paperspace"]
            m = await ps.stop(await ps.create_machine(MACHINE.model_copy(update={"public_ip": "none"})))
            with api(b, "paperspace") as raw:
                assert raw.patch(f"/machines/{m.id}/start", json={}).status_code == 200
                again = raw.patch(f"/machines/{m.id}/start", json={})
                assert again.status_code == 400 and "currently starting" in again.json()["message"]
            started = await ps.start(m)  # the same answer here is not an error: the state decides
            assert started.status == "running"
