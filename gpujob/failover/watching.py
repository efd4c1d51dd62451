"""Watch's side of a move: the job file's `failover:` decides.

    auto    move now (gpujob.failover.move), unattended
    ask     print the approval line (`<watch command> --approve <job>.move`) once and wait; with that
            approval on the command line, move as auto does
    never   say why the job cannot run and wait for its platform

Events name where from, where to, why, the checkpoint carried and its step. A failed move leaves the
job parked where its data is; the next attempt waits RETRY_S.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from gpujob.failover.choice import choose
from gpujob.failover.planning import move_id
from gpujob.project.placement import placed_spec

RETRY_S = 600.0
FAILBACK_FRESH_S = 60.0  # failback: auto moves within this long of a verified pull
HEALTHY, ERROR, RECOVERED, HUMAN = 0, 1, 2, 3  # gpujob.watch.jobs's codes
_next_try: dict[tuple[int, str], datetime] = {}


def _just_pulled(ls: Any, now: datetime) -> bool:
    from gpujob.plan.records import load_pull_record
    from gpujob.state import open_store

    record = load_pull_record(open_store(ls.path), ls.spec.name)
    times = [f.at for f in (record.files if record else []) if f.verified and f.checksum_ok]
    return bool(times) and (now - max(times)).total_seconds() <= FAILBACK_FRESH_S


def failed_starts(ledger: Any) -> int:
    """Recoveries that failed in a row, newest last (watch's ledger): starts the platform refused."""
    n = 0
    for r in reversed(ledger.recoveries):
        if r.ok or r.what.endswith(".move"):
            break
        n += 1
    return n


async def on_move(watcher: Any, j: Any, jp: Any, live: Any) -> int | None:
    """One tick of a job with fallback entries: None when it stays where it is (watch goes on as for
    any job), else the watch exit code of what was done about the move."""
    from gpujob.failover.move import move_job
    from gpujob.failover.planning import running_here
    from gpujob.plan.model import ActionKind

    ls = j.loaded
    declared = getattr(ls, "declared", None) or ls.spec
    from gpujob.failover.queue_carry import drained

    if ls.spec.state != "running" or drained(ls):  # a queue with every cell home has nothing to move
        return None
    here_up = running_here(live, ls.spec.name, ls.project, ls.spec.platform)
    fails = 0 if here_up else failed_starts(j.ledger)
    from gpujob.failover.failback import loaded_hold

    choice = choose(
        declared, getattr(ls, "entry", -1), live.quotes, running_here=here_up, failed_starts=fails,
        spot_gone=live.spot_unavailable, failback_held=loaded_hold(ls, watcher.clock.now()),
    )  # fmt: skip
    from gpujob.failover.planning import siblings, within_cap

    # the plan's chooser: never a move the cap check would refuse (watch would retry it every interval);
    # a sweep queue's move counts beside its sibling queues (the cap is the sweep's sum)
    beside = siblings(ls.spec.name, getattr(watcher, "tick_plans", {}).values())
    choice = within_cap(ls, choice, live, now=watcher.clock.now(), env=watcher.env, jp=jp, beside=beside)
    to = choice.move_to
    planned = any(a.kind is ActionKind.MOVE for a in jp.actions)
    if to is None:  # served here; a planned move this read disagrees with waits for the next tick's plan
        return HEALTHY if planned else None
    if fails < declared.failover_after and not planned:
        return None  # served here (the plan, read a moment ago, says so): the usual recoveries
    if choice.failback and here_up and not _just_pulled(ls, watcher.clock.now()):
        # A run there goes home only right after a checkpoint came home verified: the least work lost.
        # Served here meanwhile (the plan's move is not for the applier). A job running nowhere goes now.
        return HEALTHY
    mid = move_id(declared.name)
    mode = declared.failover
    if mode == "ask" and mid in watcher.opt.approvals:
        mode = "auto"
    if mode == "never":
        watcher.say(j, "cannot-run", choice.why, f"failover: never: waiting for {choice.here.name}",
                    level="human", topic="failover")  # fmt: skip
        return HUMAN
    if mode == "ask":
        from gpujob.apply.gate import approve_flags

        # This watch holds the job's lock: the approval takes a new one (or an apply, once it ended).
        again = f"{watcher.opt.rerun} {approve_flags([*sorted(watcher.opt.approvals), mid])}"
        watcher.say(j, "needs-human", f"{choice.why}; {to.name} can run it",
                    f"to move it there: stop this watch and run `{again}` (or `gpujob apply`)",
                    level="human", topic="failover")  # fmt: skip
        return HUMAN
    now = watcher.clock.now()
    key = (id(watcher), declared.name)
    if key in _next_try and now < _next_try[key]:
        return HUMAN
    await watcher.pulls.settle(j.name)
    await watcher.probe.drop(j.name)
    from gpujob.failover.move import carried_file

    name, step, _ = carried_file(ls)
    ck = f"{name} (step {step})" if name else "no checkpoint"
    watcher.say(j, "failover", f"{choice.why}", f"moving {choice.here.name} -> {to.name}, carrying {ck}",
                level="action")  # fmt: skip
    outcome = await move_job(
        ls, choice, live, watcher.providers, ssh=watcher.spy.api, clock=watcher.clock, env=watcher.env,
        note=lambda text: watcher.say(j, "note", text),
    )  # fmt: skip
    watcher.acted = True
    j.ledger.recovered(watcher.clock.now(), mid, outcome.ok)
    if outcome.ok:
        _next_try.pop(key, None)
        # It runs there now: what this tick read of the old machine is stale (watch pulls from it no more).
        j.loaded = dataclasses.replace(
            ls, spec=placed_spec(declared, to.entry), entry=to.entry, declared=declared
        )
        j.ledger.restate(watcher.clock.now(), to.usd_per_hour or 0.0, gpu_billing=True)
        ck = f"{outcome.checkpoint} (step {outcome.step})" if outcome.checkpoint else "no checkpoint"
        watcher.say(j, "moved", f"from {outcome.from_name} to {outcome.to_name}: {outcome.why}",
                    f"carried {ck}; {outcome.detail}", level="action")  # fmt: skip
        return RECOVERED
    if choice.failback:  # home refused: the record holds the refusal, the job runs on here (failback.py)
        from gpujob.failover.failback import EVENT, refused_event
        from gpujob.project.placement import read_placement
        from gpujob.state import open_store

        record = read_placement(open_store(ls.path), declared.name)
        happened, did = refused_event(declared, getattr(ls, "entry", -1), record, watcher.clock.now())
        watcher.say(j, EVENT, f"{happened}: {outcome.detail}", did, level="warning", topic="failover")
        return ERROR
    _next_try[key] = watcher.clock.now() + timedelta(seconds=RETRY_S)
    watcher.say(j, "move-failed", f"from {outcome.from_name} to {outcome.to_name}: {outcome.detail}",
                f"parked on {outcome.from_name}; trying again in {RETRY_S:.0f} s", level="warning")  # fmt: skip
    return ERROR
