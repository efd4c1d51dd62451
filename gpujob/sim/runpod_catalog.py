"""RunPod v2 catalog endpoints: GPU types with profile prices and data centers (billing lives in
runpod_billing.py)."""

from __future__ import annotations

from typing import Any

from gpujob.sim.engine import SimError
from gpujob.sim.http import Request, Response

MAX_COUNT = 8


def _available(
    api: Any, gpu_id: str, region: str | None = None, *, cloud: str = "SECURE", count: int = 1, g: Any = None
) -> str:
    """Stock for `count` GPUs on one cloud: none on a cloud that does not offer the GPU or past its
    per-pod ceiling, none while a capacity fault matches, else plenty."""
    if g is not None and cloud == "COMMUNITY" and g.community is None:
        return "NONE"
    if count > MAX_COUNT:
        return "NONE"
    cap = api.sim.faults.peek("capacity", platform="runpod", gpu=gpu_id, region=region, cloud=cloud)
    return "NONE" if cap is not None else "HIGH"


def gpu_json(api: Any, g: Any, include: bool, cloud: str = "SECURE", count: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": g.id,
        "name": g.alias,
        "pool": api.sim.rp_prices.pool(g.id),
        "manufacturer": "AMD" if "AMD" in g.id else "NVIDIA",
        "memory": g.vram,
        "secure": True,
        "community": g.community is not None,
        "price": {
            "secure": g.secure,
            "community": g.community if g.community is not None else g.secure,
            "serverless": api.sim.rp_prices.serverless_hour([api.sim.rp_prices.pool(g.id) or ""]) or None,
        },
        "maxCount": {"secure": MAX_COUNT, "community": MAX_COUNT if g.community is not None else 0},
    }
    if include:
        regions = list(g.regions) or api.sim.rp_prices.regions()
        kw = {"cloud": cloud, "count": count, "g": g}
        out["availability"] = _available(api, g.id, **kw)
        out["dataCenters"] = [
            {"id": r, "name": r, "availability": _available(api, g.id, r, **kw)} for r in regions
        ]
        # RP9: the CUDA the simulated hosts report (SimOptions.host_cuda), as pods and create filters see it
        out["cudaVersions"] = [{"version": api.sim.options.host_cuda, "available": True}]
    return out


def add_catalog_routes(api: Any) -> None:
    sim = api.sim

    def includes(req: Request) -> tuple[bool, str, int]:
        """(include availability?, cloud, count). product, cloud and count are valid only with
        include=AVAILABILITY (400 otherwise); cloud defaults to SECURE and count to 1 (v2 spec)."""
        include = req.arg("include")
        product = req.arg("product")
        if bool(include) != bool(product):
            raise SimError(
                400, "product is required with include=AVAILABILITY, and valid only with it", "bad_request"
            )
        cloud, count = req.arg("cloud"), req.arg("count")
        if not include and (cloud is not None or count is not None):
            raise SimError(400, "cloud and count are valid only with include=AVAILABILITY", "bad_request")
        if cloud not in (None, "SECURE", "COMMUNITY"):
            raise SimError(422, "$.cloud: value must be one of SECURE, COMMUNITY", "invalid")
        try:
            n = int(count) if count is not None else 1
        except ValueError:
            n = 0
        if n < 1:
            raise SimError(422, "$.count: must be an integer >= 1", "invalid")
        return include == "AVAILABILITY", cloud or "SECURE", n

    def list_gpus(req: Request) -> Response:
        inc, cloud, count = includes(req)
        return Response(200, {"gpus": [gpu_json(api, g, inc, cloud, count) for g in sim.rp_prices.gpus()]})

    def get_gpu(req: Request) -> Response:
        g = sim.rp_prices.gpu(req.params["id"].replace("%20", " "))
        if g is None:
            raise SimError(404, "gpu type not found", "not_found")
        inc, cloud, count = includes(req)
        return Response(200, gpu_json(api, g, inc, cloud, count))

    def datacenters(req: Request) -> Response:
        with_gpus = req.arg("include") == "GPU_AVAILABILITY"
        out = []
        for r in sim.rp_prices.regions():
            dc: dict[str, Any] = {
                "id": r,
                "name": r,
                "region": "EUROPE" if r.startswith("EU") else "NORTH_AMERICA",
                "networkVolumeTypes": ["STANDARD", "HIGH_PERFORMANCE"],
                "compliance": [],
                "globalNetwork": False,
            }
            if with_gpus:
                gpus = [g for g in sim.rp_prices.gpus() if not g.regions or r in g.regions]
                dc["gpuAvailability"] = [
                    {"id": g.id, "name": g.alias, "availability": _available(api, g.id, r)} for g in gpus
                ]
            out.append(dc)
        return Response(200, {"dataCenters": out})

    api.route("GET", "/v2/catalog/gpus", list_gpus)
    api.route("GET", "/v2/catalog/gpus/{id}", get_gpu)
    api.route("GET", "/v2/catalog/datacenters", datacenters)
