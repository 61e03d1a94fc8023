#!/bin/bash
# Run one scheduler measurement in two checkouts AT THE SAME TIME, each pinned to its own core, N rounds,
# swapping the cores every round: both sides see the same machine load at the same moment (alternating runs
# one after the other, as bench/alternate.sh does, lets a load change between the two runs bias one side).
# Prints per round: before, after (full learning cycles per CPU second) and after/before; then the median.
# usage: bench/paired.sh N BEFORE AFTER POLICY [QUEUED [DECISIONS]]   (DECISIONS: 60,000 unless given)
#   e.g. bench/paired.sh 10 /tmp/before . whittle:generalising 100000
# Each checkout needs its .venv (./dev setup); -P keeps checkouts of the old layout working too.
set -euo pipefail
n=$1; before=$2; after=$3; pol=$4; size=${5:-100000}; k=${6:-60000}
export PYTHONHASHSEED=0
# the timed loop of oasis.bench.scheduler.measure (same fill, same outcomes), without its tracemalloc pass (a
# second fill, slow at 10^6; the CLI benchmark measures memory): both checkouts' bench modules have fill/_url
code="
import gc, random, time
from oasis.bench.scheduler import fill, _url
from oasis.robot.scheduling import Discovered, FetchOutcome
rng = random.Random(7)
gc.collect()
ctl, nxt = fill('$pol', $size, rng)  # the controller of measure's second fill; rng where its first fill left it
cpu0 = time.process_time()
for _ in range($k):
    batch = ctl.next_batch(1, 1.0, None)
    ctl.report(FetchOutcome(batch[0], 'new', rng.random() ** 3, [Discovered(_url(nxt), '', rng.random())]), 1.0)
    nxt += 1
print(round($k / (time.process_time() - cpu0)))
"
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
