"""RP8: how long the account's balance lasts at the rate the plan leaves billing.

RunPod stops every pod when the balance can no longer cover them (their volume disks keep billing) and
then deletes pods and storage, with no backups. The balance and the account's spend rate come from
GraphQL `myself` (LiveState.accounts); the rate after the plan is that spend plus what this plan's jobs
change (each job's after-rate minus its current rate), and never less than what this plan's jobs bill
after it: `currentSpendPerHr` is not documented to count storage (the simulator's counts running pods
only), while a kept network volume or a stopped pod's volume disk bills on, priced by the profile. The
balance is account-wide, so every job of the platform gets the same figure, judged against its own
run.max_runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpujob.cost.rates import usd
from gpujob.live import Account, LiveState
from gpujob.plan.context import SpecSource
from gpujob.plan.findings import by_severity
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan, Severity

PLATFORM = "runpod"
NOTE_PREFIX = f"{PLATFORM}: balance not read: "  # gpujob.apply.refresh writes the notes so
WARN_HOURS = 72.0  # under 3 days of credit a weekend away empties it


def with_balance(loaded: Sequence[SpecSource], jobs: list[JobPlan], live: LiveState) -> list[JobPlan]:
    """The jobs, each RunPod job with its balance finding (or a note that the balance was not read)."""
    mine = [j for j in jobs if j.platform == PLATFORM or _move(j, to=PLATFORM) is not None]
    if not mine:
        return jobs
    account = live.accounts.get(PLATFORM)
    notes = [n for n in live.account_notes if n.startswith(PLATFORM)]
    specs = {ls.spec.name: ls for ls in loaded}
    rate = planned_rate(account, mine)
    kept = billed_after(mine)
    out = []
    for j in jobs:
        ls = specs.get(j.job)
        found = None
        if j.platform == PLATFORM and ls is not None and ls.spec.state != "absent":
            found = balance_finding(ls, account, rate, notes, kept=kept)
            if (
                found is not None
                and found.severity == "info"
                and (account is None or account.balance_usd is None)
            ):
                found = _unread_with_stranded(found, j)
        out.append(j.model_copy(update={"findings": by_severity([*j.findings, found])}) if found else j)
    return out


def _unread_with_stranded(found: Finding, j: JobPlan) -> Finding:
    """The balance cannot be read and a stopped pod of the job holds un-pulled checkpoints (RP8's own
    warning on it, gpujob.plan.trap_findings): what would have warned of a low balance is gone, so the
    unread balance is a warning naming the clock that deletes that pod."""
    from gpujob.plan.trap_findings import STOPPED_POD_DAYS, holds_unpulled

    stranded = [f for f in j.findings if holds_unpulled(f)]
    if not stranded:
        return found
    pods = ", ".join(f.summary.split(" ", 3)[2] for f in stranded)
    return found.model_copy(
        update={
            "severity": "warning",
            "summary": found.summary
            + f"; stopped pod {pods} holds un-pulled checkpoints, and RunPod deletes a stopped pod when the "
            f"balance runs low (and after about {STOPPED_POD_DAYS} days stopped), with no backup",
            "fix": "pull them now (state: running, `gpujob apply`, then `gpujob pull`), and turn on Auto-Pay in "
            "the console (Billing; `gpujob doctor` says what it can of it)",
        }
    )


def planned_rate(account: Account | None, jobs: Sequence[JobPlan]) -> float:
    """USD/h the account bills once the plan is applied: at least what the plan's jobs bill after it."""
    rates = [_here(j) for j in jobs]
    delta = sum(after - now for now, after in rates)
    now = account.spend_per_hour_usd if account is not None else None
    base = now if now is not None else sum(now for now, _ in rates)
    return max(0.0, base + delta, billed_after(jobs))


def billed_after(jobs: Sequence[JobPlan]) -> float:
    """USD/h this plan's jobs bill on RunPod after it (kept volumes, stopped pods' disks, what runs)."""
    return round(sum(_here(j)[1] for j in jobs), 9)


def _move(j: JobPlan, *, to: str | None = None) -> Action | None:
    return next(
        (a for a in j.actions if a.kind is ActionKind.MOVE and (to is None or a.platform == to)), None
    )


