"""RunPod GraphQL (POST /graphql) for what REST v2 lacks: spot pods, bids and the balance.

A real GraphQL front: the document is parsed by graphql-core (the reference implementation's Python
port), so inline literals (enums, lists, objects, null) and `$variables` mean the same thing, as they do
at RunPod, whose own clients write inline literals. Every field selected or input given is checked
against the part of RunPod's schema the simulator knows (gpujob.sim.gql_schema) before anything runs,
and the answer holds exactly the fields selected. Errors come as HTTP 200 with an `errors` array.

RunPod's refusals are kept: a spot pod does not resume as on-demand (podResume) nor an on-demand pod
as spot (podBidResume); network volumes are Secure Cloud only; `pod` of a pod that is gone is `null`.

The calendar (SimOptions.runpod_graphql): `live` answers; `limited` answers every third call 429 with
Retry-After, like the staged limits RunPod put on GraphQL from 2026-09-17; `gone` answers 410 Gone to
everything, as RunPod announced for early 2027. The mode never follows the simulated date: a test picks it."""

from __future__ import annotations

import re
from typing import Any

from gpujob.sim import gql_schema, rp_engine
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.http import Request, Response
from gpujob.sim.state import RpPod, new_id

CAPACITY = "There are no longer any instances available with the requested specifications. Please refresh and try again."
NO_FREE_GPUS = "There are not enough free GPUs on the host machine to start this pod."
# runpodctl #156 quotes the first; the second and the community one are the simulator's own wording.
SPOT_AS_ON_DEMAND = "Cannot resume a spot pod as an on demand pod."
ON_DEMAND_AS_SPOT = "Cannot resume an on demand pod as a spot pod."
COMMUNITY_VOLUME = "Network volumes are only available on Secure Cloud."
# The simulator's own wording (no public source quotes what a withdrawn spot answers).
SPOT_WITHDRAWN = "Spot (interruptible) pods are no longer offered. Deploy an on-demand pod instead."
GONE = "The GraphQL API has been retired and no longer serves traffic. Use the REST API (v2)."
MODES = ("live", "limited", "gone")
SPOT_MODES = ("offered", "withdrawn")
LIMITED_EVERY = 3  # `limited`: every third call is refused
LIMITED_RETRY_AFTER = 1
FIRST_FIELD = re.compile(r"^\s*(?:(?:query|mutation)\b[^{]*)?\{\s*(\w+)", re.S)


def operation(query: str) -> str | None:
    """The first root field's name, read without parsing (for error paths of unparsable documents)."""
    m = FIRST_FIELD.match(query or "")
    return m.group(1) if m else None


class GqlError(Exception):
    """A request error: the document does not fit the schema. Nothing ran."""


def gql_pod(sim: Simulator, pod: RpPod) -> dict[str, Any]:
    running = pod.status == "RUNNING"
    desired = {"PROVISIONING": "RUNNING", "STARTING": "RUNNING", "RUNNING": "RUNNING", "ERROR": "EXITED"}.get(
        pod.status, pod.status
    )
    rate = sim.rp_prices.gpu_hour(pod.gpu_id or "", cloud=pod.cloud, spot=pod.interruptible) * pod.gpu_count
    runtime = None
    if running:
        up = int(sim.now() - (pod.started_at or sim.now()))
        ports = (
            [
                {
                    "ip": "127.0.0.1",
                    "isIpPublic": True,
                    "privatePort": 22,
                    "publicPort": pod.ssh_port,
                    "type": "tcp",
                }
            ]
            if pod.ssh_port
            else []
        )
        runtime = {
            "uptimeInSeconds": up,
            "ports": ports,
            "gpus": [
                {"id": f"gpu{i}", "gpuUtilPercent": 0, "memoryUtilPercent": 0} for i in range(pod.gpu_count)
            ],
            "container": {"cpuPercent": 0, "memoryPercent": 0},
        }
    return {
        "id": pod.id,
        "name": pod.name,
        "desiredStatus": desired,
        "imageName": pod.image,
        "env": [f"{k}={v}" for k, v in pod.env.items()],
        "machineId": f"m{pod.id[:10]}{pod.host}",
        "costPerHr": rate if desired == "RUNNING" else 0.0,
        "adjustedCostPerHr": rate if desired == "RUNNING" else 0.0,
        "gpuCount": pod.gpu_count,
        "podType": "INTERRUPTABLE" if pod.interruptible else "RESERVED",
        "bidPerGpu": pod.bid_per_gpu,
        "containerDiskInGb": pod.disk,
        "volumeInGb": pod.volume_gb,
        "volumeMountPath": pod.mount_path,
        "networkVolumeId": pod.network_volume_id,
        "ports": ",".join(pod.ports),
        "dataCenterId": pod.data_center,
        "lastStatusChange": f"{pod.status} (simulated)",
        "uptimeSeconds": runtime["uptimeInSeconds"] if runtime else 0,
        "machine": {
            "gpuDisplayName": pod.gpu_id,
            "location": pod.data_center,
            "podHostId": f"{pod.id}-{pod.host}",
            "gpuTypeId": pod.gpu_id,
        },
        "runtime": runtime,
    }


