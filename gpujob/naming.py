"""Resource names and ownership: the one rule for "which resources belong to this job".

Every resource gpujob creates is named

    gpujob-<job>--<project>                 the job's pod (RunPod) or machine (Paperspace)
    gpujob-<job>--<volume>--<project>       a RunPod network volume of the job
    gpujob-<job>--gate--<project>           a temporary pod the teardown gate mounts a volume with
    gpujob-<job>--q<N>--<project>           queue N of sweep <job>: its queues share the sweep's volume

Job and volume names may not contain "--" or end in "-" (the spec refuses them), so a name splits back
into its parts exactly one way: job "bert" + volume "large-ckpts" and job "bert-large" + volume
"ckpts" can no longer meet in one name. <project> is the id of the checkout that made the resource
(gpujob.project), so two checkouts with a job of the same name never share a resource by accident.
RunPod pods also carry the project in their env (GPUJOB_PROJECT, plus GPUJOB_OWNER, an opaque digest
of where it lives: the platform console shows a pod's env, so it must not spell out user@host:/path),
which the platform reports back: a pod is the job's only when name and env agree. Pods made before
carry the readable form; it is accepted as it is, and an env marker is never a planned change.

Static IPs and snapshots are not named by gpujob: they belong to whoever owns their machine.

Two records of the project's state amend the rule (gpujob.stateops, loaded with the project id):
a resource `gpujob state rm` forgot is nobody's, whatever its name says; a pod `gpujob import` adopted
is the job's with its new name alone, since writing the env marker would restart a running pod.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpujob.live import LiveResource

PREFIX = "gpujob-"
SEP = "--"
PROJECT_ENV = "GPUJOB_PROJECT"  # pod env: the id of the project that created the pod
OWNER_ENV = (
    "GPUJOB_OWNER"  # pod env: owner_marker() of where that project lives (older pods: user@host:/path)
)
OWNER_DIGEST = "sha256:"
_PART = re.compile(
    r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
)  # a job or volume name (gpujob.jobfile.model.NAME_PATTERN)
PROJECT_ID = re.compile(r"^[a-z0-9]{4,16}$")
MACHINE_KINDS = ("pod", "machine")
# A multi-node job's one resource (docs/multinode.md), named as its machine would be: a RunPod Instant
# Cluster, or the Paperspace private network its machines are in. Its members (LiveResource.nodes) are
# the platform's pods and machines, owned through it and never one by one.
GROUP_KINDS = ("cluster", "private_network")
FOLLOWERS = ("public_ip", "snapshot", "startup_script")  # owned through their machine


MEMBER = "node"  # the role a member of a multi-node job's group is owned in (never named so)
HELPER = "gate"  # the role part of a temporary pod's name (gpujob.apply.teardown)
# The role part of a sweep's queue machine, gpujob-<job>--q<N>--<project>: its owner is the queue job
# <job>--q<N> (gpujob.sweep.expand; queue_job below), which no job file can name itself (names hold no "--").
_QUEUE = re.compile(r"^q[1-9][0-9]*$")
QUEUE_SEP = SEP + "q"  # queue N of sweep <job> is the job <job>--q<N>

# Resource id -> project id, from the projects' state (gpujob.project.ownership.load): forgotten ones are
# nobody's; adopted pods need no env marker.
_FORGOTTEN: dict[str, str] = {}
_ADOPTED: dict[str, str] = {}


def remember(*, forgotten: Mapping[str, str], adopted: Mapping[str, str]) -> None:
    """Add a project's forgotten and adopted resource ids (id -> project)."""
    _FORGOTTEN.update(forgotten)
    _ADOPTED.update(adopted)
    for rid in forgotten:
        _ADOPTED.pop(rid, None)


@dataclass(frozen=True)
class Owner:
    job: str
    project: str
    volume: str | None = None  # a volume's name part; on a pod or machine, its role (HELPER)


def machine_name(job: str, project: str) -> str:
    return f"{PREFIX}{job}{SEP}{project}"


def volume_name(job: str, volume: str, project: str) -> str:
    return f"{PREFIX}{volume_job(job)}{SEP}{volume}{SEP}{project}"


def queue_job(job: str, n: int) -> str:
    return f"{job}{QUEUE_SEP}{n}"


