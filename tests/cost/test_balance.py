"""RP8, how long the RunPod balance lasts (gpujob.plan.balance): the rate after the plan, the hours it
buys, and the finding's exact words at each severity."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from gpujob.cost.model import Billing, MeterLine
from gpujob.jobfile.model import JobSpec
from gpujob.live import Account, LiveState
from gpujob.model import SourceRef
from gpujob.plan.balance import balance_finding, billed_after, lasts, planned_rate, with_balance
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan
from tests.apply.fakes import make_spec

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Source:
    spec: JobSpec

    def source(self, key_path: str) -> Any:
        return SourceRef(file="job.yaml", line=1, column=1, key=key_path)


def src(**spec: Any) -> Source:
    return Source(make_spec(**spec))


def account(balance: float | None = 100.0, spend: float | None = 1.0) -> Account:
    return Account(
        platform="runpod", balance_usd=balance, spend_per_hour_usd=spend, read_at=NOW, source="myself"
    )


def job(
    now: float = 0.0, after: float = 0.0, *, platform: str = "runpod", name: str = "toy", **kw: Any
) -> JobPlan:
    return JobPlan(job=name, platform=platform, spec_file="job.yaml", desired_state="running",  # type: ignore[arg-type]
                   current_usd_per_hour=now, after_usd_per_hour=after, **kw)  # fmt: skip


def move(to: str, keeps: float = 0.0) -> Action:
    kept = (
        [MeterLine(what="kept", usd_per_hour=keeps, usd_per_month=keeps * 720, source="t")] if keeps else []
    )
    return Action(id="toy.move", job="toy", platform=to, kind=ActionKind.MOVE, resource_kind="pod",  # type: ignore[arg-type]
                  resource_name="toy", billing=Billing(keeps=kept))  # fmt: skip


def test_lasts_reads_in_hours_then_days() -> None:
    assert lasts(47.94) == "47.9 h"
    assert lasts(48) == "2.0 days"
    assert lasts(60) == "2.5 days"


def test_the_planned_rate_is_the_account_rate_plus_what_the_plan_changes() -> None:
    jobs = [job(0.5, 2.0), job(1.0, 0.25, name="b")]
    assert planned_rate(account(spend=3.0), jobs) == pytest.approx(3.0 + 1.5 - 0.75)
    # without the account's figure: what the jobs bill now, plus the change
    assert planned_rate(account(spend=None), jobs) == pytest.approx(2.25)
    assert planned_rate(None, jobs) == pytest.approx(2.25)
    # never under what the plan's own jobs bill after it, never negative
    assert planned_rate(account(spend=0.1), [job(2.0, 1.0)]) == pytest.approx(1.0)
    assert planned_rate(account(spend=0.0), [job(2.0, 0.0)]) == 0.0
    assert billed_after([job(0, 0.1), job(0, 0.2, name="b")]) == 0.3


def test_a_move_counts_only_what_stays_or_arrives_on_runpod() -> None:
    leaving = job(2.0, 5.0, actions=[move("paperspace", keeps=0.25)])
    assert billed_after([leaving]) == 0.25  # its volume stays here; the rest goes
    arriving = job(0.0, 3.0, platform="paperspace", actions=[move("runpod", keeps=0.5)])
    assert billed_after([arriving]) == 2.5  # what it starts here, less what it keeps there
    elsewhere = job(4.0, 3.0, platform="paperspace", actions=[move("paperspace")])
    assert billed_after([elsewhere]) == 0.0
    assert planned_rate(account(spend=1.0), [elsewhere]) == pytest.approx(1.0)
    assert planned_rate(account(spend=3.0), [leaving]) == pytest.approx(1.25)
    no_billing = job(2.0, 5.0, actions=[move("paperspace")])
    assert billed_after([no_billing]) == 0.0
    assert billed_after([job(0.0, 7.0, platform="paperspace")]) == 0.0


def test_no_account_and_no_note_says_nothing() -> None:
    assert balance_finding(src(), None, 1.0, []) is None
    assert balance_finding(src(), account(balance=None), 1.0, []) is None


def test_an_unread_balance_is_an_info_with_the_reason() -> None:
    f = balance_finding(src(), None, 1.0, ["runpod: balance not read: GraphQL myself: 503"])
    assert f is not None and (f.code, f.severity, f.job) == ("RP8", "info", "toy")
    assert f.summary == "the RunPod balance was not read (GraphQL myself: 503): how long it lasts is unknown"
    assert f.fix == "check it in the console (Billing), or plan again"
    assert f.source is not None and f.source.key == "state" and f.detail == ""
    gone = balance_finding(
        src(), account(balance=None), 1.0, ["runpod: balance not read: GraphQL API is gone"]
    )
    assert gone is not None and gone.severity == "info"
    assert gone.summary == (
        "RunPod no longer reports the balance (its GraphQL API is gone; REST v2 has billing history but no "
        "balance): how long it lasts is unknown"
    )
    assert (
        gone.detail == "RunPod stops every pod when credit runs out; gpujob cannot see that coming any more."
    )
    assert gone.fix == (
        "watch the balance on the console's Billing page (or turn on auto-pay); `gpujob cost` shows what "
        "gpujob's jobs billed, from v2 billing"
    )


def test_a_balance_that_outlasts_the_run_is_an_info() -> None:
    f = balance_finding(src(run={"command": "x", "max_runtime": "10h"}), account(500.0, 2.0), 2.0, [])
    assert f is not None and f.severity == "info"
    assert f.summary == "the RunPod balance $500.00 lasts 10.4 days at $2.00/h"
    assert f.detail.startswith("the account spends $2.00/h now; this plan leaves it there (myself). ")


def test_a_balance_under_three_days_warns() -> None:
    f = balance_finding(src(run={"command": "x"}), account(100.0, 1.0), 2.0, [])
    assert f is not None and f.severity == "warning"
    assert f.summary == "the RunPod balance $100.00 lasts 2.1 days at $2.00/h: under 3 days"
    assert "changes that to $2.00/h" in f.detail
    assert f.fix == (
        "add credit or turn on auto-pay in the RunPod console, and keep the checkpoints on a network volume or "
        "pulled (`gpujob pull`)"
    )
    edge = balance_finding(src(run={"command": "x"}), account(72.0, 1.0), 1.0, [])
    assert edge is not None and edge.severity == "info"  # exactly 72 h is not under 3 days


def test_a_balance_shorter_than_the_run_is_an_error_with_the_shortfall() -> None:
    s = src(run={"command": "x", "max_runtime": "10h"})
    f = balance_finding(s, account(15.0, 1.0), 2.0, [])
    assert f is not None and f.severity == "error"
    assert f.summary == (
        "the RunPod balance $15.00 lasts 7.5 h at $2.00/h, less than run.max_runtime (10 h): "
        "the run cannot finish on this credit"
    )
    assert f.fix.startswith("add at least $5.00 to the RunPod balance")
    assert f.source is not None and f.source.key == "run.max_runtime"
    assert f.detail.startswith(
        "the account spends $1.00/h now; this plan changes that to $2.00/h (myself). When"
    )
    exact = balance_finding(s, account(20.0, 1.0), 2.0, [])
    assert exact is not None and exact.severity == "warning"  # 10 h of credit does finish a 10 h run
    # a job that will not run is not held to its max_runtime
    parked = balance_finding(
        src(state="stopped", run={"command": "x", "max_runtime": "10h"}), account(15.0), 2.0, []
    )
    assert parked is not None and parked.severity == "warning"


def test_nothing_billing_after_the_plan_is_an_info() -> None:
    f = balance_finding(src(), account(5.0, 1.0), 0.0, [])
    assert f is not None and f.severity == "info"
    assert f.summary == "RunPod balance $5.00; nothing bills after this plan"
    assert f.detail.endswith(
        "When credit cannot cover the pods RunPod stops them all (volume disks keep billing) and then may "
        "delete pods and storage; it keeps no backups."
    )
    assert f.fix == "" and f.source is not None and f.source.key == "state"
    assert balance_finding(src(), account(5.0, 1.0), 0.5, []).severity == "warning"  # type: ignore[union-attr]


def test_the_basis_says_where_the_rate_comes_from() -> None:
    unknown = balance_finding(src(run={"command": "x"}), account(1000.0, None), 2.0, [])
    assert unknown is not None
    assert unknown.detail.startswith(
        "the account's own spend rate was not reported; $2.00/h is what this plan's jobs bill (myself)."
    )
    storage = balance_finding(src(run={"command": "x"}), account(1000.0, 0.5), 0.75, [], kept=0.75)
    assert storage is not None
    assert storage.detail.startswith(
        "the account reports $0.50/h now; this plan's jobs bill $0.75/h after it (volumes and stopped"
    )
    same = balance_finding(src(run={"command": "x"}), account(1000.0, 0.75), 0.75, [], kept=0.75)
    assert same is not None and "this plan leaves it there" in same.detail


def test_with_balance_adds_the_finding_to_each_runpod_job_only() -> None:
    live = LiveState(read_at=NOW, accounts={"runpod": account(15.0, 0.0)})
    specs = [Source(make_spec(name="toy", run={"command": "x", "max_runtime": "10h"})),
             Source(make_spec(name="gone", state="absent")),
             Source(make_spec(name="ps", platform="paperspace", machine={"gpu": "A6000", "spot": False,
                                                                         "regions": ["NY2"], "image": "img"},
                              storage={"network_volume": None}))]  # fmt: skip
    info = Finding(code="x", severity="info", summary="earlier")
    jobs = [job(0.0, 2.0, findings=[info]), job(0.0, 0.0, name="gone"), job(platform="paperspace", name="ps")]
    out = with_balance(specs, jobs, live)  # type: ignore[arg-type]
    assert [f.code for f in out[0].findings] == ["RP8", "x"]  # an error goes first
    assert out[0].findings[0].severity == "error"
    assert out[1].findings == [] and out[2].findings == []
    only_ps = [job(platform="paperspace", name="ps")]
    assert with_balance(specs, only_ps, live) is only_ps  # type: ignore[arg-type]
    unread = LiveState(read_at=NOW, account_notes=["paperspace: x", "runpod: balance not read: timeout"])
    f = with_balance(specs, jobs, unread)[0].findings[1]  # type: ignore[arg-type]  # info: after "earlier"
    assert f.summary == "the RunPod balance was not read (timeout): how long it lasts is unknown"


def test_a_plan_with_no_runpod_job_is_returned_as_it_is() -> None:
    specs = [Source(make_spec(name="ps", platform="paperspace", machine={"gpu": "A6000", "spot": False,
                                                                         "regions": ["NY2"], "image": "img"},
                              storage={"network_volume": None}))]  # fmt: skip
    live = LiveState(read_at=NOW, accounts={"runpod": account(15.0, 0.0)})
    within = [job(1.0, 1.0, platform="paperspace", name="ps", actions=[move("paperspace")])]
    assert with_balance(specs, within, live) is within  # type: ignore[arg-type]  # a move that stays off RunPod


def test_with_balance_counts_what_the_plan_keeps_billing_in_the_basis() -> None:
    # the account's figure (0.50/h) leaves out the stopped pod's disk the plan's own meters bill on
    live = LiveState(read_at=NOW, accounts={"runpod": account(1000.0, 0.5)})
    specs = [Source(make_spec(name="toy", state="stopped"))]
    out = with_balance(specs, [job(1.0, 0.75)], live)  # type: ignore[arg-type]
    detail = out[0].findings[0].detail
    assert detail.startswith(
        "the account reports $0.50/h now; this plan's jobs bill $0.75/h after it (volumes and stopped"
    )


def test_the_basis_reads_what_the_plan_keeps_only_when_it_is_the_whole_rate() -> None:
    # without `kept`, the plan keeps nothing billing: the account's figure is the basis
    plain = balance_finding(src(run={"command": "x"}), account(1000.0, 0.5), 1.0, [])
    assert plain is not None and plain.detail.startswith("the account spends $0.50/h now; this plan changes")
    # the rate is more than what the plan keeps: the account's figure, changed
    more = balance_finding(src(run={"command": "x"}), account(1000.0, 0.5), 2.0, [], kept=1.5)
    assert more is not None and more.detail.startswith(
        "the account spends $0.50/h now; this plan changes that to $2.00/h"
    )
    # at the edges: a hundredth of a cent over the account's figure still counts as storage left out
    edge = balance_finding(src(run={"command": "x"}), account(1000.0, 0.0), 0.00005, [], kept=0.00005)
    assert edge is not None and edge.detail.startswith("the account reports $0.00/h now; this plan's jobs")
    moved = balance_finding(src(run={"command": "x"}), account(1000.0, 0.0), 0.00005, [])
    assert moved is not None and moved.detail.startswith("the account spends $0.00/h now; this plan changes")


def test_the_shortfall_fix_names_both_ways_out() -> None:
    f = balance_finding(src(run={"command": "x", "max_runtime": "10h"}), account(15.0, 1.0), 2.0, [])
    assert f is not None
    assert (
        f.fix == "add at least $5.00 to the RunPod balance (or turn on auto-pay), or shorten run.max_runtime"
    )
