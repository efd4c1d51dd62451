"""A RunPod pod on the wire: the v2 Pod object the simulator answers with, and the pod a v2 create body
asks for (shared by the pod routes, gpujob.sim.runpod_rest, and the cluster routes, gpujob.sim.runpod_clusters)."""

from __future__ import annotations

from typing import Any

from gpujob.sim import rp_engine
from gpujob.sim.account_objects import template_json
from gpujob.sim.clock import iso
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.state import RpPod, new_id


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
