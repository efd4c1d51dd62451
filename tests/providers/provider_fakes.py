"""Stateful respx fakes of RunPod v2 + GraphQL and Paperspace v1, shaped after the OpenAPI examples and
REFERENCE.md. Each GET of a moving resource advances it one step, so waits finish deterministically."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import respx

from tests.fixtures.bodies import ps as ps_fixture

RUNPOD = "https://api.runpod.test"
PAPERSPACE = "https://api.paperspace.test/v1"
_ids = itertools.count(1)


def problem(status: int, detail: str, title: str = "Error") -> httpx.Response:
    body = {"title": title, "status": status, "detail": detail}
    return httpx.Response(status, json=body, headers={"content-type": "application/problem+json"})


class RunPodFake:
    def __init__(self, router: respx.Router) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.volumes: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.gql_calls: list[dict[str, Any]] = []
        self.start_noop = False  # a start that answers 200 and does nothing
        self.terminate_noop = False  # a terminate that answers 204 and leaves the pod
        self.zero_gpu_on_start = False
        self.min_bid = 0.2  # GraphQL lowestPrice.minimumBidPrice
        b = f"{RUNPOD}/v2"
        router.get(f"{b}/pods").mock(
            side_effect=lambda r: httpx.Response(200, json={"pods": list(self.pods.values())})
        )
        router.post(f"{b}/pods").mock(side_effect=self.create_pod)
        router.get(url__regex=rf"{b}/pods/(?P<pid>[^/]+)$").mock(side_effect=self.get_pod)
        router.patch(url__regex=rf"{b}/pods/(?P<pid>[^/]+)$").mock(side_effect=self.patch_pod)
        router.post(url__regex=rf"{b}/pods/(?P<pid>[^/]+)/action$").mock(side_effect=self.action)
        router.get(f"{b}/network-volumes").mock(
            side_effect=lambda r: httpx.Response(200, json={"networkVolumes": list(self.volumes.values())})
        )
        router.post(f"{b}/network-volumes").mock(side_effect=self.create_volume)
        router.get(url__regex=rf"{b}/network-volumes/(?P<vid>[^/]+)$").mock(side_effect=self.get_volume)
        router.patch(url__regex=rf"{b}/network-volumes/(?P<vid>[^/]+)$").mock(side_effect=self.patch_volume)
        router.delete(url__regex=rf"{b}/network-volumes/(?P<vid>[^/]+)$").mock(side_effect=self.delete_volume)
        router.get(f"{b}/templates").mock(return_value=httpx.Response(200, json={"templates": []}))
        router.get(f"{b}/registries").mock(return_value=httpx.Response(200, json={"registries": []}))
        router.get(f"{b}/catalog/gpus").mock(return_value=httpx.Response(200, json=CATALOG))
        router.post(f"{RUNPOD}/graphql").mock(side_effect=self.graphql)

    def new_pod(self, body: dict[str, Any], status: str = "PROVISIONING") -> dict[str, Any]:
        pid = f"pod{next(_ids):011d}"
        pod = {
            "id": pid,
            "name": body["name"],
            "image": body.get("image", ""),
            "args": "",
            "disk": body.get("disk", 50),
            "ports": body.get("ports", []),
            "env": body.get("env", {}),
            "registry": None,
            "status": status,
            "actions": ["stop", "terminate"],
            "mounts": body.get("mounts", {}),
            "gpu": body.get("gpu"),
            "cloud": body.get("cloud", "SECURE"),
            "dataCenterId": (body.get("dataCenterIds") or ["US-KS-2"])[0],
            "cudaVersion": "12.8",
            "ssh": {"proxy": None, "direct": None},
            "template": None,
            "cost": 0.44,
            "locked": False,
            "globalNetworking": {"enabled": False},
            "runtime": None,
            "createdAt": "2026-06-01T12:00:00Z",
            "startedAt": None,
        }
        self.pods[pid] = pod
        return pod

    def create_pod(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.created.append(body)
        return httpx.Response(201, json=self.new_pod(body))

    def _step(self, pod: dict[str, Any]) -> None:
        nxt = {"PROVISIONING": "STARTING", "STARTING": "RUNNING"}.get(pod["status"])
        if nxt:
            pod["status"] = nxt
        if pod["status"] == "RUNNING" and not pod["ssh"]["direct"]:
            pod["ssh"]["direct"] = {
                "host": "195.26.233.3",
                "port": 34446,
                "username": "root",
                "command": "ssh",
            }
            pod["startedAt"] = "2026-06-01T12:01:00Z"
            pod["runtime"] = {"uptime": 1}

    def get_pod(self, request: httpx.Request, pid: str) -> httpx.Response:
        pod = self.pods.get(pid)
        if pod is None:
            return problem(404, "pod not found", "Not Found")
        self._step(pod)
        return httpx.Response(200, json=pod)

    def patch_pod(self, request: httpx.Request, pid: str) -> httpx.Response:
        pod = self.pods[pid]
        pod.update(json.loads(request.content))
        return httpx.Response(200, json=pod)

    def action(self, request: httpx.Request, pid: str) -> httpx.Response:
        pod = self.pods.get(pid)
        if pod is None:
            return problem(404, "pod not found", "Not Found")
        act = json.loads(request.content)["action"]
        if act == "terminate":
            if not self.terminate_noop:
                del self.pods[pid]
            return httpx.Response(204)
        if act == "stop":
            pod.update(status="EXITED", cost=0.0, runtime=None)
            pod["ssh"]["direct"] = None
        elif act == "start" and not self.start_noop:
            pod["status"] = "PROVISIONING"
            if self.zero_gpu_on_start:
                pod["gpu"] = {"id": pod["gpu"]["id"], "count": 0}
        return httpx.Response(200, json=pod)

    def create_volume(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        vid = f"vol{next(_ids):07d}"
        self.volumes[vid] = {
            "id": vid,
            "name": body["name"],
            "size": body["size"],
            "dataCenter": body["dataCenter"],
            "type": body.get("type", "STANDARD"),
        }
        return httpx.Response(201, json=self.volumes[vid])

    def get_volume(self, request: httpx.Request, vid: str) -> httpx.Response:
        if vid not in self.volumes:
            return problem(404, "network volume not found", "Not Found")
        return httpx.Response(200, json=self.volumes[vid])

    def patch_volume(self, request: httpx.Request, vid: str) -> httpx.Response:
        size = json.loads(request.content)["size"]
        if size < self.volumes[vid]["size"]:
            return problem(400, "size decrease attempted", "Bad Request")
        self.volumes[vid]["size"] = size
        return httpx.Response(200, json=self.volumes[vid])

    def delete_volume(self, request: httpx.Request, vid: str) -> httpx.Response:
        if self.volumes.pop(vid, None) is None:
            return problem(404, "network volume not found", "Not Found")
        return httpx.Response(204)

    def graphql(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.gql_calls.append(body)
        inp = body["variables"].get("input") or {}
        if "podRentInterruptable" in body["query"]:
            env = {e["key"]: e["value"] for e in inp.get("env", [])}
            pod = self.new_pod(
                {
                    "name": inp["name"],
                    "image": inp.get("imageName", ""),
                    "env": env,
                    "gpu": {"id": inp["gpuTypeId"], "count": inp["gpuCount"]},
                    "cloud": inp.get("cloudType", "SECURE"),
                    "ports": inp["ports"].split(","),
                }
            )
            return httpx.Response(
                200,
                json={
                    "data": {
                        "podRentInterruptable": {
                            "id": pod["id"],
                            "desiredStatus": "RUNNING",
                            "costPerHr": "0.20",
                        }
                    }
                },
            )
        if "gpuTypes" in body["query"]:  # the spot floor (runpod-python queries/gpus.py selection)
            floor = {"minimumBidPrice": self.min_bid, "uninterruptablePrice": 0.44, "stockStatus": "High"}
            gpus = [{"id": g["id"], "lowestPrice": floor} for g in CATALOG["gpus"]]
            return httpx.Response(200, json={"data": {"gpuTypes": gpus}})
        if "podBidResume" in body["query"]:
            pod = self.pods[inp["podId"]]
            pod["status"] = "PROVISIONING"
            return httpx.Response(
                200, json={"data": {"podBidResume": {"id": pod["id"], "desiredStatus": "RUNNING"}}}
            )
        return httpx.Response(200, json={"errors": [{"message": "unknown operation"}], "data": None})


CATALOG = {
    "gpus": [
        {
            "id": "NVIDIA GeForce RTX 4090",
            "name": "RTX 4090",
            "pool": "ADA_24",
            "manufacturer": "NVIDIA",
            "memory": 24,
            "secure": True,
            "community": True,
            "price": {"secure": 0.44, "community": 0.31, "serverless": 1.1},
            "maxCount": {"secure": 8, "community": 4},
            "availability": "HIGH",
            "dataCenters": [{"id": "US-KS-2", "name": "US Kansas 2", "availability": "HIGH"}],
        },
        {
            "id": "NVIDIA H100 80GB HBM3",
            "name": "H100 SXM",
            "pool": None,
            "manufacturer": "NVIDIA",
            "memory": 80,
            "secure": True,
            "community": False,
            "price": {"secure": 2.99, "community": 0},
            "maxCount": {"secure": 8, "community": 0},
            "availability": "NONE",
        },
    ]
}


class PaperspaceFake:
    def __init__(self, router: respx.Router) -> None:
        self.machines: dict[str, dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.scripts: dict[str, dict[str, Any]] = {}
        self.ips: dict[str, dict[str, Any]] = {}
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.available = True
        self.start_says_starting = False
        self.puts: list[dict[str, Any]] = []
        self.event_ends: dict[str, Any] | None = None  # how polled events end (a fixture event body)
        b = PAPERSPACE
        router.get(f"{b}/machines").mock(side_effect=lambda r: self._page(r, list(self.machines.values())))
        router.post(f"{b}/machines").mock(side_effect=self.create_machine)
        router.get(url__regex=rf"{b}/machines/(?P<mid>[^/]+)$").mock(side_effect=self.get_machine)
        router.put(url__regex=rf"{b}/machines/(?P<mid>[^/]+)$").mock(side_effect=self.update_machine)
        router.delete(url__regex=rf"{b}/machines/(?P<mid>[^/]+)$").mock(side_effect=self.delete_machine)
        router.patch(url__regex=rf"{b}/machines/(?P<mid>[^/]+)/(?P<act>start|stop|restart)$").mock(
            side_effect=self.action
        )
        router.get(url__regex=rf"{b}/machine-events/(?P<eid>[^/]+)$").mock(side_effect=self.get_event)
        router.get(f"{b}/machine-availability").mock(
            side_effect=lambda r: httpx.Response(200, json={"available": self.available})
        )
        router.post(f"{b}/startup-scripts").mock(side_effect=self.create_script)
        router.get(f"{b}/startup-scripts").mock(
            side_effect=lambda r: self._page(r, list(self.scripts.values()))
        )
        router.delete(url__regex=rf"{b}/startup-scripts/(?P<sid>[^/]+)$").mock(side_effect=self.delete_script)
        router.get(f"{b}/public-ips").mock(side_effect=lambda r: self._page(r, list(self.ips.values())))
        router.post(f"{b}/public-ips").mock(side_effect=self.claim_ip)
        router.put(url__regex=rf"{b}/public-ips/(?P<ip>[^/]+)$").mock(side_effect=self.assign_ip)
        router.delete(url__regex=rf"{b}/public-ips/(?P<ip>[^/]+)$").mock(side_effect=self.release_ip)
        router.get(f"{b}/snapshots").mock(side_effect=lambda r: self._page(r, list(self.snapshots.values())))
        router.delete(url__regex=rf"{b}/snapshots/(?P<sid>[^/]+)$").mock(side_effect=self.delete_snapshot)
        router.get(f"{b}/custom-templates").mock(side_effect=lambda r: self._page(r, []))
        router.get(f"{b}/os-templates").mock(
            side_effect=lambda r: self._page(r, ps_fixture("os-templates")["items"])
        )
        router.get(f"{b}/shared-drives").mock(side_effect=lambda r: self._page(r, []))

    def _page(self, request: httpx.Request, items: list[dict[str, Any]]) -> httpx.Response:
        name = request.url.params.get("name")
        if name:
            items = [i for i in items if i.get("name") == name]
        return httpx.Response(200, json={"items": items, "hasMore": False, "nextPage": None})

    def _event(self, name: str, machine_id: str | None) -> dict[str, Any]:
        eid = f"ev{next(_ids)}"
        # New events finish on their second read, like a real async operation.
        self.events[eid] = {
            "id": eid,
            "name": name,
            "state": "new",
            "machineId": machine_id,
            "error": None,
            "dtCreated": "2026-06-01T12:00:00Z",
            "dtStarted": None,
            "dtFinished": None,
        }
        return self.events[eid]

    def _finish_events(self) -> None:
        for ev in self.events.values():
            if self.event_ends is None:
                ev.update(state="done", dtFinished="2026-06-01T12:00:05Z")

    def get_event(self, request: httpx.Request, eid: str) -> httpx.Response:
        ev = self.events[eid]
        if self.event_ends is not None and ev["state"] != "done":
            ev.update({k: self.event_ends[k] for k in ("state", "error", "dtFinished")})
        else:
            ev.update(state="done", dtFinished="2026-06-01T12:00:05Z")
        return httpx.Response(200, json=ev)

    def delete_script(self, request: httpx.Request, sid: str) -> httpx.Response:
        gone = self.scripts.pop(sid, None)
        return httpx.Response(200, json=gone) if gone else httpx.Response(404, json={"error": "not found"})

    def create_script(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sid = f"scr{next(_ids)}"
        self.scripts[sid] = {
            "id": sid,
            "name": body["name"],
            "script": body["script"],
            "isRunOnce": body.get("isRunOnce", False),
            "isEnabled": True,
            "assignedMachineIds": [],
            "dtCreated": "2026-06-01T12:00:00Z",
        }
        return httpx.Response(200, json=self.scripts[sid])

    def create_machine(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        mid = f"ps{next(_ids):06d}"
        self.machines[mid] = {
            "id": mid,
            "name": body["name"],
            "state": "provisioning",
            "machineType": body["machineType"],
            "region": "East Coast (NY2)",
            "publicIp": None,
            "publicIpType": body.get("publicIpType", "dynamic"),
            "autoShutdownEnabled": body.get("autoShutdownEnabled", False),
            "autoShutdownTimeout": body.get("autoShutdownTimeout"),
            "storageTotal": str(body["diskSize"] * 1024**3),
            "ram": "8589938688",
            "usageRate": 0.76,
            "storageRate": 0.01,
            "dtCreated": "2026-06-01T12:00:00Z",
            "dtDeleted": None,
            "accelerators": [{"name": body["machineType"], "count": 1, "memory": "16"}],
            "_body": body,
        }
        return httpx.Response(200, json={"data": self._public(mid), "event": self._event("create", mid)})

    def _public(self, mid: str) -> dict[str, Any]:
        return {k: v for k, v in self.machines[mid].items() if not k.startswith("_")}

    def get_machine(self, request: httpx.Request, mid: str) -> httpx.Response:
        m = self.machines.get(mid)
        if m is None:
            return httpx.Response(404, json={"code": "NOT_FOUND", "message": "Machine not found"})
        self._finish_events()
        nxt = {"provisioning": "starting", "starting": "ready", "stopping": "off"}.get(m["state"])
        if nxt:
            m["state"] = nxt
        if m["state"] == "ready" and not m["publicIp"] and m["publicIpType"] != "none":
            m["publicIp"] = f"127.0.{next(_ids) % 250}.{next(_ids) % 250 + 1}"
        if m["state"] == "off" and m["publicIpType"] == "dynamic":
            m["publicIp"] = None
        return httpx.Response(200, json=self._public(mid))

    def update_machine(self, request: httpx.Request, mid: str) -> httpx.Response:
        body = json.loads(request.content)
        self.puts.append(dict(body))
        m = self.machines[mid]
        if "diskSize" in body:  # a resize: only while off, and the machine object shows it as storageTotal
            if m["state"] != "off":
                return httpx.Response(
                    400, json={"code": "BAD_REQUEST", "message": "The machine must be off."}
                )
            m["storageTotal"] = str(body.pop("diskSize") * 1024**3)
        m.update(body)
        return httpx.Response(200, json={"data": self._public(mid), "event": self._event("vm-upgrade", mid)})

    def delete_machine(self, request: httpx.Request, mid: str) -> httpx.Response:
        if mid not in self.machines:
            return httpx.Response(404, json={"code": "NOT_FOUND", "message": "Machine not found"})
        data = self.machines.pop(mid)
        return httpx.Response(200, json={"data": data, "event": self._event("deactivate", mid)})

    def action(self, request: httpx.Request, mid: str, act: str) -> httpx.Response:
        assert json.loads(request.content) == {}  # the official CLI sends an explicit {} body
        m = self.machines[mid]
        if act == "start" and self.start_says_starting:
            m["state"] = "starting"
            return httpx.Response(
                400, json={"code": "BAD_REQUEST", "message": "This machine is currently starting."}
            )
        m["state"] = {"start": "starting", "stop": "stopping", "restart": "starting"}[act]
        return httpx.Response(200, json={"data": self._public(mid), "event": self._event(act, mid)})

    def claim_ip(self, request: httpx.Request) -> httpx.Response:
        ip = f"184.105.{len(self.ips)}.{next(_ids) % 250}"
        self.ips[ip] = {
            "ip": ip,
            "region": json.loads(request.content)["region"],
            "dtCreated": "2026-06-01T12:00:00Z",
            "assignedMachineId": None,
        }
        return httpx.Response(200, json=self.ips[ip])

    def assign_ip(self, request: httpx.Request, ip: str) -> httpx.Response:
        self.ips[ip]["assignedMachineId"] = json.loads(request.content)["machineId"]
        return httpx.Response(200, json=self.ips[ip])

    def release_ip(self, request: httpx.Request, ip: str) -> httpx.Response:
        if self.ips.pop(ip, None) is None:
            return httpx.Response(404, json={"code": "NOT_FOUND", "message": "Public IP not found"})
        return httpx.Response(200, json={"ip": ip})

    def delete_snapshot(self, request: httpx.Request, sid: str) -> httpx.Response:
        snap = self.snapshots.pop(sid, None)
        if snap is None:
            return httpx.Response(404, json={"code": "NOT_FOUND", "message": "Snapshot not found"})
        return httpx.Response(200, json={"data": snap, "event": self._event("snapshot-delete", None)})
