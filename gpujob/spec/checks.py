"""Platform checks: the spec against the chosen platform's profile (profiles/<platform>.yaml).

They read the raw mapping, not a validated JobSpec, so a file with a typo elsewhere still gets every
platform problem reported in the same run. Values of the wrong type are left to the model's errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from gpujob.jobfile.rules import one_or_many
from gpujob.spec.nodes import node_problems
from gpujob.spec.problem import CheckProblem as CheckProblem
from gpujob.spec.problem import did_you_mean, suggestion

if TYPE_CHECKING:
    from gpujob.jobfile.model import JobSpec
    from gpujob.profile import Profile

# platform -> its Profile. The checks read only what gpujob.profile_facts.ProfileFacts also carries, so
# `gpujob validate`'s fast path runs these same checks on those facts, without pydantic.
ProfileSource = Callable[[str], Any]

# gpujob.model.PLATFORMS, without importing pydantic (a test keeps the two equal).
PLATFORMS = ("runpod", "paperspace")
# Options that exist on one platform only; everything else in machine/storage is common ground.
PLATFORM_OPTIONS = {
    "machine": ("spot", "cloud", "image", "template", "container_disk_gb", "public_ip", "auto_shutdown"),
    "storage": ("network_volume",),
}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def resolve_region(profile: Profile, name: str) -> str | None:
    """A region id or one of its aliases -> the profile's id; None when unknown."""
    if name in profile.regions:
        return name
    return profile.region_aliases.get(name)


def _hours(h: float) -> str:
    from gpujob.jobfile.rules import format_duration

    return format_duration(timedelta(hours=h))


def _options(
    profile: Profile, section: str, body: Mapping[str, Any], load_profile: ProfileSource
) -> list[CheckProblem]:
    offered = {o.rpartition(".")[2] for o in profile.options}
    other = "paperspace" if profile.platform == "runpod" else "runpod"
    out = []
    for key in PLATFORM_OPTIONS[section]:
        if key == "spot" and body.get(key) == "prefer":
            continue  # spot where offered: on a platform without spot that is on-demand, not an error
        if key in body and body[key] not in (None, False) and key not in offered:
            elsewhere = key in {o.rpartition(".")[2] for o in load_profile(other).options}
            hint = f"it is a {other} option; remove it" if elsewhere else "remove it"
            if key == "spot":
                hint = "Paperspace has no interruptible machines; remove it"
            out.append(
                CheckProblem(f"{section}.{key}", f"{key} is not available on {profile.platform}", hint, True)
            )
    return out


def _gpus(profile: Profile, machine: Mapping[str, Any], regions: list[str]) -> list[CheckProblem]:
    raw = machine.get("gpu")
    named = one_or_many(raw)  # as the model reads it: `gpu: 4090` names GPU '4090'
    gpus = named if isinstance(named, list) else []
    aliases = [g.alias for g in profile.gpus]
    out, offers = [], []
    for i, name in enumerate(gpus):
        if not isinstance(name, str):
            continue
        offer = profile.gpu(name)
        if offer is None:
            path = f"machine.gpu[{i}]" if isinstance(raw, list) else "machine.gpu"
            out.append(
                CheckProblem(path, f"unknown GPU '{name}' on {profile.platform}", suggestion(name, aliases))
            )
        else:
            offers.append(offer)
    count = _int(machine.get("gpu_count"))
    if count is not None and count > profile.limits.max_gpu_count:
        out.append(
            CheckProblem(
                "machine.gpu_count",
                f"at most {profile.limits.max_gpu_count} GPUs per machine on {profile.platform}, got {count}",
            )
        )
    elif (
        count is not None
        and count > 1
        and offers
        and profile.platform == "paperspace"
        and not any(count in o.multi_gpu_ids for o in offers)
    ):
        sizes = "; ".join(
            f"{o.alias}: {', '.join(str(n) for n in [1, *sorted(o.multi_gpu_ids)])}" for o in offers
        )
        out.append(
            CheckProblem(
                "machine.gpu_count",
                f"no listed GPU comes {count} to a machine on paperspace",
                f"available counts: {sizes}",
            )
        )
    placed = [o for o in offers if o.regions]
    if regions and placed and not any(r in o.regions for o in placed for r in regions):
        where = "; ".join(f"{o.alias}: {', '.join(o.regions)}" for o in placed)
        out.append(
            CheckProblem(
                "machine.regions",
                "none of the listed GPUs is offered in the listed regions",
                f"offered in {where}",
            )
        )
    return out


def _regions(profile: Profile, machine: Mapping[str, Any]) -> tuple[list[CheckProblem], list[str]]:
    raw = machine.get("regions")
    out, resolved = [], []
    for i, name in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(name, str):
            continue
        region = resolve_region(profile, name)
        if region is None:
            choices = [*profile.regions, *profile.region_aliases]
            guess = did_you_mean(name, choices)
            hint = f"did you mean '{guess}'?" if guess else f"known regions: {', '.join(profile.regions)}"
            out.append(
                CheckProblem(f"machine.regions[{i}]", f"unknown {profile.platform} region '{name}'", hint)
            )
        else:
            resolved.append(region)
    return out, resolved


def _range(path: str, value: Any, bounds: tuple[int, int] | None, what: str) -> list[CheckProblem]:
    n = _int(value)
    if n is None or bounds is None or bounds[0] <= n <= bounds[1]:
        return []
    return [CheckProblem(path, f"{what} must be between {bounds[0]} and {bounds[1]} GB, got {n}")]


