"""A multi-node job on RunPod: one Instant Cluster (`POST /v2/clusters`, type TRAINING), read back with
its member pods (`includeClusterPods`, `GET /v2/clusters/{id}/pods`) as one LiveResource of kind
"cluster" whose `nodes` are the members in rank order (docs/multinode.md).

A cluster is all or nothing: RunPod makes every member or none, and a cluster whose members do not all
come up with SSH is deleted before the error is raised, so no node of a cluster that cannot be had is
left billing. There is no stop: DELETE terminates every member."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from gpujob.errors import ProviderConflict, ProviderError, ProviderNotFound, ProviderUnavailable
from gpujob.live import LiveNode, LiveResource, group_status
from gpujob.providers.base import LaunchRequest
from gpujob.providers.runpod import launch, wire
from gpujob.providers.runpod.client import PLATFORM, RunPodClient
from gpujob.providers.runpod.normalize import pod_to_live
from gpujob.providers.wait import GONE, Timeouts, poll, wait_gone

TYPE = "TRAINING"


def _rank(p: wire.Pod) -> int:
    return p.cluster.rank if p.cluster is not None and p.cluster.rank is not None else 1 << 30


def node_of(pod: wire.Pod) -> LiveNode:
    live = pod_to_live(pod)
    return LiveNode(
        rank=pod.cluster.rank or 0 if pod.cluster is not None else 0,
        machine_id=pod.id,
        name=pod.name,
        status=live.status,
        raw_status=pod.status,
        ssh=live.ssh,
        private_ip=pod.cluster.ip if pod.cluster else None,
        gpu_id=live.gpu_id,
        gpu_count=live.gpu_count,
        cost_per_hour=live.cost_per_hour,
    )


def group_of(c: wire.Cluster, members: Sequence[wire.Pod]) -> LiveResource:
    """The cluster with its live members (TERMINATED ones left out), rank 0 first: its SSH is the group's."""
    pods = sorted((p for p in members if p.status != "TERMINATED"), key=_rank)
    nodes = [node_of(p) for p in pods]
    first = pod_to_live(pods[0]) if pods else None
    compute = c.compute
    running = sum(1 for n in nodes if n.status == "running")
    want = compute.pod_count if compute else len(nodes)
    status = group_status([n.status for n in nodes]) if len(nodes) >= want else "stopped"
    if not nodes:
        status = "terminating"
    attributes: dict[str, str | int | float | bool | None] = {
        "cluster_type": c.type,
        "pods": want,
        "nodes_running": running,
    }
    if first is not None:
        for key in ("project", "owner"):
            if key in first.attributes:
                attributes[key] = first.attributes[key]
    return LiveResource(
        platform="runpod",
        kind="cluster",
        id=c.id,
        name=c.name,
        status=status,
        raw_status=f"{running}/{want} RUNNING",
        gpu_id=compute.gpu_type_id if compute else None,
        gpu_count=compute.gpu_count_per_pod if compute else 0,
        region=c.data_center_id,
        cloud="secure",
        image=first.image if first else None,
        container_disk_gb=first.container_disk_gb if first else None,
        volume_gb=first.volume_gb if first else None,
        mount_path=first.mount_path if first else None,
        network_volume_id=first.network_volume_id if first else None,
        public_ip=first.public_ip if first and status == "running" else None,
        ssh=first.ssh if first and status == "running" else None,
        created_at=c.created_at,
        started_at=first.started_at if first else None,
        attributes=attributes,
        nodes=nodes,
    )


def groups(clusters: Sequence[wire.Cluster], pods: Sequence[wire.Pod]) -> list[LiveResource]:
    by_cluster: dict[str, list[wire.Pod]] = {}
    for p in pods:
        if p.cluster is not None:
            by_cluster.setdefault(p.cluster.id, []).append(p)
    return [group_of(c, by_cluster.get(c.id, [])) for c in clusters]


