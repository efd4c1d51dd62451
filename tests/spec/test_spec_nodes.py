"""machine.nodes: the platform checks (gpujob.spec.nodes), each at file:line:key."""

from __future__ import annotations

import pytest

from gpujob.errors import SpecError
from gpujob.spec.fastcheck import certainly_valid
from gpujob.spec.load import SpecProblem, load_spec

CLUSTER = """\
version: 1
name: bert
platform: runpod
machine:
  gpu: H100-80GB
  nodes: 2
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
storage:
  volume_gb: 100
checkpoint:
  dir: /workspace/ckpt
  interval: 15m
run:
  command: python train.py
"""


def problems(write, text: str) -> dict[str, SpecProblem]:
    with pytest.raises(SpecError) as info:
        load_spec(write(text))
    return {p.key_path: p for p in info.value.problems}


def test_a_two_node_cluster_is_valid_on_both_paths(write) -> None:
    path = write(CLUSTER)
    assert load_spec(path).spec.machine.nodes == 2
    assert certainly_valid([path])


def test_one_node_is_the_default(write, runpod_job) -> None:
    assert load_spec(write(runpod_job)).spec.machine.nodes == 1


def test_a_gpu_that_cannot_cluster_is_named_at_its_line(write) -> None:
    found = problems(write, CLUSTER.replace("gpu: H100-80GB", "gpu: [H100-80GB, A6000]"))
    assert list(found) == ["machine.gpu[1]"]
    assert "A6000 cannot cluster on runpod" in found["machine.gpu[1]"].message
    assert found["machine.gpu[1]"].line == 5


def test_nodes_out_of_the_platform_bounds(write, paperspace_job) -> None:
    text = paperspace_job.replace("  gpu: A4000\n", "  gpu: A4000\n  nodes: 17\n")
    found = problems(write, text)
    assert "paperspace takes 2 to 16 nodes" in found["machine.nodes"].message
    assert found["machine.nodes"].line == 6


def test_nodes_with_a_sweep_is_refused(write) -> None:
    text = CLUSTER + "sweep:\n  machines: 2\n  matrix: {lr: [1, 2]}\n"
    found = problems(write, text)
    assert "cannot be a sweep" in found["machine.nodes"].message
    assert found["machine.nodes"].line == 6


def test_a_checkpoint_dir_on_the_container_disk_is_refused(write) -> None:
    found = problems(write, CLUSTER.replace("dir: /workspace/ckpt", "dir: /root/ckpt"))
    assert list(found) == ["checkpoint.dir"]
    assert "container disk" in found["checkpoint.dir"].message and found["checkpoint.dir"].line == 11


def test_a_cluster_cannot_be_stopped(write) -> None:
    found = problems(write, CLUSTER + "state: stopped\n")
    assert "cannot be stopped" in found["state"].message


def test_a_cluster_is_on_demand_in_the_secure_cloud(write) -> None:
    text = CLUSTER.replace("  nodes: 2\n", "  nodes: 2\n  spot: true\n  cloud: community\n")
    found = problems(write, text)
    assert "no spot pricing" in found["machine.spot"].message
    assert "secure cloud only" in found["machine.cloud"].message


def test_a_cluster_cannot_stop_when_its_run_ends(write) -> None:
    found = problems(write, CLUSTER + "teardown: {on_finish: stop}\n")
    assert "cannot be stopped" in found["teardown.on_finish"].message


def test_a_cluster_cannot_wait_in_a_create_queue(write) -> None:
    found = problems(write, CLUSTER.replace("  nodes: 2\n", "  nodes: 2\n  when_unavailable: wait\n"))
    assert "never a cluster" in found["machine.when_unavailable"].message
