"""Judge a HostReport against what the machine is billed as. Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpujob.preflight.probe import Gpu, HostReport, xid_codes

SLOWDOWNS = {
    "hw_slowdown": "hardware slowdown",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "sw_thermal_slowdown": "thermal slowdown",
}


@dataclass(frozen=True)
class Problem:
    code: str  # the gotcha id: RP1, U31, U22, U23, U11, RP9, gpu-model
    message: str


@dataclass(frozen=True)
class Verdict:
    problems: list[Problem]
    summary: str  # one line of what was seen, for the apply's notes
    notes: list[str]  # what could not be checked, and why

    @property
    def ok(self) -> bool:
        return not self.problems


def model_token(gpu_id: str) -> str | None:
    """The part of a GPU name that tells models apart: "4090" of NVIDIA GeForce RTX 4090, "A4000" of a
    Paperspace A4000x2, "H100" of NVIDIA H100 80GB HBM3. None when the name has no such part."""
    words = re.split(r"[\s_-]+", gpu_id.upper())
    for w in words:
        w = re.sub(r"X\d+$", "", w)  # Paperspace's multi-GPU suffix
        if re.search(r"\d{2,}", w) and not re.fullmatch(r"\d+GB?", w):
            return w
    return None


BUSY_MIB = 1024  # more than a driver and a display hold: someone's CUDA context (U11)


def memory_in_use(g: Gpu) -> str | None:
    """U11: memory already in use before gpujob launched anything, with the numbers (a zombie or
    another tenant's process holds it, often one nvidia-smi's process list does not show)."""
    used, total = g.memory_mib("used"), g.memory_mib("total")
    if used is None or used <= BUSY_MIB or (total and used * 20 <= total):
        return None
    of = f" of {total} MiB" if total else ""
    return (
        f"GPU {g.index} ({g.name}) already has {used} MiB{of} in use before the launch: a process holds "
        "it, often one nvidia-smi's process list cannot see (a zombie of a killed run, U11); the run "
        "would fail with CUDA out of memory"
    )


def assess(report: HostReport, billed_model: str | None, billed_count: int) -> Verdict:
    problems: list[Problem] = []
    notes: list[str] = []
    billed = f"{billed_count}× {billed_model or 'GPU'}"
    if report.smi_rc == 127:
        problems.append(
            Problem("U31", f"nvidia-smi is not in the container: no GPU driver reaches it (billed {billed})")
        )
    elif "not a valid field" in report.smi_text:  # an older driver: the health fields cannot be read
        notes.append(
            f"nvidia-smi could not read the health fields ({report.smi_text.splitlines()[0]}): not checked"
        )
    elif report.smi_rc != 0 or not report.gpus:
        said = report.smi_text.splitlines()[0] if report.smi_text else f"exit {report.smi_rc}"
        problems.append(Problem("RP1", f"nvidia-smi finds no GPU ({said}); billed {billed}"))
    else:
        if len(report.gpus) != billed_count:
            problems.append(Problem("U31", f"nvidia-smi shows {len(report.gpus)} GPU(s); billed {billed}"))
        want = model_token(billed_model) if billed_model else None
        wrong = [g for g in report.gpus if want and want not in g.name.upper().replace(" ", "")]
        if wrong:
            problems.append(Problem("gpu-model", f"nvidia-smi shows {wrong[0].name}; billed {billed}"))
        for g in report.gpus:
            active = [label for key, label in SLOWDOWNS.items() if g.active(key)]
            if active:
                problems.append(
                    Problem("U23", f"GPU {g.index} ({g.name}) is throttled: {' and '.join(active)} active")
                )
            busy = memory_in_use(g)
            if busy:
                problems.append(Problem("U11", busy))
            if g.uncorrected_ecc():
                problems.append(
                    Problem("U22", f"GPU {g.index} reports {g.uncorrected_ecc()} uncorrected ECC error(s)")
                )
    for code, said in xid_codes(report.xid_lines)[:3]:
        problems.append(Problem("U22", f"Xid {code} in the kernel log" + (f": {said}" if said else "")))
    if not report.kernel_log:
        notes.append(
            "the kernel log is not readable in this container: Xid checked by the driver's ECC count only"
        )
    if report.torch.startswith("error:"):
        problems.append(
            Problem("RP9", f"the image's Python cannot import torch ({report.torch[7:].strip()})")
        )
    elif report.torch != "none":
        parts = report.torch.split()
        version, cuda = parts[0], parts[1] if len(parts) > 1 else "?"
        usable = len(parts) > 2 and parts[2] == "True"
        if report.gpus and not usable:
            problems.append(
                Problem(
                    "RP9",
                    f"torch {version} (CUDA {cuda}) cannot use the GPU: torch.cuda.is_available() "
                    "is False (the host's driver may be older than the image's CUDA)",
                )
            )
    seen = f"{len(report.gpus)}× {report.gpus[0].name}" if report.gpus else "no GPU"
    torch = "no torch" if report.torch == "none" else f"torch {report.torch.split()[0]}"
    return Verdict(problems, f"{seen}, {torch}", notes)
