"""Base models shared by every layer."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict

Platform = Literal["runpod", "paperspace"]
PLATFORMS: tuple[Platform, ...] = ("runpod", "paperspace")


class Model(BaseModel):
    """Everything a user writes or gpujob emits. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WireModel(BaseModel):
    """Provider API payloads. Unknown keys are ignored so new API fields never break gpujob.

    A payload that does not validate raises providers.http.MalformedResponse (a ProviderError, so
    commands print one line, and an unknown outcome after a create), never a pydantic traceback."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        from pydantic import ValidationError

        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            from gpujob.providers.http import MalformedResponse

            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "body"
            got = type(obj).__name__
            raise MalformedResponse(f"{cls.__name__} ({got}): {where}: {first['msg']}") from None


class SourceRef(Model):
    """Where a value stands in a job file (1-based line and column)."""

    file: str
    line: int
    column: int
    key: str
