"""The platform facts a job file is checked against, without pydantic: what `gpujob validate`'s fast path
(gpujob.spec.fastcheck) hands to gpujob.spec.checks in place of a Profile.

The checks read a few facts of a profile (options, regions and their aliases, the GPU offers' names,
regions and multi-GPU counts, the size limits, the auto-shutdown clock). ProfileFacts carries exactly
those, copied from the validated Profile (gpujob.profile.load_profile), so the checks answer the same on
either. They are kept as JSON next to the validated-profile cache (gpujob.profile_cache), keyed by the
profile's bytes, the code that models and copies them (profile.py, this file) and the interpreter: any
change of either side is a miss, which loads the Profile once and writes the facts again. (Unlike the
pickled Profile, the facts are plain values that hold nothing of pydantic's, so its version is not part
of the key.) Only a private file (owned by this user, not writable by others) is read; any failure is a
miss.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpujob.profile_files import find_gpu, profiles_dir

if TYPE_CHECKING:
    from gpujob.profile import Profile

FORMAT = 1


class _Facts:
    """Plain read-only records (a dataclass each would cost this module's import several times over)."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, **values: Any) -> None:
        for name in self.__slots__:
            object.__setattr__(self, name, values.pop(name))
        if values:
            raise TypeError(f"unknown facts: {sorted(values)}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("facts are read-only")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self.__slots__
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class GpuFacts(_Facts):
    __slots__ = ("alias", "multi_gpu_ids", "platform_id", "regions")
    alias: str
    platform_id: str
    regions: list[str]
    multi_gpu_ids: dict[int, str]


class LimitFacts(_Facts):
    __slots__ = ("container_disk_gb", "max_gpu_count", "network_volume_gb", "volume_gb", "volume_sizes_gb")
    container_disk_gb: tuple[int, int] | None
    volume_gb: tuple[int, int] | None
    volume_sizes_gb: list[int] | None
    network_volume_gb: tuple[int, int] | None
    max_gpu_count: int


class MultinodeFacts(_Facts):
    __slots__ = ("gpus", "kind", "max_nodes", "min_nodes", "stoppable")
    kind: str
    min_nodes: int
    max_nodes: int
    gpus: list[str] | None
    stoppable: bool


class ShutdownFacts(_Facts):
    __slots__ = ("kind", "max_hours", "min_hours")
    kind: str
    min_hours: float | None
    max_hours: float | None


class ProfileFacts(_Facts):
    """The part of a Profile that gpujob.spec.checks reads, with the same names and types."""

    __slots__ = (
        "auto_shutdown",
        "gpus",
        "limits",
        "multinode",
        "options",
        "platform",
        "region_aliases",
        "regions",
    )
    platform: str
    options: list[str]
    regions: list[str]
    region_aliases: dict[str, str]
    gpus: list[GpuFacts]
    limits: LimitFacts
    multinode: MultinodeFacts | None
    auto_shutdown: list[ShutdownFacts]

    def gpu(self, alias: str) -> GpuFacts | None:
        return find_gpu(self.gpus, alias)


def extract(profile: Profile) -> dict[str, Any]:
    """The facts of a validated Profile, as JSON data."""
    limits, mn = profile.limits, profile.multinode
    return {
        "format": FORMAT,
        "platform": profile.platform,
        "options": list(profile.options),
        "regions": list(profile.regions),
        "region_aliases": dict(profile.region_aliases),
        "gpus": [
            {
                "alias": g.alias,
                "platform_id": g.platform_id,
                "regions": list(g.regions),
                "multi_gpu_ids": [[n, name] for n, name in g.multi_gpu_ids.items()],
            }
            for g in profile.gpus
        ],
        "limits": {
            "container_disk_gb": _pair(limits.container_disk_gb),
            "volume_gb": _pair(limits.volume_gb),
            "volume_sizes_gb": None if limits.volume_sizes_gb is None else list(limits.volume_sizes_gb),
            "network_volume_gb": _pair(limits.network_volume_gb),
            "max_gpu_count": limits.max_gpu_count,
        },
        "multinode": None
        if mn is None
        else {
            "kind": mn.kind,
            "min_nodes": mn.min_nodes,
            "max_nodes": mn.max_nodes,
            "gpus": None if mn.gpus is None else list(mn.gpus),
            "stoppable": mn.stoppable,
        },
        "auto_shutdown": [
            {"kind": a.kind, "min_hours": a.min_hours, "max_hours": a.max_hours}
            for a in profile.auto_shutdown
        ],
    }


def _pair(bounds: tuple[int, int] | None) -> list[int] | None:
    return None if bounds is None else [bounds[0], bounds[1]]


def _bounds(raw: Any) -> tuple[int, int] | None:
    return None if raw is None else (int(raw[0]), int(raw[1]))


def _floats(raw: Any) -> float | None:
    return None if raw is None else float(raw)


def from_data(data: dict[str, Any]) -> ProfileFacts:
    """ProfileFacts from extract()'s data (read back from JSON, so tuples and int keys are rebuilt)."""
    if data.get("format") != FORMAT:
        raise ValueError("other format")
    limits, mn = data["limits"], data["multinode"]
    return ProfileFacts(
        platform=str(data["platform"]),
        options=[str(o) for o in data["options"]],
        regions=[str(r) for r in data["regions"]],
        region_aliases={str(k): str(v) for k, v in data["region_aliases"].items()},
        gpus=[
            GpuFacts(
                alias=str(g["alias"]),
                platform_id=str(g["platform_id"]),
                regions=[str(r) for r in g["regions"]],
                multi_gpu_ids={int(n): str(name) for n, name in g["multi_gpu_ids"]},
            )
            for g in data["gpus"]
        ],
        limits=LimitFacts(
            container_disk_gb=_bounds(limits["container_disk_gb"]),
            volume_gb=_bounds(limits["volume_gb"]),
            volume_sizes_gb=None
            if limits["volume_sizes_gb"] is None
            else [int(s) for s in limits["volume_sizes_gb"]],
            network_volume_gb=_bounds(limits["network_volume_gb"]),
            max_gpu_count=int(limits["max_gpu_count"]),
        ),
        multinode=None
        if mn is None
        else MultinodeFacts(
            kind=str(mn["kind"]),
            min_nodes=int(mn["min_nodes"]),
            max_nodes=int(mn["max_nodes"]),
            gpus=None if mn["gpus"] is None else [str(g) for g in mn["gpus"]],
            stoppable=bool(mn["stoppable"]),
        ),
        auto_shutdown=[
            ShutdownFacts(
                kind=str(a["kind"]), min_hours=_floats(a["min_hours"]), max_hours=_floats(a["max_hours"])
            )
            for a in data["auto_shutdown"]
        ],
    )


def _cache_path(platform: str, raw: bytes) -> Path | None:
    import hashlib

    from gpujob.profile_cache import folder

    where = folder()
    if where is None:
        return None
    here = Path(__file__)
    digest = hashlib.sha256()
    for part in (
        raw,
        here.read_bytes(),
        here.with_name("profile.py").read_bytes(),
        sys.version.encode(),
    ):
        digest.update(hashlib.sha256(part).digest())
    return where / f"{platform}-facts-{digest.hexdigest()[:32]}.json"


def _read(path: Path) -> ProfileFacts | None:
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            return from_data(json.loads(fh.read()))
    except Exception:  # absent, unreadable, truncated or another format: a miss
        return None


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, sort_keys=True)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file, the new one, or none
    except OSError:  # a read-only home or full disk only costs the next start a profile load
        return


def load_facts(platform: str) -> ProfileFacts:
    """The facts of profiles/<platform>.yaml as it is now: from the cache, else from the validated Profile
    (which imports pydantic once, then writes the cache). Raises what load_profile raises."""
    raw = (profiles_dir() / f"{platform}.yaml").read_bytes()
    path = _cache_path(platform, raw)
    if path is not None:
        found = _read(path)
        if found is not None and found.platform == platform:
            return found
    from gpujob.profile import profile_from_bytes

    data = extract(profile_from_bytes(platform, raw))
    if path is not None:
        _write(path, data)
    return from_data(data)
