"""RunPod REST v2 (/v2/...): the paths, bodies, status codes and problem+json errors of the v2 spec."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from gpujob.sim import rp_engine, runpod_graphql
from gpujob.sim.control_api import add_control_routes
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Api, RateWindow, Request, Response
from gpujob.sim.runpod_pods import pod_from_create as pod_from_create
from gpujob.sim.runpod_pods import pod_json as pod_json
from gpujob.sim.runpod_validate import (
    check_create,
    check_patch,
    check_ssh_keys,
    check_volume_create,
    check_volume_patch,
    rule_problems,
)
from gpujob.sim.state import RpVolume
from gpujob.sim.wire import v2_page


def volume_json(vol: RpVolume) -> dict[str, Any]:
    return {"id": vol.id, "name": vol.name, "size": vol.size, "dataCenter": vol.data_center, "type": vol.type}


class RunPodRest(Api):
    platform = "runpod"

    def __init__(self, sim: Simulator) -> None:
        super().__init__(sim)
        add_control_routes(self)
        self.window = RateWindow(sim.options.rate_limit_per_minute)
        self._last: dict[str, tuple[int, int]] = {}
        r = self.route
        r("GET", "/v2/pods", self.list_pods)
        r("POST", "/v2/pods", self.create_pod)
        r("GET", "/v2/pods/{id}", self.get_pod)
        r("PATCH", "/v2/pods/{id}", self.patch_pod)
        r("DELETE", "/v2/pods/{id}", self.delete_pod)
        r("POST", "/v2/pods/{id}/action", self.action)
        r("GET", "/v2/network-volumes", self.list_volumes)
        r("POST", "/v2/network-volumes", self.create_volume)
        r("GET", "/v2/network-volumes/{id}", self.get_volume)
        r("PATCH", "/v2/network-volumes/{id}", self.patch_volume)
        r("DELETE", "/v2/network-volumes/{id}", self.delete_volume)
        r("GET", "/v2/account/ssh-keys", self.get_keys)
        r("PUT", "/v2/account/ssh-keys", self.put_keys)
        r("POST", "/graphql", lambda q: runpod_graphql.handle(sim, q))
        from gpujob.sim import runpod_clusters
        from gpujob.sim.account_objects import add_runpod_routes
        from gpujob.sim.runpod_billing import add_billing_routes
        from gpujob.sim.runpod_catalog import add_catalog_routes

        add_catalog_routes(self)
        add_billing_routes(self)
        add_runpod_routes(self)
        runpod_clusters.add_routes(self)
        from gpujob.sim import runpod_queue

        runpod_queue.add_routes(self, pod_from_create)

    # --- plumbing
    def error(
        self, status: int, message: str, kind: str = "error", headers: dict[str, str] | None = None
    ) -> Response:
        title = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        return Response(
            status,
            {"title": title, "status": status, "detail": message},
            headers or {},
            "application/problem+json",
        )

    def authorized(self, req: Request) -> bool:
        key = self.sim.options.runpod_api_key
        if req.path == "/graphql" and req.arg("api_key") == key:
            return True
        return req.headers.get("authorization", "") == f"Bearer {key}"

    def over_quota(self, req: Request) -> float | None:
        allowed, state = self.window.hit()
        self._last = state
        if allowed:
            return None
        return float(
            min(t for r, t in state.values() if r <= 0) if any(r <= 0 for r, _ in state.values()) else 1
        )

    def dispatch(self, req: Request) -> Response:
        resp = super().dispatch(req)
        if resp.status >= 0 and resp.status != 401 and self._last:
            resp.headers.update(self.window.headers(self._last))
        return resp

    # --- pods
    def list_pods(self, req: Request) -> Response:
        members = req.arg("includeClusterPods") == "true"  # cluster member pods only when asked for
        with self.sim.lock:
            pods = [
                pod_json(self.sim, p)
                for p in self.sim.state.pods.values()
                if p.ended_at is None and (members or p.cluster is None)
            ]
        return v2_page(req, "pods", pods)

    def get_pod(self, req: Request) -> Response:
        with self.sim.lock:
            return Response(200, pod_json(self.sim, rp_engine.get_pod(self.sim, req.params["id"])))

    def create_pod(self, req: Request) -> Response:
        body = req.json()
        problems = check_create(body)
        if problems:
            return self.invalid(problems)
        rule = rule_problems(body)
        if rule:
            raise SimError(400, rule, "bad_request")
        pod = pod_from_create(self.sim, body)
        pod, fail_after = rp_engine.create_pod(self.sim, pod)
        if fail_after:
            return self.error(500, "internal error while reading back the created pod", "injected")
        with self.sim.lock:
            return Response(201, pod_json(self.sim, pod))

    def patch_pod(self, req: Request) -> Response:
        body = req.json()
        problems = check_patch(body)
        if problems:
            return self.invalid(problems)
        sim = self.sim
        with sim.lock:
            pod = rp_engine.get_pod(sim, req.params["id"])
            if pod.cluster:  # REFERENCE 1.0: a cluster's pods are changed through their cluster
                raise SimError(409, "cluster pods cannot be updated", "conflict")
            mounts = body.get("mounts") or {}
            kind_now = (
                "persistent"
                if pod.mounts.get("persistent")
                else ("network" if pod.mounts.get("network") else None)
            )
            for kind, value in mounts.items():
                if kind != kind_now:
                    raise SimError(400, f"mount kind '{kind}' cannot be added after create", "bad_request")
                if kind == "network" and (not value or value[0]["volumeId"] != pod.network_volume_id):
                    raise SimError(400, "the network volume of a pod is immutable", "bad_request")
                if kind == "persistent" and value["size"] != pod.volume_gb:
                    pod.mounts = {"persistent": {**value}}
                else:
                    pod.mounts = {kind: value}
            reset = any(
                k in body and body[k] != getattr(pod, k) for k in ("image", "args", "disk", "ports", "env")
            )
            for key in ("name", "image", "args", "disk", "ports", "env", "registry", "locked"):
                if key in body:
                    setattr(pod, key, body[key])
            sim.save()
            running = pod.status == "RUNNING"
        if reset and running:  # editing a running pod resets its container (container disk wiped)
            rp_engine.restart(sim, pod.id)
        with sim.lock:
            return Response(200, pod_json(sim, pod))

    def delete_pod(self, req: Request) -> Response:
        rp_engine.terminate(self.sim, req.params["id"])
        return Response(204)

    def action(self, req: Request) -> Response:
        body = req.json()
        action = body.get("action") if isinstance(body, dict) else None
        extra = [k for k in (body or {}) if k != "action"] if isinstance(body, dict) else []
        if action not in ("start", "stop", "restart", "terminate") or extra:
            errs = [f"$: additional properties '{k}' not allowed" for k in extra] or [
                "$.action: value must be one of start, stop, restart, terminate"
            ]
            return self.invalid(errs)
        pid = req.params["id"]
        if action == "start":
            with self.sim.lock:
                if rp_engine.get_pod(self.sim, pid).interruptible:
                    # v2 has no spot: it will not start a spot pod as on-demand (runpodctl #156)
                    raise SimError(400, runpod_graphql.SPOT_AS_ON_DEMAND, "bad_request")
        if action == "terminate":
            rp_engine.terminate(self.sim, pid)
            return Response(204)
        pod = {"start": rp_engine.start, "stop": rp_engine.stop, "restart": rp_engine.restart}[action](
            self.sim, pid
        )
        with self.sim.lock:
            return Response(200, pod_json(self.sim, pod))

    def invalid(self, problems: list[str]) -> Response:
        resp = self.error(422, "Request validation failed.", "invalid")
        resp.body["errors"] = problems
        return resp

    # --- network volumes
    def list_volumes(self, req: Request) -> Response:
        with self.sim.lock:
            vols = [volume_json(v) for v in self.sim.state.volumes.values() if v.ended_at is None]
        return v2_page(req, "networkVolumes", vols)

    def get_volume(self, req: Request) -> Response:
        with self.sim.lock:
            return Response(200, volume_json(rp_engine.get_volume(self.sim, req.params["id"])))

    def create_volume(self, req: Request) -> Response:
        body = req.json()
        problems = check_volume_create(body)
        if problems:
            return self.invalid(problems)
        if body["dataCenter"] not in self.sim.rp_prices.regions():
            raise SimError(400, f"unknown data center '{body['dataCenter']}'", "bad_request")
        vol = rp_engine.create_volume(
            self.sim, body["name"], body["size"], body["dataCenter"], body.get("type") or "STANDARD"
        )
        return Response(201, volume_json(vol))

    def patch_volume(self, req: Request) -> Response:
        body = req.json()
        problems = check_volume_patch(body)
        if problems:
            return self.invalid(problems)
        return Response(200, volume_json(rp_engine.update_volume(self.sim, req.params["id"], body)))

    def delete_volume(self, req: Request) -> Response:
        rp_engine.delete_volume(self.sim, req.params["id"])
        return Response(204)

    # --- account
    def get_keys(self, req: Request) -> Response:
        with self.sim.lock:
            return Response(200, {"keys": list(self.sim.state.ssh_keys)})

    def put_keys(self, req: Request) -> Response:
        body = req.json()
        problems = check_ssh_keys(body)
        if problems:
            return self.invalid(problems)
        with self.sim.lock:
            self.sim.state.ssh_keys = list(body["keys"])
            self.sim.save()
            return Response(200, {"keys": list(self.sim.state.ssh_keys)})
