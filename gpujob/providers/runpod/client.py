"""RunPod: one method per HTTP call. REST v2 for pods, network volumes, catalog and SSH keys; GraphQL only
for what v2 does not offer: spot pods, the live bid floor and the balance.

RunPod retires GraphQL (staged rate limits since 2026-09-17, 410 Gone in early 2027): a 410, a 404 of the
endpoint, or an answer that says it is retired is remembered by the client, so for the rest of the
command every GraphQL call fails at once with GraphQLRetired, which says once what no longer works and
what gpujob does instead. Its 429s go through the same pacing and Retry-After handling as v2's."""

from __future__ import annotations

import json
import re
from typing import Any, Final, TypeVar

import httpx

from gpujob.errors import ProviderAuthError, ProviderCapacityError, ProviderError
from gpujob.providers.failures import ErrorInfo, text_snippet
from gpujob.providers.http import ApiClient
from gpujob.providers.runpod import wire

PLATFORM: Final = "runpod"
V2_PAGE_LIMIT: int | None = None  # None: the server's default page (1000 in the production spec)
MAX_PAGES = 500
L = TypeVar("L", bound=wire.Page)


class PoolRefused(ProviderCapacityError):
    """403 on POST /v2/pods: this GPU pool is not offered to the account. Like no capacity, the next
    candidate may well work; unlike it, waiting does not help (create_with_fallback knows)."""


# v2 reports "no capacity" as a 400 told apart only by its detail; GraphQL as a 200 with errors.
_CAPACITY = re.compile(
    r"no (longer any )?(instances?|capacity|gpus?)( available)?|not enough free gpus|"
    r"could not be placed|out of (stock|capacity)|insufficient capacity|no available",
    re.IGNORECASE,
)
# A spot bid under the current floor: the market moved between the price read and the rent. Like no
# capacity, the next candidate (or a fresh read of the floor) may work. No public source quotes the
# exact wording, so this matches the words any such message needs.
_BID = re.compile(r"\bbid\b.*\b(too low|below|lower than|less than|minimum|outbid)", re.IGNORECASE)


# How a retired API answers: 410 Gone, or words to that effect in an error (any status).
_RETIRED = re.compile(r"\bretired\b|no longer (serves?|serving|available|supported)|\b410\b|\bgone\b", re.I)
# A GraphQL that lives on without the spot mutations ("being removed from the runpod api").
_SPOT_REMOVED = re.compile(r'Cannot query field "?(podRentInterruptable|podBidResume)', re.I)

# Spot withdrawn while GraphQL still answers (RunPod's docs dropped every spot reference on 2026-05-06,
# runpod/docs 8e5aebdb, months before GraphQL's 410): no GPU type has an interruptible price, or a rent
# or bid resume is refused in words to that effect.
SPOT_WITHDRAWN = (
    "RunPod offers no spot: GraphQL answers, but no GPU type has an interruptible price and spot rents are "
    "refused (spot left RunPod's docs on 2026-05-06)"
)
SPOT_WITHDRAWN_SOURCE = (
    "runpod/docs commit 8e5aebdb, 2026-05-06: every spot and interruptible reference removed"
)
_SPOT_REFUSED = re.compile(
    r"(spot|interruptible)\b[^.]*\b(no longer (offered|available)|not offered|discontinued|withdrawn)", re.I
)
SPOT_PROBE = "query { gpuTypes { id secureSpotPrice communitySpotPrice } }"

RETIRED_LOSES = (
    "spot pods (create and resume), the live spot bid floor (minimumBidPrice) and the account balance"
)
RETIRED_INSTEAD = (
    "gpujob goes on with REST v2 alone: on-demand pods (machine.spot: prefer falls back to them), spot "
    "prices from the profile, and no balance (RP8 says so; the console's Billing page shows it)"
)


class GraphQLRetired(ProviderError):
    """RunPod's GraphQL API (or its spot part) is gone: what needed it cannot be done at all now."""


def is_retired_text(text: str) -> bool:
    return bool(_RETIRED.search(text or ""))


def is_bid_text(text: str) -> bool:
    return bool(_BID.search(text or ""))


def is_capacity_text(text: str) -> bool:
    return bool(_CAPACITY.search(text or "")) or is_bid_text(text)


def parse_error(response: httpx.Response | None, body: Any) -> ErrorInfo:
    """v2 problem+json {title, status, detail, errors[]}; GraphQL {errors[{message}]}; v1 {message}."""
    if isinstance(body, dict):
        if isinstance(body.get("errors"), list) and body["errors"] and isinstance(body["errors"][0], dict):
            text = "; ".join(_gql_error_text(e) for e in body["errors"] if isinstance(e, dict))
            return ErrorInfo(text, capacity=is_capacity_text(text))
        detail = body.get("detail") or body.get("message") or body.get("title") or ""
        errors = body.get("errors")
        text = str(detail)
        if isinstance(errors, list) and errors:
            text += " (" + "; ".join(str(e) for e in errors) + ")"
        status = response.status_code if response is not None else 0
        return ErrorInfo(text, capacity=status == 400 and is_capacity_text(text))
    return ErrorInfo(text_snippet(response))


