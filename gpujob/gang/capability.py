"""The gang as a capability (gpujob.plan.capability): its watch hooks."""

from __future__ import annotations

from typing import Any

from gpujob.gang.loss import WHOLE_TICKS, loss_line, lost_nodes, restart_step, run_loss_line
from gpujob.plan.capability import Capability
from gpujob.watch.hooks import WatchHooks


class Gang(Capability):
    name = "gang"

    def watch_hooks(self, options: Any) -> Any:
        return GangWatch()


class GangWatch(WatchHooks):
    """A node lost under a multi-node run: stop the rest now, say so, park a gang that stays broken."""

    def __init__(self) -> None:
        self.incident: dict[str, frozenset[str]] = {}  # job -> the lost nodes already handled
        self.broken: dict[str, int] = {}  # job -> ticks not whole

    async def judge(self, watcher: Any, j: Any, jp: Any, live: Any) -> int | None:
        from gpujob.jobfile.nodes import node_count
        from gpujob.watch.jobs import job_machine

        spec = j.loaded.spec
        count = node_count(spec)
        if count == 1 or spec.run is None:
            return None
        machine = job_machine(live, j.loaded)
        if machine is None:  # no cluster at all: the plan creates one (or the job is parked)
            self.incident.pop(j.name, None)
            return None
        living, down, missing = lost_nodes(machine, count)
        if not down and not missing:
            self.broken.pop(j.name, None)
            return await self._dead_runs(watcher, j, machine)
        self.broken[j.name] = self.broken.get(j.name, 0) + 1
        why = await self.park_reason(watcher, j, machine, None)
        if why is not None:  # parked here: a tick that keeps restarting the nodes never reaches park_reason
            # Each tick again until the park is done: its gate may wait to read the lost node's disk.
            return int(await watcher.park_job(j, jp, machine, live, why))
        key = frozenset([n.machine_id for n in down] + [f"rank{r}" for r in missing])
        if self.incident.get(j.name) == key:
            return None  # said and done this tick's worth already; the plan restarts the nodes
        self.incident[j.name] = key
        stopped = await _quiesce(watcher, j, machine, living)
        step = _step(j, spec, count)
        happened, did = loss_line(down, missing, step, stopped)
        watcher.say(j, "node-lost", happened, did, level="action")
        return None

    async def _dead_runs(self, watcher: Any, j: Any, machine: Any) -> int | None:
        """Every node runs: read every node's run at once; a run dead on some nodes while it lives on
        others is the gang's loss as a lost node is (the living stopped through the quiesce, the whole
        gang restarted from the newest complete step by the plan's launch)."""
        from gpujob.apply.runtime.gang import node_runs
        from gpujob.apply.runtime.remote import Target

        spec = j.loaded.spec
        target = Target(spec=spec, spec_path=j.path, provider=watcher.providers[spec.platform],
                        resource=machine, state_dir=j.state_dir)  # fmt: skip
        runs = await node_runs(target, watcher.spy.api)
        readable = {r: st for r, st in runs.items() if not isinstance(st, str)}
        alive = [n for n in machine.nodes if getattr(readable.get(n.rank), "alive", False)]
        dead = [n for n in machine.nodes if n.rank in readable and n not in alive]
        if not alive or not dead:  # whole, or ended everywhere (the one-machine path reads node 0's end)
            self.incident.pop(j.name, None)
            return None
        key = frozenset(f"run:{n.machine_id}" for n in dead)
        if self.incident.get(j.name) == key:
            return None
        self.incident[j.name] = key
        stopped = await _quiesce(watcher, j, machine, alive)
        step = _step(j, spec, len(machine.nodes))
        states = {n.rank: getattr(readable[n.rank], "state", "dead") for n in dead}
        happened, did = run_loss_line(dead, states, step, stopped)
        watcher.say(j, "node-lost", happened, did, level="action")
        return None

    async def park_reason(self, watcher: Any, j: Any, machine: Any, provider: Any) -> str | None:
        ticks = self.broken.get(j.name, 0)
        if ticks < WHOLE_TICKS:
            return None
        return (
            f"the cluster could not be made whole again in {ticks} ticks (a node stays down): parked rather "
            "than left billing half a cluster"
        )


def _step(j: Any, spec: Any, count: int) -> int | None:
    """The step the gang restarts from: the newest complete one of the last pull."""
    from gpujob.plan.records import load_pull_record

    ck = spec.checkpoint
    return restart_step(load_pull_record(j.state_dir, spec.name), ck.writers, count) if ck else None


async def _quiesce(watcher: Any, j: Any, machine: Any, living: list[Any]) -> dict[int, str]:
    """Stop the run on every living node through the quiesce (SIGTERM, the grace, SIGKILL)."""
    from gpujob.apply.runtime.gang import open_node
    from gpujob.apply.runtime.remote import Target
    from gpujob.plan.cadence import quiesce_grace_s

    spec = j.loaded.spec
    target = Target(
        spec=spec,
        spec_path=j.path,
        provider=watcher.providers[spec.platform],
        resource=machine,
        state_dir=j.state_dir,
    )
    out: dict[int, str] = {}
    for n in living:
        try:
            async with open_node(target, n, watcher.spy.api) as remote:
                q = await watcher.spy.api.quiesce_run(remote, spec, grace_s=quiesce_grace_s(spec))
            out[n.rank] = str(getattr(q, "state", q))
        except Exception as exc:  # a node that cannot be reached now is the next tick's to stop
            out[n.rank] = f"not stopped ({str(exc).splitlines()[0][:120]})"
    return out
