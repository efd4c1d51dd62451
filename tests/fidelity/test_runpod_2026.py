"""The simulator's RunPod of 2026 against the pages it cites (issue #40), over real HTTP:

* pod migration (docs.runpod.io/references/troubleshooting/pod-migration, beta): a stopped pod comes
  back as "a new Pod with a new ID and IP address" with "the same specifications" and its data;
* Deploy When Available (docs.runpod.io/api-reference-v2/pods/get-a-queued-pod, list-queued-pods,
  cancel-a-queued-pod, last modified 2026-11-13): a queued pod is QUEUED until capacity comes, then
  DEPLOYED with `podId`; EXPIRED once `queue.expiresAt` passes; CANCELLED by DELETE; lists under
  `queuedPods` with `pagination`; it is not a pod and bills nothing;
* spot withdrawn while GraphQL answers (runpod/docs 8e5aebdb, 2026-05-06, REFERENCE.md §1.4): no
  interruptible price, a spot rent refused as an HTTP-200 GraphQL error, everything else answers.
Where the docs are silent the simulator's reading is stated in its module (gpujob.sim.rp_migrate,
gpujob.sim.runpod_queue, gpujob.sim.runpod_graphql.withdrawn); these tests hold it to that reading."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.sim.testing import Sim, running_simulator

RTX = "NVIDIA GeForce RTX 4090"
BODY: dict[str, Any] = {
    "name": "gpujob-f--p1",
    "image": "img",
    "gpu": {"id": RTX, "count": 1},
    "env": {"GPUJOB_PROJECT": "p1", "GPUJOB_OWNER": "sha256:abc"},
    "mounts": {"persistent": {"size": 10, "path": "/workspace"}},
}


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with running_simulator(tmp_path / "sim", pods=False, provision_seconds=0.0, boot_seconds=0.0) as s:
        yield s


def api(sim: Sim) -> httpx.Client:
    key = sim.env["RUNPOD_API_KEY"]
    return httpx.Client(base_url=sim.runpod_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def wait_status(c: httpx.Client, pod_id: str, status: str) -> dict[str, Any]:
    import time

    end = time.monotonic() + 20
    while time.monotonic() < end:
        pod = c.get(f"/v2/pods/{pod_id}").json()
        if pod.get("status") == status:
            return dict(pod)
        time.sleep(0.05)
    raise AssertionError(f"pod {pod_id} never became {status}")


def test_migration_gives_a_new_id_and_address_with_the_same_specification_and_data(sim: Sim) -> None:
    with api(sim) as c:
        old = c.post("/v2/pods", json=BODY).json()
        wait_status(c, old["id"], "RUNNING")
        refused = c.post("/_sim/inject", json={"fault": "migrate", "pod_id": old["id"]})
        assert refused.status_code == 409  # only a stopped pod is offered migration
        c.post(f"/v2/pods/{old['id']}/action", json={"action": "stop"})
        wait_status(c, old["id"], "EXITED")
        (sim.data_dir / "runpod" / "pods" / old["id"] / "volume" / "ckpt").write_text("step 7")
        moved = sim.inject("migrate", pod_id=old["id"])["migrated"]
        assert moved["from"] == old["id"] and moved["to"] != old["id"]  # "a new Pod with a new ID"
        assert c.get(f"/v2/pods/{old['id']}").status_code == 404  # replaced: one pod, never two
        new = wait_status(c, moved["to"], "RUNNING")  # the migration provisions and starts it
        for key in ("name", "image", "env", "mounts"):
            assert new[key] == old[key], key  # "the same specifications": the ownership markers too
        assert (sim.data_dir / "runpod" / "pods" / new["id"] / "volume" / "ckpt").read_text() == "step 7"
        with sim.engine.lock:  # a new machine: another host, so another address and host key
            assert sim.engine.state.pods[new["id"]].host == sim.engine.state.pods[old["id"]].host + 1


def test_a_queued_pod_waits_for_capacity_billing_nothing_then_deploys(sim: Sim) -> None:
    sim.inject("capacity", platform="runpod", count=1000)
    with api(sim) as c:
        q = c.post("/v2/queued-pods", json={**BODY, "queue": {"expiresAt": "2099-01-01T00:00:00Z"}})
        assert q.status_code == 201, q.text
        queued = q.json()
        assert queued["status"] == "QUEUED" and queued["podId"] is None
        assert c.get(f"/v2/queued-pods/{queued['id']}").json()["status"] == "QUEUED"
        assert c.get("/v2/pods").json()["pods"] == []  # a queued pod is not a pod
        listed = c.get("/v2/queued-pods").json()
        assert [x["id"] for x in listed["queuedPods"]] == [queued["id"]] and "pagination" in listed
        sim.inject("clear")
        done = c.get(f"/v2/queued-pods/{queued['id']}").json()
        assert done["status"] == "DEPLOYED" and done["podId"]  # "podId names it"
        assert c.get(f"/v2/pods/{done['podId']}").json()["name"] == BODY["name"]
    bill = sim.bill()
    assert [i for i in bill["items"] if i.get("id") == queued["id"]] == []  # the wait billed nothing


def test_a_queued_pod_expires_and_can_be_cancelled(sim: Sim) -> None:
    sim.inject("capacity", platform="runpod", count=1000)
    with api(sim) as c:
        past = c.post("/v2/queued-pods", json={**BODY, "queue": {"expiresAt": "2000-01-01T00:00:00Z"}}).json()
        assert past["status"] == "EXPIRED"  # queue.expiresAt passed without capacity
        q = c.post("/v2/queued-pods", json=BODY).json()
        assert c.delete(f"/v2/queued-pods/{q['id']}").status_code == 204
        assert c.get(f"/v2/queued-pods/{q['id']}").json()["status"] == "CANCELLED"
        assert c.get("/v2/queued-pods/nope").status_code == 404


def test_spot_withdrawn_prices_no_spot_and_refuses_a_rent_while_graphql_answers(sim: Sim) -> None:
    sim.engine.options.runpod_spot = "withdrawn"
    prices = "query { gpuTypes { id secureSpotPrice communitySpotPrice securePrice } }"
    rent = "mutation Rent($input: PodRentInterruptableInput!) { podRentInterruptable(input: $input) { id } }"
    rent_input = {"bidPerGpu": 0.5, "gpuTypeId": RTX, "gpuCount": 1, "cloudType": "SECURE", "name": "x",
                  "imageName": "img"}  # fmt: skip
    with api(sim) as c:
        types = c.post("/graphql", json={"query": prices}).json()["data"]["gpuTypes"]
        assert types and all(t["secureSpotPrice"] is None and t["communitySpotPrice"] is None for t in types)
        assert all(t["securePrice"] for t in types)  # on-demand is priced as before
        refused = c.post("/graphql", json={"query": rent, "variables": {"input": rent_input}})
        assert refused.status_code == 200  # GraphQL errors come as HTTP 200 (REFERENCE §1.1)
        (err,) = refused.json()["errors"]
        assert "no longer offered" in err["message"] and c.get("/v2/pods").json()["pods"] == []
        me = c.post("/graphql", json={"query": "query { myself { clientBalance } }"}).json()
        assert me["data"]["myself"]["clientBalance"] > 0  # GraphQL still answers: not `gone`