def _gql_error_text(error: dict[str, Any]) -> str:
    """The message plus its code when the code says more than RunPod's generic one: a server fault
    ({"extensions": {"code": "INTERNAL_SERVER_ERROR"}}) must read as one, whatever its wording."""
    message = str(error.get("message", ""))
    ext = error.get("extensions")
    code = (ext.get("code") if isinstance(ext, dict) else None) or error.get("code")
    if isinstance(code, str) and code and code != "RUNPOD" and code not in message:
        return f"{message} ({code})" if message else code
    return message


LOWEST_PRICE = """
query lowestPrice {
  gpuTypes(input: {id: %s}) {
    id
    lowestPrice(input: {gpuCount: %d, secureCloud: %s}) { minimumBidPrice uninterruptablePrice stockStatus }
  }
}"""

RENT_SPOT = """
mutation rent($input: PodRentInterruptableInput!) {
  podRentInterruptable(input: $input) { id name desiredStatus costPerHr }
}"""

MYSELF = """
query myself { myself { id clientBalance currentSpendPerHr spendLimit } }"""

BID_RESUME = """
mutation resume($input: PodBidResumeInput!) {
  podBidResume(input: $input) { id desiredStatus costPerHr }
}"""


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


class RunPodClient:
    def __init__(self, rest: ApiClient, graphql: ApiClient) -> None:
        self.rest = rest
        self.gql = graphql
        self.graphql_gone: str | None = None  # why, once GraphQL answered that it is retired
        self.spot_gone: str | None = None  # why spot is gone (GraphQL retired, or its spot mutations)

    def retired(self, what: str) -> GraphQLRetired:
        if self.graphql_gone is None and self.spot_gone == SPOT_WITHDRAWN:
            return GraphQLRetired(
                f"{what} is not possible: {SPOT_WITHDRAWN}",
                platform=PLATFORM,
                call=self.gql.call_name("POST", ""),
                hint="set machine.spot: prefer (on-demand within max_price_per_hour) or false",
            )
        why = self.graphql_gone or self.spot_gone or "retired"
        return GraphQLRetired(
            f"{what} is not possible: RunPod's GraphQL API is gone ({why})",
            platform=PLATFORM,
            call=self.gql.call_name("POST", ""),
            status=410,
            hint=f"RunPod retired GraphQL in early 2027; without it there are no {RETIRED_LOSES}. "
            f"{RETIRED_INSTEAD}. For spot jobs: set machine.spot: prefer (or false)",
        )

    async def _graphql(
        self, query: str, variables: dict[str, Any], *, idempotent: bool, what: str, spot: bool = False
    ) -> Any:
        """One GraphQL call, unless GraphQL (or, for a spot call, its spot part) is already known gone."""
        if self.graphql_gone is not None or (spot and self.spot_gone is not None):
            raise self.retired(what)
        try:
            return await self.gql.graphql(query, variables, idempotent=idempotent)
        except GraphQLRetired:
            raise
        except ProviderError as exc:
            status = getattr(exc, "status", None)
            text = str(exc)
            if status in (404, 410) or (status != 200 and is_retired_text(text)):
                said = {410: "HTTP 410 Gone", 404: "HTTP 404 Not Found"}.get(
                    status or 0, "it says it is retired"
                )
                self.graphql_gone = self.spot_gone = said
                raise self.retired(what) from None
            if _SPOT_REMOVED.search(text):
                self.spot_gone = "its spot mutations are removed"
                raise self.retired(what) from None
            if spot and _SPOT_REFUSED.search(text):
                self.spot_gone = SPOT_WITHDRAWN
                raise self.retired(what) from None
            raise

    async def spot_offer(self) -> bool:
        """Whether RunPod still offers spot: one GraphQL query of every GPU type's spot prices. None priced
        (GraphQL answers, spot is withdrawn) sets spot_gone; a retired GraphQL does too (_graphql)."""
        if self.spot_gone is not None:
            return False
        data = await self._graphql(SPOT_PROBE, {}, idempotent=True, what="reading spot prices")
        types = (data or {}).get("gpuTypes") if isinstance(data, dict) else None
        fields = ("secureSpotPrice", "communitySpotPrice")
        # GraphQL answers every field selected (null when unset); an answer without them judges nothing
        judged = [t for t in types or [] if isinstance(t, dict) and any(k in t for k in fields)]
        if not judged:
            return True
        priced = any(any(_positive(t.get(k)) for k in fields) for t in judged)
        if not priced:
            self.spot_gone = SPOT_WITHDRAWN
        return priced

    async def _list_all(self, path: str, model: type[L], params: dict[str, Any] | None = None) -> list[L]:
        """Every page of a v2 list: follow pagination.nextCursor while hasNextPage (the production spec's
        cursor pagination; an answer without the block is one complete page). A repeating cursor leaves
        the listing incomplete, which is an error: absence in a partial list proves nothing."""
        pages: list[L] = []
        query: dict[str, Any] = dict(params or {})
        if V2_PAGE_LIMIT:
            query["limit"] = V2_PAGE_LIMIT
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = model.model_validate(await self.rest.request("GET", path, params=query or None) or {})
            pages.append(page)
            cursor = page.pagination.next_cursor if page.pagination else None
            if not (page.pagination and page.pagination.has_next_page and cursor):
                return pages
            if cursor in seen:
                break
            seen.add(cursor)
            query = {**query, "cursor": cursor}
        raise ProviderError(
            f"listing {path} did not finish (cursor repeated or more than {MAX_PAGES} pages)",
            platform=PLATFORM,
            call=self.rest.call_name("GET", path),
            hint="the listing is incomplete, so gpujob will not conclude anything is absent; re-run later",
        )

    # pods
    async def list_pods(self, *, include_cluster: bool = False) -> list[wire.Pod]:
        """v2 leaves cluster member pods out unless includeClusterPods=true (the audit asks for them)."""
        params = {"includeClusterPods": "true"} if include_cluster else None
        return [p for page in await self._list_all("/pods", wire.PodList, params) for p in page.pods]

    async def list_clusters(self) -> list[wire.Cluster]:
        return [c for page in await self._list_all("/clusters", wire.ClusterList) for c in page.clusters]

    async def get_cluster(self, cluster_id: str) -> wire.Cluster:
        return wire.Cluster.model_validate(await self.rest.request("GET", f"/clusters/{cluster_id}"))

    async def cluster_pods(self, cluster_id: str) -> list[wire.Pod]:
        pages = await self._list_all(f"/clusters/{cluster_id}/pods", wire.PodList)
        return [p for page in pages for p in page.pods]

    async def create_cluster(self, body: dict[str, Any]) -> wire.Cluster:
        return wire.Cluster.model_validate(await self.rest.request("POST", "/clusters", json_body=body))

    async def delete_cluster(self, cluster_id: str) -> None:
        await self.rest.request("DELETE", f"/clusters/{cluster_id}")

    async def list_endpoints(self) -> list[wire.Endpoint]:
        return [e for page in await self._list_all("/serverless", wire.EndpointList) for e in page.endpoints]

    async def get_pod(self, pod_id: str) -> wire.Pod:
        return wire.Pod.model_validate(await self.rest.request("GET", f"/pods/{pod_id}"))

    async def create_pod(self, body: dict[str, Any]) -> wire.Pod:
        try:
            return wire.Pod.model_validate(await self.rest.request("POST", "/pods", json_body=body))
        except ProviderAuthError as exc:
            if exc.status != 403:
                raise
            # The v2 spec's create guidance: 403 = "your account cannot access the requested pool: skip
            # this candidate, keep going". Not a bad key (that is 401): the lists answered with it.
            raise PoolRefused(
                f"{exc} (RunPod does not offer this pool to the account)",
                platform=PLATFORM,
                call=exc.call,
                status=403,
                hint="gpujob tries the next GPU / region / cloud candidate",
            ) from None

    async def update_pod(self, pod_id: str, body: dict[str, Any]) -> wire.Pod:
        return wire.Pod.model_validate(await self.rest.request("PATCH", f"/pods/{pod_id}", json_body=body))

    async def pod_action(self, pod_id: str, action: str) -> wire.Pod | None:
        """start / stop / restart answer 200 + pod; terminate answers 204. Actions are safe to repeat."""
        body = await self.rest.request(
            "POST", f"/pods/{pod_id}/action", json_body={"action": action}, idempotent=True
        )
        return wire.Pod.model_validate(body) if isinstance(body, dict) and body.get("id") else None

    async def delete_pod(self, pod_id: str) -> None:
        await self.rest.request("DELETE", f"/pods/{pod_id}")

    # network volumes
    async def list_volumes(self) -> list[wire.NetworkVolume]:
        pages = await self._list_all("/network-volumes", wire.NetworkVolumeList)
        return [v for page in pages for v in page.network_volumes]

    async def get_volume(self, volume_id: str) -> wire.NetworkVolume:
        return wire.NetworkVolume.model_validate(
            await self.rest.request("GET", f"/network-volumes/{volume_id}")
        )

    async def create_volume(self, name: str, size_gb: int, data_center: str, tier: str) -> wire.NetworkVolume:
        body = {"name": name, "size": size_gb, "dataCenter": data_center, "type": tier}
        return wire.NetworkVolume.model_validate(
            await self.rest.request("POST", "/network-volumes", json_body=body)
        )

    async def grow_volume(self, volume_id: str, size_gb: int) -> wire.NetworkVolume:
        body = await self.rest.request("PATCH", f"/network-volumes/{volume_id}", json_body={"size": size_gb})
        return wire.NetworkVolume.model_validate(body)

    async def rename_volume(self, volume_id: str, name: str) -> wire.NetworkVolume:
        """A network volume's name changes in place (nothing is mounted or moved)."""
        body = await self.rest.request("PATCH", f"/network-volumes/{volume_id}", json_body={"name": name})
        return wire.NetworkVolume.model_validate(body)

    async def delete_volume(self, volume_id: str) -> None:
        await self.rest.request("DELETE", f"/network-volumes/{volume_id}")

    # leftovers that do not bill but belong to the audit
    async def list_templates(self) -> list[wire.Template]:
        return [t for page in await self._list_all("/templates", wire.TemplateList) for t in page.templates]

    async def list_registries(self) -> list[wire.Registry]:
        return [r for page in await self._list_all("/registries", wire.RegistryList) for r in page.registries]

    # catalog and account
    async def catalog_gpus(self, *, cloud: str = "SECURE", count: int = 1) -> list[wire.GpuType]:
        """Prices and stock for `count` GPUs on one cloud: the availability filters default to SECURE and
        1 GPU (v2 spec GpuCloudFilter / GpuCountFilter), which says nothing of community or of 8 GPUs."""
        params = {"include": "AVAILABILITY", "product": "POD", "cloud": cloud, "count": count}
        body = await self.rest.request("GET", "/catalog/gpus", params=params)
        return wire.GpuTypeList.model_validate(body).gpus

    async def lowest_price(self, gpu_id: str, gpu_count: int, *, secure: bool) -> wire.LowestPrice | None:
        """The spot floor now: GraphQL gpuTypes { lowestPrice { minimumBidPrice } } (runpod-python
        queries/gpus.py). Inline literals, as RunPod's clients write it: the input type names are not
        published. A read-only query."""
        query = LOWEST_PRICE % (json.dumps(gpu_id), int(gpu_count), "true" if secure else "false")
        data = await self._graphql(query, {}, idempotent=True, what="reading the spot bid floor", spot=True)
        types = data.get("gpuTypes") if isinstance(data, dict) else None
        for item in types or []:
            gpu = wire.GraphQLGpuType.model_validate(item)
            if gpu.id == gpu_id:
                return gpu.lowest_price
        return None

    async def catalog_prices(self) -> list[wire.GpuType]:
        """Every GPU type with its list prices and serverless pool (no availability asked)."""
        return wire.GpuTypeList.model_validate(await self.rest.request("GET", "/catalog/gpus")).gpus

    # billing (v2): time-bucketed amounts per pod / network volume; the totals are what gpujob reads
    async def billing(self, what: str, start: str | None) -> wire.BillingList:
        """GET /v2/billing/pods or /v2/billing/network-volumes for every resource, day buckets from
        `start` (RFC 3339; the API defaults to 30 days ago) to now."""
        params: dict[str, str] = {"bucketSize": "day"}
        if start is not None:
            params["startTime"] = start
        return wire.BillingList.model_validate(
            await self.rest.request("GET", f"/billing/{what}", params=params)
        )

    async def myself(self) -> wire.Myself:
        data = await self._graphql(MYSELF, {}, idempotent=True, what="reading the balance")
        return wire.Myself.model_validate((data or {}).get("myself") or {})

    # GraphQL: spot
    async def rent_spot(self, variables: dict[str, Any]) -> wire.GraphQLPod:
        data = await self._graphql(
            RENT_SPOT, {"input": variables}, idempotent=False, what="creating a spot pod", spot=True
        )
        return wire.GraphQLPod.model_validate(_field(data, "podRentInterruptable"))

    async def bid_resume(self, pod_id: str, bid_per_gpu: float, gpu_count: int) -> wire.GraphQLPod:
        variables = {"input": {"podId": pod_id, "bidPerGpu": bid_per_gpu, "gpuCount": gpu_count}}
        data = await self._graphql(
            BID_RESUME, variables, idempotent=True, what=f"resuming spot pod {pod_id}", spot=True
        )
        return wire.GraphQLPod.model_validate(_field(data, "podBidResume"))


def _field(data: Any, name: str) -> Any:
    value = data.get(name) if isinstance(data, dict) else None
    if not isinstance(value, dict):
        raise ProviderError(f"GraphQL {name} returned no pod", platform=PLATFORM, call="POST /graphql")
    return value
