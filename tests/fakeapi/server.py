"""An independent fake of the real RunPod v2 and Paperspace /v1 APIs, for `gpujob apply` / `gpujob plan`
run as subprocesses. Built only from the spec-derived bodies in tests/fixtures (the v2 spec's own
examples, the Paperspace CLI spec transcriptions) and written without looking at gpujob/sim: where the
simulator and this fake disagree, the fixtures decide.

What it does on purpose, because the real APIs do: a machine object has no templateId and reports its
disk as storageTotal bytes a little under the diskSize asked for; templateId must be a template id; lists
come in small pages (RunPod `pagination.nextCursor`, Paperspace `after`/`nextPage`); objects move one
lifecycle step per read; every mutation answers Paperspace's {data, event}.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fixtures.bodies import ps, v2_errors, v2_example, v2_schema

RP_KEY = "fake-rp-key-1b2c"
PS_KEY = "fake-ps-key-9e8d"
PAGE = 1  # tiny pages, so every listing has to be followed to its end
NOW = "2026-08-20T12:00:00Z"
# MachineCreate properties, as transcribed from Paperspace/cli api/openapi.ts "machines-create".
PS_CREATE = {
    "accessorIds", "autoShutdownEnabled", "autoShutdownForce", "autoShutdownTimeout", "autoSnapshotEnabled",
    "autoSnapshotFrequency", "autoSnapshotSaveCount", "diskSize", "emailPassword", "enableNvlink", "machineType",
    "name", "networkId", "publicIpType", "region", "restorePointEnabled", "restorePointFrequency", "startOnCreate",
    "startupScriptId", "takeInitialSnapshot", "templateId",
}  # fmt: skip
PS_REQUIRED = {"diskSize", "machineType", "name", "region", "templateId"}
DISK_SIZES = {50, 100, 250, 500, 1000, 2000}  # Metaphysic's validator (REFERENCE §2.3)


@dataclass
class Reply:
    status: int
    body: Any = None


@dataclass
class FakeApis:
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    scripts: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    answers: dict[str, Reply] = field(default_factory=dict)  # path -> a canned answer to any GET of it
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)

    # --- plumbing ---------------------------------------------------------------------------------
    def handle(self, method: str, url: str, headers: dict[str, str], raw: bytes) -> Reply:
        parts = urlsplit(url)
        path, query = parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}
        body = json.loads(raw) if raw.strip() else None
        with self.lock:
            self.requests.append((method, path, body))
            if method == "GET" and path in self.answers:
                return self.answers[path]
            if path.startswith("/v1/"):
                if headers.get("authorization") != f"Bearer {PS_KEY}":
                    return Reply(401, {"code": "UNAUTHORIZED", "message": "Invalid API key"})
                return self._paperspace(method, path[3:], query, body)
            if headers.get("authorization") != f"Bearer {RP_KEY}":
                return Reply(401, {"title": "Unauthorized", "status": 401, "detail": "missing bearer token"})
            if path == "/graphql":
                return self._graphql(body or {})
            return self._runpod(method, path, query, body)

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):08d}"

    # --- RunPod v2 --------------------------------------------------------------------------------
    def _runpod(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        if path == "/v2/pods" and method == "GET":
            return _v2_page("pods", list(self.pods.values()), query)
        if path == "/v2/pods" and method == "POST":
            return self._create_pod(body)
        m = re.fullmatch(r"/v2/pods/([^/]+)(/action)?", path)
        if m:
            pod = self.pods.get(m.group(1))
            if pod is None:
                return _problem(404, "pod not found")
            if m.group(2):
                return self._pod_action(pod, (body or {}).get("action"))
            if method == "GET":
                _advance_pod(pod, next(self._ids))
                return Reply(200, pod)
            if method == "PATCH":
                pod.update({k: v for k, v in (body or {}).items() if k != "templateId"})
                return Reply(200, pod)
            if method == "DELETE":
                del self.pods[pod["id"]]
                return Reply(204)
        for list_path, key in (("network-volumes", "networkVolumes"), ("templates", "templates"),
                               ("registries", "registries")):  # fmt: skip
            if path == f"/v2/{list_path}" and method == "GET":
                return _v2_page(key, [], query)
        if path in ("/v2/billing/pods", "/v2/billing/network-volumes") and method == "GET":
            window = {
                "startTime": "2026-07-21T00:00:00Z",
                "endTime": "2026-08-21T00:00:00Z",
                "bucketSize": "day",
            }
            totals = {"totalAmount": 0.0}
            return Reply(
                200, {"records": [], "metadata": {"query": window, "recordCount": 0, "totals": totals}}
            )
        if path == "/v2/catalog/gpus" and method == "GET":
            return Reply(200, v2_example("GET", "/v2/catalog/gpus"))
        return _problem(404, f"no route {method} {path}")

    def _create_pod(self, body: Any) -> Reply:
        problems = v2_errors(body, v2_schema("CreatePodRequest"))
        if problems:
            return Reply(422, {"title": "Unprocessable Entity", "status": 422, "detail": "Request validation failed.",
                               "errors": problems})  # fmt: skip
        pod = v2_example("POST", "/v2/pods", "201")
        pod.update(
            id=self._id("pod"), name=body["name"], image=body.get("image", pod["image"]),
            gpu={"id": body["gpu"]["id"], "count": body["gpu"].get("count", 1)}, cloud=body.get("cloud", "SECURE"),
            dataCenterId=(body.get("dataCenterIds") or [pod["dataCenterId"]])[0], ports=body.get("ports", pod["ports"]),
            env=body.get("env", {}), mounts=body.get("mounts", {}), disk=body.get("disk", pod["disk"]),
            template=None, createdAt=NOW, ssh={"proxy": None, "direct": None}, runtime=None,
        )  # fmt: skip
        self.pods[pod["id"]] = pod
        return Reply(201, pod)

    def _pod_action(self, pod: dict[str, Any], action: str | None) -> Reply:
        if action == "terminate":
            del self.pods[pod["id"]]
            return Reply(204)
        if action == "stop":
            pod.update(
                status="EXITED", actions=["start", "terminate"], cost=0.0, runtime=None, startedAt=None
            )
            pod["ssh"]["direct"] = None
        elif action == "start":
            pod.update(status="PROVISIONING", actions=["stop", "terminate"])
        else:
            return _problem(422, "Request validation failed.")
        return Reply(200, pod)

    def _graphql(self, body: dict[str, Any]) -> Reply:
        if "myself" in str(body.get("query")):
            return Reply(
                200,
                {"data": {"myself": {"clientBalance": 41.5, "currentSpendPerHr": 0.44, "spendLimit": 80}}},
            )
        if "gpuTypes" in str(body.get("query")):
            floor = {"minimumBidPrice": 0.2, "uninterruptablePrice": 0.44, "stockStatus": "High"}
            gpus = [
                {"id": g["id"], "lowestPrice": floor} for g in v2_example("GET", "/v2/catalog/gpus")["gpus"]
            ]
            return Reply(200, {"data": {"gpuTypes": gpus}})
        return Reply(200, {"errors": [{"message": "not in this fake"}], "data": None})

    # --- Paperspace /v1 ---------------------------------------------------------------------------
    def _paperspace(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        listings = {
            "/os-templates": ps("os-templates")["items"],
            "/custom-templates": ps("custom-templates")["items"],
            "/public-ips": [], "/snapshots": [], "/shared-drives": [], "/startup-scripts": self.scripts,
            "/machines": list(self.machines.values()),
        }  # fmt: skip
        if method == "GET" and path in listings:
            return _ps_page(listings[path], query)
        if method == "POST" and path == "/machines":
            return self._create_machine(body or {})
        if method == "POST" and path == "/startup-scripts":
            script = {"id": self._id("s"), "name": body["name"], "description": None, "isEnabled": True,
                      "isRunOnce": bool(body.get("isRunOnce")), "assignedMachineIds": [], "dtCreated": NOW}  # fmt: skip
            self.scripts.append(script)
            return Reply(200, script)
        if path == "/machine-availability":
            return Reply(200, {"available": True})
        m = re.fullmatch(r"/machine-events/([^/]+)", path)
        if m and m.group(1) in self.events:
            ev = self.events[m.group(1)]
            ev.update(state="done", dtStarted=NOW, dtFinished=NOW)
            return Reply(200, ev)
        m = re.fullmatch(r"/machines/([^/]+)(?:/(start|stop))?", path)
        if m and m.group(1) in self.machines:
            return self._machine(method, self.machines[m.group(1)], m.group(2), body)
        return Reply(404, {"code": "NOT_FOUND", "message": f"Not found: {method} {path}"})

    def _event(self, name: str, machine_id: str) -> dict[str, Any]:
        ev = ps("machine-event-cancelled")
        ev.update(
            id=self._id("ev"), name=name, machineId=machine_id, state="new", dtStarted=None, dtFinished=None
        )
        self.events[ev["id"]] = ev
        return dict(ev)

    def _create_machine(self, body: dict[str, Any]) -> Reply:
        unknown, missing = set(body) - PS_CREATE, PS_REQUIRED - set(body)
        if unknown or missing:
            return Reply(
                400,
                {"code": "BAD_REQUEST", "message": f"unknown {sorted(unknown)}, missing {sorted(missing)}"},
            )
        templates = {t["id"] for t in ps("os-templates")["items"] + ps("custom-templates")["items"]}
        if body["templateId"] not in templates:
            return Reply(404, {"code": "NOT_FOUND", "message": "Template not found"})
        if body["diskSize"] not in DISK_SIZES or not isinstance(body.get("autoShutdownTimeout", 1), int):
            return Reply(400, {"code": "BAD_REQUEST", "message": "invalid diskSize or autoShutdownTimeout"})
        machine = ps("machine")
        machine.update(
            id=self._id("ps"), name=body["name"], machineType=body["machineType"], region="East Coast (NY2)",
            state="provisioning", publicIp=None, publicIpType=body.get("publicIpType", "dynamic"),
            autoShutdownEnabled=bool(body.get("autoShutdownEnabled")),
            autoShutdownTimeout=body.get("autoShutdownTimeout"), autoShutdownForce=body.get("autoShutdownForce"),
            # The disk as the OS sees it: a bit under what was asked (so it must never be diffed).
            storageTotal=str(int(body["diskSize"] * 0.93 * 2**30)), storageUsed="0",
            accelerators=[{"count": 1, "memory": None, "name": body["machineType"]}], dtCreated=NOW,
        )  # fmt: skip
        machine["_start"] = body.get("startOnCreate", True)
        self.machines[machine["id"]] = machine
        return Reply(200, {"data": _public(machine), "event": self._event("create", machine["id"])})

    def _machine(self, method: str, m: dict[str, Any], action: str | None, body: Any) -> Reply:
        if action is not None:
            if method != "PATCH" or body != {}:
                return Reply(400, {"code": "BAD_REQUEST", "message": "expected PATCH with {}"})
            m["state"] = {"start": "starting", "stop": "stopping"}[action]
            return Reply(200, {"data": _public(m), "event": self._event(action, m["id"])})
        if method == "GET":
            nxt = {
                "provisioning": "starting" if m["_start"] else "off",
                "starting": "ready",
                "stopping": "off",
            }
            m["state"] = nxt.get(m["state"], m["state"])
            if m["state"] == "ready" and not m["publicIp"] and m["publicIpType"] != "none":
                m["publicIp"] = f"203.0.113.{next(self._ids) % 250 + 1}"
            if m["state"] == "off" and m["publicIpType"] == "dynamic":
                m["publicIp"] = None
            return Reply(200, _public(m))
        if method == "PUT":
            if "diskSize" in (body or {}) and m["state"] != "off":
                return Reply(400, {"code": "BAD_REQUEST", "message": "The machine must be off."})
            m.update({k: v for k, v in (body or {}).items() if k != "diskSize"})
            return Reply(200, {"data": _public(m), "event": self._event("vm-upgrade", m["id"])})
        if method == "DELETE":
            del self.machines[m["id"]]
            return Reply(200, {"data": _public(m), "event": self._event("deactivate", m["id"])})
        return Reply(405, {"code": "METHOD_NOT_SUPPORTED", "message": method})


def _public(m: dict[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in m.items() if not k.startswith("_")}


def _advance_pod(pod: dict[str, Any], n: int) -> None:
    nxt = {"PROVISIONING": "STARTING", "STARTING": "RUNNING"}.get(pod["status"])
    if nxt is None:
        return
    pod["status"] = nxt
    if nxt == "RUNNING":
        port = 40000 + n
        pod.update(actions=["stop", "restart", "terminate"], startedAt=NOW,
                   runtime={"uptime": 1, "ports": [{"private": 22, "public": port, "type": "tcp", "ip": "203.0.113.7"}]})  # fmt: skip
        pod["ssh"]["direct"] = {"host": "203.0.113.7", "port": port, "username": "root",
                                "command": f"ssh root@203.0.113.7 -p {port}"}  # fmt: skip


def _problem(status: int, detail: str) -> Reply:
    titles = {404: "Not Found", 422: "Unprocessable Entity"}
    return Reply(status, {"title": titles.get(status, "Error"), "status": status, "detail": detail})


def _v2_page(key: str, rows: list[dict[str, Any]], query: dict[str, str]) -> Reply:
    start = int(query.get("cursor", "0"))
    more = start + PAGE < len(rows)
    return Reply(200, {key: rows[start : start + PAGE],
                       "pagination": {"nextCursor": str(start + PAGE) if more else None, "hasNextPage": more}})  # fmt: skip


def _ps_page(rows: list[dict[str, Any]], query: dict[str, str]) -> Reply:
    if "name" in query:
        rows = [r for r in rows if r.get("name") == query["name"]]
    start = int(query.get("after", "0"))
    more = start + PAGE < len(rows)
    page = [_public(r) for r in rows[start : start + PAGE]]
    return Reply(200, {"items": page, "hasMore": more, **({"nextPage": str(start + PAGE)} if more else {})})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _any(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = self.server.apis.handle(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw
        )
        payload = b"" if reply.body is None else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        if payload:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # gpujob reads the platforms concurrently: with socketserver's backlog of 5 a burst of connects
    # overflowed it, and each dropped SYN cost the client a one-second retransmit.
    request_queue_size = 256

    def __init__(self, apis: FakeApis) -> None:
        self.apis = apis
        super().__init__(("127.0.0.1", 0), _Handler)


class RunningFake:
    def __init__(self) -> None:
        self.apis = FakeApis()
        self._server = _Server(self.apis)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.start()
        url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.env = {
            "GPUJOB_RUNPOD_API_URL": f"{url}/v2",
            "GPUJOB_RUNPOD_GRAPHQL_URL": f"{url}/graphql",
            "GPUJOB_PAPERSPACE_API_URL": f"{url}/v1",
            "RUNPOD_API_KEY": RP_KEY,
            "PAPERSPACE_API_KEY": PS_KEY,
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
