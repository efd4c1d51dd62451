"""Request validation for RunPod v2 bodies, mirroring the spec's schemas (unevaluatedProperties:
false -> 422 with one `errors` entry per violation, in the spec's wording style)."""

from __future__ import annotations

import re
from typing import Any

CONTAINER = {"image", "args", "disk", "ports", "env", "registry"}
CREATE = CONTAINER | {
    "name",
    "cloud",
    "cpu",
    "dataCenterIds",
    "globalNetworking",
    "gpu",
    "mounts",
    "startJupyter",
    "startSsh",
    "templateId",
}
PATCH = CONTAINER | {"globalNetworking", "locked", "mounts", "name", "templateId"}
KEY_RE = re.compile(r"^(ssh|ecdsa|sk)-[^\s]+ [^\s]+([ \t][^\n\r]*)?$")


def _extra(body: dict[str, Any], allowed: set[str], where: str = "$") -> list[str]:
    return [f"{where}: additional properties '{k}' not allowed" for k in body if k not in allowed]


def _type(
    errors: list[str], body: dict[str, Any], key: str, typ: type | tuple[type, ...], where: str = "$"
) -> None:
    if (
        key in body
        and body[key] is not None
        and (not isinstance(body[key], typ) or (typ is int and isinstance(body[key], bool)))
    ):
        errors.append(f"{where}.{key}: wrong type")


def _container(errors: list[str], body: dict[str, Any]) -> None:
    _type(errors, body, "image", str)
    _type(errors, body, "args", str)
    _type(errors, body, "disk", int)
    _type(errors, body, "ports", list)
    _type(errors, body, "env", dict)
    if isinstance(body.get("disk"), int) and body["disk"] < 1:
        errors.append("$.disk: must be >= 1")
    if isinstance(body.get("env"), dict):
        errors += [f"$.env.{k}: must be a string" for k, v in body["env"].items() if not isinstance(v, str)]
    if isinstance(body.get("ports"), list):
        errors += [
            f"$.ports: invalid port '{p}'"
            for p in body["ports"]
            if not (isinstance(p, str) and re.match(r"^\d+/(http|tcp|udp)$", p))
        ]


def _mounts(errors: list[str], mounts: Any) -> None:
    if not isinstance(mounts, dict):
        errors.append("$.mounts: wrong type")
        return
    errors += _extra(mounts, {"persistent", "network"}, "$.mounts")
    per = mounts.get("persistent")
    if per is not None:
        if not isinstance(per, dict):
            errors.append("$.mounts.persistent: wrong type")
        else:
            errors += _extra(per, {"size", "path"}, "$.mounts.persistent")
            errors += [
                f"$.mounts.persistent: missing property '{k}'" for k in ("size", "path") if k not in per
            ]
            if isinstance(per.get("size"), int) and per["size"] < 10:
                errors.append("$.mounts.persistent.size: must be >= 10")
    net = mounts.get("network")
    if net is not None:
        if not isinstance(net, list) or len(net) > 1:
            errors.append("$.mounts.network: at most 1 item")
        else:
            for item in net:
                if not isinstance(item, dict):
                    errors.append("$.mounts.network[0]: wrong type")
                    continue
                errors += _extra(item, {"volumeId", "path"}, "$.mounts.network[0]")
                errors += [
                    f"$.mounts.network[0]: missing property '{k}'"
                    for k in ("volumeId", "path")
                    if k not in item
                ]


CUDA_RE = re.compile(r"^\d+\.\d+$")


def _cuda(gpu: dict[str, Any]) -> list[str]:
    """CreateGpuConfig's CUDA fields: major.minor strings (a bare major is rejected)."""
    errors = []
    floor = gpu.get("minCudaVersion")
    if floor is not None and not (isinstance(floor, str) and CUDA_RE.match(floor)):
        errors.append("$.gpu.minCudaVersion: does not match pattern ^\\d+\\.\\d+$")
    allowed = gpu.get("allowedCudaVersions")
    if allowed is not None:
        if not isinstance(allowed, list):
            errors.append("$.gpu.allowedCudaVersions: wrong type")
        else:
            errors += [
                f"$.gpu.allowedCudaVersions[{i}]: does not match pattern ^\\d+\\.\\d+$"
                for i, v in enumerate(allowed)
                if not (isinstance(v, str) and CUDA_RE.match(v))
            ]
    return errors


