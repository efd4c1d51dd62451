"""One duration parser: the simulator's CLI (`sim clock advance 1h30m`), the SSH limits' environment and
`watch --interval` read durations with the job file's own parser (gpujob.jobfile.rules.parse_duration)."""

from __future__ import annotations

import pytest

from gpujob.jobfile.rules import parse_duration
from gpujob.sim.clock import parse_duration as sim_duration


@pytest.mark.parametrize("text", ["30s", "15m", "2h", "1d", "1w", "1.5m"])
def test_every_unit_means_what_it_means_in_a_job_file(text: str) -> None:
    assert sim_duration(text) == parse_duration(text).total_seconds()


def test_the_simulator_also_takes_parts_and_bare_seconds() -> None:
    assert sim_duration("1h30m") == parse_duration("90m").total_seconds()
    assert sim_duration("3600") == 3600.0
    for bad in ("2x", "h", "1h 30m", "", "0s"):
        with pytest.raises(ValueError):
            sim_duration(bad)


def test_the_ssh_limits_read_the_same_durations() -> None:
    from gpujob.ssh.deadline import Limits

    limits = Limits.from_env({"GPUJOB_SSH_IDLE_TIMEOUT": "2m", "GPUJOB_SSH_CONNECT_TIMEOUT": "45"})
    assert limits.idle_s == 120.0 and limits.connect_s == 45.0
