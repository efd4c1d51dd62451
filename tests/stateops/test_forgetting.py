"""What `gpujob state rm TARGET` picks (gpujob.stateops.forgetting.targets): a job's name stands for every
resource the job owns now, an id or a name for that one resource; another checkout's look-alike is never
picked, a volume a sweep's queues share is picked once, and a target that names nothing is refused with
what it could have been."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.errors import GpujobError
from gpujob.live import LiveResource
from gpujob.stateops.forgetting import targets
from tests.owners import OTHER, PROJECT, machine, marker, volume


def _pod(job: str, id: str, project: str = PROJECT) -> LiveResource:
    return LiveResource(
        platform="runpod", kind="pod", id=id, name=machine(job, project), status="running",
        attributes=marker(project),
    )  # fmt: skip


def _volume(job: str, id: str, project: str = PROJECT) -> LiveResource:
    return LiveResource.available("runpod", "network_volume", id, volume(job, "data", project))


def _job(name: str, tmp_path: Path) -> Any:
    return SimpleNamespace(spec=SimpleNamespace(name=name, platform="runpod"), project=PROJECT, path=tmp_path)


@pytest.fixture
def listed() -> dict[str, list[LiveResource]]:
    return {
        "runpod": [
            _pod("train", "pod-1"),
            _volume("train", "vol-1"),
            _pod("eval", "pod-2"),
            _pod("train", "pod-9", project=OTHER),  # the same job name in another checkout
        ]
    }


def test_a_job_name_picks_every_resource_that_job_owns_and_nothing_of_another_checkout(
    tmp_path: Path, listed: dict[str, list[LiveResource]]
) -> None:
    loaded = [_job("train", tmp_path), _job("eval", tmp_path)]
    assert [r.id for _, r in targets(loaded, listed, "train")] == ["pod-1", "vol-1"]
    assert [r.id for _, r in targets(loaded, listed, "eval")] == ["pod-2"]


def test_an_id_or_a_name_picks_that_one_resource_with_its_job(
    tmp_path: Path, listed: dict[str, list[LiveResource]]
) -> None:
    loaded = [_job("train", tmp_path), _job("eval", tmp_path)]
    (ls, r), = targets(loaded, listed, "vol-1")  # fmt: skip
    assert (ls.spec.name, r.id) == ("train", "vol-1")
    (ls, r), = targets(loaded, listed, machine("eval"))  # fmt: skip
    assert (ls.spec.name, r.id) == ("eval", "pod-2")


def test_another_checkouts_resource_cannot_be_forgotten_by_its_id(
    tmp_path: Path, listed: dict[str, list[LiveResource]]
) -> None:
    with pytest.raises(GpujobError) as refused:
        targets([_job("train", tmp_path)], listed, "pod-9")
    assert "nothing here is named 'pod-9'" in str(refused.value)
    assert refused.value.hint is not None
    assert "pod-1 (pod " in refused.value.hint and "pod-9" not in refused.value.hint


def test_a_resource_two_entries_name_is_picked_once(tmp_path: Path) -> None:
    shared = _volume("train", "vol-1")
    listed = {"runpod": [_pod("train", "pod-1"), shared, shared]}
    assert [r.id for _, r in targets([_job("train", tmp_path)], listed, "train")] == ["pod-1", "vol-1"]
