"""A multi-node job's run over SSH (issue #38): wait for every node, preflight across them, then sync and
start each node's run detached (gpujob.jobfile.nodes builds each node's command line and environment).
Node 0 starts first: it hosts the rendezvous."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from gpujob.apply.runtime.gangcheck import (
    NodeCheck,
    check_script,
    cost_line,
    listen_script,
    parse_check,
    problems,
    stop_script,
)
from gpujob.apply.runtime.remote import NOT_COMING, POLL_S, Target, connect_wait_s, endpoint_wait_s
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError, SSHConnectError
from gpujob.invariant import present
from gpujob.jobfile.nodes import gang_launches, node_count
from gpujob.live import LiveNode
from gpujob.plan.cadence import quiesce_grace_s
from gpujob.quote import remote_path
from gpujob.state import as_store


class PreflightFailed(GpujobError):
    """A node of the gang failed the preflight: it is named, and nothing was launched."""

    def __init__(self, job: str, lines: list[str], spent: str) -> None:
        super().__init__(
            f"{job}: preflight across the nodes failed; nothing was launched:\n  " + "\n  ".join(lines),
            hint=f"{spent}; fix the node(s) named (or replace them: gpujob apply --replace {job}), then "
            "run gpujob apply again",
        )
        self.lines = lines


def _job_dir(target: Target) -> str:
    return remote_path(f"{target.spec.storage.mount}/.gpujob/{target.spec.name}")


async def wait_for_nodes(target: Target, clock: Clock, note: Callable[[str], None]) -> list[LiveNode]:
    """Re-read the job's machine until every node runs with an SSH endpoint and a private address."""
    count, started, announced = node_count(target.spec), clock.now(), False
    wait_s = endpoint_wait_s()
    while True:
        nodes = sorted(target.resource.nodes, key=lambda n: n.rank)
        ready = [n for n in nodes if n.status == "running" and n.ssh is not None and n.private_ip]
        if len(nodes) == count and len(ready) == count:
            return nodes
        gone = [n for n in nodes if n.status in NOT_COMING]
        if gone:
            raise GpujobError(
                f"{target.spec.name}: node(s) {', '.join(f'{n.rank} ({n.name or n.machine_id})' for n in gone)} "
                "not running: the gang cannot start",
                hint="gpujob apply starts the nodes again; a node the platform cannot give back: --replace",
            )
        if (clock.now() - started).total_seconds() > wait_s:
            raise GpujobError(
                f"{target.spec.name}: {len(ready)} of {count} node(s) ready after {wait_s:.0f}s"
            )
        if not announced:
            note(f"waiting for {count - len(ready)} of {count} node(s) to run with an SSH endpoint")
            announced = True
        await clock.sleep(POLL_S)
        fresh = await target.provider.get(target.resource.kind, target.resource.id)
        if fresh is None:
            raise GpujobError(f"{target.spec.name}: {target.resource.kind} {target.resource.id} disappeared")
        target.resource = fresh


@contextlib.asynccontextmanager
async def open_node(target: Target, node: LiveNode, ssh: SSHApi) -> AsyncIterator[Any]:
    """Connect to one node with the project key and its pinned host key."""
    from gpujob.ssh.deadline import Limits

    key_path, _ = ssh.ensure_project_key(target.state_dir)
    endpoint = present(node.ssh, "a ready node's SSH endpoint")
    cm = ssh.open(
        endpoint,
        key_path=key_path,
        known_hosts=as_store(target.state_dir),
        resource_id=node.machine_id,
        expect_new_host=target.moved,
        timeout=connect_wait_s(target, Limits.from_env().connect_s),
    )
    async with cm as remote:
        yield remote


async def node_runs(target: Target, ssh: SSHApi, nodes: list[LiveNode] | None = None) -> dict[int, Any]:
    """Every node's run status (the SSH layer's RunStatus), read concurrently, by rank; a node that
    cannot be read has the reason instead (a string)."""
    import asyncio

    async def one(n: LiveNode) -> Any:
        if n.ssh is None:
            return f"no SSH endpoint ({n.raw_status or n.status})"
        try:
            async with open_node(target, n, ssh) as remote:
                return await ssh.run_status(remote, target.spec)
        except Exception as exc:  # one node unreadable says so; the others are still shown
            return str(exc).splitlines()[0][:160] or type(exc).__name__

    todo = list(target.resource.nodes if nodes is None else nodes)
    return dict(zip([n.rank for n in todo], await asyncio.gather(*(one(n) for n in todo)), strict=True))


