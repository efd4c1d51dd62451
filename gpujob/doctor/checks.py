"""The calls `gpujob doctor` makes: every read gpujob relies on, each answer checked against the wire
model gpujob reads it with. Read-only by construction: a Check is a GET or a GraphQL *query*; there is
no way to write a mutation here (a test sends every check through a recorder to prove it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from gpujob.doctor.drift import Drift, drifts
from gpujob.errors import MalformedResponse, ProviderAuthError, ProviderError
from gpujob.invariant import holds, present
from gpujob.model import WireModel
from gpujob.providers.http import ApiClient
from gpujob.providers.paperspace import wire as ps
from gpujob.providers.runpod import wire as rp

MAX_PAGES = 3  # the shape of a listing shows on its first pages; doctor is a check, not an export
Outcome = Literal["ok", "drift", "refused", "error", "retired"]

# What a 410 from RunPod's GraphQL means, said once under the report (gpujob.doctor.report).
RETIRED_MEANS = (
    "RunPod's GraphQL API answers 410 Gone: it is retired (announced for early 2027). Without it there are "
    "no spot pods (machine.spot: true plans are blocked; spot: prefer creates on-demand pods), no live spot "
    "bid floor, and no balance (the plan's RP8 says it is unknown; check the console's Billing page). "
    "Everything else runs on REST v2 as before."
)

# What gpujob was built against, shown next to every answer (the APIs do not say their own version).
API_VERSIONS = {
    "runpod": "RunPod REST v2, OpenAPI 2.0.0 (Frontdoor v2.9.0, synced 2026-08-18) + GraphQL (spot, prices, balance)",
    "paperspace": "Paperspace /v1, Paperspace CLI OpenAPI generated 2024-05-07",
}


@dataclass(frozen=True)
class Check:
    platform: str
    path: str  # REST path under the base URL; "" for GraphQL
    model: type[WireModel]
    params: dict[str, Any] | None = None
    paged: Literal["v2", "ps"] | None = None
    items: str | None = None  # the list in a Paperspace page ("items"); v2 page models carry their own
    query: str | None = None  # GraphQL: a `query` document, never a mutation
    field_name: str | None = None  # GraphQL: the data field holding the answer
    label: str = ""

    def name(self, api: ApiClient) -> str:
        if self.query is not None:
            label = f" ({self.label})" if self.label else ""
            return f"POST {api.call_name('POST', '').split(' ', 1)[1]} query {self.field_name}{label}"
        return api.call_name("GET", self.path) + (f" {self.label}" if self.label else "")


@dataclass
class Result:
    platform: str
    call: str
    outcome: Outcome
    detail: str = ""
    drifts: list[Drift] = field(default_factory=list)
    count: int | None = None


def checks(
    gpu: str = "NVIDIA GeForce RTX 4090", machine_type: str = "A4000", region: str = "ny2"
) -> list[Check]:
    from gpujob.providers.runpod.client import LOWEST_PRICE, MYSELF, SPOT_PROBE

    lowest = LOWEST_PRICE % ('"' + gpu.replace("\\", "\\\\").replace('"', '\\"') + '"', 1, "true")
    catalog = {"include": "AVAILABILITY", "product": "POD", "count": 1}
    return [
        Check("runpod", "/pods", rp.PodList, paged="v2"),
        Check("runpod", "/network-volumes", rp.NetworkVolumeList, paged="v2"),
        Check("runpod", "/templates", rp.TemplateList, paged="v2"),
        Check("runpod", "/registries", rp.RegistryList, paged="v2"),
        Check("runpod", "/catalog/gpus", rp.GpuTypeList, {**catalog, "cloud": "SECURE"}, label="(secure)"),
        Check(
            "runpod", "/catalog/gpus", rp.GpuTypeList, {**catalog, "cloud": "COMMUNITY"}, label="(community)"
        ),
        Check("runpod", "", rp.GraphQLGpuType, query=lowest, field_name="gpuTypes"),
        Check("runpod", "", rp.GraphQLSpotPrices, query=SPOT_PROBE, field_name="gpuTypes", label="spot"),
        Check("runpod", "/billing/pods", rp.BillingList, {"bucketSize": "day"}),
        Check("runpod", "/billing/network-volumes", rp.BillingList, {"bucketSize": "day"}),
        Check("runpod", "", rp.Myself, query=MYSELF, field_name="myself"),
        Check("paperspace", "/machines", ps.Machine, paged="ps", items="items"),
        Check("paperspace", "/public-ips", ps.PublicIp, paged="ps", items="items"),
        Check("paperspace", "/snapshots", ps.Snapshot, paged="ps", items="items"),
        Check("paperspace", "/os-templates", ps.OsTemplate, paged="ps", items="items"),
        Check("paperspace", "/custom-templates", ps.CustomTemplate, paged="ps", items="items"),
        Check("paperspace", "/shared-drives", ps.SharedDrive, paged="ps", items="items"),
        Check("paperspace", "/startup-scripts", ps.StartupScript, paged="ps", items="items"),
        # the metering source: gpujob bills Paperspace time from these start / stop events
        Check("paperspace", "/machine-events", ps.MachineEvent, paged="ps", items="items"),
        Check(
            "paperspace",
            "/machine-availability",
            ps.Availability,
            {"machineType": machine_type, "region": region},
        ),
    ]


async def run_checks(
    apis: dict[str, ApiClient], graphql: ApiClient | None, todo: list[Check]
) -> list[Result]:
    """Every check of the platforms in `apis`, concurrently, in the table's order."""
    picked = [c for c in todo if c.platform in apis]
    return list(
        await asyncio.gather(*(_run(c, graphql if c.query is not None else apis[c.platform]) for c in picked))
    )


