"""What `apply` and `destroy` share on the command-line side: find and load job files, hold the job
locks, read live state, plan (or check a saved plan is still current), confirm, execute. Part of the
composition root: the capabilities' own steps around the applier (a sweep's cells settled, the smoke
test, failover's moves and what moved jobs left) are called from here.

Prompts go through the injected `ask` callable so this module never touches the terminal itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpujob.apply.applier import ApplyResult, apply_plan
from gpujob.apply.journal import journal_of
from gpujob.apply.progress import ApplyHooks
from gpujob.apply.reconcile import mark_finished, record_launches
from gpujob.errors import GpujobError, StalePlanError
from gpujob.plan.model import Plan, plan_problem
from gpujob.plan.records import recorded
from gpujob.state import Store

Ask = Callable[[str], str]


def interactive() -> bool:
    """Prompts only on a terminal, and never in CI."""
    import sys

    return sys.stdin.isatty() and os.environ.get("CI", "").lower() not in ("1", "true", "yes")


def job_files(args: Sequence[Path]) -> list[Path]:
    from gpujob.spec.load import resolve_job_files

    return resolve_job_files(args, command="apply")


def state_dir_of(path: Path) -> Store:
    """The store of a job file's project (the name is older than the stores: it was .gpujob/)."""
    from gpujob.state import open_store

    return open_store(path)


@contextlib.contextmanager
def locked(loaded: Sequence[Any], command: str, *, timeout: float = 0.0) -> Iterator[None]:
    """Every job's lock, in a fixed order so two applies over overlapping jobs cannot deadlock; each
    waited for up to `timeout` seconds (--lock-timeout) when another gpujob holds it."""
    from gpujob.lock import locked_within

    stores = {(state_dir_of(ls.path).location, ls.spec.name): state_dir_of(ls.path) for ls in loaded}
    with contextlib.ExitStack() as stack:
        for key in sorted(stores):
            stack.enter_context(locked_within(stores[key], key[1], timeout=timeout, command=command))
        yield


def as_absent(loaded: Sequence[Any]) -> list[Any]:
    """The same job files with state: absent (what `destroy` plans)."""
    return [dataclasses.replace(ls, spec=ls.spec.model_copy(update={"state": "absent"})) for ls in loaded]


def new_plan_hint(saved_as: str = "plan.json") -> str:
    """Make the plan again under the same name, review it, apply it."""
    import shlex

    name = shlex.quote(saved_as)
    return f"make a new plan and review it: `gpujob plan -o {name}`, then `gpujob apply {name}`"


def check_saved_plan(plan: Plan, loaded: Sequence[Any], live: Any, *, saved_as: str = "plan.json") -> None:
    """Refuse a saved plan when the job files or what the jobs own changed since it was made."""
    from gpujob.plan.planner import live_fingerprint, spec_digest

    if spec_digest(loaded) != plan.spec_digest:
        raise StalePlanError(
            "the saved plan is stale: a job file changed since it was made",
            hint=new_plan_hint(saved_as),
        )
    if getattr(live, "read_errors", None):
        raise StalePlanError(
            "cannot check the saved plan: live state could not be read completely: "
            + "; ".join(live.read_errors),
            hint="retry when the platform answers",
        )
    projects = {ls.spec.name: ls.project for ls in loaded}
    if live_fingerprint(live, {j.job: projects.get(j.job) for j in plan.jobs}) != plan.live_fingerprint:
        raise StalePlanError(
            "the saved plan is stale: the jobs' live resources changed since it was made "
            "(something was created, stopped, preempted or deleted)",
            hint=new_plan_hint(saved_as),
        )


def load_saved_plan(path: Path) -> Plan:
    from pydantic import ValidationError

    try:
        return Plan.model_validate_json(path.read_text())
    except ValidationError as exc:
        raise GpujobError(
            f"{path}: refused: not a valid gpujob plan file: {plan_problem(exc)}",
            hint=new_plan_hint(str(path)) + " (nothing was changed)",
        ) from None
    except (OSError, ValueError) as exc:
        raise GpujobError(f"{path}: not a gpujob plan file: {str(exc).splitlines()[0]}") from exc


