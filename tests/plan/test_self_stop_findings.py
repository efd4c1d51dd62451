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
