"""RunPod's Deploy When Available: a create that waits in RunPod's queue for capacity instead of failing.

What RunPod documents (docs.runpod.io/api-reference-v2/pods/get-a-queued-pod, list-queued-pods and
cancel-a-queued-pod, last modified 2026-11-13; read 2026-12-07): a queued pod is "a pod waiting for
capacity, or the record of one that waited"; it carries what identifies and schedules the request, not
the container settings; its `status` is QUEUED (waiting, from queue.startsAt when set), DEPLOYED
(capacity came and a pod was created: `podId` names it), FAILED (the deploy was refused for good:
`failureReason`), EXPIRED (queue.expiresAt passed without capacity) or CANCELLED (DELETE
/v2/queued-pods/{id}). `GET /v2/queued-pods` is cursor-paginated under `queuedPods`.

The pages read name no create route, so the simulator takes the simplest reading and says so:
`POST /v2/queued-pods` with the body of `POST /v2/pods` plus `queue: {expiresAt?, startsAt?}` answers
201 with the queued pod. A queued pod bills nothing (it is not a pod). It is placed when a placement
attempt finds capacity: one attempt at the create and one at every read of it (GET one, or the list),
each going through the same create as `POST /v2/pods`, so the capacity fault (`gpujob sim inject
capacity`) holds it back for as many attempts as its --count, or until `gpujob sim inject clear`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from gpujob.sim import rp_engine
from gpujob.sim.clock import iso
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Request, Response
from gpujob.sim.runpod_validate import check_create, rule_problems
from gpujob.sim.state import RpPod, RpQueued, new_id

STATUSES = ("QUEUED", "DEPLOYED", "FAILED", "EXPIRED", "CANCELLED")


def queued_json(q: RpQueued) -> dict[str, Any]:
    gpu = q.body.get("gpu") or {}
    return {
        "id": q.id,
        "name": q.name,
        "status": q.status,
        "podId": q.pod_id,
        "failureReason": q.failure_reason,
        "gpuTypeIds": list(gpu.get("gpuTypeIds") or []),
        "gpuCount": gpu.get("count", 1),
        "dataCenterIds": list(q.body.get("dataCenterIds") or []),
        "queue": {"expiresAt": iso(q.expires_at), "startsAt": None},
        "createdAt": iso(q.created_at),
    }


def _expiry(raw: Any) -> float | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise SimError(422, f"$.queue.expiresAt: not a date-time: {raw!r}", "bad_request") from exc


def place(sim: Simulator, q: RpQueued, pod_from_create: Callable[[Simulator, dict[str, Any]], RpPod]) -> None:
    """One placement attempt of a waiting queued pod (the pod_from_create/create of POST /v2/pods)."""
    if q.status != "QUEUED":
        return
    if q.expires_at is not None and sim.now() >= q.expires_at:
        q.status = "EXPIRED"
        return
    q.checks += 1
    try:
        pod, _ = rp_engine.create_pod(sim, pod_from_create(sim, dict(q.body)), source="queue")
    except SimError as exc:
        if exc.kind != "capacity":
            q.status, q.failure_reason = "FAILED", exc.message
        return
    q.status, q.pod_id = "DEPLOYED", pod.id


def add_routes(api: Any, pod_from_create: Callable[[Simulator, dict[str, Any]], RpPod]) -> None:
    """The queued-pod routes; `pod_from_create` reads a POST /v2/pods body (gpujob.sim.runpod_rest)."""
    sim: Simulator = api.sim

    def one(qid: str) -> RpQueued:
        q = sim.state.queued.get(qid)
        if q is None:
            raise SimError(404, "queued pod not found", "not_found")
        return q

    def create(req: Request) -> Response:
        body = req.json()
        if not isinstance(body, dict):
            return api.invalid(["$: expected an object"])
        body = dict(body)
        queue = body.pop("queue", None) or {}
        problems = check_create(body)
        if problems:
            return api.invalid(problems)
        rule = rule_problems(body)
        if rule:
            raise SimError(400, rule, "bad_request")
        q = RpQueued(id="c" + new_id(24), name=str(body.get("name") or ""), body=body)
        q.created_at = sim.now()
        q.expires_at = _expiry(queue.get("expiresAt") if isinstance(queue, dict) else None)
        with sim.lock:
            sim.state.queued[q.id] = q
        place(sim, q, pod_from_create)
        with sim.lock:
            sim.save()
            return Response(201, queued_json(q))

    def get(req: Request) -> Response:
        q = one(req.params["id"])
        place(sim, q, pod_from_create)
        with sim.lock:
            sim.save()
            return Response(200, queued_json(q))

    def listed(req: Request) -> Response:
        from gpujob.sim.wire import v2_page

        for q in list(sim.state.queued.values()):
            place(sim, q, pod_from_create)
        with sim.lock:
            sim.save()
            return v2_page(req, "queuedPods", [queued_json(q) for q in sim.state.queued.values()])

    def cancel(req: Request) -> Response:
        with sim.lock:
            q = one(req.params["id"])
            if q.status == "QUEUED":
                q.status = "CANCELLED"
            sim.save()
        return Response(204)

    api.route("POST", "/v2/queued-pods", create)
    api.route("GET", "/v2/queued-pods", listed)
    api.route("GET", "/v2/queued-pods/{id}", get)
    api.route("DELETE", "/v2/queued-pods/{id}", cancel)
