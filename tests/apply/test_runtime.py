from __future__ import annotations

import pytest

from gpujob.apply.runtime import LARGE_TRANSFER, collect_secrets, transfer_progress
from gpujob.errors import GpujobError
from tests.apply.fakes import make_spec


def test_large_transfers_are_reported_in_quarters_small_ones_not_at_all():
    notes: list[str] = []
    report = transfer_progress("sync", notes.append)
    for done in range(0, 1001, 50):
        report(done, 1000)
    assert notes == []
    total = LARGE_TRANSFER * 2
    for i in range(101):
        report(total * i // 100, total)
    assert [n.rsplit("(", 1)[1] for n in notes] == ["25%)", "50%)", "75%)", "100%)"]


def test_secrets_come_from_the_environment_and_missing_ones_are_named_not_valued():
    spec = make_spec(run={"command": "x", "secrets": ["HF_TOKEN", "WANDB_API_KEY"]})
    with pytest.raises(GpujobError) as err:
        collect_secrets(spec, {"HF_TOKEN": "hf_value_123"})
    assert "WANDB_API_KEY" in str(err.value) and "hf_value_123" not in err.value.render()
    assert collect_secrets(spec, {"HF_TOKEN": "a", "WANDB_API_KEY": "b", "OTHER": "c"}) == {
        "HF_TOKEN": "a",
        "WANDB_API_KEY": "b",
    }
