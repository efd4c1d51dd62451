"""What the planner reads of past pulls (gpujob.plan.records.job_pull_records): each loaded job's own
latest pull record, from the store of the project its job file belongs to, and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gpujob.plan.records import PullRecord, job_pull_records, save_pull_record
from gpujob.state import open_store
from tests.apply.fakes import FakeLoaded, make_spec

AT = datetime(2026, 11, 29, tzinfo=UTC)


def _record(job: str, remote_dir: str) -> PullRecord:
    return PullRecord(job=job, platform="runpod", remote_dir=remote_dir, local_dir="checkpoints", at=AT)


def test_each_job_gets_its_own_record_from_its_own_project(tmp_path: Path) -> None:
    a, b, c = (tmp_path / p / "job.yaml" for p in ("a", "b", "c"))
    for p in (a, b, c):
        p.parent.mkdir()
    save_pull_record(open_store(a), _record("toy", "/workspace/a"))
    save_pull_record(open_store(a), _record("not-loaded", "/workspace/x"))
    save_pull_record(open_store(b), _record("bert", "/workspace/b"))
    loaded = [
        FakeLoaded(make_spec(name="toy"), a),
        FakeLoaded(make_spec(name="bert"), b),
        FakeLoaded(make_spec(name="never-pulled"), c),
    ]
    got = job_pull_records(loaded)
    assert {job: rec.remote_dir for job, rec in got.items()} == {
        "toy": "/workspace/a",
        "bert": "/workspace/b",
    }
    assert list(c.parent.iterdir()) == []  # planning reads; it creates no store where there was none
