"""The audit, cost and force-unlock commands: exit codes, --fix output, non-interactive refusal."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpujob.cli.main import cli
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind, Plan
from tests.audit.audit_seed import seeded_resources
from tests.owners import machine, marker, pin_project

JOBS = Path(__file__).parent / "jobs"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(JOBS, tmp_path / "jobs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNPOD_API_KEY", "test-key-not-secret")
    monkeypatch.setenv("PAPERSPACE_API_KEY", "test-key-not-secret")
    monkeypatch.setenv("GPUJOB_STATE_DIR", str(tmp_path / ".gpujob"))
    monkeypatch.delenv("GPUJOB_PROJECT_ID", raising=False)
    pin_project(tmp_path / ".gpujob")
    monkeypatch.delenv("CI", raising=False)
    return tmp_path


def fake_account(
    monkeypatch: pytest.MonkeyPatch, resources: list[LiveResource], errors: list[str] | None = None
) -> None:
    async def read_account(platforms, env=None):  # type: ignore[no-untyped-def]
        wanted = [r for r in resources if r.platform in platforms]
        return LiveState(read_at=datetime.now(UTC), resources=wanted, read_errors=errors or [])

    monkeypatch.setattr("gpujob.audit.account.read_account", read_account)


def test_audit_exit_2_when_idle(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_account(monkeypatch, seeded_resources())
    result = CliRunner().invoke(cli, ["audit", "--format", "json"])
    assert result.exit_code == 2, result.output
    data = json.loads(result.output)
    assert data["local_jobs"] == ["bert", "render", "sweep"]
    assert any(i["owner"] == "this-repo" and i["over_threshold"] for i in data["items"])


def test_audit_exit_0_when_clean(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    running = [r for r in seeded_resources() if r.status == "running"]
    fake_account(monkeypatch, running)
    result = CliRunner().invoke(cli, ["audit"])
    assert result.exit_code == 0, result.output
    assert "Nothing billable idle longer than 1d." in result.output


def test_audit_exit_1_on_read_error_and_bad_threshold(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_account(monkeypatch, [], errors=["paperspace: HTTP 503: unavailable"])
    result = CliRunner().invoke(cli, ["audit"])
    assert result.exit_code == 1 and "paperspace: HTTP 503" in result.output
    result = CliRunner().invoke(cli, ["audit", "--idle-threshold", "24"])
    assert result.exit_code == 1 and "--idle-threshold" in result.output
    result = CliRunner().invoke(cli, ["audit", "--format", "yaml"])  # usage errors must not read as "idle"
    assert result.exit_code == 1


def test_audit_needs_a_platform(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNPOD_API_KEY")
    monkeypatch.delenv("PAPERSPACE_API_KEY")
    result = CliRunner().invoke(cli, ["audit"])
    assert result.exit_code == 1 and "RUNPOD_API_KEY" in result.output


def test_audit_fix_writes_gated_plan(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_account(monkeypatch, seeded_resources())
    result = CliRunner().invoke(cli, ["audit", "--fix", "-o", "fix.json", "--platform", "runpod"])
    assert result.exit_code == 2, result.output
    plan = Plan.model_validate_json((repo / "fix.json").read_text())
    ids = [a.id for a in plan.all_actions()]
    assert ids == [
        "sweep.pod.pull", "sweep.pod.terminate",
        "sweep.network_volume.delete-volume", "sweep.network_volume.delete-volume.nv-sweep-hp",
    ]  # fmt: skip
    assert all(a.gated for a in plan.all_actions() if a.kind is not ActionKind.PULL)
    assert "Nothing was changed" in result.output and "gpujob apply fix.json" in result.output
    assert plan.jobs[0].spec_file.endswith("jobs/sweep.yaml")


# --- cost -----------------------------------------------------------------------------------------


class MoneyProvider:
    """A provider that lists resources and answers the billing reads `gpujob cost` makes."""

    def __init__(self, resources: list[LiveResource], billed: dict[str, float], now: datetime) -> None:
        self.platform = "runpod"
        self.resources, self.billed, self.now = resources, billed, now
        self.asked: list[list[str]] = []

    async def list_resources(self) -> list[LiveResource]:
        return list(self.resources)

    def platform_now(self) -> datetime:
        return self.now

    async def metering(self, refs):  # type: ignore[no-untyped-def]
        from gpujob.live import Metering

        self.asked.append([r.id for r in refs])
        return Metering(billed={k: v for k, v in self.billed.items() if k in {r.id for r in refs}},
                        source="GET /v2/billing/pods (fake)")  # fmt: skip


def fake_cost_read(
    monkeypatch: pytest.MonkeyPatch, resources: list[LiveResource], billed: dict
) -> MoneyProvider:
    import contextlib

    provider = MoneyProvider(resources, billed, datetime.now(UTC))

    @contextlib.asynccontextmanager
    async def open_providers(platforms, **_kw):  # type: ignore[no-untyped-def]
        yield {p: provider for p in platforms}

    monkeypatch.setattr("gpujob.providers.registry.open_providers", open_providers)
    return provider


def bert_pod(hours_up: float) -> LiveResource:
    now = datetime.now(UTC)
    return LiveResource(
        platform="runpod", kind="pod", id="rp-bert", name=machine("bert"), status="running", attributes=marker(),
        gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, cloud="secure", container_disk_gb=20,
        created_at=now - timedelta(hours=hours_up), started_at=now - timedelta(hours=hours_up),
    )  # fmt: skip


def test_cost_estimate_and_projection(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cost_read(monkeypatch, [bert_pod(10)], {})
    result = CliRunner().invoke(cli, ["cost", "jobs/bert.yaml", "--format", "json"])
    # 1.6428 $/h × 48 h max_runtime ≈ $78.85 > $50 budget: exit 2, with a budget finding.
    assert result.exit_code == 2, result.output
    job = json.loads(result.output)["jobs"][0]
    assert job["estimate"] is True and job["resources"][0]["source"] == "estimate"
    assert "estimate from metered time" in job["resources"][0]["basis"]
    assert job["spent_usd"] == pytest.approx(1.6428 * 10, rel=1e-3)
    assert job["projected_at_max_runtime_usd"] == pytest.approx(1.6428 * 48, rel=1e-3)
    assert job["hours_to_budget"] == pytest.approx((50 - 1.6428 * 10) / 1.6428, rel=1e-2)
    assert job["findings"][0]["code"] == "budget"


def test_cost_uses_billing_when_offered(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = fake_cost_read(monkeypatch, [bert_pod(1)], {"rp-bert": 3.5})
    result = CliRunner().invoke(cli, ["cost", "jobs/bert.yaml"])
    assert result.exit_code == 2  # 3.5 + 1.64 × 47 h still crosses $50
    assert (
        "spent $3.50 (billed by the platform)" in result.output and "billed: runpod billing" in result.output
    )
    assert "estimate" not in result.output
    assert provider.asked == [["rp-bert"]]


def test_a_gone_pod_is_still_counted_never_zero(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After teardown the pod is not listed; gpujob remembers it (seen record) and asks billing for it."""
    provider = fake_cost_read(monkeypatch, [bert_pod(2)], {"rp-bert": 3.2})
    assert CliRunner().invoke(cli, ["cost", "jobs/bert.yaml"]).exit_code == 2
    provider.resources = []  # terminated since
    result = CliRunner().invoke(cli, ["cost", "jobs/bert.yaml", "--format", "json"])
    job = json.loads(result.output)["jobs"][0]
    assert [(r["id"], r["state"], r["usd"]) for r in job["resources"]] == [("rp-bert", "gone", 3.2)]
    assert job["spent_usd"] == 3.2 and provider.asked[-1] == ["rp-bert"]
    provider.billed = {}  # no billing data: an estimate up to when it was last seen, said so
    job = json.loads(CliRunner().invoke(cli, ["cost", "jobs/bert.yaml", "--format", "json"]).output)["jobs"][
        0
    ]
    (line,) = job["resources"]
    assert line["source"] == "estimate" and line["usd"] == pytest.approx(1.6428 * 2, rel=1e-2)
    assert "until last seen" in line["basis"]


