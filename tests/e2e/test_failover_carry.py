"""The move's carry, counted at the SSH layer: gpujob.failover.move run in-process against the simulator
(real sshd machines, real files) with the real SSH functions wrapped to count what they do.

A fresh disk on the new platform is what the plan's own seed (gpujob.plan.seed, issue #22) fills too;
the move carries the checkpoint itself, so the checkpoint must go over the wire once and be read back
once, not twice."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.failover_support import applied, preempt, verified


class Counting:
    """SSHApi.default() with push_checkpoints and list_checkpoints counted (still doing the real work)."""

    def __init__(self) -> None:
        from gpujob.apply.sshapi import SSHApi

        real = SSHApi.default()
        self.calls: list[tuple[str, Any]] = []

        async def push(remote: Any, local_dir: Path, names: list[str], remote_dir: str, **kw: Any) -> int:
            sent = await real.push_checkpoints(remote, local_dir, names, remote_dir, **kw)
            self.calls.append(("push", (list(names), remote_dir, sent)))
            return int(sent)

        async def listing(remote: Any, remote_dir: str, *a: Any, **kw: Any) -> Any:
            got = await real.list_checkpoints(remote, remote_dir, *a, **kw)
            self.calls.append(("list", remote_dir))
            return got

        async def launch(*a: Any, **kw: Any) -> Any:
            self.calls.append(("launch", None))
            return await real.launch_run(*a, **kw)

        self.api = dataclasses.replace(
            real, push_checkpoints=push, list_checkpoints=listing, launch_run=launch
        )


async def _move(job_file: Path, env: dict[str, str], ssh: Any) -> Any:
    from gpujob.apply.refresh import read_live_state
    from gpujob.clock import SystemClock
    from gpujob.failover.choice import choose
    from gpujob.failover.entries import platforms_of
    from gpujob.failover.move import move_job
    from gpujob.failover.planning import running_here
    from gpujob.project import with_projects
    from gpujob.providers.registry import open_providers
    from gpujob.spec.load import load_specs

    (ls,) = with_projects(load_specs([job_file]), create=False)
    async with open_providers(platforms_of([ls.declared or ls.spec]), env=env) as providers:
        live = await read_live_state([ls.spec], providers)
        up = running_here(live, ls.spec.name, ls.project, ls.spec.platform)
        choice = choose(ls.declared or ls.spec, ls.entry, live.quotes, running_here=up)
        assert choice.move_to is not None and choice.move_to.platform == "paperspace", choice
        return await move_job(ls, choice, live, providers, ssh=ssh, clock=SystemClock(), env=env)


def test_the_move_pushes_the_checkpoint_once_and_reads_it_back_once(
    sim: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = applied(sim, tmp_path, "anywhere-carry", "auto")
    poll("a checkpoint on the pod", lambda: re.search(r"checkpoint step_", p.gj("logs", "-n", "200").stdout))
    p.gj("pull")
    assert verified(p), "gpujob pull verified nothing"
    preempt(sim, p)
    for k in [k for k in list(os.environ) if k.startswith("GPUJOB_")]:
        monkeypatch.delenv(k)
    for k, v in p.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(p.dir)

    counting = Counting()
    outcome = asyncio.run(_move(p.dir / "job.yaml", p.env, counting.api))
    assert outcome.ok, outcome.detail
    pushes = [c for kind, c in counting.calls if kind == "push"]
    carried = outcome.checkpoint
    size = (p.dir / "checkpoints" / carried).stat().st_size
    assert pushes == [([carried], "/workspace/ckpt", size)], counting.calls
    assert outcome.pushed_bytes == size
    # Read back once, after the push and before the launch (later reads are the launch's own).
    order = [kind for kind, _ in counting.calls]
    between = order[order.index("push") + 1 : order.index("launch")]
    assert between.count("list") == 1 and "list" not in order[: order.index("push")], order
