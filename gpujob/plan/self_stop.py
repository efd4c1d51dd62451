"""What happens to a GPU when the run ends. RunPod has no auto-shutdown, so a pod bills on after its run
finished or failed unless teardown.on_finish / on_failure say stop (done on the pod itself by the
launcher, with the pod's own runpodctl). Said when the pod is created, with what it keeps billing;
and a warning when the image may lack runpodctl, so the pod cannot stop itself.

A Paperspace machine cannot stop itself (issue 37): its documentation knows one unbilled state, `off`,
reached by a stop event from its console or its API (`PATCH /machines/{id}/stop`), and the API's keys
are team-wide (no machine-scoped key like RunPod's), which gpujob never puts on a machine
(docs/security.md); it does not say that a `shutdown` inside the machine ends the hourly billing. So a
teardown stop there is done by gpujob apply / watch only, and the plan says what bills meanwhile."""

from __future__ import annotations

from gpujob.cost.rates import usd
from gpujob.plan.context import JobContext, path_tier
from gpujob.plan.model import ActionKind, Finding

RUNPODCTL_IMAGES = ("runpod/",)  # RunPod's own images ship runpodctl (seeds/runpod.md)


def self_stop_findings(ctx: JobContext, running_usd_per_hour: float) -> list[Finding]:
    spec = ctx.spec
    if spec.platform == "paperspace" and spec.run is not None:
        return _paperspace(ctx, running_usd_per_hour)
    if spec.platform != "runpod" or spec.run is None:
        return []
    out: list[Finding] = []
    creates = any(
        a.kind in (ActionKind.CREATE, ActionKind.REPLACE) and a.resource_kind == "pod" for a in ctx.actions
    )
    keeps = [
        k
        for k, v in (("on_finish", spec.teardown.on_finish), ("on_failure", spec.teardown.on_failure))
        if v == "keep"
    ]
    if creates and keeps:
        when = "after the run ends (finished or failed)"
        if keeps == ["on_finish"]:
            when = "after the run finishes"
        elif keeps == ["on_failure"]:
            when = "after the run fails"
        out.append(
            ctx.finding(
                "gpu-after-run",
                "warning",
                f"RunPod has no auto-shutdown: this pod keeps billing {usd(running_usd_per_hour)}/h {when}, "
                "until something stops it",
                fix=f"set teardown.{keeps[0]}: stop (the pod stops itself as the run ends, no gpujob needed)",
                key="teardown",
            )
        )
    stops = spec.teardown.on_finish == "stop" or spec.teardown.on_failure == "stop"
    image = spec.machine.image or ""
    if stops and image and not image.startswith(RUNPODCTL_IMAGES):
        out.append(
            ctx.finding(
                "self-stop-image",
                "warning",
                f"image {image} may not have runpodctl: the pod then cannot stop itself when the run ends "
                "(the run's log says so, and it keeps billing until gpujob apply or watch stops it)",
                fix="use a runpod/ image, or install runpodctl in yours",
                key="machine.image",
            )
        )
    out += _strands(ctx, creates)
    return out


def _strands(ctx: JobContext, creates: bool) -> list[Finding]:
    """The Iron Law on the pod's own stop (gpujob.plan.stop_law): it cannot pull first, so it is an error
    where checkpoint.dir is on a disk a stop bills at 2× or deletes, unless its approval is given."""
    from gpujob.plan import stop_law

    spec, ck = ctx.spec, ctx.spec.checkpoint
    keys = stop_law.self_stops(spec)
    launches = creates or any(a.kind in (ActionKind.LAUNCH, ActionKind.RELAUNCH) for a in ctx.actions)
    if ck is None or not keys or not launches:
        return []
    risk = stop_law.stop_risk(ctx.profile, spec, path_tier(spec, ck.dir))
    if risk is None:
        return []
    aid = stop_law.approval_id(spec.name)
    return [
        ctx.finding(
            stop_law.CODE,
            "error",
            f"{_what(keys[0])} is done on the pod itself, which cannot pull first: the newest "
            f"checkpoint in {ck.dir} would stay only on the stopped pod, where {risk}",
            detail="gpujob's own stops (state: stopped, gpujob watch) pull and verify the checkpoints "
            f"first; the pod's stop {_when(keys)} has no way to (the Iron Law: no stop before a verified "
            "pull).",
            fix="put checkpoint.dir on a storage.network_volume (a stop keeps it as it is); or "
            f"{_instead(keys[0])}; or accept the risk: --approve {aid}",
            key=keys[0] if keys[0] not in _TEARDOWN else f"teardown.{keys[0]}",
        )
    ]


_TEARDOWN = ("on_finish", "on_failure")


def _when(keys: list[str]) -> str:
    said = ["at the end of the run"] if any(k in _TEARDOWN for k in keys) else []
    said += [f"when {k} trips" for k in keys if k not in _TEARDOWN]
    return " or ".join(said)


def _what(key: str) -> str:
    if key in _TEARDOWN:
        return f"teardown.{key}: stop"
    return f"the stop when {key} trips (the launcher's on-box agent, with nobody watching)"


def _instead(key: str) -> str:
    if key in _TEARDOWN:
        return (
            f"set teardown.{key}: keep and stop with state: stopped (gpujob apply pulls and verifies first)"
        )
    return f"unset {key} and keep gpujob watch running (its stops pull and verify first)"


def _paperspace(ctx: JobContext, running_usd_per_hour: float) -> list[Finding]:
    spec = ctx.spec
    stops = [
        k
        for k, v in (("on_finish", spec.teardown.on_finish), ("on_failure", spec.teardown.on_failure))
        if v == "stop"
    ]
    starts = any(
        (a.kind in (ActionKind.CREATE, ActionKind.REPLACE) and a.resource_kind == "machine")
        or a.kind in (ActionKind.LAUNCH, ActionKind.RELAUNCH)
        for a in ctx.actions
    )
    if not stops or not starts:
        return []
    when = {"on_finish": "finishes", "on_failure": "fails"}
    ends = " or ".join(when[k] for k in stops)
    backstop = spec.machine.auto_shutdown
    clock = (
        f", or machine.auto_shutdown turns it off {backstop.total_seconds() / 3600:g}h after it started"
        if backstop is not None
        else ""
    )
    return [
        ctx.finding(
            "paperspace-no-self-stop",
            "warning",
            f"a Paperspace machine cannot stop itself: after the run {ends}, this machine keeps billing "
            f"{usd(running_usd_per_hour)}/h until gpujob watch or apply stops it (teardown.{stops[0]}: stop){clock}",
            detail="Paperspace bills no hourly usage only in its off state, reached by a stop from its "
            "console or API; its API keys are team-wide, and gpujob puts no account key on a machine",
            fix="keep gpujob watch running while the run goes (it stops the machine as the run ends), "
            "and set machine.auto_shutdown as the backstop",
            key="teardown",
        )
    ]
