"""What a move leaves behind, and a destroy across platforms.

A move destroys nothing: the old platform keeps the job's stopped machine and its storage, billing. Two
commands delete them, each resource one gated action `<job>.left.<platform>.<resource>.<kind>` (its
own address: the job's own actions on the platform it runs on keep theirs):

    gpujob plan/apply --release-left   what the job holds on every platform it does not run on now
    gpujob destroy (or state: absent)  the same, beside the teardown where it runs now: every platform

Each platform's actions are that platform's `state: absent` plan of the job (gpujob.plan.actions), so
they pass the very teardown gate of any delete: the exact id approved, the run quiesced, the checkpoints
and outputs on the disk it erases pulled and verified (or the plan names the loss), the reach rules (a
stopped machine the state proves empty is not started; an unreachable one is refused, with its
override). What is pulled from another platform lands beside the job's own copies, in
`<pull_to>-from-<platform>`: its files may share names with the ones the job wrote since the move, and
must never overwrite them. Watch never plans this (it never passes `release`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from gpujob.live import LiveState
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan, Plan

K = ActionKind
LEFT = "left"


def left_prefix(job: str, platform: str) -> str:
    from gpujob.naming import action_prefix

    return f"{action_prefix(job)}.{LEFT}.{platform}"


def left_platform(action: Action) -> str | None:
    """The platform a left-behind action acts on, or None for the job's own actions."""
    return action.platform if action.id.startswith(left_prefix(action.job, action.platform) + ".") else None


def aside(pull_to: str, platform: str) -> str:
    """Where another platform's copies land: beside the job's own, never over them."""
    from gpujob.naming import aside_dir

    return aside_dir(pull_to, platform)


def entry_on(declared: Any, platform: str) -> int:
    """The first place of the job's chain on `platform` (-1: the job file's own)."""
    if declared.platform == platform:
        return -1
    return next(i for i, f in enumerate(declared.fallback) if f.platform == platform)


def _owned_on(ls: Any, live: LiveState, platform: str) -> list[Any]:
    from gpujob import naming

    return [r for r in naming.owned(live.resources, ls.spec.name, ls.project) if r.platform == platform]


def platforms_left(ls: Any, live: LiveState) -> list[str]:
    """The platforms of the job's chain, and those its failover record names that the job file no
    longer lists (`strays`), other than the one it runs on now, where it owns anything."""
    declared = getattr(ls, "declared", None) or ls.spec
    chain = [declared.platform, *(f.platform for f in declared.fallback), *getattr(ls, "strays", ())]
    if len(chain) == 1:
        return []
    return [p for p in dict.fromkeys(chain) if p != ls.spec.platform and _owned_on(ls, live, p)]


def is_stray(ls: Any, platform: str) -> bool:
    return platform in getattr(ls, "strays", ())


def stray_spec(declared: Any, platform: str, owned: Sequence[Any]) -> Any:
    """The job as it was on a platform its job file no longer lists: the shared blocks, that platform,
    no machine wishes (nothing is ever made there: only its teardown is planned) and the storage the
    live read finds (its machine's mount, its network volume by name), so the plan names what each
    delete erases."""
    from gpujob.jobfile.model import MachineSpec, NetworkVolumeSpec, StorageSpec
    from gpujob.naming import parse

    machine = next((r for r in owned if r.kind in ("pod", "machine")), None)
    volume = next((r for r in owned if r.kind == "network_volume"), None)
    owner = parse(volume.name) if volume is not None else None
    nv = None
    if volume is not None and owner is not None and owner.volume:
        nv = NetworkVolumeSpec.model_construct(name=owner.volume, size_gb=volume.volume_gb or 10)
    mount = (machine.mount_path if machine is not None else None) or declared.storage.mount
    storage = StorageSpec.model_construct(mount=mount, network_volume=nv, volume_gb=None)
    region = next((r.region for r in (machine, volume) if r is not None and r.region), None)
    wishes = MachineSpec.model_construct(gpu=[], regions=[region] if region else [])
    return declared.model_copy(
        update={"platform": platform, "machine": wishes, "storage": storage, "fallback": []}
    )


