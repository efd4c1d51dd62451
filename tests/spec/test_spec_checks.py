from __future__ import annotations

import pytest

from gpujob.errors import SpecError
from gpujob.profile import load_profile
from gpujob.spec.checks import check_spec, platform_problems, resolve_region
from gpujob.spec.load import SpecProblem, load_spec


def problems(write, text: str) -> dict[str, SpecProblem]:
    with pytest.raises(SpecError) as info:
        load_spec(write(text))
    return {p.key_path: p for p in info.value.problems}


def test_clean_jobs_have_no_platform_problems(runpod_job, paperspace_job) -> None:
    from ruamel.yaml import YAML

    for text in (runpod_job, paperspace_job):
        assert platform_problems(YAML(typ="safe").load(text)) == []


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("  spot: true", "machine.spot"),
        ("  cloud: secure", "machine.cloud"),
        ("  image: ubuntu:22.04", "machine.image"),
        ("  container_disk_gb: 20", "machine.container_disk_gb"),
    ],
)
def test_runpod_only_options_on_paperspace(write, paperspace_job, line, key) -> None:
    text = paperspace_job.replace("  template: ml-in-a-box\n", f"  template: ml-in-a-box\n{line}\n")
    found = problems(write, text)
    assert list(found) == [key]
    assert found[key].message.endswith("is not available on paperspace")
    assert (found[key].line, found[key].col) == (8, 3)  # the key itself


def test_network_volume_on_paperspace(write, paperspace_job) -> None:
    found = problems(write, paperspace_job + "  network_volume: {name: ckpts, size_gb: 100}\n")
    assert found["storage.network_volume"].line == 11


@pytest.mark.parametrize("line", ["  template: ml-in-a-box", "  public_ip: static", "  auto_shutdown: 72h"])
def test_paperspace_only_options_on_runpod(write, runpod_job, line) -> None:
    key = "machine." + line.strip().split(":")[0]
    text = runpod_job.replace("  regions: [EU-RO-1]\n", f"  regions: [EU-RO-1]\n{line}\n")
    found = problems(write, text)
    assert (
        list(found) == [key]
        and "runpod" in found[key].message
        and "paperspace option" in (found[key].hint or "")
    )


def test_spot_false_on_paperspace_is_harmless(write, paperspace_job) -> None:
    text = paperspace_job.replace("  template: ml-in-a-box\n", "  template: ml-in-a-box\n  spot: false\n")
    assert load_spec(write(text)).spec.machine.spot is False


def test_unknown_gpu_did_you_mean(write, runpod_job) -> None:
    found = problems(write, runpod_job.replace("H100-80GB]", "h100-80gb, RTX4900, TPU]"))
    assert "machine.gpu[1]" not in found  # aliases are matched case-insensitively
    assert found["machine.gpu[2]"].hint == "did you mean 'RTX4090'?"
    assert (found["machine.gpu[2]"].line, found["machine.gpu[2]"].col) == (5, 31)
    assert (found["machine.gpu[3]"].hint or "").startswith("known: A100-80GB, ")


def test_gpu_accepts_platform_id(write, runpod_job) -> None:
    text = runpod_job.replace("[A100-80GB, H100-80GB]", "'NVIDIA A100 80GB PCIe'")
    assert load_spec(write(text)).spec.machine.gpu == ["NVIDIA A100 80GB PCIe"]


def test_regions_and_aliases(write, paperspace_job) -> None:
    profile = load_profile("paperspace")
    assert resolve_region(profile, "NY2") == "ny2" and resolve_region(profile, "ny9") is None
    assert load_spec(write(paperspace_job.replace("[ny2]", "[NY2]"))).spec.machine.regions == ["NY2"]
    found = problems(write, paperspace_job.replace("[ny2]", "[ny2, nyc2]"))
    assert found["machine.regions[1]"].hint == "did you mean 'ny2'?"


