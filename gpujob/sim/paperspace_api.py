"""Paperspace /v1: machines, machine-events, public-ips, snapshots, startup-scripts,
machine-availability and auth/session. Every success is 200; mutations answer {data, event};
errors are {code, message}; lists paginate with after/limit -> {items, hasMore, nextPage}."""

from __future__ import annotations

from typing import Any

from gpujob.sim import ps_engine as pe
from gpujob.sim.clock import iso
from gpujob.sim.control_api import add_control_routes
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Api, Request, Response
from gpujob.sim.state import PsEvent, PsIp, PsMachine, PsScript, PsSnapshot, new_id, private_ip
from gpujob.sim.wire import event_json, paginate

CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    402: "PAYMENT_REQUIRED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_SUPPORTED",
    408: "TIMEOUT",
    409: "CONFLICT",
    429: "TOO_MANY_REQUESTS",
    500: "INTERNAL_SERVER_ERROR",
}
CREATE_FIELDS = {
    "name", "machineType", "templateId", "diskSize", "region", "publicIpType", "networkId", "startOnCreate",
    "autoShutdownEnabled", "autoShutdownTimeout", "autoShutdownForce", "autoSnapshotEnabled", "autoSnapshotFrequency",
    "autoSnapshotSaveCount", "takeInitialSnapshot", "restorePointEnabled", "restorePointFrequency", "startupScriptId",
    "enableNvlink", "emailPassword", "accessorIds",
}  # fmt: skip
DISK_SIZES = {50, 100, 250, 500, 1000, 2000}


def machine_json(sim: Simulator, m: PsMachine) -> dict[str, Any]:
    gpus = sim.ps_prices.machine_gpus(m.machine_type)
    g = sim.ps_prices.gpu(m.machine_type)
    return {
        "id": m.id,
        "name": m.name,
        "state": m.state,
        "machineType": m.machine_type,
        "agentType": "LinuxMachine",
        "os": "Ubuntu 22.04",
        "cpus": 8,
        "ram": "32212254720",
        "region": pe.REGIONS[m.region],
        "accelerators": [
            {
                "name": g.alias if g else m.machine_type,
                "count": gpus,
                "memory": str((g.vram if g else 0) * 2**30),
            }
        ]
        if gpus
        else None,
        "publicIp": m.public_ip,
        "publicIpType": m.public_ip_type,
        "privateIp": m.private_ip or "10.0.0.2",
        "networkId": m.network_id,
        "autoShutdownEnabled": m.auto_shutdown_enabled,
        "autoShutdownTimeout": m.auto_shutdown_timeout,
        "autoShutdownForce": m.auto_shutdown_force,
        "autoSnapshotEnabled": False,
        "autoSnapshotFrequency": None,
        "autoSnapshotSaveCount": None,
        "restorePointEnabled": False,
        "restorePointFrequency": None,
        "restorePointSnapshotId": None,
        "storageTotal": str(m.disk_size * 2**30),
        "storageUsed": "0",
        "storageRate": sim.ps_prices.tier("block_storage").running * m.disk_size,
        "usageRate": sim.ps_prices.machine_hour(m.machine_type),
        "updatesPending": False,
        "reservation": None,
        # No templateId / startupScriptId / diskSize: the real machine object has none of them.
        "dtCreated": iso(m.created_at),
        "dtModified": iso(m.modified_at),
        "dtDeleted": iso(m.ended_at),
    }


def whole_hours(value: Any) -> None:
    """autoShutdownTimeout counts whole hours (Paperspace/cli spec: "timeout in hours"; Metaphysic's
    client types it int64): a fraction is refused rather than silently truncated."""
    if value is not None and (isinstance(value, bool) or float(value) != int(float(value)) or value < 1):
        raise SimError(400, f"Invalid autoShutdownTimeout {value}: a whole number of hours", "bad_request")


def ip_json(ip: PsIp) -> dict[str, Any]:
    return {
        "ip": ip.ip,
        "region": ip.region,
        "dtCreated": iso(ip.created_at),
        "assignedMachineId": ip.assigned_machine_id,
    }


def snapshot_json(s: PsSnapshot) -> dict[str, Any]:
    return {
        "id": s.id,
        "name": s.name,
        "machineId": s.machine_id,
        "isAutoSnapshot": s.is_auto_snapshot,
        "dtCreated": iso(s.created_at),
    }


