"""A pull record speaks only for the machine or volume it was pulled from: the job's name outlives its
resources, and a replacement's plan never shows (or leans on) its predecessor's pull."""

from __future__ import annotations

from collections.abc import Callable

from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.plan.records import PullRecord, current_record
from tests.plan.plan_helpers import NOW, live, pod, volume

ABSENT = {"state:__running": "state: absent"}


def record(**kw: object) -> PullRecord:
    base: dict[str, object] = dict(
        job="job", platform="runpod", resource_id="pod-gpujob-job", network_volume_id="nv-gpujob-job-ckpts",
        tier="network_volume", remote_dir="/workspace/ckpt", local_dir="/l", at=NOW,
    )  # fmt: skip
    base.update(kw)
    return PullRecord.model_validate(base)


def pull_reasons(write_job: Callable[..., object], state, rec: PullRecord) -> list[str]:  # type: ignore[no-untyped-def]
    plan = build_plan([write_job(**ABSENT)], state, now=NOW, env={}, pull_records={"job": rec})  # type: ignore[list-item]
    (pull,) = [a for a in plan.all_actions() if a.kind is ActionKind.PULL]
    return pull.reasons


def test_a_volume_record_follows_the_volume_not_the_pod() -> None:
    rec = record()
    assert rec.applies_to("pod-new", "nv-gpujob-job-ckpts")  # a later pod mounts the same volume
    assert not rec.applies_to("pod-gpujob-job", "nv-replacement")  # the volume it read was deleted
    disk = record(tier="volume_disk", network_volume_id=None)
    assert disk.applies_to("pod-gpujob-job", None) and not disk.applies_to("pod-replacement", None)
    assert not record(resource_id=None, tier="volume_disk").applies_to(None, None)
    assert current_record(rec, "pod-x", [None, "nv-gpujob-job-ckpts"]) is rec
    assert current_record(rec, "pod-x", ["nv-other"]) is None


def test_the_plan_shows_the_record_of_the_live_volume(write_job: Callable[..., object]) -> None:
    state = live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume())
    reasons = pull_reasons(write_job, state, record())
    assert any(r.startswith("last pull on record: 2026-11-29 12:00 UTC") for r in reasons), reasons


def test_a_deleted_volumes_record_is_not_shown_for_its_replacement(write_job: Callable[..., object]) -> None:
    replacement = volume(id="nv-replacement")
    state = live(pod(id="pod-new", network_volume_id="nv-replacement"), replacement)
    reasons = pull_reasons(write_job, state, record())
    assert not any("last pull on record" in r for r in reasons), reasons
    assert any(r.startswith("no pull on record") for r in reasons), reasons
