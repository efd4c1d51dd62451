"""What run.launcher means on each node of a multi-node job (issue #38, docs/multinode.md "Launch,
preflight and the gang"): the command line a node runs and the environment it runs with. Pure: the plan
shows these lines, apply's runtime starts them over SSH, the tests read them.

The names follow RunPod's Instant Clusters, which set them on every member pod
(https://docs.runpod.io/instant-clusters/configuration): PRIMARY_ADDR / MASTER_ADDR, PRIMARY_PORT /
MASTER_PORT, NODE_ADDR, NODE_RANK, NUM_NODES, NUM_TRAINERS, WORLD_SIZE (NUM_NODES x NUM_TRAINERS);
gpujob sets them on Paperspace too, and adds NNODES and GPUS_PER_NODE (torchrun's words), and
NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME: the private interface, so the collective traffic never takes
the public one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gpujob.quote import q

if TYPE_CHECKING:
    from gpujob.jobfile.model import JobSpec

# Shown in a plan before the nodes exist: node 0's private address is known only once it runs.
PLANNED_ADDR = "<node 0's private address>"
PLANNED_IFACE = "<private interface>"


class NodeLike(Protocol):
    """What the launch reads of a live node (gpujob.live.LiveNode has it)."""

    @property
    def rank(self) -> int: ...
    @property
    def private_ip(self) -> str | None: ...
    @property
    def interface(self) -> str | None: ...


@dataclass(frozen=True)
class NodeLaunch:
    """One node's start: `command` is run by bash in run.sync.dest, with `env` added to the run's own."""

    rank: int
    command: str
    env: tuple[tuple[str, str], ...]

    def shown(self) -> str:
        """The plan's line: the variables a reader checks, then the command."""
        names = ("NODE_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NCCL_SOCKET_IFNAME")
        env = dict(self.env)
        return " ".join(f"{n}={env[n]}" for n in names if n in env) + f" {self.command}"


class GangError(ValueError):
    """The live nodes cannot make the gang the job file asks for (a node without a private address)."""


def node_count(spec: JobSpec) -> int:
    return spec.machine.nodes


def is_gang(spec: JobSpec) -> bool:
    """The launch goes through this module: several nodes, or torchrun around the command."""
    return spec.run is not None and (node_count(spec) > 1 or spec.run.launcher == "torchrun")


def node_launch(
    spec: JobSpec, rank: int, *, master_addr: str, interface: str | None, node_addr: str | None = None
) -> NodeLaunch:
    """Node `rank`'s command line and environment, node 0 at `master_addr` on `interface` (None: the
    platform did not name it, and NCCL/gloo pick their own)."""
    run = spec.run
    if run is None:
        raise GangError(f"{spec.name}: no run section: nothing is launched")
    nodes, gpus, port = node_count(spec), spec.machine.gpu_count, run.rendezvous_port
    if not 0 <= rank < nodes:
        raise GangError(f"{spec.name}: node rank {rank} outside 0..{nodes - 1}")
    env = {
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(port),
        "PRIMARY_ADDR": master_addr,
        "PRIMARY_PORT": str(port),
        "HOST_NODE_ADDR": f"{master_addr}:{port}",
        "NODE_ADDR": node_addr or (master_addr if rank == 0 else ""),
        "NODE_RANK": str(rank),
        "NNODES": str(nodes),
        "NUM_NODES": str(nodes),
        "GPUS_PER_NODE": str(gpus),
        "NUM_TRAINERS": str(gpus),
        "WORLD_SIZE": str(nodes * gpus),
        "NCCL_SOCKET_IFNAME": interface or "",
        "GLOO_SOCKET_IFNAME": interface or "",
    }
    if not env["NODE_ADDR"]:
        del env["NODE_ADDR"]
    if interface is None:
        del env["NCCL_SOCKET_IFNAME"], env["GLOO_SOCKET_IFNAME"]
    if run.launcher == "torchrun":
        # c10d: node 0 hosts the rendezvous store (is_host said, not guessed from the address: on a shared
        # loopback every node would take itself for the host); the command runs as it would under bash
        # (--no-python), so `python train.py --lr 3e-4` or `cd x && python y.py` both work.
        # --local-addr: each node known to the rendezvous by its own private address, not by hostname and
        # pid, which two nodes may share (containers made alike number their processes alike)
        local = f"--local-addr={env['NODE_ADDR']} " if env.get("NODE_ADDR") else ""
        command = (
            f"torchrun --nnodes={nodes} --node-rank={rank} --nproc-per-node={gpus} --rdzv-backend=c10d "
            f"--rdzv-endpoint={master_addr}:{port} --rdzv-id={spec.name} "
            f"--rdzv-conf=is_host={'true' if rank == 0 else 'false'} {local}--no-python bash -c {q(run.command)}"
        )
    else:
        command = run.command
    return NodeLaunch(rank=rank, command=command, env=tuple(env.items()))


def gang_launches(spec: JobSpec, nodes: Sequence[NodeLike]) -> list[NodeLaunch]:
    """Every node's start, in rank order, from the live nodes (node 0's private address is the
    rendezvous). A one-machine job with torchrun meets on its own loopback."""
    count = node_count(spec)
    if count == 1 and not nodes:
        return [node_launch(spec, 0, master_addr="127.0.0.1", interface="lo")]
    ranked = sorted(nodes, key=lambda n: n.rank)
    if [n.rank for n in ranked] != list(range(count)):
        raise GangError(
            f"{spec.name}: machine.nodes is {count} and the live nodes have ranks "
            f"{[n.rank for n in ranked]}: the gang is not whole"
        )
    first = ranked[0]
    missing = [n.rank for n in ranked if not n.private_ip]
    if missing:
        raise GangError(f"{spec.name}: node(s) {missing} have no private address yet: nothing is launched")
    master = first.private_ip or ""
    return [
        node_launch(spec, n.rank, master_addr=master, interface=n.interface, node_addr=n.private_ip)
        for n in ranked
    ]


def planned_launches(spec: JobSpec) -> list[NodeLaunch]:
    """The plan's view before the nodes exist: the same lines with placeholders for the addresses."""
    return [
        node_launch(spec, r, master_addr=PLANNED_ADDR, interface=PLANNED_IFACE)
        for r in range(node_count(spec))
    ]
