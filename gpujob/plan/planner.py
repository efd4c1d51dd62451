"""build_plan: desired (job files) + live state -> an ordered Plan. Pure and synchronous.

Per job: find the job's own resources by their deterministic names (gpujob.naming), compare with the spec, and emit
actions in apply order (volume before the pod that mounts it, pull before anything that deletes
checkpoints). Each action carries its billing (meters it starts, stops, leaves running), its data
effect (from the profile's survival matrix) and the findings it walks into.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpujob import __version__, naming
from gpujob.cost.rates import hourly_total, meters, monthly_total
from gpujob.live import LiveResource, LiveState
from gpujob.plan import actions as act
from gpujob.plan import capability, run_actions
from gpujob.plan.balance import with_balance
from gpujob.plan.builder import noop, noop_reason
from gpujob.plan.cadence import cadence
from gpujob.plan.capability import AFTER_BALANCE, BEFORE_BALANCE, Capability, PlanRound, chosen
from gpujob.plan.context import JobContext, SpecSource
from gpujob.plan.findings import by_severity, spec_findings
from gpujob.plan.footprints import current_footprint, desired_footprint, parked_footprint
from gpujob.plan.model import ActionKind, Finding, JobPlan, Plan
from gpujob.plan.ownership_findings import ownership_findings
from gpujob.plan.records import current_record
from gpujob.plan.trap_findings import trap_findings
from gpujob.profile import load_profile


def build_plan(
    loaded: Sequence[SpecSource],
    live: LiveState,
    *,
    now: datetime,
    env: Mapping[str, str],
    pull_records: Mapping[str, Any] | None = None,
    launch_records: Mapping[str, Any] | None = None,
    histories: Mapping[str, Any] | None = None,
    monthly: Any = None,
    fresh: bool = False,
    replace: Sequence[str] = (),
    release_left: bool = False,
    capabilities: Sequence[Capability] | None = None,
) -> Plan:
    """The plan for every job file, in the order given. `env` is only asked whether secret names are set.
    `launch_records` (apply.records.LaunchRecord per job) say what a machine was created with where the
    platform does not report it (Paperspace template and disk size). Each loaded job carries its
    project id (gpujob.project.with_projects): it owns what is named for it. `release_left`: also
    delete, gated, what a job with fallback entries holds on the platforms it no longer runs on
    (gpujob.failover.leftover; a job with state: absent always does). `capabilities` plug in
    (gpujob.plan.capability; None: the ones the composition root installed). `histories`
    (gpujob.cost.history.History per job, from gpujob.cost.history.job_histories) feed the forecast."""
    caps = chosen(capabilities)
    projects = job_projects(loaded)
    owners = naming.claims(live.resources, projects)
    from gpujob.plan.unnamed import is_unnamed, unclaimed

    claimed = {r.id for ls in loaded if not is_unnamed(ls) for r in owners.get(ls.spec.name, [])}
    jobs = [
        _plan_job(
            ls,
            live,
            unclaimed(owners.get(ls.spec.name, []), claimed)
            if is_unnamed(ls)
            else owners.get(ls.spec.name, []),
            now=now,
            env=env,
            pull=(pull_records or {}).get(ls.spec.name),
            launched=(launch_records or {}).get(ls.spec.name),
            history=(histories or {}).get(ls.spec.name),
            fresh=fresh,
            replace=set(replace),
            capabilities=caps,
        )
        for ls in loaded
    ]
    rnd = PlanRound(loaded=loaded, jobs=jobs, live=live, now=now, env=env, pull_records=pull_records,
                    launch_records=launch_records, release_left=release_left, capabilities=caps)  # fmt: skip
    jobs = _round(rnd, BEFORE_BALANCE)  # e.g. a job moving to another platform (gpujob.failover)
    jobs = with_balance(loaded, jobs, live)  # RP8: account-wide, so judged once every job is planned (moved)
    rnd.jobs = jobs
    jobs = _round(rnd, AFTER_BALANCE)  # e.g. what a moved job left on the platforms it no longer runs on
    from gpujob.plan.one_run import with_one_run
    from gpujob.plan.rate import with_caps

    jobs = with_one_run(loaded, jobs, live, owners)  # the job's own machine running on another platform

    jobs = with_caps(loaded, jobs)  # budget.max_hourly_usd on each file's sum (a sweep's queues, a move)
    from gpujob.plan.ceiling import with_prefer

    jobs = with_prefer(loaded, jobs)  # under the cap: what apply's choosers may take (spot: prefer) too
    from gpujob.plan.unnamed import explain_writers

    jobs = explain_writers(jobs)  # another writer of a volume is a job the file no longer names
    from gpujob.plan.forecasting import with_monthly

    jobs = with_monthly(jobs, monthly)  # the project's budget.max_monthly_usd (gpujob.cost.monthly)
    return Plan(
        created_at=now,
        gpujob_version=__version__,
        spec_digest=spec_digest(loaded),
        live_fingerprint=live_fingerprint(live, projects),
        jobs=jobs,
        replace=list(replace),
        fresh=fresh,
        release_left=release_left,
    )


def _round(rnd: PlanRound, stage: str) -> list[JobPlan]:
    """Every capability's pass of `stage` over the job plans, in the order the capabilities were given."""
    jobs = rnd.jobs
    for cap in rnd.capabilities:
        step = cap.rounds().get(stage)
        if step is not None:
            rnd.jobs = jobs = step(rnd)
    return jobs


