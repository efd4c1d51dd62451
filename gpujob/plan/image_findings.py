"""Image and template fit (RP9, PS11): does the software the job brings suit the GPU and host it asks for?

Read from the job file alone (the image's tag, the template's name) against the profile's sourced facts:

- RP9: RunPod hosts differ in driver; each runs images up to its own CUDA. gpujob sends the image's CUDA as
  the create filter (gpu.minCudaVersion / allowedCudaVersions), and an image newer than every CUDA a host
  can report cannot be placed at all.
- cuda-arch: an image built for a CUDA older than a GPU's architecture has no kernels for it ("no kernel
  image is available"), e.g. CUDA 11.7 on an H100 or an RTX 4090 (profile gpus[].min_cuda).
- PS11: a Paperspace template's Ubuntu release must suit the GPU (22.04 for H100, recommended for A100;
  profile template_fit).
- RP10: gpujob reaches a pod only over SSH. RunPod's own images start sshd from the injected PUBLIC_KEY;
  a custom image must do so itself, from CMD (an ENTRYPOINT keeps RunPod's start command from running).
  Nothing in the job file can show that it does, so it is said once, as info.
"""

from __future__ import annotations

from gpujob.images import cuda_from_tag, cuda_key, ubuntu_release
from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding


def image_findings(ctx: JobContext) -> list[Finding]:
    if ctx.spec.state == "absent":
        return []
    return _host_cuda(ctx) + _arch_cuda(ctx) + _template_fit(ctx) + _custom_image(ctx)


OFFICIAL = ("runpod/",)  # RunPod's own images (runpod/pytorch, runpod/base, ...) start sshd themselves


def _custom_image(ctx: JobContext) -> list[Finding]:
    image = ctx.spec.machine.image
    if ctx.spec.platform != "runpod" or not image or image.startswith(OFFICIAL) or ctx.spec.machine.template:
        return []
    return [
        ctx.finding(
            "RP10",
            "info",
            f"image {image} is not one of RunPod's own: it must start sshd itself, or gpujob cannot reach the pod",
            detail="RunPod injects PUBLIC_KEY (startSsh); its images start sshd from it. A custom image has to "
            "do the same, launched from CMD: an ENTRYPOINT keeps RunPod's start command from running.",
            fix="start sshd (with PUBLIC_KEY in authorized_keys) from the image's CMD, or base it on runpod/base",
            key="machine.image",
        )
    ]


def _host_cuda(ctx: JobContext) -> list[Finding]:
    hosts = ctx.profile.host_cuda
    cuda = cuda_from_tag(ctx.spec.machine.image)
    if hosts is None or not hosts.versions or cuda is None:
        return []
    newest = max(hosts.versions, key=cuda_key)
    if cuda_key(cuda) <= cuda_key(newest):
        return []
    return [
        ctx.finding(
            "RP9",
            "error",
            f"image {ctx.spec.machine.image} is built for CUDA {cuda}; no {ctx.spec.platform} host reports a "
            f"CUDA above {newest}",
            detail="A host runs images up to the CUDA its driver supports. With the CUDA filter gpujob sends, "
            "the create fails for lack of capacity; without one it would fail in the container (CUDA failure "
            f"804 / 'please update your driver'). Facts: {hosts.source} ({hosts.as_of}).",
            fix=f"use an image built for CUDA {newest} or older",
            key="machine.image",
        )
    ]


def _arch_cuda(ctx: JobContext) -> list[Finding]:
    cuda = cuda_from_tag(ctx.spec.machine.image)
    if cuda is None:
        return []
    out: list[Finding] = []
    for alias in ctx.spec.machine.gpu:
        offer = ctx.profile.gpu(alias)
        if offer is None or offer.min_cuda is None or cuda_key(cuda) >= cuda_key(offer.min_cuda):
            continue
        out.append(
            ctx.finding(
                "cuda-arch",
                "warning",
                f"image {ctx.spec.machine.image} is built for CUDA {cuda}, older than the {offer.min_cuda} "
                f"{offer.alias} needs",
                detail=f"CUDA before {offer.min_cuda} has no kernels for this GPU's architecture: PyTorch stops "
                f"with 'no kernel image is available for execution on the device'. Facts: {offer.source} "
                f"({offer.as_of}).",
                fix=f"use an image built for CUDA {offer.min_cuda} or newer, or drop {offer.alias} from machine.gpu",
                key="machine.gpu",
            )
        )
    return out


def _template_name(ctx: JobContext) -> str | None:
    """The template's name: as resolved at plan time (an id stands for its template's name), else the
    name the live machine was created from, else as written in the job file."""
    if ctx.template is not None:
        return str(ctx.template.name)
    m = ctx.machine
    name = m.attributes.get("template_name") if m is not None else None
    return str(name) if isinstance(name, str) and name else ctx.spec.machine.template


def _template_fit(ctx: JobContext) -> list[Finding]:
    release = ubuntu_release(_template_name(ctx))
    if release is None or not ctx.profile.template_fit:
        return []
    out: list[Finding] = []
    for rule in ctx.profile.template_fit:
        gpus = [g for g in ctx.spec.machine.gpu if _alias(ctx, g) in rule.gpus]
        if not gpus or release == rule.ubuntu:
            continue
        out.append(
            ctx.finding(
                "PS11",
                rule.severity,
                f"template {_shown(ctx)} is Ubuntu {release}; {', '.join(gpus)} "
                f"{'needs' if rule.severity == 'error' else 'should have'} Ubuntu {rule.ubuntu}",
                detail=f"{rule.note} The template's driver and CUDA come with the machine and cannot be "
                f"upgraded by a tenant. Facts: {rule.source} ({rule.as_of}).",
                fix=f"pick an Ubuntu {rule.ubuntu} template (template is fixed at creation: set it before the "
                "machine is created)",
                key="machine.template",
            )
        )
    return out


def _shown(ctx: JobContext) -> str:
    """The template as the job file writes it, and what it resolved to when that says more."""
    ref = ctx.spec.machine.template
    name = _template_name(ctx)
    return f"{ref} ({name})" if name and name != ref else str(ref)


def _alias(ctx: JobContext, gpu: str) -> str:
    offer = ctx.profile.gpu(gpu)
    return offer.alias if offer is not None else gpu