def test_gpu_not_offered_in_listed_regions(write, paperspace_job) -> None:
    found = problems(write, paperspace_job.replace("gpu: A4000", "gpu: A100-80GB").replace("[ny2]", "[ams1]"))
    assert "none of the listed GPUs" in found["machine.regions"].message
    assert "A100-80GB: ny2" in (found["machine.regions"].hint or "")


@pytest.mark.parametrize(
    ("value", "ok"), [("1h", True), ("1w", True), ("168h", True), ("30m", False), ("8d", False)]
)
def test_core_auto_shutdown_range(write, paperspace_job, value, ok) -> None:
    text = paperspace_job.replace("auto_shutdown: 72h", f"auto_shutdown: {value}")
    if ok:
        assert load_spec(write(text)).spec.machine.auto_shutdown is not None
    else:
        assert "between 1h and 1w" in problems(write, text)["machine.auto_shutdown"].message


@pytest.mark.parametrize(("size", "ok"), [(50, True), (2000, True), (300, False), (20, False), (4000, False)])
def test_paperspace_block_storage_sizes(write, paperspace_job, size, ok) -> None:
    text = paperspace_job.replace("volume_gb: 250", f"volume_gb: {size}")
    if ok:
        assert load_spec(write(text)).spec.storage.volume_gb == size
    else:
        assert "storage.volume_gb" in problems(write, text)


def test_fixed_size_hint_names_nearest(write, paperspace_job) -> None:
    found = problems(write, paperspace_job.replace("volume_gb: 250", "volume_gb: 300"))
    assert found["storage.volume_gb"].hint == "nearest size: 250"


def test_runpod_size_limits_come_from_the_profile() -> None:
    # The model's own bounds catch these first in a file; the profile check stands on its own too.
    data = {
        "platform": "runpod",
        "machine": {"gpu": "A40", "image": "x", "container_disk_gb": 5000},
        "storage": {"network_volume": {"name": "ck", "size_gb": 5}},
    }
    found = {p.key_path: p.message for p in platform_problems(data)}
    assert found == {
        "machine.container_disk_gb": "container disk must be between 1 and 1000 GB, got 5000",
        "storage.network_volume.size_gb": "network volume must be between 10 and 4096 GB, got 5",
    }


def test_paperspace_multi_gpu_counts(write, paperspace_job) -> None:
    ok = paperspace_job.replace("gpu: A4000", "gpu: A4000\n  gpu_count: 4")
    assert load_spec(write(ok)).spec.machine.gpu_count == 4
    found = problems(write, paperspace_job.replace("gpu: A4000", "gpu: A4000\n  gpu_count: 3"))
    assert found["machine.gpu_count"].hint == "available counts: A4000: 1, 2, 4"


def test_runpod_needs_image_paperspace_needs_template(write, runpod_job, paperspace_job) -> None:
    found = problems(
        write, runpod_job.replace("  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04\n", "")
    )
    assert (found["machine.image"].line, found["machine.image"].col) == (4, 1)  # points at machine:
    found = problems(write, paperspace_job.replace("  template: ml-in-a-box\n", ""))
    assert "template" in found["machine.template"].message


def test_platform_problems_still_reported_beside_model_errors(write, paperspace_job) -> None:
    text = paperspace_job.replace(
        "  template: ml-in-a-box\n", "  template: ml-in-a-box\n  spot: true\n  regoins: [x]\n"
    )
    found = problems(write, text)
    assert set(found) == {"machine.spot", "machine.regoins"}


def test_no_duplicate_complaint_for_one_key(write, runpod_job) -> None:
    found = problems(
        write, runpod_job.replace("gpu: [A100-80GB, H100-80GB]", "gpu: [A100-80GB]\n  gpu_count: 12")
    )
    assert list(found) == ["machine.gpu_count"]


def test_check_spec_on_a_jobspec(write, runpod_job) -> None:
    spec = load_spec(write(runpod_job)).spec
    assert check_spec(spec) == []
    moved = spec.model_copy(update={"platform": "paperspace"})
    keys = {p.key_path for p in check_spec(moved)}
    assert keys == {"machine.image", "machine.template", "machine.regions[0]"}
