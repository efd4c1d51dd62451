"""Paperspace /v1 payloads, as the API sends them (unknown keys ignored, int64 fields as str or int)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import Field

from gpujob.model import WireModel
from gpujob.providers.lenient import LenientFloat, LenientInt

_REGION_CODE = re.compile(r"\(([A-Za-z]+\d*)\)")


def normalise_region(value: str | None) -> str | None:
    """'East Coast (NY2)', 'NY2', 'ny2' -> 'ny2'."""
    if not value:
        return None
    match = _REGION_CODE.search(value)
    return (match.group(1) if match else value).strip().lower()


class Accelerator(WireModel):
    name: str | None = None
    count: LenientInt = None
    memory: LenientInt = None


class Machine(WireModel):
    wire_optional = frozenset({"accelerators"})  # "accelerators?" in the CLI spec
    id: str
    name: str = ""
    state: str = ""
    machine_type: str | None = Field(None, alias="machineType")
    region: str | None = None
    os: str | None = None
    accelerators: list[Accelerator] | None = None
    public_ip: str | None = Field(None, alias="publicIp")
    public_ip_type: str | None = Field(None, alias="publicIpType")
    private_ip: str | None = Field(None, alias="privateIp")
    network_id: str | None = Field(None, alias="networkId")
    auto_shutdown_enabled: bool | None = Field(None, alias="autoShutdownEnabled")
    auto_shutdown_timeout: LenientFloat = Field(None, alias="autoShutdownTimeout")
    storage_total: LenientInt = Field(None, alias="storageTotal")
    storage_used: LenientInt = Field(None, alias="storageUsed")
    ram: LenientInt = None
    usage_rate: LenientFloat = Field(None, alias="usageRate")
    storage_rate: LenientFloat = Field(None, alias="storageRate")
    # No templateId and no diskSize: a machine object does not say which template or disk size it was
    # created with (Paperspace/cli api/openapi.ts "machines-get"); gpujob keeps both in its launch record.
    dt_created: datetime | None = Field(None, alias="dtCreated")
    dt_modified: datetime | None = Field(None, alias="dtModified")
    dt_deleted: datetime | None = Field(None, alias="dtDeleted")


class MachineEvent(WireModel):
    id: str
    name: str | None = None
    state: str | None = None
    machine_id: str | None = Field(None, alias="machineId")
    error: Any = None
    dt_created: datetime | None = Field(None, alias="dtCreated")
    dt_finished: datetime | None = Field(None, alias="dtFinished")

    @property
    def finished(self) -> bool:
        return self.state == "done" or self.dt_finished is not None

    @property
    def failed(self) -> bool:
        # An error-state event that also has dtFinished has usually still succeeded (REFERENCE §2.3,
        # Metaphysic event_handler.go). A cancelled one never did what was asked (state enum
        # new | in progress | done | error | cancelled, Paperspace/cli api/openapi.ts).
        return (
            self.error is not None
            or self.state == "cancelled"
            or (self.state == "error" and self.dt_finished is None)
        )


class Change(WireModel):
    """Every mutation answers {data, event}."""

    wire_optional = frozenset({"event"})  # "event?" on PUT answers
    data: dict[str, Any] | None = None
    event: MachineEvent | None = None


class PublicIp(WireModel):
    wire_optional = frozenset({"assignedMachineId"})
    ip: str
    region: str | None = None
    assigned_machine_id: str | None = Field(None, alias="assignedMachineId")
    dt_created: datetime | None = Field(None, alias="dtCreated")


class Snapshot(WireModel):
    wire_optional = frozenset({"dtCreated"})  # not in the 2024 spec
    id: str
    name: str = ""
    machine_id: str | None = Field(None, alias="machineId")
    is_auto_snapshot: bool = Field(False, alias="isAutoSnapshot")
    dt_created: datetime | None = Field(None, alias="dtCreated")


class TemplateMachineType(WireModel):
    machine_type: str = Field(alias="machineTypeLabel")
    available: bool = Field(True, alias="isAvailable")


class OsTemplate(WireModel):
    """GET /os-templates items (Paperspace/cli api/openapi.ts "osTemplates-list")."""

    id: str
    name: str = ""
    operating_system: str | None = Field(None, alias="operatingSystemLabel")
    default_size_gb: LenientInt = Field(None, alias="defaultSizeGb")
    machine_types: list[TemplateMachineType] = Field(default_factory=list, alias="availableMachineTypes")
    dt_created: datetime | None = Field(None, alias="dtCreated")


class CustomTemplate(OsTemplate):
    """GET /custom-templates items: an OS template's fields plus where it came from."""

    wire_optional = frozenset({"dtDeleted"})
    region: str | None = None
    parent_machine_id: str | None = Field(None, alias="parentMachineId")


class PrivateNetwork(WireModel):
    id: str
    name: str = ""
    region: str | None = None
    network: str | None = None
    netmask: str | None = None
    dt_created: datetime | None = Field(None, alias="dtCreated")
    dt_deleted: datetime | None = Field(None, alias="dtDeleted")


class SharedDrive(WireModel):
    id: str
    name: str = ""
    region: str | None = None
    size: LenientInt = None
    network_id: str | None = Field(None, alias="networkId")
    dt_created: datetime | None = Field(None, alias="dtCreated")


class StartupScript(WireModel):
    id: str
    name: str = ""
    is_run_once: bool = Field(False, alias="isRunOnce")


class Availability(WireModel):
    """GET /machine-availability?machineType=&region= (DO API reference, operation machineAvailability-list)."""

    available: bool
