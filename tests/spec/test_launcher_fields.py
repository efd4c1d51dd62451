"""run.launcher, run.rendezvous_port and checkpoint.writers (issue #38): defaults, accepted values, and
problems placed at file:line:key by the full loader, agreed with by the fast path."""

from __future__ import annotations

import pytest

from gpujob.errors import SpecError
from gpujob.spec.fastcheck import certainly_valid
from gpujob.spec.load import load_spec

from .conftest import RUNPOD_JOB


def test_defaults_keep_one_process_per_node_and_rank0_writing(write) -> None:
    spec = load_spec(write(RUNPOD_JOB)).spec
    assert spec.run is not None and spec.checkpoint is not None
    assert (spec.run.launcher, spec.run.rendezvous_port, spec.checkpoint.writers) == ("none", 29500, "rank0")


def test_torchrun_and_all_writers_load(write) -> None:
    text = RUNPOD_JOB.replace("  interval: 15m\n", "  interval: 15m\n  writers: all\n") + (
        "  launcher: torchrun\n  rendezvous_port: 29400\n"
    )
    path = write(text)
    spec = load_spec(path).spec
    assert spec.run is not None and spec.checkpoint is not None
    assert (spec.run.launcher, spec.run.rendezvous_port, spec.checkpoint.writers) == (
        "torchrun",
        29400,
        "all",
    )
    assert certainly_valid([path])


@pytest.mark.parametrize(
    ("old", "new", "key", "line", "says"),
    [
        (
            "  command: python train.py\n",
            "  command: python train.py\n  launcher: mpirun\n",
            "run.launcher",
            15,
            "torchrun",
        ),
        ("  interval: 15m\n", "  interval: 15m\n  writers: rank1\n", "checkpoint.writers", 13, "rank0"),
        (
            "  command: python train.py\n",
            "  command: python train.py\n  rendezvous_port: 80\n",
            "run.rendezvous_port",
            15,
            "1024",
        ),
        (
            "  command: python train.py\n",
            "  command: OMP_NUM_THREADS=1 torchrun --nproc-per-node=8 train.py\n  launcher: torchrun\n",
            "run.command",
            14,
            "runs torchrun around the command itself",
        ),
    ],
)
def test_refused_at_file_line_key(write, old, new, key, line, says) -> None:
    path = write(RUNPOD_JOB.replace(old, new))
    assert not certainly_valid([path])
    with pytest.raises(SpecError) as info:
        load_spec(path)
    found = {p.key_path: p for p in info.value.problems}
    assert list(found) == [key]
    assert found[key].line == line
    assert says in found[key].message + (found[key].hint or "")


def test_torchrun_command_under_launcher_none_is_the_users_own(write) -> None:
    path = write(RUNPOD_JOB.replace("python train.py", "torchrun --nproc-per-node=2 train.py"))
    assert load_spec(path).spec.run.command.startswith("torchrun")  # type: ignore[union-attr]
