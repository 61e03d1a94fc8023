#!/bin/bash
# Instructions per scheduler decision, deterministic (valgrind callgrind counts instructions, not seconds):
#   Ir(oasis bench scheduler --decisions 4000) - Ir(--decisions 2000), divided by 2000, at 20,000 queued URLs.
# usage: bench/scheduler_instructions.sh CHECKOUT POLICY   (CHECKOUT: a checkout with its .venv set up;
# -P keeps checkouts of the old layout, whose root oasis/ folder shadowed the package, working too)
root=$1; pol=$2
export PYTHONHASHSEED=0  # string hashes fixed: dict and set layouts, hence instruction counts, repeat exactly
ir() {
  (cd "$root" && valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python -P -m oasis.cli bench scheduler \
     --sizes 20000 --policies "$pol" --decisions "$1" --json-out /tmp/sched_ir_$$.json 2>&1 | awk '/Collected/ {print $4}')
}
a=$(ir 2000); b=$(ir 4000)
echo "$pol $root $(( (b - a) / 2000 ))"
