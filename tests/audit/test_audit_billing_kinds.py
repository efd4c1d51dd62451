"""`gpujob audit` sees what bills beside pods and volumes (real CLI, real HTTP, the simulator): the member
pods of an Instant Cluster (GET /v2/pods lists them only with includeClusterPods=true), the cluster
itself, and a serverless endpoint whose workers.min keeps a worker billing around the clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from gpujob.sim.testing import running_simulator


def test_audit_lists_cluster_pods_clusters_and_always_on_endpoints(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "sim", pods=False, provision_seconds=0.0, boot_seconds=0.0) as sim:
        rp = httpx.Client(
            base_url=sim.env["GPUJOB_RUNPOD_API_URL"],
            headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
        )
        with rp:
            compute = {"gpuTypeId": "NVIDIA A40", "gpuCountPerPod": 1, "podCount": 2}
            cluster = rp.post(
                "/clusters", json={"name": "ray-train", "type": "RAY", "image": "img", "compute": compute}
            )
            scaling = {"type": "QUEUE_DELAY", "queueDelay": 4}
            warm = rp.post("/serverless", json={"name": "always-warm", "type": "QUEUE", "image": "img", "scaling": scaling,
                                                "gpu": {"pools": ["ADA_24"]}, "workers": {"min": 1, "max": 3}})  # fmt: skip
            cold = rp.post("/serverless", json={"name": "scale-to-zero", "type": "QUEUE", "image": "img", "scaling": scaling,
                                                "gpu": {"pools": ["ADA_24"]}, "workers": {"min": 0, "max": 3}})  # fmt: skip
            assert cluster.status_code == warm.status_code == cold.status_code == 201
            assert rp.get("/pods").json()["pods"] == []  # what a plain listing (and the old audit) saw
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
        env.update(sim.env, NO_COLOR="1", CI="true")
        done = subprocess.run(
            [sys.executable, "-m", "gpujob", "audit", "--platform", "runpod", "--format", "json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        bill = sim.bill()
    assert done.returncode in (0, 1), done.stderr  # 1: something foreign idles; never a read error
    report = json.loads(done.stdout)
    assert report["read_errors"] == []
    items = {(i["kind"], i["name"]): i for i in report["items"]}
    members = [i for i in report["items"] if i["kind"] == "pod"]
    assert sorted(i["name"] for i in members) == ["ray-train-0", "ray-train-1"]
    assert all("of cluster" in i["detail"] and i["billable"] and i["usd_per_hour"] > 0 for i in members)
    group = items[("cluster", "ray-train")]
    assert not group["billable"] and "RAY of 2 pods" in group["detail"]  # billed as its pods, not twice
    endpoint = items[("endpoint", "always-warm")]
    assert endpoint["billable"] and "workers.min 1" in endpoint["detail"] and endpoint["rate_source"] == "api"
    # one ADA_24 worker around the clock: the cheapest type in the pool, as the catalog prices it
    assert abs(endpoint["usd_per_hour"] - 0.32) < 1e-9, endpoint  # RTX 4000 Ada, the cheapest in ADA_24
    assert "price.serverless" in endpoint["meters"][0]["source"]
    assert not items[("endpoint", "scale-to-zero")]["billable"]  # min 0: nothing bills while idle
    sim_rate = sum(i["rate_per_hour"] for i in bill["items"] if i["kind"] == "endpoint")
    assert abs(sim_rate - endpoint["usd_per_hour"]) < 1e-9  # the audit's figure is what the platform bills