def left_loaded(ls: Any, platform: str, *, applying: bool = False, live: LiveState | None = None) -> Any:
    """The job as it is on `platform`, with state: absent, pulling into its own local folders there.
    `applying`: a job without an outputs block still has its run's log pulled by the gate (into
    ./outputs/.gpujob/<job>): it lands aside too, through an outputs block with no paths. A platform
    the job file no longer lists is described from `live` (stray_spec)."""
    from gpujob.project.placement import placed_spec

    declared = getattr(ls, "declared", None) or ls.spec
    if is_stray(ls, platform):
        entry = -1
        spec = stray_spec(declared, platform, _owned_on(ls, live, platform) if live is not None else [])
    else:
        entry = entry_on(declared, platform)
        spec = placed_spec(declared, entry)
    update: dict[str, Any] = {"state": "absent"}
    if spec.checkpoint is not None:
        update["checkpoint"] = spec.checkpoint.model_copy(
            update={"pull_to": aside(spec.checkpoint.pull_to, platform)}
        )
    if spec.outputs is not None:
        update["outputs"] = spec.outputs.model_copy(update={"pull_to": aside(spec.outputs.pull_to, platform)})
    elif applying:
        from gpujob.jobfile.model import OutputsSpec
        from gpujob.layout.outputs import DEFAULT_PULL_TO

        update["outputs"] = OutputsSpec.model_construct(paths=[], pull_to=aside(DEFAULT_PULL_TO, platform))
    return dataclasses.replace(ls, spec=spec.model_copy(update=update), entry=entry, declared=declared)


# --- the plan ---------------------------------------------------------------------------------------


def with_left(
    loaded: Sequence[Any],
    jobs: list[JobPlan],
    live: LiveState,
    *,
    now: datetime,
    env: Mapping[str, str],
    pull_records: Mapping[str, Any] | None = None,
    launch_records: Mapping[str, Any] | None = None,
    release: bool = False,
    capabilities: Sequence[Any] | None = None,
) -> list[JobPlan]:
    """Each job with fallback entries, with the deletes of what it holds on its other platforms when
    `release` (--release-left) or its state is absent (destroy); the others as they are."""
    out = []
    for ls, jp in zip(loaded, jobs, strict=True):
        declared = getattr(ls, "declared", None) or ls.spec
        if getattr(ls, "strays", ()):
            jp = _say_strays(jp, ls, live, env=env, release=release)
        if not (declared.fallback or getattr(ls, "strays", ())) or not (release or ls.spec.state == "absent"):
            out.append(jp)
            continue
        if any(a.kind is K.MOVE for a in jp.actions):
            out.append(_not_while_moving(jp, ls, live))
            continue
        for platform in platforms_left(ls, live):
            jp = _with_platform(jp, ls, platform, live, now=now, env=env,
                                pull=(pull_records or {}).get(declared.name),
                                launched=(launch_records or {}).get(declared.name),
                                capabilities=capabilities)  # fmt: skip
        out.append(jp)
    return out


def _not_while_moving(jp: JobPlan, ls: Any, live: LiveState) -> JobPlan:
    left = platforms_left(ls, live)
    if not left:
        return jp
    note = Finding(
        code="release-left",
        severity="info",
        summary=f"what the job holds on {', '.join(left)} is not deleted in the plan that moves it",
        fix="apply the move, then plan again with --release-left",
        job=jp.job,
    )
    return jp.model_copy(update={"findings": [*jp.findings, note]})


