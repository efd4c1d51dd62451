"""The plan's choice across platforms: pure, from live quotes."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.failover.choice import choose
from gpujob.failover.planning import with_moves
from gpujob.live import LiveResource, LiveState, PriceQuote
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.spec.load import load_spec
from tests.failover.jobs import job_text

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RP_GPUS = ("NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000")


def _out(gpu: str, cloud: str = "secure") -> PriceQuote:
    """RunPod's catalog: the GPU out of stock (the spot quote from the profile carries no stock)."""
    return PriceQuote(
        platform="runpod", gpu_id=gpu, cloud=cloud, price_hour=0.7, available=False, source="t", as_of=NOW
    )


@pytest.fixture
def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    p = tmp_path / "job.yaml"
    p.write_text(job_text())
    return dataclasses.replace(load_spec(p), project="testproj")


def test_runpod_in_stock_serves_and_nothing_moves(loaded) -> None:  # type: ignore[no-untyped-def]
    c = choose(loaded.spec, -1, [])
    assert c.here.serves and c.move_to is None and not c.stuck
    assert [p.platform for p in c.places] == ["runpod", "paperspace"]
    assert all(p.usd_per_hour is not None for p in c.places)


def test_no_capacity_on_every_gpu_moves_to_the_fallback(loaded) -> None:  # type: ignore[no-untyped-def]
    c = choose(loaded.spec, -1, [_out(g) for g in RP_GPUS])
    assert not c.here.serves and "no capacity for any of RTX4090, A6000 (spot)" in c.here.why
    assert c.move_to is not None and c.move_to.platform == "paperspace" and c.move_to.entry == 0
    assert c.move_to.usd_per_hour is not None and c.move_to.usd_per_hour <= 1.0  # the budget caps it


def test_a_job_that_waits_stays_until_its_waits_run_out(loaded) -> None:  # type: ignore[no-untyped-def]
    machine = loaded.spec.machine.model_copy(update={"when_unavailable": "wait"})
    spec = loaded.spec.model_copy(update={"machine": machine})
    out = [_out(g) for g in RP_GPUS]
    c = choose(spec, -1, out)
    assert c.here.serves and c.move_to is None and "waits for capacity" in (c.here.offer or "")
    moved = choose(spec, -1, out, failed_starts=3)  # waits past wait_up_to are failed starts
    assert moved.move_to is not None and moved.move_to.platform == "paperspace"


def test_one_gpu_left_is_enough(loaded) -> None:  # type: ignore[no-untyped-def]
    c = choose(loaded.spec, -1, [_out(RP_GPUS[0])])
    assert c.here.serves and c.move_to is None and c.here.offer and "A6000" in c.here.offer


def test_a_running_machine_is_served_whatever_stock_is_left(loaded) -> None:  # type: ignore[no-untyped-def]
    c = choose(loaded.spec, -1, [_out(g) for g in RP_GPUS], running_here=True)
    assert c.here.serves and c.move_to is None


def test_failed_starts_reach_failover_after(loaded) -> None:  # type: ignore[no-untyped-def]
    assert choose(loaded.spec, -1, [], failed_starts=2).move_to is None
    c = choose(loaded.spec, -1, [], failed_starts=3)
    assert c.move_to is not None and "3 failed starts" in c.why


def test_over_the_price_cap_everywhere_is_stuck(loaded) -> None:  # type: ignore[no-untyped-def]
    spec = loaded.spec.model_copy(
        update={"budget": loaded.spec.budget.model_copy(update={"max_hourly_usd": 0.01})}
    )
    c = choose(spec, -1, [])
    assert c.stuck and "over the price cap" in c.here.why


def test_failback_only_when_asked(loaded) -> None:  # type: ignore[no-untyped-def]
    assert choose(loaded.spec, 0, []).move_to is None  # paperspace serves; failback: never
    back = loaded.spec.model_copy(update={"failback": "auto"})
    c = choose(back, 0, [])
    assert c.failback and c.move_to is not None and c.move_to.entry == -1


def _pod(status: str) -> LiveResource:
    return LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-bert--testproj", status=status,
                        gpu_id=RP_GPUS[0], gpu_count=1, attributes={"project": "testproj"})  # fmt: skip


