"""The providers' multi-node groups against the simulator over real HTTP: a RunPod Instant Cluster and
Paperspace machines in one private network, each read back with its nodes, all or nothing on create
(a node that cannot be had leaves no node billing), ended whole."""

from __future__ import annotations

import pytest

from gpujob.errors import ProviderCapacityError
from gpujob.providers.base import LaunchRequest
from tests.providers.conftest import Backend
from tests.providers.test_provider_sim_faults import live

pytestmark = pytest.mark.anyio

H100 = "NVIDIA H100 80GB HBM3"
CLUSTER = LaunchRequest(name="gpujob-mn--abcd1234", gpu_id=H100, image="img", volume_gb=20, nodes=2)
NET = LaunchRequest(name="gpujob-mn--abcd1234", gpu_id="A4000", template="tkni3aa4", volume_gb=50, nodes=2)


def _members(b: Backend, table: str) -> list[str]:
    with b.sim.engine.lock:
        return [r.id for r in getattr(b.sim.engine.state, table).values() if r.ended_at is None]


async def test_a_runpod_cluster_is_one_resource_with_every_node(simb: Backend) -> None:
    async with simb.open({"runpod"}) as p:
        rp = p["runpod"]
        simb.sim.inject("capacity", gpu=H100)
        with pytest.raises(ProviderCapacityError):
            await rp.create_machine(CLUSTER)
        assert _members(simb, "pods") == [] and not simb.sim.engine.state.clusters

        group = await rp.create_machine(CLUSTER)
        assert group.kind == "cluster" and group.status == "running" and group.ssh is not None
        assert [n.rank for n in group.nodes] == [0, 1] and all(n.ssh for n in group.nodes)
        assert len({n.private_ip for n in group.nodes}) == 2
        listed = await rp.list_resources()
        assert [r.id for r in listed if r.kind == "cluster"] == [group.id]
        assert sorted(r.id for r in listed if r.attributes.get("cluster_id") == group.id) == sorted(
            n.machine_id for n in group.nodes
        )
        await rp.terminate(group)
        assert _members(simb, "pods") == [] and await rp.get("cluster", group.id) is None


async def test_paperspace_nodes_share_a_private_network_all_or_nothing(simb: Backend) -> None:
    async with simb.open({"paperspace"}) as p:
        ps = p["paperspace"]
        simb.sim.inject("capacity", gpu="A4000", count=1)  # one of the two nodes cannot be had
        with pytest.raises(ProviderCapacityError):
            await ps.create_machine(NET)
        assert _members(simb, "machines") == [] and not simb.sim.engine.state.networks

        group = await ps.create_machine(NET)
        assert group.kind == "private_network" and group.status == "running"
        assert [n.name for n in group.nodes] == ["gpujob-mn--n0--abcd1234", "gpujob-mn--n1--abcd1234"]
        assert all(n.private_ip and n.ssh for n in group.nodes)
        assert len({n.private_ip for n in group.nodes}) == 2
        stopped = await ps.stop(group)
        assert stopped.status == "stopped" and {n.status for n in stopped.nodes} == {"stopped"}
        await ps.terminate(stopped)
        assert _members(simb, "machines") == [] and not simb.sim.engine.state.networks
    assert live(simb, "machines", "gpujob-mn--abcd1234") == []
