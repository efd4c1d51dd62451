"""Base models shared by every layer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Platform = Literal["runpod", "paperspace"]
PLATFORMS: tuple[Platform, ...] = ("runpod", "paperspace")


class Model(BaseModel):
    """Everything a user writes or gpujob emits. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WireModel(BaseModel):
    """Provider API payloads. Unknown keys are ignored so new API fields never break gpujob."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
