"""Checkpoint pulls while watch runs: one background task per job (checkpoint.pull: continuous), and
the final pull before a machine stops, parks or finishes.

A pull is gpujob.apply.runtime.pull, the same resumable, checksummed and verified pull as `gpujob
pull`, writing the same pull record the teardown gate reads. Files already pulled are not fetched
again, so each background pull moves only the checkpoints that appeared since the last one. A failed
pull is an event, never the end of the watch: the next tick tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError
from gpujob.live import LiveResource

# (target, ssh, clock, note) -> its OutputsRecord: gpujob.outputs.command.pull_outputs, plugged in
OutputsPull = Callable[[Any, Any, Any, Callable[[str], None]], Awaitable[Any]]
CANCEL_S = 10.0  # a cancelled pull closes its channel and its writer thread within this


class Puller:
    def __init__(
        self, *, clock: Clock, ssh: SSHApi, say: Callable[..., None], outputs: OutputsPull | None = None
    ) -> None:
        self.clock = clock
        self.ssh = ssh
        self.say = say
        self.outputs = outputs  # the outputs capability's pull (WatchHooks.outputs_pull), when installed
        self.tasks: dict[str, asyncio.Task[bool]] = {}
        self.failed_since_start = 0

    def start(self, job: Any, machine: LiveResource, provider: Any, newest: str) -> None:
        """A background pull for `job` (whose run status names `newest`), unless one is running."""
        task = self.tasks.get(job.name)
        if task is not None and not task.done():
            return
        coro = self.background(job, machine, provider, newest=newest)
        self.tasks[job.name] = asyncio.get_running_loop().create_task(coro)

    async def final(self, job: Any, machine: LiveResource, provider: Any, *, reason: str) -> bool:
        """A pull now, waited for (before the machine stops, parks, or after the run finished)."""
        spec = job.loaded.spec
        done = True
        if spec.checkpoint is not None and spec.checkpoint.pull != "never":
            done = await self.pull(job, machine, provider, reason=reason)
        if spec.outputs is not None:  # the results come home even while a checkpoint fails its check
            done = await self.pull_outputs(job, machine, provider, reason=reason) and done
        return done

    async def background(self, job: Any, machine: LiveResource, provider: Any, *, newest: str) -> bool:
        """The continuous pull; a sweep queue that may move to another platform (`fallback:`) brings
        its cells' results home with it too, each cell's record with them: what a move carries as
        never-run-again records is what came home (gpujob.failover.queue_carry)."""
        from gpujob.jobfile.cells import queue_cells

        done = await self.pull(job, machine, provider, newest=newest)
        spec = job.loaded.spec
        if self.outputs is None or not spec.fallback or queue_cells(spec) is None:
            return done
        try:
            record = await self.outputs(
                _target(job, machine, provider), self.ssh, self.clock, lambda _t: None
            )
        except (GpujobError, OSError) as exc:
            return self._failed(job, f"outputs pull failed: {_first_line(exc)}")
        return done and not record.unpullable

    async def pull_outputs(self, job: Any, machine: LiveResource, provider: Any, *, reason: str) -> bool:
        """The job's outputs (gpujob.outputs), each checked by sha256: at the end of a run, as the
        teardown gate would before a destroy."""
        if self.outputs is None:  # never taken for pulled: the machine keeps them
            return self._failed(job, "outputs pull failed: no outputs capability is installed")
        try:
            record = await self.outputs(
                _target(job, machine, provider), self.ssh, self.clock, lambda _text: None
            )
        except (GpujobError, OSError) as exc:
            return self._failed(job, f"outputs pull failed: {_first_line(exc)}")
        if record.unpullable:
            names = ", ".join(sorted(record.unpullable)[:5])
            return self._failed(job, f"outputs not pullable: {names}", "rename or remove them on the machine")
        self.say(job, "pulled", f"{len(record.files)} output file(s) pulled, each checked by sha256 ({reason})",
                 f"into {record.local_dir}")  # fmt: skip
        return True

    async def pull(
        self, job: Any, machine: LiveResource, provider: Any, *, reason: str = "", newest: str | None = None
    ) -> bool:
        from gpujob.apply.runtime import pull
        from gpujob.plan.records import load_pull_record

        before = load_pull_record(job.state_dir, job.loaded.spec.name)
        known = {f.name: f.sha256 for f in before.files if f.verified} if before is not None else {}
        try:
            record = await pull(_target(job, machine, provider), self.ssh, self.clock, lambda _text: None)
        except (GpujobError, OSError) as exc:
            return self._failed(job, f"checkpoint pull failed: {_first_line(exc)}")
        new = [f.name for f in record.files if known.get(f.name) != f.sha256]
        if not record.complete:
            from gpujob.watch.home import incomplete

            return self._failed(job, f"pull incomplete: {incomplete(record)}")
        job.said.pop("pull", None)
        if newest is None or newest not in record.remote_files:
            newest = max(record.remote_files, default=None)
        job.ledger.last_pulled = newest
        job.ledger.last_pull_at = record.at
        if new or reason:
            why = f" ({reason})" if reason else ""
            self.say(job, "pulled", f"{len(new)} new checkpoint(s) pulled and verified{why}",
                     f"{len(record.files)} on record, newest {newest or '-'}")  # fmt: skip
        return True

    def _failed(self, job: Any, what: str, fix: str = "trying again next tick") -> bool:
        """A failed pull is a warning event, counted; never the end of the watch."""
        self.failed_since_start += 1
        self.say(job, "pull-failed", what, fix, level="warning", topic="pull")
        return False

    async def settle(self, job: str) -> None:
        """Cancel a pull in flight: the machine is about to change under it (a pull of a machine that
        went down would only wait for it to come back). Partial files stay and the next pull resumes
        them; a final pull before a stop or a teardown is made afresh."""
        task = self.tasks.pop(job, None)
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
            await asyncio.wait_for(task, CANCEL_S)

    async def wait_all(self) -> None:
        for name in list(self.tasks):
            task = self.tasks.pop(name)
            with contextlib.suppress(Exception):
                await task

    async def close(self) -> None:
        for name in list(self.tasks):
            await self.settle(name)


def _target(job: Any, machine: LiveResource, provider: Any) -> Any:
    from gpujob.apply.runtime import Target

    spec = job.loaded.spec
    return Target(
        spec=spec, spec_path=job.loaded.path, provider=provider, resource=machine, state_dir=job.state_dir
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
