"""The survival matrix, enforced on disk and checked over real SSH."""

from __future__ import annotations

from tests.sim.conftest import create_pod, ssh, wait_pod


def test_stop_keeps_workspace_and_wipes_root_then_terminate_removes_both(sim, rp, ssh_key):
    key, pub = ssh_key
    pod = create_pod(rp, pub)
    assert pod["status"] == "PROVISIONING" and pod["ssh"]["direct"] is None
    pod = wait_pod(rp, pod["id"])
    d = pod["ssh"]["direct"]
    assert d["host"] == "127.0.0.1" and d["username"] == "root"
    ssh(key, d["host"], d["port"], "echo kept > /workspace/a && echo gone > /root/b && ps -e | wc -l")
    assert rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).json()["status"] == "EXITED"
    assert rp.get(f"/pods/{pod['id']}").json()["ssh"]["direct"] is None
    assert rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).status_code == 409
    rp.post(f"/pods/{pod['id']}/action", json={"action": "start"}).raise_for_status()
    pod2 = wait_pod(rp, pod["id"])
    d2 = pod2["ssh"]["direct"]
    assert d2["port"] != d["port"]  # a fresh port on every start
    out = ssh(key, d2["host"], d2["port"], "cat /workspace/a; ls /root").stdout
    assert out.strip() == "kept"
    pod_dir = sim.data_dir / "runpod" / "pods" / pod["id"]
    assert (pod_dir / "volume" / "a").exists()
    assert rp.delete(f"/pods/{pod['id']}").status_code == 204
    assert not pod_dir.exists()
    assert rp.get(f"/pods/{pod['id']}").status_code == 404
    assert ssh(key, d2["host"], d2["port"], "true", check=False).returncode != 0


def test_network_volume_survives_terminate_and_appears_in_a_new_pod(sim, rp, ssh_key):
    key, pub = ssh_key
    vol = rp.post("/network-volumes", json={"name": "gpujob-t-data", "size": 20, "dataCenter": "EU-RO-1"})
    assert vol.status_code == 201, vol.text
    vid = vol.json()["id"]
    mounts = {"network": [{"volumeId": vid, "path": "/workspace"}]}
    pod = wait_pod(rp, create_pod(rp, pub, mounts=mounts)["id"])
    assert pod["dataCenterId"] == "EU-RO-1"
    d = pod["ssh"]["direct"]
    ssh(key, d["host"], d["port"], "mkdir -p /workspace/ckpt && echo step-7 > /workspace/ckpt/latest")
    assert rp.post(f"/pods/{pod['id']}/action", json={"action": "terminate"}).status_code == 204
    pod2 = wait_pod(rp, create_pod(rp, pub, mounts=mounts)["id"])
    d2 = pod2["ssh"]["direct"]
    assert ssh(key, d2["host"], d2["port"], "cat /workspace/ckpt/latest").stdout.strip() == "step-7"
    assert rp.delete(f"/network-volumes/{vid}").status_code == 400  # still attached to pod2
    assert rp.patch(f"/network-volumes/{vid}", json={"size": 10}).status_code == 400  # grow-only
    assert rp.patch(f"/network-volumes/{vid}", json={"size": 30}).json()["size"] == 30


def test_restart_lands_on_a_new_host_with_a_new_host_key(sim, rp, ssh_key):
    _, pub = ssh_key
    pod = wait_pod(rp, create_pod(rp, pub)["id"])
    ctl = sim.data_dir / "runpod" / "pods" / pod["id"] / "ctl" / "host_key.pub"
    before = ctl.read_text()
    assert rp.post(f"/pods/{pod['id']}/action", json={"action": "restart"}).status_code == 200
    pod2 = wait_pod(rp, pod["id"])
    assert pod2["ssh"]["direct"]["port"] != pod["ssh"]["direct"]["port"]
    assert ctl.read_text() != before