def _with_platform(
    jp: JobPlan, ls: Any, platform: str, live: LiveState, *, now: datetime, env: Mapping[str, str], pull: Any,
    launched: Any, capabilities: Sequence[Any] | None = None,
) -> JobPlan:  # fmt: skip
    from gpujob.naming import action_prefix
    from gpujob.plan.planner import plan_one

    variant = left_loaded(ls, platform, live=live)
    there = plan_one(variant, live, now=now, env=env, pull=pull, launched=launched, capabilities=capabilities)
    todo = [a for a in there.actions if a.kind is not K.NOOP]
    if not todo:
        return jp
    old, new = action_prefix(jp.job) + ".", left_prefix(jp.job, platform) + "."

    def rid(i: str | None) -> str | None:
        return new + i[len(old) :] if i is not None and i.startswith(old) else i

    def refind(f: Finding) -> Finding:
        return f.model_copy(update={"action_id": rid(f.action_id), "summary": f"on {platform}: {f.summary}"})

    first = _first_reason(ls, platform)
    fresh = _failback_note(ls, platform)
    actions = [
        a.model_copy(
            update={
                "id": rid(a.id),
                "depends_on": [rid(d) for d in a.depends_on],
                "findings": [refind(f) for f in a.findings],
                "reasons": [first, *a.reasons, *([fresh] if fresh and a.kind in _STORAGE else [])],
            }
        )
        for a in todo
    ]
    ids = {a.id for a in todo}
    # A platform the job file no longer lists has no job of its own there to judge: only what its
    # deletes walk into is said.
    loose = not is_stray(ls, platform)
    findings = [refind(f) for f in there.findings if (loose and f.severity == "error") or f.action_id in ids]
    own = jp.actions if ls.spec.state != "absent" else [a for a in jp.actions if a.kind is not K.NOOP]
    return jp.model_copy(
        update={
            "actions": [*own, *actions],
            "findings": [*jp.findings, *findings],
            "current_usd_per_hour": round(jp.current_usd_per_hour + there.current_usd_per_hour, 6),
            "after_usd_per_hour": round(jp.after_usd_per_hour + there.after_usd_per_hour, 6),
            "parked_usd_per_month": round(jp.parked_usd_per_month + there.parked_usd_per_month, 6),
        }
    )


_STORAGE = {K.TERMINATE, K.DELETE_VOLUME}


def _first_reason(ls: Any, platform: str) -> str:
    here = ls.spec.platform
    unlisted = f", which the job file no longer lists ({STRAY_WHY})" if is_stray(ls, platform) else ""
    if ls.spec.state == "absent":
        return (
            f"on {platform}{unlisted}: the job also holds resources there; destroy removes it from every "
            "platform"
        )
    return f"left on {platform}{unlisted}: the job runs on {here} now (--release-left)"


STRAY_WHY = "its failover record names it; only teardown is planned there"


def _say_strays(jp: JobPlan, ls: Any, live: LiveState, *, env: Mapping[str, str], release: bool) -> JobPlan:
    """What the plan says of each platform the failover record names and the job file no longer lists:
    not read (no API key), or what the job holds there and how to delete it; and an error when the job
    still runs there while this plan starts it where the job file says (two runs, two bills)."""
    from gpujob.config import API_KEY_ENV

    said: list[Finding] = []
    teardown = release or ls.spec.state == "absent"
    starts = [
        a for a in jp.actions if a.kind in (K.CREATE, K.START, K.REPLACE, K.MOVE) and left_platform(a) is None
    ]
    for platform in ls.strays:
        var = API_KEY_ENV.get(platform, "")
        if not env.get(var, "").strip():
            if teardown:
                said.append(Finding(
                    code="release-left", severity="warning", job=jp.job,
                    summary=f"{platform} was not read: the failover record names it (the job moved there or "
                    f"from there), the job file no longer lists it, and {var} is not set",
                    fix=f"set {var} and plan again, to see and delete what the job may have left there",
                ))  # fmt: skip
            continue
        owned = _owned_on(ls, live, platform)
        if not owned:
            continue
        names = ", ".join(f"{r.kind} {r.name} ({r.status})" for r in owned[:4])
        up = [r for r in owned if r.kind in ("pod", "machine") and r.status in ("running", "pending")]
        if up and starts and ls.spec.state != "absent":
            # Also with --release-left: the job's own actions run before the deletes elsewhere.
            said.append(Finding(
                code="release-left", severity="error", job=jp.job,
                summary=f"the job still runs on {platform} ({up[0].name}, {up[0].id}), which its job file no "
                f"longer lists; this plan starts it on {ls.spec.platform} too: two runs, two bills",
                fix=f"put the fallback entry for {platform} back (gpujob then plans the job where it runs); or "
                f"set state: stopped and run gpujob apply --release-left (each delete gated) to end it on "
                f"{platform} first, then state: running again",
            ))  # fmt: skip
            continue
        said.append(Finding(
            code="release-left", severity="info", job=jp.job,
            summary=f"on {platform}, which the job file no longer lists (its failover record names it): {names}"
            + ("; only their teardown is planned there" if teardown else ""),
            fix="" if teardown else "gpujob plan --release-left shows their deletes (each gated); nothing else is "
            "ever planned there",
        ))  # fmt: skip
    return jp.model_copy(update={"findings": [*jp.findings, *said]}) if said else jp


