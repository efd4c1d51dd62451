"""Image and template fit (RP9, cuda-arch, PS11), from the job file against the profiles' sourced facts:
the image's CUDA read from its tag, the template's Ubuntu release read from its name."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpujob.images import cuda_from_tag, ubuntu_release
from gpujob.plan.model import Finding
from gpujob.plan.planner import build_plan
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live

Write = Callable[..., object]
DIGEST = "@sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("image", "cuda"),
    [
        ("runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04", "12.4"),
        ("runpod/pytorch:2.8.0-py3.11-cuda12.8.1-cudnn-devel-ubuntu22.04" + DIGEST, "12.8"),  # tag + digest
        ("pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", "12.1"),
        ("nvidia/cuda:12.1.0-runtime-ubuntu22.04", "12.1"),
        ("ghcr.io/acme/train:v3-cu118", "11.8"),
        ("registry.local:5000/acme/train:latest", None),
        ("runpod/pytorch" + DIGEST, None),  # a digest alone says nothing about CUDA
        (None, None),
    ],
)
def test_cuda_is_read_from_the_tag_only(image: str | None, cuda: str | None) -> None:
    assert cuda_from_tag(image) == cuda


@pytest.mark.parametrize(
    ("name", "release"),
    [
        ("ML-in-a-Box Ubuntu 20.04", "20.04"),
        ("ubuntu-22.04", "22.04"),
        ("ml-in-a-box", None),
        ("t0nspur5", None),
    ],
)
def test_ubuntu_release_from_a_template_name(name: str, release: str | None) -> None:
    assert ubuntu_release(name) == release


def findings(write_job: Write, text: str, code: str) -> list[Finding]:
    plan = build_plan([write_job(text)], live(), now=NOW, env={})  # type: ignore[list-item]
    return [f for f in plan.jobs[0].findings if f.code == code]


def runpod(image: str, gpu: str = "A100-80GB") -> str:
    return RUNPOD_JOB.replace("gpu: A100-80GB", f"gpu: {gpu}").replace(
        "image: runpod/pytorch" + DIGEST, f"image: {image}"
    )


def test_an_image_newer_than_any_runpod_host_cuda_is_an_error(write_job: Write) -> None:
    (f,) = findings(write_job, runpod("acme/train:1.0-cuda13.1.0" + DIGEST), "RP9")
    assert f.severity == "error" and "CUDA 13.1" in f.summary and "above 13.0" in f.summary
    assert f.source is not None and f.source.key == "machine.image"
    assert "PodCreateInput.allowedCudaVersions" in f.detail  # the fact's source is named
    assert not findings(write_job, runpod("acme/train:1.0-cuda12.8.1" + DIGEST), "RP9")


def test_an_image_too_old_for_the_gpu_architecture_is_a_warning_per_candidate(write_job: Write) -> None:
    image = "runpod/pytorch:1.13.0-py3.10-cuda11.7.1-devel-ubuntu22.04" + DIGEST
    found = findings(write_job, runpod(image, gpu="[H100-80GB, A100-80GB, RTX4090]"), "cuda-arch")
    assert [f.summary.split()[-2] for f in found] == ["H100-80GB", "RTX4090"]  # A100 (Ampere) runs 11.7
    assert all(f.severity == "warning" and "no kernel image" in f.detail for f in found)
    assert not findings(
        write_job, runpod(image.replace("cuda11.7.1", "cuda11.8.0"), gpu="H100-80GB"), "cuda-arch"
    )


PS_JOB = """
version: 1
name: job
platform: paperspace
machine:
  gpu: {gpu}
  regions: [ny2]
  template: {template}
storage:
  volume_gb: 100
"""


@pytest.mark.parametrize(
    ("gpu", "template", "severity"),
    [
        ("H100-80GB", "ML-in-a-Box Ubuntu 20.04", "error"),
        ("[A100-80GB, A4000]", "ubuntu-20.04", "warning"),
        ("H100-80GB", "ML-in-a-Box Ubuntu 22.04", None),
        ("A4000", "ubuntu-20.04", None),
        ("H100-80GB", "t0nspur5", None),  # an id names no release: nothing is guessed
    ],
)
def test_a_paperspace_template_that_does_not_suit_the_gpu(
    write_job: Write, gpu: str, template: str, severity: str | None
) -> None:
    found = findings(write_job, PS_JOB.format(gpu=gpu, template=template), "PS11")
    assert [f.severity for f in found] == ([severity] if severity else [])
    if found:
        assert "Ubuntu 22.04" in found[0].summary and found[0].source is not None
        assert found[0].source.key == "machine.template" and "ml-in-a-box README" in found[0].detail


def test_a_custom_image_must_start_sshd_itself(write_job: Write) -> None:
    (f,) = findings(write_job, runpod("ghcr.io/acme/train:1.0-cuda12.4.1" + DIGEST), "RP10")
    assert f.severity == "info" and "start sshd itself" in f.summary and "ENTRYPOINT" in f.detail
    assert not findings(write_job, runpod("runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel" + DIGEST), "RP10")
