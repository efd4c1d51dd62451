"""The simulator's GraphQL answers like RunPod's: inline literals and variables alike, selection sets
honoured, unknown names refused, RunPod's refusals kept, `null` for a pod that is gone; the calendar
modes `limited` (429 + Retry-After) and `gone` (410). The last test drives it with RunPod's own
Python SDK (runpod 1.12), which writes every mutation with inline literals."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from string import Template
from typing import Any

import httpx
import pytest

from gpujob.sim.runpod_graphql import COMMUNITY_VOLUME, GONE, ON_DEMAND_AS_SPOT, SPOT_AS_ON_DEMAND
from gpujob.sim.testing import Sim, running_simulator
from tests.sim.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
GPU = "NVIDIA A40"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGt3c3Rlc3RrZXl0ZXN0a2V5dGVzdGtleXRlc3RrZXk sdk@test"


@pytest.fixture
def gsim(tmp_path: Path) -> Iterator[Sim]:
    with running_simulator(
        tmp_path / "sim", speed=0, provision_seconds=0.01, boot_seconds=0.0, pods=False
    ) as s:
        yield s


def gql(sim: Sim, query: str, variables: dict[str, Any] | None = None) -> httpx.Response:
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    return httpx.post(
        f"{sim.runpod_url}/graphql",
        json=body,
        headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
        timeout=20,
    )


def doc(text: str, **values: str) -> str:
    """A GraphQL document with $names filled in (GraphQL's own braces need no escaping this way)."""
    return Template(text).substitute(values)


def data(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "errors" not in body, body
    return dict(body["data"])


def error_of(resp: httpx.Response) -> str:
    body = resp.json()
    assert body.get("errors"), body
    return str(body["errors"][0]["message"])


# Written the way runpod-python's generate_pod_deployment_mutation writes it (inline enum, list, objects,
# a null), with one more selection than the SDK makes so the projection is seen.
INLINE_CREATE = Template(
    """
mutation {
  podFindAndDeployOnDemand(
    input: {
      name: "inline", imageName: "img", cloudType: COMMUNITY, startSsh: true, gpuTypeId: "$gpu",
      supportPublicIp: true, gpuCount: 1, volumeInGb: 0, allowedCudaVersions: ["12.8", "12.9"],
      dataCenterId: null, containerDiskInGb: 12, ports: "22/tcp",
      env: [{ key: "PUBLIC_KEY", value: "$key" }, { key: "HELLO", value: "world" }]
    }
  ) { id env machineId machine { podHostId } }
}"""
).substitute(gpu=GPU, key=KEY)

VARIABLE_CREATE = """
mutation deploy($input: PodFindAndDeployOnDemandInput!) {
  podFindAndDeployOnDemand(input: $input) { id env machineId machine { podHostId } }
}"""


def test_inline_literals_and_variables_make_the_same_pod(gsim: Sim) -> None:
    inline = data(gql(gsim, INLINE_CREATE))["podFindAndDeployOnDemand"]
    variables = {
        "input": {
            "name": "vars", "imageName": "img", "cloudType": "COMMUNITY", "startSsh": True, "gpuTypeId": GPU,
            "gpuCount": 1, "allowedCudaVersions": ["12.8", "12.9"], "dataCenterId": None,
            "containerDiskInGb": 12, "ports": "22/tcp",
            "env": [{"key": "PUBLIC_KEY", "value": KEY}, {"key": "HELLO", "value": "world"}],
        }
    }  # fmt: skip
    by_vars = data(gql(gsim, VARIABLE_CREATE, variables))["podFindAndDeployOnDemand"]
    for answer in (inline, by_vars):
        assert set(answer) == {"id", "env", "machineId", "machine"}  # exactly what was selected
        assert set(answer["machine"]) == {"podHostId"}
        assert sorted(answer["env"]) == sorted([f"PUBLIC_KEY={KEY}", "HELLO=world"])
    state = gsim.control("state")["pods"]
    for pod_id in (inline["id"], by_vars["id"]):
        pod = state[pod_id]
        assert pod["cloud"] == "COMMUNITY"  # the inline enum was read, not dropped to SECURE
        assert pod["allowed_cuda"] == ["12.8", "12.9"]
        assert pod["disk"] == 12
        assert KEY in pod["authorized_keys"]


def test_aliases_and_field_arguments_are_honoured(gsim: Sim) -> None:
    got = data(
        gql(
            gsim,
            doc(
                '{ gpuTypes(input: {id: "$v"}) { gpu: id one: lowestPrice(input: {gpuCount: 1}) { minimumBidPrice } '
                "nine: lowestPrice(input: {gpuCount: 9, secureCloud: true}) { stockStatus } } }",
                v=GPU,
            ),
        )
    )["gpuTypes"]
    assert got == [
        {
            "gpu": GPU,
            "one": {"minimumBidPrice": got[0]["one"]["minimumBidPrice"]},
            "nine": {"stockStatus": "None"},
        }
    ]
    assert got[0]["one"]["minimumBidPrice"] > 0


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (
            '{ pod(input: {podId: "x"}) { id secretField } }',
            'Cannot query field "secretField" on type "Pod".',
        ),
        (
            '{ pod(input: {podId: "x", wrong: 1}) { id } }',
            'Field "wrong" is not defined by type "PodFilter".',
        ),
        (
            'mutation { podTerminate(input: {podId: "x"}) { id } }',
            'Field "podTerminate" must not have a selection',
        ),
        ('{ pod(input: {podId: "x"}) }', "must have a selection of subfields"),
        ("{ nothingHere { id } }", 'Cannot query field "nothingHere" on type "Query".'),
        ('{ pod(input: {podId: "x"} { id } }', "Syntax Error"),
    ],
)
def test_documents_that_do_not_fit_the_schema_are_refused(gsim: Sim, query: str, says: str) -> None:
    resp = gql(gsim, query)
    assert resp.status_code == 400
    assert says in error_of(resp)


