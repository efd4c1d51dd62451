"""Metered billing on the simulated clock, every fault, pagination and concurrent latency."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from gpujob.profile import HOURS_PER_MONTH, load_profile
from tests.sim.conftest import create_pod, ssh, wait_for, wait_pod


def test_run_2h_stop_10h_start_terminate_bills_exactly_the_profile_prices(sim, rp, ssh_key):
    prof = load_profile("runpod")
    gpu = next(g for g in prof.gpus if g.platform_id == "NVIDIA A40")
    pod = wait_pod(rp, create_pod(rp, ssh_key[1], disk=50)["id"])
    sim.advance(2 * 3600)
    rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).raise_for_status()
    sim.advance(10 * 3600)
    rp.post(f"/pods/{pod['id']}/action", json={"action": "start"}).raise_for_status()
    wait_pod(rp, pod["id"])
    rp.delete(f"/pods/{pod['id']}").raise_for_status()
    sim.advance(5 * 3600)  # nothing bills after terminate
    per_gb_h = {
        t.id: (t.price_gb_month_running / HOURS_PER_MONTH, t.price_gb_month_stopped / HOURS_PER_MONTH)
        for t in prof.tiers
    }
    expected = {
        "gpu": gpu.price_hour * 1 * 2,
        "container_disk": 50 * per_gb_h["container_disk"][0] * 2,
        "volume_disk": 20 * per_gb_h["volume_disk"][0] * 2 + 20 * per_gb_h["volume_disk"][1] * 10,
    }
    assert per_gb_h["volume_disk"][1] == pytest.approx(2 * per_gb_h["volume_disk"][0])
    items = {i["item"]: i["usd"] for i in sim.bill()["items"] if i["id"] == pod["id"]}
    assert items == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert sim.bill()["totals"]["runpod"] == pytest.approx(sum(expected.values()), rel=1e-9)
    billing = rp.get("/billing/pods", params={"podId": pod["id"]}).json()
    assert billing["metadata"]["totals"]["totalAmount"] == pytest.approx(sum(expected.values()), rel=1e-9)


def test_capacity_and_create_500_and_low_balance(sim, rp, ssh_key):
    sim.inject("capacity", count=1, gpu="A40")
    r = rp.post("/pods", json={"name": "x", "image": "i", "gpu": {"id": "NVIDIA A40"}})
    assert (
        r.status_code == 400
        and "capacity" in r.json()["detail"]
        and r.headers["content-type"] == "application/problem+json"
    )
    sim.inject("capacity", count=1)
    gql = httpx.post(
        sim.env["GPUJOB_RUNPOD_GRAPHQL_URL"],
        headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
        json={
            "query": "mutation R($input: PodRentInterruptableInput!) { podRentInterruptable(input: $input) { id } }",
            "variables": {
                "input": {"gpuTypeId": "NVIDIA A40", "bidPerGpu": 5, "name": "s", "imageName": "i"}
            },
        },
    )
    assert gql.status_code == 200 and gql.json()["errors"][0]["message"].startswith(
        "There are no longer any instances available"
    )
    sim.inject("create_500_but_created")
    r = rp.post("/pods", json={"name": "gpujob-orphan", "image": "i", "gpu": {"id": "NVIDIA A40"}})
    assert r.status_code == 500
    assert [p["name"] for p in rp.get("/pods").json()["pods"]] == ["gpujob-orphan"]
    sim.inject("low_balance")
    wait_for(lambda: rp.get("/pods").json()["pods"][0]["status"], lambda s: s == "EXITED")
    r = rp.post("/pods", json={"name": "y", "image": "i", "gpu": {"id": "NVIDIA A40"}})
    assert r.status_code == 402
    sim.inject("clear")
    assert rp.post("/pods", json={"name": "y", "image": "i", "gpu": {"id": "NVIDIA A40"}}).status_code == 201


def test_http_error_drop_unknown_field_and_rate_limit_headers(sim, rp):
    sim.inject("http_error", status=429, retry_after=3, count=1, platform="runpod")
    r = rp.get("/pods")
    assert r.status_code == 429 and r.headers["Retry-After"] == "3"
    ok = rp.get("/pods")
    assert ok.status_code == 200 and "RateLimit" in ok.headers and "RateLimit-Policy" in ok.headers
    sim.inject("http_error", status=503, count=1)
    assert rp.get("/pods").status_code == 503
    sim.inject("drop", count=1)
    with pytest.raises(httpx.TransportError):
        rp.get("/pods")
    assert rp.get("/pods").status_code == 200
    r = rp.post("/pods", json={"name": "x", "image": "i", "gpu": {"id": "NVIDIA A40"}, "interruptible": True})
    assert (
        r.status_code == 422 and "additional properties 'interruptible' not allowed" in r.json()["errors"][0]
    )


def test_latency_does_not_serialise_requests(sim):
    sim.inject("latency", seconds=0.1, count=50)

    async def burst() -> float:
        async with httpx.AsyncClient(
            base_url=sim.env["GPUJOB_RUNPOD_API_URL"],
            headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
            limits=httpx.Limits(max_connections=60),
        ) as c:
            t = time.monotonic()
            rs = await asyncio.gather(*(c.get("/pods") for _ in range(50)))
            assert all(r.status_code == 200 for r in rs)
            return time.monotonic() - t

    elapsed = asyncio.run(burst())
    # Serialised, 50 × 0.1 s would take 5 s; the margin below that is for a loaded 2-core machine.
    assert 0.1 <= elapsed < 2.5


def test_preempt_sends_sigterm_then_kills_and_keeps_the_volume(sim, ssh_key):
    key, pub = ssh_key
    gql_url = sim.env["GPUJOB_RUNPOD_GRAPHQL_URL"]
    h = {"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"}
    q = "mutation R($input: PodRentInterruptableInput!) { podRentInterruptable(input: $input) { id desiredStatus } }"
    inp = {
        "gpuTypeId": "NVIDIA A40",
        "bidPerGpu": 5,
        "name": "gpujob-spot",
        "imageName": "i",
        "volumeInGb": 20,
        "ports": "22/tcp",
        "env": [{"key": "PUBLIC_KEY", "value": pub}],
    }
    pod_id = httpx.post(gql_url, headers=h, json={"query": q, "variables": {"input": inp}}).json()["data"][
        "podRentInterruptable"
    ]["id"]
    with httpx.Client(base_url=sim.env["GPUJOB_RUNPOD_API_URL"], headers=h) as rp:
        d = wait_pod(rp, pod_id)["ssh"]["direct"]
        ssh(
            key,
            d["host"],
            d["port"],
            "nohup sh -c 'trap \"echo got-term > /workspace/term; exit 0\" TERM; while :; do sleep 0.05; done' >/dev/null 2>&1 & sleep 0.2",
        )
        assert sim.inject("preempt", pod_id=pod_id)["preempted"] == [pod_id]
        assert rp.get(f"/pods/{pod_id}").json()["status"] == "EXITED"
    vol = sim.data_dir / "runpod" / "pods" / pod_id / "volume"
    assert (vol / "term").read_text().strip() == "got-term"
    gq = httpx.post(
        gql_url,
        headers=h,
        json={"query": f'query {{ pod(input: {{podId: "{pod_id}"}}) {{ id desiredStatus }} }}'},
    ).json()
    assert gq["data"]["pod"]["desiredStatus"] == "EXITED"


def test_zero_gpu_on_start(sim, rp, ssh_key):
    pod = wait_pod(rp, create_pod(rp, ssh_key[1])["id"])
    rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).raise_for_status()
    sim.inject("zero_gpu")
    rp.post(f"/pods/{pod['id']}/action", json={"action": "start"}).raise_for_status()
    assert wait_pod(rp, pod["id"])["gpu"]["count"] == 0


def test_paperspace_auto_shutdown_capacity_and_pagination(sim, ps):
    body = {
        "machineType": "A4000",
        "templateId": "t0nspur5",
        "diskSize": 50,
        "region": "ny2",
        "publicIpType": "none",
    }
    ids = [ps.post("/machines", json={**body, "name": f"gpujob-p{i}"}).json()["data"]["id"] for i in range(5)]
    seen, after, pages = [], None, 0
    while True:
        page = ps.get("/machines", params={"limit": 2, **({"after": after} if after else {})}).json()
        seen += [m["id"] for m in page["items"]]
        pages += 1
        if not page["hasMore"]:
            break
        after = page["nextPage"]
    assert pages == 3 and sorted(seen) == sorted(ids)
    wait_for(lambda: ps.get(f"/machines/{ids[0]}").json()["state"], lambda s: s == "ready")
    assert sim.inject("auto_shutdown", machine_id=ids[0])["stopped"] == [ids[0]]
    wait_for(lambda: ps.get(f"/machines/{ids[0]}").json()["state"], lambda s: s == "off")
    sim.inject("capacity", platform="paperspace", gpu="A4000")
    assert ps.get("/machine-availability", params={"machineType": "A4000", "region": "ny2"}).json() == {
        "available": False
    }
    r = ps.post("/machines", json={**body, "name": "x"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_REQUEST"
    # the auto-shutdown clock on the simulated timeline
    m = ps.post(
        "/machines", json={**body, "name": "gpujob-as", "autoShutdownEnabled": True, "autoShutdownTimeout": 1}
    ).json()["data"]
    wait_for(lambda: ps.get(f"/machines/{m['id']}").json()["state"], lambda s: s == "ready")
    sim.advance(3601)
    wait_for(lambda: ps.get(f"/machines/{m['id']}").json()["state"], lambda s: s == "off")