def handle(sim: Simulator, req: Request) -> Response:
    mode = sim.options.runpod_graphql
    if mode == "gone":
        return Response(410, {"errors": [{"message": GONE, "extensions": {"code": "GONE"}}]})
    with sim.lock:
        sim.graphql_calls += 1
        refused = mode == "limited" and sim.graphql_calls % LIMITED_EVERY == 0
    if refused:
        return Response(
            429,
            {"errors": [{"message": "Too many requests: GraphQL is rate limited during its retirement."}]},
            {"Retry-After": str(LIMITED_RETRY_AFTER)},
        )
    body = req.json()
    query = str(body.get("query") or "") if isinstance(body, dict) else ""
    raw = body.get("variables") if isinstance(body, dict) else None
    variables: dict[str, Any] = raw if isinstance(raw, dict) else {}
    try:
        fields = plan_document(query, variables)
    except GqlError as exc:
        return Response(
            400, {"errors": [{"message": str(exc), "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"}}]}
        )
    data: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for key, name, inp, selection in fields:
        try:
            result = _run(sim, name, inp)
            data[key] = project(result, selection, gql_schema.ROOT[name][2], variables or {})
        except SimError as exc:
            message = CAPACITY if exc.kind == "capacity" else exc.message
            code = "INTERNAL_SERVER_ERROR" if exc.status >= 500 else "RUNPOD"
            errors.append({"message": message, "path": [key], "extensions": {"code": code}})
            data[key] = None
    return Response(200, {"data": data, **({"errors": errors} if errors else {})})


# --- the document --------------------------------------------------------------------------------


def plan_document(query: str, variables: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], Any]]:
    """(response key, root field, input, selection set) for each root field, every name checked."""
    from graphql import GraphQLSyntaxError, parse
    from graphql.language import FieldNode, OperationDefinitionNode

    try:
        doc = parse(query)
    except GraphQLSyntaxError as exc:
        raise GqlError(f"Syntax Error: {exc.message}") from None
    ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    if len(ops) != 1 or len(doc.definitions) != 1:
        raise GqlError("the simulator takes one operation per document, without fragments")
    op = ops[0]
    kind = op.operation.value
    out = []
    for node in op.selection_set.selections:
        if not isinstance(node, FieldNode):
            raise GqlError("fragments are not simulated")
        name = node.name.value
        root = gql_schema.ROOT.get(name)
        if root is None or root[0] != kind:
            raise GqlError(f'Cannot query field "{name}" on type "{kind.capitalize()}".')
        _, input_type, output = root
        inp = _input_of(node, input_type, variables, f"{name}")
        _check_selection(node, output)
        out.append(((node.alias or node.name).value, name, inp, node.selection_set))
    return out


