"""Each node's command line and environment (gpujob.jobfile.nodes), pure."""

from __future__ import annotations

import shlex

import pytest

from gpujob.jobfile.nodes import GangError, gang_launches, is_gang, planned_launches

from .specs import gang_spec, live_nodes


def test_launcher_none_runs_the_command_itself_with_the_rendezvous_in_its_env() -> None:
    spec = gang_spec(nodes=2, gpus=4)
    starts = gang_launches(spec, list(reversed(live_nodes(2))))  # rank order whatever the read order
    assert [s.rank for s in starts] == [0, 1]
    assert all(s.command == "python train.py --lr 3e-4" for s in starts)
    env1 = dict(starts[1].env)
    assert env1 == {
        "MASTER_ADDR": "127.0.9.1",
        "MASTER_PORT": "29500",
        "PRIMARY_ADDR": "127.0.9.1",
        "PRIMARY_PORT": "29500",
        "HOST_NODE_ADDR": "127.0.9.1:29500",
        "NODE_ADDR": "127.0.9.2",
        "NODE_RANK": "1",
        "NNODES": "2",
        "NUM_NODES": "2",
        "GPUS_PER_NODE": "4",
        "NUM_TRAINERS": "4",
        "WORLD_SIZE": "8",
        "NCCL_SOCKET_IFNAME": "lo",
        "GLOO_SOCKET_IFNAME": "lo",
    }
    assert dict(starts[0].env)["NODE_RANK"] == "0"


def test_torchrun_wraps_the_command_with_node_zero_hosting_the_rendezvous() -> None:
    spec = gang_spec(nodes=3, launcher="torchrun", gpus=2, rendezvous_port=29400)
    starts = gang_launches(spec, live_nodes(3))
    argv = shlex.split(starts[2].command)
    assert argv[:10] == [
        "torchrun",
        "--nnodes=3",
        "--node-rank=2",
        "--nproc-per-node=2",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=127.0.9.1:29400",
        "--rdzv-id=gang",
        "--rdzv-conf=is_host=false",
        f"--local-addr={dict(starts[2].env)['NODE_ADDR']}",  # known by its address, not hostname and pid
        "--no-python",
    ]
    assert argv[10:] == ["bash", "-c", "python train.py --lr 3e-4"]
    assert "--rdzv-conf=is_host=true" in shlex.split(starts[0].command)
    assert dict(starts[2].env)["WORLD_SIZE"] == "6"


def test_one_machine_torchrun_meets_on_loopback_and_plain_one_machine_is_untouched() -> None:
    spec = gang_spec(nodes=1, launcher="torchrun")
    (start,) = gang_launches(spec, [])
    assert "--rdzv-endpoint=127.0.0.1:29500" in start.command and dict(start.env)["WORLD_SIZE"] == "1"
    assert not is_gang(gang_spec(nodes=1))


def test_unnamed_interface_leaves_nccl_to_choose() -> None:
    env = dict(gang_launches(gang_spec(), live_nodes(2, interface=None))[0].env)
    assert "NCCL_SOCKET_IFNAME" not in env and "GLOO_SOCKET_IFNAME" not in env


def test_a_gang_that_is_not_whole_or_has_no_address_is_refused() -> None:
    spec = gang_spec(nodes=2)
    with pytest.raises(GangError, match="not whole"):
        gang_launches(spec, live_nodes(1))
    nodes = live_nodes(2)
    nodes[1] = nodes[1].model_copy(update={"private_ip": None})
    with pytest.raises(GangError, match=r"node\(s\) \[1\] have no private address"):
        gang_launches(spec, nodes)


def test_plan_lines_before_the_nodes_exist() -> None:
    lines = [s.shown() for s in planned_launches(gang_spec(nodes=2, launcher="torchrun"))]
    assert lines[1].startswith(
        "NODE_RANK=1 WORLD_SIZE=2 MASTER_ADDR=<node 0's private address> MASTER_PORT=29500"
    )
    assert "torchrun --nnodes=2 --node-rank=1" in lines[1]
