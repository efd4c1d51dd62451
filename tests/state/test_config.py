"""Which store a job file uses: environment first, then gpujob.yaml's `state:` block, then .gpujob/."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob.errors import ConfigError, SpecError
from gpujob.state.config import Local, Postgres, resolve, safe_url


def test_default_is_the_directory_beside_the_job_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    job = tmp_path / "jobs" / "bert.yaml"
    assert resolve(job, env={}) == Local(tmp_path / "jobs" / ".gpujob")


def test_environment_wins(tmp_path: Path) -> None:
    env = {"GPUJOB_STATE_URL": "postgresql://u:pw@db/x", "GPUJOB_STATE_DIR": str(tmp_path)}
    assert resolve(tmp_path / "job.yaml", env=env) == Postgres(
        "postgresql://u:pw@db/x", "default", "GPUJOB_STATE_URL"
    )
    assert resolve(tmp_path / "job.yaml", env={"GPUJOB_STATE_DIR": str(tmp_path / "s")}) == Local(
        tmp_path / "s"
    )
    with pytest.raises(ConfigError, match="GPUJOB_STATE_URL: 'mysql://db/x' is not a PostgreSQL URL"):
        resolve(None, env={"GPUJOB_STATE_URL": "mysql://db/x"})
    with pytest.raises(ConfigError, match="GPUJOB_STATE_WORKSPACE"):
        resolve(None, env={"GPUJOB_STATE_URL": "postgresql://db/x", "GPUJOB_STATE_WORKSPACE": "a b"})


def test_project_file_up_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "gpujob.yaml").write_text(
        "state:\n  url: postgresql://gpujob@db:5432/gj\n  workspace: vision\n"
    )
    got = resolve(tmp_path / "jobs" / "bert.yaml", env={})
    assert got == Postgres("postgresql://gpujob@db:5432/gj", "vision", str(tmp_path / "gpujob.yaml"))
    # Above the repository root nothing is looked for.
    inner = tmp_path / "sub"
    (inner / ".git").mkdir(parents=True)
    assert resolve(inner / "job.yaml", env={}) == Local(inner / ".gpujob")


def test_project_file_without_state_block_is_local(tmp_path: Path) -> None:
    (tmp_path / "gpujob.yaml").write_text("other: 1\n")
    (tmp_path / ".git").mkdir()
    assert resolve(tmp_path / "job.yaml", env={}) == Local(tmp_path / ".gpujob")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("state:\n  url: postgresql://u:hunter2pw@db/gj\n", "gpujob.yaml:2:3: state.url: holds a password"),
        (
            "state:\n  url: mysql://db/gj\n",
            "gpujob.yaml:2:3: state.url: 'mysql://db/gj' is not a PostgreSQL URL",
        ),
        ("state:\n  url: postgresql://db/gj\n  colour: red\n", "gpujob.yaml:3:3: state.colour: unknown key"),
        ("state:\n  workspace: x\n", "gpujob.yaml:1:1: state.url: a postgresql"),
        ("state:\n  url: postgresql://db/gj\n  workspace: a b\n", "gpujob.yaml:3:3: state.workspace:"),
        ("state: postgresql://db/gj\n", "gpujob.yaml:1:1: state: must be a mapping"),
    ],
)
def test_bad_state_block_names_file_line_and_key(tmp_path: Path, text: str, where: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "gpujob.yaml").write_text(text)
    with pytest.raises(SpecError) as err:
        resolve(tmp_path / "job.yaml", env={})
    rendered = err.value.render()
    assert where in rendered
    assert "hunter2pw" not in rendered  # a password in the file is never echoed


def test_safe_url_drops_the_password() -> None:
    assert (
        safe_url("postgresql://u:pw@db:5433/x?sslmode=require") == "postgresql://u@db:5433/x?sslmode=require"
    )
    assert safe_url("postgresql://db/x") == "postgresql://db/x"


@pytest.mark.parametrize(
    ("dsn", "secret"),
    [
        ("postgresql://u@db/gj?password=QuerySecret1&sslmode=require", "QuerySecret1"),
        ("postgresql://u@db/gj?sslpassword=KeySecret22", "KeySecret22"),
        ("postgresql://u@db/gj?pass%77ord=%51uerySecret3", "QuerySecret3"),  # spelt with %-escapes
        ("postgresql://u:Url%40Secret4@db:5433/gj", "Url@Secret4"),
        ("host=db dbname=gj password=KvSecret55", "KvSecret55"),
        ("host=db password='kv secret \\' 66' dbname=gj", "kv secret ' 66"),
        ("mysql://u:OtherSecret7@db/x", "OtherSecret7"),
        ("host=db password='unterminated Secret88", "Secret88"),
    ],
)
def test_every_password_form_is_masked_by_libpqs_own_parse(dsn: str, secret: str) -> None:
    from urllib.parse import quote

    from gpujob.state.dsn import UNPARSEABLE

    shown = safe_url(dsn)
    assert secret not in shown and quote(secret) not in shown and secret.split()[-1] not in shown
    assert "db" in shown or shown == UNPARSEABLE  # the rest still says where, if libpq can read it


def test_pgpassword_style_env_is_masked_too() -> None:
    from gpujob.state.dsn import secrets, shown

    env = {"PGPASSWORD": "EnvSecret99x"}
    assert "EnvSecret99x" not in shown("host=db user=EnvSecret99x", env)
    assert "EnvSecret99x" in secrets("host=db", env)


def test_a_key_value_dsn_is_accepted_and_a_bad_one_is_refused_without_echo() -> None:
    where = resolve(None, env={"GPUJOB_STATE_URL": "host=db dbname=gj password=KvSecret55"})
    assert isinstance(where, Postgres)
    with pytest.raises(ConfigError) as bad:
        resolve(None, env={"GPUJOB_STATE_URL": "host=db password='BadSecret77"})
    assert "BadSecret77" not in str(bad.value)
