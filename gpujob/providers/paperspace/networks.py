"""A multi-node job on Paperspace: N machines in one private network (`POST /private-networks`,
`networkId` on each machine create), read back as one LiveResource of kind "private_network" whose
`nodes` are its machines in rank order, each with its `privateIp` (docs/multinode.md).

All or nothing: the network first, then every node; if one cannot be had, the nodes already made are
destroyed and the network deleted before the error is raised, so nothing of the job is left billing.
Each node keeps its own disk; stop and start reach every node at once."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from typing import Any

from gpujob import naming
from gpujob.errors import ProviderError, ProviderNotFound
from gpujob.live import LiveNode, LiveResource, group_status
from gpujob.providers.base import LaunchRequest
from gpujob.providers.paperspace import wire
from gpujob.providers.paperspace.client import PLATFORM
from gpujob.providers.paperspace.wire import normalise_region

_RANK = re.compile(r"--n(\d+)--")


def rank_of(r: LiveResource) -> int:
    m = _RANK.search(r.name)
    return int(m.group(1)) if m else 1 << 20


def group_of(n: wire.PrivateNetwork, machines: Sequence[LiveResource]) -> LiveResource:
    members = sorted((m for m in machines if m.attributes.get("network_id") == n.id), key=rank_of)
    members = [m for m in members if m.status != "terminating"]
    nodes = [
        LiveNode(
            rank=i,
            machine_id=m.id,
            name=m.name,
            status=m.status,
            raw_status=m.raw_status,
            ssh=m.ssh,
            private_ip=str(m.attributes.get("private_ip") or "") or None,
            gpu_id=m.gpu_id,
            gpu_count=m.gpu_count,
            cost_per_hour=m.cost_per_hour,
        )
        for i, m in enumerate(members)
    ]
    first = members[0] if members else None
    status = group_status([x.status for x in nodes]) if nodes else "available"
    running = sum(1 for x in nodes if x.status == "running")
    return LiveResource(
        platform="paperspace",
        kind="private_network",
        id=n.id,
        name=n.name,
        status=status,
        raw_status=f"{running}/{len(nodes)} ready" if nodes else "no machines",
        gpu_id=first.gpu_id if first else None,
        gpu_count=first.gpu_count if first else 0,
        region=normalise_region(n.region),
        volume_gb=first.volume_gb if first else None,
        public_ip=first.public_ip if first else None,
        public_ip_kind=first.public_ip_kind if first else None,
        ssh=first.ssh if first and status == "running" else None,
        created_at=n.dt_created,
        attributes={"network": n.network, "netmask": n.netmask, "nodes_running": running},
        nodes=nodes,
    )


def groups(networks: Sequence[wire.PrivateNetwork], machines: Sequence[LiveResource]) -> list[LiveResource]:
    return [group_of(n, machines) for n in networks if not n.dt_deleted]


async def get_group(provider: Any, network_id: str) -> LiveResource | None:
    try:
        n = await provider.client.get_private_network(network_id)
    except ProviderNotFound:
        return None
    if n is None or n.dt_deleted:
        return None
    machines = [provider._live(m) for m in await provider.client.list_machines()]
    return group_of(n, machines)


def _node_request(r: LaunchRequest, rank: int, network_id: str) -> LaunchRequest:
    o = naming.parse(r.name)
    if o is None:
        raise ProviderError(f"'{r.name}' is not a gpujob machine name", platform=PLATFORM)
    name = naming.node_name(o.job, rank, o.project)
    return r.model_copy(update={"name": name, "nodes": 1, "network_id": network_id})


async def create(provider: Any, r: LaunchRequest) -> LiveResource:
    """The network, then its r.nodes machines at once; all or nothing."""
    client = provider.client
    existing = [n for n in await client.list_private_networks() if n.name == r.name and not n.dt_deleted]
    net = existing[0] if existing else await client.create_private_network(r.name, r.region or "ny2")
    results = await asyncio.gather(
        *(provider.create_machine(_node_request(r, rank, net.id)) for rank in range(r.nodes)),
        return_exceptions=True,
    )
    failed = [x for x in results if isinstance(x, BaseException)]
    if failed:
        await delete(provider, net.id)  # all or nothing: no node of it left billing
        raise failed[0]
    group = await get_group(provider, net.id)
    if group is None:
        raise ProviderNotFound(
            f"private network {net.id} vanished after its machines were made", platform=PLATFORM
        )
    return group


async def delete(provider: Any, network_id: str) -> None:
    """Destroy every machine in the network, then the network."""
    client = provider.client
    machines = [provider._live(m) for m in await client.list_machines() if m.network_id == network_id]
    await asyncio.gather(*(provider.terminate(m) for m in machines if m.status != "terminating"))
    with contextlib.suppress(ProviderNotFound):
        await client.delete_private_network(network_id)


async def each(provider: Any, resource: LiveResource, verb: str) -> LiveResource:
    """Start or stop every node at once (a node already there is left as it is), then read the group."""
    client = provider.client
    machines = [provider._live(m) for m in await client.list_machines() if m.network_id == resource.id]
    want = "running" if verb == "start" else "stopped"
    todo = [m for m in machines if m.status != want and m.status != "terminating"]
    await asyncio.gather(*(getattr(provider, verb)(m) for m in todo))
    group = await get_group(provider, resource.id)
    if group is None:
        raise ProviderNotFound(f"private network {resource.id} is gone", platform=PLATFORM)
    return group
