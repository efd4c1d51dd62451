"""A finished run's files come home before its machine stops (gpujob.watch.home, issue 37): a failed
final pull holds the stop a bounded number of times, then the stop goes through and the job waits for
a person instead of finishing; a sweep queue found stopped with its cells not pulled waits the same way,
and is finished once the records say every file is home."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.live import LiveResource
from gpujob.plan.records import PulledFile, PullRecord, save_pull_record
from gpujob.watch import home

AT = datetime(2026, 12, 6, tzinfo=UTC)
POD = LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-job", status="stopped")


class _Watcher:
    def __init__(self) -> None:
        self.final_failures: dict[str, int] = {}
        self.said: list[tuple[str, str, str, dict[str, Any]]] = []

    def say(self, job: Any, kind: str, happened: str, did: str = "", **kw: Any) -> None:
        self.said.append((kind, happened, did, kw))


def _job(write_job: Any, tmp_path: Path) -> Any:
    return SimpleNamespace(
        name="job",
        loaded=write_job(),
        state_dir=tmp_path / "state",
        path=tmp_path / "job.yaml",
        blocked_ticks=0,
    )


def _record(machine: str, *, verified: bool = True) -> PullRecord:
    f = PulledFile(name="step_1.json", size=2, sha256="ab", remote_sha256="ab", verified=verified, at=AT,
                   verify_output="" if verified else "bad\nstep_1.json: refused\n")  # fmt: skip
    return PullRecord(job="job", platform="runpod", resource_id=machine, remote_dir="/workspace/ckpt",
                      local_dir="/tmp/x", remote_files={"step_1.json": "ab"}, files=[f], at=AT)  # fmt: skip


def test_a_failed_final_pull_holds_the_stop_until_the_last_try_then_lets_it_go(
    write_job: Any, tmp_path: Path
) -> None:
    w, job = _Watcher(), _job(write_job, tmp_path)
    running = POD.model_copy(update={"status": "running"})
    held = [home.hold_stop(w, job, running) for _ in range(home.FINAL_PULL_TRIES)]
    assert held == [True] * (home.FINAL_PULL_TRIES - 1) + [False]
    assert [k for k, *_ in w.said] == ["holding"] * (home.FINAL_PULL_TRIES - 1) + ["pull-gave-up"]
    assert "keeps running until its files are home (final pull 1 of 5 failed)" in w.said[0][1]
    assert w.said[-1][3] == {"level": "human"}


def test_a_job_whose_watch_gave_up_waits_for_a_person_until_its_records_say_home(
    write_job: Any, tmp_path: Path
) -> None:
    w, job = _Watcher(), _job(write_job, tmp_path)
    w.final_failures["job"] = home.FINAL_PULL_TRIES
    save_pull_record(job.state_dir, _record("p1", verified=False))
    assert home.unhome(w, job, POD) is True
    kind, happened, did, kw = w.said[-1]
    assert kind == "needs-human" and kw == {"level": "human", "topic": "home"}
    assert "gpujob-job is stopped with them on its disk" in happened
    assert "gpujob pull" in did and job.blocked_ticks == 1
    save_pull_record(job.state_dir, _record("p1"))  # the person pulled them (gpujob pull)
    assert home.unhome(w, job, POD) is False and "job" not in w.final_failures


def test_a_pull_record_of_another_machine_does_not_count_as_home(write_job: Any, tmp_path: Path) -> None:
    w, job = _Watcher(), _job(write_job, tmp_path)
    w.final_failures["job"] = home.FINAL_PULL_TRIES
    save_pull_record(job.state_dir, _record("an-older-pod"))
    assert home.is_home(job, POD) is False and home.unhome(w, job, POD) is True
    assert home.is_home(job, None) is False
    assert home.unhome(w, job, None) is False  # terminated through the gate: nothing left to read


def test_a_stopped_sweep_queue_not_pulled_waits_but_a_plain_jobs_own_stop_still_finishes(
    write_job: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w, job = _Watcher(), _job(write_job, tmp_path)
    assert home.unhome(w, job, POD) is False  # a pod that stopped itself keeps its disk (docs/watch.md)
    monkeypatch.setattr("gpujob.jobfile.cells.queue_cells", lambda spec: ["lr-1.a1b2c3"])
    assert home.unhome(w, job, POD) is True
    assert "its cells' files are not all home" in w.said[-1][1]
    save_pull_record(job.state_dir, _record("p1"))
    assert home.unhome(w, job, POD) is False


def test_incomplete_names_at_most_five_and_counts_the_rest() -> None:
    rec = SimpleNamespace(missing=lambda: [f"f{i}" for i in range(7)], unverified=list, unpullable={})
    text = home.incomplete(rec)
    assert text.count("(not pulled, or its checksum differs)") == 5 and text.endswith("; and 2 more")