def sweep_of(job: str) -> tuple[str, int] | None:
    """('abl', 2) for the queue job 'abl--q2', else None."""
    base, sep, n = job.rpartition(QUEUE_SEP)
    return (base, int(n)) if sep and base and n.isdigit() else None


def volume_job(job: str) -> str:
    """The job a network volume of `job` is named for: the queues of a sweep (abl--q1, abl--q2) mount
    one network volume, the sweep's (gpujob-abl--<volume>--<project>); any other job its own."""
    base, sep, role = job.rpartition(SEP)
    return base if sep and base and _QUEUE.match(role) else job


def _is_jobs(o: Owner, r: LiveResource, job: str) -> bool:
    return o.job == (volume_job(job) if r.kind == "network_volume" else job)


def helper_name(job: str, project: str) -> str:
    return f"{PREFIX}{job}{SEP}{HELPER}{SEP}{project}"


def action_prefix(job: str) -> str:
    """The job's part of its action ids: a sweep queue 'abl--q2' acts as 'abl.q2'."""
    return job.replace(SEP, ".")


def aside_dir(pull_to: str, platform: str) -> str:
    """Where copies pulled from another platform of a job's chain land (gpujob.failover.leftover):
    beside pull_to, never over it."""
    return f"{pull_to.rstrip('/') or '.'}-from-{platform}"


def run_session(job: str) -> str:
    """The tmux session / pid-file stem of the run inside the machine (one run per machine)."""
    return f"{PREFIX}{job}"


def parse(name: str) -> Owner | None:
    """The owner a gpujob name spells, or None for any other name (a foreign one, or one made by a
    gpujob older than project markers)."""
    if not name.startswith(PREFIX):
        return None
    parts = name[len(PREFIX) :].split(SEP)
    if len(parts) not in (2, 3) or not PROJECT_ID.match(parts[-1]):
        return None
    if not all(_PART.match(p) for p in parts[:-1]):
        return None
    return Owner(job=parts[0], project=parts[-1], volume=parts[1] if len(parts) == 3 else None)


def owner(r: LiveResource, machines: Mapping[str, LiveResource] | None = None) -> Owner | None:
    """Whose resource this is: its name, checked against its kind (a volume name on a volume, a machine
    name on a machine) and, for a RunPod pod, against the project in its env. An IP or a snapshot is
    owned by the owner of its machine (`machines`: machine id -> machine), else by nobody."""
    if r.id in _FORGOTTEN:
        return None
    if r.kind in FOLLOWERS:
        machine = (machines or {}).get(r.machine_id or "")
        return owner(machine) if machine is not None and machine.kind in MACHINE_KINDS else None
    group_id = r.attributes.get("cluster_id") or r.attributes.get("network_id")
    if r.kind in MACHINE_KINDS and isinstance(group_id, str) and group_id:
        group = (machines or {}).get(group_id)
        if group is not None and group.kind in GROUP_KINDS and (theirs := owner(group)) is not None:
            return Owner(job=theirs.job, project=theirs.project, volume=MEMBER)  # a node of their group
        if r.kind == "pod":
            return None  # a cluster's member pod is owned through its cluster, never alone
    found = parse(r.name)
    if found is None:
        return None
    if r.kind == "network_volume" and found.volume is None:
        return None
    if r.kind in MACHINE_KINDS and found.volume is not None and _QUEUE.match(found.volume):
        found = Owner(job=f"{found.job}{SEP}{found.volume}", project=found.project)
    if r.kind in MACHINE_KINDS and found.volume not in (None, HELPER):
        return None
    if r.kind in GROUP_KINDS:
        return found if found.volume is None else None
    if r.kind not in MACHINE_KINDS and r.kind != "network_volume":
        return None
    if (
        r.kind == "pod"
        and r.attributes.get("project") != found.project
        and _ADOPTED.get(r.id) != found.project
    ):
        return None  # renamed, or made by hand with our name: the env marker says it is not ours
    return found


def machines_by_id(resources: Iterable[LiveResource]) -> dict[str, LiveResource]:
    return {r.id: r for r in resources if r.kind in MACHINE_KINDS + GROUP_KINDS}


