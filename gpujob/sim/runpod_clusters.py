"""RunPod v2 Instant Clusters (/v2/clusters) and serverless endpoints (/v2/serverless).

A cluster is N member pods made at once and ended at once (DELETE terminates every member; there is
no stop): each member is an ordinary simulated pod (a real sshd, its own volume disk or the shared
network volume, billed as a pod) with a `cluster: {id, rank, ip}` block, left out of `GET /v2/pods`
unless `includeClusterPods=true` (the v2 spec's default) and listed in full by `GET
/v2/clusters/{id}/pods`. Each member's private address is its own loopback address 127.65.<net>.<rank
+ 1> (all of 127/8 reaches `lo`, so every member reaches every other; the private interface is `lo`),
and its environment carries what RunPod sets on cluster pods (PRIMARY_ADDR, PRIMARY_PORT, NODE_ADDR,
NODE_RANK, NUM_NODES, NUM_TRAINERS, WORLD_SIZE). A create is all or nothing: if any member cannot be
placed (the `capacity` fault), the members already made are terminated and nothing is left billing.
An endpoint bills `workers.min` always-on workers around the clock (gpujob.sim.meters), whether
requests come or not."""

from __future__ import annotations

from typing import Any

from gpujob.sim import rp_engine
from gpujob.sim.clock import iso
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Request, Response
from gpujob.sim.runpod_pods import pod_from_create, pod_json
from gpujob.sim.state import RpCluster, RpEndpoint, RpPod, new_id, private_ip
from gpujob.sim.wire import v2_page

PRIMARY_PORT = 29500  # what RunPod's cluster pods carry as PRIMARY_PORT (torch's default rendezvous port)


def members_of(sim: Simulator, cid: str) -> list[RpPod]:
    """The cluster's live member pods in rank order."""
    pods = [p for p in sim.state.pods.values() if (p.cluster or {}).get("id") == cid and p.ended_at is None]
    return sorted(pods, key=lambda p: int((p.cluster or {}).get("rank") or 0))


def cluster_json(sim: Simulator, c: RpCluster) -> dict[str, Any]:
    members = members_of(sim, c.id)
    by_status: dict[str, int] = {}
    for p in members:
        by_status[p.status] = by_status.get(p.status, 0) + 1
    out: dict[str, Any] = {
        "id": c.id,
        "name": c.name,
        "type": c.type,
        "compute": {
            "gpuTypeId": c.gpu_type_id,
            "gpuCountPerPod": c.gpu_count_per_pod,
            "podCount": c.pod_count,
        },
        "dataCenterId": c.data_center,
        "pods": {"total": len(members), "byStatus": by_status},
        "network": {"cidr": f"{private_ip(65, c.net, 0).rpartition('.')[0]}.0/24"},
        "createdAt": iso(c.created_at),
    }
    primary = next((p for p in members if (p.cluster or {}).get("rank") == 0), None)
    if primary is not None:
        out["primary"] = {"podId": primary.id, "status": primary.status}
        if primary.status == "RUNNING" and primary.ssh_port:
            out["primary"]["sshEndpoint"] = f"127.0.0.1:{primary.ssh_port}"
    return out


def _members(sim: Simulator, c: RpCluster, body: dict[str, Any]) -> list[RpPod]:
    """The member pods a create asks for, each an ordinary pod create of the shared container config."""
    shared = {k: v for k, v in body.items() if k not in ("compute", "type", "name")}
    ips = [private_ip(65, c.net, rank) for rank in range(c.pod_count)]
    pods = []
    for rank in range(c.pod_count):
        one = {
            **shared,
            "name": f"{c.name}-{rank}",
            "gpu": {"id": c.gpu_type_id, "count": c.gpu_count_per_pod},
            "dataCenterIds": [c.data_center],
        }
        pod = pod_from_create(sim, one)
        pod.cluster = {"id": c.id, "rank": rank, "ip": ips[rank]}
        pod.env = {
            **pod.env,
            "PRIMARY_ADDR": ips[0],
            "PRIMARY_PORT": str(PRIMARY_PORT),
            "NODE_ADDR": ips[rank],
            "NODE_RANK": str(rank),
            "NUM_NODES": str(c.pod_count),
            "NUM_TRAINERS": str(c.gpu_count_per_pod),
            "WORLD_SIZE": str(c.pod_count * c.gpu_count_per_pod),
        }
        pods.append(pod)
    return pods


def endpoint_json(e: RpEndpoint) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "type": "QUEUE",
        "image": e.image,
        "gpu": {"pools": e.pools, "count": e.gpu_count, "allowedCudaVersions": [], "minCudaVersion": None},
        "workers": {"min": e.workers_min, "max": e.workers_max, "idleTimeout": 5},
        "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4},
        "dataCenterIds": e.data_centers,
        "networkVolumes": [],
        "timeout": 600000,
        "flashboot": "OFF",
        "createdAt": iso(e.created_at),
    }


