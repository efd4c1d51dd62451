#!/usr/bin/env bash
# `make demo`: the quickstart end to end against the local simulator, no account needed.
# start the simulator -> validate -> plan -> apply -> status -> preempt the spot pod -> plan + apply
# again (the run resumes from its last checkpoint) -> pull + verify -> destroy through the approval
# gate -> the metered bill -> stop the simulator (always, via the trap).
# It never stops half way with a traceback: a step that is not built yet says so and the demo goes on.
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpujob-demo.XXXXXX")"
SIMDIR="$(mktemp -d "${TMPDIR:-/tmp}/gpujob-demo-sim.XXXXXX")"
export GPUJOB_SIM_DIR="$SIMDIR"
unset GPUJOB_STATE_DIR
JOB=quickstart
BOLD=$'\033[1m'; DIM=$'\033[2m'; RESET=$'\033[0m'
[ -t 1 ] || { BOLD=""; DIM=""; RESET=""; }

say()  { printf '\n%s==> %s%s\n' "$BOLD" "$*" "$RESET"; }
note() { printf '%s    %s%s\n' "$DIM" "$*" "$RESET"; }

# Run a gpujob command, showing it first. Exit code 3 is the CLI's "not built yet" placeholder.
gj() {
  printf '%s$ gpujob %s%s\n' "$DIM" "$*" "$RESET"
  gpujob "$@"
  local rc=$?
  [ "$rc" -eq 3 ] && note "(gpujob $1 is not built yet in this version; skipping)"
  return "$rc"
}

cleanup() {
  say "Stopping the simulator (nothing is left running)"
  gpujob sim down || true
  rm -rf "$WORK" "$SIMDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Poll (never a blind sleep) until "$@" succeeds, for at most $1 seconds.
wait_for() {
  local secs="$1"; shift
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 1
  done
}
has_checkpoint() { gpujob ssh -- ls /workspace/ckpt 2>/dev/null | grep -q step_; }
resumed()        { gpujob logs -n 400 2>/dev/null | grep -q "resumed from step"; }

cp "$HERE/job.yaml" "$HERE/train.py" "$HERE/verify_ckpt.py" "$WORK/"
cd "$WORK" || exit 1

say "Starting the local simulator of RunPod and Paperspace"
if ! gj sim up; then
  note "the simulator could not start here (it needs root for its pods' namespaces); nothing more to show"
  exit 0
fi
eval "$(gpujob sim env)"

say "1. Validate the job file"
gj validate job.yaml

say "2. Plan: what apply will do, what it costs, what it would destroy"
gj plan job.yaml

say "3. Apply: network volume, spot pod, code sync, run launched under tmux"
if ! gj apply job.yaml --auto-approve; then
  note "apply did not complete; the rest of the demo needs a running job"
  exit 0
fi

say "4. Progress: wait for the first checkpoint on the network volume"
wait_for 60 has_checkpoint || note "no checkpoint seen within 60s"
gj status job.yaml
gj logs -n 5 job.yaml

say "5. The platform preempts the spot pod (SIGTERM, then SIGKILL after the grace)"
gj sim inject preempt
gj status job.yaml

say "6. Plan and apply again: a pod comes back with the same network volume and the run resumes"
gj plan job.yaml
gj apply job.yaml --auto-approve
if wait_for 60 resumed; then
  gpujob logs -n 400 job.yaml | grep -m1 "resumed from step"
else
  note "did not see 'resumed from step' in the log within 60s"
fi
gj status job.yaml

say "7. Pull the checkpoints, check their SHA-256 against the pod and load each with verify_ckpt.py"
gj pull job.yaml

say "8. Destroy, first without approving: the teardown gate refuses"
gj destroy job.yaml --auto-approve && note "(unexpected: destroy ran without approval)"

say "9. Destroy with the exact action ids approved (after a fresh pull and verify)"
gj destroy job.yaml --auto-approve --approve $JOB.pod.terminate --approve $JOB.network_volume.delete-volume

say "10. The metered bill: every rate is back to zero"
gj sim bill
exit 0
