"""Classification of the seeded account: owners, rates equal to the profile prices, idleness, traps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpujob.audit.classify import classify, owner_of
from gpujob.audit.model import AuditReport
from gpujob.live import LiveResource, LiveState
from gpujob.profile import HOURS_PER_MONTH, load_profile
from tests.audit.audit_seed import DAY, LOCAL_JOBS, NOW
from tests.owners import OTHER, PROJECT, machine, marker
from tests.owners import volume as owned_volume

RP = load_profile("runpod")
PS = load_profile("paperspace")


@pytest.fixture
def report(seeded_live: LiveState) -> AuditReport:
    return classify(seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile)


def item(report: AuditReport, name: str):
    (found,) = [i for i in report.items if i.name == name]
    return found


def test_owners(report: AuditReport) -> None:
    assert item(report, machine("bert")).owner == "this-repo"
    assert item(report, owned_volume("sweep", "data")).job == "sweep"
    assert item(report, machine("llama", OTHER)).owner == "other-gpujob"
    assert item(report, "my-notebook").owner == "foreign"
    # A static IP without a gpujob name belongs to the job of the machine it is assigned to.
    assert (item(report, "203.0.113.10").owner, item(report, "203.0.113.10").job) == ("this-repo", "render")
    assert item(report, "203.0.113.20").owner == "foreign"


def test_owner_is_the_name_parts_not_a_prefix() -> None:
    jobs = {"bert": PROJECT, "bert-large": PROJECT}
    big = LiveResource(platform="runpod", kind="pod", id="x", name=machine("bert-large"), status="running",
                       attributes=marker())  # fmt: skip
    assert owner_of(big, jobs, {}) == ("this-repo", "bert-large")
    # never bert's; this checkout's (its project) though no job file names bert-large any more (#41)
    assert owner_of(big, {"bert": PROJECT}, {}) == ("this-repo", "bert-large")
    theirs = big.model_copy(update={"name": machine("bert", OTHER), "attributes": marker(OTHER)})
    assert owner_of(theirs, jobs, {}) == ("other-gpujob", "bert")
    legacy = big.model_copy(update={"name": "gpujob-bert", "attributes": {}})
    assert owner_of(legacy, jobs, {}) == ("other-gpujob", None)
    forged = big.model_copy(update={"name": machine("bert"), "attributes": marker(OTHER)})
    assert owner_of(forged, jobs, {}) == ("other-gpujob", None)


def test_stopped_pod_bills_volume_disk_at_stopped_rate(report: AuditReport) -> None:
    sweep = item(report, machine("sweep"))
    vd = RP.tier("volume_disk")
    assert vd.price_gb_month_stopped == 2 * vd.price_gb_month_running  # the RP4 trap, from the profile
    assert sweep.usd_per_hour == pytest.approx(200 * vd.price_gb_month_stopped / HOURS_PER_MONTH, abs=1e-6)
    assert sweep.usd_per_month == pytest.approx(200 * vd.price_gb_month_stopped, abs=1e-4)
    # The API said $0/h (RunPod reports 0 for EXITED pods): the profile wins and says why.
    assert sweep.rate_source == "profile" and "storage still bills" in sweep.rate_note
    assert (sweep.gotcha, sweep.idle, sweep.over_threshold) == ("RP4", True, True)
    assert sweep.idle_seconds == 4 * DAY
    assert sweep.since_basis == "last status change"


def test_running_pod_gpu_and_disks_from_profile(report: AuditReport) -> None:
    bert = item(report, machine("bert"))
    gpu = RP.gpu("A100-80GB")
    assert gpu is not None
    expected = gpu.price_hour + 20 * RP.tier("container_disk").price_gb_month_running / HOURS_PER_MONTH
    assert bert.usd_per_hour == pytest.approx(expected, abs=1e-6)
    assert not bert.idle and bert.gotcha is None


def test_api_rate_replaces_the_gpu_meter(report: AuditReport) -> None:
    nb = item(report, "my-notebook")
    disks = (
        10 * RP.tier("container_disk").price_gb_month_running
        + 20 * RP.tier("volume_disk").price_gb_month_running
    )
    assert nb.rate_source == "api"
    assert nb.meters[0].usd_per_hour == 2.75 and "API pod.cost" in nb.meters[0].source
    assert nb.usd_per_hour == pytest.approx(2.75 + disks / HOURS_PER_MONTH, abs=1e-6)
    assert nb.usd_per_month == pytest.approx(2.75 * HOURS_PER_MONTH + disks, abs=1e-3)
    assert "profile lists $2.6900/h" in nb.rate_note  # spot list price differs from the billed rate


def test_network_volumes(report: AuditReport) -> None:
    std = RP.network_volume_tier("standard")
    hp = RP.network_volume_tier("high-performance")
    assert item(report, owned_volume("sweep", "data")).usd_per_month == pytest.approx(
        std.month_price(500), abs=1e-4
    )
    assert item(report, owned_volume("sweep", "fast")).usd_per_month == pytest.approx(
        hp.month_price(50), abs=1e-4
    )
    assert item(report, "sky-vol").usd_per_month == pytest.approx(std.month_price(1500), abs=1e-4)
    # Mounted by a running pod: billing, but not idle.
    ckpt = item(report, owned_volume("bert", "ckpt"))
    assert ckpt.billable and not ckpt.idle and "mounted by gpujob-bert" in ckpt.detail
    # Idle 2 h: reported as idle, under the 24 h threshold.
    fast = item(report, owned_volume("sweep", "fast"))
    # a parked network volume is the safe park, not a trap: idle, no gotcha, a fix that says what to do
    assert fast.idle and not fast.over_threshold and fast.gotcha is None and "delete the volume" in fast.fix


def test_paperspace_off_machine_bills_storage_and_ip_separately(report: AuditReport) -> None:
    render = item(report, machine("render"))
    bs = PS.tier("block_storage")
    assert render.usd_per_month == pytest.approx(bs.month_price(500, stopped=True), abs=1e-4)
    assert [m.what.split()[0] for m in render.meters] == ["block"]  # static IP billed on its own row
    assert render.gotcha == "PS1"
    ip = item(report, "203.0.113.10")
    addon = PS.addon("static_ip")
    assert ip.usd_per_hour == addon.price_hour
    assert ip.usd_per_month == addon.monthly_cap_usd == 3.0  # 0.0045 × 720 = 3.24, capped
    assert ip.gotcha == "PS1" and ip.idle  # bills until released (PS6 is about the address changing)


def test_block_storage_cap_and_dynamic_ip(report: AuditReport) -> None:
    ws = item(report, "workstation")
    gpu = PS.gpu("A100-80G")
    assert gpu is not None
    storage = next(m for m in ws.meters if m.what.startswith("block"))
    assert storage.usd_per_month == PS.tier("block_storage").monthly_cap_usd
    ip = PS.addon("dynamic_ip").price_hour or 0  # a dynamic IP bills while the machine runs
    assert ws.usd_per_hour == pytest.approx(gpu.price_hour + storage.usd_per_hour + ip, abs=1e-6)
    assert not ws.idle
    old = item(report, "gpujob-old")  # dynamic IP: released when off, so no IP meter
    assert [m.what.split()[0] for m in old.meters] == ["block"]


def test_snapshots(report: AuditReport) -> None:
    snap = PS.addon("snapshot")
    orphan = item(report, "nightly")
    assert orphan.usd_per_month == pytest.approx(50 * (snap.price_gb_month or 0), abs=1e-4)
    assert (orphan.idle, orphan.gotcha, orphan.detail) == (True, "PS9", "50 GB, machine gone")
    assert not item(report, "workstation-daily").idle  # its machine is running
    assert item(report, "gpujob-render-pre-upgrade").idle  # its machine is off


def test_free_leftovers_are_listed_not_billed(report: AuditReport) -> None:
    tpl = item(report, "sky-template-1")
    assert (tpl.billable, tpl.usd_per_hour, tpl.idle) == (False, 0.0, False)
    drive = item(report, "team-share")
    assert drive.rate_source == "none" and "unknown" in drive.rate_note


def test_totals_and_exit_code(report: AuditReport) -> None:
    for t in report.totals:
        mine = [i for i in report.items if i.platform == t.platform]
        assert t.usd_per_month == pytest.approx(sum(i.usd_per_month for i in mine), abs=1e-3)
        assert t.resources == len(mine)
    assert report.usd_per_month == pytest.approx(sum(i.usd_per_month for i in report.items), abs=1e-3)
    assert report.exit_code == 2
    flagged = {i.name for i in report.flagged}
    assert flagged == {
        machine("sweep"), owned_volume("sweep", "data"), "sky-vol", machine("render"), "203.0.113.10", "203.0.113.20",
        "gpujob-render-pre-upgrade", "nightly", "gpujob-old", machine("bert", OTHER),
    }  # fmt: skip


def test_clean_account_exits_zero(seeded_live: LiveState) -> None:
    running = [
        r for r in seeded_live.resources if r.status == "running" or r.kind in ("template", "registry_auth")
    ]
    live = LiveState(read_at=NOW, resources=running)
    report = classify(live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile)
    assert report.exit_code == 0 and not report.flagged


def test_threshold_moves_the_line(seeded_live: LiveState) -> None:
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=100 * DAY, profiles=load_profile
    )
    # stopped for an unknown time, but made 20 days ago: idle at most that, not over 100 days (#41)
    assert {i.label for i in report.flagged} == set()
    old = item(report, "gpujob-old")
    assert old.idle_seconds is None and old.idle_at_most_s == 20 * DAY and not old.over_threshold
    ageless = seeded_live.model_copy(update={"resources": [
        r.model_copy(update={"created_at": None}) if r.name == "gpujob-old" else r for r in seeded_live.resources
    ]})  # fmt: skip
    report = classify(
        ageless, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=100 * DAY, profiles=load_profile
    )
    assert {i.label for i in report.flagged} == {"gpujob-old"}  # nothing bounds it: it could be anything
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=3600, profiles=load_profile
    )
    assert owned_volume("sweep", "fast") in {i.name for i in report.flagged}


def test_platform_filter(seeded_live: LiveState) -> None:
    report = classify(
        seeded_live,
        local_jobs=LOCAL_JOBS,
        now=NOW,
        idle_threshold_s=DAY,
        profiles=load_profile,
        platforms=["paperspace"],
    )
    assert {i.platform for i in report.items} == {"paperspace"}
    assert [t.platform for t in report.totals] == ["paperspace"]


def test_a_pod_stopped_for_weeks_is_rp8_a_recent_one_rp4() -> None:
    """RunPod removes stopped pods after about 30 days (RP8): past STALE_POD_S the trap is losing the data,
    not the 2× disk (RP4)."""
    from datetime import timedelta

    from gpujob.audit.classify import STALE_POD_S

    def stopped(days: float) -> LiveResource:
        when = (NOW - timedelta(days=days)).isoformat()
        return LiveResource(
            platform="runpod", kind="pod", id=f"p{days:g}", name=machine("bert"), status="stopped",
            raw_status="EXITED", gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, cloud="secure", volume_gb=50,
            attributes={"last_status_change": when, **marker()},
        )  # fmt: skip

    weeks, days = STALE_POD_S / 86400 + 1, 2.0
    live = LiveState(read_at=NOW, resources=[stopped(weeks), stopped(days)])
    got = classify(live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile)
    by_id = {i.id: i for i in got.items}
    assert by_id[f"p{weeks:g}"].gotcha == "RP8" and by_id[f"p{weeks:g}"].over_threshold
    assert by_id[f"p{days:g}"].gotcha == "RP4"
    assert all(i.usd_per_month > 0 for i in got.items)  # the volume disk bills either way


def test_an_unassigned_ip_without_a_name_is_shown_by_its_address() -> None:
    """Paperspace IPs have no name (providers/paperspace/normalize.ip_to_live leaves it empty when no
    machine holds the IP): the audit must still print the address to release, labelled PS1."""
    ip = LiveResource(
        platform="paperspace", kind="public_ip", id="198.51.100.7", name="", status="available",
        raw_status="unassigned", public_ip="198.51.100.7", public_ip_kind="static", region="ny2",
        created_at=NOW,
    )  # fmt: skip
    live = LiveState(read_at=NOW, resources=[ip])
    (got,) = classify(live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile).items
    assert got.label == "198.51.100.7" and got.gotcha == "PS1" and got.idle and got.usd_per_month > 0
    from gpujob.audit.render import render_audit

    report = classify(live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile)
    assert "198.51.100.7" in render_audit(report, "text")


def test_a_job_changed_in_place_is_this_checkouts_and_says_what_ends_it() -> None:
    """#41: the file turned job llm into sweep abl; llm's stopped pod is this checkout's (its project),
    named by its job, with a fix that is true here; the sweep's volume is the sweep's; a volume made four
    minutes ago beside a pod whose stop time is unknown is not idle longer than a day."""
    made = NOW - timedelta(minutes=4)
    pod = LiveResource(platform="runpod", kind="pod", id="p-llm", name=machine("llm"), status="stopped",
                       container_disk_gb=5, volume_gb=20, network_volume_id="v-abl", attributes=marker(),
                       created_at=made)  # fmt: skip
    vol = LiveResource(platform="runpod", kind="network_volume", id="v-abl", name=owned_volume("abl", "data"),
                       status="available", volume_gb=20, created_at=made)  # fmt: skip
    live = LiveState(read_at=NOW, resources=[pod, vol])
    jobs = {"abl--q1": PROJECT, "abl--q2": PROJECT}  # what load_specs makes of the sweep's file
    report = classify(live, local_jobs=jobs, now=NOW, idle_threshold_s=DAY, profiles=load_profile)
    old, shared = item(report, machine("llm")), item(report, owned_volume("abl", "data"))
    assert (old.owner, old.job, shared.owner, shared.job) == ("this-repo", "llm", "this-repo", "abl")
    assert "no job file read here names job 'llm'" in old.fix and "checkout (project)" not in old.fix
    assert "gpujob plan shows what such a job left and gpujob apply ends it (gated)" in old.fix
    assert "it is sweep 'abl''s shared volume" in shared.fix, shared.fix
    assert shared.idle and shared.idle_seconds is None and shared.idle_at_most_s == 240
    assert report.flagged == []  # four minutes old: idle at most four minutes