@dataclasses.dataclass
class Options:
    auto_approve: bool
    approvals: set[str]
    saved: bool
    command: str  # "gpujob apply" or "gpujob destroy", for hints
    targets: tuple[str, ...] = ()  # the job files or the saved plan it was given, as typed
    destroy: bool = False  # `gpujob destroy`: a done teardown is remembered (records.DestroyRecord)
    recreate: bool = False  # `gpujob apply --recreate`: a destroyed job may be created again
    fresh: bool = False  # --fresh: a machine created on a new disk starts without the local checkpoints
    replace: tuple[str, ...] = ()  # --replace addresses (gpujob.plan.replace)
    release_left: bool = False  # --release-left: delete what a move left on other platforms (gated)


def rerun_command(opts: Options, *, can_ask: bool) -> str:
    """The command line that repeats this one, for hints: the same targets, and --auto-approve when the
    re-run cannot ask for confirmation (no terminal, or CI) or this run had it. A saved plan asks nothing."""
    import shlex

    words = [*opts.command.split(), *opts.targets]
    if not opts.saved:  # a saved plan carries its own (Plan.replace, Plan.fresh)
        words += [w for address in opts.replace for w in ("--replace", address)]
        words += ["--fresh"] if opts.fresh else []
        words += ["--recreate"] if opts.recreate else []
        words += ["--release-left"] if opts.release_left else []
    if not opts.saved and (opts.auto_approve or not can_ask):
        words.append("--auto-approve")
    return shlex.join(words)


