"""Adopt a migrated RunPod pod in the state (gpujob.plan.migration says when a pod is one): the launch
record (launches/<job>.json) is rewritten to the new pod id, keeping what it says about the run, the
template and the disk (and a pull record of the pod's volume disk, whose files moved with it), so every later plan, status, cost and audit reads the new pod as the job's. The
caller (status, apply, watch) writes the event; this module returns what to say."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.live import LiveResource
from gpujob.naming import machines, owned, volume_name
from gpujob.plan.migration import Migration, migrated
from gpujob.plan.records import load_launch_record, load_pull_record, save_launch_record, save_pull_record
from gpujob.state import StateRef


def follow(state: StateRef, loaded: Any, resources: Sequence[LiveResource]) -> Migration | None:
    """Adopt the job's migrated pod, if its pod is one; returns the migration (None: nothing to adopt)."""
    spec, project = loaded.spec, loaded.project
    if spec.platform != "runpod" or project is None:
        return None
    mine = owned(resources, spec.name, project)
    machine = next((r for r in machines(mine, spec.name, project) if r.kind == "pod"), None)
    nv = spec.storage.network_volume
    vname = volume_name(spec.name, nv.name, project) if nv else None
    volume = next((r for r in mine if r.kind == "network_volume" and r.name == vname), None)
    record = load_launch_record(state, spec.name)
    found = migrated(record, machine, resources, volume)
    if found is None or record is None:
        return None
    save_launch_record(state, record.model_copy(update={"resource_id": found.new.id}))
    pulled = load_pull_record(state, spec.name)
    if pulled is not None and pulled.tier != "network_volume" and pulled.resource_id == found.old_id:
        # a volume disk's files moved with the pod: what was pulled from it is what the new pod holds
        save_pull_record(state, pulled.model_copy(update={"resource_id": found.new.id}))
    return found