def test_the_plan_shows_one_move_with_both_platforms_money(loaded) -> None:  # type: ignore[no-untyped-def]
    live = LiveState(read_at=NOW, resources=[_pod("stopped")], quotes=[_out(g) for g in RP_GPUS])
    plan = build_plan([loaded], live, now=NOW, env={})
    actions = plan.jobs[0].actions
    assert [a.kind for a in actions] == [ActionKind.MOVE] and actions[0].id == "bert.move"
    move = actions[0]
    assert move.platform == "paperspace" and not move.gated and move.data.wipes == []
    assert move.billing.starts and "A4000" in move.billing.starts[0].what
    summary = move.billing.summary
    assert summary.startswith("paperspace: 1× A4000 in ny2 at $") and summary.count("/h") == 1, summary
    assert summary.endswith(" starts; runpod: $0.00/month kept"), summary
    text = "\n".join(move.reasons)
    assert "runpod (runs here now): cannot serve" in text and "paperspace (fallback[0]): can serve" in text
    assert "carries no checkpoint" in text  # none verified here yet


def test_the_plan_keeps_its_own_actions_while_runpod_serves(loaded) -> None:  # type: ignore[no-untyped-def]
    live = LiveState(read_at=NOW, resources=[_pod("stopped")], quotes=[_out(RP_GPUS[0])])
    plan = build_plan([loaded], live, now=NOW, env={})
    kinds = [a.kind for a in plan.jobs[0].actions]
    assert ActionKind.MOVE not in kinds and kinds  # its own platform's plan, untouched
    assert any(f.code == "failover" and f.severity == "info" for f in plan.jobs[0].findings)


def test_with_moves_leaves_jobs_without_fallback_alone(tmp_path: Path) -> None:
    p = tmp_path / "job.yaml"
    p.write_text(job_text(fallback=""))
    ls = dataclasses.replace(load_spec(p), project="testproj")
    live = LiveState(read_at=NOW, resources=[], quotes=[_out(g) for g in RP_GPUS])
    plan = build_plan([ls], live, now=NOW, env={})
    assert with_moves([ls], plan.jobs, live) == plan.jobs


def test_failed_starts_count_the_trailing_failed_recoveries() -> None:
    from types import SimpleNamespace

    from gpujob.failover.watching import failed_starts
    from gpujob.watch.ledger import Recovery

    ledger = SimpleNamespace(
        recoveries=[
            Recovery(at=NOW, what="bert.pod.start", ok=False),
            Recovery(at=NOW, what="bert.pod.start"),
        ]
        + [Recovery(at=NOW, what="bert.pod.start", ok=False) for _ in range(3)]
    )
    assert failed_starts(ledger) == 3
    ledger.recoveries.append(Recovery(at=NOW, what="bert.move", ok=False))
    assert failed_starts(ledger) == 0  # a failed move starts the count again


def test_spot_retired_on_its_own_platform_moves_and_no_longer_blocks(loaded) -> None:  # type: ignore[no-untyped-def]
    live = LiveState(read_at=NOW, resources=[_pod("stopped")], quotes=[])
    jp = build_plan([loaded], live, now=NOW, env={}).jobs[0]
    assert not any(a.kind is ActionKind.MOVE for a in jp.actions)  # in stock, spot API there: it stays
    gone = live.model_copy(update={"spot_unavailable": {"runpod": "HTTP 410 Gone"}})
    jp = build_plan([loaded], gone, now=NOW, env={}).jobs[0]
    assert [a.kind for a in jp.actions] == [ActionKind.MOVE]
    assert "spot API is gone (HTTP 410 Gone)" in jp.actions[0].reasons[0]
    assert [f.severity for f in jp.findings if f.code == "spot-retired"] == ["info"]  # no longer blocks
    # A spot pod still running is served; spot: prefer is not blocked by it at all.
    assert choose(loaded.spec, -1, [], running_here=True, spot_gone=gone.spot_unavailable).move_to is None
    prefer = loaded.spec.model_copy(
        update={"machine": loaded.spec.machine.model_copy(update={"spot": "prefer"})}
    )
    assert choose(prefer, -1, [], spot_gone=gone.spot_unavailable).move_to is None
    # Nor does a job on its fallback move back to a spot: true home whose spot API is gone.
    back = loaded.spec.model_copy(update={"failback": "auto"})
    assert choose(back, 0, []).failback
    assert choose(back, 0, [], spot_gone=gone.spot_unavailable).move_to is None


