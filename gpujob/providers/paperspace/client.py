"""Paperspace: one method per HTTP call on https://api.paperspace.com/v1 (never the retired Core API)."""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import httpx
from pydantic import BaseModel

from gpujob.errors import MalformedResponse, ProviderError
from gpujob.providers.failures import ErrorInfo, text_snippet
from gpujob.providers.http import ApiClient
from gpujob.providers.paperspace import wire

PLATFORM: Final = "paperspace"
PAGE_LIMIT = 120
MAX_PAGES = 500
M = TypeVar("M", bound=BaseModel)

_CAPACITY = re.compile(
    r"capacity|out of stock|no (machines?|instances?|gpus?)[\w ]* available|not (currently )?available|"
    r"availability",
    re.IGNORECASE,
)
_CODE_STATUS = {
    "BAD_REQUEST": 400,
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "CONFLICT": 409,
    "PRECONDITION_FAILED": 412,
    "TOO_MANY_REQUESTS": 429,
    "INTERNAL_SERVER_ERROR": 500,
}


def is_capacity_text(text: str) -> bool:
    return bool(_CAPACITY.search(text or ""))


def parse_error(response: httpx.Response | None, body: Any) -> ErrorInfo:
    """{code, message, details?, issues?[{message}]}."""
    if isinstance(body, dict):
        text = str(body.get("message") or "")
        issues = body.get("issues")
        if isinstance(issues, list) and issues:
            text += (
                " ("
                + "; ".join(str(i.get("message", i)) if isinstance(i, dict) else str(i) for i in issues)
                + ")"
            )
        if body.get("code"):
            text = f"{body['code']}: {text}" if text else str(body["code"])
        return ErrorInfo(text, capacity=bool(_CAPACITY.search(text)))
    return ErrorInfo(text_snippet(response))


def is_error_body(body: Any) -> bool:
    # The official CLI treats a 2xx body holding only code + message as an error; so do we.
    return (
        isinstance(body, dict)
        and "code" in body
        and "message" in body
        and len(body) <= 3
        and "id" not in body
    )


