"""`gpujob doctor` as users run it (a subprocess): all OK against the simulator with resources in it, only
GETs and GraphQL queries on the wire, a drifted answer reported with its field name and exit 1, and the
API key never in the output, even when the platform echoes it back."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.sim.testing import Sim, running_simulator
from tests.fakeapi.kit import run_gpujob
from tests.fakeapi.server import PS_KEY, RP_KEY, Reply, RunningFake
from tests.fixtures.bodies import ps, v2_example


def _doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_gpujob(env, "doctor", *args, timeout=120)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with running_simulator(tmp_path / "sim", pods=False, provision_seconds=0.0, boot_seconds=0.0) as s:
        yield s


def _record(sim: Sim) -> list[tuple[str, str, Any]]:
    """Every request the simulator receives, on both ports (wrapping each server's dispatch)."""
    seen: list[tuple[str, str, Any]] = []
    for server in sim.server._servers:
        inner: Callable[[Any], Any] = server.dispatch

        def dispatch(req: Any, inner: Callable[[Any], Any] = inner) -> Any:
            seen.append((req.method, req.path, req.json() if req.raw.strip() else None))
            return inner(req)

        server.dispatch = dispatch
    return seen


def _populate(sim: Sim) -> None:
    """Something in every listing doctor reads, so its items are checked, not just an empty list."""
    rp = httpx.Client(
        base_url=sim.env["GPUJOB_RUNPOD_API_URL"],
        headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
    )
    pspace = httpx.Client(base_url=sim.env["GPUJOB_PAPERSPACE_API_URL"], headers={"Authorization": f"Bearer {sim.env['PAPERSPACE_API_KEY']}"})  # fmt: skip
    with rp, pspace:
        rp.post(
            "/network-volumes", json={"name": "v", "size": 10, "dataCenter": "US-KS-2"}
        ).raise_for_status()
        rp.post("/pods", json={"name": "p", "image": "img", "gpu": {"id": "NVIDIA A40"}}).raise_for_status()
        rp.post("/templates", json={"name": "t", "image": "img"}).raise_for_status()
        rp.post("/registries", json={"name": "r", "username": "u", "password": "pw"}).raise_for_status()
        script = pspace.post("/startup-scripts", json={"name": "s", "script": "#!/bin/bash\ntrue"}).json()
        m = pspace.post("/machines", json={
            "name": "m", "machineType": "A4000", "templateId": "t0nspur5", "diskSize": 50, "region": "ny2",
            "publicIpType": "static", "startupScriptId": script["id"], "startOnCreate": False,
        }).json()["data"]  # fmt: skip
        pspace.post("/snapshots", json={"machineId": m["id"], "name": "snap"}).raise_for_status()


def test_doctor_is_all_ok_against_the_simulator_and_sends_only_reads(sim: Sim) -> None:
    _populate(sim)
    seen = _record(sim)
    done = _doctor(sim.env)
    assert done.returncode == 0, done.stdout + done.stderr
    setup, _, apis = done.stdout.partition("\ngpujob doctor ")
    lines = [
        line.split()[0] for line in apis.splitlines() if line.startswith("  ") and line.split()[0].isupper()
    ]
    assert lines and set(lines) == {"OK"}, done.stdout
    # The setup says where the API URLs point: the simulator, which is fine here and worth a warning.
    assert "WARN  API URLs" in setup and "point at a simulator" in setup, setup
    for call in ("GET /v2/pods", "GET /v2/catalog/gpus (community)", "query gpuTypes", "query myself",
                 "GET /v1/os-templates", "GET /v1/public-ips", "GET /v1/snapshots", "GET /v1/machine-availability",
                 "GET /v1/machine-events"):  # fmt: skip
        assert call in done.stdout
    assert "1 item" in done.stdout  # the listings were not empty: their items were checked
    writes = [(m, p) for m, p, body in seen if m != "GET" and not (p == "/graphql" and _is_query(body))]
    assert seen and writes == [], writes
    for key in (sim.env["RUNPOD_API_KEY"], sim.env["PAPERSPACE_API_KEY"]):
        assert key not in done.stdout + done.stderr


def _is_query(body: Any) -> bool:
    text = str((body or {}).get("query", "")).lstrip()
    return text.startswith("query") and "mutation" not in text


def test_a_drifted_answer_names_the_field_and_exits_1(fake: RunningFake) -> None:
    pod = v2_example("GET", "/v2/pods")["pods"][0]
    machine = ps("machine")
    fake.apis.answers["/v2/pods"] = Reply(200, {"pods": [{**pod, "ports": "8888/http,22/tcp"}]})
    fake.apis.answers["/v1/machines"] = Reply(200, {"items": [{**machine, "state": 3}], "hasMore": False})
    done = _doctor(fake.env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DRIFT    GET /v2/pods" in done.stdout
    assert "pods[*].ports: expected list[string], got string (16 chars)" in done.stdout
    assert "items[*].state: expected string, got integer 3" in done.stdout
    report = json.loads(_doctor(fake.env, "--format", "json").stdout)
    drifted = {r["call"]: r["drifts"] for r in report["results"] if r["outcome"] == "drift"}
    assert drifted["GET /v2/pods"] == [
        {"field": "pods[*].ports", "expected": "list[string]", "got": "string (16 chars)"}
    ]
    assert report["exit_code"] == 1


def test_refused_calls_are_reported_and_the_key_never_printed(fake: RunningFake) -> None:
    echo = f"key {RP_KEY} lacks the billing scope"  # a platform that echoes the key back
    fake.apis.answers["/v2/registries"] = Reply(403, {"title": "Forbidden", "status": 403, "detail": echo})
    done = _doctor(fake.env, "--platform", "runpod")
    assert "REFUSED  GET /v2/registries" in done.stdout and "HTTP 403" in done.stdout
    assert RP_KEY not in done.stdout + done.stderr and PS_KEY not in done.stdout
    assert "\nPaperspace: " not in done.stdout and "GET /v1/" not in done.stdout  # --platform runpod
    assert done.returncode == 0, done.stdout  # a key scoped without one read still works for the rest


def test_no_key_says_which_to_set() -> None:
    done = _doctor({})
    assert done.returncode == 1 and "RUNPOD_API_KEY" in done.stderr


def test_the_setup_fails_the_doctor_even_with_every_api_answer_ok(fake: RunningFake) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    done = _doctor({**fake.env, "GPUJOB_STATE_URL": f"postgresql://gpujob@127.0.0.1:{port}/gpujob"})
    assert done.returncode == 1, done.stdout + done.stderr
    setup, _, apis = done.stdout.partition("\ngpujob doctor ")
    assert "FAIL  state reachable" in setup and "chosen by GPUJOB_STATE_URL" in setup
    assert "OK       GET /v2/pods" in apis and "DRIFT" not in apis  # the APIs were still checked
    report = json.loads(
        _doctor(
            {**fake.env, "GPUJOB_STATE_URL": f"postgresql://gpujob@127.0.0.1:{port}/gpujob"},
            "--format",
            "json",
        ).stdout
    )
    assert report["exit_code"] == 1 and any(c["outcome"] == "fail" for c in report["setup"])


def test_doctor_says_what_a_retired_graphql_means(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "gone", pods=False, runpod_graphql="gone") as gone:
        done = _doctor(gone.env, "--platform", "runpod")
    assert done.returncode == 0, done.stdout + done.stderr  # retired is expected, not a failure
    retired = [line for line in done.stdout.splitlines() if line.startswith("  RETIRED")]
    # every GraphQL read (gpuTypes lowestPrice, gpuTypes spot prices, myself) says RETIRED
    assert len(retired) == 3 and all("HTTP 410 Gone" in line for line in retired), done.stdout
    assert "ERROR" not in done.stdout
    (means,) = [line for line in done.stdout.splitlines() if line.startswith("RETIRED:")]  # said once
    assert "no spot pods" in means and "no balance" in means and "spot: prefer" in means
    assert gone.env["RUNPOD_API_KEY"] not in done.stdout + done.stderr


def test_doctor_says_which_spot_state_the_account_sees(sim: Sim) -> None:
    offered = _doctor(sim.env, "--platform", "runpod").stdout
    assert "spot offered:" in offered, offered
    sim.engine.options.runpod_spot = "withdrawn"  # as `gpujob sim up --runpod-spot withdrawn`
    done = _doctor(sim.env, "--platform", "runpod")
    assert done.returncode == 0, done.stdout + done.stderr  # a state RunPod chose, not a failure
    (line,) = [x for x in done.stdout.splitlines() if "query gpuTypes (spot)" in x]
    assert line.startswith("  OK") and "spot WITHDRAWN" in line and "2026-05-06" in line, line