def test_paperspace_block_storage_persists_across_stop_and_dynamic_ip_changes(sim, ps, ssh_key):
    key, pub = ssh_key
    script = ps.post(
        "/startup-scripts",
        json={
            "name": "gpujob-t-ssh",
            "script": f"mkdir -p ~/.ssh\necho '{pub} me' >> ~/.ssh/authorized_keys\n",
            "isRunOnce": True,
        },
    ).json()
    r = ps.post(
        "/machines",
        json={
            "name": "gpujob-t",
            "machineType": "A4000",
            "templateId": "t0nspur5",
            "diskSize": 50,
            "region": "East Coast (NY2)",
            "startupScriptId": script["id"],
            "startOnCreate": True,
        },
    )
    assert r.status_code == 200, r.text
    mid = r.json()["data"]["id"]
    from tests.sim.conftest import wait_for

    m = wait_for(lambda: ps.get(f"/machines/{mid}").json(), lambda m: m["state"] == "ready")
    port = int(sim.env["GPUJOB_PAPERSPACE_SSH_PORT"])
    ssh(key, m["publicIp"], port, "echo w > /workspace/a; echo r > /root/b; echo t > /tmp/c")
    ev = ps.patch(f"/machines/{mid}/stop", json={}).json()["event"]
    wait_for(lambda: ps.get(f"/machine-events/{ev['id']}").json(), lambda e: e["state"] == "done")
    off = ps.get(f"/machines/{mid}").json()
    assert off["state"] == "off" and off["publicIp"] is None
    sim.engine.options.boot_seconds = 0.5  # keep it in "starting" long enough to start it twice
    ps.patch(f"/machines/{mid}/start", json={}).raise_for_status()
    again = ps.patch(f"/machines/{mid}/start", json={})
    assert again.status_code == 400 and again.json() == {
        "code": "BAD_REQUEST",
        "message": "This machine is currently starting.",
    }
    m2 = wait_for(lambda: ps.get(f"/machines/{mid}").json(), lambda m: m["state"] == "ready")
    assert m2["publicIp"] != m["publicIp"]
    assert ssh(key, m2["publicIp"], port, "cat /workspace/a /root/b; ls /tmp").stdout.split() == ["w", "r"]
    ps.delete(f"/machines/{mid}").raise_for_status()
    assert ps.get(f"/machines/{mid}").status_code == 404
    assert not (sim.data_dir / "paperspace" / "machines" / mid).exists()


def test_two_pods_mount_one_network_volume_at_once_only_in_its_data_center(sim, rp, ssh_key):
    key, pub = ssh_key
    vid = rp.post("/network-volumes", json={"name": "gpujob-t-shared", "size": 20, "dataCenter": "EU-RO-1"}).json()["id"]  # fmt: skip
    mounts = {"network": [{"volumeId": vid, "path": "/workspace"}]}
    elsewhere = rp.post("/pods", json={"name": "gpujob-t", "image": "img", "gpu": {"id": "NVIDIA A40", "count": 1},
                                       "env": {"PUBLIC_KEY": pub}, "mounts": mounts, "dataCenterIds": ["US-KS-2"]})  # fmt: skip
    assert elsewhere.status_code == 400 and "EU-RO-1" in elsewhere.text  # RP7: only in its data center
    one = wait_pod(rp, create_pod(rp, pub, mounts=mounts, dataCenterIds=["EU-RO-1"])["id"])
    two = wait_pod(rp, create_pod(rp, pub, mounts=mounts)["id"])
    assert {one["dataCenterId"], two["dataCenterId"]} == {"EU-RO-1"}
    d1, d2 = one["ssh"]["direct"], two["ssh"]["direct"]
    ssh(key, d1["host"], d1["port"], "mkdir -p /workspace/state && echo 0 > /workspace/state/cell-a.exit")
    assert ssh(key, d2["host"], d2["port"], "cat /workspace/state/cell-a.exit").stdout.strip() == "0"
    ssh(key, d2["host"], d2["port"], "echo from-two > /workspace/two")
    assert rp.post(f"/pods/{one['id']}/action", json={"action": "terminate"}).status_code == 204
    assert ssh(key, d2["host"], d2["port"], "cat /workspace/two /workspace/state/cell-a.exit").stdout.split() == ["from-two", "0"]  # fmt: skip
    assert rp.delete(f"/network-volumes/{vid}").status_code == 400  # pod two still holds it