class PaperspaceClient:
    def __init__(self, api: ApiClient) -> None:
        self.api = api

    async def _call(self, method: str, path: str, **kw: Any) -> Any:
        body = await self.api.request(method, path, **kw)
        if is_error_body(body):
            status = _CODE_STATUS.get(str(body.get("code")), 400)
            raise self.api.error_for(self.api.call_name(method, path), status, parse_error(None, body))
        return body

    async def _list_all(self, path: str, model: type[M], params: dict[str, Any] | None = None) -> list[M]:
        """Follow after/limit/hasMore/nextPage to the end. A repeating cursor makes the listing
        incomplete, which is an error: absence in a partial list proves nothing."""
        items: list[M] = []
        query: dict[str, Any] = {"limit": PAGE_LIMIT, **(params or {})}
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            body = await self._call("GET", path, params=query)
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                raise MalformedResponse(f"GET {path}: a listing page without an items list")
            items += [model.model_validate(i) for i in body["items"]]
            cursor = body.get("nextPage")
            if not body.get("hasMore") or not cursor:
                return items
            if cursor in seen:
                break
            seen.add(cursor)
            query = {**query, "after": cursor}
        raise ProviderError(
            f"listing {path} did not finish (cursor repeated or more than {MAX_PAGES} pages)",
            platform=PLATFORM,
            call=self.api.call_name("GET", path),
            hint="the listing is incomplete, so gpujob will not conclude anything is absent; re-run later",
        )

    # machines
    async def list_machines(self, name: str | None = None) -> list[wire.Machine]:
        return await self._list_all("/machines", wire.Machine, {"name": name} if name else None)

    async def get_machine(self, machine_id: str) -> wire.Machine:
        return wire.Machine.model_validate(await self._call("GET", f"/machines/{machine_id}"))

    async def create_machine(self, body: dict[str, Any]) -> wire.Change:
        return wire.Change.model_validate(await self._call("POST", "/machines", json_body=body))

    async def update_machine(self, machine_id: str, body: dict[str, Any]) -> wire.Change:
        return wire.Change.model_validate(await self._call("PUT", f"/machines/{machine_id}", json_body=body))

    async def machine_action(self, machine_id: str, action: str) -> wire.Change:
        """start / stop / restart: PATCH with an explicit {} JSON body, as the official CLI sends."""
        return wire.Change.model_validate(
            await self._call("PATCH", f"/machines/{machine_id}/{action}", json_body={})
        )

    async def delete_machine(self, machine_id: str) -> wire.Change:
        return wire.Change.model_validate(await self._call("DELETE", f"/machines/{machine_id}"))

    async def get_event(self, event_id: str) -> wire.MachineEvent:
        return wire.MachineEvent.model_validate(await self._call("GET", f"/machine-events/{event_id}"))

    async def list_events(self, machine_id: str) -> list[wire.MachineEvent]:
        """GET /machine-events?machineId=: the machine's whole history (create, start, stop, ...)."""
        return await self._list_all(
            "/machine-events",
            wire.MachineEvent,
            {"machineId": machine_id, "orderBy": "dtCreated", "order": "asc"},
        )

    async def availability(self, machine_type: str, region: str) -> bool:
        params = {"machineType": machine_type, "region": region}
        body = await self._call("GET", "/machine-availability", params=params)
        return wire.Availability.model_validate(body).available

    # startup scripts (how the SSH key reaches a machine)
    async def create_startup_script(self, name: str, script: str) -> wire.StartupScript:
        body = {"name": name, "script": script, "isRunOnce": True}
        return wire.StartupScript.model_validate(await self._call("POST", "/startup-scripts", json_body=body))

    async def list_startup_scripts(self) -> list[wire.StartupScript]:
        return await self._list_all("/startup-scripts", wire.StartupScript)

    async def delete_startup_script(self, script_id: str) -> None:
        await self._call("DELETE", f"/startup-scripts/{script_id}")

    # public IPs
    async def list_ips(self) -> list[wire.PublicIp]:
        return await self._list_all("/public-ips", wire.PublicIp)

    async def claim_ip(self, region: str) -> wire.PublicIp:
        return wire.PublicIp.model_validate(
            await self._call("POST", "/public-ips", json_body={"region": region})
        )

    async def assign_ip(self, ip: str, machine_id: str | None) -> wire.PublicIp:
        body = await self._call("PUT", f"/public-ips/{ip}", json_body={"machineId": machine_id})
        return wire.PublicIp.model_validate(body)

    async def release_ip(self, ip: str) -> None:
        await self._call("DELETE", f"/public-ips/{ip}")

    # snapshots, templates, shared drives
    async def list_snapshots(self) -> list[wire.Snapshot]:
        return await self._list_all("/snapshots", wire.Snapshot)

    async def delete_snapshot(self, snapshot_id: str) -> wire.Change:
        return wire.Change.model_validate(await self._call("DELETE", f"/snapshots/{snapshot_id}"))

    async def list_custom_templates(self, name: str | None = None) -> list[wire.CustomTemplate]:
        return await self._list_all(
            "/custom-templates", wire.CustomTemplate, {"name": name} if name else None
        )

    async def list_os_templates(self, name: str | None = None) -> list[wire.OsTemplate]:
        return await self._list_all("/os-templates", wire.OsTemplate, {"name": name} if name else None)

    async def list_private_networks(self) -> list[wire.PrivateNetwork]:
        return await self._list_all("/private-networks", wire.PrivateNetwork)

    async def get_private_network(self, network_id: str) -> wire.PrivateNetwork:
        return wire.PrivateNetwork.model_validate(await self._call("GET", f"/private-networks/{network_id}"))

    async def create_private_network(self, name: str, region: str) -> wire.PrivateNetwork:
        body = {"name": name, "region": region}
        return wire.PrivateNetwork.model_validate(
            await self._call("POST", "/private-networks", json_body=body)
        )

    async def delete_private_network(self, network_id: str) -> None:
        await self._call("DELETE", f"/private-networks/{network_id}")

    async def list_shared_drives(self) -> list[wire.SharedDrive]:
        return await self._list_all("/shared-drives", wire.SharedDrive)
