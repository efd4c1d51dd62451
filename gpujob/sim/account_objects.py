"""Account objects that do not run but linger, so the audit can find them: RunPod v2 templates and
container-registry credentials; Paperspace custom templates, private networks and shared drives.

Shapes follow the v2 spec (lists wrapped as {"templates": []} / {"registries": []}, create 201,
delete 204) and the Paperspace /v1 reference (cursor pages, every success 200, template creation is
async and answers {data, event})."""

from __future__ import annotations

from typing import Any

from gpujob.sim import ps_engine as pe
from gpujob.sim.clock import iso
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Request, Response
from gpujob.sim.state import PsDrive, PsNetwork, PsTemplate, RpRegistry, RpTemplate, new_id
from gpujob.sim.wire import event_json, paginate, v2_page

TEMPLATE_FIELDS = {
    "name", "image", "args", "disk", "ports", "env", "registry", "mounts", "serverless", "public",
    "category", "startSsh", "startJupyter", "allowedCudaVersions",
}  # fmt: skip
REGISTRY_FIELDS = {"name", "username", "password"}
DRIVE_SIZES = {100, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000}


# --- RunPod v2 ---------------------------------------------------------------------------------
def template_json(t: RpTemplate) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "image": t.image,
        "args": t.args,
        "disk": t.disk,
        "mounts": t.mounts,
        "ports": t.ports,
        "env": t.env,
        "registry": t.registry,
        "serverless": t.serverless,
        "public": t.public,
        "category": t.category,
        "startSsh": t.start_ssh,
        "startJupyter": t.start_jupyter,
        "allowedCudaVersions": t.allowed_cuda_versions,
    }


def _template_problems(body: Any, *, create: bool) -> list[str]:
    if not isinstance(body, dict):
        return ["$: expected an object"]
    errors = [f"$: additional properties '{k}' not allowed" for k in body if k not in TEMPLATE_FIELDS]
    if create:
        errors += [f"$: missing property '{k}'" for k in ("name", "image") if k not in body]
    for key, typ in (("name", str), ("image", str), ("args", str), ("disk", int), ("ports", list)):
        if key in body and not isinstance(body[key], typ):
            errors.append(f"$.{key}: wrong type")
    mounts = body.get("mounts")
    if mounts is not None and (not isinstance(mounts, dict) or set(mounts) - {"persistent"}):
        errors.append("$.mounts: only a persistent mount is allowed on a template")
    if body.get("category") not in (None, "NVIDIA", "AMD", "CPU"):
        errors.append("$.category: value must be one of NVIDIA, AMD, CPU")
    return errors


def _apply_template(t: RpTemplate, body: dict[str, Any]) -> None:
    for key, attr in (
        ("name", "name"), ("image", "image"), ("args", "args"), ("disk", "disk"), ("ports", "ports"),
        ("env", "env"), ("registry", "registry"), ("serverless", "serverless"), ("public", "public"),
        ("category", "category"), ("startSsh", "start_ssh"), ("startJupyter", "start_jupyter"),
        ("allowedCudaVersions", "allowed_cuda_versions"),
    ):  # fmt: skip
        if key in body:
            setattr(t, attr, body[key])
    if body.get("mounts"):
        t.mounts = dict(body["mounts"])