def plan_one(
    loaded: SpecSource,
    live: LiveState,
    *,
    now: datetime,
    env: Mapping[str, str],
    pull: Any = None,
    launched: Any = None,
    capabilities: Sequence[Capability] | None = None,
) -> JobPlan:
    """One job's plan from what it owns in `live` (no account-wide or cross-platform judgement)."""
    owned = naming.claims(live.resources, job_projects([loaded])).get(loaded.spec.name, [])
    return _plan_job(loaded, live, owned, now=now, env=env, pull=pull, launched=launched,
                     capabilities=chosen(capabilities))  # fmt: skip


def job_projects(loaded: Sequence[SpecSource]) -> dict[str, str | None]:
    """job name -> project id. A job without one cannot be planned: it could not name what it makes."""
    missing = [ls.spec.name for ls in loaded if ls.project is None]
    if missing:
        raise ValueError(f"no project id for job(s) {', '.join(missing)}: see gpujob.project.with_projects")
    return {ls.spec.name: ls.project for ls in loaded}


def spec_digest(loaded: Sequence[SpecSource]) -> str:
    """sha256 over every job file's path and content digest (order-independent): the stale-spec guard."""
    return files_digest((str(ls.path), ls.digest) for ls in loaded)


def files_digest(files: Iterable[tuple[str, str]]) -> str:
    """The stale-spec recipe over (path, sha256 of the file) pairs, sorted by path. `gpujob audit --fix`
    uses it too, so apply's guard treats its plans exactly like a `gpujob plan`."""
    digest = hashlib.sha256()
    for path, file_digest in sorted(files, key=lambda f: f[0]):
        digest.update(f"{path}\0{file_digest}\n".encode())
    return digest.hexdigest()


def live_fingerprint(live: LiveState, projects: Mapping[str, str | None]) -> str:
    """LiveState.fingerprint() of just what these jobs own (`projects`: job -> project id), plus any pod
    mounting one of their volumes, so an unrelated resource changing elsewhere in the account does not
    make a saved plan stale. `gpujob apply` recomputes this from a fresh read and compares."""
    owners = naming.claims(live.resources, projects)
    mine = [r for rs in owners.values() for r in rs]
    volume_ids = {r.id for r in mine if r.kind == "network_volume"}
    mine += [r for r in live.resources if r.network_volume_id in volume_ids and r not in mine]
    return LiveState(read_at=live.read_at, resources=mine).fingerprint()


def _plan_job(
    loaded: SpecSource,
    live: LiveState,
    owned: list[LiveResource],
    *,
    now: datetime,
    env: Mapping[str, str],
    pull: Any,
    launched: Any = None,
    history: Any = None,
    fresh: bool = False,
    replace: set[str] | None = None,
    capabilities: Sequence[Capability] = (),
) -> JobPlan:
    spec = loaded.spec
    ctx = JobContext(
        loaded=loaded,
        profile=load_profile(spec.platform),
        live=live,
        now=now,
        env=env,
        pull_record=pull,
        launch_record=launched,
        capabilities=tuple(capabilities),
    )
    # A job plans only the platform it runs on now: what it left on another (a stopped machine, a kept
    # volume, after a move or with its fallback entry removed) is never this plan's to change
    # (gpujob.failover.leftover plans its teardown, under its own addresses, when asked).
    owned = [r for r in owned if r.platform == spec.platform]
    _sort_owned(ctx, owned)
    ctx.last_pull = pull
    ctx.fresh = fresh
    from gpujob.plan.replace import of_job

    ctx.replace = of_job(list(replace or ()), spec.name)
    # The record is kept per job; it speaks only for the machine or volume it was pulled from.
    ctx.pull_record = current_record(pull, ctx.machine, [ctx.volume, *ctx.stale_volumes])
    ctx.choose_gpu()
    from gpujob.plan import deadline

    chosen_for_deadline = deadline.choose(ctx, history)  # run.deadline: the GPU and spot that meet it
    ctx.fp = current_footprint(ctx)
    current = hourly_total(meters(ctx.fp, ctx.profile))

    fact = live.runs.get(spec.name) if spec.run is not None and spec.state == "running" else None
    if spec.state == "running":
        if fact is not None and fact.finished_for_digest:
            run_actions.plan_finished(ctx)
        else:
            act.plan_running(ctx)
            if fact is not None:
                run_actions.plan_run(ctx, fact)
    elif spec.state == "stopped":
        act.plan_stopped(ctx)
    elif spec.state == "parked":
        act.plan_parked(ctx)
    else:
        act.plan_absent(ctx)
    if not ctx.actions:
        noop(ctx, run_actions.noop_reason(ctx, fact) or noop_reason(ctx))
    if getattr(loaded, "unnamed", ""):  # a job the file no longer names (gpujob.plan.unnamed)
        from gpujob.plan.unnamed import unnamed_finding

        ctx.findings.append(unnamed_finding(ctx, current))

    desired = desired_footprint(ctx)
    running_meters = meters(desired, ctx.profile) if spec.state != "absent" else {}
    running = hourly_total(running_meters)
    parked_fp = parked_footprint(ctx, desired)
    launch = any(a.kind is ActionKind.LAUNCH for a in ctx.actions)
    from gpujob.plan.self_stop import self_stop_findings

    findings = by_severity(
        _read_error_findings(ctx)
        + ctx.findings
        + self_stop_findings(ctx, running)
        + spec_findings(
            ctx, running_usd_per_hour=running, launch_planned=launch, running_meters=running_meters
        )
        + trap_findings(ctx)
    )
    from gpujob.plan.forecasting import budget_findings, plan_forecast, without_projection

    forecast = plan_forecast(ctx, running, history) if spec.state == "running" else None
    if forecast is not None:
        findings = (
            without_projection(findings) + budget_findings(ctx, forecast) + deadline.slipped(ctx, forecast)
        )
    findings = by_severity(findings + chosen_for_deadline)
    fields: dict[str, Any] = {"forecast": forecast} if forecast is not None else {}
    if spec.state == "running":  # e.g. a sweep queue's cells, estimated at the running rate (gpujob.sweep)
        for cap in capability.of(ctx):
            fields |= cap.job_plan_fields(loaded, running)
        from gpujob.plan.finite import run_estimate

        fields.setdefault("run_estimate", run_estimate(spec, running, queue=getattr(loaded, "sweep", None)))
    return JobPlan(
        job=spec.name,
        platform=spec.platform,
        spec_file=str(loaded.path),
        desired_state=spec.state,
        actions=ctx.actions,
        findings=findings,
        cadence=cadence(spec.checkpoint, interruptible=ctx.spot, gpu_count=spec.machine.gpu_count)
        if spec.checkpoint
        else None,
        running_usd_per_hour=running,
        parked_usd_per_month=monthly_total(meters(parked_fp, ctx.profile)),
        current_usd_per_hour=current,
        after_usd_per_hour=hourly_total(meters(ctx.fp, ctx.profile)),
        run=fact,
        **fields,
    )


