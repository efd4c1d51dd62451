"""Catalogue section B (HTTP / API faults) through the real CLI and providers against the simulator.

Faults are injected with `sim.inject(...)` or by tampering with what the simulator answered on the wire
(an unknown status, an HTML page under 200); retry loops run on virtual time (fast_clock)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.providers.base import LaunchRequest, VolumeRequest
from gpujob.providers.registry import open_providers
from gpujob.sim.http import Response
from tests.owners import PROJECT, machine, pin_project
from tests.owners import volume as owned_volume
from tests.reliability.reliability_kit import (
    RP_CANARY,
    RUNPOD_JOB,
    FastClock,
    RecordingSim,
    cli,
    self_signed_https_server,
    write_job,
)

A100 = "NVIDIA A100 80GB PCIe"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE reliability"


def project_with_job(tmp_path: Path, text: str = RUNPOD_JOB, *, pinned: bool = True) -> Path:
    """The project dir (its state dir is the env fixture's GPUJOB_STATE_DIR, project/.gpujob), with
    the test project id made already unless `pinned` is False."""
    project = tmp_path / "project"
    write_job(project, text)
    if pinned:
        pin_project(project / ".gpujob")
    return project


def calls(rsim: RecordingSim, method: str, path: str) -> int:
    return sum(1 for w in rsim.api_requests() if w.method == method and w.path == path)


async def _create_bert_pod(env: dict[str, str], *, volume: bool = False) -> tuple[str, str | None]:
    """Create job bert's pod through the provider's create-once protocol (the simulator runs no pod
    processes here, so the wait for an SSH endpoint that create_machine adds is left out)."""
    async with open_providers({"runpod"}, env=env, clock=FastClock()) as providers:
        rp: Any = providers["runpod"]
        vol_id = None
        if volume:
            vol = await rp.create_volume(
                VolumeRequest(name=owned_volume("bert", "ckpt"), size_gb=50, region="EU-RO-1")
            )
            vol_id = vol.id
        request = LaunchRequest(
            name=machine("bert"),
            env={"GPUJOB_PROJECT": PROJECT},
            gpu_id=A100,
            image="runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
            region="EU-RO-1",
            volume_gb=100,
            ssh_public_key=KEY,
            network_volume_id=vol_id,
        )
        pod_id = await rp._create_once(request.name, lambda: rp._create_on_demand(request), rp._pods_named)
        return str(pod_id), vol_id


# ---- B3 5xx on idempotent GETs: bounded retries, 501 never retried, message names the call only


def test_b3_501_is_not_retried_and_names_method_and_path(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    project = project_with_job(tmp_path)
    rsim.inject("http_error", status=501, path="/v2/pods", method="GET", count=None)
    run = cli(["plan"], cwd=project, env=env)
    assert run.exit_code == 1, run.output
    assert calls(rsim, "GET", "/v2/pods") == 1
    assert "GET /v2/pods" in run.stderr and "?" not in run.stderr.split("GET /v2/pods")[1][:1]
    assert "Traceback" not in run.output and "to create" not in run.stdout


def test_b3_5xx_storm_gives_up_after_a_bounded_budget(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    project = project_with_job(tmp_path)
    rsim.inject("http_error", status=503, path="/v2/pods", method="GET", count=None)
    for args in (["plan"], ["state"], ["cost"]):
        before = calls(rsim, "GET", "/v2/pods")
        fast_clock.sleeps.clear()
        run = cli(args, cwd=project, env=env)
        assert run.exit_code == 1, (args, run.output)
        tries = calls(rsim, "GET", "/v2/pods") - before
        assert 2 <= tries <= 6, tries  # retried, and bounded
        assert fast_clock.sleeps == sorted(fast_clock.sleeps) or len(fast_clock.sleeps) > 1
        assert "Traceback" not in run.output and "to create" not in run.stdout
    assert "gave up after" in run.output and "GET /v2/pods" in run.output


# ---- B8 malformed success responses are failures, never "nothing exists"


@pytest.mark.parametrize(
    "answer",
    [
        Response(200, {"error": "injected failure"}),  # an error object under 200
        Response(
            200, b"<html><body>Cloudflare: checking your browser</body></html>", content_type="text/html"
        ),
        Response(200, b'{"pods": [{"id": "abc", "na', content_type="application/json"),  # truncated
        Response(200, None),  # an empty body
    ],
    ids=["error-object", "html", "truncated", "empty"],
)
def test_b8_malformed_listing_blocks_the_plan_instead_of_planning_a_duplicate(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock], answer: Response
) -> None:
    asyncio.run(_create_bert_pod(env))  # the pod exists: "absent" would plan a second, billing one
    project = project_with_job(tmp_path)

    def tamper(platform: str, method: str, path: str, response: Any) -> Any:
        return answer if (method, path) == ("GET", "/v2/pods") else response

    rsim.rewrite = tamper
    for args in (["plan"], ["state"], ["cost"]):
        run = cli(args, cwd=project, env=env)
        assert run.exit_code == 1, (args, run.output)
        assert "Traceback" not in run.output and "to create" not in run.stdout
        assert "nothing live" not in run.stdout
    rsim.rewrite = None
    assert cli(["plan"], cwd=project, env=env).exit_code in (0, 2)


def test_b8_paperspace_page_without_items_is_not_an_empty_account(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    from tests.reliability.reliability_kit import PAPERSPACE_JOB

    project = project_with_job(tmp_path, PAPERSPACE_JOB)

    def tamper(platform: str, method: str, path: str, response: Any) -> Any:
        if (method, path) == ("GET", "/v1/machines"):
            return Response(200, {"hasMore": False})
        return response

    rsim.rewrite = tamper
    run = cli(["state"], cwd=project, env=env)
    assert run.exit_code == 1 and "malformed response" in run.stderr, run.output


def test_b8_malformed_create_answer_is_an_unknown_outcome_and_creates_exactly_one(
    rsim: RecordingSim,
) -> None:
    # The create is committed, then the answer is garbage: gpujob must look the name up and adopt it.
    def tamper(platform: str, method: str, path: str, response: Any) -> Any:
        if (method, path) == ("POST", "/v2/pods"):
            rsim.rewrite = None
            return Response(200, b"<html>502 Bad Gateway</html>", content_type="text/html")
        return response

    rsim.rewrite = tamper
    pod_id, _ = asyncio.run(_create_bert_pod(rsim.env))
    with rsim.sim.engine.lock:
        live = [
            p.id
            for p in rsim.sim.engine.state.pods.values()
            if p.name == machine("bert") and p.ended_at is None
        ]
    assert live == [pod_id] and calls(rsim, "POST", "/v2/pods") == 1


# ---- B9 unknown enum values


def test_b9_unknown_pod_status_is_shown_raw_and_nothing_crashes(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    asyncio.run(_create_bert_pod(env))
    project = project_with_job(tmp_path)

    def tamper(platform: str, method: str, path: str, response: Any) -> Any:
        if method == "GET" and path.startswith("/v2/pods") and isinstance(response.body, dict):
            body = json.loads(json.dumps(response.body).replace('"RUNNING"', '"HIBERNATING"'))
            body = json.loads(json.dumps(body).replace('"PROVISIONING"', '"HIBERNATING"'))
            body = json.loads(json.dumps(body).replace('"STARTING"', '"HIBERNATING"'))
            return Response(response.status, body, response.headers)
        return response

    rsim.rewrite = tamper
    run = cli(["state"], cwd=project, env=env)
    assert run.exit_code == 0 and "unknown (HIBERNATING)" in run.stdout, run.output
    run = cli(["plan", "--format", "json"], cwd=project, env=env)
    assert "Traceback" not in run.output, run.output
    plan = json.loads(run.stdout)
    kinds = [a["kind"] for job in plan["jobs"] for a in job["actions"]]
    assert "create" not in kinds  # a machine in an unknown state is never a reason to create another


# ---- B14 out-of-band drift


def test_b14_pod_terminated_in_the_console_plans_a_recreate_without_crashing(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    pod_id, _ = asyncio.run(_create_bert_pod(env))
    project = project_with_job(tmp_path)
    headers = {"Authorization": f"Bearer {env['RUNPOD_API_KEY']}"}
    assert httpx.delete(f"{env['GPUJOB_RUNPOD_API_URL']}/pods/{pod_id}", headers=headers).status_code < 300
    run = cli(["plan", "--format", "json", "--detailed-exitcode"], cwd=project, env=env)
    assert run.exit_code == 2, run.output
    actions = [a for job in json.loads(run.stdout)["jobs"] for a in job["actions"]]
    creates = [a for a in actions if a["kind"] == "create" and a["resource_kind"] == "pod"]
    assert len(creates) == 1 and creates[0]["billing"]["hourly_after"] > 0


def test_b14_network_volume_deleted_out_of_band_is_recreated_in_the_plan(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    pod_id, vol_id = asyncio.run(_create_bert_pod(env, volume=True))
    text = RUNPOD_JOB.replace(
        "  volume_gb: 100\n", "  volume_gb: 100\n  network_volume: {name: ckpt, size_gb: 50}\n"
    )
    project = project_with_job(tmp_path, text)
    headers = {"Authorization": f"Bearer {env['RUNPOD_API_KEY']}"}
    base = env["GPUJOB_RUNPOD_API_URL"]
    httpx.delete(f"{base}/pods/{pod_id}", headers=headers)
    assert httpx.delete(f"{base}/network-volumes/{vol_id}", headers=headers).status_code < 300
    run = cli(["plan", "--format", "json"], cwd=project, env=env)
    assert "Traceback" not in run.output and run.stdout, run.output
    kinds = {
        (a["resource_kind"], a["kind"]) for job in json.loads(run.stdout)["jobs"] for a in job["actions"]
    }
    assert ("network_volume", "create") in kinds and ("pod", "create") in kinds, kinds


# ---- B15 full network partition


def test_b15_partition_is_bounded_and_marks_nothing(
    tmp_path: Path, env: dict[str, str], fast_clock: type[FastClock]
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("0.0.0.0", 0))
        dead = s.getsockname()[1]
    # 0.0.0.0, not a loopback address: a refused loopback one is the simulator's and fails at once
    # (test_b15_the_simulator_address_refusing_is_not_retried).
    env = {
        **env,
        "GPUJOB_RUNPOD_API_URL": f"http://0.0.0.0:{dead}/v2",
        "GPUJOB_RUNPOD_GRAPHQL_URL": f"http://0.0.0.0:{dead}/graphql",
    }
    project = project_with_job(tmp_path, pinned=False)
    for args in (["plan"], ["state"], ["cost"], ["audit", "--platform", "runpod"]):
        fast_clock.sleeps.clear()
        run = cli(args, cwd=project, env=env)
        assert run.exit_code == 1, (args, run.output)
        assert "cannot connect" in run.output and "Traceback" not in run.output
        assert 0 < len(fast_clock.sleeps) <= 6 * 6 and sum(fast_clock.sleeps) <= 6 * 180  # <= 6 calls
        assert "to create" not in run.stdout and "nothing live" not in run.stdout
    assert not (project / ".gpujob").exists() or not any((project / ".gpujob").rglob("*.json"))


def test_b15_the_simulator_address_refusing_is_not_retried(
    tmp_path: Path, env: dict[str, str], fast_clock: type[FastClock]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    env = {
        **env,
        "GPUJOB_RUNPOD_API_URL": f"http://127.0.0.1:{dead}/v2",
        "GPUJOB_RUNPOD_GRAPHQL_URL": f"http://localhost:{dead}/graphql",
    }
    project = project_with_job(tmp_path, pinned=False)
    for args in (["plan"], ["status"], ["cost"]):
        fast_clock.sleeps.clear()
        run = cli(args, cwd=project, env=env)
        assert run.exit_code == 1, (args, run.output)
        assert fast_clock.sleeps == []  # not one retry
        assert f"nothing is listening on 127.0.0.1:{dead}: the simulator is not running" in run.output
        assert "`gpujob sim up`" in run.output
        unset = run.output.split("`unset ", 1)[1].split("`", 1)[0].split()
        assert {"GPUJOB_RUNPOD_API_URL", "GPUJOB_RUNPOD_GRAPHQL_URL"} <= set(unset), run.output


# ---- B16 TLS verification failure


def test_b16_untrusted_certificate_fails_once_without_retry(
    tmp_path: Path, fast_clock: type[FastClock]
) -> None:
    project = project_with_job(tmp_path)
    with self_signed_https_server(tmp_path) as (url, seen):
        env = {
            "GPUJOB_RUNPOD_API_URL": f"{url}/v2",
            "GPUJOB_RUNPOD_GRAPHQL_URL": f"{url}/graphql",
            "RUNPOD_API_KEY": RP_CANARY,
            "HF_TOKEN": "x",
        }
        run = cli(["state"], cwd=project, env=env)
    assert run.exit_code == 1, run.output
    assert "TLS certificate verification failed" in run.stderr and "self-signed" in run.stderr
    assert fast_clock.sleeps == [] and seen == []  # no retry, and no request got through
    assert RP_CANARY not in run.output


# ---- B17 Retry-After abuse


def test_b17_day_long_retry_after_fails_at_once_with_the_reason(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    project = project_with_job(tmp_path)
    rsim.inject("http_error", status=429, retry_after=86400, path="/v2/pods", method="GET", count=None)
    run = cli(["state"], cwd=project, env=env)
    assert run.exit_code == 1 and "asked to wait 86400s" in run.stderr, run.output
    assert all(s <= 300.5 for s in fast_clock.sleeps) and sum(fast_clock.sleeps) < 400


def test_b17_negative_retry_after_is_no_wait_not_a_crash(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, fast_clock: type[FastClock]
) -> None:
    project = project_with_job(tmp_path)
    rsim.inject("http_error", status=429, retry_after=-5, path="/v2/pods", method="GET", count=2)
    run = cli(["state"], cwd=project, env=env)
    assert run.exit_code == 0, run.output
    assert len(fast_clock.sleeps) == 2 and all(0 <= s <= 0.5 for s in fast_clock.sleeps)