def add_runpod_routes(api: Any) -> None:
    sim: Simulator = api.sim

    def get_template(tid: str) -> RpTemplate:
        t = sim.state.templates.get(tid)
        if t is None:
            raise SimError(404, "template not found", "not_found")
        return t

    def list_templates(req: Request) -> Response:
        with sim.lock:
            return v2_page(req, "templates", [template_json(t) for t in sim.state.templates.values()])

    def create_template(req: Request) -> Response:
        body = req.json()
        problems = _template_problems(body, create=True)
        if problems:
            return api.invalid(problems)
        with sim.lock:
            if any(t.name == body["name"] for t in sim.state.templates.values()):
                raise SimError(400, f"a template named '{body['name']}' already exists", "bad_request")
            t = RpTemplate(id=new_id(8), name=body["name"], image=body["image"])
            _apply_template(t, body)
            sim.state.templates[t.id] = t
            sim.save()
            return Response(201, template_json(t))

    def patch_template(req: Request) -> Response:
        body = req.json()
        problems = _template_problems(body, create=False)
        if problems:
            return api.invalid(problems)
        with sim.lock:
            t = get_template(req.params["id"])
            _apply_template(t, body)
            sim.save()
            return Response(200, template_json(t))

    def delete_template(req: Request) -> Response:
        with sim.lock:
            t = get_template(req.params["id"])
            del sim.state.templates[t.id]
            sim.save()
        return Response(204)

    def list_registries(req: Request) -> Response:
        with sim.lock:
            rows = [{"id": r.id, "name": r.name} for r in sim.state.registries.values()]
        return v2_page(req, "registries", rows)

    def create_registry(req: Request) -> Response:
        body = req.json()
        if not isinstance(body, dict):
            return api.invalid(["$: expected an object"])
        errors = [f"$: additional properties '{k}' not allowed" for k in body if k not in REGISTRY_FIELDS]
        errors += [
            f"$: missing property '{k}'"
            for k in ("name", "username", "password")
            if not isinstance(body.get(k), str) or not body[k]
        ]
        if errors:
            return api.invalid(errors)
        with sim.lock:
            if any(r.name == body["name"] for r in sim.state.registries.values()):
                raise SimError(400, f"a registry named '{body['name']}' already exists", "bad_request")
            reg = RpRegistry(id=new_id(8), name=body["name"])  # credentials are write-only: not kept
            sim.state.registries[reg.id] = reg
            sim.save()
            return Response(201, {"id": reg.id, "name": reg.name})

    def get_registry(req: Request) -> Response:
        with sim.lock:
            reg = sim.state.registries.get(req.params["id"])
            if reg is None:
                raise SimError(404, "registry not found", "not_found")
            return Response(200, {"id": reg.id, "name": reg.name})

    def delete_registry(req: Request) -> Response:
        rid = req.params["id"]
        with sim.lock:
            if rid not in sim.state.registries:
                raise SimError(404, "registry not found", "not_found")
            users = [p.id for p in sim.state.pods.values() if p.ended_at is None and p.registry == rid]
            if users:
                raise SimError(400, f"registry is in use by pod(s) {', '.join(users)}", "bad_request")
            del sim.state.registries[rid]
            for t in sim.state.templates.values():
                if t.registry == rid:
                    t.registry = None
            sim.save()
        return Response(204)

    api.route("GET", "/v2/templates", list_templates)
    api.route("POST", "/v2/templates", create_template)
    api.route(
        "GET", "/v2/templates/{id}", lambda q: Response(200, template_json(get_template(q.params["id"])))
    )
    api.route("PATCH", "/v2/templates/{id}", patch_template)
    api.route("DELETE", "/v2/templates/{id}", delete_template)
    api.route("GET", "/v2/registries", list_registries)
    api.route("POST", "/v2/registries", create_registry)
    api.route("GET", "/v2/registries/{id}", get_registry)
    api.route("DELETE", "/v2/registries/{id}", delete_registry)


# --- Paperspace /v1 ----------------------------------------------------------------------------
# The OS templates every account sees (GET /v1/os-templates; shape: Paperspace/cli api/openapi.ts
# "osTemplates-list"). The ids are ones public clients use (t0nspur5: Metaphysic's acceptance tests;
# tiq8mhti / tvimtol9: SkyPilot's H100 / H100x8 images; tkni3aa4: Metaphysic's docs); the names and
# machine-type lists are illustrative, since no public source lists them.
OS_TEMPLATES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("t0nspur5", "Ubuntu 22.04", "Ubuntu 22.04", ()),
    ("tkni3aa4", "ML-in-a-Box", "Ubuntu 22.04", ()),
    ("tiq8mhti", "ML-in-a-Box H100", "Ubuntu 22.04", ("H100",)),
    ("tvimtol9", "ML-in-a-Box H100x8", "Ubuntu 22.04", ("H100x8",)),
    ("tsimu2004", "Ubuntu 20.04", "Ubuntu 20.04", ()),
)


