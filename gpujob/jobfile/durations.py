"""The job file's two duration types (pydantic annotations over gpujob.jobfile.rules): a cadence or a
timeout (`Duration`, at least a second) and a measured time (`MeasuredDuration`, may be under one)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from gpujob.jobfile.rules import DURATION_PATTERN, format_duration, parse_duration, parse_measured

Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "pattern": DURATION_PATTERN, "examples": ["15m", "48h", "1w"]}),
]
# A measured time, not a cadence or a timeout: it may be under a second (rules.parse_measured).
MeasuredDuration = Annotated[
    timedelta,
    BeforeValidator(parse_measured),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "pattern": DURATION_PATTERN, "examples": ["0.5s", "30s", "2m"]}),
]
