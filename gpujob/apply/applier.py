"""Execute a plan: independent jobs concurrently, the steps of one job in order.

Every step is journalled (intent before, outcome after). Creates look the deterministic name up first
and adopt what they find, so a re-run after a kill converges without duplicates. Gated steps pass the
teardown gate (gate.py) immediately before they run. A failed step stops its job; other jobs go on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from gpujob.apply import stepbase, steps
from gpujob.apply.context import GPU_CEILING, SWEEP_QUEUE, JobContext
from gpujob.apply.gate import require_approvals
from gpujob.apply.journal import Journal, crashpoint
from gpujob.apply.progress import ApplyHooks, JobReporter, NullHooks
from gpujob.apply.runtime.launch import collect_secrets
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock, SystemClock
from gpujob.errors import GpujobError
from gpujob.jobfile.model import JobSpec
from gpujob.plan.capability import Capability, chosen
from gpujob.plan.model import Action, ActionKind, Plan
from gpujob.project import ensure_project
from gpujob.providers.base import Provider
from gpujob.state import StateRef, as_store


class LoadedLike(Protocol):
    @property
    def spec(self) -> JobSpec: ...

    @property
    def path(self) -> Path: ...


@dataclass
class ApplyResult:
    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    resources: dict[str, str] = field(default_factory=dict)  # action id -> resource id

    @property
    def ok(self) -> bool:
        return not self.failed


WAIT_GRACE_S = 1.0  # provider calls quicker than this are not shown as waits
_SLOW_CALLS = {
    "create_machine": "provision",
    "start": "start",
    "stop": "stop",
    "terminate": "terminate",
    "create_volume": "create",
    "grow_volume": "grow the volume of",
    "delete_volume": "delete",
    "release_ip": "release",
    "delete_snapshot": "delete",
}


class WaitedProvider:
    """A job's provider whose slow calls (they wait for the platform to reach a state) tick `waiting`
    while they run; providers themselves never report. Everything else passes straight through."""

    def __init__(self, inner: Provider, reporter: JobReporter) -> None:
        self._inner = inner
        self._reporter = reporter

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        verb = _SLOW_CALLS.get(name)
        if verb is None or not callable(value):
            return value
        platform = getattr(self._inner, "platform", "the platform")

        async def waited(*args: Any, **kwargs: Any) -> Any:
            subject = getattr(args[0], "name", "") if args else ""
            what = f"waiting for {platform} to {verb} {subject}".rstrip()
            async with self._reporter.waiting(what, grace_s=WAIT_GRACE_S):
                return await value(*args, **kwargs)

        return waited


def _state_dir_for(path: Path, override: StateRef | None) -> StateRef:
    if override is not None:
        return override
    from gpujob.state import open_store

    return open_store(path)


async def apply_plan(
    plan: Plan,
    loaded_specs: Sequence[LoadedLike],
    providers: Mapping[str, Provider],
    *,
    approvals: set[str],
    auto_approve: bool,
    hooks: ApplyHooks | None = None,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
    ssh: SSHApi | None = None,
    state_dir: StateRef | None = None,
    command: str = "gpujob apply",
    allow_unverified: bool = False,
    capabilities: Sequence[Capability] | None = None,
) -> ApplyResult:
    """Run every action of `plan`. `auto_approve` is the caller's confirmation of ordinary actions;
    it never approves a gated one (only ids in `approvals` do). `command` repeats this run in hints. Raises GpujobError before any step
    when the plan is blocked, a gated action is unapproved, or a secret is missing."""
    hooks = hooks or NullHooks()
    clock = clock or SystemClock()
    caps = chosen(capabilities)
    if not allow_unverified:  # watch, a PR's approval line: never the unverified override
        from gpujob.apply.unreachable import without_overrides

        approvals = without_overrides(approvals)
    env = os.environ if env is None else env
    if plan.blocked:
        from gpujob.errors import PlanBlockedError
        from gpujob.plan.finding_lines import error_lines

        raise PlanBlockedError(error_lines(plan), hint="do what each error's fix: line says, then plan again")
    actions = [a for a in plan.all_actions() if a.kind is not ActionKind.NOOP]
    require_approvals(actions, approvals, command=command)
    by_name = {ls.spec.name: ls for ls in loaded_specs}
    from gpujob.plan.ceiling import plan_ceilings

    gpu_ceilings = plan_ceilings(loaded_specs, plan.jobs)  # the cap the plan was judged on, for the choosers
    contexts: list[tuple[JobContext, list[Action]]] = []
    for jp in plan.jobs:
        todo = [a for a in jp.actions if a.kind is not ActionKind.NOOP]
        if not todo:
            continue
        loaded = by_name.get(jp.job)
        if loaded is None:
            raise GpujobError(f"the plan names job '{jp.job}' but no loaded job file defines it")
        if any(
            a.kind in (ActionKind.LAUNCH, ActionKind.RELAUNCH) or a.id.endswith(".run.update") for a in todo
        ):
            collect_secrets(loaded.spec, env, rerun=command)  # fail before touching anything, naming it
        provider = providers.get(loaded.spec.platform)
        if provider is None:
            raise GpujobError(f"no {loaded.spec.platform} provider open for job '{jp.job}'")
        sdir = _state_dir_for(loaded.path, state_dir)
        project = ensure_project(sdir)
        planned_for = getattr(loaded, "project", None)
        if planned_for is not None and planned_for != project.id:
            raise GpujobError(
                f"job '{jp.job}' was planned as project {planned_for}, but its state "
                f"({as_store(sdir).location}) is project {project.id}",
                hint="plan again from this checkout",
            )
        ctx = JobContext(
            spec=loaded.spec,
            spec_path=loaded.path,
            provider=cast(Provider, WaitedProvider(provider, JobReporter(hooks, jp.job))),
            state_dir=sdir,
            journal=Journal(sdir, jp.job),
            ssh=ssh or SSHApi.default(),
            clock=clock,
            env=env,
            hooks=hooks,
            approvals=set(approvals),
            rerun=command,
            project=project.id,
            project_label=project.label,
            digest=getattr(loaded, "digest", ""),
            capabilities=caps,
        )
        queue = getattr(loaded, "sweep", None)  # a sweep queue (gpujob.layout.queues.Queue) or None
        if queue is not None:
            ctx.extra[SWEEP_QUEUE] = queue
        if jp.job in gpu_ceilings:
            ctx.extra[GPU_CEILING] = gpu_ceilings[jp.job]
        contexts.append((ctx, todo))
    for ctx, todo in contexts:
        for cap in caps:  # e.g. a sweep queue's cells placed on it for good (gpujob.sweep.assign)
            cap.before_steps(ctx, todo)
    result = ApplyResult()
    await asyncio.gather(*(_run_job(ctx, todo, result) for ctx, todo in contexts))
    return result


async def _run_job(ctx: JobContext, todo: list[Action], result: ApplyResult) -> None:
    ctx.todo = list(todo)
    ctx.in_flight = set(ctx.journal.in_flight())
    if ctx.in_flight:
        ctx.note(
            f"a previous apply stopped during {', '.join(sorted(ctx.in_flight))}; converging from live state"
        )
    ctx.journal.append("begin", ctx.clock.now(), detail=f"{len(todo)} step(s)")
    await stepbase.refresh(ctx)
    failed_at: str | None = None
    for action in todo:
        if failed_at is not None:
            result.skipped.append(action.id)
            ctx.hooks.step(action, "skipped", f"after {failed_at} failed")
            ctx.journal.append("skipped", ctx.clock.now(), action_id=action.id, kind=str(action.kind))
            continue
        ctx.hooks.step(action, "start")
        ctx.journal.append(
            "intent",
            ctx.clock.now(),
            action_id=action.id,
            kind=str(action.kind),
            resource_name=action.resource_name,
        )
        crashpoint("before", action.id)
        try:
            outcome = await steps.run(ctx, action)
        except GpujobError as exc:
            failed_at = action.id
            message = str(exc) + (f" (hint: {exc.hint})" if exc.hint else "")
            result.failed[action.id] = message
            ctx.journal.append(
                "failed", ctx.clock.now(), action_id=action.id, kind=str(action.kind), detail=message
            )
            ctx.hooks.step(action, "failed", message)
            continue
        crashpoint("after", action.id)
        if outcome.resource_id:
            result.resources[action.id] = outcome.resource_id
        result.done.append(action.id)
        ctx.journal.append(
            "done",
            ctx.clock.now(),
            action_id=action.id,
            kind=str(action.kind),
            resource_name=action.resource_name,
            resource_id=outcome.resource_id,
            detail=outcome.detail,
        )
        ctx.hooks.step(action, "done", outcome.detail)
    ctx.journal.append("end", ctx.clock.now(), detail="failed" if failed_at else "ok")