def script_json(s: PsScript) -> dict[str, Any]:
    return {
        "id": s.id,
        "name": s.name,
        "description": s.description,
        "script": s.script,
        "isEnabled": s.is_enabled,
        "isRunOnce": s.is_run_once,
        "assignedMachineIds": s.assigned_machine_ids,
        "dtCreated": iso(s.created_at),
        "dtDeleted": None,
    }


class PaperspaceApi(Api):
    platform = "paperspace"

    def __init__(self, sim: Simulator) -> None:
        super().__init__(sim)
        add_control_routes(self)
        r = self.route
        r("GET", "/v1/machines", self.list_machines)
        r("POST", "/v1/machines", self.create_machine)
        r("GET", "/v1/machines/{id}", lambda q: self._machine(pe.get_machine(sim, q.params["id"])))
        r("PUT", "/v1/machines/{id}", self.update_machine)
        r("DELETE", "/v1/machines/{id}", lambda q: self._mutation(*pe.delete(sim, q.params["id"])))
        r("PATCH", "/v1/machines/{id}/start", lambda q: self._mutation(*pe.start(sim, q.params["id"])))
        r("PATCH", "/v1/machines/{id}/stop", lambda q: self._mutation(*pe.stop(sim, q.params["id"])))
        r("PATCH", "/v1/machines/{id}/restart", lambda q: self._mutation(*pe.restart(sim, q.params["id"])))
        r("GET", "/v1/machine-events", self.list_events)
        r("GET", "/v1/machine-events/{id}", self.get_event)
        r(
            "GET",
            "/v1/public-ips",
            lambda q: self._list(q, [ip_json(i) for i in sim.state.ips.values() if i.ended_at is None]),
        )
        r(
            "POST",
            "/v1/public-ips",
            lambda q: Response(200, ip_json(pe.claim_ip(sim, str(q.json().get("region") or "")))),
        )
        r("PUT", "/v1/public-ips/{ip}", self.assign_ip)
        r("DELETE", "/v1/public-ips/{ip}", self.release_ip)
        r("GET", "/v1/snapshots", self.list_snapshots)
        r("POST", "/v1/snapshots", self.create_snapshot)
        r(
            "GET",
            "/v1/snapshots/{id}",
            lambda q: Response(200, snapshot_json(pe.get_snapshot(sim, q.params["id"]))),
        )
        r("DELETE", "/v1/snapshots/{id}", self.delete_snapshot)
        r(
            "GET",
            "/v1/startup-scripts",
            lambda q: self._list(q, [script_json(s) for s in sim.state.scripts.values()]),
        )
        r("POST", "/v1/startup-scripts", self.create_script)
        r(
            "GET",
            "/v1/startup-scripts/{id}",
            lambda q: Response(200, script_json(self._script(q.params["id"]))),
        )
        r("DELETE", "/v1/startup-scripts/{id}", self.delete_script)
        r("GET", "/v1/machine-availability", self.availability)
        r("GET", "/v1/auth/session", self.session)
        from gpujob.sim.account_objects import add_paperspace_routes

        add_paperspace_routes(self)

    def error(
        self, status: int, message: str, kind: str = "error", headers: dict[str, str] | None = None
    ) -> Response:
        return Response(
            status, {"code": CODES.get(status, "INTERNAL_SERVER_ERROR"), "message": message}, headers or {}
        )

    def authorized(self, req: Request) -> bool:
        return req.headers.get("authorization", "") == f"Bearer {self.sim.options.paperspace_api_key}"

    def _list(self, req: Request, rows: list[dict[str, Any]]) -> Response:
        with self.sim.lock:
            return paginate(req, rows)

    def _machine(self, m: PsMachine) -> Response:
        with self.sim.lock:
            return Response(200, machine_json(self.sim, m))

    def _mutation(self, m: PsMachine, ev: PsEvent) -> Response:
        with self.sim.lock:
            return Response(200, {"data": machine_json(self.sim, m), "event": event_json(ev)})

    def list_machines(self, req: Request) -> Response:
        with self.sim.lock:
            rows = [machine_json(self.sim, m) for m in self.sim.state.machines.values() if m.ended_at is None]
        for key, field in (("name", "name"), ("machineType", "machineType")):
            if req.arg(key):
                rows = [r for r in rows if r[field] == req.arg(key)]
        if req.arg("region"):
            want = pe.REGIONS[pe.region_id(req.arg("region") or "")]
            rows = [r for r in rows if r["region"] == want]
        return paginate(req, rows)

    def create_machine(self, req: Request) -> Response:
        body = req.json()
        if not isinstance(body, dict):
            raise SimError(400, "Invalid request body", "bad_request")
        unknown = [k for k in body if k not in CREATE_FIELDS]
        missing = [k for k in ("name", "machineType", "templateId", "diskSize", "region") if k not in body]
        if unknown or missing:
            raise SimError(
                400,
                "Invalid input: "
                + "; ".join([f"unknown field {k}" for k in unknown] + [f"{k} is required" for k in missing]),
                "bad_request",
            )
        if body["diskSize"] not in DISK_SIZES:
            raise SimError(
                400, f"Invalid diskSize {body['diskSize']}: one of {sorted(DISK_SIZES)}", "bad_request"
            )
        mtype = str(body["machineType"])
        if self.sim.ps_prices.gpu(mtype) is None:
            raise SimError(400, f"Invalid machine type: {mtype}", "bad_request")
        from gpujob.sim.account_objects import template_exists

        if not template_exists(self.sim, str(body["templateId"])):
            raise SimError(404, f"Template not found: {body['templateId']}", "not_found")
        whole_hours(body.get("autoShutdownTimeout"))
        if body.get("autoShutdownEnabled") and not body.get("autoShutdownTimeout"):
            raise SimError(
                400, "autoShutdownTimeout is required when autoShutdownEnabled is true", "bad_request"
            )
        ip_type = body.get("publicIpType") or "dynamic"
        if ip_type not in ("static", "dynamic", "none"):
            raise SimError(400, f"Invalid publicIpType: {ip_type}", "bad_request")
        m = PsMachine(
            id="ps" + new_id(8),
            name=body["name"],
            machine_type=mtype,
            template_id=body["templateId"],
            disk_size=int(body["diskSize"]),
            region=pe.region_id(str(body["region"])),
            public_ip_type=ip_type,
            auto_shutdown_enabled=bool(body.get("autoShutdownEnabled")),
            auto_shutdown_timeout=body.get("autoShutdownTimeout"),
            auto_shutdown_force=body.get("autoShutdownForce"),
            startup_script_id=body.get("startupScriptId"),
        )
        if body.get("networkId"):
            self._join(m, str(body["networkId"]))
        created = self._mutation(*pe.create_machine(self.sim, m, bool(body.get("startOnCreate", True))))
        if self.sim.faults.take("create_500_but_created", platform="paperspace") is not None:
            return self.error(500, "Internal server error", "injected")  # ... and the machine exists
        return created

    def _join(self, m: PsMachine, network_id: str) -> None:
        """networkId on create: the machine gets the next address of that private network (privateIp)."""
        with self.sim.lock:
            n = self.sim.state.networks.get(network_id)
            if n is None:
                raise SimError(404, f"Private network not found: {network_id}", "not_found")
            if n.region != m.region:
                raise SimError(400, "The machine must be in its private network's region.", "bad_request")
            taken = sum(1 for x in self.sim.state.machines.values() if x.network_id == n.id)
            m.network_id, m.private_ip = n.id, private_ip(64, n.net, taken + 1)

    def update_machine(self, req: Request) -> Response:
        body = req.json()
        sim = self.sim
        with sim.lock:
            m = pe.get_machine(sim, req.params["id"])
            if ("machineType" in body or "diskSize" in body) and m.state != "off":
                raise SimError(
                    400, "The machine must be off to change its machine type or disk size.", "conflict"
                )
            if "diskSize" in body and int(body["diskSize"]) < m.disk_size:
                raise SimError(400, "Disk size cannot be decreased.", "bad_request")
            if "diskSize" in body and body["diskSize"] not in DISK_SIZES:
                raise SimError(
                    400, f"Invalid diskSize {body['diskSize']}: one of {sorted(DISK_SIZES)}", "bad_request"
                )
            whole_hours(body.get("autoShutdownTimeout"))
            sim.accrue(m)
            # The platform quirk (REFERENCE 0.6): on a machine whose auto-shutdown is already on, a new
            # timeout / force does not take; only disable, then enable with the new values, does.
            sticky = bool(m.auto_shutdown_enabled) and body.get("autoShutdownEnabled") is not False
            for key, attr in (
                ("name", "name"),
                ("machineType", "machine_type"),
                ("diskSize", "disk_size"),
                ("autoShutdownEnabled", "auto_shutdown_enabled"),
                ("autoShutdownTimeout", "auto_shutdown_timeout"),
                ("autoShutdownForce", "auto_shutdown_force"),
            ):
                if key in body and not (sticky and key in ("autoShutdownTimeout", "autoShutdownForce")):
                    setattr(m, attr, body[key])
            if body.get("publicIpType") and body["publicIpType"] != m.public_ip_type:
                m.public_ip_type = body["publicIpType"]
                if m.public_ip_type == "static" and m.public_ip is None:
                    ip = pe.claim_ip(sim, m.region)
                    pe.assign_ip(sim, ip.ip, m.id)
            m.modified_at = sim.now()
            ev = pe.new_event(sim, "vm-upgrade", m.id)
            ev.state, ev.finished_at = "done", sim.now()
            sim.save()
        return self._mutation(m, ev)

    def list_events(self, req: Request) -> Response:
        mid = req.arg("machineId")
        with self.sim.lock:
            rows = [event_json(e) for e in self.sim.state.events.values() if not mid or e.machine_id == mid]
        return paginate(req, rows)

    def get_event(self, req: Request) -> Response:
        with self.sim.lock:
            ev = self.sim.state.events.get(req.params["id"])
            if ev is None:
                raise SimError(404, "Machine event not found", "not_found")
            return Response(200, event_json(ev))

    def assign_ip(self, req: Request) -> Response:
        body = req.json()
        if "machineId" not in body:
            raise SimError(400, "machineId is required (null to unassign)", "bad_request")
        return Response(200, ip_json(pe.assign_ip(self.sim, req.params["ip"], body["machineId"])))

    def release_ip(self, req: Request) -> Response:
        pe.release_ip(self.sim, req.params["ip"])
        return Response(200, {"ip": req.params["ip"]})

    def list_snapshots(self, req: Request) -> Response:
        mid = req.arg("machineId")
        rows = [
            snapshot_json(s)
            for s in self.sim.state.snapshots.values()
            if s.ended_at is None and (not mid or s.machine_id == mid)
        ]
        return self._list(req, rows)

    def create_snapshot(self, req: Request) -> Response:
        body = req.json()
        if not body.get("machineId") or not body.get("name"):
            raise SimError(400, "machineId and name are required", "bad_request")
        snap, ev = pe.create_snapshot(self.sim, body["machineId"], body["name"])
        return Response(200, {"data": snapshot_json(snap), "event": event_json(ev)})

    def delete_snapshot(self, req: Request) -> Response:
        snap, ev = pe.delete_snapshot(self.sim, req.params["id"])
        return Response(200, {"data": snapshot_json(snap), "event": event_json(ev)})

    def _script(self, sid: str) -> PsScript:
        s = self.sim.state.scripts.get(sid)
        if s is None:
            raise SimError(404, "Startup script not found", "not_found")
        return s

    def create_script(self, req: Request) -> Response:
        body = req.json()
        if not isinstance(body.get("name"), str) or not isinstance(body.get("script"), str):
            raise SimError(400, "name and script are required", "bad_request")
        s = pe.create_script(
            self.sim,
            body["name"],
            body["script"],
            bool(body.get("isRunOnce", False)),
            body.get("description"),
        )
        return Response(200, script_json(s))

    def delete_script(self, req: Request) -> Response:
        with self.sim.lock:
            s = self._script(req.params["id"])
            del self.sim.state.scripts[s.id]
            self.sim.save()
        return Response(200, script_json(s))

    def availability(self, req: Request) -> Response:
        mtype, region = req.arg("machineType"), req.arg("region")
        if not mtype or not region:
            raise SimError(400, "machineType and region are required", "bad_request")
        g = self.sim.ps_prices.gpu(mtype)
        rid = pe.region_id(region)
        offered = g is not None and (not g.regions or rid in [r.lower() for r in g.regions])
        blocked = self.sim.faults.peek("capacity", platform="paperspace", gpu=mtype, region=rid) is not None
        return Response(200, {"available": bool(offered and not blocked)})

    def session(self, req: Request) -> Response:
        team = {"id": "tsim0001", "name": "simulator", "namespace": "simulator", "isUserTeam": True}
        user = {
            "id": "usim0001",
            "email": "sim@localhost",
            "firstName": "Sim",
            "lastName": "User",
            "teamMemberships": [{"team": team, "isOwner": True, "isAdmin": True}],
        }
        return Response(
            200,
            {
                "user": user,
                "team": {
                    "id": team["id"],
                    "namespace": team["namespace"],
                    "isPrivate": False,
                    "maxMachines": 100,
                },
            },
        )
