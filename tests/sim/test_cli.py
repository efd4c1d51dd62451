"""`gpujob sim up` / `down` as a user runs them: a detached daemon, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from gpujob.sim import podproc
from tests.sim.conftest import need_namespaces, wait_for


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpujob", "sim", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_up_env_bill_down_leaves_no_process(tmp_path: Path, ssh_key):
    need_namespaces()
    env = {**os.environ, "GPUJOB_SIM_DIR": str(tmp_path / "simd")}
    up = run(["up", "--provision-seconds", "0.01"], env)
    assert up.returncode == 0, up.stderr
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in run(["env"], env).stdout.splitlines()
    )
    assert set(exports) >= {
        "GPUJOB_RUNPOD_API_URL",
        "GPUJOB_PAPERSPACE_API_URL",
        "RUNPOD_API_KEY",
        "GPUJOB_PAPERSPACE_SSH_PORT",
    }
    h = {"Authorization": f"Bearer {exports['RUNPOD_API_KEY']}"}
    base = exports["GPUJOB_RUNPOD_API_URL"]
    pod = httpx.post(
        f"{base}/pods",
        headers=h,
        json={
            "name": "gpujob-cli",
            "image": "i",
            "gpu": {"id": "NVIDIA A40"},
            "ports": ["22/tcp"],
            "env": {"PUBLIC_KEY": ssh_key[1]},
        },
    ).json()
    wait_for(
        lambda: httpx.get(f"{base}/pods/{pod['id']}", headers=h).json()["status"], lambda s: s == "RUNNING"
    )
    daemon_pid = int(__import__("json").loads((tmp_path / "simd" / "daemon.json").read_text())["pid"])
    assert podproc.find_strays(str((tmp_path / "simd").resolve()))  # the pod's namespace is running
    assert run(["inject", "latency", "--seconds", "0.01", "--count", "1"], env).returncode == 0
    assert "7200" in run(["clock", "advance", "2h"], env).stdout
    assert "total:" in run(["bill"], env).stdout
    down = run(["down"], env)
    assert down.returncode == 0, down.stderr
    assert (
        not Path(f"/proc/{daemon_pid}").exists()
        or "Z" in Path(f"/proc/{daemon_pid}/stat").read_text().split()[2]
    )
    assert podproc.find_strays(str((tmp_path / "simd").resolve())) == []
    leftovers = subprocess.run(
        ["pgrep", "-f", str(tmp_path / "simd")], capture_output=True, text=True
    ).stdout.split()
    assert leftovers == []
    assert "not running" in run(["status"], env).stdout
    # state persisted: a restarted simulator still knows the pod, brought back stopped
    assert run(["up", "--provision-seconds", "0.01"], env).returncode == 0
    try:
        assert (
            httpx.get(
                f"{run(['env'], env).stdout.split('GPUJOB_RUNPOD_API_URL=')[1].split()[0]}/pods/{pod['id']}",
                headers=h,
            ).json()["status"]
            == "EXITED"
        )
    finally:
        assert run(["down"], env).returncode == 0


def test_up_runpod_graphql_gone_answers_410_and_rest_goes_on(tmp_path: Path) -> None:
    env = {**os.environ, "GPUJOB_SIM_DIR": str(tmp_path / "simd")}
    up = run(["up", "--no-pods", "--runpod-graphql", "gone"], env)
    try:
        assert up.returncode == 0, up.stderr
        assert "GraphQL" in up.stderr and ": gone)" in up.stderr  # the mode is shown where the URLs are
        exports = dict(
            line.removeprefix("export ").split("=", 1) for line in run(["env"], env).stdout.splitlines()
        )
        h = {"Authorization": f"Bearer {exports['RUNPOD_API_KEY']}"}
        gql = httpx.post(exports["GPUJOB_RUNPOD_GRAPHQL_URL"], headers=h, json={"query": "{ myself { id } }"})
        assert gql.status_code == 410 and "retired" in gql.json()["errors"][0]["message"]
        assert httpx.get(f"{exports['GPUJOB_RUNPOD_API_URL']}/pods", headers=h).status_code == 200
    finally:
        assert run(["down"], env).returncode == 0