def os_template_json(
    entry: tuple[str, str, str, tuple[str, ...]], machine_types: list[str]
) -> dict[str, Any]:
    tid, name, label, only = entry
    return {
        "id": tid,
        "name": name,
        "agentType": "LinuxMachine",
        "operatingSystemLabel": label,
        "defaultSizeGb": 50,
        "availableMachineTypes": [
            {"machineTypeLabel": t, "isAvailable": not only or t in only} for t in machine_types
        ],
        "dtCreated": "2024-01-15T00:00:00.000Z",
    }


def template_exists(sim: Simulator, template_id: str) -> bool:
    """MachineCreate.templateId must name an OS template or one of the account's custom templates."""
    return any(t[0] == template_id for t in OS_TEMPLATES) or template_id in sim.state.custom_templates


def custom_template_json(t: PsTemplate) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "agentType": "LinuxMachine",
        "operatingSystemLabel": "Ubuntu 22.04",
        "region": pe.REGIONS[t.region],
        "defaultSizeGb": t.default_size_gb,
        "parentMachineId": t.parent_machine_id,
        "availableMachineTypes": [],
        "dtCreated": iso(t.created_at),
        "dtDeleted": None,
    }


def network_json(n: PsNetwork) -> dict[str, Any]:
    return {
        "id": n.id,
        "name": n.name,
        "region": pe.REGIONS[n.region],
        "network": f"127.64.{n.net % 250 + 1}.0",  # the simulator's block, on `lo`
        "netmask": "255.255.255.0",
        "dtCreated": iso(n.created_at),
        "dtDeleted": None,
    }


def drive_json(d: PsDrive) -> dict[str, Any]:
    return {
        "id": d.id,
        "name": d.name,
        "networkId": d.network_id,
        "region": pe.REGIONS[d.region],
        "size": str(d.size),  # int64: Paperspace sends these as strings
        "mountPoint": f"\\\\10.64.0.2\\{d.id}",
        "username": f"u{d.id}",
        "password": "simulated",
        "dtCreated": iso(d.created_at),
        "dtDeleted": None,
    }


