"""Adopting a migrated pod in the state (gpujob.apply.migration.follow): the launch record moves to the
new id once; a pod without the job's env marker is not adopted."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import UTC, datetime
from pathlib import Path

from gpujob import naming
from gpujob.apply.migration import follow
from gpujob.live import LiveResource
from gpujob.plan.records import LaunchRecord, load_launch_record, save_launch_record
from gpujob.spec.load import load_specs
from gpujob.state import open_store

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "job.yaml"
PROJECT = "proj1"


def pod(pid: str, marker: str) -> LiveResource:
    return LiveResource(platform="runpod", kind="pod", id=pid, name=naming.machine_name("quickstart", PROJECT),
                        status="running", network_volume_id="v1", attributes={"project": marker})  # fmt: skip


def test_a_migrated_pod_is_adopted_once_and_a_pod_without_the_marker_never(tmp_path: Path) -> None:
    shutil.copy(QUICKSTART, tmp_path / "job.yaml")
    loaded = dataclasses.replace(load_specs([tmp_path / "job.yaml"])[0], project=PROJECT)
    store = open_store(loaded.path)
    save_launch_record(store, LaunchRecord(job="quickstart", platform="runpod", resource_id="old",
                                           at=datetime(2026, 12, 1, tzinfo=UTC)))  # fmt: skip
    vol = LiveResource.available(
        "runpod", "network_volume", "v1", naming.volume_name("quickstart", "ckpts", PROJECT)
    )
    assert follow(store, loaded, [pod("new", "someone-else"), vol]) is None  # not the job's pod
    assert load_launch_record(store, "quickstart").resource_id == "old"  # type: ignore[union-attr]
    moved = follow(store, loaded, [pod("new", PROJECT), vol])
    assert moved is not None and moved.old_id == "old" and moved.new.id == "new"
    assert load_launch_record(store, "quickstart").resource_id == "new"  # type: ignore[union-attr]
    assert follow(store, loaded, [pod("new", PROJECT), vol]) is None  # adopted once
