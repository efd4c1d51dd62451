"""RunPod GraphQL (POST /graphql) for what REST v2 lacks: spot pods and bids. Not a GraphQL engine:
the operation is the first field of the selection set, its input comes from `variables.input` (or
simple inline `key: "value"` arguments), and the answer carries every field a client may select.
Errors come as HTTP 200 with an `errors` array, like the real service."""

from __future__ import annotations

import re
from typing import Any

from gpujob.sim import rp_engine
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Request, Response
from gpujob.sim.state import RpPod, new_id

CAPACITY = "There are no longer any instances available with the requested specifications. Please refresh and try again."
NO_FREE_GPUS = "There are not enough free GPUs on the host machine to start this pod."
FIRST_FIELD = re.compile(r"^\s*(?:(?:query|mutation)\b[^{]*)?\{\s*(\w+)", re.S)
INLINE_ARG = re.compile(r'(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+(?:\.\d+)?)|(true|false))')


def operation(query: str) -> str | None:
    m = FIRST_FIELD.match(query or "")
    return m.group(1) if m else None


def inline_input(query: str) -> dict[str, Any]:
    m = re.search(r"\(\s*input\s*:\s*\{(.*?)\}\s*\)", query, re.S)
    out: dict[str, Any] = {}
    for key, s, num, boolean in INLINE_ARG.findall(m.group(1) if m else ""):
        out[key] = (
            s
            if s or not (num or boolean)
            else (float(num) if "." in num else int(num))
            if num
            else boolean == "true"
        )
    return out


def gql_pod(sim: Simulator, pod: RpPod) -> dict[str, Any]:
    running = pod.status == "RUNNING"
    desired = {"PROVISIONING": "RUNNING", "STARTING": "RUNNING", "RUNNING": "RUNNING", "ERROR": "EXITED"}.get(
        pod.status, pod.status
    )
    rate = sim.rp_prices.gpu_hour(pod.gpu_id or "", cloud=pod.cloud, spot=pod.interruptible) * pod.gpu_count
    runtime = None
    if running:
        up = int(sim.now() - (pod.started_at or sim.now()))
        ports = (
            [
                {
                    "ip": "127.0.0.1",
                    "isIpPublic": True,
                    "privatePort": 22,
                    "publicPort": pod.ssh_port,
                    "type": "tcp",
                }
            ]
            if pod.ssh_port
            else []
        )
        runtime = {
            "uptimeInSeconds": up,
            "ports": ports,
            "gpus": [
                {"id": f"gpu{i}", "gpuUtilPercent": 0, "memoryUtilPercent": 0} for i in range(pod.gpu_count)
            ],
            "container": {"cpuPercent": 0, "memoryPercent": 0},
        }
    return {
        "id": pod.id,
        "name": pod.name,
        "desiredStatus": desired,
        "imageName": pod.image,
        "env": [f"{k}={v}" for k, v in pod.env.items()],
        "machineId": f"m{pod.id[:10]}{pod.host}",
        "costPerHr": rate if desired == "RUNNING" else 0.0,
        "adjustedCostPerHr": rate if desired == "RUNNING" else 0.0,
        "gpuCount": pod.gpu_count,
        "podType": "INTERRUPTABLE" if pod.interruptible else "RESERVED",
        "bidPerGpu": pod.bid_per_gpu,
        "containerDiskInGb": pod.disk,
        "volumeInGb": pod.volume_gb,
        "volumeMountPath": pod.mount_path,
        "networkVolumeId": pod.network_volume_id,
        "ports": ",".join(pod.ports),
        "dataCenterId": pod.data_center,
        "lastStatusChange": f"{pod.status} (simulated)",
        "uptimeSeconds": runtime["uptimeInSeconds"] if runtime else 0,
        "machine": {
            "gpuDisplayName": pod.gpu_id,
            "location": pod.data_center,
            "podHostId": f"{pod.id}-{pod.host}",
            "gpuTypeId": pod.gpu_id,
        },
        "runtime": runtime,
    }


