"""A queue that `gpujob watch` starts watching mid-run: cells of its sweep landed on it (phase 2 of
gpujob.sweep.rebalance) while watch runs, so it was not among the jobs whose locks the command took.

Watch takes that queue job's lock the way it holds the others (gpujob.lock: one gpujob acting on a
job at a time) and keeps it until it ends; while another gpujob holds it, the queue is left out of the
tick (its machine is not created) and watch says who holds it, once, trying again each tick (and
does not end while such a queue waits).

Its first machine is a create gpujob planned (the cells were moved there on purpose), not a fix of
drift: it does not count toward --max-recoveries-per-hour, even when the queue's ledger remembers an
earlier run of the same queue job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from gpujob.errors import LockError
from gpujob.plan.model import ActionKind

Say = Callable[[str, str], None]  # (what happened, what watch does about it)


class LandedQueues:
    def __init__(self, command: str = "gpujob watch") -> None:
        self._command = command
        self._locks = contextlib.ExitStack()
        self._refused: dict[str, str] = {}  # queue job -> the refusal last said
        self.waiting: dict[str, tuple[Any, Any]] = {}  # queue job -> (job file, store): lock refused
        self.planned: set[str] = set()  # queue jobs whose first machine create is still to come

    def take(self, store: Any, job: str, path: Any, say: Say) -> bool:
        """Hold `job`'s lock from now until close(). False (said once per holder) while another holds it:
        the queue then waits in `waiting` for admit()."""
        try:
            self._locks.enter_context(store.lock(job, timeout=0, command=self._command))
        except LockError as exc:
            self.waiting[job] = (path, store)
            if self._refused.get(job) != str(exc):
                self._refused[job] = str(exc)
                say(
                    f"cells landed on queue {job}, but {exc}",
                    "not creating its machine while another gpujob acts on it; trying again each tick",
                )
            return False
        self._refused.pop(job, None)
        self.waiting.pop(job, None)
        self.planned.add(job)
        return True

    def is_recovery(self, job: str, decision: Any) -> bool:
        """Whether `decision` counts toward the recoveries-per-hour limit: not the planned first create
        of a landed queue's machine (anything after it, or instead of it, counts as usual)."""
        if job not in self.planned or not decision.recovery:
            return bool(decision.recovery)
        creates = any(
            a.kind is ActionKind.CREATE and a.resource_kind in ("pod", "machine") for a in decision.actions
        )
        if not creates:
            self.planned.discard(job)  # its machine exists already: a job like any other from now on
        return not creates

    def created(self, job: str, ok: bool) -> None:
        """After the tick applied its actions: a create that went through ends the planned one."""
        if ok:
            self.planned.discard(job)

    def close(self) -> None:
        self._locks.close()


def _say(watcher: Any) -> Say:
    return lambda happened, did: watcher.say(None, "locked", happened, did, level="warning")


def _watch(watcher: Any, path: Any, store: Any, name: str) -> Any:
    from gpujob.watch.jobs import JobWatch
    from gpujob.watch.ledger import load_ledger

    ledger = load_ledger(store, name, watcher.clock.now())  # read under the lock just taken
    j = watcher.jobs[name] = JobWatch(path, name, store, ledger)
    return j


def admit(watcher: Any, landed: LandedQueues) -> None:
    """At the start of a tick: each queue whose lock was refused before and is free now is watched
    from this tick on (its job file, whose placement record has its cells now, defines it)."""
    for name, (path, store) in list(landed.waiting.items()):
        if landed.take(store, name, path, _say(watcher)):
            _watch(watcher, path, store, name)


async def settle_watched(watcher: Any, landed: LandedQueues, loaded: list[Any], live: Any) -> list[Any]:
    """The watch tick's settle (gpujob.sweep.transit.settle, outcomes kept at once): a queue that
    gets its first cells that way is watched from now on, under its own lock; a queue whose lock
    another gpujob holds is left out of this tick."""
    from gpujob.sweep.transit import settle

    settled = await settle(loaded, live, watcher.providers, ssh=watcher.spy.api, keep=True)
    # settle expands the whole sweep again: a queue this watch already finished (pulled, stopped) stays
    # finished, as the watch's reload keeps any done job; planned again, a new sweep version would start
    # its machine for nothing and, being done, it would never be stopped again
    done = {name for name, j in watcher.jobs.items() if j.done}
    settled = [ls for ls in settled if ls.spec.name not in done]
    from gpujob.sweep.fit import fit_queues

    settled = fit_queues(settled, live, now=watcher.clock.now(), env=watcher.env)  # under the cap
    _say_stranded(watcher, settled)
    out = []
    for ls in settled:
        name = ls.spec.name
        j = watcher.jobs.get(name)
        if j is None:
            sib = next(o for o in watcher.jobs.values() if o.path == ls.path)
            if not landed.take(sib.state_dir, name, ls.path, _say(watcher)):
                continue
            j = _watch(watcher, ls.path, sib.state_dir, name)
        j.loaded = ls
        out.append(ls)
    return out


def _say_stranded(watcher: Any, settled: list[Any]) -> None:
    """A cell whose wait to land ran out (gpujob.sweep.stranded): a person's, said once (its topic)."""
    from gpujob.sweep.rebalance import STRANDED
    from gpujob.sweep.stranded import EVENT, land_command

    seen: set[tuple[str, str]] = set()
    for ls in settled:
        q = getattr(ls, "sweep", None)
        if q is None:
            continue
        for m in q.moves:
            if m.state != STRANDED or (q.sweep_job, m.cell) in seen:
                continue
            seen.add((q.sweep_job, m.cell))
            watcher.say(
                None, EVENT, f"sweep {q.sweep_job}: cell {m.cell} is stranded (q{m.origin} -> q{m.to}): {m.why}",
                f"it runs nowhere until a person runs `{land_command(q.sweep_job, m.cell)}` (then `gpujob apply`)",
                level="human", topic=f"stranded:{q.sweep_job}:{m.cell}",
            )  # fmt: skip
