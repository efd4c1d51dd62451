"""Which pod is a migrated one (gpujob.plan.migration.migrated): the job's pod under a new id, the
recorded one gone, on the job's network volume."""

from __future__ import annotations

from datetime import UTC, datetime

from gpujob.live import LiveResource
from gpujob.plan.migration import migrated
from gpujob.plan.records import LaunchRecord

AT = datetime(2026, 12, 1, tzinfo=UTC)
REC = LaunchRecord(job="j", platform="runpod", resource_id="old", at=AT)
VOL = LiveResource.available("runpod", "network_volume", "v1", "gpujob-j--ckpts--p")


def pod(pid: str, volume: str | None = "v1") -> LiveResource:
    return LiveResource(
        platform="runpod", kind="pod", id=pid, name="gpujob-j--p", status="running", network_volume_id=volume
    )


def test_the_jobs_pod_under_a_new_id_with_the_old_one_gone_is_a_migration() -> None:
    new = pod("new")
    m = migrated(REC, new, [new, VOL], VOL)
    assert m is not None and m.old_id == "old" and m.new is new
    assert "pod old was migrated by RunPod to pod new" in m.describe()


def test_not_a_migration_when_the_old_pod_is_still_there_or_nothing_changed() -> None:
    new, old = pod("new"), pod("old")
    assert migrated(REC, new, [new, old, VOL], VOL) is None  # two pods: the planner's other rules decide
    assert migrated(REC, old, [old, VOL], VOL) is None  # the recorded pod itself
    assert migrated(None, new, [new], None) is None  # nothing recorded: nothing to follow


def test_a_pod_on_other_storage_is_not_the_jobs_data_come_back() -> None:
    other = pod("new", volume="v9")
    assert migrated(REC, other, [other, VOL], VOL) is None
    assert (
        migrated(REC, pod("new", volume=None), [VOL], None) is not None
    )  # a volume disk job: markers decide
