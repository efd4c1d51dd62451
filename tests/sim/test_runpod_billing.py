"""The simulator's RunPod billing endpoints answer in the v2 spec's shape (validated against the OpenAPI
document) with the amounts its meters billed, bucket by bucket, and honour the spec's query rules."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from gpujob.profile import HOURS_PER_MONTH, load_profile
from gpujob.sim.testing import Sim
from tests.fixtures.bodies import v2_errors, v2_response_schema
from tests.sim.conftest import create_pod, wait_pod

RP = load_profile("runpod")


def _valid(body: object, path: str) -> None:
    schema = v2_response_schema("GET", path, "200")
    assert schema is not None
    assert v2_errors(body, schema) == []


def test_pod_and_volume_billing_in_the_spec_shape_and_to_the_meter(
    sim: Sim, rp: httpx.Client, ssh_key
) -> None:  # type: ignore[no-untyped-def]
    vol = rp.post("/network-volumes", json={"name": "v", "size": 100, "dataCenter": "EU-RO-1"})
    assert vol.status_code in (200, 201), vol.text
    pod = wait_pod(rp, create_pod(rp, ssh_key[1], disk=50)["id"])
    sim.advance(30 * 3600)  # spans at least one UTC midnight
    rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).raise_for_status()
    sim.advance(5400)  # 1.5 h stopped: the network volume bills 2 started hours, per hour

    pods = rp.get("/billing/pods", params={"podId": pod["id"], "bucketSize": "day"})
    assert pods.status_code == 200, pods.text
    _valid(pods.json(), "/v2/billing/pods")
    body = pods.json()
    assert body["metadata"]["query"]["podId"] == pod["id"] and len(body["records"]) >= 2
    metered = {i["item"]: i["usd"] for i in sim.bill()["items"] if i["id"] == pod["id"]}
    totals = body["metadata"]["totals"]
    assert totals["gpuAmount"] == pytest.approx(metered["gpu"], rel=1e-9)
    assert totals["diskAmount"] == pytest.approx(metered["container_disk"] + metered["volume_disk"], rel=1e-9)
    assert sum(r["totalAmount"] for r in body["records"]) == pytest.approx(totals["totalAmount"], rel=1e-9)
    for r in body["records"]:  # day buckets start at UTC midnight
        start = datetime.fromisoformat(r["startTime"].replace("Z", "+00:00"))
        assert (start.hour, start.minute, start.tzinfo) == (0, 0, UTC)

    vols = rp.get(
        "/billing/network-volumes", params={"networkVolumeId": vol.json()["id"], "bucketSize": "hour"}
    )
    _valid(vols.json(), "/v2/billing/network-volumes")
    total = vols.json()["metadata"]["totals"]
    hours = 30 + 2  # billed by the started hour: 31.5 h of life -> 32 hours
    assert (
        total["standardAmount"] == total["totalAmount"] == pytest.approx(100 * 0.07 / HOURS_PER_MONTH * hours)
    )
    assert all(r["highPerformanceAmount"] == 0 for r in vols.json()["records"])

    overall = rp.get("/billing", params={"lastN": 3, "bucketSize": "day"})
    _valid(overall.json(), "/v2/billing")
    assert overall.json()["metadata"]["totals"]["totalAmount"] == pytest.approx(
        sim.bill()["totals"]["runpod"]
    )


def test_query_rules_of_the_spec(sim: Sim, rp: httpx.Client) -> None:
    both = rp.get("/billing/pods", params={"lastN": 2, "startTime": "2026-01-01T00:00:00Z"})
    assert both.status_code == 400 and both.headers["content-type"] == "application/problem+json"
    assert rp.get("/billing/pods", params={"bucketSize": "minute"}).status_code == 400
    empty = rp.get("/billing/pods", params={"startTime": "2026-01-01T07:30:00Z", "bucketSize": "day"}).json()
    _valid(empty, "/v2/billing/pods")
    assert empty["records"] == [] and empty["metadata"]["query"]["startTime"] == "2026-01-01T00:00:00.000Z"
