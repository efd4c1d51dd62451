"""Property tests: whatever the input, the loader answers with a LoadedSpec or a SpecError, nothing else."""

from __future__ import annotations

import io
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpujob.errors import SpecError
from gpujob.jobfile.model import _MAX_DURATION_S, _UNIT_SECONDS, format_duration, parse_duration
from gpujob.spec.load import load_spec
from tests.examples import examples

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ["version", "name", "platform", "machine", "gpu", "gpu_count", "spot", "regions", "image", "template",
        "storage", "volume_gb", "checkpoint", "dir", "interval", "run", "command", "env", "secrets", "x"]  # fmt: skip
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
    st.text(max_size=20), st.sampled_from(["runpod", "paperspace", "15m", "auto", "A100-80GB", "1", "99999999999999999999w", "0s", "1e400h"]),
)  # fmt: skip
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5),
    ),
    max_leaves=25,
)


def _outcome(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.yaml"
        path.write_bytes(data)
        try:
            load_spec(path)
        except SpecError as exc:
            assert exc.problems
            for problem in exc.problems:
                assert problem.line >= 1 and problem.col >= 1 and problem.file == str(path)


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    _outcome(data)


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("ab:- \n\t[]{}&*!|>'\",#%@`?1.~")), max_size=120))
def test_arbitrary_yamlish_text(text: str) -> None:
    _outcome(text.encode())


@SETTINGS
@given(st.dictionaries(st.sampled_from(KEYS), trees, max_size=8))
def test_arbitrary_nested_mappings(tree: dict) -> None:
    from ruamel.yaml import YAML

    buffer = io.StringIO()
    YAML(typ="safe", pure=True).dump(tree, buffer)
    _outcome(buffer.getvalue().encode())


@SETTINGS
@given(
    machine=st.dictionaries(st.sampled_from(KEYS), scalars | st.lists(scalars, max_size=3), max_size=6),
    platform=st.sampled_from(["runpod", "paperspace", "aws"]),
)
def test_arbitrary_machines(machine: dict, platform: str) -> None:
    from ruamel.yaml import YAML

    buffer = io.StringIO()
    YAML(typ="safe", pure=True).dump(
        {"version": 1, "name": "j", "platform": platform, "machine": machine}, buffer
    )
    _outcome(buffer.getvalue().encode())


@given(st.integers(min_value=1, max_value=10**7))
def test_duration_round_trip_from_seconds(seconds: int) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value


@given(st.integers(min_value=1, max_value=10**5), st.sampled_from("smhdw"))
def test_duration_round_trip_from_text(amount: int, unit: str) -> None:
    if amount * _UNIT_SECONDS[unit] > _MAX_DURATION_S:
        with pytest.raises(ValueError, match="too long"):
            parse_duration(f"{amount}{unit}")
        return
    parsed = parse_duration(f"{amount}{unit}")
    assert parse_duration(format_duration(parsed)) == parsed
    assert format_duration(parsed).endswith(tuple("smhdw"))


@pytest.mark.parametrize("text", ["15 minutes", "15", "15 m s", "-1h", "0s", "1y", "auto", ""])
def test_bad_durations_are_value_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_bare_numbers_are_refused() -> None:
    with pytest.raises(ValueError, match="number with a unit"):
        parse_duration(15)
