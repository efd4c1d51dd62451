"""RunPod REST v2 and GraphQL payloads, as the API sends them (unknown keys ignored)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from gpujob.model import WireModel
from gpujob.providers.lenient import LenientFloat


class SshEndpoint(WireModel):
    host: str
    port: int
    username: str = "root"
    command: str | None = None


class PodSsh(WireModel):
    proxy: SshEndpoint | None = None
    direct: SshEndpoint | None = None


class GpuConfig(WireModel):
    wire_optional = frozenset({"count"})
    id: str
    count: int = 1


class PersistentMount(WireModel):
    size: int
    path: str


class NetworkMount(WireModel):
    volume_id: str = Field(alias="volumeId")
    path: str


class Mounts(WireModel):
    wire_optional = frozenset({"persistent", "network"})
    persistent: PersistentMount | None = None
    network: list[NetworkMount] | None = None


class RuntimePort(WireModel):
    """PodRuntimePort: a live port mapping. `public` and `ip` are null when the port is not published."""

    wire_optional = frozenset({"private", "public", "type", "ip"})  # PodRuntimePort requires none
    private: int | None = None
    public: int | None = None
    type: str | None = None
    ip: str | None = None


class PodRuntime(WireModel):
    wire_optional = frozenset({"uptime", "ports"})  # PodRuntime requires none; runtime may be {}
    uptime: int | None = None
    ports: list[RuntimePort] = Field(default_factory=list)


class PodCluster(WireModel):
    """A pod's membership in an Instant Cluster (v2 PodCluster)."""

    wire_optional = frozenset({"rank", "role", "ip"})
    id: str
    rank: int | None = None
    role: str | None = None
    ip: str | None = None  # the pod's address on the cluster's private overlay network


class Pod(WireModel):
    """A v2 pod. v2 has no interruptible flag: gpujob marks the spot pods it rents through GraphQL with
    the env var GPUJOB_SPOT=1 (see provider.SPOT_TAG), which v2 reports back in `env`."""

    wire_optional = frozenset({"gpu", "cpu", "cluster"})  # gpu or cpu by pod kind; cluster for members
    id: str
    name: str = ""
    status: str = ""
    actions: list[str] = Field(default_factory=list)
    image: str | None = None
    disk: int | None = None
    ports: list[str] = Field(default_factory=list)
    env: dict[str, Any] = Field(default_factory=dict)
    mounts: Mounts | None = None
    gpu: GpuConfig | None = None
    cpu: dict[str, Any] | None = None
    cloud: str | None = None
    data_center_id: str | None = Field(None, alias="dataCenterId")
    ssh: PodSsh | None = None
    template: str | None = None
    cost: LenientFloat = None
    locked: bool = False
    runtime: PodRuntime | None = None
    created_at: datetime | None = Field(None, alias="createdAt")
    started_at: datetime | None = Field(None, alias="startedAt")
    cluster: PodCluster | None = None


class Pagination(WireModel):
    """The production spec's cursor block on list responses (runpod/typescript-api-sdk spec/openapi.yaml
    components.schemas.Pagination); absent from older answers, which are then one complete page."""

    next_cursor: str | None = Field(None, alias="nextCursor")
    has_next_page: bool = Field(False, alias="hasNextPage")


class Page(WireModel):
    wire_optional = frozenset({"pagination"})  # only in the production spec's answers
    pagination: Pagination | None = None


class PodList(Page):
    pods: list[Pod]  # required: a listing without it proves nothing about absence


class NetworkVolume(WireModel):
    id: str
    name: str = ""
    size: int = 0
    data_center: str | None = Field(None, alias="dataCenter")
    type: str | None = None


class NetworkVolumeList(Page):
    network_volumes: list[NetworkVolume] = Field(alias="networkVolumes")


class Template(WireModel):
    id: str
    name: str = ""
    image: str | None = None
    public: bool = False


class TemplateList(Page):
    templates: list[Template]


class ClusterCompute(WireModel):
    gpu_type_id: str = Field(alias="gpuTypeId")
    gpu_count_per_pod: int = Field(1, alias="gpuCountPerPod")
    pod_count: int = Field(0, alias="podCount")


class Cluster(WireModel):
    """An Instant Cluster (v2 Cluster). Its member pods bill as pods: GET /v2/pods lists them only with
    includeClusterPods=true."""

    id: str
    name: str = ""
    type: str | None = None
    compute: ClusterCompute | None = None
    data_center_id: str | None = Field(None, alias="dataCenterId")
    created_at: datetime | None = Field(None, alias="createdAt")