async def plan_and_apply(
    loaded: Sequence[Any],
    providers: Mapping[str, Any],
    opts: Options,
    *,
    saved_plan: Plan | None,
    show: Callable[[Plan], None],
    ask: Ask | None,
    hooks: ApplyHooks,
) -> tuple[Plan, ApplyResult | None]:
    """Plan (or check the saved plan), show it, confirm, then apply. Returns (plan, None) when nothing
    was applied because nothing changes."""
    from gpujob.apply.rederive import rederive
    from gpujob.apply.refresh import read_live_state
    from gpujob.plan.planner import build_plan
    from gpujob.plan.replace import check_addresses

    refuse_destroyed(loaded, opts)
    # Run facts are read for a saved plan too: it is derived again (gpujob.apply.rederive), and only
    # what the plan was derived from now is executed. An audit --fix plan does not read runs.
    fix = saved_plan is not None and saved_plan.origin == "audit-fix"
    from gpujob.failover.entries import strays_read

    also = strays_read(loaded) & set(providers)  # what moved jobs left where their files no longer point
    from gpujob.cli.month import capped, month_of_project, read_billed

    # budget.max_monthly_usd counts what jobs never watched cost too: read beside the live state
    billing = read_billed(loaded, providers) if capped(loaded) else _none()
    live, billed = await asyncio.gather(
        read_live_state([ls.spec for ls in loaded], providers, runs_for=None if fix else loaded, also=also),
        billing,
    )
    if not fix:  # a sweep's cells on their way to another queue land once proven (gpujob.sweep.transit)
        from gpujob.sweep.transit import settle

        loaded = await settle(loaded, live, providers)
    now = datetime.now(UTC)
    from gpujob.sweep.fit import fit_queues

    loaded = fit_queues(loaded, live, now=now, env=os.environ)  # a sweep's queue count under its cap
    if not fix:  # what the files no longer name, still running or billing (an audit --fix plan: its own)
        from gpujob.plan.unnamed import with_unnamed

        loaded = with_unnamed(loaded, live)
    record_seen(loaded, providers, live)
    follow_migrations(loaded, live.resources)
    monthly = month_of_project(loaded, now, billed)
    if saved_plan is not None:
        check_saved_plan(saved_plan, loaded, live, saved_as=opts.targets[0] if opts.targets else "plan.json")
        plan = rederive(saved_plan, loaded, live, now=now, env=os.environ, **recorded(loaded, monthly))
    else:
        plan = build_plan(
            loaded,
            live,
            now=now,
            env=os.environ,
            **recorded(loaded, monthly),
            fresh=opts.fresh,
            replace=check_addresses(opts.replace, loaded),
            release_left=opts.release_left,
        )
    from gpujob.apply.unreachable import mark_plan
    from gpujob.plan.stop_law import accept_risks

    plan = accept_risks(mark_plan(plan, set(opts.approvals)), set(opts.approvals))
    show(plan)
    rerun = rerun_command(opts, can_ask=ask is not None)
    if plan.blocked:
        raise GpujobError(
            "the plan has error findings (above); nothing was applied",
            hint=f"do what each error's fix: line says, then run: `{rerun}`",
        )
    if not plan.has_changes:
        remember_intent(loaded, opts, ok=True)
        return plan, None
    approvals = set(opts.approvals)
    confirm(plan, opts, ask, approvals, rerun=rerun)
    from gpujob.smoke import smoke_before_apply

    smoke_before_apply(plan, loaded, note=hooks.note)
    if opts.recreate:
        remember_intent(loaded, opts, ok=True)
    mark_finished(plan, loaded, journal_of, datetime.now(UTC))
    from gpujob.failover.applying import apply_moves, split_moves
    from gpujob.failover.leftover import apply_left, split_left

    rest, movers = split_moves(plan)  # a job moving to another platform (gpujob.failover)
    rest, left = split_left(rest)  # what a job holds on a platform it does not run on
    if left:  # refused up front, before the teardown where the job runs starts
        from gpujob.apply.gate import require_approvals

        require_approvals(plan.all_actions(), approvals, command=rerun)
    result = await apply_plan(
        rest,
        loaded,
        providers,
        approvals=approvals,
        auto_approve=opts.auto_approve,
        hooks=hooks,
        command=rerun,
        allow_unverified=True,  # typed by the user on this very command line (gpujob.apply.unreachable)
    )
    if movers:
        moved, failed = await apply_moves(movers, loaded, live, providers, hooks=hooks, env=os.environ)
        result.done += moved
        result.failed.update(failed)
    if left:
        await apply_left(rest, left, loaded, providers, result, live=live, approvals=approvals,
                         auto_approve=opts.auto_approve, hooks=hooks, command=rerun)  # fmt: skip
    record_launches(result.done, loaded, journal_of, datetime.now(UTC))
    record_deleted(plan, result.done, loaded, providers)
    if opts.destroy:
        remember_intent(loaded, opts, ok=result.ok)
    return plan, result


def refuse_destroyed(loaded: Sequence[Any], opts: Options) -> None:
    """A job `gpujob destroy` tore down is not created again by an apply, whatever its file now says,
    unless --recreate says so (a comment edited back must not bring a GPU back)."""
    from gpujob.plan.records import load_destroyed

    if opts.destroy or opts.recreate:
        return
    for ls in loaded:
        if ls.spec.state == "absent":
            continue
        rec = load_destroyed(state_dir_of(ls.path), ls.spec.name)
        if rec is not None:
            raise GpujobError(
                f"job '{ls.spec.name}' was {rec.describe().split(';')[0]} (gpujob destroy); apply does not "
                "create it again by itself",
                hint="`gpujob apply --recreate` creates it again (the run resumes from the newest verified "
                "local checkpoint); nothing was changed",
            )