def _input_of(node: Any, input_type: str | None, variables: dict[str, Any], where: str) -> dict[str, Any]:
    from graphql import value_from_ast_untyped

    args = {a.name.value: a for a in node.arguments or ()}
    unknown = set(args) - ({"input"} if input_type else set())
    if unknown:
        raise GqlError(f'Unknown argument "{sorted(unknown)[0]}" on field "{where}".')
    if not input_type or "input" not in args:
        return {}
    ast = args["input"].value
    value = value_from_ast_untyped(ast, variables)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GqlError(f'Expected value of type "{input_type}!", found {value!r}.')
    _check_input(value, input_type, ast)
    return value


def _check_input(value: dict[str, Any], input_type: str, ast: Any) -> None:
    from graphql.language import ObjectValueNode, StringValueNode

    known = gql_schema.INPUT[input_type]
    inline = {f.name.value: f.value for f in ast.fields} if isinstance(ast, ObjectValueNode) else {}
    for key, item in value.items():
        if key not in known:
            raise GqlError(f'Field "{key}" is not defined by type "{input_type}".')
        enum = gql_schema.ENUMS.get(key)
        if enum is not None and item is not None:
            if isinstance(inline.get(key), StringValueNode):
                raise GqlError(f'Enum "{enum[0]}" cannot represent non-enum value: "{item}".')
            if item not in enum[1]:
                raise GqlError(f'Value "{item}" does not exist in "{enum[0]}" enum.')
        nested = gql_schema.NESTED_INPUT.get((input_type, key))
        if nested is not None and item is not None:
            for entry in item if isinstance(item, list) else [item]:
                if not isinstance(entry, dict):
                    raise GqlError(f'Expected value of type "{nested}", found {entry!r}.')
                _check_input(entry, nested, None)


def _check_selection(node: Any, output: str | None, parent: str = "") -> None:
    sel = node.selection_set
    name = node.name.value
    if output is None:
        if sel is not None:
            raise GqlError(f'Field "{name}" must not have a selection since its type has no subfields.')
        return
    if sel is None:
        raise GqlError(f'Field "{name}" of type "{output}" must have a selection of subfields.')
    fields = gql_schema.OUTPUT[output]
    for child in sel.selections:
        if not hasattr(child, "name") or not hasattr(child, "arguments"):
            raise GqlError("fragments are not simulated")
        cname = child.name.value
        if cname == "__typename":
            continue
        if cname not in fields:
            raise GqlError(f'Cannot query field "{cname}" on type "{output}".')
        input_type = gql_schema.FIELD_INPUT.get((output, cname))
        if child.arguments and input_type is None:
            raise GqlError(f'Unknown argument "{child.arguments[0].name.value}" on field "{output}.{cname}".')
        _check_selection(child, fields[cname], output)


def project(value: Any, selection: Any, type_name: str | None, variables: dict[str, Any]) -> Any:
    """Keep only what was selected (aliases honoured); a field with arguments is computed from them."""
    if selection is None or type_name is None or value is None:
        return value
    if isinstance(value, list):
        return [project(v, selection, type_name, variables) for v in value]
    out: dict[str, Any] = {}
    fields = gql_schema.OUTPUT[type_name]
    for child in selection.selections:
        cname = child.name.value
        key = (child.alias or child.name).value
        if cname == "__typename":
            out[key] = type_name
            continue
        item = value.get(cname)
        if callable(item):
            from graphql import value_from_ast_untyped

            args = {a.name.value: value_from_ast_untyped(a.value, variables) for a in child.arguments or ()}
            item = item(args.get("input") or {})
        out[key] = project(item, child.selection_set, fields[cname], variables)
    return out


# --- the operations ------------------------------------------------------------------------------