def check_create(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["$: expected an object"]
    errors = _extra(body, CREATE)
    _container(errors, body)
    if not isinstance(body.get("name"), str) or not body.get("name"):
        errors.append("$: missing property 'name'")
    if "image" not in body and "templateId" not in body:
        errors.append("$: missing property 'image'")
    if body.get("cloud") not in (None, "SECURE", "COMMUNITY"):
        errors.append("$.cloud: value must be one of SECURE, COMMUNITY")
    gpu = body.get("gpu")
    if gpu is not None:
        if not isinstance(gpu, dict):
            errors.append("$.gpu: wrong type")
        else:
            errors += _extra(gpu, {"id", "count", "allowedCudaVersions", "minCudaVersion"}, "$.gpu")
            if not isinstance(gpu.get("id"), str):
                errors.append("$.gpu: missing property 'id'")
            if "count" in gpu and (not isinstance(gpu["count"], int) or gpu["count"] < 1):
                errors.append("$.gpu.count: must be an integer >= 1")
            errors += _cuda(gpu)
    if "mounts" in body:
        _mounts(errors, body["mounts"])
    if errors:
        return errors
    return []


def rule_problems(body: dict[str, Any]) -> str | None:
    """Cross-field rules: 400, not 422."""
    if (body.get("gpu") is None) == (body.get("cpu") is None):
        return "exactly one of gpu or cpu must be set"
    if body.get("cpu") is not None:
        return "CPU pods are not available in the simulator"
    gpu = body.get("gpu") or {}
    if gpu.get("allowedCudaVersions") and gpu.get("minCudaVersion"):
        return "gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive"
    mounts = body.get("mounts") or {}
    if mounts.get("persistent") and mounts.get("network"):
        return "mounts.persistent and mounts.network are mutually exclusive"
    if "network" in mounts and mounts["network"] == []:
        return "mounts.network must not be empty"
    return None


def check_patch(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["$: expected an object"]
    errors = _extra(body, PATCH)
    _container(errors, body)
    _type(errors, body, "name", str)
    _type(errors, body, "locked", bool)
    if "mounts" in body:
        _mounts(errors, body["mounts"])
    return errors


def check_volume_create(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["$: expected an object"]
    errors = _extra(body, {"dataCenter", "name", "size", "type"})
    errors += [f"$: missing property '{k}'" for k in ("name", "size", "dataCenter") if k not in body]
    _type(errors, body, "name", str)
    _type(errors, body, "dataCenter", str)
    _type(errors, body, "size", int)
    if isinstance(body.get("size"), int) and not 10 <= body["size"] <= 4096:
        errors.append("$.size: must be between 10 and 4096")
    if body.get("type") not in (None, "STANDARD", "HIGH_PERFORMANCE"):
        errors.append("$.type: value must be one of STANDARD, HIGH_PERFORMANCE")
    return errors


def check_volume_patch(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["$: expected an object"]
    errors = _extra(body, {"name", "size"})
    if not body:
        errors.append("$: minProperties 1")
    _type(errors, body, "name", str)
    _type(errors, body, "size", int)
    if isinstance(body.get("size"), int) and not 10 <= body["size"] <= 4096:
        errors.append("$.size: must be between 10 and 4096")
    return errors


def check_ssh_keys(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["$: expected an object"]
    errors = _extra(body, {"keys"})
    keys = body.get("keys")
    if not isinstance(keys, list):
        return [*errors, "$: missing property 'keys'"]
    return errors + [
        f"$.keys[{i}]: does not match pattern"
        for i, k in enumerate(keys)
        if not (isinstance(k, str) and KEY_RE.match(k))
    ]
