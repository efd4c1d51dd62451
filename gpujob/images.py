"""What an image reference or a template name says about its software stack, read from the text alone.

A container image's tag usually names the CUDA it was built for (`runpod/pytorch:2.4.0-py3.11-cuda12.4.1-
devel-ubuntu22.04`, `nvidia/cuda:12.1.0-runtime-ubuntu22.04`, `pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime`,
`...-cu121`); a digest alone (`name@sha256:...`) says nothing, but `name:tag@sha256:...` pins by digest
and keeps the tag readable. A Paperspace template's name usually carries its Ubuntu release. Nothing
here guesses: a version that cannot be read is None.
"""

from __future__ import annotations

import re

_CUDA = re.compile(r"(?:^|[^a-z0-9])cuda[-_]?(\d{1,2})\.(\d{1,2})(?:\.\d+)?(?![\d.])", re.IGNORECASE)
_CU = re.compile(r"(?:^|[^a-z0-9])cu(\d{2})(\d)(?![\d.])", re.IGNORECASE)  # cu121 = 12.1, cu118 = 11.8
_UBUNTU = re.compile(r"(?:ubuntu)?[-_ ]?(\d{2}\.04)(?![\d.])", re.IGNORECASE)


def image_tag(image: str) -> str | None:
    """The tag of `repo[:tag][@digest]`, or None (a registry port is not a tag)."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def cuda_from_tag(image: str | None) -> str | None:
    """The CUDA version (major.minor) the image's tag names, or None when the tag does not say."""
    tag = image_tag(image or "")
    if not tag:
        return None
    repo = (image or "").split("@", 1)[0].rsplit(":", 1)[0].rsplit("/", 1)[-1]
    if repo == "cuda":  # nvidia/cuda:12.1.0-runtime-ubuntu22.04: the tag starts with the version
        lead = re.match(r"(\d{1,2})\.(\d{1,2})", tag)
        if lead:
            return f"{int(lead.group(1))}.{int(lead.group(2))}"
    m = _CUDA.search(tag)
    if m:
        return f"{int(m.group(1))}.{int(m.group(2))}"
    m = _CU.search(tag)
    if m:
        return f"{int(m.group(1))}.{int(m.group(2))}"
    return None


def cuda_key(version: str) -> tuple[int, int]:
    """Numeric order: 12.10 is above 12.2 (as RunPod compares minCudaVersion)."""
    major, _, minor = version.partition(".")
    return int(major), int(minor or 0)


def ubuntu_release(name: str | None) -> str | None:
    """'20.04' from 'ML-in-a-Box Ubuntu 20.04' or 'ubuntu-20.04'; None when the name does not say."""
    if not name or "ubuntu" not in name.lower():
        return None
    m = _UBUNTU.search(name.lower().split("ubuntu", 1)[1])
    return m.group(1) if m else None
