"""Meter figures at their edges (gpujob.cost.rates, .live, .spend): a sub-second projection still bills a
started hour, a free add-on prints no line, what is being terminated bills nothing, the audit's monthly
figure keeps four places, a spot GPU without a spot price keeps its GPU count, and resource_spend's
defaults (no burn rate, the machine's own IP), which stock and which quote count by default, a per-GB add-on
without a size, and what a changed meter's summary still lists."""

from __future__ import annotations

import pytest

from gpujob.cost.live import Pricing, gpu_rate, resource_meters
from gpujob.cost.model import MeterLine
from gpujob.cost.rates import Footprint, GpuRate, billing_summary, meters, quote_available
from gpujob.cost.rates import gpu_rate as gpu_rate_of
from gpujob.cost.spend import projected_charge
from gpujob.live import Metering
from tests.cost.test_live import res, vol
from tests.cost.test_rates import quote
from tests.cost.test_spend import BS_50, PS, RP, T0, H, line, machine, spend


def line_named(what: str, month: float) -> MeterLine:
    return MeterLine(what=what, usd_per_hour=month / 720, usd_per_month=month, source="t")


def test_half_a_second_of_hourly_compute_bills_a_started_hour() -> None:
    assert projected_charge({"gpu:GPU 1× A6000": line(1.89)}, 0.5, PS) == pytest.approx(1.89)
    assert projected_charge({"gpu:x": line(1.64)}, 0.5, RP) == pytest.approx(1.64 * 0.5 / 3600)


def test_a_free_dynamic_ip_prints_no_line() -> None:
    free = PS.model_copy(
        update={
            "addons": [
                a.model_copy(update={"price_hour": 0.0}) if a.id == "dynamic_ip" else a for a in PS.addons
            ]
        }
    )
    fp = Footprint(machine="running", gpu=GpuRate("GPU 1× A6000", 1.89, "p"), volume_gb=50, dynamic_ip=True)
    assert "dynamic_ip" not in meters(fp, free)
    assert "dynamic_ip" in meters(fp, PS)


def test_a_terminating_volume_bills_nothing() -> None:
    assert resource_meters(Pricing(profile=RP), vol("ckpts", 100, status="terminating")) == []
    assert resource_meters(Pricing(profile=RP), vol("ckpts", 100)) != []


def test_the_audits_monthly_figure_keeps_four_places() -> None:
    pod = res(gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, cost_per_hour=1.234567)
    got = resource_meters(Pricing(profile=RP), pod)
    assert got is not None
    assert (got[0].usd_per_hour, got[0].usd_per_month) == (1.234567, 888.8882)  # 888.88824 to 4 places


def test_a_spot_gpu_without_a_spot_price_keeps_its_count_on_the_on_demand_price() -> None:
    two = gpu_rate(Pricing(profile=RP), res(gpu_id="NVIDIA H100 PCIe", gpu_count=2, spot=True))
    h100 = RP.gpu("H100-PCIE")
    assert two is not None and h100 is not None and h100.price_hour is not None
    assert two.usd_per_hour == pytest.approx(2 * h100.price_hour)
    assert two.label.startswith("GPU 2× H100-PCIE")


def test_resource_spend_defaults_to_no_burn_and_the_machines_own_ip() -> None:
    assert spend(machine(), now=T0 + H, profile=PS).usd_per_hour == 0.0
    m = machine(status="stopped", public_ip_kind="static")
    got = spend(m, now=T0 + 2 * H, profile=PS, metering=Metering(running={"m": []}))
    assert got.usd == pytest.approx(
        2 * BS_50 + 2 * 0.0045, abs=1e-6
    )  # no IP object listed: the machine bills it


def test_quote_available_reads_the_one_gpus_stock_by_default() -> None:
    eight_out = quote(available=False, gpu_count=8)
    one_in = quote(available=True, gpu_count=1)
    assert quote_available(RP, [eight_out, one_in], "A100-80GB", False) is True
    assert quote_available(RP, [eight_out, one_in], "A100-80GB", False, count=8) is False


def test_a_per_gb_add_on_without_a_size_bills_nothing() -> None:
    snap = PS.addon("snapshot")
    assert (snap.hourly_price(), snap.month_price(), snap.accrued(10)) == (0.0, 0.0, 0.0)
    assert snap.month_price(100) == pytest.approx(29.0)


def test_a_live_quote_for_one_gpu_wins_over_one_for_eight() -> None:
    eight, one = quote(price_hour=1.4, gpu_count=8), quote(price_hour=1.5, gpu_count=1)
    assert gpu_rate_of(RP, [eight, one], "A100-80GB").usd_per_hour == 1.5  # type: ignore[union-attr]


def test_a_changed_meter_still_lists_what_keeps_billing() -> None:
    disk, ip = line_named("disk", 2.0), line_named("static public IP", 3.0)
    assert billing_summary([], [], [disk, ip], changed={"d"}, after={"d": disk}) == (
        "disk now bills $2.00/mo; still billing: static public IP $3.00/mo"
    )
