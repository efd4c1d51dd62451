"""Values validate refuses as explicit bounds, the same on the fast path and the full one: a verify
command that would paste a remote file name into code, non-finite or absurd numbers, durations under
a second or written with non-ASCII digits."""

from __future__ import annotations

import pytest

from gpujob.spec.fastcheck import certainly_valid
from gpujob.spec.load import check_files

from .conftest import RUNPOD_JOB
from .test_spec_fastcheck import _same_both_ways


def _job(**replace: str) -> str:
    text = RUNPOD_JOB
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


def _with_verify(command: str) -> str:
    quoted = "'" + command.replace("'", "''") + "'"  # a YAML single-quoted scalar holds any of these
    return _job(**{"  interval: 15m\n": f"  interval: 15m\n  verify: {quoted}\n"})


UNSAFE_VERIFY = [
    'sh -c "python3 verify_ckpt.py {file}"',
    "python3 -c \"import torch; torch.load('{file}')\"",
    'bash -lc "python3 v.py --ckpt={file}"',
    "sh -c 'bash -c \"load {file}\"'",  # one level down
    "sh -c 'eval load {file}'",
    "eval python3 v.py {file}",
    "sh -c {file}",
    'python3 -c "{file}"',
    "timeout 60 perl -e {file}",
    "python3 - <<EOF\nopen('{file}')\nEOF",
    "ssh gpu-box python3 v.py {file}",  # the remote shell parses the joined arguments
    "watch -n 5 python3 v.py {file}",
    "flock /tmp/l -c {file}",
]
SAFE_VERIFY = [
    "python3 verify_ckpt.py {file}",
    'python3 verify_ckpt.py "{file}"',
    "python3 verify_ckpt.py '{file}'",
    "sh -c 'python3 verify_ckpt.py {file}'",
    "test -s {file} && python3 v.py --ckpt={file}",
    'python3 -c "import sys, torch; torch.load(sys.argv[1])" {file}',
    "python3 verify_ckpt.py",  # reads $GPUJOB_CHECKPOINT_FILE itself
]


@pytest.mark.parametrize("command", UNSAFE_VERIFY)
def test_a_verify_command_that_would_parse_the_name_as_code_is_refused(write, command: str) -> None:
    path = write(_with_verify(command))
    code, out = _same_both_ways([str(path)])
    assert code == 1 and "checkpoint.verify" in out, out
    assert "Safe forms" in out and "sh -c 'python3 verify_ckpt.py {file}'" in out
    assert not certainly_valid([path])


@pytest.mark.parametrize("command", SAFE_VERIFY)
def test_the_documented_verify_forms_stay_valid(write, command: str) -> None:
    path = write(_with_verify(command))
    assert check_files([path]) == []
    assert _same_both_ways([str(path)])[0] == 0


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("  image: ", "  max_price_per_hour: .inf\n  image: ", "at most 1000"),
        ("  image: ", "  max_price_per_hour: 1e400\n  image: ", "at most 1000"),
        ("  image: ", "  max_price_per_hour: .nan\n  image: ", "1000"),
        ("  image: ", "  max_price_per_hour: 1000.01\n  image: ", "at most 1000"),
        ("  interval: 15m\n", "  interval: 0.0001s\n", "at least 1s"),
        ("  interval: 15m\n", "  interval: 0.5s\n", "at least 1s"),
        ("  interval: 15m\n", "  interval: １s\n", "not a duration"),
        ("  interval: 15m\n", "  interval: ٣m\n", "not a duration"),  # Arabic-Indic three
        ("  interval: 15m\n", "  interval: 15m\n  size_gb: .inf\n", "at most 100000"),
    ],
)
def test_numbers_out_of_bounds_are_refused_both_ways(write, old: str, new: str, words: str) -> None:
    path = write(_job(**{old: new}))
    code, out = _same_both_ways([str(path)])
    assert code == 1 and words in out, out


AUTO = "  interval: auto\n  mtbf: {mtbf}\n  write_time: {write}\n"


def test_a_sub_second_write_time_is_a_measurement_and_valid_both_ways(write) -> None:
    from gpujob.layout.machine import checkpoint_interval_s
    from gpujob.spec.load import load_specs

    path = write(_job(**{"  interval: 15m\n": AUTO.format(mtbf="1h", write="0.5s")}))
    assert check_files([path]) == []
    assert certainly_valid([path])  # the fast path takes it itself, it does not fall back
    assert _same_both_ways([str(path)])[0] == 0
    spec = load_specs([path])[0].spec
    assert spec.checkpoint is not None and spec.checkpoint.write_time is not None
    assert spec.checkpoint.write_time.total_seconds() == 0.5
    assert spec.model_dump(mode="json")["checkpoint"]["write_time"] == "0.5s"  # written back as given
    assert checkpoint_interval_s(spec) == 60  # Young/Daly: sqrt(2 * 3600 s * 0.5 s)


@pytest.mark.parametrize(
    ("mtbf", "write_time", "line", "key", "words"),
    [
        ("0.5s", "0.5s", 13, "checkpoint.mtbf", "'0.5s' is too short a duration (at least 1s)"),
        ("1h", "0.0001s", 14, "checkpoint.write_time", "too short a duration (at least 0.001s)"),
        ("1h", "0s", 14, "checkpoint.write_time", "longer than zero"),
        ("1h", "０.5s", 14, "checkpoint.write_time", "not a duration"),
        ("1h", "0.5", 14, "checkpoint.write_time", "not a duration"),
    ],
)
def test_the_write_time_bound_is_its_own_and_every_other_duration_keeps_1s(
    write, mtbf: str, write_time: str, line: int, key: str, words: str
) -> None:
    path = write(_job(**{"  interval: 15m\n": AUTO.format(mtbf=mtbf, write=write_time)}))
    code, out = _same_both_ways([str(path)])
    assert code == 1, out
    assert f"{path.name}:{line}:" in out and f"{key}: " in out and words in out, out
    assert not certainly_valid([path])


def test_the_bounds_are_in_the_published_schema() -> None:
    import json

    from .conftest import REPO

    schema = json.loads((REPO / "schemas" / "job.schema.json").read_text())
    price = schema["$defs"]["MachineSpec"]["properties"]["max_price_per_hour"]["anyOf"][0]
    assert price["maximum"] == 1000
    duration = json.dumps(schema)
    assert "^[0-9]+(\\\\.[0-9]+)?(s|m|h|d|w)$" in duration


def test_command_line_durations_may_be_shorter_than_a_second_but_not_zero() -> None:
    from gpujob.jobfile.rules import parse_duration

    assert parse_duration("0.2s", minimum_s=0).total_seconds() == 0.2  # watch --probe 0.2s
    with pytest.raises(ValueError, match="at least 1s"):
        parse_duration("0.2s")  # a job file's
    with pytest.raises(ValueError, match="longer than zero"):
        parse_duration("0s", minimum_s=0)
