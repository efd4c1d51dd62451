"""Run by RunPod's own Python SDK (runpod 1.12, in its own virtualenv) against the simulator, from
tests/sim/test_runpod_graphql.py. It uses only the SDK's public calls, which write inline GraphQL
literals, and prints one JSON object with what it saw. Never imported by gpujob or its tests."""

from __future__ import annotations

import json
import sys
import time

import runpod  # the SDK under test
from runpod import error


def wait_running(pod_id: str) -> dict:
    for _ in range(400):
        pod = runpod.get_pod(pod_id)
        if pod and pod.get("desiredStatus") == "RUNNING" and pod.get("runtime"):
            return pod
        time.sleep(0.05)
    raise SystemExit(f"pod {pod_id} never ran")


def main() -> None:
    runpod.api_key = sys.argv[1]
    gpu, spot_pod, public_key = sys.argv[2], sys.argv[3], sys.argv[4]
    out: dict = {}
    pod = runpod.create_pod(
        "sdk-pod",
        "ubuntu:22.04",
        gpu,
        cloud_type="SECURE",
        env={"PUBLIC_KEY": public_key, "HELLO": "world"},
        allowed_cuda_versions=["12.8"],
        ports="22/tcp",
    )
    out["created_keys"] = sorted(pod)
    out["created_env"] = pod["env"]
    running = wait_running(pod["id"])
    out["get_keys"] = sorted(running)
    out["machine"] = running["machine"]
    runpod.stop_pod(pod["id"])
    resumed = runpod.resume_pod(pod["id"], 1)
    out["resumed_status"] = resumed["desiredStatus"]
    wait_running(pod["id"])
    runpod.terminate_pod(pod["id"])
    out["terminated"] = runpod.get_pod(pod["id"])
    try:
        runpod.resume_pod(spot_pod, 1)
        out["spot_resume"] = "accepted"
    except error.QueryError as exc:
        out["spot_resume"] = str(exc)
    try:
        runpod.create_pod(
            "sdk-community", "ubuntu:22.04", gpu, cloud_type="COMMUNITY", network_volume_id=sys.argv[5]
        )
        out["community_volume"] = "accepted"
    except error.QueryError as exc:
        out["community_volume"] = str(exc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