def handle(sim: Simulator, req: Request) -> Response:
    body = req.json()
    query = str(body.get("query") or "")
    variables = body.get("variables") or {}
    op = operation(query)
    raw_input = variables.get("input") if isinstance(variables, dict) else None
    data_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else inline_input(query)
    try:
        result = _run(sim, op, data_input, query)
    except SimError as exc:
        message = CAPACITY if exc.kind == "capacity" else exc.message
        code = "INTERNAL_SERVER_ERROR" if exc.status >= 500 else "RUNPOD"
        return Response(
            200,
            {
                "errors": [{"message": message, "path": [op], "extensions": {"code": code}}],
                "data": {op: None},
            },
        )
    return Response(200, {"data": {op: result}})


def _run(sim: Simulator, op: str | None, inp: dict[str, Any], query: str = "") -> Any:
    if op in ("podRentInterruptable", "podFindAndDeployOnDemand"):
        return _create(sim, inp, spot=op == "podRentInterruptable")
    if op in ("podResume", "podBidResume"):
        pod_id = str(inp.get("podId"))
        with sim.lock:
            old = rp_engine.get_pod(sim, pod_id)
            if op == "podBidResume":
                _check_bid(sim, old.gpu_id, inp.get("bidPerGpu"))
            # RP1 over GraphQL: a resume that asks for GPUs the host no longer has is refused
            # (REST v2 start instead comes back with zero GPUs).
            if sim.faults.take("zero_gpu", platform="runpod", pod_id=pod_id, gpu=old.gpu_id):
                raise SimError(400, NO_FREE_GPUS)
        pod = rp_engine.start(sim, pod_id, gpu_count=inp.get("gpuCount"), bid=inp.get("bidPerGpu"))
        with sim.lock:
            return gql_pod(sim, pod)
    if op == "podStop":
        pod = rp_engine.stop(sim, str(inp.get("podId")))
        with sim.lock:
            return gql_pod(sim, pod)
    if op == "podTerminate":
        rp_engine.terminate(sim, str(inp.get("podId")))
        return None
    if op == "pod":
        with sim.lock:
            return gql_pod(sim, rp_engine.get_pod(sim, str(inp.get("podId"))))
    if op == "myself":
        with sim.lock:
            spend = sim.bill()["totals"]["runpod"]
            pods = [gql_pod(sim, p) for p in sim.state.pods.values() if p.ended_at is None]
            vols = [
                {"id": v.id, "name": v.name, "size": v.size, "dataCenterId": v.data_center}
                for v in sim.state.volumes.values()
                if v.ended_at is None
            ]
            rate = sum(p["costPerHr"] for p in pods)
            balance = 0.0 if sim.state.balance_exhausted else max(0.0, sim.options.balance - spend)
            return {
                "id": "user_sim",
                "email": "sim@localhost",
                "clientBalance": balance,
                "currentSpendPerHr": rate,
                "spendLimit": 80,
                "pubKey": "\n".join(sim.state.ssh_keys),
                "pods": pods,
                "networkVolumes": vols,
            }
    if op == "gpuTypes":
        lowest = _lowest_input(query)
        return [
            _gpu_type(sim, g, lowest)
            for g in sim.rp_prices.gpus()
            if not inp.get("id") or inp.get("id") == g.id
        ]
    raise SimError(400, f"Cannot query field '{op}' (not simulated)")


def _lowest_input(query: str) -> dict[str, Any]:
    """The arguments of `lowestPrice(input: {gpuCount: 2, secureCloud: true})`, inline as RunPod's clients
    write them (runpod-python queries/gpus.py)."""
    m = re.search(r"lowestPrice\s*\(\s*input\s*:\s*\{(.*?)\}\s*\)", query, re.S)
    return inline_input(f"(input: {{{m.group(1)}}})") if m else {}


def spot_floor(sim: Simulator, gpu_id: str) -> float:
    """The minimum bid per GPU now: the profile's spot price, times a spot_floor fault's factor."""
    floor = sim.rp_prices.gpu_hour(gpu_id, spot=True)
    moved = sim.faults.peek("spot_floor", platform="runpod", gpu=gpu_id)
    return round(floor * (moved.factor if moved is not None else 1.0), 6)