def test_inline_string_for_an_enum_and_unknown_input_fields_are_refused(gsim: Sim) -> None:
    quoted = INLINE_CREATE.replace("cloudType: COMMUNITY", 'cloudType: "COMMUNITY"')
    assert 'Enum "CloudTypeEnum" cannot represent non-enum value' in error_of(gql(gsim, quoted))
    extra = INLINE_CREATE.replace("gpuCount: 1,", "gpuCount: 1, interruptible: true,")
    assert 'Field "interruptible" is not defined by type' in error_of(gql(gsim, extra))
    assert gsim.control("state")["pods"] == {}  # nothing ran


def test_a_pod_that_is_gone_reads_as_null(gsim: Sim) -> None:
    pod = data(gql(gsim, INLINE_CREATE))["podFindAndDeployOnDemand"]
    assert data(gql(gsim, doc('mutation { podTerminate(input: {podId: "$v"}) }', v=pod["id"]))) == {
        "podTerminate": None
    }
    assert data(gql(gsim, doc('{ pod(input: {podId: "$v"}) { id } }', v=pod["id"]))) == {"pod": None}
    assert data(gql(gsim, '{ pod(input: {podId: "never-was"}) { id } }')) == {"pod": None}


def _spot(sim: Sim, **extra: Any) -> dict[str, Any]:
    floor = data(
        gql(
            sim,
            doc(
                '{ gpuTypes(input: {id: "$v"}) { lowestPrice(input: {gpuCount: 1}) { minimumBidPrice } } }',
                v=GPU,
            ),
        )
    )
    bid = floor["gpuTypes"][0]["lowestPrice"]["minimumBidPrice"]
    inp = {
        "name": "spot",
        "imageName": "img",
        "gpuTypeId": GPU,
        "gpuCount": 1,
        "bidPerGpu": bid,
        "cloudType": "SECURE",
        **extra,
    }
    query = "mutation r($input: PodRentInterruptableInput!) { podRentInterruptable(input: $input) { id podType } }"
    return dict(data(gql(sim, query, {"input": inp}))["podRentInterruptable"])


def _stopped(sim: Sim, pod_id: str) -> None:
    wait_for(lambda: sim.control("state")["pods"][pod_id]["status"], lambda s: s == "RUNNING")
    data(gql(sim, doc('mutation { podStop(input: {podId: "$v"}) { id desiredStatus } }', v=pod_id)))
    wait_for(lambda: sim.control("state")["pods"][pod_id]["status"], lambda s: s == "EXITED")


def test_spot_and_on_demand_do_not_resume_as_each_other(gsim: Sim) -> None:
    spot = _spot(gsim)
    assert spot["podType"] == "INTERRUPTABLE"
    ondemand = data(gql(gsim, INLINE_CREATE))["podFindAndDeployOnDemand"]
    for pod_id in (spot["id"], ondemand["id"]):
        _stopped(gsim, pod_id)
    resume = doc('mutation { podResume(input: {podId: "$v", gpuCount: 1}) { id } }', v=spot["id"])
    assert error_of(gql(gsim, resume)) == SPOT_AS_ON_DEMAND
    bid = doc(
        'mutation { podBidResume(input: {podId: "$v", bidPerGpu: 9.0, gpuCount: 1}) { id } }',
        v=ondemand["id"],
    )
    assert error_of(gql(gsim, bid)) == ON_DEMAND_AS_SPOT
    rest = httpx.post(
        f"{gsim.env['GPUJOB_RUNPOD_API_URL']}/pods/{spot['id']}/action",
        json={"action": "start"},
        headers={"Authorization": f"Bearer {gsim.env['RUNPOD_API_KEY']}"},
    )
    assert rest.status_code == 400 and SPOT_AS_ON_DEMAND in rest.json()["detail"]  # nor over REST v2
    assert gsim.control("state")["pods"][spot["id"]]["status"] == "EXITED"


