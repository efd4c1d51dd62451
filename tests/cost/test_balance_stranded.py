"""RP8 next to a stopped pod that holds un-pulled checkpoints (gpujob.plan.balance): an unread balance is
then a warning naming the clock that deletes that pod, word for word; a read balance, or no such pod,
leaves the finding as it was."""

from __future__ import annotations

from typing import Any

from gpujob.live import Account, LiveState
from gpujob.plan.balance import with_balance
from gpujob.plan.model import Finding, JobPlan
from tests.apply.fakes import make_spec
from tests.cost.test_balance import NOW, Source, account, job

NOTE = "runpod: balance not read: GraphQL myself: 503"
UNREAD = "the RunPod balance was not read (GraphQL myself: 503): how long it lasts is unknown"
TAIL = (
    " holds un-pulled checkpoints, and RunPod deletes a stopped pod when the balance runs low (and after "
    "about 30 days stopped), with no backup"
)
FIX = (
    "pull them now (state: running, `gpujob apply`, then `gpujob pull`), and turn on Auto-Pay in the console "
    "(Billing; `gpujob doctor` says what it can of it)"
)


def stranded(pod: str) -> Finding:
    return Finding(
        code="RP8",
        severity="warning",
        summary=f"stopped pod {pod} holds un-pulled checkpoints (/ckpt) on its volume disk: never pulled",
        job="toy",
    )


def rp8(jobs: list[JobPlan], live: LiveState, **spec: Any) -> Finding:
    specs = [Source(make_spec(name="toy", state="stopped", **spec))]
    out = with_balance(specs, jobs, live)  # type: ignore[arg-type]
    return next(f for f in out[0].findings if f.code == "RP8" and not f.summary.startswith("stopped pod"))


def unread(acct: Account | None = None) -> LiveState:
    return LiveState(read_at=NOW, accounts={"runpod": acct} if acct is not None else {}, account_notes=[NOTE])


def test_an_unread_balance_beside_a_stranded_pod_is_a_warning_that_names_it() -> None:
    f = rp8([job(findings=[stranded("toy-pod")])], unread())
    assert (f.code, f.severity, f.job) == ("RP8", "warning", "toy")
    assert f.summary == UNREAD + "; stopped pod toy-pod" + TAIL
    assert f.fix == FIX
    assert f.detail == "" and f.source is not None and f.source.key == "state"


def test_every_stranded_pod_is_named_and_other_findings_are_not() -> None:
    other = Finding(code="RP8", severity="warning", summary="stopped pod x keeps billing", job="toy")
    f = rp8([job(findings=[stranded("a-pod"), other, stranded("b-pod")])], unread())
    assert f.summary == UNREAD + "; stopped pod a-pod, b-pod" + TAIL


def test_an_account_without_a_balance_reads_as_unread() -> None:
    f = rp8([job(findings=[stranded("toy-pod")])], unread(account(balance=None)))
    assert f.severity == "warning" and f.summary == UNREAD + "; stopped pod toy-pod" + TAIL


def test_without_a_stranded_pod_the_unread_balance_stays_an_info() -> None:
    info = Finding(code="x", severity="info", summary="stopped pod toy-pod holds nothing", job="toy")
    f = rp8([job(findings=[info])], unread())
    assert (f.severity, f.summary, f.fix) == (
        "info",
        UNREAD,
        "check it in the console (Billing), or plan again",
    )


def test_a_read_balance_is_left_as_it_reads() -> None:
    ample = rp8(
        [job(findings=[stranded("toy-pod")])],
        LiveState(read_at=NOW, accounts={"runpod": account(1000.0, 0.5)}),
    )
    assert ample.severity == "info" and ample.summary.startswith("the RunPod balance $1,000.00 lasts ")
    low = rp8(
        [job(0.0, 2.0, findings=[stranded("toy-pod")])],
        LiveState(read_at=NOW, accounts={"runpod": account(10.0, 0.0)}),
    )
    assert low.severity == "warning" and low.summary.endswith(": under 3 days")