def _gpu_type(sim: Simulator, g: Any, lowest: dict[str, Any]) -> dict[str, Any]:
    secure = lowest.get("secureCloud", True) is not False
    count = int(lowest.get("gpuCount") or 1)
    cloud = "SECURE" if secure else "COMMUNITY"
    offered = secure or g.community is not None
    out_of_stock = sim.faults.peek("capacity", platform="runpod", gpu=g.id, cloud=cloud) or count > 8
    stock = "None" if out_of_stock or not offered else "High"
    return {
        "id": g.id, "displayName": g.alias, "manufacturer": "Nvidia", "memoryInGb": g.vram, "maxGpuCount": 8,
        "secureCloud": True, "communityCloud": g.community is not None, "securePrice": g.secure,
        "communityPrice": g.community, "secureSpotPrice": g.spot, "communitySpotPrice": g.spot,
        "lowestPrice": {
            "minimumBidPrice": spot_floor(sim, g.id) if offered else None,
            "uninterruptablePrice": (g.secure if secure else g.community),
            "stockStatus": stock,
        },
    }  # fmt: skip


def _check_bid(sim: Simulator, gpu_id: Any, bid: Any) -> None:
    floor = spot_floor(sim, str(gpu_id or ""))
    if bid is None:
        raise SimError(400, "bidPerGpu is required")
    raced = sim.faults.take("bid_too_low", platform="runpod", gpu=str(gpu_id or "")) is not None
    if raced or float(bid) + 1e-9 < floor:
        # The wording is the simulator's own: no public source quotes RunPod's (tests/fixtures/README.md).
        shown = round(floor * 1.05, 4) if raced else floor  # a race: the floor moved past the bid just now
        raise SimError(400, f"Your bid price ({bid}) is below the minimum bid price ({shown}).")


def _create(sim: Simulator, inp: dict[str, Any], *, spot: bool) -> dict[str, Any]:
    gpu_id = inp.get("gpuTypeId") or (inp.get("gpuTypeIdList") or [None])[0]
    if spot:
        _check_bid(sim, gpu_id, inp.get("bidPerGpu"))
    env = {e["key"]: e["value"] for e in inp.get("env") or [] if isinstance(e, dict) and "key" in e}
    keys = [line for line in env.get("PUBLIC_KEY", "").splitlines() if line.strip()]
    if inp.get("startSsh"):
        keys += [k for k in sim.state.ssh_keys if k not in keys]
    path = inp.get("volumeMountPath") or "/workspace"
    if inp.get("networkVolumeId"):
        mounts: dict[str, Any] = {"network": [{"volumeId": inp["networkVolumeId"], "path": path}]}
    elif inp.get("volumeInGb"):
        mounts = {"persistent": {"size": int(inp["volumeInGb"]), "path": path}}
    else:
        mounts = {}
    ports = [p.strip() for p in str(inp.get("ports") or "22/tcp").split(",") if p.strip()]
    dc = inp.get("dataCenterId")
    if dc and dc not in sim.rp_prices.regions():
        raise SimError(400, f"Unknown data center {dc}")
    pod = RpPod(
        id=new_id(14),
        name=str(inp.get("name") or "pod"),
        interruptible=spot,
        bid_per_gpu=inp.get("bidPerGpu"),
        image=str(inp.get("imageName") or ""),
        disk=int(inp.get("containerDiskInGb") or 50),
        ports=ports,
        env=env,
        mounts=mounts,
        gpu_id=gpu_id,
        allowed_cuda=[str(v) for v in inp.get("allowedCudaVersions") or []],
        gpu_count=int(inp.get("gpuCount") or 1),
        requested_gpu_count=int(inp.get("gpuCount") or 1),
        cloud="COMMUNITY" if inp.get("cloudType") == "COMMUNITY" else "SECURE",
        data_center=dc or sim.rp_prices.regions()[0],
        authorized_keys=keys,
    )
    pod, fail_after = rp_engine.create_pod(sim, pod, source="graphql")
    if fail_after:
        raise SimError(500, "Something went wrong. Please try again later or contact support.")
    with sim.lock:
        return gql_pod(sim, pod)
