"""RunPod REST v2 (/v2/...): the paths, bodies, status codes and problem+json errors of the v2 spec."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from gpujob.sim import rp_engine, runpod_graphql
from gpujob.sim.account_objects import template_json
from gpujob.sim.clock import iso
from gpujob.sim.control_api import add_control_routes
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Api, RateWindow, Request, Response
from gpujob.sim.runpod_validate import (
    check_create,
    check_patch,
    check_ssh_keys,
    check_volume_create,
    check_volume_patch,
    rule_problems,
)
from gpujob.sim.state import RpPod, RpVolume, new_id
from gpujob.sim.wire import v2_page


def pod_json(sim: Simulator, pod: RpPod) -> dict[str, Any]:
    running = pod.status == "RUNNING"
    published = running and bool(pod.ssh_port) and "22/tcp" in pod.ports
    direct = None
    if published and pod.direct_ssh:
        direct = {
            "host": "127.0.0.1",
            "port": pod.ssh_port,
            "username": sim.ssh_user,
            "command": f"ssh {sim.ssh_user}@127.0.0.1 -p {pod.ssh_port}",
        }
    rate = sim.rp_prices.gpu_hour(pod.gpu_id or "", cloud=pod.cloud, spot=pod.interruptible) * pod.gpu_count
    runtime = None
    if running:
        now = sim.now()
        ports = []
        if published:  # a community host without a public address publishes nothing: public/ip null
            public = pod.public_22
            ports = [
                {
                    "private": 22,
                    "public": pod.ssh_port if public else None,
                    "type": "tcp",
                    "ip": "127.0.0.1" if public else None,
                }
            ]
        runtime = {
            "uptime": int(now - (pod.started_at or now)),
            "gpus": [{"util": 0, "memoryUtil": 0} for _ in range(pod.gpu_count)],
            "cpu": {"util": 0},
            "memory": {"util": 0},
            "ports": ports,
        }
    return {
        "id": pod.id,
        "name": pod.name,
        "status": pod.status,
        "actions": rp_engine.ACTIONS[pod.status],
        "image": pod.image,
        "args": pod.args,
        "disk": pod.disk,
        "ports": pod.ports,
        "env": pod.env,
        "registry": pod.registry,
        "mounts": pod.mounts,
        "gpu": {"id": pod.gpu_id, "count": pod.gpu_count},
        "cloud": pod.cloud,
        "dataCenterId": pod.data_center,
        "cudaVersion": sim.options.host_cuda,
        "ssh": {"proxy": None, "direct": direct},
        "template": pod.template,
        "cost": round(rate, 6) if pod.status in ("PROVISIONING", "STARTING", "RUNNING") else 0.0,
        "locked": pod.locked,
        "globalNetworking": {"enabled": False},
        "runtime": runtime,
        "createdAt": iso(pod.created_at),
        "startedAt": iso(pod.started_at),
        **({"cluster": _member(sim, pod)} if pod.cluster else {}),
    }


def _member(sim: Simulator, pod: RpPod) -> dict[str, Any]:
    """The pod's cluster block; a partitioned member reports an address that answers nothing."""
    from gpujob.sim.partition import reachable_ip

    block = dict(pod.cluster or {})
    if block.get("ip"):
        block["ip"] = reachable_ip(sim, pod.id, str(block["ip"]))
    return block


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


def pod_from_create(sim: Simulator, body: dict[str, Any]) -> RpPod:
    gpu = body.get("gpu") or {}
    env = dict(body.get("env") or {})
    # templateId is a one-time expansion: the template's container config fills what the body leaves
    # out. Public / RunPod templates are not simulated: their id is only recorded.
    tpl = sim.state.templates.get(body.get("templateId") or "")
    base: dict[str, Any] = template_json(tpl) if tpl is not None else {}
    if tpl is not None:
        env = {**tpl.env, **env}
    keys = [line for line in env.get("PUBLIC_KEY", "").splitlines() if line.strip()]
    if body.get("startSsh", base.get("startSsh")):
        keys += [k for k in sim.state.ssh_keys if k not in keys]
    dcs = body.get("dataCenterIds") or []
    unknown = [d for d in dcs if d not in sim.rp_prices.regions()]
    if unknown:
        raise SimError(400, f"unknown data center id(s): {', '.join(unknown)}", "bad_request")
    return RpPod(
        id=new_id(14),
        name=body["name"],
        image=body.get("image") or base.get("image") or "",
        args=body.get("args") or base.get("args") or "",
        disk=int(body.get("disk") or base.get("disk") or 50),
        ports=list(body.get("ports") or base.get("ports") or ["8888/http", "22/tcp"]),
        env=env,
        registry=body.get("registry", base.get("registry")),
        template=body.get("templateId"),
        mounts=body.get("mounts") or base.get("mounts") or {},
        gpu_id=gpu.get("id"),
        min_cuda=gpu.get("minCudaVersion"),
        allowed_cuda=list(gpu.get("allowedCudaVersions") or []),
        gpu_count=int(gpu.get("count") or 1),
        requested_gpu_count=int(gpu.get("count") or 1),
        cloud=body.get("cloud") or "SECURE",
        data_center=dcs[0] if dcs else sim.rp_prices.regions()[0],
        asked_data_centers=list(dcs),
        authorized_keys=keys,
    )
