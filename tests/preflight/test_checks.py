"""The preflight's parse and judgement, on outputs shaped like real hosts'."""

from __future__ import annotations

import pytest

from gpujob.preflight.checks import assess, model_token
from gpujob.preflight.probe import parse
from gpujob.sim.gpuhost import GpuHost


def probe_output(smi: str, rc: int = 0, kmsg: str | None = "", torch: str = "@@torch none") -> str:
    k = "@@kmsg_rc 1" if kmsg is None else f"{kmsg}\n@@kmsg_rc 0"
    return f"@@smi\n{smi}\n@@smi_rc {rc}\n@@kmsg\n{k}\n@@torch\n{torch}\n"


HEALTHY = "0, NVIDIA GeForce RTX 4090, Not Active, Not Active, Not Active, 0"


def test_a_healthy_host_passes_and_says_what_it_saw() -> None:
    v = assess(parse(probe_output(HEALTHY)), "NVIDIA GeForce RTX 4090", 1)
    assert v.ok and v.summary == "1× NVIDIA GeForce RTX 4090, no torch" and v.notes == []


def test_zero_gpus_is_rp1() -> None:
    v = assess(parse(probe_output("No devices were found", rc=6)), "NVIDIA GeForce RTX 4090", 1)
    assert [p.code for p in v.problems] == ["RP1"] and "No devices were found" in v.problems[0].message


def test_no_nvidia_smi_is_u31() -> None:
    v = assess(parse("@@smi\n@@smi_rc 127\n@@kmsg\n@@kmsg_rc 1\n@@torch\n@@torch none\n"), "NVIDIA A40", 1)
    assert [p.code for p in v.problems] == ["U31"]


def test_fewer_gpus_than_billed_and_another_model_are_named() -> None:
    v = assess(parse(probe_output(HEALTHY)), "NVIDIA A100 80GB PCIe", 2)
    assert {p.code for p in v.problems} == {"U31", "gpu-model"}
    assert any("shows 1 GPU(s); billed 2× NVIDIA A100" in p.message for p in v.problems)


def test_an_xid_in_the_kernel_log_is_u22_with_its_code() -> None:
    log = (
        "[ 8121.4] NVRM: Xid (PCI:0000:01:00): 48, pid=1912, name=python3, DBE (Double Bit Error) ECC Error."
    )
    v = assess(parse(probe_output(HEALTHY, kmsg=log)), "NVIDIA GeForce RTX 4090", 1)
    assert [p.code for p in v.problems] == ["U22"] and v.problems[0].message.startswith("Xid 48")


def test_an_unreadable_kernel_log_falls_back_to_the_drivers_ecc_count() -> None:
    smi = "0, NVIDIA A100-SXM4-80GB, Not Active, Not Active, Not Active, 3"
    v = assess(parse(probe_output(smi, kmsg=None)), "NVIDIA A100-SXM4-80GB", 1)
    assert [p.code for p in v.problems] == ["U22"] and "3 uncorrected ECC" in v.problems[0].message
    assert v.notes and "kernel log is not readable" in v.notes[0]


def test_a_hardware_slowdown_is_u23_but_idle_is_not() -> None:
    smi = "0, NVIDIA H100 80GB HBM3, Active, Active, Not Active, [N/A]"
    v = assess(parse(probe_output(smi)), "NVIDIA H100 80GB HBM3", 1)
    assert [p.code for p in v.problems] == ["U23"] and "hardware thermal slowdown" in v.problems[0].message


def test_torch_that_cannot_use_cuda_is_rp9_and_a_broken_import_too() -> None:
    no_cuda = assess(
        parse(probe_output(HEALTHY, torch="@@torch 2.4.0 12.4 False 0")), "NVIDIA GeForce RTX 4090", 1
    )
    assert [p.code for p in no_cuda.problems] == ["RP9"] and "is_available() is False" in no_cuda.problems[
        0
    ].message
    broken = assess(
        parse(probe_output(HEALTHY, torch="ImportError: libcudnn.so.9: cannot open")),
        "NVIDIA GeForce RTX 4090",
        1,
    )
    assert [p.code for p in broken.problems] == ["RP9"] and "libcudnn" in broken.problems[0].message
    fine = assess(
        parse(probe_output(HEALTHY, torch="@@torch 2.4.0 12.4 True 1")), "NVIDIA GeForce RTX 4090", 1
    )
    assert fine.ok and "torch 2.4.0" in fine.summary


