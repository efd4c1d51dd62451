"""apply's choosers read the plan's one running rate (gpujob.plan.ceiling): `spot: prefer`'s on-demand
fallback and the next GPU candidate are held to what budget.max_hourly_usd leaves the GPU, so what
apply creates stays within the cap the plan was judged on; the plan says it beforehand."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply.capacity import launch_request, within_ceiling
from gpujob.apply.context import GPU_CEILING
from gpujob.cost.rates import gpu_rate
from gpujob.errors import ProviderCapacityError
from gpujob.gpus import Candidate
from gpujob.plan.ceiling import ceilings, gpu_part, plan_ceilings
from gpujob.plan.planner import build_plan
from gpujob.profile import load_profile
from gpujob.providers.runpod.spot import check_on_demand_price
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, volume

Write = Callable[..., Any]


def _prefer(cap: float | None = None) -> str:
    text = RUNPOD_JOB.replace("  gpu: A100-80GB\n", "  gpu: A100-80GB\n  spot: prefer\n")
    return text + (f"budget:\n  max_hourly_usd: {cap}\n" if cap is not None else "")


def _plan(write_job: Write, text: str) -> tuple[Any, Any]:
    ls = write_job(text)
    return ls, build_plan([ls], live(volume()), now=NOW, env={}).jobs[0]


def test_prefer_under_a_cap_its_on_demand_would_break_is_said_and_held_to_the_ceiling(
    write_job: Write,
) -> None:
    profile = load_profile("runpod")
    spot = gpu_rate(profile, [], "A100-80GB", cloud="secure", spot=True)
    od = gpu_rate(profile, [], "A100-80GB", cloud="secure", spot=False)
    assert spot is not None and od is not None and od.usd_per_hour > spot.usd_per_hour + 0.2
    _, free = _plan(write_job, _prefer())
    rate = free.running_usd_per_hour
    assert gpu_part(free) == pytest.approx(spot.usd_per_hour)
    cap = round(rate + 0.05, 2)  # spot fits; on-demand would not
    ls, jp = _plan(write_job, _prefer(cap))
    assert not [f for f in jp.findings if f.severity == "error"], jp.findings
    (note,) = [f for f in jp.findings if f.code == "budget" and "takes spot or nothing" in f.summary]
    assert note.severity == "info" and note.source is not None and note.source.key == "machine.spot"
    top = plan_ceilings([ls], [jp])["job"]
    assert top == pytest.approx(spot.usd_per_hour + (cap - rate), abs=1e-6)
    assert (
        f"would leave more billing than budget.max_hourly_usd ${cap:.2f}/h allows its GPU (${top:.2f}/h)"
        in note.summary
    )
    # apply: the create's request carries the ceiling, and RunPod's on-demand fallback is refused by it
    ctx = SimpleNamespace(spec=ls.spec, machine_name="gpujob-job--p", project="p", project_label="u@h:/s",
                          volume=None, extra={GPU_CEILING: top}, notes=[])  # fmt: skip
    req = launch_request(ctx, "ssh-ed25519 AAAA")  # type: ignore[arg-type]
    assert req.max_price_per_hour == pytest.approx(top) and req.spot == "prefer"
    with pytest.raises(ProviderCapacityError, match="over max_price_per_hour"):
        check_on_demand_price(req.model_copy(update={"gpu_id": "NVIDIA A100 80GB PCIe", "cloud": "secure"}))
    # a cap the on-demand pod fits: no finding, and no ceiling under what it costs
    roomy = round(rate + od.usd_per_hour, 2)
    ls2, jp2 = _plan(write_job, _prefer(roomy))
    assert not [f for f in jp2.findings if "takes spot or nothing" in f.summary]
    assert plan_ceilings([ls2], [jp2])["job"] >= od.usd_per_hour


def _cand(price: float, gpu: str = "A") -> Candidate:
    return Candidate(alias=gpu, platform_id=gpu, gpu_count=1, region=None, cloud="secure", spot=False,
                     price_hour=price, price_source="test", price_as_of=NOW)  # fmt: skip


def test_the_next_candidate_is_tried_only_within_the_ceiling() -> None:
    notes: list[str] = []
    ctx = SimpleNamespace(
        spec=SimpleNamespace(platform="runpod"), extra={GPU_CEILING: 0.80}, note=notes.append
    )
    kept = within_ceiling(ctx, [_cand(0.69, "A"), _cand(0.79, "B"), _cand(1.19, "C")])  # type: ignore[arg-type]
    assert [c.alias for c in kept] == ["A", "B"] and "not tried (over the $0.80/h" in notes[0], notes
    with pytest.raises(ProviderCapacityError, match=r"every GPU candidate is over the \$0.80/h"):
        within_ceiling(ctx, [_cand(1.19)])  # type: ignore[arg-type]
    free = SimpleNamespace(spec=SimpleNamespace(platform="runpod"), extra={}, note=notes.append)
    assert len(within_ceiling(free, [_cand(9.0)])) == 1  # type: ignore[arg-type]  # no cap, no ceiling


def test_a_sweeps_queues_share_the_slack() -> None:
    from gpujob.cost.model import Billing, MeterLine
    from gpujob.plan.model import Action, ActionKind, JobPlan

    def queue(n: int) -> JobPlan:
        gpu = MeterLine(
            what="GPU 1× RTX4090 (secure, spot)", usd_per_hour=0.34, usd_per_month=248.2, source="t"
        )
        disk = MeterLine(what="volume disk 20 GB", usd_per_hour=0.01, usd_per_month=7.3, source="t")
        create = Action(id=f"abl--q{n}.pod.create", job=f"abl--q{n}", platform="runpod", kind=ActionKind.CREATE,
                        resource_kind="pod", resource_name="p", billing=Billing(starts=[gpu, disk]))  # fmt: skip
        return JobPlan(job=f"abl--q{n}", platform="runpod", spec_file="job.yaml", desired_state="running",
                       actions=[create], running_usd_per_hour=0.35)  # fmt: skip

    got = ceilings([queue(1), queue(2)], 1.0)  # 0.70 running, 0.30 slack: 0.15 each
    assert got == {"abl--q1": pytest.approx(0.49), "abl--q2": pytest.approx(0.49)}
    assert ceilings([queue(1)], None) == {}