def remember_intent(loaded: Sequence[Any], opts: Options, *, ok: bool) -> None:
    """After a destroy that finished: the jobs are destroyed on purpose. Before a --recreate applies:
    that mark is lifted."""
    from gpujob.plan.records import clear_destroyed, note_destroyed

    now = datetime.now(UTC)
    for ls in loaded:
        if opts.destroy and ok:
            note_destroyed(state_dir_of(ls.path), ls.spec.name, now)
            from gpujob.failover.leftover import home_again

            home_again(ls, now)  # nothing of it is left anywhere: --recreate starts on its own platform
        elif opts.recreate:
            clear_destroyed(state_dir_of(ls.path), ls.spec.name, now)


DELETES = ("terminate", "replace", "delete-volume", "release-ip", "delete-snapshot")


async def _none() -> None:
    return None


def record_seen(loaded: Sequence[Any], providers: Mapping[str, Any], live: Any) -> None:
    """Remember each job's resources as this read saw them (gpujob.cost.seen), so `gpujob cost` still
    counts what a later apply deletes."""
    from gpujob.cost import seen
    from gpujob.naming import claims

    owners = claims(live.resources, {ls.spec.name: ls.project for ls in loaded})
    for ls in loaded:
        p = ls.spec.platform
        complete = not any(p in e for e in live.read_errors)
        seen.record(state_dir_of(ls.path), ls.spec.name, owners.get(ls.spec.name, []),
                    providers[p].platform_now(), complete=complete, platform=p)  # fmt: skip


def follow_migrations(loaded: Sequence[Any], resources: Sequence[Any]) -> None:
    """A pod RunPod migrated (new id and IP, same markers and volume) is adopted in the state, with an
    event (gpujob.apply.migration)."""
    import click

    from gpujob.apply.migration import follow
    from gpujob.watch.events import append_event, make_event

    for ls in loaded:
        sdir = state_dir_of(ls.path)
        moved = follow(sdir, ls, resources)
        if moved is not None:
            event = make_event(datetime.now(UTC), ls.spec.name, "migrated", moved.describe(),
                               "followed: the new id is the job's pod")  # fmt: skip
            append_event(sdir, event)
            click.echo(event.line(), err=True)


def record_deleted(
    plan: Plan, done: Sequence[str], loaded: Sequence[Any], providers: Mapping[str, Any]
) -> None:
    """Deletion times on the platform's clock, for the resources this apply deleted (their spend stops there)."""
    from gpujob.cost import seen

    finished = set(done)
    for ls in loaded:
        gone = {
            a.resource_id: providers[a.platform].platform_now()
            for a in plan.all_actions()
            if a.job == ls.spec.name and a.id in finished and a.kind.value in DELETES and a.resource_id
        }
        if gone:
            seen.record(state_dir_of(ls.path), ls.spec.name, [], providers[ls.spec.platform].platform_now(),
                        complete=False, deleted=gone)  # fmt: skip


def confirm(
    plan: Plan, opts: Options, ask: Ask | None, approvals: set[str], *, rerun: str | None = None
) -> None:
    """Ordinary actions: --auto-approve, a saved plan, or 'yes' at the prompt. Gated ones: their id."""
    from gpujob.apply.gate import approve_flags
    from gpujob.plan.model import ActionKind

    changes = [a for a in plan.all_actions() if a.kind is not ActionKind.NOOP]
    gated = [a for a in changes if a.gated and a.id not in approvals]
    if not (opts.auto_approve or opts.saved):
        if ask is None:
            raise GpujobError(
                f"{opts.command} needs confirmation, and there is no terminal to ask (stdin is not a TTY, or CI=true)",
                hint="review the plan above, then run: "
                f"`{' '.join([rerun or opts.command, approve_flags(a.id for a in changes if a.gated)]).strip()}`",
            )
        answer = ask(f"Apply {len(changes)} action(s)? Only 'yes' is accepted: ").strip()
        if answer != "yes":
            raise GpujobError("apply cancelled; nothing was changed")
    if gated and ask is not None:
        for a in gated:
            typed = ask(f"{a.id} is irreversible. Type its id to approve it (Enter refuses): ").strip()
            if typed == a.id:
                approvals.add(a.id)
