"""RunPod behind the Provider protocol: v2 pods and network volumes normalised into LiveResource, actions
that return only once the observed state matches, and the ambiguous-create protocol."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from gpujob.clock import Clock
from gpujob.errors import (
    ProviderConflict,
    ProviderError,
    ProviderNotFound,
)
from gpujob.live import Account, LiveResource, Metering, PriceQuote, ResourceRef, SSHEndpoint
from gpujob.model import Platform
from gpujob.providers.adopt import create_once
from gpujob.providers.base import LaunchRequest, NoEffectError, VolumeRequest
from gpujob.providers.runpod import clusters, launch, money, queue, ready, spot, wire
from gpujob.providers.runpod.client import PLATFORM, GraphQLRetired, RunPodClient
from gpujob.providers.runpod.normalize import (
    cluster_to_live,
    is_spot,
    pod_to_live,
    registry_to_live,
    ssh_of,
    template_to_live,
    volume_to_live,
)
from gpujob.providers.wait import GONE, Timeouts, poll, wait_gone

T = TypeVar("T")


class RunPodProvider:
    platform: Platform = PLATFORM

    def __init__(self, client: RunPodClient, *, clock: Clock, timeouts: Timeouts | None = None) -> None:
        self.client = client
        self.clock = clock
        self.t = timeouts or Timeouts()

    # ---- read
    async def list_resources(self, *, include_cluster: bool = False) -> list[LiveResource]:
        """Pods (cluster members too: includeClusterPods=true), volumes, templates, registries, and the
        clusters those members belong to, each one LiveResource with its members as `nodes`
        (gpujob.providers.runpod.clusters); /v2/clusters is read only when a member pod is listed."""
        pods, volumes, templates, registries = await asyncio.gather(
            self.client.list_pods(include_cluster=True),
            self.client.list_volumes(),
            self.client.list_templates(),
            self.client.list_registries(),
        )
        members = [p for p in pods if p.cluster is not None and p.status != "TERMINATED"]
        found = clusters.groups(await self.client.list_clusters(), members) if members else []
        return (
            [pod_to_live(p) for p in pods if p.status != "TERMINATED"]
            + [volume_to_live(v) for v in volumes]
            + [template_to_live(t) for t in templates]
            + [registry_to_live(r) for r in registries]
            + found
        )

    async def audit_resources(self) -> list[LiveResource]:
        """Everything that bills, for `gpujob audit`: list_resources() plus what a plan never needs: the
        clusters without a listed member and the serverless endpoints, each priced at workers.min
        always-on workers."""
        listed, every, endpoints, catalog = await asyncio.gather(
            self.list_resources(),
            self.client.list_clusters(),
            self.client.list_endpoints(),
            self.client.catalog_prices(),
        )
        seen = {r.id for r in listed if r.kind == "cluster"}
        return (
            listed
            + [cluster_to_live(c) for c in every if c.id not in seen]
            + money.priced_endpoints(self.client, endpoints, catalog)
        )

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        try:
            if kind == "pod":
                pod = await self.client.get_pod(resource_id)
                return None if pod.status == "TERMINATED" else pod_to_live(pod)
            if kind == "network_volume":
                return volume_to_live(await self.client.get_volume(resource_id))
            if kind == "cluster":
                return await clusters.get_group(self.client, resource_id)
        except ProviderNotFound:
            return None
        raise ProviderError(f"RunPod has no resource kind '{kind}'", platform=PLATFORM)

    async def quotes(self, counts: Iterable[int] = (1,)) -> list[PriceQuote]:
        return await money.quotes(self.client, self.clock.now(), counts)

    # ---- money
    def platform_now(self) -> datetime:
        return self.client.rest.platform_now()

    async def metering(self, refs: Sequence[ResourceRef]) -> Metering:
        return await money.metering(self.client, refs)

    async def account(self) -> Account | None:
        return await money.account(self.client)

    # ---- pods
    def spot_unavailable(self) -> str | None:
        """Why spot pods cannot be created or resumed now, once a GraphQL call found out (else None)."""
        return self.client.spot_gone

    async def spot_offer(self) -> bool:
        """Whether RunPod still offers spot pods (GraphQL may answer and yet offer none); sets
        spot_unavailable() when it does not."""
        return await self.client.spot_offer()

    async def create_machine(self, request: LaunchRequest) -> LiveResource:
        if request.nodes > 1:
            return await clusters.create(self, request)

        async def create() -> str:
            if request.spot is True:
                return await self._rent_spot(request)
            if request.spot == "prefer" and self.client.spot_gone is None:
                try:
                    return await self._rent_spot(request)
                except GraphQLRetired:
                    pass  # spot went away just now: `prefer` means on-demand (nothing was created)
            if request.spot == "prefer":
                spot.check_on_demand_price(request)
            return await self._create_on_demand(request)

        pod_id = await self._create_once(request.name, create, self._pods_named)
        return await self._wait_ready(pod_id)

    async def create_queued(
        self, request: LaunchRequest, wait_s: float, note: Callable[[float, float], None]
    ) -> LiveResource:
        """Deploy When Available: queue an on-demand create at RunPod until capacity frees (billing nothing
        until placed), up to `wait_s`; `note(waited, wait_s)` at each read (gpujob.providers.runpod.queue)."""
        if request.nodes > 1:  # RunPod queues one pod, never a cluster (validate refuses the pair)
            return await clusters.create(self, request)
        if request.spot == "prefer":
            spot.check_on_demand_price(request)
        body = launch.on_demand_body(request)
        pod_id = await queue.wait_in_queue(
            self.client, self.clock, body, wait_s=wait_s, platform_now=self.platform_now, note=note
        )
        return await self._wait_ready(pod_id)

    async def start(self, resource: LiveResource) -> LiveResource:
        if resource.kind == "cluster":
            return await clusters.start(self, resource)
        pod = await self.client.get_pod(resource.id)
        if pod.status == "RUNNING" and ssh_of(pod):
            return ready.checked(pod)
        try:
            if resource.spot or is_spot(pod):
                try:
                    await spot.resume(self.client, pod, resource)
                except GraphQLRetired as exc:
                    raise GraphQLRetired(
                        f"spot pod {pod.id} cannot be resumed: RunPod's spot API is gone "
                        f"({self.client.spot_gone}) and REST v2 will not start a spot pod as on-demand",
                        platform=PLATFORM,
                        call=exc.call,
                        status=exc.status,
                        hint="set machine.spot: prefer (or false) and run `gpujob plan`: it replaces the pod "
                        "with an on-demand one on the same network volume (checkpoints on a volume disk go "
                        "through the gate first)",
                    ) from None
            else:
                await self.client.pod_action(pod.id, "start")
        except ProviderConflict:
            pass  # not valid in this state (already starting?): the observed state decides below
        return await self._wait_ready(pod.id, from_stopped=True)

    async def stop(self, resource: LiveResource) -> LiveResource:
        if resource.kind == "cluster":
            raise clusters.no_stop(resource)
        with contextlib.suppress(ProviderConflict):
            await self.client.pod_action(resource.id, "stop")

        def stuck(pod: wire.Pod, elapsed: float) -> None:
            if pod.status == "RUNNING" and elapsed >= self.t.stuck:
                raise NoEffectError(
                    f"stop was accepted but pod {pod.id} is still RUNNING after {elapsed:.0f}s",
                    platform=PLATFORM,
                    call="POST /v2/pods/{id}/action",
                    hint="it is still billing; retry `gpujob apply` or stop it in the RunPod console",
                )

        pod, ok = await poll(
            self.clock,
            lambda: self.client.get_pod(resource.id),
            lambda p: p.status in ("EXITED", "TERMINATED"),
            timeout=self.t.stop,
            interval=self.t.interval,
            first=self.t.first_interval,
            check=stuck,
        )
        if not ok:
            raise NoEffectError(f"pod {pod.id} did not stop (status {pod.status})", platform=PLATFORM)
        return pod_to_live(pod)

    async def terminate(self, resource: LiveResource) -> None:
        if resource.kind == "cluster":
            return await clusters.delete(self, resource.id)
        try:
            await self.client.pod_action(resource.id, "terminate")
        except ProviderNotFound:
            return

        async def status() -> str:
            try:
                return (await self.client.get_pod(resource.id)).status
            except ProviderNotFound:
                return GONE

        await wait_gone(
            self.clock, status, self.t, platform=PLATFORM, what=f"pod {resource.id}", gone=("TERMINATED",)
        )

    async def update(self, resource: LiveResource, changes: dict[str, Any]) -> LiveResource:
        """PATCH mutable pod fields (name, image, env, ports, disk, mounts path, locked). May reset the pod."""
        return pod_to_live(await self.client.update_pod(resource.id, changes))

    # ---- network volumes
    async def create_volume(self, request: VolumeRequest) -> LiveResource:
        tier = "HIGH_PERFORMANCE" if request.tier == "high-performance" else "STANDARD"

        async def create() -> str:
            return (await self.client.create_volume(request.name, request.size_gb, request.region, tier)).id

        volume_id = await self._create_once(request.name, create, self._volumes_named)
        return volume_to_live(await self.client.get_volume(volume_id))

    async def grow_volume(self, resource: LiveResource, size_gb: int) -> LiveResource:
        if resource.kind == "pod":
            return await self._grow_pod_volume(resource, size_gb)
        current = await self.client.get_volume(resource.id)
        if size_gb < current.size:
            raise ProviderConflict(
                f"network volume {current.id} is {current.size} GB; it can grow but never shrink (asked {size_gb} GB)",
                platform=PLATFORM,
                hint="keep size_gb at or above the current size",
            )
        if size_gb == current.size:
            return volume_to_live(current)
        return volume_to_live(await self.client.grow_volume(resource.id, size_gb))

    async def _grow_pod_volume(self, resource: LiveResource, size_gb: int) -> LiveResource:
        """A pod's own volume disk: PATCH /v2/pods/{id} with the whole mounts.persistent {size, path} (the
        spec refuses partial mounts with 422). Editing a pod resets it: a running one restarts, so wait
        until it is running with SSH again."""
        pod = await self.client.get_pod(resource.id)
        current = pod.mounts.persistent if pod.mounts else None
        if current is None:
            raise ProviderConflict(
                f"pod {pod.id} has no volume disk (mounts.persistent) to grow; the mount kind is fixed at create",
                platform=PLATFORM,
                hint="replace the pod to change its storage",
            )
        if size_gb <= current.size:
            return pod_to_live(pod)
        mounts = {"persistent": {"size": size_gb, "path": current.path}}
        updated = await self.client.update_pod(pod.id, {"mounts": mounts})
        if pod.status != "RUNNING":
            return pod_to_live(updated)
        return await self._wait_ready(pod.id)

    async def delete_volume(self, resource: LiveResource) -> None:
        try:
            await self.client.delete_volume(resource.id)
        except ProviderNotFound:
            return

    async def release_ip(self, resource: LiveResource) -> None:
        raise ProviderError("RunPod has no claimable public IPs", platform=PLATFORM)

    async def delete_snapshot(self, resource: LiveResource) -> None:
        raise ProviderError("RunPod has no snapshots", platform=PLATFORM)

    def ssh_endpoint(self, resource: LiveResource) -> SSHEndpoint | None:
        return resource.ssh

    # ---- internals
    async def _create_on_demand(self, r: LaunchRequest) -> str:
        return (await self.client.create_pod(launch.on_demand_body(r))).id

    async def _rent_spot(self, r: LaunchRequest) -> str:
        bid = r.bid_per_gpu or await spot.floor(self.client, r.gpu_id, r.cloud, r.gpu_count)
        return (await self.client.rent_spot(spot.rent_input(r, bid, launch.pod_env(r)))).id

    async def _pods_named(self, name: str) -> list[str]:
        return [p.id for p in await self.client.list_pods() if p.name == name and p.status != "TERMINATED"]

    async def _volumes_named(self, name: str) -> list[str]:
        return [v.id for v in await self.client.list_volumes() if v.name == name]

    async def _create_once(
        self, name: str, create: Callable[[], Awaitable[str]], named: Callable[[str], Awaitable[list[str]]]
    ) -> str:
        return await create_once(
            platform=PLATFORM, clock=self.clock, timeouts=self.t, name=name, create=create, named=named
        )

    async def _wait_ready(self, pod_id: str, *, from_stopped: bool = False) -> LiveResource:
        return await ready.wait_ready(self.client, self.clock, self.t, pod_id, from_stopped=from_stopped)
