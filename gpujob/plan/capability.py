"""The one interface through which a capability (failover, sweep, rehearse, preflight, outputs, disks, ...)
plugs into the planner, the applier and the watch loop, which import none of them.

A capability is an object of a `Capability` subclass. Every method is a hook point with a no-op default,
so a capability overrides only the points it contributes to; the core calls every capability it was
given, in order, at each point. The composition root (gpujob.cli.wiring) builds the list, statically
importing each capability package, and passes it down (`capabilities=`); a caller that passes none gets
the list the composition root installed (`installed()`), so a library call plans like the CLI does.
Nothing here looks a capability up by name.

Hook points, by floor:
- load (gpujob.spec): `expand_loaded` turns one loaded job file into the jobs plan, apply and watch see
  (sweep: one job per queue); the composition root plugs the installed capabilities' expansion into
  the loader (gpujob.spec.expansion), which imports no capability either.
- plan (gpujob.plan): `rounds` rework every job's plan once each is planned (failover: entry fixes and
  moves, before the account-wide balance; what a job left on other platforms, after it); `disk_findings`
  and `spot_findings` add a section's findings where the planner judges disks and interruptible
  machines; `data_effect_line` adds to what a stop, terminate or volume delete does to the data
  (outputs); `job_plan_fields` fills a JobPlan field a capability owns (sweep: the queue's cells);
  `derive_plan` makes the plans of another origin than `gpujob plan` (audit: `gpujob audit --fix`).
- apply (gpujob.apply): `platforms_read` adds platforms a read opens (failover); `ssh_functions` fills
  remote reads of the SSH bundle (preflight: the GPU host; disks: disk usage); `before_steps` runs once a
  job's steps are known, before the first (sweep: cells placed on their queue); `before_launch` runs
  before a run is launched on a machine (preflight); `before_erase` runs in the teardown gate before a
  disk is erased (outputs: pulled and verified first).
- watch (gpujob.watch): `watch_hooks` makes the capability's gpujob.watch.hooks.WatchHooks for one
  watcher: jobs it admits or settles at the start of a tick (sweep), a job it acts on itself before the
  policy decides (failover: a move), actions only a person may take (failover: what a job left on other
  platforms), and what counts as a recovery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpujob.live import LiveState
    from gpujob.plan.model import Finding, JobPlan, Plan

# A hook's `ctx` is the planner's gpujob.plan.context.JobContext (which imports this module) or the
# applier's gpujob.apply.context.JobContext: typed Any here so neither is imported.
JobContext = Any

BEFORE_BALANCE = "before-balance"  # after every job is planned, before RP8's account-wide balance
AFTER_BALANCE = "after-balance"  # once the balance is judged (what moved jobs left elsewhere)


@dataclass
class PlanRound:
    """What a `rounds` hook sees: every job file of this plan, its job plans in the same order, and the
    read and records the planner was given."""

    loaded: Sequence[Any]
    jobs: list[JobPlan]
    live: LiveState
    now: datetime
    env: Mapping[str, str]
    pull_records: Mapping[str, Any] | None = None
    launch_records: Mapping[str, Any] | None = None
    release_left: bool = False
    capabilities: Sequence[Capability] = field(default_factory=tuple)


class Capability:
    """A capability's contributions (see the module docstring). Subclass it and override the hooks."""

    name = ""

    # --- plan
    def rounds(self) -> Mapping[str, Callable[[PlanRound], list[JobPlan]]]:
        """Stage (BEFORE_BALANCE, AFTER_BALANCE) -> a pass over every job's plan."""
        return {}

    def disk_findings(self, ctx: JobContext) -> list[Finding]:
        return []

    def spot_findings(self, ctx: JobContext) -> list[Finding]:
        """Findings for a machine that is, or stays, interruptible."""
        return []

    def data_effect_line(self, ctx: JobContext, survives: Callable[[str], bool]) -> str:
        """Appended to an action's data effect; `survives(tier)` says whether a tier outlives it."""
        return ""

    def job_plan_fields(self, loaded: Any, running_usd_per_hour: float) -> dict[str, Any]:
        """JobPlan fields this capability fills for a job planned as running."""
        return {}

    def derive_plan(
        self, origin: str, loaded: Sequence[Any], live: LiveState, *, now: datetime
    ) -> Plan | None:
        """The plan of a saved plan's `origin` when this capability makes such plans (a saved plan is
        derived again before it is applied, gpujob.apply.rederive); None: not one of its origins."""
        return None

    # --- apply
    def platforms_read(self, loaded: Sequence[Any]) -> set[str]:
        """Platforms to read for these jobs besides their own (failover: fallback entries, strays)."""
        return set()

    def ssh_functions(self) -> dict[str, Callable[..., Any]]:
        """gpujob.apply.sshapi.SSHApi fields this capability fills in SSHApi.default() (e.g. a host read)."""
        return {}

    def before_steps(self, ctx: Any, todo: Sequence[Any]) -> None:
        """Once a job's steps are known (gpujob.apply.context.JobContext, its actions), before the first."""

    async def before_launch(self, ctx: Any, action: Any, recreate: Callable[..., Any]) -> None:
        """Before a run is launched on the machine (`recreate` makes the machine again)."""

    async def before_erase(
        self, ctx: Any, action: Any, remote: Any, machine: Any, erased: Callable[[Any], bool]
    ) -> str:
        """In the teardown gate, once the checkpoints are safe and before the call that erases the disks
        `erased` says: pull (or refuse) what else this capability keeps there; what it did, or ''."""
        return ""

    # --- watch
    def expand_loaded(self, loaded: Any) -> list[Any] | None:
        """The jobs one loaded job file stands for (a sweep: one per queue), or None: not this capability's."""
        return None

    def watch_hooks(self, options: Any) -> Any:
        """A gpujob.watch.hooks.WatchHooks for one watcher (`options`: its gpujob.watch.jobs.Options), or None."""
        return None


_installed: tuple[Capability, ...] | None = None
_factory: Callable[[], Sequence[Capability]] | None = None


def install(capabilities: Callable[[], Sequence[Capability]]) -> None:
    """Called by the composition root (gpujob.cli.wiring): what builds the list a caller passing none
    gets. Built on first use, so a command that plans nothing imports no capability."""
    global _installed, _factory
    _installed, _factory = None, capabilities


def installed() -> tuple[Capability, ...]:
    global _installed
    if _installed is None:
        _installed = tuple(_factory()) if _factory is not None else ()
    return _installed


def chosen(capabilities: Sequence[Capability] | None) -> tuple[Capability, ...]:
    return installed() if capabilities is None else tuple(capabilities)


def of(ctx: Any) -> tuple[Capability, ...]:
    """The capabilities a planner's or applier's job context was given (None there: the installed ones)."""
    return chosen(getattr(ctx, "capabilities", None))