def _silent(out: Any) -> str:
    """Why the listener script said nothing: how its shell ended, and what it wrote on stderr."""
    err = " ".join(str(out.stderr).split())[:160]
    ended = "killed by a signal" if out.exit_status is None else f"exit status {out.exit_status}"
    return f"no answer from the listener ({ended}{'; ' + err if err else ''})"


def _who(node: LiveNode) -> str:
    return node.name or node.machine_id


async def preflight(
    target: Target, nodes: list[LiveNode], ssh: SSHApi, clock: Clock, note: Callable[[str], None]
) -> list[LiveNode]:
    """Every node listens on the rendezvous port; every node reaches every other there, sees its GPUs,
    has the checkpoint dir. Raises PreflightFailed naming the failing nodes; returns the nodes, each
    with its private interface (the platform's word, else the one the node named)."""
    spec = target.spec
    run = present(spec.run, "the run block of a job that launches")
    port, jobdir = run.rendezvous_port, _job_dir(target)
    ckdir = spec.checkpoint.dir if spec.checkpoint else None
    addrs = {n.rank: n.private_ip or "" for n in nodes}
    started = clock.now()
    checks: dict[int, NodeCheck] = {}
    async with contextlib.AsyncExitStack() as stack:
        remotes: dict[int, Any] = {}
        for n in nodes:
            try:
                remotes[n.rank] = await stack.enter_async_context(open_node(target, n, ssh))
            except SSHConnectError as exc:
                checks[n.rank] = NodeCheck(rank=n.rank, name=_who(n), error=str(exc).splitlines()[0])
        heard: dict[int, str] = {}
        try:
            for n in nodes:
                if n.rank in remotes:
                    out = await remotes[n.rank].run(
                        listen_script(jobdir, addrs[n.rank], port), check=False, what="the preflight listener"
                    )
                    heard[n.rank] = str(out.stdout).strip() or _silent(out)
            for n in nodes:
                if n.rank not in remotes:
                    continue
                peers = [(r, a) for r, a in addrs.items() if r != n.rank]
                out = await remotes[n.rank].run(
                    check_script(peers, port, ckdir, addrs[n.rank]),
                    check=False,
                    what="the preflight across nodes",
                )
                checks[n.rank] = parse_check(n.rank, _who(n), str(out.stdout))
                checks[n.rank].listening = heard.get(n.rank, "")
        finally:
            for rank, remote in remotes.items():
                with contextlib.suppress(Exception):
                    await remote.run(stop_script(jobdir), check=False, what="stopping the preflight listener")
                del rank
    seconds = (clock.now() - started).total_seconds()
    rates = [n.cost_per_hour for n in nodes]
    spent = cost_line(seconds, rates)
    found = problems(
        list(checks.values()),
        gpus_per_node=spec.machine.gpu_count,
        gpu_names=spec.machine.gpu,
        port=port,
        addrs=addrs,
        checkpoint_dir=ckdir,
    )
    if found:
        raise PreflightFailed(spec.name, found, spent)
    note(f"{spent}: every node reaches every other on port {port}, sees its GPUs and has its checkpoint dir")
    return [
        n
        if n.interface or not checks[n.rank].interface
        else n.model_copy(update={"interface": checks[n.rank].interface})
        for n in nodes
    ]