async def get_group(client: RunPodClient, cluster_id: str) -> LiveResource | None:
    try:
        c, pods = await asyncio.gather(client.get_cluster(cluster_id), client.cluster_pods(cluster_id))
    except ProviderNotFound:
        return None
    return group_of(c, pods)


def create_body(r: LaunchRequest) -> dict[str, Any]:
    """The v2 CreateClusterRequest: the pod's container config (no cloud, no registry, no template: the
    schema has none of them) and the homogeneous compute shape."""
    pod = launch.on_demand_body(r)
    body: dict[str, Any] = {
        "name": r.name,
        "type": TYPE,
        "compute": {"gpuTypeId": r.gpu_id, "gpuCountPerPod": r.gpu_count, "podCount": r.nodes},
    }
    for key in ("image", "env", "ports", "disk", "mounts", "dataCenterIds", "startSsh"):
        if key in pod:
            body[key] = pod[key]
    return body


async def wait_whole(client: RunPodClient, clock: Any, t: Timeouts, cluster_id: str) -> LiveResource:
    """Until every member runs with SSH; a member in ERROR or a timeout raises (the caller deletes)."""

    async def read() -> LiveResource | None:
        return await get_group(client, cluster_id)

    def check(g: LiveResource | None, elapsed: float) -> None:
        if g is None:
            raise ProviderNotFound(f"cluster {cluster_id} was deleted while starting", platform=PLATFORM)
        broken = [n for n in g.nodes if n.raw_status == "ERROR"]
        if broken:
            raise ProviderError(
                f"node {broken[0].rank} ({broken[0].machine_id}) of cluster {cluster_id} went to ERROR",
                platform=PLATFORM,
                hint="the cluster is deleted whole; check the image and re-run apply",
            )

    g, ok = await poll(
        clock,
        read,
        lambda g: g is not None and g.status == "running" and all(n.ssh for n in g.nodes),
        timeout=t.ready,
        interval=t.interval,
        first=t.first_interval,
        check=check,
    )
    if not ok or g is None:
        raise ProviderUnavailable(
            f"cluster {cluster_id} is not whole with SSH on every node after {t.ready:.0f}s",
            platform=PLATFORM,
            hint="it was deleted whole, so nothing of it bills; re-run apply",
        )
    return g


async def create(provider: Any, r: LaunchRequest) -> LiveResource:
    """One cluster of r.nodes pods, all or nothing."""
    client: RunPodClient = provider.client

    async def make() -> str:
        return (await client.create_cluster(create_body(r))).id

    async def named(name: str) -> list[str]:
        return [c.id for c in await client.list_clusters() if c.name == name]

    cluster_id = await provider._create_once(r.name, make, named)
    try:
        return await wait_whole(client, provider.clock, provider.t, cluster_id)
    except BaseException:
        with contextlib.suppress(Exception):  # all or nothing: no node of it left billing
            await delete(provider, cluster_id)
        raise


async def delete(provider: Any, cluster_id: str) -> None:
    client: RunPodClient = provider.client
    try:
        await client.delete_cluster(cluster_id)
    except ProviderNotFound:
        return

    async def status() -> str:
        g = await get_group(client, cluster_id)
        return GONE if g is None or not g.nodes else g.status

    await wait_gone(
        provider.clock,
        status,
        provider.t,
        platform=PLATFORM,
        what=f"cluster {cluster_id}",
        gone=("terminating",),
    )


async def start(provider: Any, resource: LiveResource) -> LiveResource:
    """Start the members that are down (a preempted or lost node), then wait until the cluster is whole."""
    client: RunPodClient = provider.client
    for n in resource.nodes:
        if n.status == "stopped":
            with contextlib.suppress(ProviderConflict):
                await client.pod_action(n.machine_id, "start")
    return await wait_whole(client, provider.clock, provider.t, resource.id)


def no_stop(resource: LiveResource) -> ProviderError:
    return ProviderConflict(
        f"cluster {resource.name} cannot be stopped: an Instant Cluster is only ever deleted whole",
        platform=PLATFORM,
        hint="state: parked (checkpoints on a network volume) or absent; pull checkpoints first",
    )