def test_cost_within_budget_exits_0(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cost_read(monkeypatch, [], {})
    result = CliRunner().invoke(cli, ["cost"])
    assert result.exit_code == 0, result.output
    assert "TOTAL spent $0.00" in result.output
    assert "nothing in the account, and nothing seen before" in result.output


# --- force-unlock ---------------------------------------------------------------------------------


def _hold_stale_lock(state: Path, job: str) -> None:
    locks = state / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / f"{job}.lock").write_text("")
    note = {
        "job": job,
        "user": "ci",
        "host": "runner-7",
        "pid": 4242,
        "since": "2026-06-30T10:00:00Z",
        "command": "gpujob apply plan.json",
    }
    (locks / f"{job}.json").write_text(json.dumps(note))


def test_force_unlock_non_interactive_names_the_flag(repo: Path) -> None:
    _hold_stale_lock(repo / ".gpujob", "bert")
    result = CliRunner().invoke(cli, ["force-unlock", "bert"], env={"CI": "true"})
    assert result.exit_code == 1
    assert "ci@runner-7 (pid 4242) since 2026-06-30 10:00:00 UTC" in result.output
    assert "--yes" in result.output
    assert (repo / ".gpujob" / "locks" / "bert.json").exists()


def test_force_unlock_yes_removes(repo: Path) -> None:
    _hold_stale_lock(repo / ".gpujob", "bert")
    result = CliRunner().invoke(cli, ["force-unlock", "bert", "--yes"])
    assert result.exit_code == 0, result.output
    assert not (repo / ".gpujob" / "locks" / "bert.json").exists()
    result = CliRunner().invoke(cli, ["force-unlock", "bert"])
    assert result.exit_code == 0 and "not locked" in result.output


def test_force_unlock_refuses_a_held_lock_even_with_yes(repo: Path) -> None:
    from gpujob.lock import job_lock

    with job_lock(repo / ".gpujob", "bert"):
        for args in (["force-unlock", "bert"], ["force-unlock", "bert", "--yes"]):
            result = CliRunner().invoke(cli, args, input="y\n")
            assert result.exit_code == 1 and "still running on this host" in result.output, result.output
            assert "Removed" not in result.output
        assert (repo / ".gpujob" / "locks" / "bert.lock").exists()
        assert (repo / ".gpujob" / "locks" / "bert.json").exists()
