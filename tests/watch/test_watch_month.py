"""A watch tick plans as `gpujob plan` does, the project's budget.max_monthly_usd included: a restart or a
create that, with the month's spend of every job in the project (watch's ledgers), crosses the budget is
refused there, as the same start is by `gpujob plan`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from gpujob.apply.sshapi import SSHApi
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.state import open_store
from gpujob.watch.jobs import ERROR, Options
from gpujob.watch.ledger import Ledger, save_ledger
from gpujob.watch.loop import Watcher
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live
from tests.plan.test_plan_forecast import JOB


def _watcher(path: Path) -> Watcher:
    return Watcher(
        [(path, "job", open_store(path))],
        {},
        clock=type("C", (), {"now": staticmethod(lambda: NOW)})(),  # type: ignore[arg-type]
        ssh=SSHApi.default(),
        env={},
        emit=lambda event, sdir: None,
        options=Options(),
    )


def test_a_watch_tick_refuses_the_start_that_crosses_the_months_budget(write_job, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    loaded = write_job(JOB)
    p50 = build_plan([loaded], live(), now=NOW, env={}).jobs[0].forecast.p50_usd
    # Another job of the project spent $50 this month, as its watch ledger says.
    other = Ledger(job="other", first_seen=NOW - timedelta(days=2), usd=50.0, last_tick=NOW)
    save_ledger(open_store(loaded.path), other)
    w = _watcher(loaded.path)

    (tmp_path / "gpujob.yaml").write_text(f"budget: {{max_monthly_usd: {50 + p50 + 1:.2f}}}\n")
    roomy = w.plan_of([loaded], live(), NOW)
    assert not roomy.blocked and any(a.kind is ActionKind.CREATE for a in roomy.all_actions())

    (tmp_path / "gpujob.yaml").write_text(f"budget: {{max_monthly_usd: {50 + p50 - 1:.2f}}}\n")
    tight = w.plan_of([loaded], live(), NOW)
    (err,) = [f for f in tight.jobs[0].findings if f.code == "budget" and f.severity == "error"]
    assert "the month's spend $50.00 (every job in the project)" in err.summary, err.summary
    assert tight.blocked


def test_a_watch_tick_reads_the_launch_records_as_plan_does(write_job, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Paperspace never reports a machine's template or disk size: the planner reads them off the launch
    record, in a watch tick as in `gpujob plan`."""
    from gpujob.plan.records import LaunchRecord, save_launch_record

    loaded = write_job(RUNPOD_JOB)
    record = LaunchRecord(job="job", platform="runpod", resource_id="pod-x", disk_gb=77, at=NOW)
    save_launch_record(open_store(loaded.path), record)
    seen: dict[str, object] = {}
    real = build_plan

    def spy(*args, **kw):  # type: ignore[no-untyped-def]
        seen.update(kw)
        return real(*args, **kw)

    monkeypatch.setattr("gpujob.plan.planner.build_plan", spy)
    _watcher(loaded.path).plan_of([loaded], live(), NOW)
    assert seen["launch_records"] == {"job": record}


def test_a_project_file_edited_into_a_bad_budget_mid_watch_acts_on_nothing_and_says_where(
    write_job, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The tick reads the project file's budget afresh: one a person broke meanwhile is named by file,
    line and key, nothing is applied in that tick, and the watch goes on."""
    import asyncio

    loaded = write_job(JOB)
    events: list[object] = []
    w = Watcher(
        [(loaded.path, "job", open_store(loaded.path))],
        {},
        clock=type("C", (), {"now": staticmethod(lambda: NOW)})(),  # type: ignore[arg-type]
        ssh=SSHApi.default(),
        env={},
        emit=lambda event, sdir: events.append(event),
        options=Options(),
    )

    async def read(*args, **kw):  # type: ignore[no-untyped-def]
        return live()  # nothing exists: the plan would create the pod

    monkeypatch.setattr("gpujob.apply.refresh.read_live_state", read)
    applied: list[object] = []

    async def apply(*args, **kw):  # type: ignore[no-untyped-def]
        applied.append(args)
        return 0

    monkeypatch.setattr(w, "_apply", apply)
    (tmp_path / "gpujob.yaml").write_text("budget:\n  max_monthly_usd: lots\n")
    code = asyncio.run(w.tick())
    assert code == ERROR and applied == []
    (said,) = [e for e in events if getattr(e, "event", "") == "read-failed"]
    text = f"{said.happened} {said.did}"  # type: ignore[attr-defined]
    assert "gpujob.yaml" in text and "max_monthly_usd" in text and "retrying next tick" in text, text
