"""RunPod wire objects -> LiveResource."""

from __future__ import annotations

from gpujob.live import LiveResource, SSHEndpoint, Status
from gpujob.naming import OWNER_ENV, PROJECT_ENV
from gpujob.providers.runpod import wire

SPOT_TAG = "GPUJOB_SPOT"  # env marker: v2 pod objects do not say whether a pod is interruptible


def is_spot(pod: wire.Pod) -> bool:
    return str(pod.env.get(SPOT_TAG, "")) == "1"


_STATUS: dict[str, Status] = {
    "PROVISIONING": "pending",
    "STARTING": "pending",
    "CREATED": "pending",
    "RUNNING": "running",
    "EXITED": "stopped",
    "ERROR": "stopped",  # v2 allows start and terminate from ERROR, like a stopped pod
    "TERMINATED": "terminating",
}


def ssh_of(pod: wire.Pod) -> wire.SshEndpoint | None:
    """Where to SSH: ssh.direct, else the runtime's published mapping of private port 22 (community
    hosts may never fill ssh.direct; runtime.ports still says ip + public port). None when port 22 is
    not published on a public address: the proxy carries no scp/sftp/rsync (v2 spec PodSsh)."""
    if pod.ssh and pod.ssh.direct:
        return pod.ssh.direct
    for port in pod.runtime.ports if pod.runtime else []:
        if port.private == 22 and port.public and port.ip and (port.type or "tcp").lower() == "tcp":
            return wire.SshEndpoint(host=port.ip, port=port.public, username="root")
    return None


def pod_to_live(pod: wire.Pod) -> LiveResource:
    status = _STATUS.get(pod.status.upper(), "unknown")
    mounts = pod.mounts or wire.Mounts()
    network = mounts.network[0] if mounts.network else None
    direct = ssh_of(pod)
    gpu_count = pod.gpu.count if pod.gpu else 0
    attributes: dict[str, str | int | float | bool | None] = {}
    if pod.cpu is None and gpu_count == 0 and status == "running":
        attributes["zero_gpu"] = True  # RP1: restarted on a host whose GPU was rented away
    if pod.status.upper() == "ERROR":
        attributes["error"] = True
    if pod.locked:
        attributes["locked"] = True
    for key, attr in ((PROJECT_ENV, "project"), (OWNER_ENV, "owner")):
        value = pod.env.get(key)
        if isinstance(value, str) and value:
            attributes[attr] = value  # gpujob.naming: the pod's ownership marker
    if pod.ssh and pod.ssh.proxy:
        attributes["ssh_proxy"] = f"{pod.ssh.proxy.username}@{pod.ssh.proxy.host}"
    if pod.cluster is not None:
        attributes["cluster_id"], attributes["cluster_rank"] = pod.cluster.id, pod.cluster.rank
    cloud = (pod.cloud or "").lower()
    return LiveResource(
        platform="runpod",
        kind="pod",
        id=pod.id,
        name=pod.name,
        status=status,
        raw_status=pod.status,
        gpu_id=pod.gpu.id if pod.gpu else None,
        gpu_count=gpu_count,
        region=pod.data_center_id,
        cloud=cloud if cloud in ("secure", "community") else None,  # type: ignore[arg-type]
        spot=is_spot(pod),
        image=pod.image,
        template=pod.template,
        container_disk_gb=pod.disk,
        volume_gb=mounts.persistent.size if mounts.persistent else None,
        mount_path=(mounts.persistent.path if mounts.persistent else network.path if network else None),
        network_volume_id=network.volume_id if network else None,
        public_ip=direct.host if direct else None,
        ssh=SSHEndpoint(host=direct.host, port=direct.port, user=direct.username) if direct else None,
        cost_per_hour=pod.cost,
        created_at=pod.created_at,
        started_at=pod.started_at,
        attributes=attributes,
    )


def volume_to_live(v: wire.NetworkVolume) -> LiveResource:
    return LiveResource.available(
        "runpod",
        "network_volume",
        v.id,
        v.name,
        raw_status=v.type or "",
        region=v.data_center,
        volume_gb=v.size,
        volume_tier="high-performance" if (v.type or "").upper() == "HIGH_PERFORMANCE" else "standard",
    )


def template_to_live(t: wire.Template) -> LiveResource:
    return LiveResource.available(
        "runpod", "template", t.id, t.name, image=t.image, attributes={"public": t.public}
    )


def registry_to_live(r: wire.Registry) -> LiveResource:
    return LiveResource.available("runpod", "registry_auth", r.id, r.name)


def cluster_to_live(c: wire.Cluster) -> LiveResource:
    """An Instant Cluster: a group, not a meter of its own (its member pods bill, listed as pods)."""
    compute = c.compute
    return LiveResource.available(
        "runpod",
        "cluster",
        c.id,
        c.name,
        raw_status=c.type or "",
        gpu_id=compute.gpu_type_id if compute else None,
        gpu_count=compute.gpu_count_per_pod if compute else 0,
        region=c.data_center_id,
        created_at=c.created_at,
        attributes={"cluster_type": c.type, "pods": compute.pod_count if compute else None},
    )


def endpoint_to_live(e: wire.Endpoint, per_gpu: float | None, source: str) -> LiveResource:
    """A serverless endpoint, with what its always-on workers (workers.min) cost per hour: `per_gpu` is the
    catalog's serverless price of the cheapest GPU type in its pools (None: unknown)."""
    count = e.gpu.count if e.gpu else 1
    pools = ",".join(e.gpu.pools) if e.gpu else ""
    rate = e.workers.min * count * per_gpu if per_gpu is not None else None
    return LiveResource(
        platform="runpod",
        kind="endpoint",
        id=e.id,
        name=e.name,
        status="running" if e.workers.min > 0 else "available",
        raw_status=e.type or "",
        gpu_count=count,
        region=e.data_center_ids[0] if e.data_center_ids else None,
        cost_per_hour=rate if e.workers.min > 0 else 0.0,
        created_at=e.created_at,
        attributes={
            "workers_min": e.workers.min,
            "workers_max": e.workers.max,
            "pools": pools,
            "rate_source": source if rate is not None else "",
        },
    )
