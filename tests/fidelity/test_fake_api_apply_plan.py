"""Done-when of issue 12, against an independent fake of the real APIs (tests/fakeapi: built from the
spec-derived fixtures, not from the simulator): `gpujob apply` then `gpujob plan` as a user runs them.
The plan right after apply is empty on both platforms (no replace, no update); a Paperspace job whose
template is an OS template's name applies; stopping the machine leaves it off."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.fakeapi.kit import job_text, run_gpujob
from tests.fakeapi.server import RunningFake


def _gj(project: Path, fake: RunningFake, *args: str) -> subprocess.CompletedProcess[str]:
    return run_gpujob({**fake.env, "CI": "true"}, *args, cwd=project)


def _apply_then_plan(tmp_path: Path, fake: RunningFake, job: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "job.yaml").write_text(job)
    applied = _gj(tmp_path, fake, "apply", "--auto-approve", "job.yaml")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    planned = _gj(tmp_path, fake, "plan", "--detailed-exitcode", "--format", "json", "job.yaml")
    assert planned.returncode == 0, "plan after apply is not empty:\n" + planned.stdout + planned.stderr
    (job_plan,) = json.loads(planned.stdout)["jobs"]
    assert [a["kind"] for a in job_plan["actions"]] == ["no-op"], job_plan["actions"]
    assert not [f for f in job_plan["findings"] if f["severity"] == "error"]
    return planned


def test_runpod_apply_then_plan_is_empty(tmp_path: Path, fake: RunningFake) -> None:
    _apply_then_plan(tmp_path, fake, job_text("runpod", "running"))
    (pod,) = fake.apis.pods.values()
    assert pod["status"] == "RUNNING" and pod["gpu"] == {"id": "NVIDIA GeForce RTX 4090", "count": 1}
    assert pod["mounts"] == {"persistent": {"size": 20, "path": "/workspace"}}
    listed = [(m, p) for m, p, _ in fake.apis.requests if (m, p) == ("GET", "/v2/pods")]
    assert listed  # the pods list came in pages of one and was read to its end (else: "does not exist")


def test_paperspace_template_by_name_applies_plan_is_empty_and_stop_leaves_it_off(
    tmp_path: Path, fake: RunningFake
) -> None:
    _apply_then_plan(tmp_path, fake, job_text("paperspace", "running"))
    (machine,) = fake.apis.machines.values()
    assert machine["state"] == "ready" and "templateId" not in machine
    (create,) = [b for m, p, b in fake.apis.requests if (m, p) == ("POST", "/v1/machines")]
    assert (
        create["templateId"] == "tkni3aa4"
        and create["diskSize"] == 50
        and create["autoShutdownTimeout"] == 12
    )

    _apply_then_plan(tmp_path, fake, job_text("paperspace", "stopped"))
    assert fake.apis.machines[machine["id"]]["state"] == "off"
    mutations = [(m, p) for m, p, _ in fake.apis.requests if m != "GET"]
    assert ("PATCH", f"/v1/machines/{machine['id']}/stop") in mutations
    assert not [x for x in mutations if x[0] == "DELETE" or x[1].endswith("/start")]
