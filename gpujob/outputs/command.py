"""`gpujob pull` and `gpujob watch` for outputs: connect, list every output path, pull what is there
(checked by sha256 as it arrives), write the outputs record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.errors import GpujobError
from gpujob.layout.outputs import output_roots, pull_to
from gpujob.outputs.remote import pull, resolve
from gpujob.plan.outputs_record import OutputsRecord


async def pull_outputs(target: Any, ssh: Any, clock: Any, note: Callable[[str], None]) -> OutputsRecord:
    """`target`: a gpujob.apply.runtime.Target of a running machine."""
    from gpujob.apply.runtime.remote import open_remote

    spec = target.spec
    if target.resource.status != "running":
        raise GpujobError(
            f"{spec.name}: cannot pull outputs: {target.resource.name} is {target.resource.status}",
            hint="set state: running and apply (the disks are kept), then pull",
        )
    async with open_remote(target, ssh, clock, note) as remote:
        listed = await resolve(remote, ssh, output_roots(spec))
        return await pull(
            remote,
            ssh,
            [x for x in listed if x.holds],
            pull_to(spec, target.spec_path),
            job=spec.name,
            resource_id=target.resource.id,
            state_dir=target.state_dir,
            now=clock.now(),
            note=note,
        )