def add_paperspace_routes(api: Any) -> None:
    sim: Simulator = api.sim

    def one(table: dict[str, Any], oid: str, what: str) -> Any:
        obj = table.get(oid)
        if obj is None:
            raise SimError(404, f"{what} not found", "not_found")
        return obj

    def listing(req: Request, rows: list[dict[str, Any]], order_by: str = "dtCreated") -> Response:
        name = req.arg("name")
        rows = [r for r in rows if not name or r["name"] == name]
        return paginate(req, rows, order_by=order_by)

    def list_templates(req: Request) -> Response:
        mid = req.arg("machineId")
        with sim.lock:
            rows = [
                custom_template_json(t)
                for t in sim.state.custom_templates.values()
                if not mid or t.parent_machine_id == mid
            ]
            return listing(req, rows)

    def create_template(req: Request) -> Response:
        body = req.json()
        if not isinstance(body, dict) or not body.get("machineId") or not body.get("name"):
            raise SimError(400, "machineId and name are required", "bad_request")
        with sim.lock:
            m = pe.get_machine(sim, str(body["machineId"]))
            if m.state != "off":
                raise SimError(400, "The machine must be off to create a template from it.", "conflict")
            t = PsTemplate(
                id="t" + new_id(7),
                name=str(body["name"]),
                region=m.region,
                parent_machine_id=m.id,
                default_size_gb=m.disk_size,
                created_at=sim.now(),
            )
            sim.state.custom_templates[t.id] = t
            ev = pe.new_event(sim, "template-create", m.id)
            ev.state, ev.started_at, ev.finished_at = "done", sim.now(), sim.now()
            sim.save()
            return Response(200, {"data": custom_template_json(t), "event": event_json(ev)})

    def delete_template(req: Request) -> Response:
        with sim.lock:
            t = one(sim.state.custom_templates, req.params["id"], "Custom template")
            del sim.state.custom_templates[t.id]
            sim.save()
            return Response(200, custom_template_json(t))

    def list_networks(req: Request) -> Response:
        with sim.lock:
            return listing(req, [network_json(n) for n in sim.state.networks.values()])

    def create_network(req: Request) -> Response:
        body = req.json()
        if not isinstance(body, dict) or not body.get("name") or not body.get("region"):
            raise SimError(400, "name and region are required", "bad_request")
        with sim.lock:
            sim.state.net_counter += 1
            n = PsNetwork(
                id="n" + new_id(7),
                name=str(body["name"]),
                region=pe.region_id(str(body["region"])),
                created_at=sim.now(),
                net=sim.state.net_counter,
            )
            sim.state.networks[n.id] = n
            sim.save()
            return Response(200, network_json(n))

    def delete_network(req: Request) -> Response:
        with sim.lock:
            n = one(sim.state.networks, req.params["id"], "Private network")
            if any(d.network_id == n.id for d in sim.state.drives.values()):
                raise SimError(400, "The private network still has shared drives.", "conflict")
            if any(m.network_id == n.id and m.ended_at is None for m in sim.state.machines.values()):
                raise SimError(400, "The private network still has machines.", "conflict")
            del sim.state.networks[n.id]
            sim.save()
        return Response(200, {"id": n.id})

    def list_drives(req: Request) -> Response:
        with sim.lock:
            return listing(req, [drive_json(d) for d in sim.state.drives.values()])

    def create_drive(req: Request) -> Response:
        body = req.json()
        missing = [k for k in ("name", "networkId", "region", "size") if not (body or {}).get(k)]
        if missing:
            raise SimError(400, "Invalid input: " + ", ".join(f"{k} is required" for k in missing))
        if int(body["size"]) not in DRIVE_SIZES:
            raise SimError(400, f"Invalid size {body['size']}: one of {sorted(DRIVE_SIZES)}", "bad_request")
        with sim.lock:
            n = one(sim.state.networks, str(body["networkId"]), "Private network")
            region = pe.region_id(str(body["region"]))
            if region != n.region:
                raise SimError(400, "The shared drive must be in its network's region.", "bad_request")
            d = PsDrive(
                id="sd" + new_id(8),
                name=str(body["name"]),
                network_id=n.id,
                region=region,
                size=int(body["size"]),
                created_at=sim.now(),
            )
            sim.state.drives[d.id] = d
            sim.save()
            return Response(200, drive_json(d))

    def delete_drive(req: Request) -> Response:
        with sim.lock:
            d = one(sim.state.drives, req.params["id"], "Shared drive")
            del sim.state.drives[d.id]
            sim.save()
        return Response(200, {"id": d.id})

    def getter(table: str, render: Any, what: str) -> Any:
        def get(req: Request) -> Response:
            with sim.lock:
                return Response(200, render(one(getattr(sim.state, table), req.params["id"], what)))

        return get

    def list_os_templates(req: Request) -> Response:
        types = [g.id for g in sim.ps_prices.gpus()]
        return listing(req, [os_template_json(t, types) for t in OS_TEMPLATES], order_by="name")

    api.route("GET", "/v1/os-templates", list_os_templates)
    api.route("GET", "/v1/custom-templates", list_templates)
    api.route("POST", "/v1/custom-templates", create_template)
    api.route(
        "GET",
        "/v1/custom-templates/{id}",
        getter("custom_templates", custom_template_json, "Custom template"),
    )
    api.route("DELETE", "/v1/custom-templates/{id}", delete_template)
    api.route("GET", "/v1/private-networks", list_networks)
    api.route("POST", "/v1/private-networks", create_network)
    api.route("GET", "/v1/private-networks/{id}", getter("networks", network_json, "Private network"))
    api.route("DELETE", "/v1/private-networks/{id}", delete_network)
    api.route("GET", "/v1/shared-drives", list_drives)
    api.route("POST", "/v1/shared-drives", create_drive)
    api.route("GET", "/v1/shared-drives/{id}", getter("drives", drive_json, "Shared drive"))
    api.route("DELETE", "/v1/shared-drives/{id}", delete_drive)