def add_routes(api: Any) -> None:
    sim: Simulator = api.sim

    def cluster(cid: str) -> RpCluster:
        c = sim.state.clusters.get(cid)
        if c is None:
            raise SimError(404, "cluster not found", "not_found")
        return c

    def endpoint(eid: str) -> RpEndpoint:
        e = sim.state.endpoints.get(eid)
        if e is None or e.ended_at is not None:
            raise SimError(404, "endpoint not found", "not_found")
        return e

    def list_clusters(req: Request) -> Response:
        with sim.lock:
            return v2_page(req, "clusters", [cluster_json(sim, c) for c in sim.state.clusters.values()])

    def create_cluster(req: Request) -> Response:
        body = req.json()
        compute = body.get("compute") if isinstance(body, dict) else None
        problems = [
            f"$: missing property '{k}'" for k in ("name", "type", "compute") if k not in (body or {})
        ]
        if isinstance(compute, dict):
            problems += [
                f"$.compute: missing property '{k}'"
                for k in ("gpuTypeId", "gpuCountPerPod", "podCount")
                if k not in compute
            ]
        if problems or not isinstance(compute, dict):
            return api.invalid(problems or ["$.compute: expected object"])
        if sim.rp_prices.gpu(compute["gpuTypeId"]) is None:
            raise SimError(
                400, f"gpu type '{compute['gpuTypeId']}' is not a valid GPU type id", "bad_request"
            )
        count = compute["podCount"]
        if not isinstance(count, int) or not 2 <= count <= 250:
            return api.invalid([f"$.compute.podCount: expected an integer 2 to 250, got {count!r}"])
        dcs = body.get("dataCenterIds") or [sim.rp_prices.regions()[0]]
        with sim.lock:
            if sim.faults.take("capacity", platform="runpod", gpu=compute["gpuTypeId"], region=dcs[0]):
                raise SimError(400, rp_engine.CAPACITY_DETAIL, "capacity")
            sim.state.net_counter += 1
            c = RpCluster(
                id=new_id(14), name=body["name"], type=body["type"], gpu_type_id=compute["gpuTypeId"],
                gpu_count_per_pod=int(compute["gpuCountPerPod"]), pod_count=count,
                data_center=dcs[0], created_at=sim.now(), net=sim.state.net_counter,
            )  # fmt: skip
            pods = _members(sim, c, body)
            sim.state.clusters[c.id] = c
            sim.save()
        made: list[str] = []
        try:
            for pod in pods:  # each boots its own sshd in the background
                rp_engine.create_pod(sim, pod, source="cluster")
                made.append(pod.id)
        except SimError:
            for pod_id in made:  # all or nothing: no member of a cluster that failed is left billing
                rp_engine.terminate(sim, pod_id)
            with sim.lock:
                sim.state.clusters.pop(c.id, None)
                sim.save()
            raise
        with sim.lock:
            return Response(201, cluster_json(sim, c))

    def cluster_pods(req: Request) -> Response:
        with sim.lock:
            c = cluster(req.params["id"])
            return v2_page(req, "pods", [pod_json(sim, p) for p in members_of(sim, c.id)])

    def get_cluster(req: Request) -> Response:
        with sim.lock:
            return Response(200, cluster_json(sim, cluster(req.params["id"])))

    def delete_cluster(req: Request) -> Response:
        with sim.lock:
            c = cluster(req.params["id"])
            members = [p.id for p in members_of(sim, c.id)]
        for pod_id in members:
            rp_engine.terminate(sim, pod_id)
        with sim.lock:
            del sim.state.clusters[c.id]
            sim.save()
        return Response(204)

    def list_endpoints(req: Request) -> Response:
        with sim.lock:
            rows = [endpoint_json(e) for e in sim.state.endpoints.values() if e.ended_at is None]
        return v2_page(req, "endpoints", rows)

    def create_endpoint(req: Request) -> Response:
        body = req.json()
        problems = [
            f"$: missing property '{k}'" for k in ("name", "type", "scaling") if k not in (body or {})
        ]
        if not (body or {}).get("image") and not (body or {}).get("templateId"):
            problems.append("$: missing property 'image'")
        if problems:
            return api.invalid(problems)
        gpu = body.get("gpu") or {}
        workers = body.get("workers") or {}
        with sim.lock:
            e = RpEndpoint(
                id=new_id(8), name=body["name"], image=str(body.get("image") or ""),
                pools=list(gpu.get("pools") or ["ADA_24"]), gpu_count=int(gpu.get("count") or 1),
                workers_min=int(workers.get("min") or 0), workers_max=int(workers.get("max") or 3),
                data_centers=list(body.get("dataCenterIds") or []),
            )  # fmt: skip
            e.created_at = e.metered_to = sim.now()
            sim.state.endpoints[e.id] = e
            sim.save()
            return Response(201, endpoint_json(e))

    def get_endpoint(req: Request) -> Response:
        with sim.lock:
            return Response(200, endpoint_json(endpoint(req.params["id"])))

    def delete_endpoint(req: Request) -> Response:
        with sim.lock:
            e = endpoint(req.params["id"])
            sim.accrue(e)
            e.ended_at = sim.now()
            sim.save()
        return Response(204)

    r = api.route
    r("GET", "/v2/clusters", list_clusters)
    r("POST", "/v2/clusters", create_cluster)
    r("GET", "/v2/clusters/{id}", get_cluster)
    r("GET", "/v2/clusters/{id}/pods", cluster_pods)
    r("DELETE", "/v2/clusters/{id}", delete_cluster)
    r("GET", "/v2/serverless", list_endpoints)
    r("POST", "/v2/serverless", create_endpoint)
    r("GET", "/v2/serverless/{id}", get_endpoint)
    r("DELETE", "/v2/serverless/{id}", delete_endpoint)
