"""The world of tests/apply/test_gate_look*.py: the gate's SSH fake that also records which connection
each call was made on, serves other dirs than the job's checkpoint dir, and answers the launcher's
record of the last run's checkpoint dir as told."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpujob.apply.context import JobContext
from gpujob.apply.teardown_look import inspect_disk
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind
from gpujob.ssh.launcher import Quiesce
from gpujob.ssh.pull import PullOutcome, RemoteFile, RemoteListing
from tests.apply.fakes import FakeRemote, FakeSSH, action
from tests.apply.test_gate import world

TERM = ("toy", ActionKind.TERMINATE)


@dataclasses.dataclass
class SeenSSH(FakeSSH):
    remotes: list[Any] = dataclasses.field(default_factory=list)  # what each call was given as its connection
    hashed: list[tuple[str, bool]] = dataclasses.field(default_factory=list)  # (dir, hashes) of each listing
    dirs: dict[str, RemoteListing] = dataclasses.field(default_factory=dict)  # other dirs, as listed
    marker: str | None = "/workspace/ckpt"  # the launcher's record of the last run's checkpoint dir
    marker_asked: int = 0
    after_pull: dict[str, str] = dataclasses.field(default_factory=dict)  # unpullable in the relisting
    vanished: list[str] = dataclasses.field(default_factory=list)  # gone while the pull ran
    pulled: bool = False
    by_port: dict[int, dict[str, bytes]] = dataclasses.field(default_factory=dict)  # other nodes' files

    def _on(self, remote: Any) -> None:
        self.remotes.append(remote)

    async def list_checkpoints(
        self, remote: FakeRemote, remote_dir: str, *, hashes: bool = True
    ) -> RemoteListing:
        self._on(remote)
        self.hashed.append((remote_dir, hashes))
        got = self.dirs.get(remote_dir) or await super().list_checkpoints(remote, remote_dir, hashes=hashes)
        if self.pulled and self.after_pull:
            got = got.model_copy(update={"unpullable": dict(self.after_pull)})
        return got

    async def recorded_checkpoint_dir(self, remote: FakeRemote, spec: JobSpec) -> str | None:
        self._on(remote)
        assert isinstance(spec, JobSpec)
        self.marker_asked += 1
        return self.marker

    async def quiesce_run(self, remote: FakeRemote, spec: JobSpec, *, grace_s: float) -> Quiesce:
        self._on(remote)
        return await super().quiesce_run(remote, spec, grace_s=grace_s)

    async def pull_checkpoints(
        self, remote: FakeRemote, remote_dir: str, local_dir: Path, **kw: Any
    ) -> PullOutcome:
        self._on(remote)
        self.pulled = True
        mine, here = self.remote_files, self.by_port.get(remote.endpoint.port)
        self.remote_files = mine if here is None else here
        try:
            out = await super().pull_checkpoints(remote, remote_dir, local_dir, **kw)
        finally:
            self.remote_files = mine
        return dataclasses.replace(out, vanished=list(self.vanished))


def seen_world(
    tmp_path: Path,
    *,
    files: dict[str, bytes] | None = None,
    volume: bool = False,
    alive: bool = True,
    **spec: Any,
) -> tuple[JobContext, Any, SeenSSH]:
    ctx, prov, _ = world(tmp_path, volume=volume, **spec)
    ssh = SeenSSH(tmp_path, remote_files=dict(files or {}), alive=alive)
    ctx.ssh = ssh.api()
    return ctx, prov, ssh


def listing(d: str, files: dict[str, bytes], unpullable: dict[str, str] | None = None) -> RemoteListing:
    return RemoteListing(
        dir=d,
        exists=True,
        real_dir=d,
        mount="/workspace",
        files={n: RemoteFile(size=len(b), sha256="0" * 64) for n, b in files.items()},
        unpullable=dict(unpullable or {}),
    )


def look(
    ctx: JobContext,
    *,
    machine: LiveResource | None = None,
    erased: Callable[[Any], bool] = lambda lst: True,
    evidence_for: str | None = None,
    through: str | None = None,
) -> str:
    target = machine or ctx.machine
    assert target is not None
    return asyncio.run(
        inspect_disk(
            ctx,
            action(*TERM, resource_id=target.id),
            target,
            erased,
            evidence_for=evidence_for,
            through=through,
        )
    )


def notes(ctx: JobContext) -> list[str]:
    return [m for _, kind, m in ctx.hooks.events if kind == "note"]  # type: ignore[attr-defined]