def test_network_volumes_are_secure_cloud_only(gsim: Sim) -> None:
    vol = httpx.post(
        f"{gsim.env['GPUJOB_RUNPOD_API_URL']}/network-volumes",
        json={"name": "v", "size": 10, "dataCenter": "US-KS-2"},
        headers={"Authorization": f"Bearer {gsim.env['RUNPOD_API_KEY']}"},
    ).json()
    community = INLINE_CREATE.replace("volumeInGb: 0,", f'networkVolumeId: "{vol["id"]}",')
    assert error_of(gql(gsim, community)) == COMMUNITY_VOLUME
    assert gsim.control("state")["pods"] == {}


def test_calendar_modes(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "gone", speed=0, pods=False, runpod_graphql="gone") as sim:
        resp = gql(sim, "{ myself { id } }")
        assert resp.status_code == 410 and error_of(resp) == GONE
        assert (
            httpx.get(  # REST v2 goes on
                f"{sim.env['GPUJOB_RUNPOD_API_URL']}/pods",
                headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
            ).status_code
            == 200
        )
    with running_simulator(tmp_path / "limited", speed=0, pods=False, runpod_graphql="limited") as sim:
        answers = [gql(sim, "{ myself { id } }") for _ in range(6)]
        limited = [r for r in answers if r.status_code == 429]
        assert len(limited) == 2 and all(r.headers["Retry-After"] == "1" for r in limited)
        assert all(data(r) == {"myself": {"id": "user_sim"}} for r in answers if r.status_code != 429)


# --- RunPod's own SDK ----------------------------------------------------------------------------


def sdk_python() -> str | None:
    """A Python with RunPod's SDK: GPUJOB_RUNPOD_SDK_PYTHON, else the one scripts/python-deps.sh makes."""
    given = os.environ.get("GPUJOB_RUNPOD_SDK_PYTHON")
    if given:
        return given
    made = ROOT / ".venv-runpod-sdk" / "bin" / "python"
    return str(made) if made.exists() else None


def test_runpod_sdk_against_the_simulator(gsim: Sim) -> None:
    python = sdk_python()
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must drive the simulator with RunPod's SDK: scripts/python-deps.sh installs it")
        pytest.skip("RunPod's SDK is not installed (scripts/python-deps.sh makes .venv-runpod-sdk)")
    spot = _spot(gsim)
    _stopped(gsim, spot["id"])
    vol = httpx.post(
        f"{gsim.env['GPUJOB_RUNPOD_API_URL']}/network-volumes",
        json={"name": "v", "size": 10, "dataCenter": "US-KS-2"},
        headers={"Authorization": f"Bearer {gsim.env['RUNPOD_API_KEY']}"},
    ).json()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNPOD")}
    env["RUNPOD_API_BASE_URL"] = gsim.runpod_url
    env.pop("PYTHONPATH", None)  # the SDK's own environment, not gpujob's
    done = subprocess.run(
        [python, str(Path(__file__).with_name("runpod_sdk_driver.py")), gsim.env["RUNPOD_API_KEY"], GPU, spot["id"], KEY, vol["id"]],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(seen["created_env"]) == sorted([f"PUBLIC_KEY={KEY}", "HELLO=world"])  # inline env kept
    assert seen["created_keys"] == [
        "env",
        "id",
        "imageName",
        "machine",
        "machineId",
    ]  # its selection, no more
    assert seen["resumed_status"] == "RUNNING"  # an on-demand pod resumes as on-demand
    assert seen["terminated"] is None  # a terminated pod reads as null
    assert seen["spot_resume"] == SPOT_AS_ON_DEMAND  # refused: a spot pod does not resume as on-demand
    assert seen["community_volume"] == COMMUNITY_VOLUME
    pods = gsim.control("state")["pods"]
    sdk_pod = next(p for p in pods.values() if p["name"] == "sdk-pod")
    assert KEY in sdk_pod["authorized_keys"] and sdk_pod["allowed_cuda"] == ["12.8"]
    assert not any(p["name"] == "sdk-community" for p in pods.values())
