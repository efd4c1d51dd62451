"""Fixtures for simulator tests: an in-process simulator on a frozen clock, an SSH key, helpers."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.sim.podproc import namespaces_available
from gpujob.sim.testing import Sim, running_simulator


def need_namespaces() -> None:
    ok, why = namespaces_available()
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"simulated pods need namespaces and CI must run them: {why}")
        pytest.skip(why)


@pytest.fixture(scope="session")
def ssh_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = tmp_path_factory.mktemp("key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "id")], check=True)
    return d / "id", (d / "id.pub").read_text().strip()


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    need_namespaces()
    with running_simulator(
        tmp_path / "sim", speed=0, provision_seconds=0.01, boot_seconds=0.0, preempt_grace=0.5
    ) as s:
        yield s


@pytest.fixture
def rp(sim: Sim) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=sim.env["GPUJOB_RUNPOD_API_URL"],
        headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
        timeout=20,
    ) as c:
        yield c


@pytest.fixture
def ps(sim: Sim) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=sim.env["GPUJOB_PAPERSPACE_API_URL"],
        headers={"Authorization": f"Bearer {sim.env['PAPERSPACE_API_KEY']}"},
        timeout=20,
    ) as c:
        yield c


def wait_for(fetch: Callable[[], Any], pred: Callable[[Any], bool], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if pred(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value}")
        time.sleep(0.02)


def wait_pod(rp: httpx.Client, pod_id: str, status: str = "RUNNING") -> dict[str, Any]:
    return dict(wait_for(lambda: rp.get(f"/pods/{pod_id}").json(), lambda p: p.get("status") == status))


def ssh(
    key: Path, host: str, port: int, command: str, check: bool = True, user: str = "root"
) -> subprocess.CompletedProcess[str]:
    cmd = [
        "ssh",
        "-i",
        str(key),
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "BatchMode=yes",
        "-p",
        str(port),
        f"{user}@{host}",
        command,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=check)


def create_pod(rp: httpx.Client, pubkey: str, **extra: Any) -> dict[str, Any]:
    body = {
        "name": "gpujob-t",
        "image": "img",
        "gpu": {"id": "NVIDIA A40", "count": 1},
        "ports": ["22/tcp"],
        "env": {"PUBLIC_KEY": pubkey},
        "mounts": {"persistent": {"size": 20, "path": "/workspace"}},
    }
    body.update(extra)
    r = rp.post("/pods", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())
