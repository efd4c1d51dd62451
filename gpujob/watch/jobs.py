"""What `gpujob watch` keeps between ticks: its options, each job's watch (ledger, what was said, the machine
last seen running), the SSH layer that records each run's status, and the events it says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.live import LiveResource, LiveState
from gpujob.naming import machine_kind_of
from gpujob.plan.capability import Capability, chosen
from gpujob.plan.model import ActionKind
from gpujob.state import Store
from gpujob.watch.events import Event, make_event
from gpujob.watch.hooks import outputs_pull, watch_hooks
from gpujob.watch.ledger import Ledger, load_ledger
from gpujob.watch.policy import Decision
from gpujob.watch.probe import RunProbe
from gpujob.watch.pulls import Puller

K = ActionKind
HEALTHY, ERROR, RECOVERED, HUMAN = 0, 1, 2, 3
BLOCKED_TICKS = 3  # a job blocked on a person this many ticks in a row stops being watched
COST_REFRESH_S = 300.0  # how often the cost engine (billing calls) is read; the burn fills the gaps


@dataclass
class Options:
    interval_s: float = 30.0
    probe_s: float = 2.5
    once: bool = False
    approvals: set[str] = field(default_factory=set)
    max_recoveries_per_hour: int = 10
    run_timeout_s: float = 8.0
    rerun: str = "gpujob watch"  # the command line as given (no webhook URL: a secret), for approval lines


@dataclass
class JobWatch:
    path: Path
    name: str
    state_dir: Store  # the project's store (gpujob.state)
    ledger: Ledger
    loaded: Any = None
    done: bool = False
    blocked_ticks: int = 0
    said: dict[str, str] = field(default_factory=dict)  # topic -> last text, to say each thing once
    machine_id: str | None = None  # the machine last seen running (probed between ticks)

    @property
    def watching(self) -> bool:
        return not self.done and self.ledger.parked is None


class StatusSpy:
    """The SSH layer with run_status recorded per job, so a tick reads each run once for the plan and
    for the ledger."""

    def __init__(self, inner: SSHApi) -> None:
        self.statuses: dict[str, Any] = {}
        self.api = dataclasses.replace(inner, run_status=self._run_status)
        self._inner = inner

    async def _run_status(self, remote: Any, spec: Any) -> Any:
        status = await self._inner.run_status(remote, spec)
        self.statuses[spec.name] = status
        return status


class WatcherBase:
    """The watcher's state and its voice. What a tick does with its plan (gpujob.watch.acting.Acting) and
    the loop itself (gpujob.watch.loop.Watcher) build on it."""

    def __init__(
        self,
        jobs: Sequence[tuple[Path, str, Store]],  # (job file, job name, its store), locked by the caller
        providers: Mapping[str, Any],
        *,
        clock: Clock,
        ssh: SSHApi,
        env: Mapping[str, str],
        emit: Callable[[Event, Store], None],
        options: Options,
        capabilities: Sequence[Capability] | None = None,
    ) -> None:
        now = clock.now()
        self.jobs = {
            name: JobWatch(path=path, name=name, state_dir=sdir, ledger=load_ledger(sdir, name, now))
            for path, name, sdir in jobs
        }
        self.providers = providers
        self.clock = clock
        self.spy = StatusSpy(ssh)
        self.env = env
        self._emit = emit
        self.opt = options
        self.probe = RunProbe(self.spy.api)
        self.acted = False  # the last tick applied something
        self.final_failures: dict[str, int] = {}  # final pulls failed in a row (gpujob.watch.home)
        # what the capabilities add to the loop (gpujob.watch.hooks; None: the installed capabilities)
        self.hooks = watch_hooks(chosen(capabilities), options)
        self.pulls = Puller(clock=clock, ssh=self.spy.api, say=self.say, outputs=outputs_pull(self.hooks))

    # --- events
    def say(
        self,
        job: JobWatch | None,
        kind: str,
        happened: str,
        did: str = "",
        *,
        level: str = "info",
        topic: str = "",
    ) -> None:
        """Emit an event; with a topic, only when its text differs from the last one on that topic."""
        if job is not None and topic:
            if job.said.get(topic) == happened + did:
                return
            job.said[topic] = happened + did
        usd = job.ledger.money(self.clock.now()) if job is not None else None
        event = make_event(
            self.clock.now(),
            job.name if job else "-",
            kind,
            happened,
            did,
            usd_so_far=usd,
            level=level,  # type: ignore[arg-type]
        )
        first = next(iter(self.jobs.values()))
        self._emit(event, (job or first).state_dir)


def job_machine(live: LiveState, loaded: Any) -> LiveResource | None:
    """The job's own pod / machine (gpujob.naming's rule)."""
    from gpujob.naming import machines

    kind = machine_kind_of(loaded.spec.platform, loaded.spec.machine.nodes)
    found = [r for r in machines(live.resources, loaded.spec.name, loaded.project) if r.kind == kind]
    found.sort(key=lambda r: (r.created_at is None, r.created_at or datetime.min, r.id))
    return found[0] if found else None


def stops_machine(d: Decision) -> bool:
    """A stop watch makes itself (a terminate passes the teardown gate, which quiesces and pulls)."""
    return any(a.kind is K.STOP for a in d.actions)
