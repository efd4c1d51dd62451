"""A pull that fails while watch runs is a warning event and a count, never the end of the watch: a
checkpoint pull that raises or comes back incomplete, an outputs pull that raises or meets files it
cannot pull. The pulls themselves are replaced (the e2e watch tests run the real ones)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.errors import SSHError
from gpujob.live import LiveResource
from gpujob.watch.pulls import Puller

MACHINE = LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-job", status="running")
RETRY = "trying again next tick"


def _setup(write_job: Any, tmp_path: Path) -> tuple[Puller, Any, list[tuple[Any, ...]]]:
    said: list[tuple[Any, ...]] = []
    puller = Puller(clock=None, ssh=None, say=lambda *args, **kw: said.append((*args[1:], kw)))  # type: ignore[arg-type]
    job = SimpleNamespace(name="job", loaded=write_job(), state_dir=tmp_path / "state", said={}, ledger=None)
    return puller, job, said


def _raises(exc: BaseException) -> Any:
    async def pull(*_args: Any) -> Any:
        raise exc

    return pull


def _returns(record: Any) -> Any:
    async def pull(*_args: Any) -> Any:
        return record

    return pull


WARN = {"level": "warning", "topic": "pull"}


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (SSHError("connection reset by peer\nsecond line"), "connection reset by peer"),
        (SSHError(""), "SSHError"),  # no message: the exception's name
        (OSError("No space left on device"), "No space left on device"),
    ],
)
def test_a_checkpoint_pull_that_raises_is_a_warning_and_a_count(
    write_job: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException, words: str
) -> None:
    puller, job, said = _setup(write_job, tmp_path)
    monkeypatch.setattr("gpujob.apply.runtime.pull", _raises(exc))
    assert asyncio.run(puller.pull(job, MACHINE, None)) is False
    assert puller.failed_since_start == 1
    assert said == [("pull-failed", f"checkpoint pull failed: {words}", RETRY, WARN)]


def test_an_incomplete_checkpoint_pull_names_each_file_and_why(
    write_job: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    puller, job, said = _setup(write_job, tmp_path)
    refused = SimpleNamespace(
        name="step-2.pt", sha256="ab", verified=False, verify_output="loading...\nstep-2.pt: truncated\n"
    )
    record = SimpleNamespace(
        files=[refused],
        complete=False,
        missing=lambda: ["step-3.pt"],
        unverified=lambda: ["step-2.pt"],
        file=lambda name: refused if name == "step-2.pt" else None,
        unpullable={"a\nb": "a symlink"},
    )
    monkeypatch.setattr("gpujob.apply.runtime.pull", _returns(record))
    assert asyncio.run(puller.pull(job, MACHINE, None)) is False
    assert puller.failed_since_start == 1
    why = (
        "pull incomplete: step-3.pt (not pulled, or its checksum differs); "
        "step-2.pt (checkpoint.verify said: step-2.pt: truncated); 'a\\nb' (not pullable: a symlink)"
    )
    assert said == [("pull-failed", why, RETRY, WARN)]


def test_an_outputs_pull_that_raises_or_meets_unpullable_files_is_a_warning_and_a_count(
    write_job: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    puller, job, said = _setup(write_job, tmp_path)
    puller.outputs = _raises(OSError("disk full"))
    assert asyncio.run(puller.pull_outputs(job, MACHINE, None, reason="run finished")) is False
    record = SimpleNamespace(unpullable={"results/b": "symlink", "results/a": "fifo"}, files={})
    puller.outputs = _returns(record)
    assert asyncio.run(puller.pull_outputs(job, MACHINE, None, reason="run finished")) is False
    assert puller.failed_since_start == 2
    assert said == [
        ("pull-failed", "outputs pull failed: disk full", RETRY, WARN),
        (
            "pull-failed",
            "outputs not pullable: results/a, results/b",
            "rename or remove them on the machine",
            WARN,
        ),
    ]


def test_a_pulled_outputs_record_is_reported_not_counted(
    write_job: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    puller, job, said = _setup(write_job, tmp_path)
    record = SimpleNamespace(unpullable={}, files={"results/a": object()}, local_dir="/tmp/out")
    puller.outputs = _returns(record)
    assert asyncio.run(puller.pull_outputs(job, MACHINE, None, reason="run finished")) is True
    assert puller.failed_since_start == 0
    assert said == [
        ("pulled", "1 output file(s) pulled, each checked by sha256 (run finished)", "into /tmp/out", {})
    ]