def _run(sim: Simulator, op: str, inp: dict[str, Any]) -> Any:
    if op in ("podRentInterruptable", "podFindAndDeployOnDemand"):
        return _create(sim, inp, spot=op == "podRentInterruptable")
    if op in ("podResume", "podBidResume"):
        pod_id = str(inp.get("podId"))
        with sim.lock:
            old = rp_engine.get_pod(sim, pod_id)
            if op == "podResume" and old.interruptible:
                raise SimError(400, SPOT_AS_ON_DEMAND)
            if op == "podBidResume" and not old.interruptible:
                raise SimError(400, ON_DEMAND_AS_SPOT)
            if op == "podBidResume":
                _check_bid(sim, old.gpu_id, inp.get("bidPerGpu"))
            # RP1 over GraphQL: a resume that asks for GPUs the host no longer has is refused
            # (REST v2 start instead comes back with zero GPUs).
            if sim.faults.take("zero_gpu", platform="runpod", pod_id=pod_id, gpu=old.gpu_id):
                raise SimError(400, NO_FREE_GPUS)
        pod = rp_engine.start(sim, pod_id, gpu_count=inp.get("gpuCount"), bid=inp.get("bidPerGpu"))
        with sim.lock:
            return gql_pod(sim, pod)
    if op == "podStop":
        pod = rp_engine.stop(sim, str(inp.get("podId")))
        with sim.lock:
            return gql_pod(sim, pod)
    if op == "podTerminate":
        rp_engine.terminate(sim, str(inp.get("podId")))
        return None
    if op == "pod":
        with sim.lock:
            found = sim.state.pods.get(str(inp.get("podId")))
            # RunPod's clients read a pod that is gone as null (runpod-python get_pod, dstack), not an error
            return None if found is None or found.ended_at is not None else gql_pod(sim, found)
    if op == "myself":
        with sim.lock:
            spend = sim.bill()["totals"]["runpod"]
            pods = [gql_pod(sim, p) for p in sim.state.pods.values() if p.ended_at is None]
            vols = [
                {"id": v.id, "name": v.name, "size": v.size, "dataCenterId": v.data_center}
                for v in sim.state.volumes.values()
                if v.ended_at is None
            ]
            rate = sum(p["costPerHr"] for p in pods)
            balance = 0.0 if sim.state.balance_exhausted else max(0.0, sim.options.balance - spend)
            return {
                "id": "user_sim",
                "email": "sim@localhost",
                "clientBalance": balance,
                "currentSpendPerHr": rate,
                "spendLimit": 80,
                "pubKey": "\n".join(sim.state.ssh_keys),
                "pods": pods,
                "networkVolumes": vols,
            }
    if op == "gpuTypes":
        return [_gpu_type(sim, g) for g in sim.rp_prices.gpus() if not inp.get("id") or inp.get("id") == g.id]
    raise SimError(400, f"Cannot query field '{op}' (not simulated)")


def spot_floor(sim: Simulator, gpu_id: str) -> float:
    """The minimum bid per GPU now: the profile's spot price, times a spot_floor fault's factor."""
    floor = sim.rp_prices.gpu_hour(gpu_id, spot=True)
    moved = sim.faults.peek("spot_floor", platform="runpod", gpu=gpu_id)
    return round(floor * (moved.factor if moved is not None else 1.0), 6)


def withdrawn(sim: Simulator) -> bool:
    """`--runpod-spot withdrawn`: GraphQL answers, but RunPod offers no spot (no interruptible price; a rent
    or bid resume is refused). RunPod's docs dropped spot on 2026-05-06 (runpod/docs 8e5aebdb), months
    before GraphQL's 410; what such an API answers is not documented, so this is the simplest reading."""
    return sim.options.runpod_spot == "withdrawn"


def _gpu_type(sim: Simulator, g: Any) -> dict[str, Any]:
    spot = None if withdrawn(sim) else g.spot

    def lowest(args: dict[str, Any]) -> dict[str, Any]:
        secure = args.get("secureCloud", True) is not False
        count = int(args.get("gpuCount") or 1)
        cloud = "SECURE" if secure else "COMMUNITY"
        offered = secure or g.community is not None
        out_of_stock = sim.faults.peek("capacity", platform="runpod", gpu=g.id, cloud=cloud) or count > 8
        return {
            "minimumBidPrice": spot_floor(sim, g.id) if offered and not withdrawn(sim) else None,
            "uninterruptablePrice": (g.secure if secure else g.community),
            "stockStatus": "None" if out_of_stock or not offered else "High",
        }

    return {
        "id": g.id, "displayName": g.alias, "manufacturer": "Nvidia", "memoryInGb": g.vram, "maxGpuCount": 8,
        "secureCloud": True, "communityCloud": g.community is not None, "securePrice": g.secure,
        "communityPrice": g.community, "secureSpotPrice": spot, "communitySpotPrice": spot,
        "lowestPrice": lowest,  # computed per selection: its arguments say for how many GPUs, which cloud
    }  # fmt: skip


