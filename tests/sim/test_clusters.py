"""Instant Clusters and private networks in the simulator: N real sshd member pods, each on its own
private loopback address the others reach; all or nothing on create; DELETE ends every member."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import httpx
import pytest

from gpujob.sim.testing import Sim
from tests.sim.conftest import ssh, wait_for

COMPUTE = {"gpuTypeId": "NVIDIA H100 80GB HBM3", "gpuCountPerPod": 1, "podCount": 2}


def _create(rp: httpx.Client, pubkey: str) -> httpx.Response:
    return rp.post(
        "/clusters",
        json={"name": "gpujob-mn", "type": "TRAINING", "image": "img", "compute": COMPUTE, "ports": ["22/tcp"],
              "env": {"PUBLIC_KEY": pubkey}, "mounts": {"persistent": {"size": 20, "path": "/workspace"}}},
    )  # fmt: skip


def test_a_cluster_is_two_sshd_pods_that_reach_each_other(
    rp: httpx.Client, sim: Sim, ssh_key: tuple[Path, str]
) -> None:
    key, pub = ssh_key
    made = _create(rp, pub)
    assert made.status_code == 201, made.text
    cid = made.json()["id"]
    pods = wait_for(
        lambda: rp.get(f"/clusters/{cid}/pods").json()["pods"],
        lambda ps: len(ps) == 2 and all(p["status"] == "RUNNING" for p in ps),
    )
    assert rp.get("/pods").json()["pods"] == []  # members only with includeClusterPods=true
    assert len(rp.get("/pods", params={"includeClusterPods": "true"}).json()["pods"]) == 2
    ips = [p["cluster"]["ip"] for p in pods]
    assert [p["cluster"]["rank"] for p in pods] == [0, 1] and len(set(ips)) == 2
    p0, p1 = (p["ssh"]["direct"] for p in pods)
    # rank 0 listens on its private address; rank 1 reaches it there
    serve = (
        f"nohup python3 -c \"import socket;s=socket.create_server(('{ips[0]}',29555));"
        "c,_=s.accept();c.sendall(b'hello')\" >/dev/null 2>&1 &"
    )
    ssh(key, p0["host"], p0["port"], serve)
    reach = (
        'python3 -c "import socket,time\nfor _ in range(100):\n try:\n'
        f"  print(socket.create_connection(('{ips[0]}',29555),5).recv(5).decode());break\n"
        ' except OSError: time.sleep(0.05)"'
    )
    assert ssh(key, p1["host"], p1["port"], reach).stdout.strip() == "hello"
    env = ssh(
        key, p1["host"], p1["port"], "echo $NODE_RANK $NUM_NODES $PRIMARY_ADDR $NODE_ADDR"
    ).stdout.split()
    assert env == ["1", "2", ips[0], ips[1]]
    cluster = rp.get(f"/clusters/{cid}").json()
    assert cluster["pods"] == {"total": 2, "byStatus": {"RUNNING": 2}} and cluster["primary"]["sshEndpoint"]
    assert rp.patch(f"/pods/{pods[0]['id']}", json={"name": "x"}).status_code == 409
    sim.advance(3600)  # an hour of both members: the cluster bills their sum
    billed = rp.get("/billing/clusters", params={"clusterId": cid, "bucketSize": "day"}).json()
    one = rp.get("/billing/pods", params={"podId": pods[0]["id"], "bucketSize": "day"}).json()
    total, each = billed["metadata"]["totals"]["totalAmount"], one["metadata"]["totals"]["totalAmount"]
    assert each > 0 and abs(total - 2 * each) < 0.01 * total
    assert rp.delete(f"/clusters/{cid}").status_code == 204
    assert rp.get("/pods", params={"includeClusterPods": "true"}).json()["pods"] == []


def test_a_cluster_without_capacity_leaves_nothing(rp: httpx.Client, sim, ssh_key: tuple[Path, str]) -> None:
    sim.inject("capacity", platform="runpod")
    failed = _create(rp, ssh_key[1])
    assert failed.status_code == 400
    assert rp.get("/clusters").json()["clusters"] == []
    assert rp.get("/pods", params={"includeClusterPods": "true"}).json()["pods"] == []


def test_machines_in_a_private_network_get_private_ips(ps: httpx.Client) -> None:
    net = ps.post("/private-networks", json={"name": "gpujob-mn", "region": "ny2"}).json()
    body = {"machineType": "A4000", "templateId": "t0nspur5", "diskSize": 50, "region": "ny2",
            "networkId": net["id"], "startOnCreate": False}  # fmt: skip
    a = ps.post("/machines", json={**body, "name": "a"}).json()["data"]
    b = ps.post("/machines", json={**body, "name": "b"}).json()["data"]
    assert a["networkId"] == b["networkId"] == net["id"]
    assert a["privateIp"] != b["privateIp"] and a["privateIp"].startswith("127.64.")
    assert ps.delete(f"/private-networks/{net['id']}").status_code == 400  # machines still in it


def test_one_member_is_lost_exited_and_comes_back_only_with_capacity(
    rp: httpx.Client, sim: Sim, ssh_key: tuple[Path, str]
) -> None:
    """`preempt --pod-id <member>`: RunPod lists the member EXITED at no cost, the other runs on; a start
    of it takes a `capacity` fault as a create does."""
    cid = _create(rp, ssh_key[1]).json()["id"]
    pods = wait_for(
        lambda: rp.get(f"/clusters/{cid}/pods").json()["pods"],
        lambda ps: len(ps) == 2 and all(p["status"] == "RUNNING" for p in ps),
    )
    assert sim.inject("preempt")["preempted"] == []  # on-demand members: no spot sweep hits them
    assert sim.inject("preempt", pod_id=pods[1]["id"], grace=0)["preempted"] == [pods[1]["id"]]
    after = {p["id"]: p for p in rp.get(f"/clusters/{cid}/pods").json()["pods"]}
    assert after[pods[1]["id"]]["status"] == "EXITED" and after[pods[1]["id"]]["cost"] == 0
    assert after[pods[0]["id"]]["status"] == "RUNNING"
    assert rp.get(f"/clusters/{cid}").json()["pods"]["byStatus"] == {"RUNNING": 1, "EXITED": 1}
    sim.inject("capacity", platform="runpod")
    refused = rp.post(f"/pods/{pods[1]['id']}/action", json={"action": "start"})
    assert refused.status_code == 400 and "no capacity" in refused.text
    assert (
        rp.post(f"/pods/{pods[1]['id']}/action", json={"action": "start"}).status_code == 200
    )  # the fault was used up


def test_one_machine_of_a_private_network_is_lost(ps: httpx.Client, sim: Sim) -> None:
    net = ps.post("/private-networks", json={"name": "gpujob-mn", "region": "ny2"}).json()
    body = {"machineType": "A4000", "templateId": "t0nspur5", "diskSize": 50, "region": "ny2"}
    inside = ps.post("/machines", json={**body, "name": "a", "networkId": net["id"]}).json()["data"]
    alone = ps.post("/machines", json={**body, "name": "b"}).json()["data"]
    wait_for(lambda: ps.get(f"/machines/{inside['id']}").json()["state"], lambda s: s == "ready")
    assert sim.inject("preempt", machine_id=inside["id"])["preempted"] == [inside["id"]]
    wait_for(lambda: ps.get(f"/machines/{inside['id']}").json()["state"], lambda s: s == "off")
    with pytest.raises(urllib.error.HTTPError) as refused:  # a lone machine's loss is auto_shutdown's
        sim.inject("preempt", machine_id=alone["id"])
    assert refused.value.code == 409
