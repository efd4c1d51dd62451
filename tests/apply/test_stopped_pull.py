"""`gpujob pull` of a job whose machine is gone (issue 37): its last complete records, about the machine
they name, with every local copy there, are reported and nothing is read; without them the pull fails
as before, saying the machine does not exist."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply.stopped_pull import pull_view
from gpujob.errors import GpujobError
from gpujob.plan.records import PulledFile, PullRecord, save_pull_record
from tests.plan.conftest import write_job

__all__ = ["write_job"]  # the fixture

AT = datetime(2026, 12, 6, tzinfo=UTC)


def _view(write_job: Any, tmp_path: Path) -> Any:
    loaded = write_job()

    def target() -> Any:
        raise GpujobError("job: this checkout's pod does not exist")

    return SimpleNamespace(
        spec=loaded.spec, loaded=loaded, state_dir=tmp_path / "state", machine=None, target=target
    )


def _never(*_: Any) -> Any:
    raise AssertionError("a gone machine was read")


def test_a_gone_machine_whose_files_came_home_reports_its_records(write_job: Any, tmp_path: Path) -> None:
    view = _view(write_job, tmp_path)
    with pytest.raises(GpujobError, match="does not exist"):  # no record: as before
        asyncio.run(pull_view(view, None, None, _never, _never, lambda _t: None))
    local = tmp_path / "checkpoints" / "step_1.json"
    local.parent.mkdir()
    local.write_text("{}")
    f = PulledFile(name="step_1.json", size=2, sha256="ab", verified=True, at=AT, local_path=str(local))
    rec = PullRecord(job=view.spec.name, platform="runpod", resource_id="p-old", remote_dir="/workspace/ckpt",
                     local_dir=str(local.parent), remote_files={"step_1.json": "ab"}, files=[f], at=AT)  # fmt: skip
    save_pull_record(view.state_dir, rec)
    said: list[str] = []
    ck, out = asyncio.run(pull_view(view, None, None, _never, _never, said.append))
    assert ck == rec and out is None and "nothing to pull: its machine is gone" in said[0]
    local.unlink()  # the local copy lost since: nothing can bring it back from a gone machine
    with pytest.raises(GpujobError, match="does not exist"):
        asyncio.run(pull_view(view, None, None, _never, _never, said.append))