def _check_bid(sim: Simulator, gpu_id: Any, bid: Any) -> None:
    if withdrawn(sim):
        raise SimError(400, SPOT_WITHDRAWN)
    floor = spot_floor(sim, str(gpu_id or ""))
    if bid is None:
        raise SimError(400, "bidPerGpu is required")
    raced = sim.faults.take("bid_too_low", platform="runpod", gpu=str(gpu_id or "")) is not None
    if raced or float(bid) + 1e-9 < floor:
        # The wording is the simulator's own: no public source quotes RunPod's (tests/fixtures/README.md).
        shown = round(floor * 1.05, 4) if raced else floor  # a race: the floor moved past the bid just now
        raise SimError(400, f"Your bid price ({bid}) is below the minimum bid price ({shown}).")


def _create(sim: Simulator, inp: dict[str, Any], *, spot: bool) -> dict[str, Any]:
    gpu_id = inp.get("gpuTypeId") or (inp.get("gpuTypeIdList") or [None])[0]
    if spot:
        _check_bid(sim, gpu_id, inp.get("bidPerGpu"))
    cloud = "COMMUNITY" if inp.get("cloudType") == "COMMUNITY" else "SECURE"  # ALL: secure first
    if cloud == "COMMUNITY" and inp.get("networkVolumeId"):
        raise SimError(400, COMMUNITY_VOLUME)
    env = {
        str(e["key"]): str(e.get("value") or "")
        for e in inp.get("env") or []
        if isinstance(e, dict) and "key" in e
    }
    keys = [line for line in env.get("PUBLIC_KEY", "").splitlines() if line.strip()]
    if inp.get("startSsh"):
        keys += [k for k in sim.state.ssh_keys if k not in keys]
    path = inp.get("volumeMountPath") or "/workspace"
    if inp.get("networkVolumeId"):
        mounts: dict[str, Any] = {"network": [{"volumeId": inp["networkVolumeId"], "path": path}]}
    elif inp.get("volumeInGb"):
        mounts = {"persistent": {"size": int(inp["volumeInGb"]), "path": path}}
    else:
        mounts = {}
    ports = [p.strip() for p in str(inp.get("ports") or "22/tcp").split(",") if p.strip()]
    dc = inp.get("dataCenterId")
    if dc and dc not in sim.rp_prices.regions():
        raise SimError(400, f"Unknown data center {dc}")
    pod = RpPod(
        id=new_id(14),
        name=str(inp.get("name") or "pod"),
        interruptible=spot,
        bid_per_gpu=inp.get("bidPerGpu"),
        image=str(inp.get("imageName") or ""),
        disk=int(inp.get("containerDiskInGb") or 50),
        ports=ports,
        env=env,
        mounts=mounts,
        gpu_id=gpu_id,
        allowed_cuda=[str(v) for v in inp.get("allowedCudaVersions") or []],
        gpu_count=int(inp.get("gpuCount") or 1),
        requested_gpu_count=int(inp.get("gpuCount") or 1),
        cloud=cloud,
        data_center=dc or sim.rp_prices.regions()[0],
        asked_data_centers=[dc] if dc else [],
        authorized_keys=keys,
    )
    pod, fail_after = rp_engine.create_pod(sim, pod, source="graphql")
    if fail_after:
        raise SimError(500, "Something went wrong. Please try again later or contact support.")
    with sim.lock:
        return gql_pod(sim, pod)
