"""Read live state for a plan: one account-wide listing per platform plus its prices, all at once.

Every job's resources come out of the same listing, so planning 50 jobs costs one round of reads,
not 50. A platform whose read fails is recorded in `read_errors` (with its resources missing) only
when others succeeded; if every read fails the first error is raised, since an empty plan would lie.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from gpujob.errors import GpujobError
from gpujob.jobfile.model import JobSpec
from gpujob.live import Account, LiveResource, LiveState, PriceQuote


async def read_live_state(
    specs: Iterable[JobSpec],
    providers: Mapping[str, Any],
    *,
    now: datetime | None = None,
    runs_for: Sequence[Any] | None = None,
    refresh_runs: bool = True,
    run_timeout: float | None = None,
    ssh: Any = None,
    also: Iterable[str] = (),
) -> LiveState:
    """Concurrently: list_resources(), quotes() and account() of every platform the specs use (a failed
    account read is a note in `account_notes`, never an error). With `runs_for`
    (the loaded job files), then the run facts: the journal of each job that wants a run and, unless
    `refresh_runs` is False, the run status over SSH of those whose machine is running (all at once,
    `run_timeout` seconds at most; an unreachable machine is an "unknown" fact)."""
    specs = list(specs)
    # Every platform a job may run on (its fallback entries too: gpujob.failover prices and watches them).
    # `also`: platforms a failover record names that the job files no longer list (read for what the
    # jobs left there: gpujob.failover.entries.strays_read).
    platforms = sorted(
        {p for s in specs for p in [s.platform, *(f.platform for f in s.fallback)]} | set(also)
    )
    missing = [p for p in platforms if p not in providers]
    if missing:
        raise GpujobError(f"no provider open for {', '.join(missing)}")
    calls = []
    for p in platforms:
        counts = {m.gpu_count for s in specs for m in _machines_on(s, p)} or {1}
        calls.append(providers[p].list_resources())
        calls.append(providers[p].quotes(counts=counts))
    # The balance (RunPod GraphQL `myself`) is read in the same round; a provider without it has none.
    with_account = [p for p in platforms if callable(getattr(providers[p], "account", None))]
    calls += [providers[p].account() for p in with_account]
    # Templates, where a job names one (Paperspace): resolved at plan time, not first at create.
    with_templates = [
        p
        for p in platforms
        if callable(getattr(providers[p], "templates", None))
        and any(s.platform == p and s.machine.template for s in specs)
    ]
    calls += [providers[p].templates() for p in with_templates]
    # Whether spot is still offered (RunPod: withdrawn while GraphQL answers), where a job wants spot; a
    # probe that fails concludes nothing (its answer lands in spot_unavailable below, or not at all).
    calls += [
        providers[p].spot_offer()
        for p in platforms
        if callable(getattr(providers[p], "spot_offer", None))
        and any(m.spot for s in specs for m in _machines_on(s, p))
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    n_account = 2 * len(platforms) + len(with_account)
    accounts, notes = _accounts(with_account, results[2 * len(platforms) : n_account])
    templates = {
        p: got
        for p, got in zip(with_templates, results[n_account : n_account + len(with_templates)], strict=True)
        if not isinstance(got, BaseException) or _reraise_unexpected(got)
    }
    # What the reads found out about spot (RunPod: GraphQL answered 410): asked after them, not before.
    spot_gone = {p: why for p in platforms if (why := _spot_unavailable(providers[p])) is not None}

    resources: list[LiveResource] = []
    quotes: list[PriceQuote] = []
    errors: list[str] = []
    failures: list[BaseException] = []
    for i, p in enumerate(platforms):
        listed, priced = results[2 * i], results[2 * i + 1]
        if isinstance(listed, BaseException):
            _reraise_unexpected(listed)
            failures.append(listed)
            errors.append(f"{p}: list resources failed: {listed}")
        else:
            resources.extend(listed)
        if isinstance(priced, BaseException):
            # Prices fall back to the profile's table; the plan says so in every meter's source.
            _reraise_unexpected(priced)
        else:
            quotes.extend(priced)
    if failures and len(failures) == len(platforms):
        raise failures[0]
    live = LiveState(
        read_at=now or datetime.now(UTC),
        resources=sorted(resources, key=lambda r: (r.platform, r.kind, r.name, r.id)),
        quotes=quotes,
        read_errors=errors,
        accounts=accounts,
        account_notes=notes,
        spot_unavailable=spot_gone,
        templates=templates,
    )
    if runs_for is None:
        return live
    from gpujob.apply.runfacts import RUN_READ_TIMEOUT_S, journal_machine_facts, read_run_facts

    live = journal_machine_facts(runs_for, live)
    runs = await read_run_facts(
        runs_for,
        live,
        providers,
        refresh=refresh_runs,
        timeout=RUN_READ_TIMEOUT_S if run_timeout is None else run_timeout,
        ssh=ssh,
    )
    return live.model_copy(update={"runs": runs})


def _machines_on(spec: JobSpec, platform: str) -> list[Any]:
    return [
        m
        for q, m in [(spec.platform, spec.machine), *((f.platform, f.machine) for f in spec.fallback)]
        if q == platform
    ]


def _accounts(platforms: Sequence[str], results: Sequence[Any]) -> tuple[dict[str, Account], list[str]]:
    """Accounts read, and a note for each that failed: a missing balance never blocks a plan, so any
    failure of the read (an HTTP error, an answer that does not parse) is a note; cancellation is not."""
    accounts: dict[str, Account] = {}
    notes: list[str] = []
    for p, got in zip(platforms, results, strict=True):
        if isinstance(got, BaseException) and not isinstance(got, Exception):
            raise got
        if isinstance(got, Exception):
            first = (str(got).splitlines() or [type(got).__name__])[0].removeprefix(f"{p}: ")
            notes.append(f"{p}: balance not read: {first}")
        elif isinstance(got, Account):
            accounts[p] = got
    return accounts, notes


def _spot_unavailable(provider: Any) -> str | None:
    ask = getattr(provider, "spot_unavailable", None)
    why = ask() if callable(ask) else None
    return why if isinstance(why, str) else None


def _reraise_unexpected(exc: BaseException) -> bool:
    """Programming errors and cancellation are not 'a platform was unreachable'. (False otherwise, so a
    comprehension can drop what failed: an unread template list leaves the name for apply to resolve.)"""
    if not isinstance(exc, GpujobError):
        raise exc
    return False