def _sizes(profile: Profile, machine: Mapping[str, Any], storage: Mapping[str, Any]) -> list[CheckProblem]:
    limits = profile.limits
    out = _range(
        "machine.container_disk_gb",
        machine.get("container_disk_gb"),
        limits.container_disk_gb,
        "container disk",
    )
    volume = _int(storage.get("volume_gb"))
    out += _range("storage.volume_gb", volume, limits.volume_gb, "volume")
    if not out and volume is not None and limits.volume_sizes_gb and volume not in limits.volume_sizes_gb:
        nearest = min(limits.volume_sizes_gb, key=lambda s: (abs(s - volume), s))
        sizes = ", ".join(str(s) for s in limits.volume_sizes_gb)
        out.append(
            CheckProblem(
                "storage.volume_gb",
                f"{profile.platform} block storage comes in fixed sizes ({sizes} GB), got {volume}",
                f"nearest size: {nearest}",
            )
        )
    nv = storage.get("network_volume")
    if isinstance(nv, Mapping):
        out += _range(
            "storage.network_volume.size_gb", nv.get("size_gb"), limits.network_volume_gb, "network volume"
        )
    return out


def _auto_shutdown(profile: Profile, machine: Mapping[str, Any]) -> list[CheckProblem]:
    from gpujob.jobfile.rules import parse_duration

    core = next((a for a in profile.auto_shutdown if a.kind == "core"), None)
    raw = machine.get("auto_shutdown")
    if core is None or raw is None or "auto_shutdown" not in profile.options:
        return []
    try:
        hours = parse_duration(raw).total_seconds() / 3600
    except (ValueError, OverflowError):
        return []  # the model reports the bad duration
    low, high = core.min_hours or 0.0, core.max_hours or float("inf")
    if low <= hours <= high and hours != int(hours):
        # autoShutdownTimeout is a whole number of hours (Paperspace/cli spec; Metaphysic sends int64).
        return [
            CheckProblem(
                "machine.auto_shutdown",
                f"Paperspace counts auto-shutdown in whole hours, got {raw}",
                f"use {math.ceil(hours)}h (rounded up) or {max(int(hours), 1)}h",
            )
        ]
    if low <= hours <= high:
        return []
    return [
        CheckProblem(
            "machine.auto_shutdown",
            f"must be between {_hours(low)} and {_hours(high)} on Paperspace Core, got {raw}",
            "Core auto-shutdown runs on the wall clock; pick the longest run you expect",
        )
    ]


def _required(profile: Profile, machine: Mapping[str, Any]) -> list[CheckProblem]:
    if profile.platform == "runpod" and not machine.get("image"):
        return [
            CheckProblem(
                "machine.image",
                "a RunPod job needs a container image",
                "e.g. image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
                True,
            )
        ]
    if profile.platform == "paperspace" and not machine.get("template"):
        return [
            CheckProblem(
                "machine.template",
                "a Paperspace Core job needs a template",
                "an OS or custom template id, e.g. template: ml-in-a-box",
                True,
            )
        ]
    return []


def _outputs(profile: Profile, data: Mapping[str, Any], storage: Mapping[str, Any]) -> list[CheckProblem]:
    """RP2: a RunPod pod's container disk (anything outside storage.mount) is wiped by every stop, so
    results written there are gone before any pull could protect them. (A Paperspace machine has one
    disk, kept while it is off.)"""
    outputs = data.get("outputs")
    paths = outputs.get("paths") if isinstance(outputs, Mapping) else None
    mount = storage.get("mount", "/workspace")
    if profile.platform != "runpod" or not isinstance(paths, list) or not isinstance(mount, str):
        return []
    base = mount.rstrip("/") or "/"
    out = []
    for i, path in enumerate(paths):
        if not isinstance(path, str) or path == base or path.startswith(base + "/") or base == "/":
            continue
        out.append(
            CheckProblem(
                f"outputs.paths[{i}]",
                f"{path} is on the pod's container disk, which every stop wipes (RP2): results written there "
                "are lost before anything can pull them",
                f"write the results under storage.mount ({mount}), e.g. {base}/results",
            )
        )
    return out


def platform_problems(
    data: Mapping[str, Any], load_profile: ProfileSource | None = None
) -> list[CheckProblem]:
    """Every platform problem in a raw job mapping. Unknown platforms are left to the model's errors.
    load_profile: where profiles come from (default gpujob.profile.load_profile)."""
    if load_profile is None:
        from gpujob.profile import load_profile as bundled

        load_profile = bundled

    platform = data.get("platform")
    if platform not in PLATFORMS:
        return []
    try:
        profile = load_profile(str(platform))
    except Exception as exc:  # a missing or broken bundled profile: say so at the platform key
        return [
            CheckProblem(
                "platform", f"cannot check against the {platform} profile: {exc}", "reinstall gpujob", True
            )
        ]
    raw_machine, raw_storage = data.get("machine"), data.get("storage")
    machine: Mapping[str, Any] = raw_machine if isinstance(raw_machine, Mapping) else {}
    storage: Mapping[str, Any] = raw_storage if isinstance(raw_storage, Mapping) else {}
    out = _options(profile, "machine", machine, load_profile)
    out += _options(profile, "storage", storage, load_profile)
    region_problems, regions = _regions(profile, machine)
    out += region_problems + _gpus(profile, machine, regions)
    out += _sizes(profile, machine, storage) + _auto_shutdown(profile, machine) + _required(profile, machine)
    out += _outputs(profile, data, storage)
    return out + node_problems(profile, data)


def check_spec(spec: JobSpec) -> list[CheckProblem]:
    """The same checks for a JobSpec already in hand (only the keys the user set count as written)."""
    return platform_problems(spec.model_dump(mode="json", exclude_unset=True))