def _by_age(resources: list[LiveResource]) -> list[LiveResource]:
    return sorted(resources, key=lambda r: (r.created_at is None, r.created_at or datetime.min, r.id))


def _sort_owned(ctx: JobContext, owned: list[LiveResource]) -> None:
    """Which of the job's own resources is its machine, its volume, a stale volume, an IP, a snapshot;
    and findings for what another project (or an older gpujob) made under this job's name."""
    spec = ctx.spec
    machines = _by_age(
        [r for r in naming.machines(owned, ctx.job, ctx.project) if r.kind == ctx.machine_kind]
    )
    if machines:
        ctx.machine = machines[0]
    if len(machines) > 1:
        ctx.findings.append(
            ctx.finding(
                "duplicate",
                "error",
                f"{len(machines)} {ctx.machine_kind}s are named {ctx.machine_name}: "
                + ", ".join(m.id for m in machines),
                detail="gpujob owns resources by name and cannot tell which one is the job's; the plan uses the oldest.",
                fix=f"terminate the extra {ctx.machine_kind}s by id (after pulling anything they hold)",
                key="name",
            )
        )
    want = ctx.volume_name
    from gpujob.layout.storage import holds_volume

    # a sweep's queues 2..N mount the volume queue 1 holds: theirs to mount, not to bill, grow or delete
    holds = holds_volume(spec, getattr(ctx.loaded, "sweep", None))
    volumes = _by_age([r for r in owned if r.kind == "network_volume"]) if holds else []
    matching = [v for v in volumes if v.name == want]
    if matching:
        ctx.volume = matching[0]
    if len(matching) > 1:
        ctx.findings.append(
            ctx.finding(
                "duplicate",
                "error",
                f"{len(matching)} network volumes are named {want}: " + ", ".join(v.id for v in matching),
                fix="keep one (the one your checkpoints are on) and delete the others by id",
                key="storage.network_volume",
            )
        )
    ctx.stale_volumes = [v for v in volumes if v.name != want]
    # A volume the spec no longer names still holds data: deleted only by state: absent.
    if spec.state == "absent" and ctx.volume is None and ctx.stale_volumes:
        ctx.volume, ctx.stale_volumes = ctx.stale_volumes[0], ctx.stale_volumes[1:]
    ctx.ips = [r for r in owned if r.kind == "public_ip"]
    ctx.snapshots = _by_age([r for r in owned if r.kind == "snapshot"])
    ctx.findings += ownership_findings(ctx)


def _read_error_findings(ctx: JobContext) -> list[Finding]:
    return [
        ctx.finding(
            "live-read",
            "error",
            f"live state is incomplete: {err}",
            fix="retry the plan; apply refuses a plan made from a partial read",
        )
        for err in ctx.live.read_errors
        if ctx.spec.platform in err or not any(p in err for p in ("runpod", "paperspace"))
    ]