def _failback_note(ls: Any, platform: str) -> str:
    declared = getattr(ls, "declared", None) or ls.spec
    if ls.spec.state == "absent" or declared.failback != "auto" or platform != declared.platform:
        return ""
    return (
        f"failback: auto: with this storage deleted, a move back to {platform} starts on a new disk there "
        "(it still carries the newest checkpoint verified here)"
    )


# --- the apply --------------------------------------------------------------------------------------


def split_left(plan: Plan) -> tuple[Plan, dict[tuple[str, str], list[Action]]]:
    """(the plan without left-behind actions, (job, platform) -> those actions in order)."""
    groups: dict[tuple[str, str], list[Action]] = {}
    jobs = []
    for jp in plan.jobs:
        own = []
        for a in jp.actions:
            p = left_platform(a)
            if p is None:
                own.append(a)
            else:
                groups.setdefault((jp.job, p), []).append(a)
        jobs.append(jp.model_copy(update={"actions": own}))
    return plan.model_copy(update={"jobs": jobs}), groups


@contextmanager
def borrowed_records(store: Any, job: str) -> Iterator[None]:
    """The job's pull and outputs records speak for where it runs; a pull from another platform for
    its teardown gate borrows them, and they are put back after. Only under the job's lock: `gpujob
    watch` holds it for its whole run, so its continuous pull never writes them in between (what is
    put back would overwrite it)."""
    from gpujob.errors import GpujobError
    from gpujob.plan.outputs_record import outputs_name
    from gpujob.plan.records import pulls_name

    if not store.lock_held(job):
        raise GpujobError(
            f"{job}: the pull and outputs records are borrowed for another platform's pull only under the "
            "job's lock, and it is not held",
            hint="run it through gpujob apply --release-left or gpujob destroy (both take the lock)",
        )
    names = (pulls_name(job), outputs_name(job))
    kept = {n: store.read(n) for n in names}
    try:
        yield
    finally:
        for n, data in kept.items():
            if data is not None:
                store.write(n, data)


async def apply_left(
    plan: Plan,
    groups: Mapping[tuple[str, str], list[Action]],
    loaded: Sequence[Any],
    providers: Mapping[str, Any],
    result: Any,
    *,
    live: LiveState | None = None,
    approvals: set[str],
    auto_approve: bool,
    hooks: Any,
    command: str,
) -> None:
    """Each platform's left-behind actions, as that platform's job through the applier (and its gate),
    one platform after another; a job whose own teardown failed keeps what it left elsewhere."""
    from gpujob.apply.applier import apply_plan
    from gpujob.state import open_store

    by_name = {ls.spec.name: ls for ls in loaded}
    failed_jobs = {a.job for a in plan.all_actions() if a.id in result.failed}
    for (job, platform), actions in groups.items():
        if job in failed_jobs:
            result.skipped += [a.id for a in actions]
            continue
        variant = left_loaded(by_name[job], platform, applying=True, live=live)
        jp = next(j for j in plan.jobs if j.job == job)
        sub = plan.model_copy(
            update={
                "jobs": [jp.model_copy(update={"platform": platform, "actions": actions, "findings": []})]
            }
        )
        with borrowed_records(open_store(variant.path), job):
            done = await apply_plan(
                sub, [variant], providers, approvals=approvals, auto_approve=auto_approve, hooks=hooks,
                command=command, allow_unverified=True,
            )  # fmt: skip
        result.done += done.done
        result.failed.update(done.failed)
        result.skipped += done.skipped
        result.resources.update(done.resources)


def home_again(ls: Any, now: datetime) -> None:
    """After a destroy that left nothing anywhere: the job is placed on its job file's own platform
    again, so `apply --recreate` starts there; the moves stay in the record as history."""
    from gpujob.project.placement import read_placement, write_placement
    from gpujob.state import open_store

    declared = getattr(ls, "declared", None) or ls.spec
    if not (declared.fallback or getattr(ls, "strays", ())):
        return
    store = open_store(ls.path)
    record = read_placement(store, declared.name)
    if record is None or record.entry == -1:
        return
    write_placement(
        store, record.model_copy(update={"entry": -1, "platform": declared.platform, "since": now})
    )
