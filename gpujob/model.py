"""Base models shared by every layer."""

from __future__ import annotations

import types
from typing import Any, ClassVar, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator

Platform = Literal["runpod", "paperspace"]
PLATFORMS: tuple[Platform, ...] = ("runpod", "paperspace")


class Model(BaseModel):
    """Everything a user writes or gpujob emits. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WireModel(BaseModel):
    """Provider API payloads. Unknown keys are ignored so new API fields never break gpujob.

    A payload that does not validate raises errors.MalformedResponse (a ProviderError, so
    commands print one line, and an unknown outcome after a create), never a pydantic traceback."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    # Keys the API may leave out of an object of this kind (the spec does not require them); every other
    # field is expected on the wire, and `gpujob doctor` reports a missing one as drift.
    wire_optional: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _null_takes_default(cls, data: Any) -> Any:
        """A null where gpujob has a default reads as that default: one pod with `"ports": null` must not
        make the whole listing unreadable (user input stays strict: that is Model, not WireModel)."""
        if not isinstance(data, dict):
            return data
        keys = _defaulted_keys(cls)
        if not any(data.get(k, 0) is None for k in keys):
            return data
        return {k: v for k, v in data.items() if not (v is None and k in keys)}

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        from pydantic import ValidationError

        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            from gpujob.errors import MalformedResponse

            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "body"
            got = type(obj).__name__
            raise MalformedResponse(f"{cls.__name__} ({got}): {where}: {first['msg']}") from None


_DEFAULTED: dict[type, frozenset[str]] = {}


def _defaulted_keys(cls: type[BaseModel]) -> frozenset[str]:
    """Names and aliases of the fields that have a default but do not accept None (cached per class)."""
    found = _DEFAULTED.get(cls)
    if found is None:
        keys: set[str] = set()
        for name, info in cls.model_fields.items():
            if info.is_required() or _nullable(info.annotation):
                continue
            keys.add(name)
            if info.alias:
                keys.add(info.alias)
        found = _DEFAULTED[cls] = frozenset(keys)
    return found


def _nullable(annotation: Any) -> bool:
    if annotation is Any or annotation is None or annotation is type(None):
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_nullable(a) for a in get_args(annotation))
    return False


class SourceRef(Model):
    """Where a value stands in a job file (1-based line and column)."""

    file: str
    line: int
    column: int
    key: str