async def launch_gang(
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    secrets: Mapping[str, str],
    note: Callable[[str], None],
    *,
    sync: Callable[[Any], Any],
) -> str:
    """Preflight, then sync (the caller's `sync(remote)`) and start every node's run, node 0 first.
    The gang runs whole or not at all: alive on every node, it is left alone; alive on some only (a node
    was lost, preempted, or its run died), the living ones are stopped through the quiesce and the whole
    gang starts again, each node resuming from the newest complete checkpoint step."""
    spec = target.spec
    nodes = await wait_for_nodes(target, clock, note)
    alive = []
    for n in nodes:
        async with open_node(target, n, ssh) as remote:
            if getattr(await ssh.run_status(remote, spec), "alive", False):
                alive.append(n)
    if len(alive) == len(nodes):
        return f"run already alive on every node of {target.resource.name}: not relaunched"
    for n in alive:
        async with open_node(target, n, ssh) as remote:
            q = await ssh.quiesce_run(remote, spec, grace_s=quiesce_grace_s(spec))
        note(
            f"node {n.rank} ({_who(n)}): run stopped ({getattr(q, 'state', q)}) so the whole gang restarts "
            "together"
        )
    nodes = await preflight(target, nodes, ssh, clock, note)
    starts = {s.rank: s for s in gang_launches(spec, nodes)}
    for n in nodes:
        start = starts[n.rank]
        async with open_node(target, n, ssh) as remote:
            await sync(remote)
            await ssh.launch_run(
                remote, spec, secrets=dict(secrets), command=start.command, extra_env=start.env
            )
        note(f"node {n.rank} ({_who(n)}): {start.shown()}")
    again = f" (restarted: it was alive on node(s) {[n.rank for n in alive]} only)" if alive else ""
    return f"run launched on {len(nodes)} node(s) of {target.resource.name}{again}"


async def pull_writers(
    target: Target, ssh: SSHApi, local_dir: Path, progress: Any, note: Callable[[str], None]
) -> list[tuple[str, list[Any], dict[str, str]]]:
    """Under checkpoint.writers: all, the checkpoints of every node but node 0 (whose pull is the
    one-machine pull), each into local_dir/node-<rank>/: (that subdir, the pulled files, the remote
    names with their sha256). Empty for rank0 writers or one machine."""
    from gpujob.jobfile.steps import pull_subdir, writer_ranks

    spec = target.spec
    ck = present(spec.checkpoint, "the checkpoint block of a job that pulls")
    count = node_count(spec)
    ranks = [r for r in writer_ranks(ck.writers, count) if r != 0]
    by_rank = {n.rank: n for n in target.resource.nodes}
    out = []
    for rank in ranks:
        node = by_rank.get(rank)
        if node is None or node.ssh is None:
            raise GpujobError(
                f"{spec.name}: cannot pull node {rank}'s checkpoints: it has no SSH endpoint "
                f"({node.raw_status or node.status if node else 'not in the cluster'})",
                hint="checkpoint.writers: all needs every node's shards; start the nodes (gpujob apply), then pull",
            )
        sub = pull_subdir(rank, count)
        (local_dir / sub).mkdir(parents=True, exist_ok=True)
        async with open_node(target, node, ssh) as remote:
            outcome = await ssh.pull_checkpoints(
                remote, ck.dir, local_dir / sub, verify=None, progress=progress
            )
        names = {} if outcome.listing is None else {n: f.sha256 for n, f in outcome.listing.files.items()}
        for gone in outcome.vanished:
            names.pop(gone, None)
        note(
            f"node {rank} ({_who(node)}): pulled {len(outcome.files)} checkpoint file(s) into {local_dir / sub}"
        )
        out.append((sub, list(outcome.files), names))
    return out


def writers_problem(spec: Any, record: Any, node0_files: Any) -> str | None:
    """The gate over the writers (gpujob.jobfile.steps.gate_problem): the newest step every writer has
    must be pulled and verified from every writer. `record`: the pull record (node R's files named
    node-<R>/...); `node0_files`: node 0's names, listed again right before the teardown."""
    from gpujob.jobfile.steps import gate_problem

    ck = spec.checkpoint
    count = node_count(spec)
    if ck is None or count == 1:
        return None
    listings: dict[int, list[str]] = {0: sorted(node0_files)}
    verified: dict[int, list[str]] = {0: []}
    for name in getattr(record, "remote_files", {}) or {}:
        head, _, rest = name.partition("/")
        if head.startswith("node-") and head[5:].isdigit() and rest:
            listings.setdefault(int(head[5:]), []).append(rest)
    for f in getattr(record, "files", []) or []:
        head, _, rest = f.name.partition("/")
        rank, name = (
            (int(head[5:]), rest) if head.startswith("node-") and head[5:].isdigit() and rest else (0, f.name)
        )
        if f.verified:
            verified.setdefault(rank, []).append(name)
    return gate_problem(listings, verified, ck.writers, count)