class ClusterList(Page):
    clusters: list[Cluster]


class EndpointWorkers(WireModel):
    wire_optional = frozenset({"idleTimeout"})
    min: int = 0
    max: int = 0


class EndpointGpu(WireModel):
    wire_optional = frozenset({"count", "excludedTypes"})
    pools: list[str] = Field(default_factory=list)
    count: int = 1
    excluded_types: list[str] = Field(default_factory=list, alias="excludedTypes")


class Endpoint(WireModel):
    """A serverless endpoint (v2 Endpoint): `workers.min` workers stay up, and bill, around the clock."""

    wire_optional = frozenset({"gpu", "type"})
    id: str
    name: str = ""
    type: str | None = None
    gpu: EndpointGpu | None = None
    workers: EndpointWorkers = Field(default_factory=EndpointWorkers)
    data_center_ids: list[str] = Field(default_factory=list, alias="dataCenterIds")
    created_at: datetime | None = Field(None, alias="createdAt")


class EndpointList(Page):
    endpoints: list[Endpoint]


class Registry(WireModel):
    id: str
    name: str = ""


class RegistryList(Page):
    registries: list[Registry]


class GpuPrice(WireModel):
    wire_optional = frozenset({"serverless"})
    secure: LenientFloat = None
    community: LenientFloat = None
    serverless: LenientFloat = None  # per GPU-hour of a serverless worker (v2 catalog)


class GpuType(WireModel):
    wire_optional = frozenset({"availability", "dataCenters"})  # only with include=AVAILABILITY
    id: str
    name: str = ""
    pool: str | None = None  # the serverless pool the type belongs to
    memory: int | None = None
    secure: bool = False
    community: bool = False
    price: GpuPrice = Field(default_factory=GpuPrice)
    availability: str | None = None
    data_centers: list[dict[str, Any]] = Field(default_factory=list, alias="dataCenters")


class GpuTypeList(Page):
    gpus: list[GpuType] = Field(default_factory=list)


class LowestPrice(WireModel):
    """gpuTypes { lowestPrice(input: {gpuCount, secureCloud}) { ... } } (runpod-python queries/gpus.py)."""

    wire_optional = frozenset({"uninterruptablePrice", "stockStatus"})
    minimum_bid_price: LenientFloat = Field(None, alias="minimumBidPrice")
    uninterruptable_price: LenientFloat = Field(None, alias="uninterruptablePrice")
    stock_status: str | None = Field(None, alias="stockStatus")


class GraphQLGpuType(WireModel):
    id: str
    lowest_price: LowestPrice | None = Field(None, alias="lowestPrice")


class GraphQLSpotPrices(WireModel):
    """gpuTypes { id secureSpotPrice communitySpotPrice }: whether RunPod still prices spot (client.SPOT_PROBE)."""

    wire_optional = frozenset({"secureSpotPrice", "communitySpotPrice"})
    id: str
    secure_spot_price: LenientFloat = Field(None, alias="secureSpotPrice")
    community_spot_price: LenientFloat = Field(None, alias="communitySpotPrice")


class GraphQLPod(WireModel):
    """What podRentInterruptable / podBidResume return (GraphQL field names)."""

    wire_optional = frozenset({"name", "desiredStatus", "costPerHr"})  # whatever the query selected
    id: str
    name: str | None = None
    desired_status: str | None = Field(None, alias="desiredStatus")
    cost_per_hr: LenientFloat = Field(None, alias="costPerHr")


class BillingRecord(WireModel):
    """One bucket of /v2/billing/pods or /v2/billing/network-volumes (PodBillingRecord and
    NetworkVolumeBillingRecord of the v2 spec): the id it bills and its total."""

    wire_optional = frozenset({"podId", "networkVolumeId"})  # the one its endpoint bills
    start_time: datetime | None = Field(None, alias="startTime")
    pod_id: str | None = Field(None, alias="podId")
    network_volume_id: str | None = Field(None, alias="networkVolumeId")
    total_amount: LenientFloat = Field(None, alias="totalAmount")


class BillingList(WireModel):
    records: list[BillingRecord]  # required: a listing without it proves nothing


class Myself(WireModel):
    """GraphQL `myself`: the account's balance and its current spend rate."""

    wire_optional = frozenset({"id"})

    id: str | None = None
    client_balance: LenientFloat = Field(None, alias="clientBalance")
    current_spend_per_hr: LenientFloat = Field(None, alias="currentSpendPerHr")
    spend_limit: LenientFloat = Field(None, alias="spendLimit")
