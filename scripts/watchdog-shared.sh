#!/usr/bin/env bash
# On the GPU machine: do the megakernel regions' watchdogs hold while other processes share the
# GPU? Each round starts PROCESSES `megacut run`s at once (MODEL, every stage one megakernel,
# batches 1, 8 and 32 in turn) and waits for all; every one must exit 0. A watchdog that gives
# up while its region still progresses, time-sliced against the others, is a runtime defect.
#
#   scripts/watchdog-shared.sh MEGACUT [PROCESSES=6] [ROUNDS=12] [MODEL=llama-3.2-1b] [RUNS=20]
#
# Prints each round's outcome and every failed process's exit status and error, then a summary;
# exits 1 if any process failed, keeping every log in a folder it names. The regions are compiled
# once before the rounds (the kernel cache), so that the rounds share the GPU, not the CPU's
# compiler.
set -uo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '7p' "$0" >&2
  exit 2
fi
megacut=$1
processes=${2:-6}
rounds=${3:-12}
model=${4:-llama-3.2-1b}
runs=${5:-20}
batches=(1 8 32)
work=$(mktemp -d)
pids=()
failed=0
# On an interrupt the runs stop too; the logs go unless a run failed.
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
trap '((failed == 0)) && rm -rf "$work"' EXIT

for b in "${batches[@]}"; do
  if ! "$megacut" run --model "$model" --batch "$b" --composition mk --runs 1 --warmup 0 \
    >"$work/warm-$b.log" 2>&1; then
    echo "watchdog-shared: the run alone failed (batch $b):" >&2
    tail -n 20 "$work/warm-$b.log" >&2
    exit 1
  fi
done

echo "$model, every stage one megakernel, $processes processes at once, $rounds rounds, $runs timed runs each"
for ((r = 1; r <= rounds; ++r)); do
  start=$SECONDS
  pids=()
  for ((p = 0; p < processes; ++p)); do
    b=${batches[p % ${#batches[@]}]}
    "$megacut" run --model "$model" --batch "$b" --composition mk --runs "$runs" --warmup 3 \
      >"$work/$r-$p.log" 2>&1 &
    pids+=($!)
  done
  ok=0
  for p in "${!pids[@]}"; do
    wait "${pids[$p]}"
    status=$?
    if ((status == 0)); then
      ok=$((ok + 1))
    else
      failed=$((failed + 1))
      echo "  round $r, process $p (batch ${batches[p % ${#batches[@]}]}) exited $status:"
      grep -m 3 -E 'watchdog|rror' "$work/$r-$p.log" | sed 's/^/    /'
    fi
  done
  pids=()
  echo "round $r: $ok of $processes exited 0 ($((SECONDS - start)) s)"
done
echo "$((rounds * processes - failed)) of $((rounds * processes)) processes exited 0"
if ((failed > 0)); then
  echo "logs: $work"
  exit 1
fi