def _here(j: JobPlan) -> tuple[float, float]:
    """(now, after apply) USD/h of the job on this platform. A move (gpujob.failover) takes the job's
    money to another platform: what it keeps here counts, or what it starts here when it comes here."""
    now = j.current_usd_per_hour if j.platform == PLATFORM else 0.0
    move = _move(j)
    if move is None:
        return now, j.after_usd_per_hour if j.platform == PLATFORM else 0.0
    kept = sum(m.usd_per_hour for m in move.billing.keeps) if move.billing is not None else 0.0
    if j.platform == PLATFORM:
        return now, kept
    return now, j.after_usd_per_hour - kept if move.platform == PLATFORM else 0.0


def lasts(hours: float) -> str:
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def balance_finding(
    ls: SpecSource, account: Account | None, rate: float, notes: list[str], *, kept: float = 0.0
) -> Finding | None:
    spec = ls.spec

    def finding(
        severity: Severity, summary: str, *, detail: str = "", fix: str = "", key: str = "state"
    ) -> Finding:
        return Finding(
            code="RP8",
            severity=severity,
            summary=summary,
            detail=detail,
            fix=fix,
            job=spec.name,
            source=ls.source(key),
        )

    if account is None or account.balance_usd is None:
        if not notes:
            return None  # nothing was asked (a provider without balances): nothing to say
        if "GraphQL API is gone" in notes[0]:
            # Never an error and never a reason to hold back: the account is fine, it is the API that went.
            return finding(
                "info",
                "RunPod no longer reports the balance (its GraphQL API is gone; REST v2 has billing history "
                "but no balance): how long it lasts is unknown",
                detail="RunPod stops every pod when credit runs out; gpujob cannot see that coming any more.",
                fix="watch the balance on the console's Billing page (or turn on auto-pay); `gpujob cost` shows "
                "what gpujob's jobs billed, from v2 billing",
            )
        return finding(
            "info",
            f"the RunPod balance was not read ({notes[0].removeprefix(NOTE_PREFIX)}): how long it lasts is unknown",
            fix="check it in the console (Billing), or plan again",
        )
    balance = account.balance_usd
    spend = account.spend_per_hour_usd
    if spend is None:
        basis = f"the account's own spend rate was not reported; {usd(rate)}/h is what this plan's jobs bill"
    elif abs(rate - kept) < 1e-9 and kept - spend >= 0.00005:
        # The account's figure leaves out what keeps billing (storage): the plan's own meters count it.
        basis = (
            f"the account reports {usd(spend)}/h now; this plan's jobs bill {usd(kept)}/h after it "
            "(volumes and stopped pods' disks keep billing, which that figure leaves out)"
        )
    else:
        change = "leaves it there" if abs(rate - spend) < 0.00005 else f"changes that to {usd(rate)}/h"
        basis = f"the account spends {usd(spend)}/h now; this plan {change}"
    detail = (
        f"{basis} ({account.source}). When credit cannot cover the pods RunPod stops them all (volume disks "
        "keep billing) and then may delete pods and storage; it keeps no backups."
    )
    if rate <= 0:
        return finding("info", f"RunPod balance {usd(balance)}; nothing bills after this plan", detail=detail)
    hours = balance / rate
    runtime = spec.run.max_runtime if spec.run is not None and spec.state == "running" else None
    runtime_h = runtime.total_seconds() / 3600 if runtime is not None else None
    head = f"the RunPod balance {usd(balance)} lasts {lasts(hours)} at {usd(rate)}/h"
    if runtime_h is not None and hours < runtime_h:
        short = rate * runtime_h - balance
        return finding(
            "error",
            f"{head}, less than run.max_runtime ({runtime_h:g} h): the run cannot finish on this credit",
            detail=detail,
            fix=f"add at least {usd(short)} to the RunPod balance (or turn on auto-pay), or shorten "
            "run.max_runtime",
            key="run.max_runtime",
        )
    if hours < WARN_HOURS:
        return finding(
            "warning",
            f"{head}: under {WARN_HOURS / 24:g} days",
            detail=detail,
            fix="add credit or turn on auto-pay in the RunPod console, and keep the checkpoints on a network "
            "volume or pulled (`gpujob pull`)",
        )
    return finding("info", head, detail=detail)
