"""A destroy is remembered: apply refuses the job until --recreate lifts the mark; watch skips it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.cli import session
from gpujob.errors import GpujobError
from gpujob.jobfile.model import JobSpec
from gpujob.plan.records import load_destroyed, note_destroyed
from gpujob.watch.intent import destroyed_on_purpose
from tests.apply.fakes import make_spec

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@dataclass
class Loaded:
    spec: JobSpec
    path: Path


def _opts(**kw: bool) -> session.Options:
    return session.Options(auto_approve=True, approvals=set(), saved=False, command="gpujob apply", **kw)


def test_a_destroyed_job_is_refused_until_recreate(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("x")
    ls = Loaded(make_spec(), job)
    session.refuse_destroyed([ls], _opts())  # nothing recorded: fine
    note_destroyed(session.state_dir_of(job), "toy", NOW)
    with pytest.raises(GpujobError) as err:
        session.refuse_destroyed([ls], _opts())
    assert "was destroyed at 2026-12-01 12:00 UTC" in str(err.value) and "--recreate" in (
        err.value.hint or ""
    )
    assert destroyed_on_purpose(ls) is not None
    # Absent in the file: nothing to refuse (it creates nothing); --recreate: allowed, and lifts the mark.
    session.refuse_destroyed([Loaded(make_spec(state="absent"), job)], _opts())
    session.refuse_destroyed([ls], _opts(recreate=True))
    session.remember_intent([ls], _opts(recreate=True), ok=True)
    assert load_destroyed(session.state_dir_of(job), "toy") is None
    session.refuse_destroyed([ls], _opts())
    assert destroyed_on_purpose(ls) is None


def test_only_a_destroy_that_finished_is_remembered(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("x")
    ls = Loaded(make_spec(), job)
    session.remember_intent([ls], _opts(destroy=True), ok=False)
    assert load_destroyed(session.state_dir_of(job), "toy") is None
    session.remember_intent([ls], _opts(destroy=True), ok=True)
    assert load_destroyed(session.state_dir_of(job), "toy") is not None


def test_the_rerun_hint_repeats_replace_fresh_and_recreate() -> None:
    opts = session.Options(
        auto_approve=True, approvals=set(), saved=False, command="gpujob apply", targets=("job.yaml",),
        replace=("toy.run",), fresh=True, recreate=True,
    )  # fmt: skip
    assert session.rerun_command(opts, can_ask=False) == (
        "gpujob apply job.yaml --replace toy.run --fresh --recreate --auto-approve"
    )
