"""Number fields as both platforms really send them: RunPod's specs show prices as strings ("0.74"),
and Paperspace has sent int64 fields (ram, storageTotal, ...) as strings. Unparseable text reads as None."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator


def _lenient_int(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        try:
            return int(float(text))
        except ValueError:
            return None
    return value


def _lenient_float(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return value


LenientInt = Annotated[int | None, BeforeValidator(_lenient_int)]
LenientFloat = Annotated[float | None, BeforeValidator(_lenient_float)]
