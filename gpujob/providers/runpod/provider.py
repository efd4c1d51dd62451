"""RunPod behind the Provider protocol: v2 pods and network volumes normalised into LiveResource, actions
that return only once the observed state matches, and the ambiguous-create protocol."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from gpujob.clock import Clock
from gpujob.errors import (
    ProviderConflict,
    ProviderError,
    ProviderNotFound,
    ProviderUnavailable,
)
from gpujob.live import Account, LiveResource, Metering, PriceQuote, ResourceRef, SSHEndpoint
from gpujob.model import Platform
from gpujob.providers.adopt import create_once
from gpujob.providers.base import LaunchRequest, NoEffectError, VolumeRequest, ZeroGpuError
from gpujob.providers.runpod import spot, wire
from gpujob.providers.runpod.client import PLATFORM, GraphQLRetired, RunPodClient
from gpujob.providers.runpod.normalize import (
    cluster_to_live,
    endpoint_to_live,
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
        pods, volumes, templates, registries = await asyncio.gather(
            self.client.list_pods(include_cluster=include_cluster),
            self.client.list_volumes(),
            self.client.list_templates(),
            self.client.list_registries(),
        )
        return (
            [pod_to_live(p) for p in pods if p.status != "TERMINATED"]
            + [volume_to_live(v) for v in volumes]
            + [template_to_live(t) for t in templates]
            + [registry_to_live(r) for r in registries]
        )

    async def audit_resources(self) -> list[LiveResource]:
        """Everything that bills, for `gpujob audit`: list_resources() plus what a plan never needs: the
        cluster member pods (v2 lists them only with includeClusterPods=true), the clusters, and the
        serverless endpoints, each priced at workers.min always-on workers."""
        listed, clusters, endpoints, catalog = await asyncio.gather(
            self.list_resources(include_cluster=True),
            self.client.list_clusters(),
            self.client.list_endpoints(),
            self.client.catalog_prices(),
        )
        cheapest: dict[str, float] = {}
        for gpu in catalog:
            price = gpu.price.serverless
            if gpu.pool and price is not None and price > 0:
                cheapest[gpu.pool] = min(price, cheapest.get(gpu.pool, price))
        source = f"{self.client.rest.call_name('GET', '/catalog/gpus')} price.serverless {self.platform_now():%Y-%m-%d}"

        def per_gpu(e: wire.Endpoint) -> float | None:
            found = [cheapest[p] for p in (e.gpu.pools if e.gpu else []) if p in cheapest]
            return min(found) if found else None

        return (
            listed
            + [cluster_to_live(c) for c in clusters]
            + [endpoint_to_live(e, per_gpu(e), source) for e in endpoints]
        )

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        try:
            if kind == "pod":
                pod = await self.client.get_pod(resource_id)
                return None if pod.status == "TERMINATED" else pod_to_live(pod)
            if kind == "network_volume":
                return volume_to_live(await self.client.get_volume(resource_id))
        except ProviderNotFound:
            return None
        raise ProviderError(f"RunPod has no resource kind '{kind}'", platform=PLATFORM)

    async def quotes(self, counts: Iterable[int] = (1,)) -> list[PriceQuote]:
        """The v2 catalog per cloud and per GPU count: its availability filters default to SECURE and one
        GPU, so community stock and 8-GPU stock must each be asked for (v2 spec GpuCloudFilter,
        GpuCountFilter). Prices are per GPU whatever the count."""
        now = self.clock.now()
        source = f"{self.client.rest.call_name('GET', '/catalog/gpus')} {now:%Y-%m-%d}"
        asks = [(cloud, n) for cloud in ("secure", "community") for n in sorted(set(counts) or {1})]
        answers = await asyncio.gather(
            *(self.client.catalog_gpus(cloud=cloud.upper(), count=n) for cloud, n in asks)
        )
        out: list[PriceQuote] = []
        for (cloud, n), gpus in zip(asks, answers, strict=True):
            for gpu in gpus:
                offered = gpu.secure if cloud == "secure" else gpu.community
                price = gpu.price.secure if cloud == "secure" else gpu.price.community
                if not offered or price is None:
                    continue
                available = None if gpu.availability is None else gpu.availability.upper() != "NONE"
                out.append(
                    PriceQuote(
                        platform=PLATFORM,
                        gpu_id=gpu.id,
                        cloud=cloud,  # type: ignore[arg-type]
                        gpu_count=n,
                        price_hour=price,
                        available=available,
                        source=source,
                        as_of=now,
                    )
                )
        out += spot.profile_quotes()
        return out

    # ---- money
    def platform_now(self) -> datetime:
        return self.client.rest.platform_now()

    async def metering(self, refs: Sequence[ResourceRef]) -> Metering:
        """What RunPod billed each pod and network volume (v2 billing, day buckets from the earliest
        creation gpujob knows of, else the API's default of the last 30 days)."""
        pods = {r.id for r in refs if r.kind == "pod"}
        volumes = {r.id for r in refs if r.kind == "network_volume"}
        known = [r.created_at for r in refs if r.created_at is not None]
        start = (
            min(known).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0) if known else None
        )
        calls = [self.client.rest.call_name("GET", f"/billing/{w}") for w in ("pods", "network-volumes")]
        out = Metering(billed_since=start, source=f"{', '.join(calls)} {self.platform_now():%Y-%m-%d}")
        stamp = start.strftime("%Y-%m-%dT%H:%M:%SZ") if start else None
        for what, ids, attr in (("pods", pods, "pod_id"), ("network-volumes", volumes, "network_volume_id")):
            if not ids:
                continue
            try:
                listing = await self.client.billing(what, stamp)
            except ProviderError as exc:
                out.errors.append(f"RunPod billing/{what}: {exc}")
                continue
            for rec in listing.records:
                rid = getattr(rec, attr)
                if rid in ids and rec.total_amount is not None:
                    out.billed[rid] = out.billed.get(rid, 0.0) + rec.total_amount
        return out

    async def account(self) -> Account | None:
        me = await self.client.myself()
        return Account(
            platform=PLATFORM,
            balance_usd=me.client_balance,
            spend_per_hour_usd=me.current_spend_per_hr,
            spend_limit_usd=me.spend_limit,
            read_at=self.platform_now(),
            source=f"RunPod GraphQL myself {self.platform_now():%Y-%m-%d}",
        )

    # ---- pods
    def spot_unavailable(self) -> str | None:
        """Why spot pods cannot be created or resumed now, once a GraphQL call found out (else None)."""
        return self.client.spot_gone

    async def create_machine(self, request: LaunchRequest) -> LiveResource:
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

    async def start(self, resource: LiveResource) -> LiveResource:
        pod = await self.client.get_pod(resource.id)
        if pod.status == "RUNNING" and ssh_of(pod):
            return self._checked(pod)
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
        body: dict[str, Any] = {
            "name": r.name,
            "gpu": {"id": r.gpu_id, "count": r.gpu_count},
            "cloud": r.cloud.upper(),
            "ports": ["22/tcp"],
            "env": _env(r),
            "startSsh": True,
        }
        if r.image:
            body["image"] = r.image
        if r.template:
            body["templateId"] = r.template
        if r.region:
            body["dataCenterIds"] = [r.region]
        # Unset: the default the plan priced (profile tier container_disk), not the platform's own
        # default (50 GB in the v2 examples), so plan, create and audit agree.
        body["disk"] = r.container_disk_gb or spot.default_container_disk_gb()
        if r.min_cuda:
            # RP9: a floor, compared numerically (v2 CreateGpuConfig.minCudaVersion); allowedCudaVersions
            # would be an exact set that a version no host reports turns into a capacity error
            body["gpu"]["minCudaVersion"] = r.min_cuda
        if r.network_volume_id:
            body["mounts"] = {"network": [{"volumeId": r.network_volume_id, "path": r.mount_path}]}
        elif r.volume_gb:
            body["mounts"] = {"persistent": {"size": r.volume_gb, "path": r.mount_path}}
        return (await self.client.create_pod(body)).id

    async def _rent_spot(self, r: LaunchRequest) -> str:
        bid = r.bid_per_gpu or await spot.floor(self.client, r.gpu_id, r.cloud, r.gpu_count)
        return (await self.client.rent_spot(spot.rent_input(r, bid, _env(r)))).id

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
        moved = False

        def check(pod: wire.Pod, elapsed: float) -> None:
            nonlocal moved
            if pod.status in ("TERMINATED",):
                raise ProviderNotFound(f"pod {pod_id} was terminated while starting", platform=PLATFORM)
            if pod.status in ("PROVISIONING", "STARTING", "RUNNING"):
                moved = True
            if from_stopped and not moved and elapsed >= self.t.stuck:
                raise NoEffectError(
                    f"start was accepted but pod {pod_id} is still {pod.status} after {elapsed:.0f}s",
                    platform=PLATFORM,
                    call="POST /v2/pods/{id}/action",
                    hint="its host may have lost the GPU (RP1); replace the pod (terminate + create)",
                )
            if pod.status == "ERROR" and moved:
                raise ProviderError(
                    f"pod {pod_id} went to ERROR while starting",
                    platform=PLATFORM,
                    hint="check the image and start command; the pod is not billing GPU time",
                )

        bare_since: datetime | None = None

        def no_public_ssh(pod: wire.Pod) -> None:
            # RUNNING with its container up (runtime set) but port 22 not published on a public
            # address: community hosts without a public IP stay like this for good, and bill meanwhile.
            nonlocal bare_since
            if not (pod.status == "RUNNING" and pod.runtime is not None and ssh_of(pod) is None):
                bare_since = None
                return
            bare_since = bare_since or self.clock.now()
            waited = (self.clock.now() - bare_since).total_seconds()
            if waited >= self.t.no_ssh_grace:
                raise ProviderError(
                    f"pod {pod_id} is RUNNING but publishes no public port 22 (no ssh.direct, no public "
                    f"22/tcp in runtime.ports) after {waited:.0f}s; gpujob needs direct SSH and stops waiting",
                    platform=PLATFORM,
                    call="GET /v2/pods/{id}",
                    hint="it is billing now: remove it (gpujob destroy, or the RunPod console) and use "
                    "machine.cloud: secure (community hosts may have no public IP)",
                )

        def check_all(pod: wire.Pod, elapsed: float) -> None:
            check(pod, elapsed)
            no_public_ssh(pod)

        pod, ok = await poll(
            self.clock,
            lambda: self.client.get_pod(pod_id),
            lambda p: p.status == "RUNNING" and ssh_of(p) is not None,
            timeout=self.t.ready,
            interval=self.t.interval,
            first=self.t.first_interval,
            check=check_all,
        )
        if not ok:
            raise ProviderUnavailable(
                f"pod {pod_id} is {pod.status} without an SSH endpoint after {self.t.ready:.0f}s",
                platform=PLATFORM,
                hint="it may be billing; check it with `gpujob state` and re-run apply",
            )
        return self._checked(pod)

    def _checked(self, pod: wire.Pod) -> LiveResource:
        if pod.cpu is None and (pod.gpu is None or pod.gpu.count == 0):
            raise ZeroGpuError(
                f"pod {pod.id} is running with zero GPUs (its host re-rented the GPU while it was stopped)",
                platform=PLATFORM,
                hint="replace it: terminate and create a new pod (data on a network volume survives)",
            )
        return pod_to_live(pod)


def _env(r: LaunchRequest) -> dict[str, str]:
    env = dict(r.env)
    if r.ssh_public_key:
        env["PUBLIC_KEY"] = r.ssh_public_key
    return env