def belongs(
    r: LiveResource, job: str, project: str | None, machines: Mapping[str, LiveResource] | None = None
) -> bool:
    o = owner(r, machines)
    return o is not None and project is not None and _is_jobs(o, r, job) and o.project == project


def owned(resources: Iterable[LiveResource], job: str, project: str | None) -> list[LiveResource]:
    """The job's resources: what `belongs` to (job, project), in the order listed."""
    listed = list(resources)
    machines = machines_by_id(listed)
    return [r for r in listed if belongs(r, job, project, machines)]


def machines(resources: Iterable[LiveResource], job: str, project: str | None) -> list[LiveResource]:
    """The job's own pods / machines, not the gate's temporary pods, not terminating, in listed order."""
    listed = list(resources)
    by_id = machines_by_id(listed)
    return [
        r
        for r in owned(listed, job, project)
        if r.kind in MACHINE_KINDS + GROUP_KINDS
        and not is_helper(r)
        and not is_member(r, by_id)
        and r.status != "terminating"
    ]


def is_member(r: LiveResource, machines: Mapping[str, LiveResource] | None = None) -> bool:
    """A node of a multi-node job's group: its pods and machines are acted on through the group."""
    o = owner(r, machines)
    return o is not None and o.volume == MEMBER


def machine_kind_of(platform: str, nodes: int = 1) -> str:
    """The kind of a job's machine: its pod or machine, or for `machine.nodes` > 1 its group."""
    if nodes > 1:
        return "cluster" if platform == "runpod" else "private_network"
    return "pod" if platform == "runpod" else "machine"


def node_name(job: str, rank: int, project: str) -> str:
    """A Paperspace node of a multi-node job: gpujob-<job>--n<rank>--<project> (owned through its network)."""
    return f"{PREFIX}{job}{SEP}n{rank}{SEP}{project}"


def is_helper(r: LiveResource) -> bool:
    o = parse(r.name)
    return r.kind in MACHINE_KINDS and o is not None and o.volume == HELPER


def claims(
    resources: Iterable[LiveResource], projects: Mapping[str, str | None]
) -> dict[str, list[LiveResource]]:
    """Each job's resources (`projects`: job name -> project id)."""
    listed = list(resources)
    return {job: owned(listed, job, project) for job, project in projects.items()}


def others(resources: Iterable[LiveResource], job: str, project: str | None) -> list[LiveResource]:
    """Resources of a job of the same name that another project made (never touched, only reported)."""
    listed = list(resources)
    machines = machines_by_id(listed)
    out = []
    for r in listed:
        o = owner(r, machines)
        if (
            o is not None
            and _is_jobs(o, r, job)
            and o.project != project
            and r.kind not in FOLLOWERS
            and not is_helper(r)
        ):
            out.append(r)
    return out


def owner_marker(label: str) -> str:
    """What a pod's env says of its owner: a digest of the project's label (user@host:/path), which
    stays readable in gpujob's own state (project.json) and out of the platform console."""
    import hashlib

    return OWNER_DIGEST + hashlib.sha256(label.encode()).hexdigest()[:16]


def describe_owner(r: LiveResource) -> str:
    """'project k3f9a2c1' as far as the resource says; a pod made by an older gpujob also says where
    (alice@laptop:/home/alice/bert), which its env then spelt out."""
    o = parse(r.name)
    project = o.project if o else str(r.attributes.get("project") or "?")
    where = r.attributes.get("owner")
    readable = isinstance(where, str) and where and not where.startswith(OWNER_DIGEST)
    return f"project {project}" + (f" ({where})" if readable else "")


def not_ours(r: LiveResource, job: str, project: str | None, machines: Mapping[str, LiveResource]) -> str:
    """Why `r` does not belong to (job, project), for a refusal message."""
    o = owner(r, machines)
    if o is None:
        if r.kind == "pod" and parse(r.name) is not None:
            got = r.attributes.get("project")
            return f"its env marker {PROJECT_ENV}={got or '(none)'} does not match its name"
        if r.kind in FOLLOWERS:
            return "its machine is not one of this job's"
        return "its name is not one gpujob gives (gpujob-<job>[--<volume>]--<project>)"
    if not _is_jobs(o, r, job):
        return f"it is job '{o.job}'s"
    return f"it belongs to {describe_owner(r)}, and this checkout is project {project}"
