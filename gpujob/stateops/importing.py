"""`gpujob import JOB ID`: adopt an existing pod, network volume or machine into a job.

The resource gets the job's ownership marker, its gpujob name (gpujob.naming), through the one change
every platform makes in place: a rename (RunPod: name is in-place, env is not; Paperspace: name). A
RunPod pod's env marker (GPUJOB_PROJECT) is never written here, since editing a running pod's env
restarts it: the adoption record in the project's store (gpujob.project.ownership) stands in for it.
Nothing else changes; the next `gpujob plan` shows how the resource differs from the job file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpujob import naming
from gpujob.errors import GpujobError
from gpujob.live import LiveResource


@dataclass(frozen=True)
class Imported:
    resource: LiveResource  # as it is now (renamed)
    name_before: str
    already: bool = False


def _refuse(message: str, hint: str) -> GpujobError:
    return GpujobError(message, hint=hint + " (nothing was changed)")


async def import_resource(ls: Any, provider: Any, resource_id: str) -> Imported:
    spec, project = ls.spec, ls.project
    job = spec.name
    listed: list[LiveResource] = await provider.list_resources()
    found = next((r for r in listed if r.id == resource_id), None)
    if found is None:
        raise _refuse(f"{spec.platform} has no resource with id {resource_id!r}",
                      "list them with `gpujob audit` (or the platform's console) and copy the id")  # fmt: skip
    if found.kind in naming.FOLLOWERS:
        raise _refuse(f"{found.kind} {found.id} follows its machine: it is owned through it",
                      f"import the machine it is attached to ({found.machine_id or 'none'})")  # fmt: skip
    machines = naming.machines_by_id(listed)
    owner = naming.owner(found, machines)
    if owner is not None and owner.job == job and owner.project == project:
        return Imported(found, found.name, already=True)
    if owner is not None:
        raise _refuse(f"{found.kind} {found.name} ({found.id}) already belongs to job '{owner.job}' of "
                      f"{naming.describe_owner(found)}",
                      "manage it from that checkout, or `gpujob state rm` it there first")  # fmt: skip
    new_name = _new_name(ls, found, listed)
    renamed = found if found.name == new_name else await _rename(spec.platform, provider, found, new_name)
    from gpujob.project import ownership
    from gpujob.state import open_store

    ownership.adopt(open_store(ls.path), {"id": found.id, "job": job, "kind": found.kind, "name": new_name,
                                        "name_before": found.name, "platform": spec.platform, "project": project})  # fmt: skip
    return Imported(renamed, found.name)


def _new_name(ls: Any, r: LiveResource, listed: list[LiveResource]) -> str:
    spec, project = ls.spec, ls.project
    job = spec.name
    mine = naming.owned(listed, job, project)
    machine_kind = "pod" if spec.platform == "runpod" else "machine"
    if r.kind == machine_kind:
        have = naming.machines(mine, job, project)
        if have:
            raise _refuse(f"job '{job}' already has {have[0].kind} {have[0].name} ({have[0].id})",
                          f"a job has one machine: `gpujob state rm {have[0].id}` first to swap it")  # fmt: skip
        if r.status == "terminating":
            raise _refuse(f"{r.kind} {r.id} is being terminated", "import a live one")
        return naming.machine_name(job, project)
    if r.kind == "network_volume" and spec.platform == "runpod":
        nv = spec.storage.network_volume
        if nv is None:
            raise _refuse(f"job '{job}' has no storage.network_volume to adopt {r.id} as",
                          "add storage.network_volume (name, size_gb) to the job file, then import it")  # fmt: skip
        name = naming.volume_name(job, nv.name, project)
        taken = next((v for v in mine if v.kind == "network_volume" and v.name == name), None)
        if taken is not None:
            raise _refuse(f"job '{job}' already has network volume {name} ({taken.id})",
                          f"`gpujob state rm {taken.id}` first to swap it")  # fmt: skip
        return name
    raise _refuse(f"a {r.kind} cannot be imported into a {spec.platform} job",
                  f"import the job's {machine_kind}" + (" or network volume" if spec.platform == "runpod" else ""))  # fmt: skip


async def _rename(platform: str, provider: Any, r: LiveResource, name: str) -> LiveResource:
    """The in-place rename, and only it (no env, image, port or disk field: those restart a pod)."""
    if platform == "runpod" and r.kind == "network_volume":
        from gpujob.providers.runpod.normalize import volume_to_live

        return volume_to_live(await provider.client.rename_volume(r.id, name))
    updated: LiveResource = await provider.update(r, {"name": name})
    return updated
