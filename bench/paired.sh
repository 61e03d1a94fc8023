#!/bin/bash
# Run one scheduler measurement in two checkouts AT THE SAME TIME, each pinned to its own core, N rounds,
# swapping the cores every round: both sides see the same machine load at the same moment (alternating runs
# one after the other, as bench/alternate.sh does, lets a load change between the two runs bias one side).
# Prints per round: before, after (full learning cycles per CPU second) and after/before; then the median.
# usage: bench/paired.sh N BEFORE AFTER POLICY [QUEUED [DECISIONS]]
#   e.g. bench/paired.sh 10 /tmp/before . whittle:generalising 100000
# Each checkout needs its .venv (./dev setup); -P keeps checkouts of the old layout working too.
set -euo pipefail
n=$1; before=$2; after=$3; pol=$4; size=${5:-100000}; k=${6:-60000}
export PYTHONHASHSEED=0
code="import sys; from oasis.bench.scheduler import measure; r = measure('$pol', $size, $k, False); print(round(r['decisions_per_cpu_s']))"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ratios=()
for i in $(seq 1 "$n"); do
  c1=$((i % 2)); c2=$(((i + 1) % 2))
  (cd "$before" && taskset -c "$c1" .venv/bin/python -P -c "$code" > "$tmp/a") &
  (cd "$after" && taskset -c "$c2" .venv/bin/python -P -c "$code" > "$tmp/b") &
  wait
  a=$(cat "$tmp/a"); b=$(cat "$tmp/b")
  r=$(python3 -c "print(f'{$b / $a:.3f}')")
  ratios+=("$r")
  echo "round $i: before $a after $b ratio $r"
done
python3 -c "import statistics, sys; print('$pol median after/before', f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "${ratios[@]}"
