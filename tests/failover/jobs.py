"""The issue's job: gpujob init's RunPod spot starter with a Paperspace fallback."""

from __future__ import annotations

from pathlib import Path

from gpujob.starter import __file__ as _starter

STARTER = Path(_starter).with_name("job-runpod.yaml")

FALLBACK = """fallback:
  - platform: paperspace
    machine: {gpu: [A4000, A5000], regions: [ny2], template: ubuntu-22.04, public_ip: dynamic}
    storage: {volume_gb: 50, mount: /workspace}
failover: __MODE__
"""


def job_text(
    name: str = "bert", *, mode: str = "auto", pull: str = "continuous", fallback: str = FALLBACK
) -> str:
    text = STARTER.read_text().replace("__SCHEMA__", "").replace("__NAME__", name)
    text = text.replace(
        "  verify: python3 verify_ckpt.py {file}\n",
        f"  verify: python3 verify_ckpt.py {{file}}\n  pull: {pull}\n",
    )
    return text + fallback.replace("__MODE__", mode)
