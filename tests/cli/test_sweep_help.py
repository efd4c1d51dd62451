"""Where a user meets a sweep, --help says so: relaunching one queue, what watch does with the
queues, where pull puts the cells, what status adds (docs/sweeps.md)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpujob.cli.main import cli


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("apply", "gpujob apply --replace abl.q1.run"),
        ("watch", "A sweep (docs/sweeps.md) is watched queue by queue"),
        ("pull", "outputs.pull_to/<cell>/"),
        ("status", "A sweep adds a cell table to each queue"),
        ("destroy", "a sweep: every queue's pod, then the volume they share"),
    ],
)
def test_help_mentions_sweeps_where_a_user_needs_them(command: str, says: str) -> None:
    out = CliRunner().invoke(cli, [command, "--help"], terminal_width=120)
    assert out.exit_code == 0, out.output
    assert says in " ".join(out.output.split()), out.output
