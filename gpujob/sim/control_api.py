"""The control API under /_sim/ (served on both ports, no auth, never faulted): inject faults,
advance the simulated clock, read the bill and the raw state."""

from __future__ import annotations

from typing import Any

from gpujob.sim import ps_engine, rp_engine, rp_migrate
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.faults import FAULTS, QUEUED, Fault, unknown_options
from gpujob.sim.http import Request, Response


def inject(sim: Simulator, params: dict[str, Any]) -> dict[str, Any]:
    kind = params.get("fault")
    if kind not in FAULTS:
        raise SimError(400, f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
    wrong = unknown_options(kind, params)
    if wrong is not None:
        raise SimError(400, wrong)  # an option the fault ignores would rehearse something else silently
    if kind == "clear":
        sim.faults.clear()
        with sim.lock:
            sim.state.balance_exhausted = False
            sim.options.balance = float(params.get("balance", max(sim.options.balance, 1_000_000.0)))
            sim.save()
        return {"fault": "clear", "active": []}
    if kind == "gpu_fault" and params.get("kind") not in ("xid", "throttle", "busy"):
        raise SimError(400, "gpu_fault needs --kind xid, throttle or busy")
    fault = Fault.model_validate(params)
    if fault.gpu:
        fault.for_gpus(_gpu_ids(sim, fault))
    if kind == "gpu_fault" and fault.pod_id:
        return {"fault": kind, "marked": _mark_host(sim, fault.pod_id, fault.kind)}
    if (
        kind
        in (
            "capacity",
            "http_error",
            "drop",
            "create_500_but_created",
            "zero_gpu",
            "bid_too_low",
            "gpu_fault",
        )
        and "count" not in params
    ):
        fault.count = 1
    if kind in QUEUED:
        sim.faults.add(fault)
        return {"fault": kind, "queued": True, "active": sim.faults.active()}
    if kind == "preempt" and params.get("machine_id"):
        return {"fault": kind, "preempted": ps_engine.lose_member(sim, str(params["machine_id"]))}
    if kind == "preempt":
        grace = params.get("grace", params.get("seconds"))
        ids = rp_engine.preempt(sim, fault.pod_id, float(grace) if grace is not None else None)
        return {"fault": kind, "preempted": ids}
    if kind == "low_balance":
        with sim.lock:
            sim.state.balance_exhausted = True
            sim.save()
        stopped = rp_engine.stop_all(sim, reason="balance")
        return {"fault": kind, "stopped": stopped}
    if kind == "migrate":
        return {"fault": kind, "migrated": rp_migrate.migrate(sim, fault.pod_id)}
    if kind == "oom":
        return {"fault": kind, "killed": rp_engine.oom_kill(sim, fault.pod_id)}
    if kind == "disk_fill":
        return {"fault": kind, "filled": _fill_disks(sim, fault.pod_id, fault.percent)}
    if kind == "gpu_util":
        return {"fault": kind, "set": _fill_disks(sim, fault.pod_id, fault.percent, what="gpu_util")}
    if kind == "auto_shutdown":
        off = ps_engine.force_shutdown(sim, params.get("machine_id"))
        return {"fault": kind, "stopped": off}
    raise SimError(400, f"fault {kind} not handled")


def _gpu_ids(sim: Simulator, fault: Fault) -> frozenset[str]:
    """The platform ids the fault's --gpu names (a job file alias or an id); refused when none."""
    from gpujob.sim.fault_gpus import NoSuchGpu, resolve

    catalogs = {"runpod": sim.rp_prices, "paperspace": sim.ps_prices}
    wanted = [catalogs[fault.platform]] if fault.platform in catalogs else list(catalogs.values())
    try:
        return resolve(str(fault.gpu), wanted)
    except NoSuchGpu as exc:
        raise SimError(400, str(exc)) from exc


def _mark_host(sim: Simulator, rid: str, kind: str | None) -> list[str]:
    """One pod's or machine's host turns faulty: seen from its next boot (a start, a restart)."""
    with sim.lock:
        found = sim.state.pods.get(rid) or sim.state.machines.get(rid)
        if found is None:
            raise SimError(404, f"no pod or machine {rid}")
        found.gpu_fault = kind
        sim.save()
    return [rid]


def _fill_disks(
    sim: Simulator, pod_id: str | None, percent: float | None, what: str = "disk_fill"
) -> list[str]:
    """Running pods and machines (or one) report their disks `percent` full until told 0; or (gpu_util)
    their GPUs `percent` utilised until told without a percent."""
    from gpujob.sim.gpuhost import fill_disks, set_utilisation

    with sim.lock:
        ctls = {
            p.id: rp_engine.pod_dir(sim, p.id) / "ctl"
            for p in sim.state.pods.values()
            if p.status == "RUNNING" and pod_id in (None, p.id)
        }
        ctls |= {m.id: ps_engine.machine_dir(sim, m.id) / "ctl" for m in sim.state.machines.values()
                 if m.state == "ready" and pod_id in (None, m.id)}  # fmt: skip
    for ctl in ctls.values():
        if what == "gpu_util":
            set_utilisation(ctl, percent)
        else:
            fill_disks(ctl, percent or None)
    return sorted(ctls)


def add_control_routes(api: Any) -> None:
    """Registered first on both platform APIs; dispatch() sends /_sim/ here before faults and auth."""
    sim: Simulator = api.sim

    def post_inject(req: Request) -> Response:
        return Response(200, inject(sim, req.json()))

    def get_faults(req: Request) -> Response:
        return Response(200, {"active": sim.faults.active()})

    def advance(req: Request) -> Response:
        body = req.json()
        seconds = float(body.get("seconds", 0))
        if seconds < 0:
            raise SimError(400, "the simulated clock only moves forward")
        now = sim.advance(seconds)
        return Response(200, {"now": now, "advanced": seconds})

    def clock(req: Request) -> Response:
        return Response(200, {"now": sim.now(), "speed": sim.clock.speed})

    def bill(req: Request) -> Response:
        return Response(200, sim.bill())

    def state(req: Request) -> Response:
        with sim.lock:
            return Response(200, sim.state.model_dump(mode="json"))

    def health(req: Request) -> Response:
        return Response(200, {"ok": True, "data_dir": str(sim.data_dir), "pods": sim.options.pods})

    def self_stop(req: Request) -> Response:
        from gpujob.sim import selfstop

        return Response(202, selfstop.handle(sim, req.json()))

    api.control_routes = [
        ("POST", "/_sim/self-stop", self_stop),
        ("POST", "/_sim/inject", post_inject),
        ("GET", "/_sim/faults", get_faults),
        ("POST", "/_sim/clock/advance", advance),
        ("GET", "/_sim/clock", clock),
        ("GET", "/_sim/bill", bill),
        ("GET", "/_sim/state", state),
        ("GET", "/_sim/health", health),
    ]
