"""`gpujob sim inject --gpu` takes the job file's GPU names (RTX4090, not "NVIDIA GeForce RTX 4090"),
refuses a name that matches nothing, and `gpujob sim status` lists the faults still active."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
from pathlib import Path

import httpx
import pytest

from gpujob.sim.fault_gpus import NoSuchGpu, resolve
from gpujob.sim.fault_words import fault_lines
from gpujob.sim.prices import Prices
from gpujob.sim.testing import running_simulator


def test_an_alias_resolves_to_the_platform_ids_and_a_stranger_is_refused() -> None:
    rp, ps = Prices("runpod"), Prices("paperspace")
    assert resolve("RTX4090", [rp]) == {"nvidia geforce rtx 4090"}
    assert resolve("rtx 4090", [rp]) == {"nvidia geforce rtx 4090"}  # a part of the id, as before
    assert {"a4000", "a4000x2"} <= resolve("A4000", [ps])  # the multi-GPU machine types too
    assert "a4000" not in resolve("A40", [rp, ps])  # an exact alias is not a prefix of another
    with pytest.raises(NoSuchGpu, match=r"no simulated GPU matches --gpu 'RTX9090'.*RTX4090"):
        resolve("RTX9090", [rp, ps])


def test_capacity_by_alias_fails_the_next_create_of_that_gpu(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "sim", pods=False) as sim:
        with pytest.raises(urllib.error.HTTPError) as err:
            sim.inject("capacity", gpu="RTX9090")
        assert (
            err.value.code == 400 and "no simulated GPU matches --gpu 'RTX9090'" in err.value.read().decode()
        )
        assert sim.control("faults")["active"] == []
        sim.inject("capacity", gpu="RTX4090")
        h = {"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"}
        body = {"name": "gpujob-x", "image": "i", "gpu": {"id": "NVIDIA A40"}, "ports": ["22/tcp"]}
        assert httpx.post(f"{sim.runpod_url}/v2/pods", headers=h, json=body).status_code < 300  # another GPU
        body["gpu"] = {"id": "NVIDIA GeForce RTX 4090"}
        refused = httpx.post(f"{sim.runpod_url}/v2/pods", headers=h, json=body)
        assert refused.status_code == 400 and "capacity" in refused.text.lower()
        assert sim.control("faults")["active"] == []  # consumed


def test_fault_lines_name_the_options_given() -> None:
    assert fault_lines([]) == "none"
    text = fault_lines(
        [
            {"fault": "capacity", "count": 1, "gpu": "RTX4090", "status": 500, "seconds": 0.0,
             "public_port": True, "factor": 1.0},
            {"fault": "http_error", "path": "/v2/pods", "status": 500, "seconds": 0.0},
        ]
    )  # fmt: skip
    assert (
        text
        == "capacity --gpu RTX4090 (next 1)\n"
        + " " * 14
        + "http_error --path /v2/pods --status 500 (until cleared)"
    )


def test_sim_status_lists_the_active_faults(tmp_path: Path) -> None:
    env = {**os.environ, "GPUJOB_SIM_DIR": str(tmp_path / "simd")}

    def sim(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gpujob", "sim", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    assert sim("up", "--no-pods").returncode == 0
    try:
        wrong = sim("inject", "capacity", "--gpu", "RTX9090")
        assert wrong.returncode == 1 and "no simulated GPU matches --gpu 'RTX9090'" in wrong.stderr
        assert "faults      none" in sim("status").stdout
        assert sim("inject", "capacity", "--gpu", "RTX4090").returncode == 0
        assert "faults      capacity --gpu RTX4090 (next 1)" in sim("status").stdout
    finally:
        assert sim("down").returncode == 0