def test_failback_waits_for_a_fresh_verified_pull(loaded) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from gpujob.failover.watching import FAILBACK_FRESH_S, _just_pulled
    from gpujob.plan.records import PulledFile, PullRecord, save_pull_record
    from gpujob.state import open_store

    assert not _just_pulled(loaded, NOW)  # nothing pulled yet
    f = PulledFile(name="step_00000040.json", size=3, sha256="a", remote_sha256="a", verified=True, at=NOW)
    save_pull_record(open_store(loaded.path), PullRecord(job="bert", platform="paperspace", remote_dir="/w",
                                                         local_dir="/l", files=[f], at=NOW))  # fmt: skip
    assert _just_pulled(loaded, NOW + timedelta(seconds=FAILBACK_FRESH_S - 1))
    assert not _just_pulled(loaded, NOW + timedelta(seconds=FAILBACK_FRESH_S + 1))


def test_the_moving_plan_counts_the_money_there_and_what_it_keeps(loaded) -> None:  # type: ignore[no-untyped-def]
    """Running, parked and after-apply rates of a plan that moves the job are Paperspace's (its machine,
    block storage and IP, as a plan there says) plus what RunPod keeps billing; RP8 judges RunPod's
    balance by what stays on RunPod, not by the Paperspace machine."""
    from gpujob import naming
    from gpujob.live import Account
    from gpujob.project.placement import placed_spec

    volume = LiveResource(platform="runpod", kind="network_volume", id="v1", status="available", volume_gb=20,
                          name=naming.volume_name("bert", "ckpts", "testproj"), region="EU-RO-1")  # fmt: skip
    account = Account(platform="runpod", balance_usd=50.0, spend_per_hour_usd=0.0019, read_at=NOW, source="t")
    live = LiveState(read_at=NOW, resources=[_pod("stopped"), volume], quotes=[_out(g) for g in RP_GPUS],
                     accounts={"runpod": account})  # fmt: skip
    jp = build_plan([loaded], live, now=NOW, env={}).jobs[0]
    (move,) = jp.actions
    kept = move.billing.keeps
    assert [round(m.usd_per_month, 2) for m in kept] == [1.40]
    there = dataclasses.replace(loaded, spec=placed_spec(loaded.spec, 0), entry=0, declared=loaded.spec)
    alone = build_plan([there], LiveState(read_at=NOW, resources=[], quotes=[]), now=NOW, env={}).jobs[0]
    assert alone.platform == "paperspace" and alone.running_usd_per_hour > move.billing.starts[0].usd_per_hour
    kept_hour = sum(m.usd_per_hour for m in kept)
    assert jp.running_usd_per_hour == pytest.approx(alone.running_usd_per_hour + kept_hour)
    assert jp.after_usd_per_hour == pytest.approx(alone.after_usd_per_hour + kept_hour, abs=1e-4)
    assert move.billing.hourly_after == jp.after_usd_per_hour
    assert jp.parked_usd_per_month == pytest.approx(alone.parked_usd_per_month + 1.40)
    # Its meters are the ones a plan there starts: the GPU, and the block storage and IP beside it.
    started = [(m.what, m.usd_per_month) for a in alone.actions if a.billing for m in a.billing.starts]
    assert [(m.what, m.usd_per_month) for m in move.billing.starts] == started and len(started) == 3, started
    (rp8,) = [f for f in jp.findings if f.code == "RP8"]
    assert "this plan leaves it there" in rp8.detail, rp8  # the A4000 bills Paperspace, not RunPod
    # An account whose spend rate leaves storage out ($0.00/h, as the simulator's): the kept volume bills on.
    nothing = Account(platform="runpod", balance_usd=50.0, spend_per_hour_usd=0.0, read_at=NOW, source="t")
    jp = build_plan(
        [loaded], live.model_copy(update={"accounts": {"runpod": nothing}}), now=NOW, env={}
    ).jobs[0]
    (rp8,) = [f for f in jp.findings if f.code == "RP8"]
    assert "nothing bills" not in rp8.summary and f"at ${kept_hour:.4f}/h" in rp8.summary, rp8