@pytest.mark.parametrize(
    ("billed", "token"),
    [
        ("NVIDIA GeForce RTX 4090", "4090"),
        ("A4000x2", "A4000"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("L40S", "L40S"),
    ],
)
def test_the_model_token(billed: str, token: str) -> None:
    assert model_token(billed) == token


@pytest.mark.parametrize("fault", [None, "xid", "throttle"])
def test_the_simulators_answers_parse_to_the_fault_they_model(fault: str | None) -> None:
    host = GpuHost("NVIDIA A40", 1, fault)
    from gpujob.preflight.probe import FIELDS

    row = ", ".join(host.fields(0).get(f, "[N/A]") for f in FIELDS)
    xids = "\n".join(line for line in host.kernel_log().splitlines() if "Xid" in line)
    v = assess(parse(probe_output(row, kmsg=xids)), "NVIDIA A40", 1)
    assert [p.code for p in v.problems] == {None: [], "xid": ["U22"], "throttle": ["U23"]}[fault]


def test_the_faulty_host_mark_holds_until_the_machine_is_started_replaced_or_terminated() -> None:
    from datetime import UTC, datetime

    from gpujob.apply.journal import JournalEntry
    from gpujob.apply.reconcile import HOST_FAULTY, host_faulty

    def e(aid: str, phase: str = "done", rid: str = "p1", detail: str = "") -> JournalEntry:
        return JournalEntry(at=datetime(2026, 12, 1, tzinfo=UTC), run="r", phase=phase, action_id=aid,  # type: ignore[arg-type]
                            resource_id=rid, detail=detail)  # fmt: skip

    mark = e(f"job.pod.{HOST_FAULTY}", detail="Xid 79 in the kernel log (U22)")
    assert host_faulty([e("job.pod.start"), mark]) == ("p1", "Xid 79 in the kernel log (U22)")
    assert host_faulty([mark, e("job.pod.start", phase="intent")]) == ("p1", "Xid 79 in the kernel log (U22)")
    assert host_faulty([mark, e("job.pod.replace", rid="p2")]) is None
    assert host_faulty([mark, e("job.pod.terminate")]) is None


def test_a_driver_that_does_not_know_a_field_is_a_note_not_a_failure() -> None:
    smi = 'Field "ecc.errors.uncorrected.volatile.total" is not a valid field to query.'
    v = assess(parse(probe_output(smi, rc=2)), "NVIDIA GeForce RTX 4090", 1)
    assert v.ok and "not checked" in v.notes[0]


def test_gpu_memory_already_in_use_is_u11_with_the_numbers() -> None:
    """U11: a zombie holds 18 GiB that nvidia-smi's process list does not show: refused, with the numbers."""
    busy = HEALTHY + ", 18432 MiB, 24564 MiB"
    v = assess(parse(probe_output(busy)), "NVIDIA GeForce RTX 4090", 1)
    assert [p.code for p in v.problems] == ["U11"]
    assert "already has 18432 MiB of 24564 MiB in use before the launch" in v.problems[0].message
    idle = HEALTHY + ", 1 MiB, 24564 MiB"
    assert assess(parse(probe_output(idle)), "NVIDIA GeForce RTX 4090", 1).ok
    small = HEALTHY + ", 1100 MiB, 81920 MiB"  # a little over the driver's, under 5% of a large card
    assert assess(parse(probe_output(small)), "NVIDIA A100 80GB PCIe".replace("A100", "4090"), 1).ok


def test_the_simulated_busy_host_reports_the_memory_a_zombie_holds() -> None:
    host = GpuHost(model="NVIDIA GeForce RTX 4090", count=1, fault="busy")
    assert host.fields(0)["memory.used"] == "18432 MiB"
    assert GpuHost(model="x", count=1).fields(0)["memory.used"] == "1 MiB"
