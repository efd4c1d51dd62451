"""Paperspace behind the Provider protocol. Every mutation answers {data, event}: poll the event, then the
machine, until the observed state matches."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from gpujob.clock import Clock
from gpujob.errors import (
    ProviderCapacityError,
    ProviderConflict,
    ProviderError,
    ProviderNotFound,
    ProviderUnavailable,
)
from gpujob.live import (
    Account,
    LiveResource,
    Metering,
    PriceQuote,
    ResourceRef,
    SSHEndpoint,
    TemplateRef,
)
from gpujob.model import Platform
from gpujob.providers.adopt import create_once
from gpujob.providers.base import LaunchRequest, NoEffectError, VolumeRequest
from gpujob.providers.paperspace import launch, money, networks, wire
from gpujob.providers.paperspace.client import PLATFORM, PaperspaceClient, is_capacity_text
from gpujob.providers.paperspace.normalize import (
    SCRIPT_SUFFIX,
    drive_to_live,
    ip_to_live,
    machine_to_live,
    script_to_live,
    snapshot_to_live,
    template_to_live,
)
from gpujob.providers.paperspace.templates import Template, every_template, resolve_template
from gpujob.providers.wait import GONE, Timeouts, poll, wait_gone

_BENIGN = ("currently starting", "currently stopping", "already running", "already off", "already stopped")


class PaperspaceProvider:
    platform: Platform = PLATFORM

    def __init__(
        self,
        client: PaperspaceClient,
        *,
        clock: Clock,
        ssh_port: int = 22,
        ssh_user: str = "paperspace",
        timeouts: Timeouts | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.ssh_port = ssh_port
        self.ssh_user = ssh_user
        self.t = timeouts or Timeouts()
        self._templates: dict[str, Template] = {}

    def _live(self, m: wire.Machine) -> LiveResource:
        return machine_to_live(m, ssh_port=self.ssh_port, ssh_user=self.ssh_user)

    # ---- read
    async def list_resources(self) -> list[LiveResource]:
        machines, ips, snapshots, templates, drives = await asyncio.gather(
            self.client.list_machines(),
            self.client.list_ips(),
            self.client.list_snapshots(),
            self.client.list_custom_templates(),
            self.client.list_shared_drives(),
        )
        by_id = {m.id: m for m in machines}
        live = [self._live(m) for m in machines]
        # private networks only when a machine is in one (a multi-node job's nodes: gpujob.providers.paperspace.networks)
        nets = await self.client.list_private_networks() if any(m.network_id for m in machines) else []
        return (
            live
            + networks.groups(nets, live)
            + [ip_to_live(i, by_id) for i in ips]
            + [snapshot_to_live(s, by_id) for s in snapshots]
            + [template_to_live(t) for t in templates]
            + [drive_to_live(d) for d in drives]
        )

    async def templates(self) -> list[TemplateRef]:
        """Every OS and custom template, so a plan resolves machine.template before anything is made."""
        return [
            TemplateRef(platform=PLATFORM, id=t.id, name=t.name, kind=t.kind, region=t.region)
            for t in await every_template(self.client)
        ]

    async def audit_resources(self) -> list[LiveResource]:
        """list_resources() plus the startup scripts (free, but gpujob's are leftovers once their machine
        is gone), for `gpujob audit` only."""
        listed, scripts = await asyncio.gather(self.list_resources(), self.client.list_startup_scripts())
        machines = {r.name: r.id for r in listed if r.kind == "machine"}
        return listed + [script_to_live(s, machines) for s in scripts]

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        if kind == "machine":
            try:
                machine = await self.client.get_machine(resource_id)
            except ProviderNotFound:
                return None
            return None if machine.dt_deleted else self._live(machine)
        if kind == "private_network":
            return await networks.get_group(self, resource_id)
        if kind in ("public_ip", "snapshot"):
            for r in await self.list_resources():
                if r.kind == kind and r.id == resource_id:
                    return r
            return None
        raise ProviderError(f"Paperspace has no resource kind '{kind}'", platform=PLATFORM)

    # ---- money
    def platform_now(self) -> datetime:
        return self.client.api.platform_now()

    async def metering(self, refs: Sequence[ResourceRef]) -> Metering:
        return await money.metering(self.client, refs)

    async def account(self) -> Account | None:
        return None  # Paperspace exposes no balance or spend rate through its API

    async def quotes(self, counts: Iterable[int] = (1,)) -> list[PriceQuote]:
        return money.quotes(self.clock.now())

    # ---- machines
    async def create_machine(self, request: LaunchRequest) -> LiveResource:
        if request.nodes > 1:
            return await networks.create(self, request)
        if not request.template:
            raise ProviderError("a Paperspace machine needs a template (machine.template)", platform=PLATFORM)
        # First, before anything is created: a template that does not resolve stops here.
        template = await self.template(request.template)
        machine_type = launch.machine_type(request.gpu_id, request.gpu_count)
        if request.region and not await self.client.availability(machine_type, request.region):
            raise ProviderCapacityError(
                f"{machine_type} is not available in {request.region} now",
                platform=PLATFORM,
                call=self.client.api.call_name("GET", "/machine-availability"),
                hint="no capacity for this candidate; gpujob tries the next GPU / region",
            )
        disk = request.volume_gb or launch.DEFAULT_DISK_GB
        body: dict[str, Any] = {
            "name": request.name,
            "machineType": machine_type,
            "templateId": template.id,
            "diskSize": disk,
            "region": request.region or "ny2",
            "publicIpType": request.public_ip or "dynamic",
            "startOnCreate": True,
            "autoShutdownEnabled": request.auto_shutdown_hours is not None,
        }
        if request.network_id:
            body["networkId"] = request.network_id
        if request.auto_shutdown_hours is not None:
            body["autoShutdownTimeout"] = launch.whole_hours(request.auto_shutdown_hours)
            body["autoShutdownForce"] = True
        if request.ssh_public_key:
            body["startupScriptId"] = await self._ssh_script(request.name, request.ssh_public_key)
        events: dict[str, wire.MachineEvent] = {}

        async def create() -> str:
            change = await self.client.create_machine(body)
            if change.event:
                events["create"] = change.event
            return str((change.data or {}).get("id", ""))

        async def named(name: str) -> list[str]:
            return [
                m.id
                for m in await self.client.list_machines(name=name)
                if m.name == name and not m.dt_deleted
            ]

        machine_id = await create_once(
            platform=PLATFORM,
            clock=self.clock,
            timeouts=self.t,
            name=request.name,
            create=create,
            named=named,
        )
        if "create" in events:
            await self._wait_event(events["create"])
        live = await self._wait_state(machine_id, "ready", need_ip=(request.public_ip or "dynamic") != "none")
        # What the machine object never says again: gpujob records these at create (apply's launch record).
        return live.model_copy(
            update={
                "template": template.id,
                "volume_gb": disk,
                "attributes": {**live.attributes, "template_name": template.name, "disk_gb_source": "create"},
            }
        )

    async def template(self, ref: str) -> Template:
        """machine.template (an id or a name) -> the template, looked up once per provider."""
        found = self._templates.get(ref)
        if found is None:
            found = self._templates[ref] = await resolve_template(self.client, ref)
        return found

    async def start(self, resource: LiveResource) -> LiveResource:
        if resource.kind == "private_network":
            return await networks.each(self, resource, "start")
        change = await self._action(resource.id, "start")
        if change and change.event:
            await self._wait_event(change.event)
        return await self._wait_state(
            resource.id, "ready", need_ip=resource.public_ip_kind != "none", from_off=True
        )

    async def stop(self, resource: LiveResource) -> LiveResource:
        if resource.kind == "private_network":
            return await networks.each(self, resource, "stop")
        change = await self._action(resource.id, "stop")
        if change and change.event:
            await self._wait_event(change.event)
        return await self._wait_state(resource.id, "off")

    async def terminate(self, resource: LiveResource) -> None:
        if resource.kind == "private_network":
            return await networks.delete(self, resource.id)
        try:
            change = await self.client.delete_machine(resource.id)
        except ProviderNotFound:
            return
        if change.event:
            await self._wait_event(change.event)

        async def status() -> str:
            try:
                machine = await self.client.get_machine(resource.id)
            except ProviderNotFound:
                return GONE
            return GONE if machine.dt_deleted else machine.state

        await wait_gone(self.clock, status, self.t, platform=PLATFORM, what=f"machine {resource.id}")
        await self._delete_ssh_scripts(resource.name)

    async def _delete_ssh_scripts(self, machine_name: str) -> None:
        """The startup script gpujob made for this machine's SSH key goes with the machine (a script per
        machine would otherwise pile up in the account forever)."""
        for script in await self.client.list_startup_scripts():
            if script.name == f"{machine_name}{SCRIPT_SUFFIX}":
                with contextlib.suppress(ProviderNotFound):
                    await self.client.delete_startup_script(script.id)

    async def update(self, resource: LiveResource, changes: dict[str, Any]) -> LiveResource:
        """PUT /machines/{id} (machineType / diskSize need the machine off; region and template are fixed)."""
        if changes.get("autoShutdownTimeout") is not None:
            changes = {**changes, "autoShutdownTimeout": launch.whole_hours(changes["autoShutdownTimeout"])}
        change = await self.client.update_machine(resource.id, changes)
        if change.event:
            await self._wait_event(change.event)
        return self._live(await self.client.get_machine(resource.id))

    # ---- public IPs and snapshots
    async def claim_ip(self, region: str, machine_id: str | None = None) -> LiveResource:
        ip = await self.client.claim_ip(region)
        if machine_id:
            ip = await self.client.assign_ip(ip.ip, machine_id)
        return ip_to_live(ip, {})

    async def assign_ip(self, ip: str, machine_id: str | None) -> LiveResource:
        return ip_to_live(await self.client.assign_ip(ip, machine_id), {})

    async def release_ip(self, resource: LiveResource) -> None:
        with contextlib.suppress(ProviderNotFound):
            await self.client.release_ip(resource.id)

    async def delete_snapshot(self, resource: LiveResource) -> None:
        try:
            change = await self.client.delete_snapshot(resource.id)
        except ProviderNotFound:
            return
        if change.event:
            await self._wait_event(change.event)

    async def create_volume(self, request: VolumeRequest) -> LiveResource:
        raise ProviderError("Paperspace machines have no network volumes", platform=PLATFORM)

    async def grow_volume(self, resource: LiveResource, size_gb: int) -> LiveResource:
        """The machine's own disk: PUT /machines/{id} {"diskSize": N}, accepted only while the machine is
        off (Metaphysic's provider stops it first) and only to one of the fixed sizes (checked in the spec)."""
        if resource.kind != "machine":
            raise ProviderError("Paperspace has no network volumes to grow", platform=PLATFORM)
        machine = await self.client.get_machine(resource.id)
        if machine.state != "off":
            raise ProviderConflict(
                f"machine {machine.id} is {machine.state}; its disk can grow only while it is off",
                platform=PLATFORM,
                call="PUT /v1/machines/{id}",
                hint="stop it first (gpujob apply does this for you)",
            )
        change = await self.client.update_machine(resource.id, {"diskSize": size_gb})
        if change.event:
            await self._wait_event(change.event)
        live = self._live(await self.client.get_machine(resource.id))
        return live.model_copy(
            update={"volume_gb": size_gb, "attributes": {**live.attributes, "disk_gb_source": "update"}}
        )

    async def delete_volume(self, resource: LiveResource) -> None:
        raise ProviderError("Paperspace machines have no network volumes", platform=PLATFORM)

    def ssh_endpoint(self, resource: LiveResource) -> SSHEndpoint | None:
        if not resource.public_ip or resource.status != "running":
            return None
        return SSHEndpoint(host=resource.public_ip, port=self.ssh_port, user=self.ssh_user)

    # ---- internals
    async def _ssh_script(self, name: str, public_key: str) -> str:
        script_name = f"{name}-ssh"
        script = launch.ssh_key_script(public_key)

        async def create() -> str:
            return (await self.client.create_startup_script(script_name, script)).id

        async def named(n: str) -> list[str]:
            return [s.id for s in await self.client.list_startup_scripts() if s.name == n]

        return await create_once(
            platform=PLATFORM, clock=self.clock, timeouts=self.t, name=script_name, create=create, named=named
        )

    async def _action(self, machine_id: str, action: str) -> wire.Change | None:
        try:
            return await self.client.machine_action(machine_id, action)
        except ProviderError as exc:
            if isinstance(exc, ProviderNotFound) or not any(b in str(exc).lower() for b in _BENIGN):
                raise
            return None  # e.g. "This machine is currently starting.": the machine state decides

    async def _wait_event(self, event: wire.MachineEvent) -> wire.MachineEvent:
        def check(ev: wire.MachineEvent, _elapsed: float) -> None:
            if ev.failed:
                text = str(ev.error or f"event {ev.name} ended in state {ev.state}")
                cls = ProviderCapacityError if is_capacity_text(text) else ProviderError
                raise cls(text, platform=PLATFORM, call=f"GET /v1/machine-events/{ev.id}")

        check(event, 0)  # an answer may carry an event that already ended, well or badly
        if event.finished:
            return event
        ev, ok = await poll(
            self.clock,
            lambda: self.client.get_event(event.id),
            lambda e: e.finished and not e.failed,
            timeout=self.t.ready,
            interval=self.t.interval,
            first=self.t.first_interval,
            check=check,
        )
        if not ok:
            raise ProviderUnavailable(f"event {ev.name} ({ev.id}) still {ev.state}", platform=PLATFORM)
        return ev

    async def _wait_state(
        self, machine_id: str, target: str, *, need_ip: bool = False, from_off: bool = False
    ) -> LiveResource:
        moved = False

        def check(m: wire.Machine, elapsed: float) -> None:
            nonlocal moved
            if m.state != "off":
                moved = True
            if from_off and not moved and elapsed >= self.t.stuck:
                raise NoEffectError(
                    f"start was accepted but machine {machine_id} is still off after {elapsed:.0f}s",
                    platform=PLATFORM,
                    hint="re-run `gpujob apply`; if it persists the region may lack capacity for this type",
                )

        def done(m: wire.Machine) -> bool:
            return m.state == target and (not need_ip or bool(m.public_ip))

        timeout = self.t.ready if target == "ready" else self.t.stop
        machine, ok = await poll(
            self.clock,
            lambda: self.client.get_machine(machine_id),
            done,
            timeout=timeout,
            interval=self.t.interval,
            first=self.t.first_interval,
            check=check,
        )
        if not ok:
            raise NoEffectError(
                f"machine {machine_id} is {machine.state}, not {target}, after {timeout:.0f}s",
                platform=PLATFORM,
                hint="check it with `gpujob state`; it may be billing",
            )
        return self._live(machine)
