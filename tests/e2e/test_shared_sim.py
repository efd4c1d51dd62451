"""The simulator the e2e tests share (one per xdist worker, tests/e2e/conftest.py) cannot carry one
test's world into the next: after a turn with a running sshd pod, a volume, a Paperspace machine, an armed
fault, an advanced clock and a changed option, the next turn sees an empty account, an empty bill, the
starting options and clock, and the pod's sshd is gone."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from gpujob.sim.testing import Sim
from tests.sim_pods import fresh_account, pod_simulator


def client(sim: Sim, platform: str) -> httpx.Client:
    key = "RUNPOD_API_KEY" if platform == "runpod" else "PAPERSPACE_API_KEY"
    url = sim.env["GPUJOB_RUNPOD_API_URL" if platform == "runpod" else "GPUJOB_PAPERSPACE_API_URL"]
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {sim.env[key]}"}, timeout=20)


def refuses(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_a_turn_on_the_shared_simulator_never_sees_the_previous_turns_world(tmp_path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "id")], check=True)
    pubkey = (tmp_path / "id.pub").read_text().strip()
    with pod_simulator(tmp_path / "sim", "the shared-simulator tests") as shared:
        started_at = shared.now()
        with fresh_account(shared) as sim, client(sim, "runpod") as rp, client(sim, "paperspace") as ps:
            body = {
                "name": "gpujob-first--aaaa1111",
                "image": "img",
                "gpu": {"id": "NVIDIA A40", "count": 1},
                "ports": ["22/tcp"],
                "env": {"PUBLIC_KEY": pubkey},
                "mounts": {"persistent": {"size": 20, "path": "/workspace"}},
            }
            created = rp.post("/pods", json=body)
            assert created.status_code == 201, created.text
            pod_id = created.json()["id"]
            deadline = time.monotonic() + 30
            while (pod := rp.get(f"/pods/{pod_id}").json()).get("status") != "RUNNING":
                assert time.monotonic() < deadline, pod
                time.sleep(0.02)  # polling interval, bounded by the deadline
            port = int(pod["ssh"]["direct"]["port"])
            assert not refuses(port)  # a real sshd answers
            vol = {"name": "gpujob-first--ckpts--aaaa1111", "size": 10, "dataCenter": "EU-RO-1"}
            assert rp.post("/network-volumes", json=vol).status_code == 201
            machine = {"machineType": "A4000", "templateId": "t0nspur5", "diskSize": 50, "region": "ny2"}
            made = ps.post("/machines", json={**machine, "name": "gpujob-first--aaaa1111"})
            assert made.status_code < 300, made.text
            sim.inject("capacity", count=5)
            sim.advance(7200)
            sim.engine.options.runpod_graphql = "gone"
            assert sim.bill()["totals"]["total"] > 0 and sim.leftovers()

        with fresh_account(shared) as sim, client(sim, "runpod") as rp, client(sim, "paperspace") as ps:
            assert sim.leftovers() == []
            assert rp.get("/pods").json()["pods"] == [] and rp.get(f"/pods/{pod_id}").status_code == 404
            assert rp.get("/network-volumes").json()["networkVolumes"] == []
            assert ps.get("/machines").json()["items"] == []
            bill = sim.bill()
            assert bill["items"] == [] and bill["totals"]["total"] == 0
            assert sim.control("faults")["active"] == []
            assert sim.engine.options.runpod_graphql == "live"
            assert sim.now() - started_at < 600  # a fresh clock, not two hours on
            assert refuses(port)  # the first turn's sshd is gone, not just forgotten
            assert not (sim.data_dir / "runpod" / "pods" / pod_id).exists()  # and its disk with it


@pytest.mark.parametrize("turn", ["first", "second", "third"])
def test_the_sim_fixture_hands_each_test_an_empty_account(sim: Sim, turn: str) -> None:
    """Each turn finds nothing and leaves a billing volume behind for the next one (when xdist runs them
    on one worker, which it mostly does) to not see."""
    assert sim.leftovers() == [] and sim.bill()["items"] == []
    with client(sim, "runpod") as rp:
        vol = {"name": f"gpujob-{turn}--ckpts--bbbb2222", "size": 10, "dataCenter": "EU-RO-1"}
        assert rp.post("/network-volumes", json=vol).status_code == 201
        assert [v["name"] for v in rp.get("/network-volumes").json()["networkVolumes"]] == [vol["name"]]
