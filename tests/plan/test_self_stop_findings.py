"""The plan says what a RunPod GPU does after its run: it bills on (RunPod has no auto-shutdown) unless
teardown says stop, and a stop needs runpodctl in the image."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpujob.plan.planner import build_plan
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live

Write = Callable[..., object]


def codes(write_job: Write, text: str) -> dict[str, str]:
    plan = build_plan([write_job(text)], live(), now=NOW, env={})  # type: ignore[list-item]
    return {f.code: f.summary for f in plan.all_findings() if f.code in ("gpu-after-run", "self-stop-image")}


def test_a_pod_created_to_keep_its_gpu_after_the_run_is_warned_with_its_rate(write_job: Write) -> None:
    found = codes(write_job, RUNPOD_JOB)
    assert (
        "keeps billing $" in found["gpu-after-run"]
        and "after the run ends (finished or failed)" in found["gpu-after-run"]
    )
    only_failure = codes(write_job, RUNPOD_JOB + "teardown:\n  on_finish: stop\n")
    assert "after the run fails" in only_failure["gpu-after-run"]
    both = codes(write_job, RUNPOD_JOB + "teardown:\n  on_finish: stop\n  on_failure: stop\n")
    assert "gpu-after-run" not in both


def test_a_stop_from_an_image_without_runpodctl_is_warned(write_job: Write) -> None:
    stops = "teardown:\n  on_finish: stop\n  on_failure: stop\n"
    custom = re.sub(r"image: .*", "image: ghcr.io/me/trainer@sha256:" + "cd" * 32, RUNPOD_JOB)
    assert "may not have runpodctl" in codes(write_job, custom + stops).get("self-stop-image", "")
    assert "self-stop-image" not in codes(write_job, RUNPOD_JOB + stops)  # runpod/pytorch@sha256:...


PAPERSPACE = """
version: 1
name: seg
platform: paperspace
state: running
machine:
  gpu: A4000
  regions: [ny2]
  template: ml-in-a-box
  public_ip: static
storage:
  volume_gb: 100
run:
  command: python train.py
"""


def _paperspace(write_job: Write, text: str) -> dict[str, object]:
    plan = build_plan([write_job(text)], live(), now=NOW, env={})  # type: ignore[list-item]
    return {f.code: f for f in plan.all_findings() if f.code == "paperspace-no-self-stop"}


def test_a_paperspace_machine_asked_to_stop_as_its_run_ends_says_it_cannot_stop_itself(
    write_job: Write,
) -> None:
    """Issue 37: Paperspace documents no on-box action that ends its hourly billing without its
    team-wide API key on the machine, so the plan says who stops it and what bills until then."""
    assert _paperspace(write_job, PAPERSPACE) == {}  # keep: nothing was asked of the machine
    found = _paperspace(write_job, PAPERSPACE + "teardown:\n  on_finish: stop\n  on_failure: stop\n")
    f = found["paperspace-no-self-stop"]
    assert f.severity == "warning"  # type: ignore[attr-defined]
    summary = f.summary  # type: ignore[attr-defined]
    assert "after the run finishes or fails, this machine keeps billing $" in summary, summary
    assert "until gpujob watch or apply stops it" in summary and "auto_shutdown" not in summary
    backstop = PAPERSPACE.replace("public_ip: static", "public_ip: static\n  auto_shutdown: 24h")
    clocked = _paperspace(write_job, backstop + "teardown:\n  on_failure: stop\n")
    summary = clocked["paperspace-no-self-stop"].summary  # type: ignore[attr-defined]
    assert "after the run fails," in summary and "machine.auto_shutdown turns it off 24h after" in summary
