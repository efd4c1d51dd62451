"""Paperspace wire objects -> LiveResource."""

from __future__ import annotations

import re

from gpujob.live import LiveResource, SSHEndpoint, Status
from gpujob.providers.paperspace import wire
from gpujob.providers.paperspace.wire import normalise_region

_STATE: dict[str, Status] = {
    "provisioning": "pending",
    "starting": "pending",
    "serviceready": "pending",
    "restarting": "pending",
    "upgrading": "pending",
    "stopping": "pending",
    "ready": "running",
    "off": "stopped",
}
GB = 1024**3


def gpu_count(machine: wire.Machine) -> int:
    if machine.accelerators:
        return sum(a.count or 0 for a in machine.accelerators)
    kind = machine.machine_type or ""
    if re.fullmatch(r"C\d+", kind):  # CPU-only types
        return 0
    match = re.search(r"x(\d+)$", kind)
    return int(match.group(1)) if match else 1


def storage_gb(total: int | None) -> int | None:
    """storageTotal (int64 bytes; older answers sent GB) as whole GB, rounded to the nearest."""
    if not total:
        return None
    return round(total / GB) if total >= GB else total


def machine_to_live(m: wire.Machine, *, ssh_port: int, ssh_user: str) -> LiveResource:
    status: Status = "terminating" if m.dt_deleted else _STATE.get(m.state.lower(), "unknown")
    ip_kind = m.public_ip_type if m.public_ip_type in ("static", "dynamic", "none") else None
    attributes: dict[str, str | int | float | bool | None] = {}
    if m.usage_rate is not None:
        attributes["usage_rate"] = m.usage_rate
    if m.storage_rate is not None:
        attributes["storage_rate"] = m.storage_rate
    if m.region:
        attributes["region_raw"] = m.region
    if m.network_id:
        attributes["network_id"] = m.network_id  # a node of a multi-node job is owned through its network
    if m.private_ip:
        attributes["private_ip"] = m.private_ip
    disk = storage_gb(m.storage_total)
    if disk is not None:
        # storageTotal is the disk as the OS sees it, not the diskSize it was created with: good enough to
        # price, never to diff (the planner compares the size in gpujob's launch record).
        attributes["disk_gb_source"] = "storageTotal"
    return LiveResource(
        platform="paperspace",
        kind="machine",
        id=m.id,
        name=m.name,
        status=status,
        raw_status=m.state,
        gpu_id=m.machine_type,
        gpu_count=gpu_count(m),
        region=normalise_region(m.region),
        template=None,  # the API does not report it (see wire.Machine)
        volume_gb=disk,
        public_ip=m.public_ip,
        public_ip_kind=ip_kind,  # type: ignore[arg-type]
        auto_shutdown_hours=m.auto_shutdown_timeout if m.auto_shutdown_enabled else None,
        ssh=SSHEndpoint(host=m.public_ip, port=ssh_port, user=ssh_user)
        if m.public_ip and status == "running"
        else None,
        # usageRate's unit is unconfirmed (REFERENCE §3.4); it is the API's own running rate.
        cost_per_hour=m.usage_rate if status == "running" else None,
        created_at=m.dt_created,
        attributes=attributes,
    )


def ip_to_live(ip: wire.PublicIp, machines: dict[str, wire.Machine]) -> LiveResource:
    """IPs have no name; one assigned to a machine takes that machine's name so it is owned by its job."""
    owner = machines.get(ip.assigned_machine_id or "")
    return LiveResource.available(
        "paperspace",
        "public_ip",
        ip.ip,
        owner.name if owner else "",
        raw_status="assigned" if ip.assigned_machine_id else "unassigned",
        region=normalise_region(ip.region),
        machine_id=ip.assigned_machine_id,
        public_ip=ip.ip,
        public_ip_kind="static",
        created_at=ip.dt_created,
        attributes={"machine_name": owner.name if owner else None},
    )


def snapshot_to_live(s: wire.Snapshot, machines: dict[str, wire.Machine]) -> LiveResource:
    owner = machines.get(s.machine_id or "")
    return LiveResource.available(
        "paperspace",
        "snapshot",
        s.id,
        s.name,
        raw_status="auto" if s.is_auto_snapshot else "manual",
        machine_id=s.machine_id,
        created_at=s.dt_created,
        attributes={"machine_name": owner.name if owner else None, "auto": s.is_auto_snapshot},
    )


def template_to_live(t: wire.CustomTemplate) -> LiveResource:
    return LiveResource.available(
        "paperspace",
        "template",
        t.id,
        t.name,
        region=normalise_region(t.region),
        machine_id=t.parent_machine_id,
        volume_gb=t.default_size_gb,
        created_at=t.dt_created,
    )


def drive_to_live(d: wire.SharedDrive) -> LiveResource:
    return LiveResource.available(
        "paperspace",
        "shared_drive",
        d.id,
        d.name,
        region=normalise_region(d.region),
        volume_gb=d.size,
        created_at=d.dt_created,
    )


SCRIPT_SUFFIX = "-ssh"  # gpujob names the startup script that installs a machine's SSH key <machine>-ssh


def script_to_live(s: wire.StartupScript, machine_ids: dict[str, str]) -> LiveResource:
    """A startup script: free, but a leftover once its machine is gone. gpujob's own are tied to their
    machine by name (`machine_ids`: machine name -> id), so they follow its owner."""
    machine = machine_ids.get(s.name.removesuffix(SCRIPT_SUFFIX)) if s.name.endswith(SCRIPT_SUFFIX) else None
    return LiveResource.available(
        "paperspace",
        "startup_script",
        s.id,
        s.name,
        machine_id=machine,
        attributes={"run_once": s.is_run_once},
    )
