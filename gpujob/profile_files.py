"""The bundled platform profiles (profiles/<platform>.yaml): where they are, and how a GPU name resolves to
one of their offers. Shared by the validated Profile (gpujob.profile) and its plain facts
(gpujob.profile_facts), so neither imports the other for it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, TypeVar


def profiles_dir() -> Path:
    """profiles/ beside the package in a checkout or editable install, else the copy inside the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "profiles", here / "_data" / "profiles"):
        if (candidate / "runpod.yaml").exists():
            return candidate
    raise FileNotFoundError("gpujob's platform profiles are missing (profiles/runpod.yaml)")


class _Named(Protocol):
    @property
    def alias(self) -> str: ...
    @property
    def platform_id(self) -> str: ...


G = TypeVar("G", bound=_Named)


def find_gpu(gpus: list[G], alias: str) -> G | None:
    """The offer a GPU name means: its alias in any case, or the platform's own id (Profile.gpu)."""
    for g in gpus:
        if g.alias.lower() == alias.lower() or g.platform_id == alias:
            return g
    return None
