"""Failover as a capability (gpujob.plan.capability): a job with fallback entries is planned across its
platforms (entry fixes and moves, before the account-wide balance), what it holds on platforms it no
longer runs on is planned after it (gpujob.failover.leftover), and `gpujob watch` moves it
(gpujob.failover.watching)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpujob.failover.entries import entry_fixes, platforms_read
from gpujob.failover.leftover import left_platform, with_left
from gpujob.failover.planning import with_moves
from gpujob.failover.watching import on_move
from gpujob.plan.capability import AFTER_BALANCE, BEFORE_BALANCE, Capability, PlanRound
from gpujob.plan.model import Action, JobPlan
from gpujob.watch.hooks import WatchHooks


def _moves(rnd: PlanRound) -> list[JobPlan]:
    if not any(ls.spec.fallback for ls in rnd.loaded):
        return rnd.jobs
    jobs = [entry_fixes(ls, jp) for ls, jp in zip(rnd.loaded, rnd.jobs, strict=True)]
    return with_moves(rnd.loaded, jobs, rnd.live, rnd.pull_records, now=rnd.now, env=rnd.env,
                      capabilities=rnd.capabilities)  # fmt: skip


def _left(rnd: PlanRound) -> list[JobPlan]:
    # A job whose failover record names a platform its file no longer lists has no fallback left,
    # but may have left resources there all the same.
    if not any(ls.spec.fallback or getattr(ls, "strays", ()) for ls in rnd.loaded):
        return rnd.jobs
    return with_left(rnd.loaded, rnd.jobs, rnd.live, now=rnd.now, env=rnd.env, pull_records=rnd.pull_records,
                     launch_records=rnd.launch_records, release=rnd.release_left,
                     capabilities=rnd.capabilities)  # fmt: skip


class Failover(Capability):
    name = "failover"

    def rounds(self) -> Mapping[str, Callable[[PlanRound], list[JobPlan]]]:
        return {BEFORE_BALANCE: _moves, AFTER_BALANCE: _left}

    def platforms_read(self, loaded: Sequence[Any]) -> set[str]:
        return platforms_read(loaded)

    def watch_hooks(self, options: Any) -> Any:
        return FailoverWatch()


class FailoverWatch(WatchHooks):
    """A job with fallback entries in `gpujob watch`: a move is watch's own to make (gpujob.failover.watching);
    what a job holds on a platform it does not run on is a person's to delete, never watch's."""

    async def judge(self, watcher: Any, j: Any, jp: Any, live: Any) -> int | None:
        if not j.loaded.spec.fallback:  # it may run on another platform
            return None
        return await on_move(watcher, j, jp, live)

    def hold(self, todo: Sequence[Action]) -> tuple[list[Action], list[str]]:
        left = [a for a in todo if left_platform(a) is not None]
        if not left:
            return [], []
        return left, [
            f"{len(left)} action(s) on {', '.join(sorted({a.platform for a in left}))} (what the job holds where it "
            "does not run) wait for a person: gpujob destroy, or gpujob apply --release-left"
        ]
