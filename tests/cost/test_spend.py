"""Money spent so far (gpujob.cost.spend), figure by figure: each expected amount is worked out by hand
from the profile's list prices, so a changed rate, a lost stretch of time or a wrong cap shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpujob.cost.live import Pricing
from gpujob.cost.model import MeterLine
from gpujob.cost.seen import Seen
from gpujob.cost.spend import (
    _timeline,
    charge,
    granularity,
    job_spend,
    more_until,
    projected_charge,
    resource_spend,
)
from gpujob.live import LiveResource, Metering, Span
from gpujob.profile import load_profile

RP = load_profile("runpod")
PS = load_profile("paperspace")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
DAY = timedelta(days=1)

# RunPod: A100-80GB secure on-demand $1.64/h; container disk $0.10/GB-month while running (72 GB:
# $0.01/h), volume disk $0.10 running / $0.20 stopped per GB-month (720 GB: $0.10/h, $0.20/h).
GPU_RP, CD_RP, VD_RUN, VD_STOP = 1.64, 0.01, 0.10, 0.20
# Paperspace: A6000 $1.89/h billed by the started hour; block storage $0.06/GB-month by the started hour
# (50 GB: $3/month), capped at $120/month.
GPU_PS, BS_50 = 1.89, 3.0 / 720


def pod(**kw: object) -> LiveResource:
    base: dict[str, object] = dict(
        platform="runpod", kind="pod", id="p", name="p", status="running", gpu_id="NVIDIA A100 80GB PCIe",
        container_disk_gb=72, volume_gb=720, created_at=T0,
    )  # fmt: skip
    return LiveResource(**(base | kw))  # type: ignore[arg-type]


def machine(**kw: object) -> LiveResource:
    base: dict[str, object] = dict(
        platform="paperspace", kind="machine", id="m", name="m", status="running", gpu_id="A6000",
        volume_gb=50, created_at=T0,
    )  # fmt: skip
    return LiveResource(**(base | kw))  # type: ignore[arg-type]


def spend(r: LiveResource, *, now: datetime, metering: Metering | None = None, live: bool = True,
          seen: Seen | None = None, profile=RP, **kw: object):  # type: ignore[no-untyped-def]  # fmt: skip
    return resource_spend(
        Pricing(profile=profile), r, live=live, seen=seen, metering=metering or Metering(), now=now, **kw
    )  # type: ignore[arg-type]


def seen_of(r: LiveResource, **kw: object) -> Seen:
    return Seen(resource=r, **({"first_seen": T0, "last_seen": T0} | kw))  # type: ignore[arg-type]


# --- the meters' billing granularity and charge ------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "key", "tier", "want"),
    [
        (RP, "gpu:GPU 1× A100-80GB", None, "second"),
        (PS, "gpu:GPU 1× A6000", None, "hour"),
        (RP, "network_volume:100", None, "hour"),
        (RP, "network_volume:vol:100", "high-performance", "hour"),
        (RP, "network_volume:100", "no-such-tier", "hour"),
        (PS, "network_volume:100", None, "hour"),  # Paperspace has none: the careful guess
        (PS, "static_ip", None, "hour"),
        (PS, "snapshot:s1", None, "hour"),
        (RP, "static_ip", None, "hour"),  # RunPod lists no static IP add-on
        (RP, "container_disk:20", None, "second"),
        (RP, "volume_disk:100", None, "second"),
        (PS, "block_storage:50", None, "hour"),
        (RP, "endpoint_worker", None, "second"),  # no such tier: per second
    ],
)
def test_each_meter_bills_at_its_platform_granularity(profile, key, tier, want) -> None:  # type: ignore[no-untyped-def]
    assert granularity(profile, key, tier) == want


def line(usd_per_hour: float, cap: float | None = None) -> MeterLine:
    return MeterLine(
        what="m", usd_per_hour=usd_per_hour, usd_per_month=usd_per_hour * 720, monthly_cap_usd=cap, source="t"
    )


def test_charge_bills_seconds_or_every_started_hour() -> None:
    ninety = [(T0, T0 + 1.5 * H)]
    assert charge(line(2.0), ninety, "second", T0) == pytest.approx(3.0)
    assert charge(line(2.0), ninety, "hour", T0) == pytest.approx(4.0)
    # an empty period bills nothing and does not end the others
    periods = [(T0, T0), (T0 + H, T0 + 2 * H), (T0 + 3 * H, T0 + 2.5 * H), (T0 + 4 * H, T0 + 4.5 * H)]
    assert charge(line(2.0), periods, "hour", T0) == pytest.approx(4.0)
    assert charge(line(2.0), periods, "second", T0) == pytest.approx(3.0)
    assert charge(line(2.0), [], "hour", T0) == 0.0


def test_charge_caps_each_thirty_day_cycle_from_creation() -> None:
    m = line(1.0, cap=100.0)
    assert charge(m, [(T0, T0 + 50 * H)], "second", T0) == pytest.approx(50.0)  # under the cap
    assert charge(m, [(T0, T0 + 29 * DAY)], "second", T0) == pytest.approx(100.0)  # one cycle
    assert charge(m, [(T0, T0 + 31 * DAY)], "second", T0) == pytest.approx(200.0)  # a second one began
    assert charge(m, [(T0 + 29 * DAY, T0 + 31 * DAY)], "second", T0) == pytest.approx(48.0)
    # the cycles count from the resource's creation, not from the period's start
    assert charge(m, [(T0 + 10 * DAY, T0 + 31 * DAY)], "second", T0 + 10 * DAY) == pytest.approx(100.0)


def test_projected_charge_bills_each_meter_at_its_granularity() -> None:
    lines = {"gpu:GPU 1× A6000": line(GPU_PS), "block_storage:50": line(BS_50, cap=120.0)}
    assert projected_charge(lines, 90 * 60, PS) == pytest.approx(2 * GPU_PS + 2 * BS_50)
    assert projected_charge({"gpu:x": line(GPU_RP)}, 90 * 60, RP) == pytest.approx(1.5 * GPU_RP)
    assert projected_charge(lines, 0, PS) == 0.0
    assert projected_charge(lines, -5, PS) == 0.0


# --- timelines -------------------------------------------------------------------------------------


def test_the_timeline_cuts_running_spans_out_of_stopped_time() -> None:
    spans = [
        Span(start=T0 + 6 * H, end=T0 + 7 * H),
        Span(start=T0 + 2 * H, end=T0 + 4 * H),
        Span(start=T0 - 1 * H, end=T0 + 1 * H),  # began before the window: clipped
        Span(start=T0 + 9 * H, end=T0 + 10 * H),  # after it: dropped
        Span(start=T0 + 5 * H, end=T0 + 5 * H),  # empty: dropped
    ]
    assert _timeline(T0, T0 + 8 * H, spans) == [
        (T0, T0 + 1 * H, "running"),
        (T0 + 1 * H, T0 + 2 * H, "stopped"),
        (T0 + 2 * H, T0 + 4 * H, "running"),
        (T0 + 4 * H, T0 + 6 * H, "stopped"),
        (T0 + 6 * H, T0 + 7 * H, "running"),
        (T0 + 7 * H, T0 + 8 * H, "stopped"),
    ]
    # a span still open runs to the end; no span at all is stopped throughout
    assert _timeline(T0, T0 + 3 * H, [Span(start=T0 + H)]) == [
        (T0, T0 + H, "stopped"),
        (T0 + H, T0 + 3 * H, "running"),
    ]
    assert _timeline(T0, T0 + 3 * H, []) == [(T0, T0 + 3 * H, "stopped")]


# --- one resource ----------------------------------------------------------------------------------


def test_a_runpod_pod_bills_its_volume_disk_at_the_rate_of_each_stretch() -> None:
    """10 h running then 1 h stopped, and the other way round: the volume disk bills 10 h at the
    running rate and 1 h at the stopped (2×) one either way, never all 11 h at the last rate."""
    want = 10 * GPU_RP + 10 * CD_RP + 10 * VD_RUN + 1 * VD_STOP
    ran_first = Metering(running={"p": [Span(start=T0, end=T0 + 10 * H)]})
    got = spend(pod(status="stopped"), now=T0 + 11 * H, metering=ran_first, usd_per_hour=0.2)
    assert got.usd == pytest.approx(want, abs=1e-6)
    assert (got.source, got.state, got.usd_per_hour) == ("estimate", "stopped", 0.2)
    assert got.basis == "estimate from metered time (platform events, 2026-01-01 00:00 UTC to now)"
    stopped_first = Metering(running={"p": [Span(start=T0 + H)]})
    assert spend(pod(), now=T0 + 11 * H, metering=stopped_first).usd == pytest.approx(want, abs=1e-6)


def test_a_paperspace_machine_bills_every_started_hour_of_each_run() -> None:
    """Two runs of 30 min each: two started hours of GPU. The disk bills the same on and off, so its
    three hours are one period (3 started hours, not one per stretch)."""
    runs = Metering(
        running={"m": [Span(start=T0, end=T0 + 0.5 * H), Span(start=T0 + 2 * H, end=T0 + 2.5 * H)]}
    )
    got = spend(machine(status="stopped"), now=T0 + 3 * H, metering=runs, profile=PS)
    assert got.usd == pytest.approx(2 * GPU_PS + 3 * BS_50, abs=1e-6)


def test_paperspace_storage_is_capped_per_cycle_over_a_long_life() -> None:
    # 4000 GB at $0.06: $240/month accrued, capped at $120; 40 days span two cycles
    big = machine(status="stopped", volume_gb=4000)
    got = spend(big, now=T0 + 40 * DAY, metering=Metering(running={"m": []}), profile=PS)
    assert got.usd == pytest.approx(240.0)


def test_a_network_volume_bills_its_started_hours() -> None:
    vol = LiveResource(platform="runpod", kind="network_volume", id="v", name="ckpts", status="available",
                       volume_gb=720, created_at=T0)  # fmt: skip
    small = spend(vol.model_copy(update={"volume_gb": 100}), now=T0 + 1.5 * H)
    assert small.usd == 0.019444  # 2 h of $7/720 per hour, to the micro-dollar
    got = spend(vol, now=T0 + 1.5 * H)
    assert got.usd == pytest.approx(2 * 0.07)  # 720 GB at $0.07/GB-month: $0.07/h, 2 started hours
    assert got.basis == "estimate from metered time (known times, 2026-01-01 00:00 UTC to now)"


def test_the_platform_bill_wins_over_any_estimate() -> None:
    billed = Metering(billed={"p": 12.3456789}, billed_since=datetime(2025, 12, 2, tzinfo=UTC))
    got = spend(pod(), now=T0 + 5 * H, metering=billed)
    assert (got.usd, got.source, got.basis) == (12.345679, "billing", "runpod billing since 2025-12-02")
    window = spend(pod(), now=T0 + 5 * H, metering=Metering(billed={"p": 1.0}))
    assert window.basis == "runpod billing (last 30 days)"
    assert spend(pod(id="other"), now=T0 + 5 * H, metering=billed).source == "estimate"


def test_without_a_creation_time_it_counts_from_first_seen_or_not_at_all() -> None:
    r = pod(created_at=None, started_at=None, status="stopped", volume_gb=720, container_disk_gb=72)
    unknown = spend(r, now=T0 + 5 * H)
    assert (unknown.usd, unknown.source) == (0.0, "estimate")
    assert unknown.basis == "nothing known of when it was created: not counted"
    seen = seen_of(r, first_seen=T0 + 3 * H, last_seen=T0 + 4 * H)
    counted = spend(r, now=T0 + 5 * H, seen=seen, metering=Metering(running={"p": []}))
    assert counted.usd == pytest.approx(2 * VD_STOP)
    assert (
        "creation time unknown: counted from when gpujob first saw it (2026-01-01 03:00 UTC)" in counted.basis
    )


def test_a_gone_resource_is_counted_until_it_went() -> None:
    r = pod(status="stopped")
    history = Metering(running={"p": []})
    deleted = seen_of(r, last_seen=T0 + 2 * H, gone_at=T0 + 3 * H)
    got = spend(r, live=False, seen=deleted, now=T0 + 9 * H, metering=history, usd_per_hour=5.0)
    assert got.usd == pytest.approx(3 * VD_STOP)
    assert (got.state, got.usd_per_hour) == ("gone", 0.0)
    assert (
        got.basis
        == "estimate from metered time (platform events, 2026-01-01 00:00 UTC to 2026-01-01 03:00 UTC)"
    )
    vanished = seen_of(r, last_seen=T0 + 2 * H, gone_by=T0 + 4 * H)
    got = spend(r, live=False, seen=vanished, now=T0 + 9 * H, metering=history)
    assert got.usd == pytest.approx(2 * VD_STOP)
    assert ("counted until last seen 2026-01-01 02:00 UTC, gone by 2026-01-01 04:00 UTC "
            "(deleted outside gpujob)") in got.basis  # fmt: skip
    quiet = spend(r, live=False, seen=seen_of(r, last_seen=T0 + 2 * H), now=T0 + 9 * H, metering=history)
    assert "counted until last seen 2026-01-01 02:00 UTC (deleted outside gpujob)" in quiet.basis
    # the platform's own end time wins over what gpujob saw, live or not
    ended = Metering(running={"p": []}, ended={"p": T0 + H})
    assert spend(r, live=False, seen=deleted, now=T0 + 9 * H, metering=ended).usd == pytest.approx(VD_STOP)
    assert spend(r, now=T0 + 9 * H, metering=ended).usd == pytest.approx(VD_STOP)


def test_without_run_history_the_last_known_run_is_billed() -> None:
    restarted = pod(started_at=T0 + 2 * H)
    got = spend(restarted, now=T0 + 5 * H)
    # 2 h stopped (before the start gpujob saw), then 3 h running
    assert got.usd == pytest.approx(3 * (GPU_RP + CD_RP + VD_RUN) + 2 * VD_STOP, abs=1e-6)
    assert got.basis == (
        "estimate from metered time (known times, 2026-01-01 00:00 UTC to now); "
        "GPU time before the last start not seen (counted as stopped)"
    )
    fresh = spend(pod(started_at=None), now=T0 + 2 * H)
    assert fresh.usd == pytest.approx(2 * (GPU_RP + CD_RP + VD_RUN), abs=1e-6)
    assert "not seen" not in fresh.basis
    same = spend(pod(started_at=T0), now=T0 + 2 * H)
    assert same.usd == fresh.usd and "not seen" not in same.basis
    stopped = spend(pod(status="stopped"), now=T0 + 2 * H)
    assert stopped.usd == pytest.approx(2 * VD_STOP)
    assert stopped.basis.endswith("to now); GPU time not seen (no run history)")
    pending = spend(pod(status="pending", created_at=None, started_at=T0), now=T0 + H, seen=seen_of(pod()))
    assert pending.usd == pytest.approx(GPU_RP + CD_RP + VD_RUN, abs=1e-6)


def test_the_name_falls_back_to_the_address_then_the_id() -> None:
    ip = LiveResource(platform="paperspace", kind="public_ip", id="ip1", name="", public_ip="203.0.113.9",
                      status="available", created_at=T0)  # fmt: skip
    assert spend(ip, now=T0 + H, profile=PS).name == "203.0.113.9"
    bare = ip.model_copy(update={"public_ip": None})
    assert spend(bare, now=T0 + H, profile=PS).name == "ip1"


# --- what a job adds, and the whole job ------------------------------------------------------------


def test_more_until_is_what_the_next_stretch_adds() -> None:
    p = Pricing(profile=RP)
    billed = Metering(billed={"p": 100.0})  # a bill cannot be extended: the estimate is used
    assert more_until(p, [pod()], {}, billed, T0 + H, T0 + 3 * H) == pytest.approx(
        2 * (GPU_RP + CD_RP + VD_RUN), abs=1e-6
    )
    assert more_until(p, [pod()], {}, billed, T0 + H, T0 + H) == 0.0
    assert more_until(p, [pod()], {}, billed, T0 + H, T0) == 0.0


def test_more_until_does_not_charge_a_started_hour_twice() -> None:
    p = Pricing(profile=PS)
    m = machine()
    assert more_until(p, [m], {}, Metering(), T0 + 0.5 * H, T0 + H) == 0.0
    assert more_until(p, [m], {}, Metering(), T0 + 0.5 * H, T0 + 1.5 * H) == pytest.approx(GPU_PS + BS_50)


def test_more_until_counts_a_listed_ip_once() -> None:
    p = Pricing(profile=PS)
    m = machine(status="stopped", public_ip_kind="static")
    ip = LiveResource(platform="paperspace", kind="public_ip", id="ip1", name="ip", machine_id="m",
                      status="available", created_at=T0)  # fmt: skip
    history = Metering(running={"m": []})
    ip_hour = 0.0045
    both = more_until(p, [m, ip], {}, history, T0 + 0.5 * H, T0 + 1.5 * H)
    assert both == pytest.approx(BS_50 + ip_hour, abs=1e-6)
    assert more_until(p, [m], {}, history, T0 + 0.5 * H, T0 + 1.5 * H) == pytest.approx(
        BS_50 + ip_hour, abs=1e-6
    )


def test_job_spend_lists_live_resources_then_the_gone_ones_in_the_order_seen() -> None:
    p = Pricing(profile=PS)
    m = machine(status="stopped", public_ip_kind="static")
    ip = LiveResource(platform="paperspace", kind="public_ip", id="ip1", name="ip", machine_id="m",
                      status="available", created_at=T0)  # fmt: skip
    old = machine(id="m0", name="old", status="stopped", created_at=T0 - 10 * H)
    older = machine(id="m00", name="older", status="stopped", created_at=T0 - 20 * H)
    seen = {
        "m0": seen_of(old, first_seen=T0 - 9 * H, last_seen=T0 - 8 * H, gone_at=T0 - 8 * H),
        "m00": seen_of(older, first_seen=T0 - 19 * H, last_seen=T0 - 18 * H, gone_at=T0 - 18 * H),
        "m": seen_of(m),
    }
    history = Metering(running={"m": [], "m0": [], "m00": []})
    now = T0 + 2 * H
    rows = job_spend(p, [m, ip], seen, history, now, {"m": 0.5, "m0": 9.0})
    assert [(r.id, r.state, r.usd_per_hour) for r in rows] == [
        ("m", "stopped", 0.5), ("ip1", "available", 0.0), ("m00", "gone", 0.0), ("m0", "gone", 0.0),
    ]  # fmt: skip
    # the machine's static IP is billed once, on the listed IP object
    assert rows[0].usd == pytest.approx(2 * BS_50, abs=1e-6)
    assert rows[1].usd == pytest.approx(2 * 0.0045, abs=1e-6)
    assert rows[2].usd == pytest.approx(2 * BS_50, abs=1e-6)
    assert rows[3].usd == pytest.approx(2 * BS_50, abs=1e-6)
    alone = job_spend(p, [m], {}, history, now, {})
    assert alone[0].usd == pytest.approx(2 * BS_50 + 2 * 0.0045, abs=1e-6)


def test_a_gone_machines_listed_ip_is_not_billed_twice() -> None:
    p = Pricing(profile=PS)
    m = machine(status="stopped", public_ip_kind="static")
    ip = LiveResource(platform="paperspace", kind="public_ip", id="ip1", name="ip", machine_id="m",
                      status="available", created_at=T0)  # fmt: skip
    seen = {"m": seen_of(m, last_seen=T0 + 2 * H, gone_at=T0 + 2 * H)}
    rows = job_spend(p, [ip], seen, Metering(running={"m": []}), T0 + 2 * H, {})
    assert [r.id for r in rows] == ["ip1", "m"]
    assert rows[1].usd == pytest.approx(2 * BS_50, abs=1e-6)