async def _run(check: Check, api: ApiClient | None) -> Result:
    api = present(api, "the API client of a check that calls it")
    call = check.name(api)
    try:
        bodies = await _read(check, api)
    except ProviderAuthError as exc:
        return Result(check.platform, call, "refused", f"HTTP {exc.status}: {_said(exc)}")
    except MalformedResponse as exc:
        return Result(check.platform, call, "drift", str(exc), [Drift("$", "JSON", "not JSON")])
    except ProviderError as exc:
        if check.query is not None and exc.status == 410:
            return Result(check.platform, call, "retired", "HTTP 410 Gone: RunPod's GraphQL API is retired")
        return Result(check.platform, call, "error", str(exc))
    found: list[Drift] = []
    count = 0
    for body in bodies:
        if check.items is None and isinstance(body, dict):  # a v2 list answer: count what it lists
            count += sum(len(v) for v in body.values() if isinstance(v, list))
        for item in _items(check, body, found):
            count += check.items is not None or isinstance(body, list)
            here = drifts(check.model, item, f"{check.items}[*]" if check.items else "")
            if not here:
                try:
                    check.model.model_validate(item)
                except MalformedResponse as exc:  # what the strict reading missed, the model still catches
                    here = [Drift("$", check.model.__name__, str(exc))]
            found += here
    unique = list({(d.path, d.expected): d for d in found}.values())
    summary = _summary(check, count, len(bodies))
    if check.label == "spot":
        summary = spot_state(bodies) + (f" ({summary})" if summary else "")
    return Result(check.platform, call, "drift" if unique else "ok", summary, unique, count)


def spot_state(bodies: list[Any]) -> str:
    """Which of RunPod's spot states this account sees, from the spot prices GraphQL answered: offered, or
    withdrawn (GraphQL answers, no GPU type priced; a 410 is reported as RETIRED, a 429 as an error)."""
    from gpujob.providers.runpod.client import SPOT_WITHDRAWN_SOURCE

    fields = ("secureSpotPrice", "communitySpotPrice")
    types = [t for b in bodies if isinstance(b, list) for t in b if isinstance(t, dict)]
    types = [t for t in types if any(k in t for k in fields)]  # answered the fields selected
    priced = [t for t in types if any(_positive(t.get(k)) for k in fields)]
    if not types:
        return "spot state unknown: the answer carries no spot price fields"
    if priced:
        return f"spot offered: {len(priced)} of {len(types)} GPU types have a spot price"
    return (
        f"spot WITHDRAWN: GraphQL answers, but none of {len(types)} GPU types has a spot price "
        f"(spot: prefer plans on-demand, spot: true is refused; {SPOT_WITHDRAWN_SOURCE})"
    )


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


async def _read(check: Check, api: ApiClient) -> list[Any]:
    if check.query is not None:
        holds(check.query.lstrip().startswith("query"), "doctor sends read-only GraphQL queries only")
        data = await api.graphql(check.query, {}, idempotent=True)
        return [data.get(check.field_name) if isinstance(data, dict) else data]
    bodies: list[Any] = []
    params = dict(check.params or {})
    for _ in range(MAX_PAGES):
        body = await api.request("GET", check.path, params=params or None)
        bodies.append(body)
        cursor = _next(check, body)
        if cursor is None:
            break
        params = {**params, ("cursor" if check.paged == "v2" else "after"): cursor}
    return bodies


def _next(check: Check, body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    if check.paged == "v2":
        page = body.get("pagination")
        return page.get("nextCursor") if isinstance(page, dict) and page.get("hasNextPage") else None
    if check.paged == "ps":
        return body.get("nextPage") if body.get("hasMore") else None
    return None


def _items(check: Check, body: Any, found: list[Drift]) -> list[Any]:
    """The objects to check in one answer (a Paperspace page's `items`, or the answer itself)."""
    if check.items is None:
        return body if isinstance(body, list) and check.query is not None else [body]
    if not isinstance(body, dict) or not isinstance(body.get(check.items), list):
        found.append(
            Drift(check.items, "list[object]", "missing" if isinstance(body, dict) else type(body).__name__)
        )
        return []
    if "hasMore" not in body or not isinstance(body["hasMore"], bool):
        found.append(
            Drift(
                "hasMore", "boolean", "missing" if "hasMore" not in body else type(body["hasMore"]).__name__
            )
        )
    return list(body[check.items])


def _summary(check: Check, count: int, pages: int) -> str:
    if not count and check.paged is None:
        return ""
    what = f"{count} item{'s' if count != 1 else ''}"
    if check.paged and pages >= MAX_PAGES:
        what += f" on the first {pages} pages"
    return what


def _said(exc: ProviderError) -> str:
    text = str(exc)
    return text.split(": ", 2)[-1] if ": " in text else text
