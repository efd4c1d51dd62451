"""The teardown gate under checkpoint.writers: all (gpujob.apply.teardown_look): node 0's checkpoint
dir is at risk whenever the teardown erases it, even empty, so every writer's files are pulled and the
newest complete step checked; rank0 writers and one machine are left as they were."""

from __future__ import annotations

from types import SimpleNamespace

from gpujob.apply.teardown_look import _every_writer

from .specs import gang_spec


def test_node_0s_empty_dir_is_at_risk_under_every_writer_only() -> None:
    empty = SimpleNamespace(files={}, unpullable={})
    listings = {"/workspace/ckpt": empty}
    assert (
        _every_writer(SimpleNamespace(spec=gang_spec(writers="all")), listings, lambda lst: True) == listings
    )
    assert _every_writer(SimpleNamespace(spec=gang_spec(writers="all")), listings, lambda lst: False) == {}
    assert _every_writer(SimpleNamespace(spec=gang_spec(writers="rank0")), listings, lambda lst: True) == {}
    assert (
        _every_writer(SimpleNamespace(spec=gang_spec(nodes=1, writers="all")), listings, lambda lst: True)
        == {}
    )
