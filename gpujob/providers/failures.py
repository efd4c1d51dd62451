"""What a failed platform call means: the platform's own words (ErrorInfo), the outcomes a client
cannot know (OutcomeUnknown, MalformedResponse: gpujob.errors, since the kernel's WireModel raises
one), and the map from a status onto gpujob's typed errors,
each with what to do next."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from gpujob.errors import (
    ProviderAuthError,
    ProviderBalanceError,
    ProviderCapacityError,
    ProviderConflict,
    ProviderError,
    ProviderNotFound,
    ProviderUnavailable,
)


@dataclass
class ErrorInfo:
    """What a platform said when a call failed, parsed from its own error shape."""

    message: str
    capacity: bool = False


ErrorParser = Callable[[httpx.Response | None, Any], ErrorInfo]


def text_snippet(response: httpx.Response | None, limit: int = 200) -> str:
    if response is None:
        return ""
    text = response.text.strip().replace("\n", " ")
    return text[:limit]


def typed_error(
    msg: str, *, platform: str, key_env: str, call: str, status: int, capacity: bool
) -> ProviderError:
    """Map a failed call onto gpujob's typed errors, with the platform's own (scrubbed) words and what
    to do."""
    kw: dict[str, Any] = {"platform": platform, "call": call, "status": status}
    if status in (401, 403):
        what = "rejected the API key" if status == 401 else "the API key lacks access to this"
        return ProviderAuthError(
            f"{msg} ({what})",
            hint=f"check {key_env}: set it to a valid key with read/write access (export {key_env}=...)",
            **kw,
        )
    if status == 402:
        return ProviderBalanceError(msg, hint=f"top up the {platform} account balance, then re-run", **kw)
    if status == 404:
        return ProviderNotFound(msg, hint="the resource is gone; run `gpujob plan` to see live state", **kw)
    if capacity:
        return ProviderCapacityError(
            msg, hint="no capacity for this candidate; gpujob tries the next GPU / region / cloud", **kw
        )
    if status == 409:
        return ProviderConflict(
            msg,
            hint="the action is not valid in the resource's current state; re-run `gpujob plan`",
            **kw,
        )
    if status == 429:
        return ProviderUnavailable(msg, hint="rate limited; wait and re-run", **kw)
    if status == 410:
        return ProviderError(
            msg,
            hint="the platform retired this API (410 Gone), not a problem with the job file; `gpujob doctor` "
            "shows which calls still answer, and a newer gpujob may no longer need this one",
            **kw,
        )
    return ProviderError(
        msg, hint="the platform refused the request; check the job file against its rules", **kw
    )
