"""Issue 23, against the independent fake of the real APIs (tests/fakeapi), whose hosts run no sshd:
an approved destroy of a stopped pod gpujob created and never launched on terminates it without
starting it; a destroy that has to look at a stopped pod and cannot reach it gives up within
GPUJOB_ENDPOINT_WAIT (+ a minute), leaves the pod stopped and names the risk; the `.unverified`
override works only together with the plain approval, only after this command failed to reach the
pod, and never from `gpujob watch`."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.fakeapi.kit import job_text, run_gpujob
from tests.fakeapi.server import RunningFake

WAIT_S = 1  # the least GPUJOB_ENDPOINT_WAIT takes: the give-up is the promise, not its length
CHECKPOINT = """checkpoint:
  dir: /workspace/ckpt
  interval: 10m
  verify: "true"
"""
TERMINATE = "rpfake.pod.terminate"
PS_TERMINATE = "psfake.machine.terminate"


def _gj(project: Path, fake: RunningFake, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**fake.env, "CI": "true", "GPUJOB_ENDPOINT_WAIT": str(WAIT_S), "GPUJOB_SSH_CONNECT_TIMEOUT": "1"}
    return run_gpujob(env, *args, cwd=project)


def _stopped_pod(tmp_path: Path, fake: RunningFake, extra: str = "", platform: str = "runpod") -> str:
    """A machine created by gpujob (no run section: nothing launched on it), then stopped by apply."""
    job = tmp_path / "job.yaml"
    for state in ("running", "stopped"):
        job.write_text(job_text(platform, state, extra))
        out = _gj(tmp_path, fake, "apply", "--auto-approve")
        assert out.returncode == 0, out.stdout + out.stderr
    if platform == "paperspace":
        (machine,) = fake.apis.machines.values()
        assert machine["state"] == "off"
        return str(machine["id"])
    (pod,) = fake.apis.pods.values()
    assert pod["status"] == "EXITED"
    return str(pod["id"])


def _destroy(tmp_path: Path, fake: RunningFake, *approvals: str) -> subprocess.CompletedProcess[str]:
    return _gj(tmp_path, fake, "destroy", "--auto-approve", *(w for a in approvals for w in ("--approve", a)))


def _starts(fake: RunningFake, rid: str) -> int:
    pod = sum(
        1
        for m, p, b in fake.apis.requests
        if p == f"/v2/pods/{rid}/action" and (b or {}).get("action") == "start"
    )
    return pod + sum(1 for m, p, _ in fake.apis.requests if (m, p) == ("PATCH", f"/v1/machines/{rid}/start"))


def _state(fake: RunningFake, rid: str) -> str | None:
    if rid in fake.apis.pods:
        return str(fake.apis.pods[rid]["status"])
    return str(fake.apis.machines[rid]["state"]) if rid in fake.apis.machines else None


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_destroy_of_a_never_launched_stopped_machine_terminates_it_without_starting_it(
    tmp_path: Path, fake: RunningFake, platform: str
) -> None:
    rid = _stopped_pod(tmp_path, fake, platform=platform)
    out = _destroy(tmp_path, fake, TERMINATE if platform == "runpod" else PS_TERMINATE)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert _state(fake, rid) is None and _starts(fake, rid) == 0, text
    assert "not started to be looked at" in text and "never launched a run on it" in text, text


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_without_the_state_store_evidence_destroy_looks_and_an_unreachable_machine_is_left_stopped(
    tmp_path: Path, fake: RunningFake, platform: str
) -> None:
    rid = _stopped_pod(tmp_path, fake, platform=platform)
    job = "rpfake" if platform == "runpod" else "psfake"
    (tmp_path / ".gpujob" / "journal" / f"{job}.jsonl").unlink()  # a lost journal is no evidence
    began = time.monotonic()
    out = _destroy(tmp_path, fake, TERMINATE if platform == "runpod" else PS_TERMINATE)
    elapsed, text = time.monotonic() - began, out.stdout + out.stderr
    assert out.returncode == 1, text
    assert elapsed < WAIT_S + 60, elapsed
    assert _starts(fake, rid) == 1 and _state(fake, rid) in ("EXITED", "off"), text
    assert f"stopped gpujob-{job}" in text and "again" in text, text
    erases = "container disk and volume disk" if platform == "runpod" else "disk (all of it)"
    assert "refused: cannot reach" in text and erases in text, text
    assert "the last listing gpujob saw: none" in text and "the newest verified pull: never" in text, text
    # The way past is described, never printed as a flag to paste.
    assert ".unverified'" in text and ".terminate.unverified" not in text, text


def test_the_unverified_override_needs_the_plain_approval_and_a_failed_reach_and_never_comes_from_watch(
    tmp_path: Path, fake: RunningFake
) -> None:
    pod = _stopped_pod(tmp_path, fake, extra=CHECKPOINT)  # a checkpoint block: the gate must look
    # Alone, the override approves nothing.
    out = _destroy(tmp_path, fake, f"{TERMINATE}.unverified")
    assert out.returncode == 1 and pod in fake.apis.pods and _starts(fake, pod) == 0, out.stdout + out.stderr
    # With the plain approval: the pull before the terminate fails to reach the pod, the pod is
    # stopped again, and the terminate goes ahead unverified, saying so.
    began = time.monotonic()
    out = _destroy(tmp_path, fake, TERMINATE, f"{TERMINATE}.unverified")
    elapsed, text = time.monotonic() - began, out.stdout + out.stderr
    assert out.returncode == 0, text
    assert fake.apis.pods == {} and _starts(fake, pod) == 1, text
    assert "DATA LOSS approved" in text and elapsed < WAIT_S + 60, (elapsed, text)
    assert f"DATA LOSS if unreachable: {TERMINATE}.unverified is approved" in text, text  # in the plan shown
